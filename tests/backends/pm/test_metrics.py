"""What PM sampling takes, per device (backends/pm/metrics.py), with a fake host API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.backends.pm.metrics import (
    CACHE_PREFIX,
    DEFAULT_METRICS,
    MetricCheck,
    kind_of,
    timeline_scale,
    timeline_unit,
)
from nsight_lab.contract.records import TIME_METRIC

if TYPE_CHECKING:
    from collections.abc import Sequence

# As seen on GH100 (shared/device/FACTS.md): accepted alone, and refused.
ACCEPTED = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg",
    "pcie__read_bytes.sum",
    "pcie__write_bytes.sum",
    "gr__cycles_elapsed.max",
}


class FakeHost:
    """A chip whose counters fit four metrics in one pass."""

    chip = "GH100"

    def __init__(self, per_pass: int = 4) -> None:
        self.per_pass = per_pass
        self.asked: list[tuple[str, ...]] = []

    def passes(self, metrics: Sequence[str]) -> int:
        self.asked.append(tuple(metrics))
        unknown = [m for m in metrics if m not in ACCEPTED]
        if unknown:
            msg = f"One or more metrics in {unknown!r} are invalid or not supported"
            raise ValueError(msg)
        return -(-len(metrics) // self.per_pass)

    def names(self) -> list[str]:
        return sorted(ACCEPTED)


class DictCache:
    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def cache_get(self, key: str) -> Any:
        return self.data.get(key)

    def cache_put(self, key: str, value: Any) -> None:
        self.data[key] = value


def test_kinds_and_units() -> None:
    assert kind_of("dram__bytes_read.sum") == "count"
    assert kind_of("sm__cycles_active.avg") == "count"
    assert kind_of("dram__bytes_read.sum.per_second") == "rate"
    pct = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
    assert kind_of(pct) == "rate"
    assert kind_of("sm__warps_active.avg.pct_of_peak_sustained_active") == "ratio"
    assert kind_of("smsp__inst_executed.avg.per_cycle_active") == "ratio"
    assert (timeline_unit("dram__bytes_read.sum"), timeline_scale("x_bytes.sum")) == (
        "GB/s",
        1.0,
    )
    assert timeline_unit(pct) == "%"
    assert (timeline_unit("sm__cycles_active.avg"), timeline_scale("a.sum")) == (
        "/s",
        1e9,
    )


def test_the_defaults_are_what_the_issue_lists_and_gh100_took() -> None:
    assert set(DEFAULT_METRICS) <= ACCEPTED
    assert DEFAULT_METRICS[:2] == ("dram__bytes_read.sum", "dram__bytes_write.sum")


def test_accepted_metrics_in_one_pass_pass() -> None:
    check = MetricCheck("NVIDIA H200", FakeHost())
    assert (
        check.why_not((TIME_METRIC, "dram__bytes_read.sum", "lts__t_bytes.sum")) is None
    )


def test_a_refused_metric_is_named_with_close_names_it_takes() -> None:
    check = MetricCheck("NVIDIA H200", FakeHost())
    why = check.why_not(("dram__bytes_read.sum", "dram__bytes_reed.sum"))
    assert why is not None
    assert "\n" not in why
    assert "cannot sample dram__bytes_reed.sum" in why
    assert "close names it takes: dram__bytes_read.sum" in why
    assert "use --backend ncu for it" in why
    flops = check.why_not(("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",))
    assert flops is not None
    assert "GH100 (NVIDIA H200)" in flops


def test_too_many_for_one_pass_says_which_groups_fit() -> None:
    check = MetricCheck("NVIDIA H200", FakeHost(per_pass=3))
    why = check.why_not(DEFAULT_METRICS)
    assert why is not None
    assert "need 3 passes" in why
    assert "PM sampling takes one" in why
    groups = why.split("fit together: ")[1].split(" (")[0].split(" | ")
    assert [len(g.split(",")) for g in groups] == [3, 3, 1]
    assert check.groups(list(DEFAULT_METRICS))[0] == list(DEFAULT_METRICS[:3])


def test_verdicts_are_cached_per_device_and_reused() -> None:
    cache = DictCache()
    host = FakeHost()
    MetricCheck("NVIDIA H200", host, cache).why_not(DEFAULT_METRICS[:3])
    stored = cache.data[f"{CACHE_PREFIX}NVIDIA H200"]
    assert stored["chip"] == "GH100"
    assert set(DEFAULT_METRICS[:3]) <= set(stored["accepted"])
    fresh = FakeHost()
    assert MetricCheck("NVIDIA H200", fresh, cache).why_not(DEFAULT_METRICS[:3]) is None
    assert fresh.asked == []  # every verdict came from the store
    other = FakeHost()
    other.chip = "GB100"  # another GPU under the same name: asked again
    MetricCheck("NVIDIA H200", other, cache).why_not(DEFAULT_METRICS[:1])
    assert other.asked


def test_a_broken_cache_only_costs_asking_again() -> None:
    class Broken(DictCache):
        def cache_get(self, key: str) -> Any:
            raise OSError(key)

        def cache_put(self, key: str, _value: Any) -> None:
            raise OSError(key)

    host = FakeHost()
    assert MetricCheck("X", host, Broken()).why_not(DEFAULT_METRICS[:2]) is None
    assert host.asked


@pytest.mark.parametrize(
    "bad", [None, [], {"version": 99}, {"version": 1, "one_pass": 3}]
)
def test_unreadable_cache_entries_are_ignored(bad: Any) -> None:
    cache = DictCache()
    cache.data[f"{CACHE_PREFIX}X"] = bad
    assert MetricCheck("X", FakeHost(), cache).why_not(DEFAULT_METRICS[:2]) is None
