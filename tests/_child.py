"""A fresh Python for a test: run it, check it exited 0, read the JSON it printed last.

Used where a test needs an interpreter nothing was imported into yet (the first
cell's imports, PyTorch's FLOP counter imported once per process).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def run_child(args: list[str], env: dict[str, str]) -> tuple[Any, str]:
    """``python args`` with ``env``: the JSON of its last stdout line; its stderr."""
    proc = subprocess.run(  # noqa: S603  (the test's own interpreter and script)
        [sys.executable, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr
