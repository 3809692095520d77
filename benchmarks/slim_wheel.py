"""Rewrite a wheel without the files a GPU machine never serves (front-end bundles).

The device call carries the working tree and ``.whl/`` under 64 MiB in all; plotly's
wheel holds three JupyterLab/widget JavaScript bundles (4.4 MB compressed) that only a
browser reads. ``plotly.min.js`` stays: :mod:`nsight_lab.figures.export` embeds it.
RECORD loses the dropped files' lines, so the wheel stays consistent.

Usage: python benchmarks/slim_wheel.py WHEEL PREFIX [PREFIX ...]
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path


def slim(wheel: Path, prefixes: tuple[str, ...]) -> int:
    """Rewrite ``wheel`` in place without members under ``prefixes``; bytes saved."""
    before = wheel.stat().st_size
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename.startswith(prefixes):
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines(keepends=True)
                data = "".join(ln for ln in lines if not ln.startswith(prefixes)).encode()
            dst.writestr(info, data)
    tmp.replace(wheel)
    return before - wheel.stat().st_size


if __name__ == "__main__":
    path = Path(sys.argv[1])
    saved = slim(path, tuple(sys.argv[2:]))
    print(f"slim_wheel: {path.name} {saved / 1e6:.1f} MB smaller")
