"""The cupti.pm_sampling wrapper (backends/pm/sampler.py) and its error messages.

A fake image stands in for CUPTI's counter-data image and its calls: a stream of
samples (one every 20 ns of fake GPU time, values ``[i, 2 i]``) of which CUPTI has
"moved out of the hardware buffer" a growing prefix; ``decode`` appends what is ready
to the image until it is full, as CUPTI's live decode did on the H200; a stand-in
collector's ``stop`` makes everything ready (CUPTI flushes on stop).
"""

from __future__ import annotations

import importlib.util
import time
from typing import TYPE_CHECKING

import numpy as np
import pytest

from nsight_lab.backends.pm import errors
from nsight_lab.backends.pm.sampler import Chunk, CuptiMetricsHost, PmSampler
from nsight_lab.errors import BackendUnavailableError, MeasurementError

if TYPE_CHECKING:
    from numpy.typing import NDArray

STEP = 20


class Stream:
    """What the GPU sampled, and how much of it CUPTI has ready to decode."""

    def __init__(self, total: int, *, ready_per_decode: int | None = None) -> None:
        self.total = total
        self.ready = 0 if ready_per_decode else total
        self.ready_per_decode = ready_per_decode
        self.taken = 0

    def sample(self, i: int) -> tuple[int, int, list[float]]:
        return i * STEP, (i + 1) * STEP, [float(i), 2.0 * i]


class FakeImage:
    """sampler.ImageApi over a Stream: appends on decode, empties on reinit."""

    def __init__(self, stream: Stream, capacity: int) -> None:
        self.stream = stream
        self.capacity = capacity
        self.slots: list[int] = []  # stream index of each slot
        self.reinits = 0
        self.evaluated: list[int] = []  # stream indices
        self.fail_with: Exception | None = None
        self.delay_s = 0.0  # what one decode takes

    def reinit(self) -> None:
        self.slots = []
        self.reinits += 1

    def decode(self) -> tuple[int, bool]:
        if self.fail_with is not None:
            raise self.fail_with
        time.sleep(self.delay_s)
        s = self.stream
        if s.ready_per_decode:
            s.ready = min(s.total, s.ready + s.ready_per_decode)
        room = self.capacity - len(self.slots)
        take = min(room, s.ready - s.taken)
        self.slots += range(s.taken, s.taken + take)
        s.taken += take
        return len(self.slots), len(self.slots) >= self.capacity

    def times(self, lo: int, hi: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        picked = [self.stream.sample(i) for i in self.slots[lo:hi]]
        return (
            np.array([a for a, _, _ in picked], dtype=np.int64),
            np.array([b for _, b, _ in picked], dtype=np.int64),
        )

    def evaluate(self, index: int) -> NDArray[np.float64]:
        i = self.slots[index]
        self.evaluated.append(i)
        return np.array(self.stream.sample(i)[2])


class FakeCollector:
    """The calls of cupti.pm_sampling.Collector the sampler makes."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.calls: list[str] = []

    def enable(self) -> None:
        self.calls.append("enable")

    def configure(self, **_: object) -> None:
        self.calls.append("configure")

    def start(self) -> None:
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")
        self.stream.ready = self.stream.total  # CUPTI hands over every record

    def disable(self) -> None:
        self.calls.append("disable")


def open_sampler(
    total: int, capacity: int = 1000, *, ready_per_decode: int | None = None
) -> tuple[PmSampler, FakeImage, FakeCollector]:
    stream = Stream(total, ready_per_decode=ready_per_decode)
    image = FakeImage(stream, capacity)
    collector = FakeCollector(stream)
    s = PmSampler.over(collector, ("a.sum", "b.sum"), STEP, image)
    return s, image, collector


def indices(chunks: list[Chunk]) -> list[int]:
    return [int(t) // STEP for c in chunks for t in c.starts]


def test_every_sample_comes_once_in_order_across_many_images() -> None:
    # Given: 25,000 samples and an image of 1,000 (CUPTI refused much larger ones)
    s, image, collector = open_sampler(25_000, capacity=1_000)
    image.stream.total = image.stream.ready = 0  # nothing sampled yet
    seen: list[int] = []
    total = np.zeros(2)
    # When: nine batches, each sampled from a resume to a drain
    for batch in range(9):
        s.resume()
        image.stream.total = min(25_000, (batch + 1) * 3_000)
        chunks = s.drain()
        seen += indices(chunks)
        total += sum(c.all_values().sum(axis=0) for c in chunks)
    # Then: every sample once, in order, with the values summed right
    assert seen == list(range(25_000))
    assert total.tolist() == [sum(range(25_000)), 2.0 * sum(range(25_000))]
    assert image.reinits >= 25  # the image was reused, not grown
    assert collector.calls.count("stop") == 9


def test_a_drain_stops_sampling_until_the_next_run() -> None:
    # Given: a sampler that sampled one batch
    s, image, collector = open_sampler(500)
    # When: drained twice with no run between
    first = s.drain()
    second = s.drain()
    # Then: the first drain stopped sampling and got everything (CUPTI hands it
    # over on stop); the second had nothing to decode, and did not try
    assert indices(first) == list(range(500))
    assert second == []
    assert collector.calls == ["enable", "configure", "start", "stop"]
    decodes = s.stats.decodes
    s.resume()  # the next run: sampling again, on an emptied image
    assert collector.calls[-1] == "start"
    assert image.slots == []
    s.resume()  # already sampling: nothing happens
    assert collector.calls.count("start") == 2
    assert s.stats.decodes == decodes


def test_the_first_sample_after_a_start_begins_one_interval_before_its_end() -> None:
    # Given: CUPTI gives the first sample after a start no start time (0)
    s, image, _ = open_sampler(10)
    real = image.times

    def times(lo: int, hi: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        starts, ends = real(lo, hi)
        starts[0] = 0
        return starts, ends

    image.times = times  # type: ignore[method-assign]
    (chunk,) = s.drain()
    assert chunk.starts[0] == chunk.ends[0] - STEP
    assert (chunk.ends - chunk.starts == STEP).all()


def test_an_image_that_fills_mid_drain_keeps_the_needed_samples() -> None:
    # Given: 2,500 samples waiting, an image of 1,000
    s, image, _ = open_sampler(2_500, capacity=1_000)

    def needed(chunk: Chunk) -> NDArray[np.intp]:  # every tenth sample
        return np.flatnonzero((chunk.starts // STEP) % 10 == 0)

    # When
    chunks = s.drain(needed=needed)
    # Then: the image was reused twice; the needed samples of the full images were
    # read before that, the others were not read at all
    assert indices(chunks) == list(range(2_500))
    assert image.reinits >= 2
    first = chunks[0]
    assert first.values([0, 10]).tolist() == [[0.0, 0.0], [10.0, 20.0]]
    assert sorted(set(image.evaluated)) == list(range(0, 2_000, 10))
    with pytest.raises(MeasurementError, match="gone"):
        first.values([1])


def test_a_chunk_read_after_the_next_run_began_is_an_error_not_a_wrong_value() -> None:
    s, _, _ = open_sampler(600, capacity=1_000)
    (old,) = s.drain()
    s.resume()  # the image is initialised again for the next run
    with pytest.raises(MeasurementError, match="after the next run began"):
        old.values([0])


def test_only_the_samples_asked_for_are_evaluated() -> None:
    s, image, _ = open_sampler(50)
    (chunk,) = s.drain()
    assert image.evaluated == []  # timestamps came without evaluating
    values = chunk.values([3, 7, 3])
    assert values.tolist() == [[3.0, 6.0], [7.0, 14.0], [3.0, 6.0]]
    assert image.evaluated == [3, 7]  # each evaluated once


def test_a_pump_between_regions_reads_the_buffer_and_the_drain_returns_it() -> None:
    s, image, _ = open_sampler(3_000, capacity=1_000)
    image.stream.ready = 800
    s.pump(every_s=0.0)
    image.stream.ready = 1_500  # the pumped image fills up: read, then reused
    s.pump(every_s=0.0)
    s.pump(every_s=3600.0)  # not due: nothing decoded
    chunks = s.drain()  # the stop hands over the rest
    assert indices(chunks) == list(range(3_000))
    assert chunks[0].values([5]).tolist() == [[5.0, 10.0]]
    decodes = s.stats.decodes
    s.pump(every_s=0.0)  # not sampling: nothing to pump
    assert s.stats.decodes == decodes


def test_an_overflowing_hardware_buffer_says_to_sample_less_often() -> None:
    s, image, _ = open_sampler(10)
    image.fail_with = CuptiStatusError("ERROR_OUT_OF_MEMORY")
    with pytest.raises(MeasurementError) as caught:
        s.drain()
    assert str(caught.value) == errors.OVERFLOW


def test_a_failing_decode_is_one_line() -> None:
    s, image, _ = open_sampler(10)
    image.fail_with = CuptiStatusError("ERROR_UNKNOWN")
    with pytest.raises(
        MeasurementError, match=r"^PM sampling failed \(ERROR_UNKNOWN\)"
    ):
        s.drain()


def test_a_sample_cupti_cannot_evaluate_is_one_line() -> None:
    class Unreadable:
        def __getitem__(self, index: int) -> object:
            msg = "ERROR_INVALID_PARAMETER"
            raise RuntimeError(msg)

    chunk = Chunk(
        metrics=("a.sum",),
        starts=np.array([0]),
        ends=np.array([20]),
        _data=Unreadable(),
    )
    with pytest.raises(MeasurementError, match=r"could not evaluate PM sample 0"):
        chunk.values([0])


def test_close_stops_and_disables() -> None:
    s, _, collector = open_sampler(10)
    s.close()
    assert collector.calls[-2:] == ["stop", "disable"]


class CuptiStatusError(Exception):
    """cupti.cupti.cuptiError's shape: a ``status`` with a ``name``."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.status = type("Status", (), {"name": name})()


NOT_SUPPORTED = type("NotSupportedError", (Exception,), {})
UNAVAILABLE, FAILED = BackendUnavailableError, MeasurementError
NOT_STARTED, STARTED = "not started", "started"


@pytest.mark.parametrize(
    ("raised", "when", "kind", "says"),
    [
        (PermissionError("Insufficient privileges"), NOT_STARTED, UNAVAILABLE,
         errors.PERMISSION),
        (CuptiStatusError("ERROR_INSUFFICIENT_PRIVILEGES"), NOT_STARTED, UNAVAILABLE,
         errors.PERMISSION),
        (RuntimeError("CUPTI could not load the nvperf* libraries"), NOT_STARTED,
         UNAVAILABLE, errors.NVPERF),
        (RuntimeError("PM sampling is already enabled on this device."), NOT_STARTED,
         UNAVAILABLE, errors.BUSY),
        (CuptiStatusError("ERROR_NOT_SUPPORTED"), NOT_STARTED, UNAVAILABLE,
         "update the driver"),
        (CuptiStatusError("ERROR_NOT_COMPATIBLE"), NOT_STARTED, UNAVAILABLE,
         "CUDA 13"),
        (NOT_SUPPORTED("CUDA driver is not found"), NOT_STARTED, UNAVAILABLE,
         "use --backend ncu"),
        (ImportError("libcupti.so.13: cannot open"), NOT_STARTED, UNAVAILABLE,
         "pip install 'nsight-lab[pm]'"),
        (MemoryError("Record overflow in the hardware buffer"), STARTED, FAILED,
         errors.OVERFLOW),
        (CuptiStatusError("ERROR_UNKNOWN"), STARTED, FAILED,
         "PM sampling failed (ERROR_UNKNOWN)"),
        (CuptiStatusError("ERROR_UNKNOWN"), NOT_STARTED, UNAVAILABLE,
         "could not start (ERROR_UNKNOWN)"),
    ],
)  # fmt: skip
def test_every_failure_is_one_line_that_says_what_to_do(
    raised: Exception, when: str, kind: type, says: str
) -> None:
    error = errors.explain(raised, started=when == STARTED)
    assert isinstance(error, kind)
    text = str(error)
    assert says in text
    assert "\n" not in text
    if kind is BackendUnavailableError:
        assert text.startswith("backend 'pm' is unavailable: ")
    assert any(
        w in text
        for w in (
            "run as root",
            "--backend ncu",
            "LD_LIBRARY_PATH",
            "pip install",
            "--sample-interval",
        )
    )


@pytest.mark.parametrize(
    ("version", "says"),
    [
        (None, "cupti-python is not installed; pip install 'nsight-lab[pm]'"),
        ("13.0.1", "13.0.1 predates PM sampling's Python API (needs >= 13.4)"),
        ("12.9.79", "predates"),
        ("13.4.0", None),
        ("14.0rc1", None),
    ],
)  # fmt: skip
def test_the_cupti_python_version_is_checked(
    version: str | None, says: str | None
) -> None:
    found = errors.version_problem(version)
    if says is None:
        assert found is None
    else:
        assert found is not None
        assert says in found


@pytest.mark.skipif(
    importlib.util.find_spec("cupti") is not None, reason="cupti-python is installed"
)
def test_the_host_api_needs_cupti_python() -> None:
    with pytest.raises(ImportError):
        CuptiMetricsHost("GH100").passes(["dram__bytes_read.sum"])
