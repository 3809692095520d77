"""Findings checked against known answers (issue 31): each labelled region's top one.

The labels are ``benchmarks/findings_labelled.py``'s (``LABELS``): regions whose
diagnosis is known by construction. Three sources of sessions are held to them:

- a synthetic store built here: what events, cupti and pm record of those regions
  on an H100 (durations, the work model's metrics, shape metrics, DRAM bytes), with
  the numbers the device gives them;
- ``tests/fixtures/h200_block.sqlite`` (a real H200): its power-capped sessions
  lead with the measurement-quality finding, its ncu session is not told it has
  too few runs;
- ``tests/fixtures/findings_<gpu>.sqlite``, the store the labelled benchmark wrote
  on the device, where present.

Every session's findings are also held to what their evidence can show: a counter
finding only where counters were measured, a gain only as a bound with its basis,
numbers in every piece of evidence, a host timer's session with no GPU finding.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.analysis.findings import Finding, region_top, top_findings
from nsight_lab.contract import shape
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel.findings import stored_findings

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
H200 = FIXTURES / "h200_block.sqlite"
GPU_STORES = sorted(FIXTURES.glob("findings_*.sqlite"))
DEVICE = "NVIDIA H100 80GB HBM3"
N = 1 << 26
MIB = 1 << 20
RUNS = 20
F32 = 4


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "findings_labelled", ROOT / "benchmarks" / "findings_labelled.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


BENCH = _bench()
LABELS = BENCH.LABELS

# What the device gives each labelled region (H100, --cache-control all): the
# GPU time (events: the span), the work model's metrics, what a fused kernel would
# move, the DRAM bytes pm measures, and the shape: GPU busy, host span, launches.
REGIONS: dict[str, dict[str, Any]] = {
    "copy": {
        "ns": 180e3, "model": (0.0, 256 * MIB, 256 * MIB), "fused": 512 * MIB,
        "dram": 512 * MIB, "busy": 180e3, "host": 12e3, "launches": 1,
        "enqueue": 12e3,
    },
    "matmul_bf16": {
        "ns": 1.6e6, "model": (2.0 * 8192**3, 256 * MIB, 128 * MIB), "dtype": "bf16",
        "fused": 384 * MIB, "dram": 600e6, "busy": 1.6e6, "host": 15e3,
        "launches": 1, "enqueue": 15e3,
    },
    "add_16k": {
        "ns": 2.5e3, "cupti_ns": 1.8e3, "model": (2.0**14, 2.0**17, 2.0**16),
        "fused": 3 * 2.0**16, "dram": 3 * 2.0**16, "busy": 1.8e3, "host": 9e3,
        "launches": 1, "enqueue": 8e3,
    },
    "unfused_abc": {
        "ns": 560e3, "model": (2.0 * N, 4.0 * N * F32, 2.0 * N * F32),
        "fused": 4.0 * N * F32, "dram": 6.0 * N * F32, "busy": 555e3, "host": 20e3,
        "launches": 2, "enqueue": 20e3,
    },
    "fused_addcmul": {
        "ns": 380e3, "model": (2.0 * N, 3.0 * N * F32, 1.0 * N * F32),
        "fused": 4.0 * N * F32, "dram": 4.0 * N * F32, "busy": 380e3,
        "host": 10e3, "launches": 1, "enqueue": 10e3,
    },
    "l2_reuse": {
        "ns": 170e3, "model": (16.0 * (1 << 23), 16 * 32.0 * MIB, 16 * 32.0 * MIB),
        "fused": 64.0 * MIB, "dram": 67e6, "busy": 165e3, "host": 80e3,
        "launches": 16, "enqueue": 80e3,
    },
    "decode_step": {
        "ns": 900e3, "cupti_ns": 250e3,
        "model": (24 * 2.0 * 256 * 256, 24 * 270e3, 24 * 3e3), "fused": 6.6e6,
        "dram": 7e6, "busy": 250e3, "host": 950e3, "span": 900e3, "launches": 72,
        "enqueue": 880e3,
    },
    "decode_graphed": {
        "ns": 220e3, "cupti_ns": 200e3, "model": (0.0, 0.0, 0.0), "dram": 7e6,
        "busy": 200e3, "host": 12e3, "span": 220e3, "launches": 72,
        "enqueue": 10e3,
    },
}  # fmt: skip
BACKENDS = ("events", "cupti", "pm")


def _metrics(spec: dict[str, Any], backend: str, jitter: float) -> dict[str, float]:
    flops, read, written = spec["model"]
    metrics = {
        "model__flops": flops,
        "model__bytes_read": read,
        "model__bytes_written": written,
    }
    if flops and spec.get("dtype"):
        metrics[f"model__flops_dtype_{spec['dtype']}"] = flops
    elif flops:
        metrics["model__flops_dtype_fp32"] = flops
    if "fused" in spec:
        metrics["model__bytes_fused"] = spec["fused"]
        metrics["model__bytes_prev"] = 0.0
    if backend == "events":
        metrics[shape.ENQUEUE_NS] = spec["enqueue"] * jitter
        return metrics
    busy = spec["busy"] * jitter
    metrics.update(
        {
            shape.BUSY_NS: busy,
            shape.SPAN_NS: spec.get("span", busy) * jitter,
            shape.HOST_NS: spec["host"] * jitter,
            shape.LAUNCHES: float(spec["launches"]),
            shape.STREAMS: 1.0,
            shape.THREADS: 1.0,
            shape.FOREIGN: 0.0,
            shape.DUPLICATES: 0.0,
        }
    )
    if backend == "pm":
        metrics["dram__bytes_read.sum"] = 0.55 * spec["dram"] * jitter
        metrics["dram__bytes_write.sum"] = 0.45 * spec["dram"] * jitter
    return metrics


def labelled_records(session_id: int, backend: str) -> list[RunRecord]:
    """Twenty runs of every labelled region, as ``backend`` records them."""
    out = []
    for run in range(RUNS):
        jitter = 1.0 + 0.002 * ((run % 5) - 2)
        for name, spec in REGIONS.items():
            ns = spec.get("cupti_ns", spec["ns"]) if backend != "events" else spec["ns"]
            out.append(
                RunRecord(
                    session_id=session_id,
                    config_index=0,
                    config={},
                    run_index=run,
                    annotation=name,
                    duration_ns=ns * jitter,
                    backend=backend,
                    metrics=_metrics(spec, backend, jitter),
                    telemetry=Telemetry(sm_clock_mhz=1980.0, temperature_c=45.0),
                )
            )
    return out


def write_labelled(
    store: RunStore, backends: tuple[str, ...] = BACKENDS
) -> dict[str, int]:
    """One completed session per backend; their ids by backend."""
    ids = {}
    for backend in backends:
        session = store.create_session(
            backend=backend,
            device=DEVICE,
            name=f"labelled-{backend}",
            runs_planned=RUNS,
        )
        store.add_runs(labelled_records(session.id, backend))
        store.finish_session(session.id, "completed")
        ids[backend] = session.id
    return ids


@pytest.fixture
def labelled(nsight_home: Path) -> dict[str, int]:
    """The synthetic labelled sessions in this test's store."""
    nsight_home.mkdir(parents=True, exist_ok=True)
    with RunStore() as store:
        return write_labelled(store)


def _findings(session_id: int) -> tuple[str, list[Finding]]:
    with RunStore() as store:
        session, found = stored_findings(store, session_id)
    return session.backend, found


def check_evidence(backend: str, found: list[Finding]) -> None:
    """No finding claims what its evidence cannot show."""
    counters = backend in {"pm", "ncu"}
    per_kernel = backend in {"cupti", "pm", "ncu"}
    for f in found:
        where = f"{backend} {f.region}: {f.kind}"
        if f.confidence == "measured" and f.family in {"traffic", "cache", "bound"}:
            assert counters, f"{where} claims a counter on {backend}"
        if f.family == "launch":
            assert f.confidence == ("measured" if per_kernel else "timing"), where
            if not per_kernel:
                assert "--backend cupti" in f.answered_by, where
        if f.gain is not None:
            assert f.gain > 1, where
            assert f.gain_basis.startswith("at most"), where
        if f.confidence == "timing":
            assert f.gain is None, f"{where}: a gain from timing alone"
        for item in f.evidence:
            assert any(c.isdigit() for c in item), f"{where}: {item!r} has no number"
        if backend == "cpu":
            assert f.family in {"quality", "sweep", "coverage", "bound"}, where
        if f.family != "coverage":
            assert f.statement, where


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_labelled_region_gets_its_known_top_finding(
    labelled: dict[str, int], backend: str
) -> None:
    _, found = _findings(labelled[backend])
    for name, label in LABELS.items():
        top = region_top(found, name)
        kind = top.kind if top else None
        assert label.allows(backend, kind), f"{backend} {name}: top finding {kind}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_finding_claims_what_its_evidence_cannot_show(
    labelled: dict[str, int], backend: str
) -> None:
    used, found = _findings(labelled[backend])
    check_evidence(used, found)
    kinds = {f.kind for f in found}
    if backend == "events":  # what events cannot answer is said, with the backend
        assert {"no_kernel_timing", "no_dram_bytes"} <= kinds
    if backend == "pm":
        assert "no_dram_bytes" not in kinds
        assert "no_kernel_timing" not in kinds


def test_the_gain_bounds_hold_against_the_fix(labelled: dict[str, int]) -> None:
    """The fusion bound is the bytes' ratio; the graph bound the span over busy."""
    _, found = _findings(labelled["pm"])
    fusion = region_top(found, "unfused_abc")
    assert fusion is not None
    assert fusion.gain == pytest.approx(1.5, rel=0.01)
    assert fusion.confidence == "measured"
    graph = region_top(found, "decode_step")
    assert graph is not None
    assert graph.gain == pytest.approx(950 / 250, rel=0.02)
    measured = REGIONS["unfused_abc"]["ns"] / REGIONS["fused_addcmul"]["ns"]
    assert measured <= fusion.gain * 1.1


def test_the_three_that_matter_most_name_different_regions(
    labelled: dict[str, int],
) -> None:
    _, found = _findings(labelled["cupti"])
    shown = top_findings(found)
    assert len(shown) == 3
    assert len({f.regions for f in shown}) == 3
    assert all(f.family != "coverage" for f in shown)


# -- the real H200 fixture ------------------------------------------------------------


@pytest.fixture
def h200(nsight_home: Path) -> Path:
    """The H200 fixture store copied as this test's store (never written itself)."""
    nsight_home.mkdir(parents=True, exist_ok=True)
    target = nsight_home / "store.sqlite"
    shutil.copyfile(H200, target)
    return target


@pytest.mark.parametrize("session_id", [2, 3])
def test_a_throttled_session_leads_with_measurement_quality(
    h200: Path, session_id: int
) -> None:
    assert h200.is_file()
    backend, found = _findings(session_id)
    first = found[0]
    assert first.family == "quality"
    assert first.kind == "throttled"
    assert len(first.regions) == 12  # one finding for all, not twelve
    assert top_findings(found)[0] is first
    for name in first.regions:  # said before anything else of each region
        assert region_top(found, name) is first
    diagnosis = region_top(found, "mlp_up", quality=False)  # then the diagnosis
    assert diagnosis is not None
    assert diagnosis.kind == "compute_bound"
    check_evidence(backend, found)


def test_an_unthrottled_session_leads_with_its_diagnosis(h200: Path) -> None:
    assert h200.is_file()
    backend, found = _findings(1)
    assert found[0].family in {"bound", "launch", "traffic", "cache"}
    assert not any(f.kind == "throttled" for f in found)
    check_evidence(backend, found)


def test_the_ncu_session_measures_its_bound_and_is_not_told_to_add_runs(
    h200: Path,
) -> None:
    assert h200.is_file()
    backend, found = _findings(5)
    assert backend == "ncu"
    assert not any(f.kind == "too_few_runs" for f in found)
    mlp = region_top(found, "mlp_up")
    assert mlp is not None
    assert mlp.kind == "compute_bound"
    assert mlp.confidence == "measured"
    assert "tensor path (ncu)" in " ".join(mlp.evidence)
    check_evidence(backend, found)


def test_a_sweep_says_where_the_bound_changes(h200: Path) -> None:
    assert h200.is_file()
    _, found = _findings(6)
    regime = next(
        f for f in found if f.kind == "sweep_regime" and f.regions == ("matmul",)
    )
    assert "up to n=1024" in regime.statement
    assert "compute-bound from n=2048" in regime.statement
    best = next(f for f in found if f.kind == "sweep_best" and f.regions == ("matmul",))
    assert best.statement.startswith("n=4096 does the most work per second")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603  (the installed interpreter, our module)
        [sys.executable, "-m", "nsight_lab.cli", *args],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip


def test_explain_works_on_the_shared_fixture(h200: Path) -> None:
    assert h200.is_file()
    done = _cli("explain", "3")
    assert done.returncode == 0, done.stderr
    assert "session 3 block-cupti: cupti on NVIDIA H200: why it is slow" in done.stdout
    assert "*1. layernorm_1, qkv_proj, split_heads and 9 more: throttled" in done.stdout
    as_json = _cli("explain", "3", "--json")
    assert as_json.returncode == 0, as_json.stderr
    entries = json.loads(as_json.stdout)["findings"]
    assert entries[0]["kind"] == "throttled"
    assert entries[0]["rank"] == 1
    assert entries[0]["top"] is True
    assert len(entries[0]["regions"]) == 12


# -- the labelled benchmark's own store, from the device ------------------------------


@pytest.mark.skipif(
    not GPU_STORES, reason="no findings_<gpu>.sqlite from the device yet"
)
@pytest.mark.parametrize("path", GPU_STORES, ids=lambda p: p.stem)
def test_the_device_store_gets_every_known_answer(
    nsight_home: Path, path: Path
) -> None:
    nsight_home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, nsight_home / "store.sqlite")
    with RunStore() as store:
        sessions = store.list_sessions(limit=20)
    labelled = [s for s in sessions if (s.name or "").startswith("labelled-")]
    assert labelled, "the store holds no labelled session"
    for session in labelled:
        backend, found = _findings(session.id)
        check_evidence(backend, found)
        if backend == "cpu":
            continue
        for name, label in LABELS.items():
            first = region_top(found, name)
            top = region_top(found, name, quality=False)  # the diagnosis
            kind = top.kind if top else None
            assert label.allows(backend, kind), f"{backend} {name}: top finding {kind}"
            if first is not None and top is not None and first.family == "quality":
                assert found.index(first) < found.index(top)  # said before it
