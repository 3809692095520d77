"""What the README's commands write is git-ignored (issue 22).

``scripts/lab.sh --headless`` (README command 1) executes examples/quickstart.ipynb
into examples/executed/; a fresh clone showed that file as a change to commit. The
H200 run kept there as evidence (quickstart_h200.ipynb) stays tracked.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("no git checkout here (an sdist or a copy): nothing is ignored")
    return subprocess.run(  # noqa: S603  (git, fixed arguments)
        [git, "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )


def test_the_headless_notebook_lab_sh_writes_is_ignored() -> None:
    script = (ROOT / "scripts" / "lab.sh").read_text(encoding="utf-8")
    out_dir = re.search(r"--output-dir (\S+) (\S+\.ipynb)", script)
    assert out_dir is not None, "lab.sh --headless no longer names its output"
    written = f"{out_dir.group(1)}/{Path(out_dir.group(2)).name}"
    assert written == "examples/executed/quickstart.ipynb"
    assert _git("check-ignore", "-q", "--no-index", written).returncode == 0
    kept = "examples/executed/quickstart_h200.ipynb"
    assert _git("check-ignore", "-q", "--no-index", kept).returncode == 1
