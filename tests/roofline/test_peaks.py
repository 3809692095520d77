from __future__ import annotations

import datetime as dt
import json

import pytest

from nsight_lab.errors import MeasurementError
from nsight_lab.paths import db_path
from nsight_lab.roofline.peaks import (
    cached_peaks,
    device_name,
    measure_peaks,
    peaks_from_json,
    peaks_to_json,
)
from nsight_lab.roofline.placement import Peaks, peaks_for
from nsight_lab.store.run_store import RunStore

pytest.importorskip("torch")


def test_measure_peaks_on_the_cpu_is_real():
    # (its pace, under 5 s at 0.1 s per test, is benchmarks/unit_paces.py's)
    peaks = measure_peaks("cpu", dtypes=("fp32", "fp64", "bf16"), seconds_per_test=0.1)
    assert peaks.device == device_name("cpu")
    assert peaks.device.startswith("CPU")
    assert peaks.dram_bytes_per_s > 1e8  # any machine copies > 100 MB/s
    assert set(peaks.flops_per_s) <= {"fp32", "fp64", "bf16"}
    assert peaks.flops_per_s["fp32"] > 1e8
    assert peaks.flops_per_s["fp64"] > 1e8
    assert all(v > 0 for v in peaks.flops_per_s.values())
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    assert peaks.source == f"measured by %nsight peaks on {today}"
    assert any("fp32: " in n and "matmul" in n for n in peaks.notes)


def test_measure_peaks_skips_what_the_cpu_cannot_do():
    peaks = measure_peaks("cpu", dtypes=("tf32", "fp8"), seconds_per_test=0.05)
    assert peaks.flops_per_s == {}
    assert any(n.startswith("tf32 skipped") for n in peaks.notes)
    assert any(n.startswith("fp8 skipped") for n in peaks.notes)
    assert peaks.dram_bytes_per_s > 0


def test_measure_peaks_rejects_bad_arguments():
    with pytest.raises(ValueError, match=r"unknown dtype class 'int8'"):
        measure_peaks("cpu", dtypes=("int8",))
    with pytest.raises(ValueError, match=r"unknown device 'tpu'"):
        measure_peaks("tpu")
    with pytest.raises(ValueError, match="seconds_per_test"):
        measure_peaks("cpu", seconds_per_test=0)


def test_measure_peaks_without_cuda_says_so():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(MeasurementError, match=r"torch.cuda.is_available\(\) is False"):
        measure_peaks("cuda")


def test_json_round_trip():
    peaks = peaks_for("NVIDIA H200")
    assert peaks is not None
    data = json.loads(json.dumps(peaks_to_json(peaks)))
    assert peaks_from_json(data) == peaks


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {},
        {"device": "x"},
        {
            "device": "x",
            "flops_per_s": {"fp99": 1.0},
            "dram_bytes_per_s": 1.0,
            "source": "s",
        },
    ],
)
def test_peaks_from_json_rejects_other_shapes(bad):
    with pytest.raises(ValueError, match="not a peaks record"):
        peaks_from_json(bad)


def test_cached_peaks_measures_once_then_reads_the_store(nsight_home):
    calls: list[str] = []

    def measure(device: str) -> Peaks:
        calls.append(device)
        return measure_peaks(device, dtypes=("fp32",), seconds_per_test=0.05)

    name = device_name("cpu")
    with RunStore() as store:
        first = cached_peaks(store, name, measure, device="cpu")
        second = cached_peaks(store, name, measure, device="cpu")
    assert calls == ["cpu"]
    assert second == first
    assert db_path().is_relative_to(nsight_home)
    assert db_path().is_file()
    # A new connection to the same file still has it.
    with RunStore() as store:
        third = cached_peaks(store, name, measure, device="cpu")
        assert store.cache_get(f"peaks:{name}")["device"] == name
        refreshed = cached_peaks(store, name, measure, device="cpu", refresh=True)
    assert third == first
    assert calls == ["cpu", "cpu"]
    assert refreshed.flops_per_s["fp32"] > 0


def test_cached_peaks_ignores_a_corrupt_entry(nsight_home):  # noqa: ARG001
    peaks = peaks_for("NVIDIA L4")
    assert peaks is not None
    with RunStore() as store:
        store.cache_put("peaks:NVIDIA L4", {"garbage": True})
        got = cached_peaks(store, "NVIDIA L4", lambda _device: peaks)
        assert got == peaks
        assert peaks_from_json(store.cache_get("peaks:NVIDIA L4")) == peaks


@pytest.mark.gpu
def test_measure_peaks_on_the_gpu():
    peaks = measure_peaks("cuda", dtypes=("fp32", "bf16", "fp64"), seconds_per_test=0.2)
    assert peaks.dram_bytes_per_s > 1e11
    assert peaks.flops_per_s["bf16"] > peaks.flops_per_s["fp32"] > 1e12
    assert len({"fp64", "fp64_tensor"} & set(peaks.flops_per_s)) == 1
    table = peaks_for(peaks.device)
    if table is not None:  # achievable is below the datasheet, but not far below
        assert peaks.dram_bytes_per_s < 1.05 * table.dram_bytes_per_s
        for dtype, rate in peaks.flops_per_s.items():
            assert rate < 1.05 * table.flops_per_s[dtype], dtype
