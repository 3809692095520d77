"""nsight-python's exception classes, as ``nsight.exceptions`` has them.

Code written for nsight-python catches these by name (``except
nsight.exceptions.ProfilerException``). They are nsight-lab errors too
(:class:`~nsight_lab.errors.NsightLabError`), so the magic shows them as one line;
the thermal ones are defined in :mod:`nsight_lab.errors`, where the thermal guard
raises them.
"""

from __future__ import annotations

from enum import Enum

from nsight_lab.errors import CoolingTimeoutError, NsightLabError, ThermalControlError

__all__ = [
    "CoolingTimeoutError",
    "MetricErrorType",
    "NCUNotAvailableError",
    "ProfilerException",
    "ThermalControlError",
]


class MetricErrorType(Enum):
    """Why a metric name was refused."""

    INVALID = "Invalid"
    UNSUPPORTED = "Unsupported"


class ProfilerException(NsightLabError):  # noqa: N818  (nsight-python's name)
    """The profile cannot run as asked: configs, collectors, options."""


class NCUNotAvailableError(NsightLabError):
    """Nsight Compute is not installed or cannot be run here."""
