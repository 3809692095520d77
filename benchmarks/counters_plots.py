"""Draw the roofline and traffic PNGs from ``counters_<gpu>.json``.

The counters benchmark runs on the GPU host, which has no browser for plotly's static
export; the placements it measured are in the JSON, so the pictures are drawn from
them anywhere with the one chart implementation (``nsight_lab.figures``).

Run: ``python benchmarks/counters_plots.py benchmarks/results/counters_h200.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nsight_lab.figures import roofline_figure, traffic_figure, write_png
from nsight_lab.roofline.placement import Peaks, Placement


def main(path: Path) -> None:
    """Write ``<stem>_roofline.png`` and ``<stem>_traffic.png`` beside ``path``."""
    data = json.loads(path.read_text())
    peaks_json = dict(data["peaks"])
    peaks_json["notes"] = tuple(peaks_json.get("notes") or ())
    peaks = Peaks(**peaks_json)
    placements = [Placement(**p) for p in data["placements"].values()]
    stem = path.with_suffix("")
    write_png(roofline_figure(placements, peaks), Path(f"{stem}_roofline.png"))
    fusion = [p for p in placements if p.annotation in {"unfused", "fused"}]
    write_png(traffic_figure(fusion or placements), Path(f"{stem}_traffic.png"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
