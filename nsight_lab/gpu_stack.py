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
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.errors import BackendUnavailableError

if TYPE_CHECKING:
    from collections.abc import Sequence

logger = logging.getLogger(__name__)

NSIGHT_PYTHON_MIN_NCU: tuple[int, ...] = (2026, 2, 1)
"""The oldest Nsight Compute that nsight-python's in-process path accepts."""

NCU_ENV_VAR = "NSIGHT_LAB_NCU"
"""Environment variable naming the ``ncu`` executable to use (wins over ``PATH``)."""

NCU_VERSION_TIMEOUT_S = 30.0

NCU_INSTALL_HINT = (
    "install Nsight Compute (it ships with the CUDA toolkit) and put ncu on PATH, "
    f"or set {NCU_ENV_VAR}=/path/to/ncu"
)
NCU_REPORT_INSTALL_HINT = (
    "install it with: pip install nsight-lab[ncu] (or: pip install ncu-report)"
)
CUPTI_INSTALL_HINT = (
    "install it with: pip install nsight-lab[cupti] "
    "(or: pip install cupti-python nvidia-cuda-cupti)"
)
NVML_INSTALL_HINT = "install it with: pip install nvidia-ml-py"
DRIVER_HINT = (
    "is the NVIDIA driver installed and loaded? `nvidia-smi` should list the GPU"
)
COUNTER_PERMISSION_HINT = (
    "run as root, or allow all users to read GPU counters: add "
    "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` to a file in "
    "/etc/modprobe.d and reboot; in a container, start it with --cap-add SYS_ADMIN "
    "(NVIDIA calls this error ERR_NVGPUCTRPERM)"
)

DRIVER_PARAMS_PATH = Path("/proc/driver/nvidia/params")
PROC_STATUS_PATH = Path("/proc/self/status")

# Where ncu is looked for after $NSIGHT_LAB_NCU and PATH (module constants so that
# tests can point them at a temporary directory).
CUDA_NCU_PATH = Path("/usr/local/cuda/bin/ncu")
NSIGHT_COMPUTE_ROOT = Path("/opt/nvidia/nsight-compute")

_CAP_SYS_ADMIN_BIT = 21
_NCU_VERSION_RE = re.compile(r"^\s*Version\s+(\d+(?:\.\d+)+)", re.MULTILINE)
_PROFILING_ADMIN_RE = re.compile(r"^\s*RmProfilingAdminOnly\s*:\s*(\d+)", re.MULTILINE)
_CUPTI_WHEELS = (
    "nvidia-cuda-cupti",
    "nvidia-cuda-cupti-cu12",
    "nvidia-cuda-cupti-cu11",
)
_LIBCUPTI_RE = re.compile(r"^(lib)?cupti(64)?[^/\\]*\.(so(\.\d+)*|dll|dylib)$")


@dataclass(frozen=True)
class StackStatus:
    """The answer to one question about the GPU stack.

    Attributes:
        ok: ``True`` when the component is usable, ``False`` when it is not, ``None``
            when this machine cannot tell.
        detail: what was found, in words (versions, paths, the error text).
        hint: what to do about it; empty when there is nothing to do.
    """

    ok: bool | None
    detail: str
    hint: str = ""

    @property
    def message(self) -> str:
        """The detail and the hint as one line, e.g. for ``Availability.reason``."""
        return f"{self.detail}; {self.hint}" if self.hint else self.detail


@dataclass(frozen=True)
class NvmlDevice:
    """One GPU as NVML describes it.

    Attributes:
        index: NVML device index.
        name: marketing name, e.g. ``"NVIDIA H200"``.
        uuid: ``"GPU-…"`` identifier.
        driver_version: kernel driver version, e.g. ``"580.159.04"``.
        cuda_driver_version: newest CUDA the driver supports, e.g. ``"13.0"``.
        memory_total_bytes: device memory.
        max_sm_clock_mhz: maximum SM clock, ``None`` where NVML does not report it.
        max_mem_clock_mhz: maximum memory clock, ``None`` where NVML does not report it.
    """

    index: int
    name: str
    uuid: str
    driver_version: str
    cuda_driver_version: str
    memory_total_bytes: int
    max_sm_clock_mhz: int | None
    max_mem_clock_mhz: int | None


def format_version(version: Sequence[int]) -> str:
    """Write a version tuple as dotted text: ``(2025, 3, 1, 0)`` → ``"2025.3.1.0"``.

    Args:
        version: the version components.

    Returns:
        The dotted version string.
    """
    return ".".join(str(part) for part in version)


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


# --------------------------------------------------------------------------- ncu


def find_ncu() -> Path | None:
    """Locate the Nsight Compute CLI.

    Looks at ``$NSIGHT_LAB_NCU`` (a file, or a directory holding ``ncu``), then ``ncu``
    on ``PATH``, then ``$CUDA_HOME/bin/ncu``, then ``/usr/local/cuda/bin/ncu``, then the
    newest ``/opt/nvidia/nsight-compute/<version>/ncu``. An override that points at no
    executable is not silently replaced by another ncu: it yields ``None``.

    Returns:
        The path of an executable ``ncu``, or ``None``.
    """
    override = os.environ.get(NCU_ENV_VAR)
    if override:
        candidate = Path(override).expanduser()
        if candidate.is_dir():
            candidate /= "ncu"
        if _is_executable(candidate):
            return candidate
        logger.warning(
            "%s=%r is not an executable ncu; ignoring PATH", NCU_ENV_VAR, override
        )
        return None

    on_path = shutil.which("ncu")
    if on_path:
        return Path(on_path)

    candidates: list[Path] = []
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda_home:
        candidates.append(Path(cuda_home) / "bin" / "ncu")
    candidates.append(CUDA_NCU_PATH)
    candidates.extend(_nsight_compute_installs())
    for candidate in candidates:
        if _is_executable(candidate):
            return candidate
    return None


def _nsight_compute_installs() -> list[Path]:
    """``/opt/nvidia/nsight-compute/*/ncu``, newest version first."""
    try:
        dirs = [d for d in NSIGHT_COMPUTE_ROOT.iterdir() if d.is_dir()]
    except OSError:
        return []

    def newest_first(directory: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", directory.name))

    return [d / "ncu" for d in sorted(dirs, key=newest_first, reverse=True)]


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def parse_ncu_version(text: str) -> tuple[int, ...] | None:
    """Parse the output of ``ncu --version``.

    Args:
        text: the output, whose last line reads like
            ``Version 2025.3.1.0 (build 36398880) (public-release)``.

    Returns:
        The version as integers, e.g. ``(2025, 3, 1, 0)``, or ``None`` when the text
        holds no version line.
    """
    match = _NCU_VERSION_RE.search(text)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def ncu_version(
    path: Path | str, *, timeout_s: float = NCU_VERSION_TIMEOUT_S
) -> tuple[int, ...] | None:
    """Run ``ncu --version`` and parse what it prints.

    Args:
        path: the ``ncu`` executable.
        timeout_s: how long to wait for it.

    Returns:
        The version, or ``None`` when ncu could not be run, timed out, failed or
        printed no version (the reason is logged at debug level).
    """
    try:
        completed = subprocess.run(  # noqa: S603  (a path we found or were given)
            [str(path), "--version"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.debug("could not run %s --version: %s", path, exc)
        return None
    if completed.returncode != 0:
        logger.debug(
            "%s --version exited with %d: %s",
            path,
            completed.returncode,
            completed.stderr.strip(),
        )
        return None
    version = parse_ncu_version(completed.stdout)
    if version is None:
        logger.debug(
            "no version in the output of %s --version: %r", path, completed.stdout
        )
    return version


def nsight_python_accepts(version: Sequence[int] | None) -> bool:
    """Tell whether nsight-python's in-process path accepts this Nsight Compute.

    Args:
        version: the ncu version, or ``None`` when no ncu was found.

    Returns:
        ``True`` when ``version >= NSIGHT_PYTHON_MIN_NCU``.
    """
    return version is not None and tuple(version) >= NSIGHT_PYTHON_MIN_NCU


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
            detail=f"ncu_report cannot be imported ({_describe(exc)})",
            hint=NCU_REPORT_INSTALL_HINT,
        )
    version = package_version("ncu-report")
    where = f" {version}" if version else " (version unknown: not installed from PyPI)"
    return StackStatus(ok=True, detail=f"ncu_report{where}")


# ----------------------------------------------------------------- permissions


def counter_permission(
    params_path: Path | str | None = None,
    *,
    status_path: Path | str | None = None,
) -> StackStatus:
    """Say whether this process may read GPU performance counters.

    The NVIDIA driver reports ``RmProfilingAdminOnly: 1`` in its params when only
    administrators may profile; an administrator is a process with ``CAP_SYS_ADMIN``
    (root outside a container has it; root inside one needs ``--cap-add SYS_ADMIN``).

    Args:
        params_path: the driver's params file; default ``DRIVER_PARAMS_PATH``.
        status_path: this process's ``/proc`` status file (for its capabilities);
            default ``PROC_STATUS_PATH``.

    Returns:
        ``ok`` is ``True`` when counters may be read, ``False`` when the driver will
        refuse (ERR_NVGPUCTRPERM, with the fix as hint), ``None`` when the params file
        cannot be read (no NVIDIA driver loaded, or not Linux).
    """
    params_path = Path(params_path or DRIVER_PARAMS_PATH)
    try:
        text = params_path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return StackStatus(
            ok=None,
            detail=f"cannot read {params_path}: {exc.strerror or _describe(exc)}",
            hint=DRIVER_HINT,
        )
    match = _PROFILING_ADMIN_RE.search(text)
    if match is None:
        return StackStatus(
            ok=None,
            detail=f"{params_path} has no RmProfilingAdminOnly entry",
        )
    if match.group(1) == "0":
        return StackStatus(
            ok=True, detail="RmProfilingAdminOnly: 0 (any user may read counters)"
        )
    admin = _is_admin(Path(status_path or PROC_STATUS_PATH))
    if admin:
        return StackStatus(
            ok=True,
            detail="RmProfilingAdminOnly: 1, and this process is an administrator "
            "(CAP_SYS_ADMIN)",
        )
    return StackStatus(
        ok=False,
        detail="RmProfilingAdminOnly: 1 (only administrators may read GPU counters) "
        "and this process lacks CAP_SYS_ADMIN",
        hint=COUNTER_PERMISSION_HINT,
    )


def _is_admin(status_path: Path) -> bool:
    """CAP_SYS_ADMIN in the effective set, or root where capabilities are unreadable."""
    try:
        text = status_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    match = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", text, re.MULTILINE)
    if match is not None:
        return bool(int(match.group(1), 16) >> _CAP_SYS_ADMIN_BIT & 1)
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


# ------------------------------------------------------------------------ NVML


def nvml_devices() -> list[NvmlDevice]:
    """List the GPUs NVML sees (``nvmlInit`` is called here, and only here).

    Returns:
        One :class:`NvmlDevice` per GPU, possibly none.

    Raises:
        BackendUnavailableError: nvidia-ml-py is not installed, or NVML could not be
            loaded or queried; the original NVML error is chained as ``__cause__``.
    """
    try:
        import pynvml
    except ImportError as exc:
        msg = f"nvidia-ml-py is not installed; {NVML_INSTALL_HINT}"
        raise BackendUnavailableError(msg) from exc

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        msg = f"NVML could not be loaded: {DRIVER_HINT} ({_describe(exc)})"
        raise BackendUnavailableError(msg) from exc
    try:

        def max_clock(handle: object, clock: int) -> int | None:
            # MIG instances and some vGPUs do not report max clocks.
            try:
                return int(pynvml.nvmlDeviceGetMaxClockInfo(handle, clock))
            except pynvml.NVMLError:
                return None

        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = _cuda_version_text(pynvml.nvmlSystemGetCudaDriverVersion())
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            devices.append(
                NvmlDevice(
                    index=index,
                    name=_text(pynvml.nvmlDeviceGetName(handle)),
                    uuid=_text(pynvml.nvmlDeviceGetUUID(handle)),
                    driver_version=driver,
                    cuda_driver_version=cuda,
                    memory_total_bytes=int(
                        pynvml.nvmlDeviceGetMemoryInfo(handle).total
                    ),
                    max_sm_clock_mhz=max_clock(handle, pynvml.NVML_CLOCK_SM),
                    max_mem_clock_mhz=max_clock(handle, pynvml.NVML_CLOCK_MEM),
                )
            )
    except pynvml.NVMLError as exc:
        msg = f"NVML failed while listing devices: {_describe(exc)}"
        raise BackendUnavailableError(msg) from exc
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError as exc:
            logger.debug("nvmlShutdown failed: %s", exc)
    return devices


def _cuda_version_text(encoded: int) -> str:
    """NVML's CUDA driver version ``13000`` → ``"13.0"``."""
    return f"{encoded // 1000}.{encoded % 1000 // 10}"


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


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
        parts.append(f"cupti-python cannot be imported ({_describe(exc)})")
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
            detail=f"torch failed: {_describe(exc)}",
            hint="reinstall PyTorch, or check the driver: " + DRIVER_HINT,
        )
    devices = f"{count} device{'s' if count != 1 else ''}"
    return StackStatus(
        ok=True,
        detail=f"torch {torch.__version__} (CUDA {built_cuda}), {devices}, "
        f"cuda:0 is {name}",
    )


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
