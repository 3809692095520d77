"""Probes of the GPU software stack: driver, NVML, Nsight Compute, CUPTI, torch.

The backends' ``probe()`` and ``nsight-lab doctor`` both ask these questions. Importing
this module touches no hardware and imports no optional package: ``pynvml``, ``torch``,
``cupti`` and ``ncu_report`` are imported inside the functions that need them, and
NVIDIA's ``nsight`` package is never imported here (it probes ``ncu`` at import).

Every ``*_status`` function returns a :class:`StackStatus` and never raises;
:func:`nvml_devices` raises :class:`~nsight_lab.errors.BackendUnavailableError` because
its callers need the devices, not a sentence.
"""

from __future__ import annotations

import ctypes.util
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.gpu.ncu import (
    CUDA_NCU_PATH,
    NCU_ENV_VAR,
    NCU_INSTALL_HINT,
    NCU_VERSION_TIMEOUT_S,
    NSIGHT_COMPUTE_ROOT,
    NSIGHT_PYTHON_MIN_NCU,
    find_ncu,
    format_version,
    ncu_version,
    nsight_python_accepts,
    parse_ncu_version,
)
from nsight_lab.gpu.nvml import (
    DRIVER_HINT,
    NVML_INSTALL_HINT,
    NvmlDevice,
    describe_error,
    nvml_devices,
)
from nsight_lab.gpu.permission import (
    COUNTER_PERMISSION_HINT,
    DRIVER_PARAMS_PATH,
    PROC_STATUS_PATH,
    counter_permission,
)
from nsight_lab.gpu.status import StackStatus

if TYPE_CHECKING:
    from collections.abc import Sequence

logger = logging.getLogger(__name__)

__all__ = [
    "COUNTER_PERMISSION_HINT",
    "CUDA_NCU_PATH",
    "CUPTI_INSTALL_HINT",
    "DRIVER_HINT",
    "DRIVER_PARAMS_PATH",
    "NCU_ENV_VAR",
    "NCU_INSTALL_HINT",
    "NCU_REPORT_INSTALL_HINT",
    "NCU_VERSION_TIMEOUT_S",
    "NSIGHT_COMPUTE_ROOT",
    "NSIGHT_PYTHON_MIN_NCU",
    "NVML_INSTALL_HINT",
    "PROC_STATUS_PATH",
    "NvmlDevice",
    "StackStatus",
    "counter_permission",
    "cupti_status",
    "find_libcupti",
    "find_ncu",
    "format_version",
    "ncu_report_status",
    "ncu_version",
    "nsight_python_accepts",
    "nsight_python_status",
    "nvml_devices",
    "package_version",
    "parse_ncu_version",
    "torch_cuda_status",
]

NCU_REPORT_INSTALL_HINT = (
    "install it with: pip install nsight-lab[ncu] (or: pip install ncu-report)"
)
CUPTI_INSTALL_HINT = (
    "install it with: pip install nsight-lab[cupti] "
    "(or: pip install cupti-python nvidia-cuda-cupti)"
)
_CUPTI_WHEELS = (
    "nvidia-cuda-cupti",
    "nvidia-cuda-cupti-cu12",
    "nvidia-cuda-cupti-cu11",
)
_LIBCUPTI_RE = re.compile(r"^(lib)?cupti(64)?[^/\\]*\.(so(\.\d+)*|dll|dylib)$")


def package_version(distribution: str) -> str | None:
    """Return the installed version of a distribution, or ``None`` if not installed.

    Nothing is imported: the answer comes from the package metadata.

    Args:
        distribution: the name on PyPI, e.g. ``"nsight-python"``.

    Returns:
        The version string, or ``None``.
    """
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def nsight_python_status(ncu_version: Sequence[int] | None) -> StackStatus:
    """Say whether NVIDIA's nsight-python is installed and its in-process path can run.

    ``nsight`` is not imported (it probes ncu at import); the version comes from the
    package metadata.

    Args:
        ncu_version: the version of the ncu that was found, or ``None``.

    Returns:
        ``ok`` is ``True`` only when nsight-python is installed and accepts that ncu.
    """
    installed = package_version("nsight-python")
    if installed is None:
        return StackStatus(
            ok=False,
            detail="nsight-python is not installed (optional)",
            hint="nsight-lab works without it; to use it: pip install nsight-python",
        )
    needs = f"needs Nsight Compute >= {format_version(NSIGHT_PYTHON_MIN_NCU)}"
    notes = ""
    if importlib.util.find_spec("elftools") is None:
        notes = "; its CUPTI tool also needs pyelftools (pip install pyelftools)"
    if ncu_version is None:
        return StackStatus(
            ok=False,
            detail=f"nsight-python {installed}: its in-process path {needs}; "
            f"no ncu was found{notes}",
            hint=NCU_INSTALL_HINT,
        )
    if not nsight_python_accepts(ncu_version):
        return StackStatus(
            ok=False,
            detail=f"nsight-python {installed}: its in-process path {needs}; "
            f"found {format_version(ncu_version)}: nsight-lab will use the isolated "
            f"ncu path instead{notes}",
            hint=f"to profile in-process, install Nsight Compute "
            f">= {format_version(NSIGHT_PYTHON_MIN_NCU)}",
        )
    return StackStatus(
        ok=True,
        detail=f"nsight-python {installed} with Nsight Compute "
        f"{format_version(ncu_version)}: the in-process path can run{notes}",
    )


def ncu_report_status() -> StackStatus:
    """Say whether ``ncu_report`` (Nsight Compute's report reader) can be imported.

    Returns:
        ``ok`` with the version from the ``ncu-report`` metadata, or the import error
        and how to install it.
    """
    try:
        importlib.import_module("ncu_report")
    except Exception as exc:  # noqa: BLE001  (a broken binding must not stop a probe)
        return StackStatus(
            ok=False,
            detail=f"ncu_report cannot be imported ({describe_error(exc)})",
            hint=NCU_REPORT_INSTALL_HINT,
        )
    version = package_version("ncu-report")
    where = f" {version}" if version else " (version unknown: not installed from PyPI)"
    return StackStatus(ok=True, detail=f"ncu_report{where}")


# ------------------------------------------------------------------------ NVML
# ----------------------------------------------------------------------- CUPTI


def cupti_status() -> StackStatus:
    """Say whether cupti-python is importable and a ``libcupti`` can be found.

    ``libcupti`` is looked for in the ``nvidia-cuda-cupti`` wheel, in
    ``$CUDA_HOME/extras/CUPTI/lib64`` and ``/usr/local/cuda/extras/CUPTI/lib64``, and
    on the loader's search path.

    Returns:
        ``ok`` when both are present; the detail names versions and the library path.
    """
    parts: list[str] = []
    importable = True
    try:
        importlib.import_module("cupti")
    except Exception as exc:  # noqa: BLE001  (a broken binding must not stop a probe)
        importable = False
        parts.append(f"cupti-python cannot be imported ({describe_error(exc)})")
    else:
        version = package_version("cupti-python") or "(version unknown)"
        parts.append(f"cupti-python {version}")

    library = find_libcupti()
    if library is None:
        parts.append("no libcupti found")
    else:
        where = "" if Path(library).is_absolute() else " (on the loader's path)"
        parts.append(f"libcupti at {library}{where}")
    ok = importable and library is not None
    return StackStatus(
        ok=ok, detail="; ".join(parts), hint="" if ok else CUPTI_INSTALL_HINT
    )


def find_libcupti() -> str | None:
    """Locate a CUPTI shared library.

    Returns:
        Its path (or, from the loader's search path, its name), or ``None``.
    """
    for distribution in _CUPTI_WHEELS:
        try:
            dist = importlib.metadata.distribution(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in dist.files or ():
            if _LIBCUPTI_RE.match(file.name):
                located = Path(str(dist.locate_file(file)))
                if located.is_file():
                    return str(located)

    roots = [
        os.environ.get("CUDA_HOME"),
        os.environ.get("CUDA_PATH"),
        "/usr/local/cuda",
    ]
    for root in filter(None, roots):
        lib_dir = Path(root) / "extras" / "CUPTI" / "lib64"
        try:
            names = sorted(p.name for p in lib_dir.iterdir())
        except OSError:
            continue
        for name in names:
            if _LIBCUPTI_RE.match(name):
                return str(lib_dir / name)

    return ctypes.util.find_library("cupti")


# ----------------------------------------------------------------------- torch


def torch_cuda_status() -> StackStatus:
    """Say whether torch is installed with CUDA and sees a GPU.

    ``torch.cuda.is_available()`` and ``get_device_name`` initialise the driver but
    create no CUDA context.

    Returns:
        ``ok`` when torch sees a CUDA device; otherwise why not and what to do.
    """
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return StackStatus(
            ok=False,
            detail="torch is not installed",
            hint="install a CUDA build of PyTorch (see https://pytorch.org/get-started/)",
        )
    try:
        torch = importlib.import_module("torch")
        built_cuda: str | None = torch.version.cuda
        if built_cuda is None:
            return StackStatus(
                ok=False,
                detail=f"torch {torch.__version__} is a CPU-only build",
                hint="install a CUDA build of PyTorch "
                "(see https://pytorch.org/get-started/)",
            )
        if not torch.cuda.is_available():
            return StackStatus(
                ok=False,
                detail=f"torch {torch.__version__} (CUDA {built_cuda}) sees no GPU",
                hint=DRIVER_HINT,
            )
        count = int(torch.cuda.device_count())
        name = str(torch.cuda.get_device_name(0))
    except Exception as exc:  # noqa: BLE001  (a broken install must not stop a probe)
        return StackStatus(
            ok=False,
            detail=f"torch failed: {describe_error(exc)}",
            hint="reinstall PyTorch, or check the driver: " + DRIVER_HINT,
        )
    devices = f"{count} device{'s' if count != 1 else ''}"
    return StackStatus(
        ok=True,
        detail=f"torch {torch.__version__} (CUDA {built_cuda}), {devices}, "
        f"cuda:0 is {name}",
    )
