from __future__ import annotations

import math

import pytest

from nsight_lab.contract.records import RunRecord
from nsight_lab.roofline.counters import DRAM_READ, DRAM_WRITE
from nsight_lab.roofline.placement import (
    DTYPE_CLASSES,
    PEAKS_TABLE,
    Peaks,
    dtype_class,
    peaks_for,
    place,
    place_records,
)
from nsight_lab.roofline.traffic import traffic_comparison

H200 = peaks_for("NVIDIA H200")
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"


@pytest.mark.parametrize(
    ("name", "source", "bandwidth"),
    [
        ("NVIDIA H200", "NVIDIA H200 datasheet (SXM), dense", 4.8e12),
        ("nvidia h200", "NVIDIA H200 datasheet (SXM), dense", 4.8e12),
        ("NVIDIA H200 NVL", "NVIDIA H200 datasheet (NVL), dense", 4.8e12),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 datasheet (SXM), dense", 3.35e12),
        ("NVIDIA H100 PCIe", "NVIDIA H100 datasheet (PCIe), dense", 2.0e12),
        ("NVIDIA H100 NVL", "NVIDIA H100 datasheet (NVL), dense", 3.9e12),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 datasheet (SXM 80GB), dense", 2.039e12),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 datasheet (40GB), dense", 1.555e12),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 datasheet (40GB), dense", 1.555e12),
        ("NVIDIA A100 80GB PCIe", "NVIDIA A100 datasheet (PCIe 80GB), dense", 1.935e12),
        ("NVIDIA L4", "NVIDIA L4 datasheet, dense", 300e9),
        ("Tesla T4", "NVIDIA T4 datasheet, dense", 320e9),
        (
            "NVIDIA GeForce RTX 4090",
            "NVIDIA Ada Lovelace whitepaper (GeForce RTX 4090), dense",
            1008e9,
        ),
    ],
)
def test_peaks_for_device_names(name, source, bandwidth):
    peaks = peaks_for(name)
    assert peaks is not None
    assert peaks.source == source
    assert peaks.device == name
    assert peaks.dram_bytes_per_s == pytest.approx(bandwidth)


@pytest.mark.parametrize(
    "name", ["NVIDIA L40S", "NVIDIA GH200 480GB", "AMD Instinct MI300X", "cpu", ""]
)
def test_peaks_for_unknown_devices(name):
    assert peaks_for(name) is None


def test_table_is_dense_datasheet_figures():
    h200 = PEAKS_TABLE["H200 SXM"].flops_per_s
    assert h200["fp64"] == pytest.approx(34e12)
    assert h200["fp64_tensor"] == pytest.approx(67e12)
    assert h200["fp32"] == pytest.approx(67e12)
    assert h200["tf32"] == pytest.approx(494.5e12)
    assert h200["bf16"] == h200["fp16"] == pytest.approx(989.5e12)
    assert h200["fp8"] == pytest.approx(1979e12)
    a100 = PEAKS_TABLE["A100 SXM 80GB"].flops_per_s
    assert (a100["tf32"], a100["bf16"]) == (
        pytest.approx(156e12),
        pytest.approx(312e12),
    )
    assert "fp8" not in a100
    t4 = PEAKS_TABLE["T4"].flops_per_s
    assert set(t4) == {"fp32", "fp16"}
    assert PEAKS_TABLE["RTX 4090"].flops_per_s["fp16"] == pytest.approx(165.2e12)
    for peaks in PEAKS_TABLE.values():
        assert set(peaks.flops_per_s) <= set(DTYPE_CLASSES)
        assert "dense" in peaks.source


def test_peaks_for_returns_a_copy():
    a = peaks_for("NVIDIA H200")
    assert a is not None
    a.flops_per_s["fp32"] = 1.0
    assert PEAKS_TABLE["H200 SXM"].flops_per_s["fp32"] == pytest.approx(67e12)


def test_place_memory_bound_point():
    assert H200 is not None
    p = place(
        "axpy",
        flops=1e9,
        bytes_read=6e7,
        bytes_written=4e7,
        duration_ns=1e6,
        peaks=H200,
        dtype="fp32",
    )
    assert p.intensity == pytest.approx(10.0)
    assert p.achieved_flops_per_s == pytest.approx(1e12)
    assert p.achieved_bytes_per_s == pytest.approx(1e11)
    assert p.roof_flops_per_s == pytest.approx(48e12)  # min(67e12, 10 * 4.8e12)
    assert p.ridge_intensity == pytest.approx(67e12 / 4.8e12)
    assert p.bound == "memory"
    assert p.pct_of_roof == pytest.approx(100 / 48, rel=1e-9)  # 2.08 %
    assert (p.flops_source, p.bytes_source) == ("modelled", "modelled")


def test_place_compute_bound_matmul():
    assert H200 is not None
    n = 8192
    flops = 2.0 * n**3
    moved = 3 * n * n * 2  # bf16 A, B read and C written once
    p = place(
        "matmul",
        flops=flops,
        bytes_read=2 * n * n * 2,
        bytes_written=n * n * 2,
        duration_ns=2e6,
        peaks=H200,
        dtype="bf16",
        flops_source="measured",
        bytes_source="measured",
    )
    assert p.intensity == pytest.approx(flops / moved)  # ~2731 FLOP/B
    assert p.bound == "compute"
    assert p.roof_flops_per_s == pytest.approx(989.5e12)
    assert p.achieved_flops_per_s == pytest.approx(flops / 2e-3)
    assert p.pct_of_roof == pytest.approx(flops / 2e-3 / 989.5e12 * 100)


def test_place_zero_bytes_and_zero_flops():
    assert H200 is not None
    no_bytes = place(
        "regs", flops=1e9, bytes_read=0, bytes_written=0, duration_ns=1e6, peaks=H200
    )
    assert math.isinf(no_bytes.intensity)
    assert no_bytes.bound == "compute"
    assert no_bytes.roof_flops_per_s == pytest.approx(67e12)
    assert no_bytes.pct_of_roof == pytest.approx(1e12 / 67e12 * 100)
    copy = place(
        "copy", flops=0, bytes_read=4.8e9, bytes_written=0, duration_ns=2e6, peaks=H200
    )
    assert copy.intensity == 0
    assert copy.bound == "memory"
    assert copy.roof_flops_per_s == 0
    assert copy.pct_of_roof == pytest.approx(50.0)  # 2.4 TB/s of 4.8
    with pytest.raises(ValueError, match="nothing to place"):
        place("idle", flops=0, bytes_read=0, bytes_written=0, duration_ns=1, peaks=H200)


def test_place_rejects_bad_input():
    assert H200 is not None
    kw = {"flops": 1.0, "bytes_read": 1.0, "bytes_written": 0.0, "peaks": H200}
    with pytest.raises(ValueError, match=r"unknown dtype class 'fp4'; expected one of"):
        place("r", duration_ns=1.0, dtype="fp4", **kw)
    with pytest.raises(ValueError, match="duration_ns"):
        place("r", duration_ns=0.0, **kw)
    t4 = peaks_for("Tesla T4")
    assert t4 is not None
    with pytest.raises(ValueError, match=r"no 'bf16' peak for 'Tesla T4'"):
        place(
            "r",
            flops=1.0,
            bytes_read=1.0,
            bytes_written=0.0,
            duration_ns=1.0,
            peaks=t4,
            dtype="bf16",
        )
    with pytest.raises(ValueError, match="flops"):
        place(
            "r",
            flops=-1.0,
            bytes_read=1.0,
            bytes_written=0.0,
            duration_ns=1.0,
            peaks=H200,
        )


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("torch.float32", "fp32"),
        ("float32", "fp32"),
        ("torch.bfloat16", "bf16"),
        ("torch.float16", "fp16"),
        ("torch.half", "fp16"),
        ("torch.float64", "fp64"),
        ("torch.float8_e4m3fn", "fp8"),
        ("torch.float8_e5m2", "fp8"),
        ("bf16", "bf16"),
        ("fp64_tensor", "fp64_tensor"),
    ],
)
def test_dtype_class(name, cls):
    assert dtype_class(name) == cls


def test_dtype_class_unknown():
    with pytest.raises(ValueError, match=r"unknown dtype 'torch.int8'"):
        dtype_class("torch.int8")


def _rec(annotation, run, duration_ns, metrics, config_index=0):
    return RunRecord(
        session_id=1,
        config_index=config_index,
        config={"n": 1024 * (config_index + 1)},
        run_index=run,
        annotation=annotation,
        duration_ns=duration_ns,
        backend="ncu",
        metrics=metrics,
    )


MODEL = {"model__flops": 2e6, "model__bytes_read": 8e6, "model__bytes_written": 4e6}


def test_place_records_prefers_measured_and_says_so():
    assert H200 is not None
    measured = {**MODEL, DRAM_READ: 9e6, DRAM_WRITE: 5e6, FFMA: 1e6}
    records = [
        _rec("fused", 0, 1000.0, measured),
        _rec("fused", 1, 3000.0, {**measured, DRAM_READ: 11e6}),
        _rec("fused", 2, 2000.0, {**measured, DRAM_READ: 10e6}),
        _rec("model_only", 0, 500.0, MODEL),
        _rec("model_only", 1, 700.0, MODEL),
        _rec("bytes_only", 0, 500.0, {**MODEL, DRAM_READ: 1e6, DRAM_WRITE: 1e6}),
        _rec("nothing", 0, 500.0, {}),
    ]
    placements = place_records(records, H200, {"fused": "torch.bfloat16"})
    by_name = {p.annotation: p for p in placements}
    assert list(by_name) == ["fused", "model_only", "bytes_only"]  # "nothing" skipped
    fused = by_name["fused"]
    assert (fused.flops_source, fused.bytes_source) == ("measured", "measured")
    assert fused.flops == pytest.approx(2e6)  # 2 FLOPs per FFMA
    assert fused.bytes_read == pytest.approx(10e6)  # median over runs
    assert fused.bytes_written == pytest.approx(5e6)
    assert fused.duration_ns == pytest.approx(2000.0)
    assert fused.dtype == "bf16"
    assert fused.config == {"n": 1024}
    model_only = by_name["model_only"]
    assert (model_only.flops_source, model_only.bytes_source) == (
        "modelled",
        "modelled",
    )
    assert model_only.bytes_read == 8e6
    assert model_only.duration_ns == pytest.approx(600.0)
    assert model_only.dtype == "fp32"
    mixed = by_name["bytes_only"]
    assert (mixed.flops_source, mixed.bytes_source) == ("modelled", "measured")
    assert mixed.bytes_read + mixed.bytes_written == pytest.approx(2e6)


def test_place_records_per_config():
    assert H200 is not None
    records = [
        _rec("r", 0, 100.0, MODEL, config_index=0),
        _rec("r", 0, 200.0, MODEL, config_index=1),
        _rec("r", 1, 100.0, MODEL, config_index=0),
    ]
    placements = place_records(records, H200)
    assert [(p.config_index, p.config) for p in placements] == [
        (0, {"n": 1024}),
        (1, {"n": 2048}),
    ]


def test_traffic_comparison_unfused_vs_addcmul():
    assert H200 is not None
    n = 1 << 24
    elem = 4
    # a + b * c: mul reads b, c and writes t; add reads a, t and writes out.
    unfused = place(
        "a + b * c",
        flops=2 * n,
        bytes_read=4 * n * elem,
        bytes_written=2 * n * elem,
        duration_ns=120_000.0,
        peaks=H200,
    )
    # addcmul reads a, b, c once and writes out once.
    fused = place(
        "addcmul",
        flops=2 * n,
        bytes_read=3 * n * elem,
        bytes_written=n * elem,
        duration_ns=80_000.0,
        peaks=H200,
    )
    c = traffic_comparison(unfused, fused)
    assert (c.a, c.b) == ("a + b * c", "addcmul")
    assert c.traffic_ratio == pytest.approx(1.5)
    assert c.time_ratio == pytest.approx(1.5)
    assert c.read_ratio == pytest.approx(4 / 3)
    assert c.write_ratio == pytest.approx(2.0)


def test_traffic_comparison_over_zero():
    peaks = Peaks("d", {"fp32": 1e12}, 1e11, "test")
    a = place("a", flops=1, bytes_read=1, bytes_written=0, duration_ns=1, peaks=peaks)
    b = place("b", flops=1, bytes_read=2, bytes_written=0, duration_ns=1, peaks=peaks)
    c = traffic_comparison(a, b)
    assert math.isnan(c.write_ratio)
    assert c.read_ratio == 0.5


def test_measured_dtype_follows_the_counters() -> None:
    from nsight_lab.roofline.counters import measured_dtype

    assert measured_dtype({}) is None
    bf16 = {
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum": 1e12,
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e6,
    }
    assert measured_dtype(bf16) == "bf16"
    assert (
        measured_dtype({"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 5.0})
        == "fp32"
    )
