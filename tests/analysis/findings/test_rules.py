"""Each family of findings' rules on hand-made runs (analysis/findings, issue 31)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nsight_lab.analysis.findings import (
    findings_json,
    region_top,
    session_findings,
    top_findings,
)
from nsight_lab.analysis.findings.bound import HIGH_THROUGHPUT_PCT, LATENCY_BELOW_PCT
from nsight_lab.analysis.findings.finding import Finding, gain_text
from nsight_lab.contract import shape
from nsight_lab.contract.records import RunRecord, SessionInfo, Telemetry
from nsight_lab.roofline.devices import Peaks
from nsight_lab.roofline.placement import peaks_for

H100 = peaks_for("NVIDIA H100 80GB HBM3")
MB = 1e6
DRAM = H100.dram_bytes_per_s if H100 else 3.35e12


def runs(  # noqa: PLR0913  (one region's runs, every knob named)
    name: str,
    ns: float | list[float],
    metrics: dict[str, float] | None = None,
    *,
    n: int = 10,
    backend: str = "events",
    config: dict[str, Any] | None = None,
    config_index: int = 0,
    throttled: bool = False,
    clocks: list[float] | None = None,
    wait_s: float = 0.0,
) -> list[RunRecord]:
    """``n`` runs of one region (durations cycle through ``ns`` when a list)."""
    durations = ns if isinstance(ns, list) else [ns]
    out = []
    for i in range(n):
        clock = clocks[i % len(clocks)] if clocks else 1980.0
        out.append(
            RunRecord(
                session_id=1,
                config_index=config_index,
                config=config or {},
                run_index=i,
                annotation=name,
                duration_ns=durations[i % len(durations)],
                backend=backend,
                metrics=dict(metrics or {}),
                telemetry=Telemetry(
                    sm_clock_mhz=clock,
                    throttled=throttled,
                    clock_event_reasons=("software power cap",) if throttled else (),
                ),
                thermal_wait_s=wait_s,
            )
        )
    return out


def model(
    flops: float, read: float, written: float, dtype: str = "fp32", **more: float
) -> dict[str, float]:
    """The work model's metrics of a region."""
    out = {
        "model__flops": flops,
        "model__bytes_read": read,
        "model__bytes_written": written,
        **{f"model__{k}": v for k, v in more.items()},
    }
    if flops:
        out[f"model__flops_dtype_{dtype}"] = flops
    return out


def session(backend: str = "events", **options: Any) -> SessionInfo:
    return SessionInfo(
        id=1,
        status="completed",
        backend=backend,
        created_at="2026-01-01T00:00:00+00:00",
        device="NVIDIA H100 80GB HBM3",
        options=options,
    )


def find(records: list[RunRecord], backend: str = "events", **kw: Any) -> list[Finding]:
    kw.setdefault("peaks", H100)
    return session_findings(records, session(backend), **kw)


def kinds(found: list[Finding]) -> list[str]:
    return [f.kind for f in found]


def streaming(pct: float, name: str = "stream") -> list[RunRecord]:
    """A 1 GB memory-bound region at ``pct`` % of the H100's DRAM roof."""
    ns = 1e9 / (pct / 100 * DRAM) * 1e9
    return runs(name, ns, model(0.0, 0.5e9, 0.5e9))


# -- bound: Nsight Compute's SOL thresholds --------------------------------------------


def test_a_region_near_the_dram_roof_is_memory_bound_with_a_small_bound() -> None:
    top = region_top(find(streaming(90)), "stream")
    assert top is not None
    assert top.kind == "memory_bound"
    assert "only fewer bytes help" in top.statement
    assert top.gain == pytest.approx(100 / 90, rel=1e-3)
    assert top.gain_basis == "at most 1.11\u00d7 if it reached the DRAM roof"
    assert top.confidence == "work model"


def test_both_throughputs_under_sixty_percent_is_a_latency_issue() -> None:
    assert LATENCY_BELOW_PCT == 60.0  # Nsight Compute's SOLBottleneck
    assert HIGH_THROUGHPUT_PCT == 80.0
    top = region_top(find(streaming(30)), "stream")
    assert top is not None
    assert top.kind == "latency_bound"
    assert top.gain == pytest.approx(100 / 30, rel=1e-3)
    assert "--backend cupti tells" in top.statement  # events cannot see launch gaps


def test_attainable_peaks_are_judged_against_before_the_datasheet() -> None:
    assert H100 is not None
    measured = Peaks(
        device=H100.device,
        flops_per_s=dict(H100.flops_per_s),
        dram_bytes_per_s=0.75 * H100.dram_bytes_per_s,
        source="measured with PyTorch (copy, matmul)",
    )
    top = region_top(find(streaming(70), attainable=measured), "stream")
    assert top is not None
    assert "only fewer bytes help" in top.statement  # 93 % of what a copy reaches
    assert "measured by %nsight peaks" in top.evidence[0]


def test_a_bf16_matmul_off_the_tensor_pipe_says_so() -> None:
    flops = 2.0 * 4096**3
    ns = flops / 30e12 * 1e9  # 30 TFLOP/s: CUDA-core speed
    core = {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": flops / 2}
    tensor = {"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 0.0}
    metrics = {
        **model(flops, 64 * MB, 32 * MB, "bf16"),
        **core,
        **tensor,
        "dram__bytes_read.sum": 64 * MB,
        "dram__bytes_write.sum": 32 * MB,
    }
    found = find(runs("mm", ns, metrics, backend="ncu", n=2), backend="ncu")
    top = region_top(found, "mm")
    assert top is not None
    assert top.kind == "compute_off_tensor"
    assert top.confidence == "measured"
    assert "0 % of its FLOPs on the tensor path (ncu)" in top.evidence
    assert H100 is not None
    assert top.gain == pytest.approx(H100.flops_per_s["bf16"] / 30e12, rel=1e-3)
    assert top.gain_basis.endswith("if it reached the bf16 tensor roof")


@pytest.mark.parametrize(("pipe", "on"), [(40.0, True), (0.5, False)])
def test_pm_tensor_pipe_activity_tells_the_path(pipe: float, on: bool) -> None:  # noqa: FBT001
    flops = 2.0 * 8192**3
    metrics = {
        **model(flops, 400 * MB, 130 * MB, "bf16"),
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed": pipe,
    }
    ns = flops / (700e12 if on else 50e12) * 1e9
    top = region_top(find(runs("mm", ns, metrics, backend="pm"), "pm"), "mm")
    assert top is not None
    assert top.kind == ("compute_bound" if on else "compute_off_tensor")
    assert ("on the tensor path" if on else "OFF the tensor path") in top.statement


def test_without_counters_an_unknown_tensor_path_names_the_backend() -> None:
    flops = 2.0 * 2048**3
    ns = flops / 40e12 * 1e9  # under the CUDA cores' roof: could be either path
    top = region_top(find(runs("mm", ns, model(flops, 16 * MB, 8 * MB, "bf16"))), "mm")
    assert top is not None
    assert "whether on the tensor path is not known" in top.statement
    assert "--backend pm" in top.answered_by


# -- traffic ---------------------------------------------------------------------------


def test_measured_bytes_past_the_compulsory_ones_are_excess_traffic() -> None:
    metrics = {
        **model(0.0, 100 * MB, 100 * MB, bytes_fused=200 * MB),
        "dram__bytes_read.sum": 300 * MB,
        "dram__bytes_write.sum": 100 * MB,
    }
    ns = 400 * MB / (0.8 * DRAM) * 1e9
    top = region_top(find(runs("gather", ns, metrics, backend="pm"), "pm"), "gather")
    assert top is not None
    assert top.kind == "excess_traffic"
    assert top.gain == pytest.approx(2.0)
    assert top.confidence == "measured"


def test_intermediates_the_l2_kept_are_no_fusion_headroom() -> None:
    metrics = {
        **model(1e6, 300 * MB, 200 * MB, bytes_fused=400 * MB),
        "dram__bytes_read.sum": 300 * MB,
        "dram__bytes_write.sum": 105 * MB,  # DRAM moved about the fused bytes
    }
    ns = 405 * MB / (0.85 * DRAM) * 1e9
    found = find(runs("abc", ns, metrics, backend="pm"), "pm")
    assert "fusion_headroom" not in kinds(found)


def test_a_region_reading_back_its_predecessor_is_a_chain_to_fuse() -> None:
    ns = 512 * MB / (0.85 * DRAM) * 1e9
    first = runs("scale", ns, model(64e6, 256 * MB, 256 * MB, bytes_fused=512 * MB))
    second = runs(
        "shift",
        ns,
        model(64e6, 256 * MB, 256 * MB, bytes_fused=512 * MB, bytes_prev=256 * MB),
    )
    records = [r for pair in zip(first, second, strict=True) for r in pair]
    chain = next(f for f in find(records) if f.kind == "chain_fusion")
    assert chain.regions == ("scale", "shift")
    assert chain.region == "scale \u2192 shift"
    assert chain.gain == pytest.approx(1 / (1 - 0.25))
    assert chain.confidence == "work model"
    assert "--backend" not in chain.answered_by  # the model's own: said as such


# -- launch, cache ---------------------------------------------------------------------


def test_a_short_event_region_is_likely_launch_bound_on_timing_alone() -> None:
    top = region_top(find(runs("tiny", 2500.0, model(1e4, 1e5, 5e4))), "tiny")
    assert top is not None
    assert top.kind == "launch_bound"
    assert top.confidence == "timing"
    assert top.gain is None
    assert top.answered_by == "--backend cupti"


def test_events_enqueue_near_its_span_is_launch_bound_unless_at_a_roof() -> None:
    """The H100's l2_reuse: enqueued in 95 % of its span, its bytes at 129 % of DRAM."""
    enqueue = {shape.ENQUEUE_NS: 0.95 * 180e3}
    slow = model(1e6, 5 * MB, 5 * MB)  # 10 MB in 180 µs: 2 % of the roof
    waiting = region_top(find(runs("adds", 180e3, {**slow, **enqueue})), "adds")
    assert waiting is not None
    assert waiting.kind == "launch_bound"
    assert "95 %" in waiting.statement
    busy = model(1e6, 400 * MB, 400 * MB, bytes_fused=50 * MB)  # 4.4 TB/s
    found = find(runs("adds", 180e3, {**busy, **enqueue}))
    assert "launch_bound" not in kinds(found)
    top = region_top(found, "adds")
    assert top is not None
    assert top.kind == "l2_resident"


def test_modelled_bytes_past_the_dram_roof_read_as_l2_resident() -> None:
    ns = 1e9 / (1.8 * DRAM) * 1e9  # 180 % of the roof: no DRAM serves that
    found = find(runs("reuse", ns, model(1e6, 0.5e9, 0.5e9, bytes_fused=64 * MB)))
    top = region_top(found, "reuse")
    assert top is not None
    assert top.kind == "l2_resident"
    assert top.confidence == "work model"
    assert "--backend pm" in top.answered_by
    assert not any(f.kind == "impossible_number" for f in found)  # said once, here
    assert not any(f.family == "bound" for f in found)


# -- quality ---------------------------------------------------------------------------


def test_throttled_regions_are_one_finding_said_first() -> None:
    records = [
        *runs("a", 1e6, model(0.0, 1e9, 1e9), throttled=True),
        *runs("b", 2e5, model(0.0, 1e8, 1e8), throttled=True),
        *runs("c", 5e6, model(0.0, 1e10, 1e10)),
    ]
    found = find(records)
    assert found[0].kind == "throttled"
    assert found[0].regions == ("a", "b")
    assert "throttled in 20 of 20 runs" in found[0].evidence
    assert region_top(found, "a") is found[0]
    assert region_top(found, "c") is not found[0]


def test_a_wide_spread_names_a_moving_clock() -> None:
    records = runs(
        "mm", [1e6, 1.25e6, 0.9e6, 1.3e6], model(0.0, 1e9, 1e9), clocks=[1980, 1500]
    )
    spread = next(f for f in find(records) if f.kind == "wide_spread")
    assert "the SM clock moved" in spread.statement
    assert spread.action == "lock it: --clock-control base --thermal auto"


def test_too_few_runs_and_a_missed_target_are_said() -> None:
    few = find(runs("x", 1e6, model(0.0, 1e9, 1e9), n=2))
    assert "too_few_runs" in kinds(few)
    ncu = find(runs("x", 1e6, model(0.0, 1e9, 1e9), n=2, backend="ncu"), "ncu")
    assert "too_few_runs" not in kinds(ncu)
    records = runs("x", [1e6, 1.05e6, 0.95e6], model(0.0, 1e9, 1e9))
    missed = session_findings(
        records, session("events", target_rsd_pct=0.5), peaks=H100
    )
    assert "target_not_reached" in kinds(missed)


def test_thermal_waits_are_said_once_for_the_session() -> None:
    records = [
        *runs("a", 1e6, model(0.0, 1e9, 1e9), wait_s=0.5),
        *runs("b", 1e6, model(0.0, 1e9, 1e9), wait_s=0.5),
    ]
    waits = [f for f in find(records) if f.kind == "thermal_waits"]
    assert len(waits) == 1
    assert waits[0].statement.startswith("waited 5.0 s for thermal headroom")


# -- coverage, ranking, the wire -------------------------------------------------------


def test_what_a_backend_cannot_answer_is_said_with_the_one_that_can() -> None:
    events = kinds(find(streaming(90)))
    assert {"no_kernel_timing", "no_dram_bytes"} <= set(events)
    no_roof = find(streaming(90), peaks=None)
    assert "no_roof" in kinds(no_roof)
    assert not any(f.family == "bound" for f in no_roof)
    cpu = find(runs("x", 1e6, model(0.0, 1e9, 1e9), backend="cpu"), "cpu", peaks=None)
    assert "host_timer" in kinds(cpu)
    assert {f.family for f in cpu} <= {"quality", "coverage"}
    bare = find(runs("x", 1e6))
    assert "no_work" in kinds(bare)


def test_findings_are_ranked_quality_first_then_by_time_at_stake() -> None:
    records = [
        *streaming(50, "big") * 1,
        *runs("small", 1e4, model(0.0, 1e6, 1e6), n=2),
    ]
    found = find(records)
    assert found[0].kind == "too_few_runs"  # quality first, however small
    assert found[1].regions == ("big",)
    assert found[-1].family == "coverage"
    entries = findings_json(found)
    assert [e["rank"] for e in entries] == list(range(1, len(found) + 1))
    assert sum(e["top"] for e in entries) == len(top_findings(found))


def test_a_finding_names_many_regions_briefly_and_sends_them_all() -> None:
    f = Finding(
        regions=tuple("abcde"), kind="throttled", family="quality", statement="s"
    )
    assert f.region == "a, b, c and 2 more"
    assert f.to_json()["regions"] == list("abcde")
    assert gain_text(1.149) == "1.15\u00d7"
    assert gain_text(3.94) == "3.9\u00d7"
    assert gain_text(96.2) == "96\u00d7"


def _ncu_runs(name: str, ns: float, kernels: int) -> list[RunRecord]:
    """ncu's records of a region: each names the kernels ncu replayed."""
    return [
        replace(r, kernels=tuple(f"k{i}" for i in range(kernels)))
        for r in runs(name, ns, backend="ncu", n=3)
    ]


def test_ncu_on_many_short_kernels_says_its_sum_is_not_the_stream_time() -> None:
    """A decode step of 96 kernels of 5 us (read 1.91x under ncu on an H100) is
    said to be a sum of kernels run alone, before other findings; a region of a few
    long kernels, and the same region on another backend, are not."""
    decode = find(_ncu_runs("decode", 96 * 5_000.0, 96), "ncu")
    assert decode[0].kind == "replayed_alone"
    assert "96 short kernels, each replayed alone behind its own cache flush" in (
        decode[0].statement
    )
    assert "--backend events or cupti" in decode[0].action
    assert "replayed_alone" not in kinds(find(_ncu_runs("gemm", 4 * 124e3, 4), "ncu"))
    assert "replayed_alone" not in kinds(find(_ncu_runs("pair", 2 * 5e3, 2), "ncu"))
    events = [replace(r, backend="events") for r in _ncu_runs("d", 96 * 5e3, 96)]
    assert "replayed_alone" not in kinds(find(events, "events"))
