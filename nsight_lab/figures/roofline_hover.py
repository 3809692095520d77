"""What the roofline's hover says about a region: its numbers, flags and kernels.

One template (:data:`REGION_HOVER`) and the data it reads (:func:`custom`): the
true place (spread points are drawn apart, :mod:`nsight_lab.figures.roofline_spots`),
the work and where it came from, each flag with its cause and what to do, and the
kernels the backend saw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.figures.kernels import kernels_hover
from nsight_lab.figures.text import plotly_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.analysis.validity import Flag
    from nsight_lab.figures.roofline_spots import Spot
    from nsight_lab.roofline.placement import Placement

REGION_HOVER = (
    "%{customdata[0]} (%{customdata[8]}, %{customdata[7]} µs)"
    "<br>FLOPs: %{customdata[1]}"
    "<br>bytes: %{customdata[2]} read, %{customdata[3]} written"
    "<br>intensity: %{customdata[12]} FLOP/B"
    "<br>achieved: %{customdata[13]} TFLOP/s, %{customdata[9]} GB/s"
    "<br>%{customdata[4]}% of roof (%{customdata[5]} bound)"
    "<br>%{customdata[6]}%{customdata[10]}%{customdata[14]}%{customdata[11]}"
    "<extra></extra>"
)


def flag_hover(flags: Sequence[Flag]) -> str:
    """The hover's lines for a flagged region: each flag, its cause, what to do."""
    return "".join(
        f"<br><b>⚠ {plotly_text(f.text)}</b><br>cause: {plotly_text(f.cause)}"
        f"<br>do: {plotly_text(f.action)}"
        for f in flags
    )


def custom(
    p: Placement,
    label: str,
    spot: Spot,
    flags: Sequence[Flag],
    kernels: Sequence[str],
) -> list[str]:
    """A region's hover data (:data:`REGION_HOVER`'s fields, in order)."""
    also = [name for name in spot.together if name != label]
    ran = kernels_hover(kernels)
    return [
        label,
        f"{p.flops:.4g}",
        f"{p.bytes_read:.4g}",
        f"{p.bytes_written:.4g}",
        f"{p.pct_of_roof:.3g}",
        p.bound,
        f"FLOPs {p.flops_source}, bytes {p.bytes_source}",
        f"{p.duration_ns / 1e3:.4g}",
        p.dtype,
        f"{p.achieved_bytes_per_s / 1e9:.4g}",
        ("<br>same place (drawn apart): " + ", ".join(also)) if also else "",
        flag_hover(flags),
        f"{p.intensity:.3g}",
        f"{p.achieved_flops_per_s / 1e12:.4g}",
        f"<br>{plotly_text(ran)}" if ran else "",
    ]
