from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from nsight_lab.analysis.compare import (
    CLOCK_TOLERANCE,
    DEFAULT_THRESHOLD,
    GPU_SESSION_DRIFT,
    SESSION_DRIFT,
    compare_runs,
    compare_scope,
    metric_unit,
    widen,
)
from nsight_lab.analysis.compare import compare as compare_sessions
from nsight_lab.contract.records import TIME_METRIC, RunRecord

INPUT_ERRORS = {"RequestError", "QueryError", "BaselineError"}
"""What a malformed request is answered with (subclasses of InputError: 400)."""


def by_hand(a, b):
    """Ratio of medians, Price-Bonett interval on the log scale, written out."""

    def var(x):
        y = np.sort(np.log(x))
        n = y.size
        c = max(1, math.floor((n + 1) / 2 - math.sqrt(n) + 0.5))
        z = stats.norm.ppf(1 - stats.binom.cdf(c - 1, n, 0.5))
        return ((y[n - c] - y[c - 1]) / (2 * z)) ** 2

    ratio = float(np.median(b) / np.median(a))
    half = stats.norm.ppf(0.975) * math.sqrt(var(a) + var(b))
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)


def record(sid, annotation, value, config, index, *, metrics=None, backend="cpu"):  # noqa: PLR0913
    return RunRecord(
        session_id=sid, config_index=index, config=config, run_index=0,
        annotation=annotation, duration_ns=value, backend=backend,
        metrics=metrics or {},
    )  # fmt: skip


# -- the rows (pure) -------------------------------------------------------------------


def test_compare_runs_matches_configs_by_value_not_index():
    # Given: config {"n": 2} is index 1 in a but index 0 in b
    a = [record(1, "r", v, {"n": 1}, 0) for v in (10.0, 11.0)]
    a += [record(1, "r", v, {"n": 2}, 1) for v in (20.0, 22.0)]
    b = [record(2, "r", v, {"n": 2}, 0) for v in (40.0, 44.0)]
    b += [record(2, "r", v, {"n": 3}, 1) for v in (1.0, 1.0)]

    # When
    rows = compare_runs(a, b)

    # Then: only n=2 is in both
    assert len(rows) == 1
    row = rows[0]
    assert row.config == {"n": 2}
    assert (row.config_index_a, row.config_index_b) == (1, 0)
    assert row.ratio == pytest.approx(2.0)
    assert (row.n_a, row.n_b) == (2, 2)
    assert row.verdict is None  # two runs a side: no interval, no verdict
    assert not row.significant


def test_compare_runs_covers_shared_metrics_and_skips_nan():
    # Given
    a = [
        record(1, "r", v, {}, 0, metrics={"bytes": 100.0, "only_a": 1.0})
        for v in (1.0, 2.0)
    ]
    b = [
        record(2, "r", v, {}, 0, metrics={"bytes": 300.0}) for v in (3.0, float("nan"))
    ]

    # When
    rows = {row.metric: row for row in compare_runs(a, b)}

    # Then
    assert list(rows) == [TIME_METRIC, "bytes"]
    assert rows[TIME_METRIC].n_b == 1  # the NaN run is left out
    # The same value in every run on both sides: the plain ratio, no verdict of noise
    assert rows["bytes"].ratio == 3.0
    assert rows["bytes"].ci_low is rows["bytes"].ci_high is None
    assert rows["bytes"].verdict == "deterministic"
    assert not rows["bytes"].significant


def test_the_a_plus_a_case_reads_no_change():
    # Given: two sessions of the same `a + a` (~7.2 µs), slow outliers in one
    rng = np.random.default_rng(23)
    a_ns = 7_200.0 * rng.lognormal(0.0, 0.08, 20)
    b_ns = 7_200.0 * rng.lognormal(0.0, 0.08, 20)
    b_ns[[0, 7, 13]] = [2.1e8, 9.0e7, 1.5e8]
    assert b_ns.mean() / a_ns.mean() > 20  # what the ratio of means said
    a = [record(1, "a + a", v, {}, 0) for v in a_ns]
    b = [record(2, "a + a", v, {}, 0) for v in b_ns]

    # When
    (row,) = compare_runs(a, b)

    # Then
    assert row.unit == "ns"
    assert row.median_a == pytest.approx(float(np.median(a_ns)))
    assert row.ci_low is not None
    assert row.ci_high is not None
    assert row.ci_low <= 1.0 <= row.ci_high
    assert row.verdict == "no change"
    assert not row.significant


def test_a_between_session_drift_reads_no_change_but_a_real_change_does_not():
    """Tight cpu sessions of the same code half the drift apart: not a verdict."""
    drift = SESSION_DRIFT["cpu"]
    rng = np.random.default_rng(5)
    a_ns = 2.4e6 * rng.lognormal(0.0, 0.002, 200)
    same = 2.4e6 * (1 + drift / 2) * rng.lognormal(0.0, 0.002, 200)
    slower = 2.4e6 * (1 + drift * 1.5) * rng.lognormal(0.0, 0.002, 200)
    a = [record(1, "sort", v, {}, 0) for v in a_ns]
    (drifted,) = compare_runs(a, [record(2, "sort", v, {}, 0) for v in same])
    (changed,) = compare_runs(a, [record(2, "sort", v, {}, 0) for v in slower])
    assert drifted.ci_low < 1.0 < drifted.ci_high
    assert drifted.verdict == "no change"
    assert changed.verdict == "slower"
    # Counters are not widened: a 3 % change in bytes (beyond the 2.2 % practical
    # threshold) is a change, with an interval of +-0.1 %.
    bytes_a = [record(1, "k", 1.0, {}, 0, metrics={"dram__bytes_read.sum": v})
               for v in 1e9 * rng.lognormal(0.0, 0.002, 50)]  # fmt: skip
    bytes_b = [record(2, "k", 1.0, {}, 0, metrics={"dram__bytes_read.sum": v})
               for v in 1.03e9 * rng.lognormal(0.0, 0.002, 50)]  # fmt: skip
    rows = {r.metric: r for r in compare_runs(bytes_a, bytes_b)}
    assert rows["dram__bytes_read.sum"].verdict == "higher"


def test_gpu_sessions_are_widened_by_the_gpu_drift_only():
    rng = np.random.default_rng(6)
    a_ns = 1e5 * rng.lognormal(0.0, 0.001, 100)
    b_ns = 1.01e5 * rng.lognormal(0.0, 0.001, 100)
    a = [record(1, "k", v, {}, 0, backend="events") for v in a_ns]
    b = [record(2, "k", v, {}, 0, backend="events") for v in b_ns]
    (row,) = compare_runs(a, b, threshold=0.0)
    assert row.verdict == "slower"  # 1 % is beyond the events backend's 0.9 %
    assert row.ci_high / row.ratio <= 1.0 + 2 * GPU_SESSION_DRIFT
    # At the practical threshold (2.2 %, the largest same-code move measured on
    # the H200) 1 % is no change.
    assert compare_runs(a, b)[0].verdict == "no change"


def test_widen_keeps_the_ratio_inside_and_only_grows():
    for ratio, low, high in [(1.0, 0.99, 1.01), (0.8, 0.7, 0.85), (2.0, 1.9, 2.3)]:
        wide_low, wide_high = widen(ratio, low, high, 0.02)
        assert wide_low <= low <= ratio <= high <= wide_high
        assert math.log(ratio / wide_low) >= math.log1p(0.02) - 1e-12
    assert widen(1.0, None, None, 0.02) == (None, None)
    assert widen(1.0, 0.9, 1.1, 0.0) == (0.9, 1.1)


def test_verdicts_units_and_model_metrics():
    # Given: b is 2x slower, moves the same modelled bytes, reads 2x the DRAM bytes
    def runs(sid, scale):
        return [
            record(
                sid,
                "r",
                scale * v * 1e5,  # ~100 µs: a change of a time past the 1 µs floor
                {"n": 1},
                0,
                metrics={
                    "model__bytes_read": 4096.0 * (1 + (k % 2) * (sid - 1)),
                    "model__flops": 1.0e6,
                    "dram__bytes_read.sum": scale * 1000.0 * v,
                    "dram__bytes.sum.per_second": 1.0e9 / scale * v,
                },
            )
            for k, v in enumerate([1.0, 1.01, 0.99, 1.02, 0.98, 1.0])
        ]

    # When
    rows = {row.metric: row for row in compare_runs(runs(1, 1.0), runs(2, 2.0))}

    # Then
    time = rows[TIME_METRIC]
    assert (time.unit, time.verdict, time.significant) == ("ns", "slower", True)
    assert time.ratio == pytest.approx(2.0)
    dram = rows["dram__bytes_read.sum"]
    assert (dram.unit, dram.verdict) == ("bytes", "higher")
    rate = rows["dram__bytes.sum.per_second"]
    assert (rate.unit, rate.verdict) == ("bytes/s", "slower")
    for name, unit in (("model__bytes_read", "bytes"), ("model__flops", "FLOP")):
        row = rows[name]
        # Work-model metrics are counted, not measured: never a verdict of noise,
        # even where they vary between runs (model__bytes_read in b)
        assert (row.unit, row.verdict) == (unit, "deterministic")
        assert not row.significant
        assert row.ci_low is row.ci_high is None
    assert rows["model__bytes_read"].ratio == pytest.approx(1.5)


@pytest.mark.parametrize(
    ("metric", "unit"),
    [
        (TIME_METRIC, "ns"),
        ("model__flops_dtype_bf16", "FLOP"),
        ("model__bytes_written", "bytes"),
        ("dram__bytes_write.sum", "bytes"),
        ("dram__bytes.sum.per_second", "bytes/s"),
        ("sm__cycles_elapsed.avg", "cycles"),
        ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst"),
        ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        ("lts__t_sectors.sum", "sectors"),
        ("something_else", ""),
    ],
)
def test_metric_unit(metric, unit):
    assert metric_unit(metric) == unit


def test_scope_of_sessions_with_different_configs():
    # Given: a ran n=512, 1024, 4096; b ran n=1024, 4096, 8192; a region only in b
    a = [
        record(1, "mm", 10.0 * n, {"n": n}, i) for i, n in enumerate((512, 1024, 4096))
    ]
    b = [
        record(2, "mm", 9.0 * n, {"n": n}, i) for i, n in enumerate((1024, 4096, 8192))
    ]
    b.append(record(2, "copy", 5.0, {"n": 1024}, 0))

    # When
    rows, scope = compare_sessions(a, b)

    # Then
    assert [row.config for row in rows] == [{"n": 1024}, {"n": 4096}]
    assert scope.configs == [{"n": 1024}, {"n": 4096}]
    assert scope.configs_only_a == [{"n": 512}]
    assert scope.configs_only_b == [{"n": 8192}]
    assert scope.regions_only_b == ["copy"]
    assert scope.note == (
        "compared on n=1024, n=4096; only in a: n=512; only in b: n=8192; "
        "regions only in b: copy"
    )
    assert scope.reason is None


def test_scope_says_why_nothing_is_shared():
    a = [record(1, "mm", 1.0, {"n": 512, "dtype": "fp16"}, 0)]
    b = [record(2, "mm", 1.0, {"n": 1024, "dtype": "fp16"}, 0)]
    scope = compare_scope(a, b)
    assert scope.reason == (
        "no config in common for mm: a ran (n=512, dtype=fp16); "
        "b ran (n=1024, dtype=fp16)"
    )
    other = [record(2, "add", 1.0, {"n": 512, "dtype": "fp16"}, 0)]
    assert compare_scope(a, other).reason == "no region in common: a ran mm; b ran add"
    assert compare_scope(a, []).reason == "session b has no runs yet"
    assert compare_scope([], []).reason == "neither session has runs yet"
    same = compare_scope(a, a)
    assert (same.note, same.reason) == ("", None)


# -- the endpoint --------------------------------------------------------------------


async def compare(jp_fetch, **params):
    response = await jp_fetch(
        "nsight-lab", "api", "compare", params=params, raise_error=False
    )
    return response.code, json.loads(response.body)


async def test_compare_endpoint(jp_fetch, filled):
    # When
    code, payload = await compare(jp_fetch, a=filled.base, b=filled.candidate)

    # Then
    assert code == 200
    assert set(payload) == {
        "schema_version", "a", "b", "baseline", "threshold", "method", "confidence",
        "verdict", "rows", "scope", "tolerances", "legend",
    }  # fmt: skip
    # b is faster in matmul n=1024 and unchanged elsewhere: faster overall.
    assert payload["verdict"]["verdict"] == "faster"
    assert (payload["baseline"], payload["threshold"]) == (None, DEFAULT_THRESHOLD)
    assert payload["tolerances"]["clock"] == CLOCK_TOLERANCE
    assert payload["a"]["baseline_verdict"] is None  # not profiled with --baseline
    assert payload["method"] == "median-ratio-price-bonett"
    assert payload["confidence"] == 0.95
    assert payload["a"]["id"] == filled.base
    assert payload["b"]["id"] == filled.candidate
    keys = [(r["annotation"], r["metric"], r["config"]["n"]) for r in payload["rows"]]
    # "add" is only in a and "copy" only in b; configs match by value
    assert keys == [
        ("matmul", TIME_METRIC, 1024),
        ("matmul", "dram__bytes_read.sum", 1024),
        ("matmul", TIME_METRIC, 2048),
    ]
    small = payload["rows"][0]
    a_vals = [100_000.0, 102_000.0, 98_000.0, 101_000.0, 99_000.0]
    b_vals = [80_000.0, 82_000.0, 79_000.0, 81_000.0]
    ratio, low, high = by_hand(a_vals, b_vals)
    # A timed row's interval also holds the between-session drift of the cpu backend.
    low, high = widen(ratio, low, high, SESSION_DRIFT["cpu"])
    assert small["unit"] == "ns"
    assert small["median_a"] == pytest.approx(100_000.0)
    assert small["median_b"] == pytest.approx(80_500.0)
    assert small["mean_b"] == pytest.approx(80_500.0)
    assert small["ratio"] == pytest.approx(ratio)
    assert small["ci_low"] == pytest.approx(low)
    assert small["ci_high"] == pytest.approx(high)
    assert (small["n_a"], small["n_b"]) == (5, 4)
    assert (small["config_index_a"], small["config_index_b"]) == (0, 1)
    assert small["significant"] is True
    assert small["verdict"] == "faster"
    big = payload["rows"][2]
    assert big["ratio"] == pytest.approx(1.0)
    assert big["ci_low"] < 1 < big["ci_high"]
    assert big["significant"] is False
    assert big["verdict"] == "no change"
    traffic = payload["rows"][1]
    assert traffic["unit"] == "bytes"
    assert traffic["ratio"] == pytest.approx(2.0)
    assert traffic["significant"] is True
    assert traffic["verdict"] == "higher"
    assert payload["scope"] == {
        "regions": ["matmul"],
        "regions_only_a": ["add"],
        "regions_only_b": ["copy"],
        "configs": [{"n": 1024}, {"n": 2048}],
        "configs_only_a": [],
        "configs_only_b": [],
        "note": "regions only in a: add; regions only in b: copy",
        "reason": None,
    }


async def test_compare_with_itself_is_all_ones(jp_fetch, filled):
    _, payload = await compare(jp_fetch, a=filled.base, b=filled.base)
    assert {row["ratio"] for row in payload["rows"]} == {1.0}
    assert not any(row["significant"] for row in payload["rows"])


async def test_compare_with_a_session_without_runs_has_no_rows(jp_fetch, filled):
    code, payload = await compare(jp_fetch, a=filled.base, b=filled.running)
    assert code == 200
    assert payload["rows"] == []
    assert payload["scope"]["reason"] == "session b has no runs yet"


@pytest.mark.parametrize("missing", ["a", "b"])
async def test_compare_unknown_session_is_404(jp_fetch, filled, missing):
    ids = {"a": filled.base, "b": filled.candidate, missing: 999}
    code, payload = await compare(jp_fetch, **ids)
    assert code == 404
    assert payload["error"] == "NotFoundError"
    assert "999" in payload["message"]


@pytest.mark.usefixtures("filled")
@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"a": "1"}, "missing b"),
        ({"b": "1"}, "missing a"),
        ({"a": "one", "b": "2"}, "invalid a 'one'"),
        ({"a": "1", "b": "../2"}, "invalid b '../2'"),
    ],
)
async def test_compare_refuses_malformed_ids(jp_fetch, params, needle):
    code, payload = await compare(jp_fetch, **params)
    assert code == 400
    assert payload["error"] in INPUT_ERRORS
    assert needle in payload["message"]
