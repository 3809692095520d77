"""The cupti.pm_sampling wrapper (backends/pm/sampler.py) and its error messages.

Decoding itself (images, continuation past a full one, timestamps) is tested in
test_live.py against a fake image; here: a chunk's values, the errors' words, the
cupti-python version check and the host API.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest

from nsight_lab.backends.pm import errors
from nsight_lab.backends.pm.host import CuptiMetricsHost
from nsight_lab.backends.pm.sampler import Chunk
from nsight_lab.errors import BackendUnavailableError, MeasurementError


@dataclasses.dataclass(frozen=True)
class Sample:
    start_timestamp: int
    end_timestamp: int
    metric_values: list[float]


class Evaluating:
    """A recorded image's samples, evaluated one at a time when asked for."""

    def __init__(self, n: int) -> None:
        self.evaluated: list[int] = []
        self.n = n

    def __getitem__(self, index: int) -> Sample:
        self.evaluated.append(index)
        return Sample(index * 20, index * 20 + 20, [float(index), 2.0 * index])


def lazy_chunk(n: int) -> tuple[Chunk, Evaluating]:
    data = Evaluating(n)
    starts = np.arange(n, dtype=np.int64) * 20
    chunk = Chunk(metrics=("a", "b"), starts=starts, ends=starts + 20, _data=data)
    return chunk, data


def test_only_the_samples_asked_for_are_evaluated_each_once() -> None:
    chunk, data = lazy_chunk(50)
    values = chunk.values([3, 7, 3])
    assert values.tolist() == [[3.0, 6.0], [7.0, 14.0], [3.0, 6.0]]
    assert data.evaluated == [3, 7]
    assert chunk.evaluated == 2


def test_a_sample_cupti_cannot_evaluate_is_one_line() -> None:
    class Unreadable(Evaluating):
        def __getitem__(self, index: int) -> Sample:
            msg = "ERROR_INVALID_PARAMETER"
            raise RuntimeError(msg)

    chunk = Chunk(
        metrics=("a", "b"),
        starts=np.array([0]),
        ends=np.array([20]),
        _data=Unreadable(1),
    )
    with pytest.raises(MeasurementError, match=r"could not evaluate PM sample 0"):
        chunk.values([0])


def test_a_chunk_without_its_values_says_so() -> None:
    chunk = Chunk(metrics=("a",), starts=np.array([0]), ends=np.array([20]))
    with pytest.raises(MeasurementError, match="values are gone"):
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
        (CuptiStatusError("ERROR_OUT_OF_MEMORY"), STARTED, FAILED, errors.OVERFLOW),
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
