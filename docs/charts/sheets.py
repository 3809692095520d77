# ruff: noqa: INP001  (a script beside the PNGs it makes, not a package)
"""Stack the Galata screenshots of each fixture session's charts into one PNG.

``ui-tests/tests/readability.spec.ts`` writes every chart of the H200 fixture's six
sessions, as the sidebar's session panel draws it, to
``ui-tests/test-output/readability/s<ID>-<chart>-<theme>.png``. This script stacks
a session's light-theme charts top to bottom, at 3/4 scale in 64 colours (small
enough to commit): ``python docs/charts/sheets.py SCREENSHOTS OUT_DIR SUFFIX``
writes ``OUT_DIR/s<ID>-SUFFIX.png``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

CHARTS = ("duration", "clocks", "roofline", "traffic", "counters")


def sheet(shots: Path, session: int, out: Path) -> None:
    """Write session ``session``'s charts, stacked, to ``out``."""
    images = [
        Image.open(path).convert("RGB")
        for chart in CHARTS
        if (path := shots / f"s{session}-{chart}-light.png").exists()
    ]
    width = max(image.width for image in images)
    stacked = Image.new("RGB", (width, sum(i.height for i in images)), "white")
    top = 0
    for image in images:
        stacked.paste(image, (0, top))
        top += image.height
    small = stacked.resize(
        (width * 3 // 4, stacked.height * 3 // 4), Image.Resampling.LANCZOS
    )
    small.quantize(
        colors=64, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
    ).save(out, optimize=True)


def main() -> None:
    """``sheets.py SCREENSHOTS OUT_DIR SUFFIX``: one sheet per fixture session."""
    shots, out, suffix = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    out.mkdir(parents=True, exist_ok=True)
    for session in range(1, 7):
        sheet(shots, session, out / f"s{session}-{suffix}.png")


if __name__ == "__main__":
    main()
