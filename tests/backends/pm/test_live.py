# ruff: noqa: SLF001  (a sampler is built around fakes: its private state is set)
"""Live decoding (backends/pm/live.py) against a fake counter-data image.

The fake is a hardware buffer that grows as "time" passes, decoded into an image of
``capacity`` slots the way CUPTI did on the H200: a decode appends what is there, a
full image reports itself full, and after ``reinit`` the next decode continues where
the last one stopped. The first sample after the start has no start time.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nsight_lab.backends.pm import errors, sampler
from nsight_lab.backends.pm.live import JUDGE_AFTER, LiveDecoder
from nsight_lab.errors import MeasurementError

INTERVAL = 20_000
T0 = 1_000_000_000


class FakeImage:
    """A growing buffer of samples; sample ``i`` covers [T0 + 20 µs i, + 20 µs)."""

    def __init__(self, capacity: int = 100) -> None:
        self.capacity = capacity
        self.produced = 0
        """Samples CUPTI holds (what the GPU has sampled so far)."""
        self.read = 0
        """Samples decoded out of the hardware buffer."""
        self.slots: list[int] = []
        self.closed = False
        self.zero_at: int | None = None
        self.lock = threading.Lock()

    def produce(self, n: int) -> None:
        with self.lock:
            self.produced += n

    def reinit(self) -> None:
        self.slots = []

    def decode(self) -> tuple[int, bool]:
        with self.lock:
            room = self.capacity - len(self.slots)
            take = min(room, self.produced - self.read)
            self.slots += range(self.read, self.read + take)
            self.read += take
            return len(self.slots), len(self.slots) >= self.capacity

    def times(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        index = np.array(self.slots[lo:hi], dtype=np.int64)
        starts = T0 + index * INTERVAL
        ends = starts + INTERVAL
        starts[index == 0] = 0  # the first sample after the start
        if self.zero_at is not None:
            starts[index >= self.zero_at] = 0
            ends[index >= self.zero_at] = 0
        return starts, ends

    def evaluate(self, index: int) -> np.ndarray:
        sample = self.slots[index]
        return np.array([float(sample), 1.0])

    def close(self) -> None:
        self.closed = True


def decoder(image: FakeImage) -> LiveDecoder:
    return LiveDecoder(image, ("a", "b"), INTERVAL, period_s=0.001)


def samples_of(chunks: list[sampler.Chunk]) -> np.ndarray:
    return np.concatenate([c.all_values()[:, 0] for c in chunks])


def test_every_sample_is_decoded_once_across_many_images() -> None:
    image = FakeImage(capacity=100)
    live = decoder(image)
    got: list[sampler.Chunk] = []
    for _ in range(37):  # 37 x 61 samples: 22 images' worth
        image.produce(61)
        live.step()
        got += live.take()
    image.produce(5)
    got += live.finish()
    values = samples_of(got)
    assert np.array_equal(values, np.arange(37 * 61 + 5))
    # Initialised again before every decode that found it more than half used.
    assert live.reinits == 37
    starts = np.concatenate([c.starts for c in got])
    ends = np.concatenate([c.ends for c in got])
    # Back to back; the first sample's missing start is one interval before its end.
    assert starts[0] == T0
    assert np.array_equal(starts[1:], ends[:-1])


def test_a_decode_that_fills_its_image_is_an_error_not_a_cut() -> None:
    image = FakeImage(capacity=50)
    live = decoder(image)
    image.produce(50 * 3 + 7)
    with pytest.raises(MeasurementError, match="more than 50 samples waiting"):
        live.step()
    assert live.samples == 50  # what the image held is kept; nothing is continued


def test_wait_past_returns_once_the_thread_has_decoded_that_far() -> None:
    image = FakeImage(capacity=1000)
    live = decoder(image)
    live.run()
    try:
        image.produce(10)
        until = T0 + 10 * INTERVAL  # the end of sample 9
        live.wait_past(until, timeout_s=5)
        assert live.last_end >= until
        assert len(samples_of(live.take())) == 10
    finally:
        live.finish()


def test_a_decoder_that_never_gets_there_says_what_to_do() -> None:
    image = FakeImage(capacity=1000)
    live = decoder(image)
    image.produce(3)
    with pytest.raises(MeasurementError, match="--sample-interval than 20 µs"):
        live.wait_past(T0 + 100 * INTERVAL, timeout_s=0.05)


def test_a_sample_without_an_end_followed_by_others_is_a_lost_sample() -> None:
    class Hole(FakeImage):
        def times(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
            starts, ends = super().times(lo, hi)
            ends[(np.array(self.slots[lo:hi]) == 40)] = 0
            return starts, ends

    image = Hole(capacity=1000)
    live = decoder(image)
    image.produce(60)
    with pytest.raises(MeasurementError, match="fell behind"):
        live.step()
    assert live.zeros[0]["no_end"] == [40]


def test_the_sample_a_stop_cut_short_waits_and_is_dropped_at_the_end() -> None:
    image = FakeImage(capacity=1000)
    image.zero_at = 40  # samples 40.. have no end time (yet)
    live = decoder(image)
    image.produce(45)
    assert live.step() == 40
    image.zero_at = 44  # 40..43 completed since; 44 was cut by the stop
    assert np.array_equal(samples_of(live.finish()), np.arange(44))
    assert live.zeros[-1]["slot"] == 44  # left by the read that took 40-43
    assert live.zeros[-1]["no_end"] == [0]


def test_an_error_in_the_thread_reaches_the_collection_as_one_line() -> None:
    class Failing(FakeImage):
        def decode(self) -> tuple[int, bool]:
            msg = "Record overflow in the hardware buffer"
            raise MemoryError(msg)

    image = Failing()
    live = decoder(image)
    live.run()
    deadline = time.monotonic() + 5
    while live._thread is not None and live._thread.is_alive():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    with pytest.raises(MeasurementError) as caught:
        live.wait_past(T0 + INTERVAL, timeout_s=1)
    assert "\n" not in str(caught.value)


def test_the_pace_is_the_decode_time_over_the_sampled_time() -> None:
    image = FakeImage(capacity=1000)
    live = decoder(image)
    image.produce(500)
    live.step()
    assert live.samples == 500
    assert live.duty == pytest.approx(live.busy_s / (500 * INTERVAL / 1e9))


class Collector:
    """cupti.pm_sampling.Collector's start/stop, logged."""

    def __init__(self, image: FakeImage | None = None) -> None:
        self.log: list[str] = []
        self.image = image

    def start(self) -> None:
        self.log.append("start")

    def stop(self) -> None:
        self.log.append("stop")
        if isinstance(self.image, SlowImage):
            self.image.frozen = True

    def disable(self) -> None:
        self.log.append("disable")

    def enable(self) -> None:
        self.log.append("enable")

    def configure(self, **settings: object) -> None:
        self.log.append(f"configure {settings['sampling_interval']}")


def bare_sampler(live: LiveDecoder) -> sampler.PmSampler:
    s = sampler.PmSampler.__new__(sampler.PmSampler)
    s.metrics, s.interval_ns = ("a", "b"), INTERVAL
    collector = Collector(live.image)  # type: ignore[arg-type]
    s._collector, s._decoder, s._running = collector, live, True
    s.note, s.pace, s.stopped_zeros = None, {}, []
    s._pm_sampling = type(
        "pm_sampling", (), {"TriggerMode": type("T", (), {"GPU_TIME_INTERVAL": 1})}
    )
    s._buffer_bytes = 1 << 20
    return s


class SlowImage(FakeImage):
    """Samples arrive with time (one per 20 µs); evaluating one takes 60 µs."""

    def __init__(self, *, slow: bool, only_decode: int | None = None) -> None:
        super().__init__(capacity=10_000)
        self.t0 = time.perf_counter()
        self.slow = slow
        self.only_decode = only_decode
        """Slow in this decode only (1 = the first)."""
        self.decodes = 0
        self.frozen = False
        """Sampling stopped: nothing more arrives."""

    def decode(self) -> tuple[int, bool]:
        self.decodes += 1
        if self.only_decode is not None:
            self.slow = self.decodes == self.only_decode
        if not self.frozen:
            due = int((time.perf_counter() - self.t0) * 1e9 / INTERVAL)
            self.produce(due - self.produced)
        return super().decode()

    def evaluate(self, index: int) -> np.ndarray:
        if self.slow:
            end = time.perf_counter() + 60e-6
            while time.perf_counter() < end:
                pass
        return super().evaluate(index)


@pytest.mark.parametrize(("slow", "mode"), [(False, "live"), (True, "stopped")])
def test_the_pace_is_judged_before_any_run(slow: bool, mode: str) -> None:  # noqa: FBT001
    image = SlowImage(slow=slow)
    live = decoder(image)
    s = bare_sampler(live)
    s._calibrate()
    try:
        assert s.mode == mode
        if slow:  # a fresh stopped session: the judged samples' backlog dropped
            assert s._collector.log == [
                "stop",
                "disable",
                "enable",
                f"configure {INTERVAL}",
                "start",
            ]
            assert image.closed
            assert s.note is not None
            assert "2 metrics" in s.note
        else:
            assert s._collector.log == []
            assert live.alive
    finally:
        image.frozen = True
        if live.alive:
            live.finish()


def test_one_slow_judgement_alone_does_not_make_a_sampler_stopped() -> None:
    image = SlowImage(slow=False, only_decode=2)  # the first judged decode is slow
    live = decoder(image)
    s = bare_sampler(live)
    s._calibrate()
    try:
        assert image.decodes >= 3  # warm-up, a slow judgement, a second one
        assert s.mode == "live"
        assert s._collector.log == []
    finally:
        image.frozen = True
        live.finish()


def test_a_sampler_whose_thread_fell_behind_goes_stopped_and_says_why() -> None:
    image = FakeImage(capacity=5000)
    live = decoder(image)
    image.produce(JUDGE_AFTER + 200)
    live.step()
    live.busy_s = 10.0  # as if decoding took far longer than the sampled time
    image.produce(300)  # sampled since, not yet decoded
    s = bare_sampler(live)
    chunks = s.drain(until_ns=T0)
    assert s.mode == "stopped"
    assert s._collector.log == ["stop", "start"]
    assert image.closed
    # Everything not handed out yet, decoded live or after the stop, once.
    total = JUDGE_AFTER + 200 + 300
    assert np.array_equal(samples_of(chunks), np.arange(total))
    assert s.note is not None
    assert "--sample-interval" in s.note
    assert s.pace["samples"] == total


def test_a_stopped_decode_of_what_was_sampled_is_whole() -> None:
    image = FakeImage(capacity=1000)
    live = decoder(image)
    image.produce(950)
    assert np.array_equal(samples_of(live.finish()), np.arange(950))


def test_a_missing_start_after_a_new_image_is_the_last_samples_end() -> None:
    class NoStartAfterReinit(FakeImage):
        def times(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
            starts, ends = super().times(lo, hi)
            if lo == 0:
                starts[0] = 0
            return starts, ends

    image = NoStartAfterReinit(capacity=100)
    live = decoder(image)
    chunks = []
    for _ in range(6):  # 40 a step: a new image before steps 3 and 5
        image.produce(40)
        live.step()
        chunks += live.take()
    chunks += live.finish()
    starts = np.concatenate([c.starts for c in chunks])
    ends = np.concatenate([c.ends for c in chunks])
    assert np.array_equal(starts[1:], ends[:-1])
    assert live.repaired == 3  # the first sample, and the first of two new images
    assert [z["slot"] for z in live.zeros] == [0, 0, 0]


def test_the_fell_behind_message_is_one_line() -> None:
    text = errors.FELL_BEHIND.format(us=20.0)
    assert "\n" not in text
    assert "20 µs" in text


@settings(max_examples=60, deadline=None)
@example(capacity=8, steps=[0.5, 0.5])  # half used, then half arrives
@given(
    capacity=st.integers(min_value=8, max_value=400),
    steps=st.lists(st.floats(min_value=0.0, max_value=0.5), min_size=1, max_size=40),
)
def test_any_pace_below_half_an_image_hands_each_sample_out_once_in_order(
    capacity: int, steps: list[float]
) -> None:
    """Whatever arrives between decodes (at most half an image), nothing is lost."""
    image = FakeImage(capacity=capacity)
    live = decoder(image)
    got: list[sampler.Chunk] = []
    for share in steps:
        image.produce(int(share * capacity))
        live.step()
        got += live.take()
    got += live.finish()
    total = sum(int(share * capacity) for share in steps)
    if total == 0:
        assert got == []
        return
    assert np.array_equal(samples_of(got), np.arange(total))
    starts = np.concatenate([c.starts for c in got])
    ends = np.concatenate([c.ends for c in got])
    assert np.array_equal(starts[1:], ends[:-1])
