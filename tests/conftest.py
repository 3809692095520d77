"""Shared fixtures.

Tests marked for hardware that is absent are skipped, with the reason printed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


def _gpu_reason() -> str | None:
    try:
        import torch
    except ImportError:
        return "no GPU: PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no GPU: torch.cuda.is_available() is False on this machine"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip tests marked gpu when no CUDA device is visible, saying so."""
    reason = None
    checked = False
    for item in items:
        if "gpu" in item.keywords:
            if not checked:
                reason, checked = _gpu_reason(), True
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def nsight_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own store directory."""
    home = tmp_path / "nsight-home"
    monkeypatch.setenv("NSIGHT_LAB_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def ip() -> InteractiveShell:
    """One real IPython shell for the session, with nsight_lab loaded."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = (
        start_ipython() or get_ipython()
    )  # start_ipython() returns None once started
    assert shell is not None
    shell.run_line_magic("load_ext", "nsight_lab")
    return shell


FAKE_NCU = Path(__file__).parent / "fixtures" / "fake_ncu.py"


@pytest.fixture
def fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the stand-in ``ncu`` (tests/fixtures/fake_ncu.py) on PATH; return it."""
    from nsight_lab.gpu import stack as gpu_stack

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(f"#!{sys.executable}\n" + FAKE_NCU.read_text(encoding="utf-8"))
    ncu.chmod(0o755)
    monkeypatch.delenv(gpu_stack.NCU_ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    for var in ("FAKE_NCU_MODE", "FAKE_NCU_KERNELS", "FAKE_NCU_DURATION_NS"):
        monkeypatch.delenv(var, raising=False)
    return ncu
