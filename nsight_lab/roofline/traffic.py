"""Two placed regions' DRAM traffic and time as ratios.

An unfused versus a fused version of the same computation, say.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nsight_lab.roofline.placement import Placement, RegionWork

__all__ = ["TrafficComparison", "traffic_comparison"]


@dataclass(frozen=True)
class TrafficComparison:
    """DRAM traffic and time of region ``a`` relative to region ``b``."""

    a: str
    b: str
    traffic_ratio: float
    """``(a.read + a.written) / (b.read + b.written)``."""
    time_ratio: float
    """``a.duration / b.duration``."""
    read_ratio: float
    write_ratio: float
    a_config_index: int = 0
    b_config_index: int = 0


def _ratio(numerator: float, denominator: float) -> float:
    if denominator == 0:
        return math.nan if numerator == 0 else math.inf
    return numerator / denominator


def traffic_comparison(
    a: Placement | RegionWork, b: Placement | RegionWork
) -> TrafficComparison:
    """Compare the DRAM traffic and time of two placed regions, as ratios ``a / b``.

    A ratio over zero is ``inf`` (``nan`` for ``0 / 0``).

    Raises:
        Nothing.
    """
    return TrafficComparison(
        a=a.annotation,
        b=b.annotation,
        traffic_ratio=_ratio(a.bytes_total, b.bytes_total),
        time_ratio=_ratio(a.duration_ns, b.duration_ns),
        read_ratio=_ratio(a.bytes_read, b.bytes_read),
        write_ratio=_ratio(a.bytes_written, b.bytes_written),
        a_config_index=a.config_index,
        b_config_index=b.config_index,
    )
