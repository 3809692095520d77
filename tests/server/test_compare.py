from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from nsight_lab.compare import compare_runs, ratio_ci
from nsight_lab.records import TIME_METRIC, RunRecord


def by_hand(a, b):
    """Delta method on the log means, Welch-Satterthwaite df, written out."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    ma, mb = a.mean(), b.mean()
    va = a.var(ddof=1) / (len(a) * ma**2)
    vb = b.var(ddof=1) / (len(b) * mb**2)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    t = stats.t.ppf(0.975, df)
    ratio = mb / ma
    half = t * math.sqrt(va + vb)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half), df


# -- the maths (pure) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([100.0, 102.0, 98.0, 101.0, 99.0], [80.0, 82.0, 79.0, 81.0]),
        ([400.0, 410.0, 390.0], [405.0, 395.0, 400.0]),
        ([1.0, 1.5], [1.2, 0.9, 1.1, 1.4, 1.0, 1.3]),
    ],
)
def test_ratio_ci_matches_a_hand_computation(a, b):
    ratio, low, high, df = ratio_ci(a, b)
    expected = by_hand(a, b)
    assert (ratio, low, high, df) == pytest.approx(expected, rel=1e-12)


def test_ratio_ci_known_values():
    # Given: a = [100, 102, 98, 101, 99] (mean 100, s^2 = 2.5),
    #        b = [80, 82, 79, 81] (mean 80.5, s^2 = 5/3)
    ratio, low, high, df = ratio_ci(
        [100.0, 102.0, 98.0, 101.0, 99.0], [80.0, 82.0, 79.0, 81.0]
    )
    va = 2.5 / (5 * 100.0**2)
    vb = (5 / 3) / (4 * 80.5**2)

    # Then
    assert ratio == pytest.approx(0.805)
    assert df == pytest.approx((va + vb) ** 2 / (va**2 / 4 + vb**2 / 3))
    half = stats.t.ppf(0.975, df) * math.sqrt(va + vb)
    assert low == pytest.approx(0.805 * math.exp(-half))
    assert high == pytest.approx(0.805 * math.exp(half))
    assert low < ratio < high < 1  # b is faster, and significantly so


def test_ratio_ci_covers_the_true_ratio_about_95_percent_of_the_time():
    # Given: 4000 simulated pairs with a true ratio of 1.2 and 5% noise
    rng = np.random.default_rng(7)
    trials, covered = 4000, 0
    for _ in range(trials):
        a = rng.normal(100.0, 5.0, size=8)
        b = rng.normal(120.0, 6.0, size=6)
        _, low, high, _ = ratio_ci(a.tolist(), b.tolist())
        covered += low <= 1.2 <= high

    # Then: close to nominal (binomial sd ~0.35%)
    assert 0.935 <= covered / trials <= 0.965


def test_ratio_ci_edge_cases():
    # One run on a side: no interval
    assert ratio_ci([1.0], [2.0, 2.0]) == (2.0, None, None, None)
    # No spread at all: the interval is the ratio itself
    assert ratio_ci([2.0, 2.0], [3.0, 3.0]) == (1.5, 1.5, 1.5, None)
    # A non-positive mean: no log-scale interval
    ratio, low, high, df = ratio_ci([-1.0, 1.0, -0.5], [1.0, 2.0])
    assert (low, high, df) == (None, None, None)
    assert ratio == pytest.approx(1.5 / (-0.5 / 3))
    # Zero baseline mean: the ratio is undefined
    assert math.isnan(ratio_ci([0.0, 0.0], [1.0, 1.0])[0])


def record(sid, annotation, value, config, index, *, metrics=None):  # noqa: PLR0913
    return RunRecord(
        session_id=sid, config_index=index, config=config, run_index=0,
        annotation=annotation, duration_ns=value, backend="cpu",
        metrics=metrics or {},
    )  # fmt: skip


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
    assert rows["bytes"].ratio == 3.0
    assert rows["bytes"].ci_low == rows["bytes"].ci_high == 3.0
    assert rows["bytes"].significant


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
    assert set(payload) == {"schema_version", "a", "b", "method", "confidence", "rows"}
    assert payload["method"] == "delta-log-welch"
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
    ratio, low, high, df = by_hand(a_vals, b_vals)
    assert small["mean_a"] == pytest.approx(100_000.0)
    assert small["mean_b"] == pytest.approx(80_500.0)
    assert small["ratio"] == pytest.approx(ratio)
    assert small["ci_low"] == pytest.approx(low)
    assert small["ci_high"] == pytest.approx(high)
    assert small["df"] == pytest.approx(df)
    assert (small["n_a"], small["n_b"]) == (5, 4)
    assert (small["config_index_a"], small["config_index_b"]) == (0, 1)
    assert small["significant"] is True
    big = payload["rows"][2]
    assert big["ratio"] == pytest.approx(1.0)
    assert big["ci_low"] < 1 < big["ci_high"]
    assert big["significant"] is False
    traffic = payload["rows"][1]
    assert traffic["ratio"] == pytest.approx(2.0)
    assert traffic["significant"] is True


async def test_compare_with_itself_is_all_ones(jp_fetch, filled):
    _, payload = await compare(jp_fetch, a=filled.base, b=filled.base)
    assert {row["ratio"] for row in payload["rows"]} == {1.0}
    assert not any(row["significant"] for row in payload["rows"])


async def test_compare_with_a_session_without_runs_has_no_rows(jp_fetch, filled):
    code, payload = await compare(jp_fetch, a=filled.base, b=filled.running)
    assert code == 200
    assert payload["rows"] == []


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
    assert payload["error"] == "OptionError"
    assert needle in payload["message"]
