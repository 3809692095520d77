"""The cupti.pm_sampling wrapper (backends/pm/sampler.py) and its error messages.

A fake decoder stands in for ``cupti.pm_sampling.Collector``: it holds a hardware
buffer of samples and hands out at most ``max_samples`` per ``decode`` call, in the
shape of cupti-python 13.4's ``CounterData`` (``num_*_samples``, the private
timestamp lists, ``data[i]`` evaluating one sample).
"""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest

from nsight_lab.backends.pm import errors
from nsight_lab.backends.pm.sampler import (
    MAX_DECODE_SAMPLES,
    Chunk,
    CuptiMetricsHost,
    decode_all,
)
from nsight_lab.errors import BackendUnavailableError, MeasurementError


@dataclasses.dataclass(frozen=True)
class Sample:
    start_timestamp: int
    end_timestamp: int
    metric_values: list[float]


class FakeCounterData:
    """cupti-python 13.4's CounterData, over a list of (start, end, values)."""

    def __init__(
        self, samples: list[tuple[int, int, list[float]]], total: int, *, private: bool
    ) -> None:
        self.metrics = ["dram__bytes_read.sum", "dram__bytes_write.sum"]
        self.num_total_samples = total
        self.num_populated_samples = len(samples)
        self.num_completed_samples = len(samples)
        self._samples = samples
        self.evaluated: list[int] = []
        if private:
            self._start_timestamps = [s for s, _, _ in samples]
            self._end_timestamps = [e for _, e, _ in samples]

    def __len__(self) -> int:
        return self.num_completed_samples

    def __getitem__(self, index: int) -> Sample:
        self.evaluated.append(index)
        start, end, values = self._samples[index]
        return Sample(start, end, list(values))


class FakeDecoder:
    """A hardware buffer decoded ``max_samples`` at a time, as CUPTI continues."""

    def __init__(self, n: int, *, private: bool = True, stuck: bool = False) -> None:
        self.buffer = [(i * 20, i * 20 + 20, [float(i), 2.0 * i]) for i in range(n)]
        self.private = private
        self.stuck = stuck
        self.calls: list[int] = []
        self.last: FakeCounterData | None = None

    def decode(self, max_samples: int = MAX_DECODE_SAMPLES) -> FakeCounterData:
        self.calls.append(max_samples)
        taken = self.buffer[:max_samples]
        if not self.stuck:  # a stuck decoder hands out the same samples again
            self.buffer = self.buffer[max_samples:]
        self.last = FakeCounterData(taken, max_samples, private=self.private)
        return self.last


def test_decoding_continues_past_ten_thousand_samples() -> None:
    decoder = FakeDecoder(25_000)
    chunks = decode_all(decoder)
    assert [len(c) for c in chunks] == [10_000, 10_000, 5_000]
    assert decoder.calls == [MAX_DECODE_SAMPLES] * 3
    starts = np.concatenate([c.starts for c in chunks])
    assert (np.diff(starts) > 0).all()
    assert starts[-1] == 24_999 * 20
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
        def decode(self, max_samples: int = MAX_DECODE_SAMPLES) -> FakeCounterData:
            data = super().decode(max_samples)
            self.buffer = []  # what a decoder that stops at one image would do
            return data

    with pytest.raises(MeasurementError, match="did not continue"):
        decode_all(Cut(13_000), expected=13_000)


def test_more_chunks_than_allowed_stop_with_what_to_do() -> None:
    with pytest.raises(
        MeasurementError, match=r"more than 30 samples.*--sample-interval"
    ):
        decode_all(FakeDecoder(100), max_samples=10, max_chunks=3)


def test_a_failing_decode_after_a_full_chunk_is_the_stuck_error() -> None:
    class Fails(FakeDecoder):
        def decode(self, max_samples: int = MAX_DECODE_SAMPLES) -> FakeCounterData:
            if self.calls:
                msg = "cuptiError ERROR_UNKNOWN"
                raise RuntimeError(msg)
            return super().decode(max_samples)

    with pytest.raises(MeasurementError, match="did not continue"):
        decode_all(Fails(20_000))


def test_an_overflow_says_to_sample_less_often() -> None:
    class Overflows(FakeDecoder):
        def decode(self, max_samples: int = MAX_DECODE_SAMPLES) -> FakeCounterData:  # noqa: ARG002
            msg = "Record overflow in the hardware buffer. To avoid overflow, ..."
            raise MemoryError(msg)

    with pytest.raises(MeasurementError, match="overflowed") as caught:
        decode_all(Overflows(5))
    assert str(caught.value) == errors.OVERFLOW


def test_only_the_samples_asked_for_are_evaluated() -> None:
    decoder = FakeDecoder(50)
    (chunk,) = decode_all(decoder)
    assert decoder.last is not None
    assert decoder.last.evaluated == []  # timestamps came without evaluating
    values = chunk.values([3, 7, 3])
    assert values.tolist() == [[3.0, 6.0], [7.0, 14.0], [3.0, 6.0]]
    assert decoder.last.evaluated == [3, 7]  # each evaluated once


def test_without_the_private_timestamps_every_sample_is_evaluated_once() -> None:
    decoder = FakeDecoder(30, private=False)
    (chunk,) = decode_all(decoder)
    assert decoder.last is not None
    assert sorted(decoder.last.evaluated) == list(range(30))
    assert chunk.starts.tolist() == [i * 20 for i in range(30)]
    chunk.values([5, 6])
    assert len(decoder.last.evaluated) == 30


def test_a_sample_cupti_cannot_evaluate_is_one_line() -> None:
    class Unreadable(FakeCounterData):
        def __getitem__(self, index: int) -> Sample:
            msg = "ERROR_INVALID_PARAMETER"
            raise RuntimeError(msg)

    chunk = Chunk.read(Unreadable([(0, 20, [1.0, 2.0])], 10, private=True), 10)
    with pytest.raises(MeasurementError, match=r"could not evaluate PM sample 0"):
        chunk.values([0])


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
