"""nsight-python's exception classes, as ``nsight.exceptions`` has them.

Code written for nsight-python catches these by name (``except
nsight.exceptions.ProfilerException``). They are nsight-lab errors too
(:class:`~nsight_lab.errors.NsightLabError`), so the magic shows them as one line;
the thermal ones are defined in :mod:`nsight_lab.errors`, where the thermal guard
raises them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from nsight_lab.errors import CoolingTimeoutError, NsightLabError, ThermalControlError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CUDA_CORE_UNAVAILABLE_MSG",
    "CUPTI_UNAVAILABLE_MSG",
    "CoolingTimeoutError",
    "MetricErrorType",
    "NCUErrorContext",
    "NCUNotAvailableError",
    "ProfilerException",
    "ThermalControlError",
    "get_metrics_error_message",
]


class MetricErrorType(Enum):
    """Why a metric name was refused."""

    INVALID = "Invalid"
    UNSUPPORTED = "Unsupported"


class ProfilerException(NsightLabError):  # noqa: N818  (nsight-python's name)
    """The profile cannot run as asked: configs, collectors, options."""


class NCUNotAvailableError(NsightLabError):
    """Nsight Compute is not installed or cannot be run here."""


CUDA_CORE_UNAVAILABLE_MSG = (
    "cuda-core is required for ignore_failures functionality.\n Install it with:\n"
    "  - pip install nsight-python[cu12]  (if you have CUDA 12.x)\n"
    "  - pip install nsight-python[cu13]  (if you have CUDA 13.x)"
)
"""nsight-python's text (nsight-lab's ``ignore_failures`` needs no cuda-core)."""
CUPTI_UNAVAILABLE_MSG = (
    "cupti-python is required for cupti tool functionality.\n Install it with:\n"
    "  - pip install nsight-python[cupti]"
)
"""nsight-python's text (nsight-lab's cupti backend: ``nsight-lab[cupti]``)."""


def get_metrics_error_message(
    metrics: Sequence[str], error_type: MetricErrorType
) -> str:
    """nsight-python's message for metric names ncu refused (its wording)."""
    return (
        f"{error_type.value} value {metrics} for 'metrics' parameter for "
        "nsight.analyze.kernel().\nPlease refer ncu --query-metrics for list of "
        "supported metrics."
    )


@dataclass
class NCUErrorContext:
    """What nsight-python's ncu error handling is given: errors, log, metrics."""

    errors: list[str]
    log_file_path: str
    metrics: Sequence[str]
