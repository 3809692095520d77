"""What goes wrong with PM sampling, each as one line that says what to do.

:func:`explain` turns what ``cupti.pm_sampling`` raises into
:class:`~nsight_lab.errors.BackendUnavailableError` (PM sampling cannot start here:
``auto`` falls back to the ncu backend) or
:class:`~nsight_lab.errors.MeasurementError` (it started and then failed), with a
message from this module. The messages are constants so the tests and the doctor
quote the same words.
"""

from __future__ import annotations

from nsight_lab.errors import BackendUnavailableError, MeasurementError

MIN_CUPTI = (13, 4)
"""The first cupti-python with the ``pm_sampling.Collector`` this backend uses."""
INSTALL = "pip install 'nsight-lab[pm]' (cupti-python>=13.4 and its libcupti)"
PERMISSION = (
    "GPU performance counters need permission (ERR_NVGPUCTRPERM): run as root or "
    "set NVreg_RestrictProfilingToAdminUsers=0 "
    "(see https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)
NVPERF = (
    "CUPTI could not load libnvperf_host.so / libnvperf_target.so: add the directory "
    "of the libcupti in use (e.g. site-packages/nvidia/cu13/lib) to LD_LIBRARY_PATH"
)
OLD_STACK = (
    "this driver or GPU does not support CUPTI PM sampling with time-interval "
    "triggers (it needs an Ampere GA10x, Ada, Hopper or newer GPU and a driver for "
    "CUDA 13): update the driver, or use --backend ncu"
)
BUSY = (
    "PM sampling is already enabled on this GPU by another profiler in this process "
    "(nsight-python, another nsight-lab cell): finish it, or use --backend ncu"
)
OVERFLOW = (
    "PM sampling's hardware buffer overflowed and samples were lost: give a longer "
    "--sample-interval (in µs) or profile fewer runs per cell"
)
STUCK = (
    "PM sampling had more than {limit:,} samples waiting to be decoded at once "
    "(CUPTI cannot continue past a full image): give a longer --sample-interval "
    "(in µs) or fewer --metrics"
)
FELL_BEHIND = (
    "PM sampling's decode fell behind the sampling and samples were lost or late: "
    "give a longer --sample-interval than {us:g} µs, or fewer --metrics"
)


_BUSY_STATUSES = frozenset(
    {"ERROR_HARDWARE_BUSY", "ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"}
)
_UNSUPPORTED_STATUSES = frozenset(
    {
        "ERROR_NOT_SUPPORTED",
        "ERROR_NOT_COMPATIBLE",
        "ERROR_LEGACY_PROFILER_NOT_SUPPORTED",
        "ERROR_CMP_DEVICE_NOT_SUPPORTED",
        "ERROR_MIG_DEVICE_NOT_SUPPORTED",
        "ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED",
        "ERROR_WSL_DEVICE_NOT_SUPPORTED",
    }
)
"""CUPTI results that mean this GPU, driver or setup cannot do PM sampling."""
REFUSED_STATUSES = frozenset({"ERROR_INVALID_PARAMETER", "ERROR_INVALID_METRIC_NAME"})
"""What the profiler host API answers for a metric it does not take (GH100 said
``ERROR_INVALID_PARAMETER`` from ``profiler_host_config_add_metrics``)."""


def unavailable(why: str) -> BackendUnavailableError:
    """``backend 'pm' is unavailable: <why>``."""
    return BackendUnavailableError(f"backend 'pm' is unavailable: {why}")


def version_problem(version: str | None) -> str | None:
    """Why this cupti-python cannot run the backend, or ``None`` if it can."""
    if version is None:
        return f"cupti-python is not installed; {INSTALL}"
    parts: list[int] = []
    for piece in version.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    if tuple(parts) < MIN_CUPTI:
        return (
            f"cupti-python {version} predates PM sampling's Python API "
            f"(needs >= {MIN_CUPTI[0]}.{MIN_CUPTI[1]}); {INSTALL}"
        )
    return None


def status_name(exc: BaseException) -> str:
    """CUPTI's result name of what ``exc`` carries (``"ERROR_UNKNOWN"``), or ``""``."""
    status = getattr(exc, "status", None)
    name = getattr(status, "name", None)
    if name is None and status is not None:
        try:
            from cupti import cupti  # noqa: PLC0415  (optional: cupti-python)

            name = cupti.Result(int(status)).name
        except Exception:  # noqa: BLE001  (a name only makes the message nicer)
            name = str(status)
    return str(name or "")


def explain(
    exc: BaseException, *, started: bool
) -> BackendUnavailableError | MeasurementError:
    """The one-line error for what PM sampling raised.

    Args:
        exc: What ``cupti.pm_sampling`` (or cupti-python's import) raised.
        started: Sampling had started (a failure then is a measurement error, not
            "unavailable").

    Returns:
        The error to raise ``from exc``.
    """
    text = str(exc)
    status = status_name(exc)
    kind = type(exc).__name__
    if isinstance(exc, PermissionError) or "PRIVILEGES" in status:
        why = PERMISSION
    elif "nvperf" in text:
        why = NVPERF
    elif "already enabled" in text or status in _BUSY_STATUSES:
        why = BUSY
    elif (isinstance(exc, MemoryError) and "overflow" in text.lower()) or (
        started and status == "ERROR_OUT_OF_MEMORY"  # a decode's: the buffer's
    ):
        return MeasurementError(OVERFLOW)
    elif kind == "NotSupportedError" or status in _UNSUPPORTED_STATUSES:
        why = f"{OLD_STACK} ({status or kind})"
    elif isinstance(exc, ImportError):
        why = f"cupti-python cannot be imported ({kind}: {text}); {INSTALL}"
    else:
        detail = status or f"{kind}: {text}"
        what = "failed" if started else "could not start"
        msg = (
            f"PM sampling {what} ({detail}); check %nsight doctor, or use --backend ncu"
        )
        return MeasurementError(msg) if started else unavailable(msg)
    return MeasurementError(why) if started else unavailable(why)
