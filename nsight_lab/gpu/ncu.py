"""Nsight Compute CLI discovery and version: ``find_ncu``, ``ncu --version``.

Below the backends (the ``ncu`` backend and the stack probes both ask it).

Part of :mod:`nsight_lab.gpu.stack`, which re-exports every public name here; import
them from there. Tests that point the search at a temporary directory patch
``CUDA_NCU_PATH`` and ``NSIGHT_COMPUTE_ROOT`` on this module, where
:func:`find_ncu` reads them.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

# Log as before the split, under the public module's name.
logger = logging.getLogger("nsight_lab.gpu.stack")

NSIGHT_PYTHON_MIN_NCU: tuple[int, ...] = (2026, 2, 1)
"""The oldest Nsight Compute that nsight-python's in-process path accepts."""

NCU_ENV_VAR = "NSIGHT_LAB_NCU"
"""Environment variable naming the ``ncu`` executable to use (wins over ``PATH``)."""

NCU_VERSION_TIMEOUT_S = 30.0

NCU_INSTALL_HINT = (
    "install Nsight Compute (it ships with the CUDA toolkit) and put ncu on PATH, "
    f"or set {NCU_ENV_VAR}=/path/to/ncu"
)

# Where ncu is looked for after $NSIGHT_LAB_NCU and PATH (module constants so that
# tests can point them at a temporary directory).
CUDA_NCU_PATH = Path("/usr/local/cuda/bin/ncu")
NSIGHT_COMPUTE_ROOT = Path("/opt/nvidia/nsight-compute")

_NCU_VERSION_RE = re.compile(r"^\s*Version\s+(\d+(?:\.\d+)+)", re.MULTILINE)


def format_version(version: Sequence[int]) -> str:
    """Write a version tuple as dotted text: ``(2025, 3, 1, 0)`` → ``"2025.3.1.0"``.

    Args:
        version: the version components.

    Returns:
        The dotted version string.
    """
    return ".".join(str(part) for part in version)


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
