"""Attribution by cause: every launch belongs to the region open in the process then.

Synthetic streams shaped as the GPU records them: autograd's engine thread launching a
backward without external ids, a CUDA graph's nodes under one correlation id, a side
stream, records delivered twice, launches between runs. The streams recorded on the
device by ``benchmarks/realwork.py`` are replayed by ``test_realwork_replay.py``.
"""

from __future__ import annotations

from nsight_lab.backends.activity import KernelActivity, LaunchCall
from nsight_lab.backends.causes import (
    RegionTimeline,
    attribute_causes,
    unique_records,
)
from nsight_lab.backends.cupti import IDS_PER_RUN, PendingRun, attribute
from nsight_lab.contract import shape
from nsight_lab.contract.collector import RunKey

MAIN, ENGINE = 100, 200


def kernel(corr: int, start: int, end: int, **kw: int | str) -> KernelActivity:
    return KernelActivity(f"k{corr}", start, end, corr, **kw)  # type: ignore[arg-type]


def timeline_of_one_run(seq: int = 1) -> RegionTimeline:
    """Run ``seq`` open 0..1000 ns: region 1 ("fwd") 100..400, 2 ("bwd") 500..900."""
    t = RegionTimeline()
    base = seq * IDS_PER_RUN
    t.mark(0, base)
    t.mark(100, base + 1)
    t.mark(400, base)
    t.mark(500, base + 2)
    t.mark(900, base)
    t.mark(1000, None)
    return t


def test_another_threads_launches_go_to_the_region_open_when_they_were_made() -> None:
    base = IDS_PER_RUN
    kernels = [
        kernel(1, 2000, 2100),  # forward, main thread: stamped
        kernel(2, 2200, 2300),  # backward's one main-thread kernel: stamped
        kernel(3, 2300, 5300),  # backward, engine thread: no stamp
        kernel(4, 5300, 9300),  # backward, engine thread: no stamp
        kernel(5, 9400, 9500),  # launched after the run: no region
    ]
    stamped = {1: base + 1, 2: base + 2}
    launches = {
        1: LaunchCall(1, 150, MAIN),
        2: LaunchCall(2, 510, MAIN),
        3: LaunchCall(3, 600, ENGINE),
        4: LaunchCall(4, 880, ENGINE),
        5: LaunchCall(5, 1200, ENGINE),
    }
    causes = attribute_causes(kernels, stamped, launches, timeline_of_one_run())
    assert causes.external_ids == {1: base + 1, 2: base + 2, 3: base + 2, 4: base + 2}
    assert causes.foreign == {3, 4}
    run = PendingRun(key=RunKey(0, 0), seq=1, regions=["fwd", "bwd"])
    run.host_ns = {"fwd": 300, "bwd": 400}
    (timing,) = attribute(causes.kernels, causes.external_ids, [run], "sum", causes)
    assert timing.regions == {"fwd": 100.0, "bwd": 7100.0}  # was 100 by ids alone
    bwd = timing.shape["bwd"]
    assert bwd[shape.FOREIGN] == 2
    assert bwd[shape.THREADS] == 2
    assert bwd[shape.LAUNCHES] == 3
    assert bwd[shape.HOST_NS] == 400
    assert bwd[shape.BUSY_NS] == bwd[shape.SPAN_NS] == 7100


def test_a_stamped_launch_keeps_its_stamp_whatever_the_timeline_says() -> None:
    # The opening thread's own calls are what CUPTI stamped: the timeline is only for
    # launches without a stamp.
    t = timeline_of_one_run()
    causes = attribute_causes(
        [kernel(7, 0, 10)], {7: IDS_PER_RUN + 1}, {7: LaunchCall(7, 700, MAIN)}, t
    )
    assert causes.external_ids[7] == IDS_PER_RUN + 1
    assert not causes.foreign


def test_graph_nodes_and_side_streams_follow_their_launch() -> None:
    base = IDS_PER_RUN
    # One cudaGraphLaunch (corr 9) ran 12 nodes; corr 10 ran on a side stream.
    nodes = [kernel(9, 100 * i, 100 * i + 80, graph_node_id=i + 1) for i in range(12)]
    side = kernel(10, 50, 1250, stream_id=7)
    causes = attribute_causes(
        [*nodes, side],
        {9: base + 1},
        {9: LaunchCall(9, 120, MAIN), 10: LaunchCall(10, 130, ENGINE)},
        timeline_of_one_run(),
    )
    run = PendingRun(key=RunKey(0, 0), seq=1, regions=["replay"])
    (timing,) = attribute(causes.kernels, causes.external_ids, [run], "sum", causes)
    assert timing.regions["replay"] == 12 * 80 + 1200
    assert timing.shape["replay"][shape.STREAMS] == 2
    assert timing.shape["replay"][shape.BUSY_NS] == 1250  # the union: 0..1250


def test_records_delivered_twice_count_once_and_are_counted() -> None:
    base = IDS_PER_RUN
    once = [kernel(1, 0, 100), kernel(2, 100, 300)]
    graph = [
        kernel(3, 300 + 10 * i, 305 + 10 * i, graph_node_id=i + 1) for i in range(4)
    ]
    stream = once + graph
    kept, dropped = unique_records(stream + stream)
    assert kept == stream
    assert dropped == {1: 1, 2: 1, 3: 4}
    causes = attribute_causes(
        stream + stream, {1: base + 1, 2: base + 1, 3: base + 1}, {}, RegionTimeline()
    )
    run = PendingRun(key=RunKey(0, 0), seq=1, regions=["r"])
    (timing,) = attribute(causes.kernels, causes.external_ids, [run], "sum", causes)
    assert timing.regions["r"] == 100 + 200 + 4 * 5  # not doubled
    assert timing.shape["r"][shape.DUPLICATES] == 6


def test_a_launch_with_no_api_record_or_outside_every_run_stays_outside() -> None:
    t = timeline_of_one_run()
    causes = attribute_causes(
        [kernel(1, 0, 10), kernel(2, 0, 10), kernel(3, 0, 10)],
        {},
        {2: LaunchCall(2, -5, ENGINE), 3: LaunchCall(3, 1000, ENGINE)},
        t,
    )
    assert causes.external_ids == {}  # 1: no record; 2: before; 3: after the run


def test_the_timeline_forgets_only_what_no_later_launch_needs() -> None:
    t = timeline_of_one_run()
    t.forget_before(450)
    assert t.open_at(460) == IDS_PER_RUN
    assert t.open_at(600) == IDS_PER_RUN + 2
    t.mark(950, 5)  # a clock that stepped back is held at the last mark
    assert t.times[-1] == 1000
