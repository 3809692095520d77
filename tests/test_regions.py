"""The region rules, written once and used by the runner and the ncu child alike.

(``nsight_lab.regions.RegionTracker``.)
"""

from __future__ import annotations

import pytest

from nsight_lab.errors import CellError, RegionError
from nsight_lab.regions import RegionTracker, annotate, listening


class Target:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def enter_region(self, name: str) -> None:
        self.calls.append(("enter", name))

    def exit_region(self, name: str) -> None:
        self.calls.append(("exit", name))


def test_boundaries_reach_the_target_in_order() -> None:
    target = Target()
    tracker = RegionTracker(target)
    with listening(tracker):
        with annotate("a"):
            pass
        with annotate("b"):
            pass
    tracker.check_closed()
    assert target.calls == [
        ("enter", "a"),
        ("exit", "a"),
        ("enter", "b"),
        ("exit", "b"),
    ]
    assert tracker.seen == ["a", "b"]


def test_nesting_is_refused_before_the_target_hears_of_it() -> None:
    target = Target()
    with (
        listening(RegionTracker(target)),
        pytest.raises(RegionError, match="region 'b' opened inside region 'a'"),
        annotate("a"),
        annotate("b"),
    ):
        pass
    assert ("enter", "b") not in target.calls


def test_a_name_runs_once_per_run_and_again_after_reset() -> None:
    tracker = RegionTracker(Target())
    with listening(tracker):
        with annotate("a"):
            pass
        with pytest.raises(RegionError, match="region 'a' ran twice in one run"):
            tracker.enter_region("a")
        tracker.reset()
        with annotate("a"):
            pass
    assert tracker.seen == ["a"]


def test_nested_and_repeated_regions_raise_what_nsight_python_code_catches() -> None:
    # nsight-python raises ValueError for both: code written for it catches that.
    tracker = RegionTracker(Target())
    with listening(tracker):
        with pytest.raises(ValueError, match="may not nest"), annotate("a"):
            tracker.enter_region("b")
        tracker.reset()
        with annotate("a"):
            pass
        with pytest.raises(ValueError, match="ran twice"):
            tracker.enter_region("a")


def test_a_region_left_open_is_named() -> None:
    tracker = RegionTracker(Target())
    tracker.enter_region("open")
    with pytest.raises(RegionError, match="region 'open' was still open"):
        tracker.check_closed()


@pytest.mark.parametrize("name", ["", "   ", None, 3])
def test_a_region_needs_a_non_empty_name(name: object) -> None:
    with pytest.raises(CellError, match="region name must be a non-empty string"):
        annotate(name)  # type: ignore[arg-type]
