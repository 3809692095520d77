"""The attribution on real PM samples recorded on the H200 (tests/fixtures/).

``tests/fixtures/pm_samples_h200.json`` is written by ``benchmarks/pm_h200.py`` on the
GPU host: PM samples (start, end, one value per metric) and, per region of each run,
the kernel intervals from CUPTI's activity records, for a cell of ``x*2`` over 256 MB,
``a + b*c`` and ``torch.addcmul`` on 32M floats and a tiny 4 MB ``x*2`` -- once with
the collector's DRAM-quiet gaps and once back to back without them. Until it is
recorded these tests skip, saying so; a synthetic recording in the same format (built
here from known byte rates) runs the same checks meanwhile, so the reader is tested.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nsight_lab.backends.pm.attribution import (
    Layout,
    attribute,
    covered,
    merge_spans,
    weigh,
)
from nsight_lab.backends.pm.counters import region_counters
from nsight_lab.backends.pm.sampler import Chunk
from nsight_lab.roofline.placement import peaks_for

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "pm_samples_h200.json"
READ, WRITE = "dram__bytes_read.sum", "dram__bytes_write.sum"
MiB = 1 << 20
LONG_NS = 100_000
"""Regions at least this long are held to the issue's bars."""


def synthetic() -> dict[str, Any]:
    """A recording of known rates in the fixture's format: x2 and tiny, both ways."""
    interval = 20_000
    batches = []
    for quiet in (True, False):
        gap = 22_000 if quiet else 0
        kernels: list[tuple[int, int, float, float]] = []  # start, end, read, write
        regions: list[dict[str, Any]] = []
        busy: list[list[int]] = []
        t = 0
        for run in (1, 2):
            for name, length, read, write in (
                ("x2", 125_000, 256 * MiB, 256 * MiB),
                ("tiny", 4_000, 4 * MiB, 0.0),
            ):
                flush = (t, t + 25_000)
                kernels.append((*flush, 100 * MiB, 0.0))
                busy.append(list(flush))
                start = flush[1] + gap
                kernels.append((start, start + length, read, write))
                regions.append(
                    {"run": run, "name": name, "kernels": [[start, start + length]]}
                )
                t = start + length + gap
        starts = np.arange(-7_000, t + interval, interval)
        ends = starts + interval
        values = np.zeros((len(starts), 2))
        for start, end, read, write in kernels:
            span = covered(merge_spans([(start, end)]), starts, ends) / (end - start)
            values[:, 0] += read * span
            values[:, 1] += write * span
        samples = [
            [int(a), int(b), *row]
            for a, b, row in zip(starts, ends, values.tolist(), strict=True)
        ]
        batches.append(
            {
                "quiet_gaps": quiet,
                "samples": samples,
                "regions": regions,
                "busy": busy,
                "quiet": [],
            }
        )
    return {
        "version": 1,
        "device": "NVIDIA H200",
        "interval_ns": interval,
        "metrics": [READ, WRITE],
        "known_bytes": {"x2": [256 * MiB, 256 * MiB], "tiny": [4 * MiB, 4 * MiB]},
        "ncu_bytes": {"x2": [256 * MiB, 256 * MiB]},
        "batches": batches,
    }


def recorded() -> dict[str, Any]:
    if not FIXTURE.exists():
        reason = (
            f"{FIXTURE.name} is not recorded yet: run benchmarks/pm_h200.py on the GPU "
            "host and copy its pm_samples_h200.json to tests/fixtures/"
        )
        print(reason)  # noqa: T201  (the reason shows in the test log)
        pytest.skip(reason)
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(params=["synthetic", "recorded"])
def data(request: pytest.FixtureRequest) -> dict[str, Any]:
    return synthetic() if request.param == "synthetic" else recorded()


def split(batch: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, Layout]:
    table = np.array(batch["samples"], dtype=np.float64)
    layout = Layout(
        regions={
            (r["run"], r["name"]): [tuple(k) for k in r["kernels"]]
            for r in batch["regions"]
        },
        busy=[tuple(k) for k in batch["busy"]],
    )
    return (
        table[:, 0].astype(np.int64),
        table[:, 1].astype(np.int64),
        table[:, 2:],
        layout,
    )


def region_bytes(
    data: dict[str, Any], batch: dict[str, Any]
) -> dict[str, dict[str, float]]:
    """Median over runs of each region's attributed DRAM bytes, and its kernel time."""
    starts, ends, values, layout = split(batch)
    read, write = data["metrics"].index(READ), data["metrics"].index(WRITE)
    result = attribute(starts, ends, values, layout)
    per: dict[str, list[tuple[float, float, float, int]]] = {}
    for (run, name), totals in result.regions.items():
        kernels = layout.regions[(run, name)]
        busy = float(sum(b - a for a, b in kernels))
        per.setdefault(name, []).append(
            (totals[read], totals[write], busy, len(kernels))
        )
    return {
        name: {
            "read": statistics.median(row[0] for row in rows),
            "written": statistics.median(row[1] for row in rows),
            "busy_ns": statistics.median(row[2] for row in rows),
            "kernels": max(row[3] for row in rows),
        }
        for name, rows in per.items()
    }


def batch_of(data: dict[str, Any], *, quiet: bool) -> dict[str, Any]:
    return next(b for b in data["batches"] if b["quiet_gaps"] is quiet)


def test_regions_plus_outside_is_every_sample(data: dict[str, Any]) -> None:
    for batch in data["batches"]:
        starts, ends, values, layout = split(batch)
        result = attribute(starts, ends, values, layout)
        shared = sum(result.regions.values())
        np.testing.assert_allclose(
            shared + result.outside, values.sum(axis=0), rtol=1e-9
        )


def test_with_quiet_gaps_no_sample_mixes_a_region_with_its_neighbours(
    data: dict[str, Any],
) -> None:
    starts, ends, _, layout = split(batch_of(data, quiet=True))
    weights = weigh(starts, ends, layout)
    busy = covered(merge_spans(list(layout.busy)), starts, ends)
    assert len(weights.sample) > 0
    assert busy[weights.sample].max() == 0.0


def test_reads_of_long_regions_are_what_they_read(data: dict[str, Any]) -> None:
    """After a clean L2 flush a streaming kernel reads its inputs from DRAM once.

    Single-kernel regions only: in ``a + b*c`` the second kernel may find part of
    the first one's output still in L2.
    """
    got = region_bytes(data, batch_of(data, quiet=True))
    checked = 0
    for name, (known_read, _) in data["known_bytes"].items():
        found = got.get(name)
        if found is None or found["busy_ns"] < LONG_NS or found["kernels"] != 1:
            continue
        assert found["read"] == pytest.approx(known_read, rel=0.03), name
        checked += 1
    assert checked


def test_the_tiny_region_is_counted_in_full_with_quiet_gaps(
    data: dict[str, Any],
) -> None:
    got = region_bytes(data, batch_of(data, quiet=True))["tiny"]
    assert got["busy_ns"] < data["interval_ns"]  # shorter than one sample
    assert got["read"] == pytest.approx(data["known_bytes"]["tiny"][0], rel=0.10)


L2_WRITE_BACK_BYTES = 50 * 2**20
"""The most dirty data an H200's L2 (50 MB) can hold at a kernel boundary."""


def test_against_ncu_within_two_percent_where_recorded(data: dict[str, Any]) -> None:
    """The issue's bar, for single-kernel regions of >= 100 µs.

    For a region of several kernels the two differ by what the L2 holds between
    them: Nsight Compute flushes the caches before every kernel, so the dirty lines
    one kernel leaves in the L2 are written back by ncu's flush, outside every
    kernel's count, while PM sampling sees that write-back inside the region (the
    H200's ``a + b*c``: 783 MB by PM sampling, 761 MB summed over ncu's two kernels,
    805 MB compulsory). So PM sampling reads at most one L2 of writes more per
    kernel boundary, and never less than 2 % below ncu.
    """
    reference = data.get("ncu_bytes")
    if not reference:
        pytest.skip("this recording has no ncu reference (ncu_bytes)")
    got = region_bytes(data, batch_of(data, quiet=True))
    for name, (read, written) in reference.items():
        if name not in got or got[name]["busy_ns"] < LONG_NS:
            continue
        pm = got[name]["read"] + got[name]["written"]
        if got[name]["kernels"] == 1:
            assert pm == pytest.approx(read + written, rel=0.02), name
        else:
            boundaries = got[name]["kernels"] - 1
            assert 0.98 * (read + written) <= pm, name
            assert pm <= read + written + boundaries * L2_WRITE_BACK_BYTES, name


def test_without_gaps_the_difference_stays_within_the_bound(
    data: dict[str, Any],
) -> None:
    quiet = region_bytes(data, batch_of(data, quiet=True))
    tight = region_bytes(data, batch_of(data, quiet=False))
    peaks = peaks_for(data["device"])
    assert peaks is not None
    # Two edges per region, each off by at most L/2 x the peak DRAM bandwidth.
    bound = 2 * data["interval_ns"] / 2 * peaks.dram_bytes_per_s * 1e-9
    for name in quiet:
        moved = quiet[name]["read"] + quiet[name]["written"]
        assert abs(tight[name]["read"] + tight[name]["written"] - moved) <= 2 * bound, (
            name
        )


def test_the_collectors_counters_agree_with_the_attribution(
    data: dict[str, Any],
) -> None:
    batch = batch_of(data, quiet=True)
    starts, ends, values, layout = split(batch)
    chunk = Chunk(
        metrics=tuple(data["metrics"]),
        starts=starts,
        ends=ends,
        _values={i: values[i] for i in range(len(starts))},
    )
    totals = region_counters([chunk], layout, data["metrics"])
    result = attribute(starts, ends, values, layout)
    read = data["metrics"].index(READ)
    for key, found in totals.items():
        assert found.values(data["metrics"])[READ] == pytest.approx(
            result.regions[key][read]
        )
        assert found.packed_series(data["metrics"]) is not None
