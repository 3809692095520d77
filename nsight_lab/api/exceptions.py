"""nsight-python's exception classes, as ``nsight.exceptions`` has them.

Code written for nsight-python catches these by name (``except
nsight.exceptions.ProfilerException``). They are nsight-lab errors too
(:class:`~nsight_lab.errors.NsightLabError`), so the magic shows them as one line.
"""

from __future__ import annotations

from enum import Enum

from nsight_lab.errors import NsightLabError

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


class ThermalControlError(NsightLabError):
    """The GPU's thermal state kept the profile from going on."""


class CoolingTimeoutError(ThermalControlError):
    """The GPU did not cool to the resume threshold within the timeout."""
