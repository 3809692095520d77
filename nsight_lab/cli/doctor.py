"""``nsight-lab doctor`` / ``%nsight doctor``: which parts of the GPU stack work here.

:func:`run_checks` probes every backend of the registry
(:func:`nsight_lab.contract.registry.probe_all`: can it measure here, and if not why)
and asks :mod:`nsight_lab.gpu.stack` one question per topic (GPU, driver, NVML,
torch, ncu, ncu_report, nsight-python, counter permission, CUPTI; PM sampling is asked
of the pm backend, which tries to start it), turning each answer into a
:class:`Check` with what to do. What works comes first (the ``cpu`` backend always
does), then what is missing here. It never raises: a probe that fails unexpectedly
becomes an ``"error"`` check naming the exception.
:func:`~nsight_lab.cli.doctor_text.format_checks` writes the table the CLI and the
magic print; :func:`~nsight_lab.cli.doctor_text.checks_to_json` is the ``--json``
shape.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.backends.pm.availability import diagnose
from nsight_lab.cli.doctor_text import (
    BACKEND_PREFIX,
    Check,
    CheckStatus,
)
from nsight_lab.contract.registry import backend_ids, probe_all
from nsight_lab.gpu import stack as gpu_stack
from nsight_lab.paths import store_location
from nsight_lab.store import health, migrations
from nsight_lab.store import postgres as pg

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger(__name__)


# Counters refused is an error (ncu fails with ERR_NVGPUCTRPERM); unknown is a caveat.
_PERMISSION_STATUS: dict[bool | None, CheckStatus] = {
    True: "ok",
    False: "error",
    None: "warn",
}
_GIB = 1024**3
# NVML errors that mean "there is no driver here" rather than "the driver is broken".
_NO_DRIVER_ERRORS = frozenset(
    {"NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded"}
)


@dataclass(frozen=True)
class _NcuProbe:
    path: Path | None
    version: tuple[int, ...] | None


def run_checks() -> list[Check]:
    """Check every backend and every part of the GPU stack nsight-lab uses.

    Returns:
        One :class:`Check` per backend (``backend cpu``, ``backend events``, ...,
        in registry order), then one per topic: GPU, driver, NVML, torch, ncu,
        ncu_report, nsight-python, counter permission, CUPTI, PM sampling. Those
        with status ``"ok"`` come first, each group in that order.

    Raises:
        Nothing: every failure becomes a :class:`Check` with status ``"error"``.
    """
    nvml: list[gpu_stack.NvmlDevice] | Exception
    try:
        nvml = gpu_stack.nvml_devices()
    except Exception as exc:  # noqa: BLE001  (the doctor reports, it never raises)
        nvml = exc

    ncu: _NcuProbe | Exception
    try:
        path = gpu_stack.find_ncu()
        ncu = _NcuProbe(path, gpu_stack.ncu_version(path) if path else None)
    except Exception as exc:  # noqa: BLE001
        ncu = exc

    steps: list[tuple[str, Callable[[], Check]]] = [
        (f"{BACKEND_PREFIX}{backend_id}", functools.partial(_check_backend, backend_id))
        for backend_id in backend_ids()
    ]
    steps += [
        ("GPU", lambda: _check_gpu(nvml)),
        ("driver", lambda: _check_driver(nvml)),
        ("NVML", lambda: _check_nvml(nvml)),
        ("torch", _check_torch),
        ("ncu", lambda: _check_ncu(ncu)),
        ("ncu_report", _check_ncu_report),
        ("nsight-python", lambda: _check_nsight_python(ncu)),
        ("counter permission", _check_counter_permission),
        ("CUPTI", _check_cupti),
        ("PM sampling", _check_pm_sampling),
    ]
    checks = [_run_step(name, step) for name, step in steps]
    return sorted(checks, key=lambda check: check.status != "ok")  # stable


def store_checks(location: str | None = None) -> list[Check]:
    """Check the run store itself: its integrity, its schema version, its space left.

    A SQLite store is opened read-only for ``PRAGMA quick_check`` (a damaged file is
    never upgraded or written by the check); a PostgreSQL one is asked its schema
    version. Never raises: a check that fails unexpectedly is an ``"error"`` check.

    Args:
        location: The store (a file or a ``postgresql://`` URL); default the one
            every command uses (``NSIGHT_LAB_STORE``, else ``NSIGHT_LAB_HOME``).
    """
    try:
        findings = _store_findings(location)
    except Exception as exc:  # the doctor reports, it never raises
        logger.debug("doctor store check failed", exc_info=True)
        text = " ".join(str(exc).split())
        return [Check("store", "error", f"{type(exc).__name__}: {text}")]
    return [Check(f.name, f.status, f.detail, f.hint) for f in findings]


def _store_findings(location: str | None) -> list[health.Finding]:
    where = store_location() if location is None else location
    latest = migrations.latest_version()
    if not pg.is_postgres_url(where):
        return health.check_sqlite(Path(where), latest)
    shown = pg.redact(where)
    conn = pg.connect(where, read_only=True)
    try:
        version = pg.schema_version(conn)
    finally:
        conn.close()
    return health.check_postgres(shown, version, latest)


def all_checks() -> list[Check]:
    """:func:`run_checks` and :func:`store_checks`, what works first."""
    checks = [*run_checks(), *store_checks()]
    return sorted(checks, key=lambda check: check.status != "ok")  # stable


def _run_step(name: str, step: Callable[[], Check]) -> Check:
    try:
        return step()
    except Exception as exc:
        logger.debug("doctor check %r failed", name, exc_info=True)
        return Check(
            name=name,
            status="error",
            detail=f"the check itself failed: {type(exc).__name__}: {exc}",
            hint="please report this as an nsight-lab bug, with this output",
        )


# ------------------------------------------------------------------ backends


def _check_backend(backend_id: str) -> Check:
    found = probe_all([backend_id])[backend_id]
    name = f"{BACKEND_PREFIX}{backend_id}"
    if found.ok:
        return Check(name, "ok", found.reason)
    hint = found.hint or "see the checks below"
    return Check(name, "missing", found.reason, hint)


# ------------------------------------------------------------------ NVML topics


def _nvml_failure(exc: Exception) -> tuple[CheckStatus, str]:
    """Classify an nvml_devices() failure: (status, hint)."""
    cause = exc.__cause__
    if isinstance(cause, ImportError):
        return "missing", gpu_stack.NVML_INSTALL_HINT
    if cause is None or type(cause).__name__ in _NO_DRIVER_ERRORS:
        return "missing", gpu_stack.DRIVER_HINT
    return "error", gpu_stack.DRIVER_HINT


def _nvml_reason(exc: Exception) -> str:
    """The NVML error itself, without the hint that nvml_devices() adds to it."""
    cause = exc.__cause__
    if cause is None:
        return str(exc)
    text = str(cause).strip()
    what = f"{type(cause).__name__}: {text}" if text else type(cause).__name__
    return f"NVML could not be loaded ({what})"


def _check_gpu(nvml: list[gpu_stack.NvmlDevice] | Exception) -> Check:
    if isinstance(nvml, Exception):
        _, hint = _nvml_failure(nvml)
        return Check("GPU", "missing", f"no GPU visible: {_nvml_reason(nvml)}", hint)
    if not nvml:
        return Check(
            "GPU", "missing", "NVML works but sees no GPU", gpu_stack.DRIVER_HINT
        )
    described = "; ".join(_describe_device(device) for device in nvml)
    count = f"{len(nvml)} GPU{'s' if len(nvml) != 1 else ''}"
    return Check("GPU", "ok", f"{count}: {described}")


def _describe_device(device: gpu_stack.NvmlDevice) -> str:
    parts = [f"{device.memory_total_bytes / _GIB:.1f} GiB"]
    if device.max_sm_clock_mhz is not None:
        parts.append(f"max SM {device.max_sm_clock_mhz} MHz")
    if device.max_mem_clock_mhz is not None:
        parts.append(f"max memory {device.max_mem_clock_mhz} MHz")
    return f"[{device.index}] {device.name} ({', '.join(parts)})"


def _check_driver(nvml: list[gpu_stack.NvmlDevice] | Exception) -> Check:
    if isinstance(nvml, Exception):
        status, hint = _nvml_failure(nvml)
        if isinstance(nvml.__cause__, ImportError):
            return Check(
                "driver", "warn", "unknown: nvidia-ml-py is not installed", hint
            )
        return Check("driver", status, "no NVIDIA driver answered through NVML", hint)
    if not nvml:
        return Check(
            "driver", "warn", "unknown: no GPU to ask for it", gpu_stack.DRIVER_HINT
        )
    first = nvml[0]
    return Check(
        "driver",
        "ok",
        f"driver {first.driver_version}, supports CUDA {first.cuda_driver_version}",
    )


def _check_nvml(nvml: list[gpu_stack.NvmlDevice] | Exception) -> Check:
    version = gpu_stack.package_version("nvidia-ml-py")
    binding = f"nvidia-ml-py {version}" if version else "nvidia-ml-py"
    if isinstance(nvml, Exception):
        status, hint = _nvml_failure(nvml)
        if isinstance(nvml.__cause__, ImportError):
            return Check("NVML", "missing", "nvidia-ml-py is not installed", hint)
        return Check("NVML", status, f"{binding}: {_nvml_reason(nvml)}", hint)
    return Check("NVML", "ok", f"{binding}, NVML loaded")


# ------------------------------------------------------------------ other topics


def _check_torch() -> Check:
    found = gpu_stack.torch_cuda_status()
    if found.ok:
        return Check("torch", "ok", found.detail)
    installed = gpu_stack.package_version("torch") is not None
    return Check("torch", "warn" if installed else "missing", found.detail, found.hint)


def _check_ncu(ncu: _NcuProbe | Exception) -> Check:
    if isinstance(ncu, Exception):
        raise ncu
    override = os.environ.get(gpu_stack.NCU_ENV_VAR)
    if ncu.path is None:
        if override:
            return Check(
                "ncu",
                "error",
                f"{gpu_stack.NCU_ENV_VAR}={override!r} is not an executable ncu",
                f"point {gpu_stack.NCU_ENV_VAR} at the ncu executable, or unset it",
            )
        return Check(
            "ncu", "missing", "Nsight Compute CLI not found", gpu_stack.NCU_INSTALL_HINT
        )
    if ncu.version is None:
        return Check(
            "ncu",
            "warn",
            f"{ncu.path}: `ncu --version` gave no version",
            f"check that it runs: {ncu.path} --version",
        )
    return Check(
        "ncu", "ok", f"{ncu.path}, version {gpu_stack.format_version(ncu.version)}"
    )


def _check_ncu_report() -> Check:
    found = gpu_stack.ncu_report_status()
    return Check(
        "ncu_report", "ok" if found.ok else "missing", found.detail, found.hint
    )


def _check_nsight_python(ncu: _NcuProbe | Exception) -> Check:
    version = None if isinstance(ncu, Exception) else ncu.version
    found = gpu_stack.nsight_python_status(version)
    if found.ok:
        return Check("nsight-python", "ok", found.detail)
    installed = gpu_stack.package_version("nsight-python") is not None
    status: CheckStatus = "warn" if installed else "missing"
    return Check("nsight-python", status, found.detail, found.hint)


def _check_counter_permission() -> Check:
    found = gpu_stack.counter_permission()
    status = _PERMISSION_STATUS[found.ok]
    return Check("counter permission", status, found.detail, found.hint)


def _check_cupti() -> Check:
    found = gpu_stack.cupti_status()
    return Check("CUPTI", "ok" if found.ok else "missing", found.detail, found.hint)


def _check_pm_sampling() -> Check:
    """The pm backend, tried for real: PM sampling starts and takes its counters."""
    found = diagnose()
    return Check("PM sampling", found.status, found.detail, found.hint)
