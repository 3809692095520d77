"""The loop every rank runs, on the real host clock, over a group of one or two.

The group is a stand-in here (its barrier and all-gather are torch.distributed's in
every real run, tested end to end in test_ranks_magic.py); the loop, its region
rules, warm-up and failure handling are what is tested.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pytest

from nsight_lab.distributed.clock import HostClock
from nsight_lab.distributed.worker import RankError, RankJob, run_rank
from nsight_lab.errors import RegionError
from nsight_lab.options import parse_options

if TYPE_CHECKING:
    from nsight_lab.distributed.assemble import RankRun


class _Group:
    """Rank 0 of ``world_size``; the other ranks' runs are copies of this one's."""

    def __init__(self, world_size: int = 1, other_error: str | None = None) -> None:
        self.rank = 0
        self.world_size = world_size
        self.barriers = 0
        self._other_error = other_error

    def barrier(self) -> None:
        self.barriers += 1

    def gather(self, run: RankRun) -> list[RankRun]:
        others = [
            dataclasses.replace(run, rank=r, error=self._other_error)
            for r in range(1, self.world_size)
        ]
        return [run, *others]


def _run(source: str, group: _Group, *, runs: int = 3, warmup: int = 2, configs=None):
    configs = configs or [{}]
    options = parse_options(f"--backend cpu --runs {runs} --warmup {warmup}")
    job = RankJob(
        source=source,
        filename="<cell>",
        configs=len(configs),
        runs=runs,
        warmup=warmup,
        backend="cpu",
        options=options,
        world_size=group.world_size,
    )
    emitted: list[tuple[int, int, list[RankRun]]] = []
    namespace: dict[str, object] = {}
    run_rank(
        job,
        code=compile(source, "<cell>", "exec"),
        namespace=namespace,
        bindings=configs,
        clock=HostClock(options),
        comm=group,
        emit=lambda ci, ri, gathered: emitted.append((ci, ri, gathered)),
    )
    return emitted, namespace


def test_measured_runs_are_emitted_warm_ups_are_not():
    group = _Group()
    source = "from nsight_lab import annotate\ncalls = globals().get('calls', 0) + 1\n"
    source += "with annotate('r'):\n    sum(range(n))\n"
    emitted, namespace = _run(source, group, configs=[{"n": 10}, {"n": 20}])
    assert [(ci, ri) for ci, ri, _ in emitted] == [
        (c, r) for c in (0, 1) for r in range(3)
    ]
    assert namespace["calls"] == 2 * (2 + 3)  # warm-ups ran too
    assert group.barriers == 2 * (2 + 3)  # one barrier before every run
    for _, _, gathered in emitted:
        (run,) = gathered
        start, end = run.regions["r"]
        assert end >= start > 0
        assert run.device == -1
        assert run.error is None


def test_a_cell_without_regions_is_one_region():
    emitted, _ = _run("x = 1\n", _Group(), runs=1, warmup=0)
    assert list(emitted[0][2][0].regions) == ["cell"]


def test_a_failure_on_another_rank_stops_this_one_naming_it():
    with pytest.raises(RankError) as caught:
        _run("pass\n", _Group(world_size=2, other_error="ValueError: boom"))
    assert str(caught.value) == "rank 1 of 2: the cell raised ValueError: boom"


def test_this_ranks_own_error_is_raised_unchanged_after_the_gather():
    group = _Group(world_size=2)
    with pytest.raises(ZeroDivisionError):
        _run("1 / 0\n", group)
    assert group.barriers == 1


def test_region_rules_hold_on_every_rank():
    source = (
        "from nsight_lab import annotate\n"
        "with annotate('a'):\n    with annotate('b'):\n        pass\n"
    )
    with pytest.raises(RegionError, match="may not nest"):
        _run(source, _Group())
