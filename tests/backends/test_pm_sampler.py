# ruff: noqa: SLF001, EM101, ARG002  (a sampler built around fakes; fakes that raise)
"""The PM sampling decode (backends/pm/sampler.py) and its error messages.

A fake decoder stands in for CUPTI: it holds a hardware buffer of samples and decodes
at most ``capacity`` of them per call into a chunk whose timestamps and values are
read on demand (counted, so the tests see what was read). A fake collector stands in
for ``cupti.pm_sampling.Collector`` under :class:`PmSampler`'s drain policy: decoding
while sampling runs, falling back to stop/decode/start, holding samples mid-run.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nsight_lab.backends.pm import errors, sampler
from nsight_lab.backends.pm.sampler import (
    LIVE_DECODE,
    MAX_DECODE_SAMPLES,
    Chunk,
    CuptiMetricsHost,
    PmSampler,
    SamplerStats,
    decode_all,
)
from nsight_lab.errors import BackendUnavailableError, MeasurementError

INTERVAL = 20


class Counting:
    """A chunk's source that counts what was read of it."""

    def __init__(self, samples: list[tuple[int, int, list[float]]]) -> None:
        self.samples = samples
        self.infos: list[int] = []
        self.evaluated: list[int] = []

    def info(self, index: int) -> tuple[int, int]:
        self.infos.append(index)
        start, end, _ = self.samples[index]
        return start, end

    def evaluate(self, index: int) -> np.ndarray:
        self.evaluated.append(index)
        return np.array(self.samples[index][2])


class FakeDecoder:
    """A hardware buffer decoded ``capacity`` samples at a time, as CUPTI continues."""

    def __init__(
        self, n: int, *, capacity: int = MAX_DECODE_SAMPLES, stuck: bool = False
    ) -> None:
        self.buffer = [
            (i * INTERVAL, i * INTERVAL + INTERVAL, [float(i), 2.0 * i])
            for i in range(n)
        ]
        self.capacity = capacity
        self.stuck = stuck
        self.slots: list[int] = []
        self.last: Counting | None = None

    def decode(self, slot: int) -> Chunk:
        self.slots.append(slot)
        taken = self.buffer[: self.capacity]
        if not self.stuck:  # a stuck decoder hands out the same samples again
            self.buffer = self.buffer[self.capacity :]
        self.last = Counting(taken)
        full = len(taken) == self.capacity
        return Chunk(("dram__bytes_read.sum", "x"), len(taken), full, self.last)


def test_decoding_continues_past_one_image_each_chunk_in_its_own_slot() -> None:
    decoder = FakeDecoder(25_000)
    chunks = decode_all(decoder, first_slot=2)
    assert [len(c) for c in chunks] == [10_000, 10_000, 5_000]
    assert decoder.slots == [4, 3, 2][::-1]
    starts = np.concatenate([c.starts for c in chunks])
    assert (np.diff(starts) > 0).all()
    assert starts[-1] == 24_999 * INTERVAL
    total = sum(c.all_values()[:, 0].sum() for c in chunks)
    assert total == sum(range(25_000))  # nothing lost past 10,000


def test_exactly_a_full_chunk_then_nothing_is_the_end() -> None:
    chunks = decode_all(FakeDecoder(10_000), expected=10_000)
    assert [len(c) for c in chunks] == [10_000]
    assert decode_all(FakeDecoder(0)) == []


def test_a_decode_that_does_not_continue_is_an_error_not_a_silent_cut() -> None:
    with pytest.raises(MeasurementError, match="did not continue after it") as caught:
        decode_all(FakeDecoder(15_000, stuck=True))
    assert "--sample-interval" in str(caught.value)


def test_a_full_chunk_then_nothing_when_more_were_expected_is_an_error() -> None:
    class Cut(FakeDecoder):
        def decode(self, slot: int) -> Chunk:
            chunk = super().decode(slot)
            self.buffer = []  # what a decoder that stops at one image would do
            return chunk

    with pytest.raises(MeasurementError, match="did not continue"):
        decode_all(Cut(13_000), expected=13_000)


def test_more_chunks_than_allowed_stop_with_what_to_do() -> None:
    with pytest.raises(
        MeasurementError, match=r"more than 30 samples.*--sample-interval"
    ):
        decode_all(FakeDecoder(100, capacity=10), max_chunks=3)


def test_a_failing_decode_after_a_full_chunk_is_the_stuck_error() -> None:
    class Fails(FakeDecoder):
        def decode(self, slot: int) -> Chunk:
            if self.slots:
                msg = "cuptiError ERROR_UNKNOWN"
                raise RuntimeError(msg)
            return super().decode(slot)

    with pytest.raises(MeasurementError, match="did not continue"):
        decode_all(Fails(20_000))


def test_an_overflow_says_to_sample_less_often() -> None:
    class Overflows(FakeDecoder):
        def decode(self, slot: int) -> Chunk:
            msg = "Record overflow in the hardware buffer. To avoid overflow, ..."
            raise MemoryError(msg)

    with pytest.raises(MeasurementError, match="overflowed") as caught:
        decode_all(Overflows(5))
    assert str(caught.value) == errors.OVERFLOW


def test_a_cupti_error_is_raised_as_it_is_when_the_caller_falls_back() -> None:
    class Refuses(FakeDecoder):
        def decode(self, slot: int) -> Chunk:
            raise CuptiStatusError("ERROR_INVALID_OPERATION")

    with pytest.raises(CuptiStatusError):
        decode_all(Refuses(5), explain=False)
    with pytest.raises(MeasurementError, match="ERROR_INVALID_OPERATION"):
        decode_all(Refuses(5))


def test_nothing_is_read_until_asked_and_each_sample_once() -> None:
    decoder = FakeDecoder(50)
    (chunk,) = decode_all(decoder)
    assert decoder.last is not None
    assert decoder.last.infos == []  # no timestamp read by decoding
    assert decoder.last.evaluated == []
    values = chunk.values([3, 7, 3])
    assert values.tolist() == [[3.0, 6.0], [7.0, 14.0], [3.0, 6.0]]
    assert decoder.last.evaluated == [3, 7]  # each evaluated once
    chunk.times([4, 4, 5])
    chunk.times([5])
    assert sorted(decoder.last.infos) == [4, 5]
    assert chunk.timed == 2
    assert chunk.evaluated == 2


def test_the_samples_of_a_time_span_are_found_with_a_few_timestamps() -> None:
    n = 10_000
    decoder = FakeDecoder(n)
    (chunk,) = decode_all(decoder)
    assert decoder.last is not None
    # A 100 µs region in the middle: samples 5,000 (partly) to 5,005 (partly).
    lo, hi = chunk.index_range(5_000 * INTERVAL + 7, 5_005 * INTERVAL + 3)
    assert (lo, hi) == (5_000, 5_006)
    assert len(set(decoder.last.infos)) <= 12  # interpolation: not log2(n) per end
    assert chunk.index_range(-100, -50) == (0, 0)  # before every sample
    assert chunk.index_range(n * INTERVAL + 5, n * INTERVAL + 9) == (n, n)  # after
    assert chunk.index_range(40, 40) == (0, 0)  # empty span


@given(
    gaps=st.lists(st.integers(min_value=0, max_value=500), min_size=1, max_size=60),
    t0=st.integers(min_value=-100, max_value=40_000),
    length=st.integers(min_value=1, max_value=5_000),
)
def test_the_index_range_is_every_sample_that_overlaps_and_no_other(
    gaps: list[int], t0: int, length: int
) -> None:
    # Samples in time order, 20 ns each, with stops (gaps) between some of them.
    starts = np.cumsum(np.array(gaps) + INTERVAL) - INTERVAL
    ends = starts + INTERVAL
    chunk = Chunk.of(("m",), starts, ends)
    lo, hi = chunk.index_range(t0, t0 + length)
    overlapping = [
        i for i in range(len(starts)) if ends[i] > t0 and starts[i] < t0 + length
    ]
    assert list(range(lo, hi)) == overlapping


def test_a_sample_cupti_cannot_evaluate_or_time_is_one_line() -> None:
    class Unreadable(Counting):
        def info(self, index: int) -> tuple[int, int]:
            raise CuptiStatusError("ERROR_INVALID_PARAMETER")

        def evaluate(self, index: int) -> np.ndarray:
            raise CuptiStatusError("ERROR_INVALID_PARAMETER")

    chunk = Chunk(("m",), 1, full=False, source=Unreadable([(0, 20, [1.0])]))
    with pytest.raises(MeasurementError, match=r"could not evaluate PM sample 0"):
        chunk.values([0])
    with pytest.raises(MeasurementError, match=r"could not read PM sample 0's time"):
        chunk.times([0])


# -- PmSampler's drains, over a fake collector -----------------------------------------


class FakeCollector:
    """``pm_sampling.Collector``'s start and stop, logged."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start(self) -> None:
        self.log.append("start")

    def stop(self) -> None:
        self.log.append("stop")

    def disable(self) -> None:
        self.log.append("disable")


class LiveDecoder(FakeDecoder):
    """Decodes while running unless ``refuse``; the last ``behind`` samples of the
    buffer become complete only after that many decodes (the one in flight)."""

    def __init__(self, n: int, log: list[str], **kw: Any) -> None:
        super().__init__(n, **kw)
        self.log = log
        self.refuse_live = False
        self.behind = 0

    def decode(self, slot: int) -> Chunk:
        switches = [e for e in self.log if e in {"start", "stop"}]
        running = not switches or switches[-1] == "start"
        self.log.append("decode live" if running else "decode")
        if running and self.refuse_live:
            raise CuptiStatusError("ERROR_INVALID_OPERATION")
        if running and self.behind:
            held, self.buffer = self.buffer[-self.behind :], self.buffer[: -self.behind]
            chunk = super().decode(slot)
            self.buffer = held
            self.behind -= 1
            return chunk
        return super().decode(slot)

    def close(self) -> None:
        self.log.append("close decoder")


def fake_sampler(decoder: FakeDecoder, log: list[str]) -> PmSampler:
    s = PmSampler.__new__(PmSampler)
    s.metrics = ("dram__bytes_read.sum", "x")
    s.interval_ns = INTERVAL
    s.max_samples = decoder.capacity
    s.live = True
    s.stats = SamplerStats()
    s._held = []
    s._last_end = None
    s._collector = FakeCollector(log)
    s._decoder = decoder  # type: ignore[assignment]
    s._running = True
    s._since_ns = 0
    return s


@pytest.fixture(autouse=True)
def _fresh_process_memory() -> Any:
    LIVE_DECODE.clear()
    yield
    LIVE_DECODE.clear()


def test_a_drain_decodes_while_running_without_stop_or_start() -> None:
    log: list[str] = []
    s = fake_sampler(LiveDecoder(30, log), log)
    chunks = s.drain(until_ns=29 * INTERVAL)
    assert sum(len(c) for c in chunks) == 30
    assert log == ["decode live"]
    assert LIVE_DECODE == {"ok": True}
    assert s.stats.live_decodes == 1
    assert s.stats.stops == 0


def test_a_refused_live_decode_falls_back_to_stop_decode_start_and_is_remembered() -> (
    None
):
    log: list[str] = []
    decoder = LiveDecoder(30, log)
    decoder.refuse_live = True
    s = fake_sampler(decoder, log)
    chunks = s.drain(until_ns=29 * INTERVAL)
    assert sum(len(c) for c in chunks) == 30
    assert log == ["decode live", "stop", "decode", "start"]
    assert LIVE_DECODE == {"ok": False}
    assert "ERROR_INVALID_OPERATION" in s.stats.live_error
    log.clear()
    decoder.buffer = [(1000, 1020, [1.0, 2.0])]
    s.drain()  # not tried again in this process
    assert log == ["stop", "decode", "start"]


def test_a_live_decode_short_of_the_last_kernel_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sampler.time, "sleep", lambda _: None)
    log: list[str] = []
    decoder = LiveDecoder(30, log)
    decoder.behind = 1  # the sample holding the last kernel end completes later
    s = fake_sampler(decoder, log)
    chunks = s.drain(until_ns=30 * INTERVAL)
    assert [len(c) for c in chunks] == [29, 1]
    assert log == ["decode live", "decode live"]
    assert s.stats.live_short == 1


def test_a_live_decode_that_stays_short_stops_to_decode_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sampler.time, "sleep", lambda _: None)
    log: list[str] = []
    decoder = LiveDecoder(30, log)
    decoder.behind = 10  # never catches up while running
    s = fake_sampler(decoder, log)
    chunks = s.drain(until_ns=30 * INTERVAL)
    assert sum(len(c) for c in chunks) == 30
    assert log[-3:] == ["stop", "decode", "start"]
    assert log.count("decode live") == sampler.LIVE_RETRIES + 1
    assert LIVE_DECODE == {"ok": False}  # stop from now on, without the retries


def test_idle_samples_too_many_to_decode_are_dropped_by_starting_over() -> None:
    log: list[str] = []
    s = fake_sampler(LiveDecoder(30, log, capacity=10, stuck=True), log)
    s.discard()
    assert s.stats.discard_resets == 1
    assert log[-2:] == ["stop", "start"]


def test_held_samples_come_with_the_next_drain_in_their_own_slots() -> None:
    log: list[str] = []
    decoder = LiveDecoder(8, log, capacity=5)
    s = fake_sampler(decoder, log)
    s.hold()  # mid-run: 5 + 3 samples decoded into slots 0 and 1
    decoder.buffer = [
        (i * INTERVAL, i * INTERVAL + INTERVAL, [1.0, 1.0]) for i in range(8, 10)
    ]
    chunks = s.drain()
    assert [len(c) for c in chunks] == [5, 3, 2]
    assert decoder.slots == [0, 1, 2]
    assert s.stats.holds == 1
    s.discard()  # idle samples before a run: decoded, dropped, slots reused
    assert s.drain() == []
    assert decoder.slots[-2:] == [0, 0]


def test_live_decodes_that_skip_samples_are_counted() -> None:
    log: list[str] = []
    decoder = LiveDecoder(10, log)
    s = fake_sampler(decoder, log)
    s.drain()
    step = INTERVAL
    decoder.buffer = [(i * step, i * step + step, [1.0, 1.0]) for i in range(10, 12)]
    s.drain()  # continues where the last decode ended
    assert s.stats.live_gaps == 0
    decoder.buffer = [(i * step, i * step + step, [1.0, 1.0]) for i in range(13, 15)]
    s.drain()  # sample 12 went missing
    assert s.stats.live_gaps == 1
    assert s.stats.live_gap_ns == step


def test_waiting_samples_is_the_time_since_the_last_decode() -> None:
    log: list[str] = []
    s = fake_sampler(LiveDecoder(0, log), log)
    s.interval_ns = 10**9  # one sample a second: the test's own time is noise
    s._since_ns = sampler.time.perf_counter_ns() - 100 * s.interval_ns
    assert s.waiting_samples() >= 100
    s.drain()
    assert s.waiting_samples() < 50
    s.close()
    assert s.waiting_samples() == 0
    assert log[-3:] == ["stop", "close decoder", "disable"]


def test_an_unknown_metric_status_is_a_refusal() -> None:
    assert "ERROR_INVALID_PARAMETER" in errors.REFUSED_STATUSES
    assert errors.status_name(CuptiStatusError("ERROR_INVALID_PARAMETER")) == (
        "ERROR_INVALID_PARAMETER"
    )


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
