"""A verdict table's cells as every view shows them, and what it was judged with.

:func:`verdict_cells` formats one row of
:meth:`nsight_lab.analysis.baselines.VerdictTable.to_json` once, through
:mod:`nsight_lab.text.units` (the served rows carry these cells, so the front ends
only show them); :func:`tolerances` and :func:`legend_text` say what the verdicts
were judged with, sent with the table rather than coded in each view. Laid out as
text and HTML by :mod:`nsight_lab.views.verdicts`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.rules import (
    CLOCK_TOLERANCE,
    DEFAULT_THRESHOLD,
    GPU_SESSION_DRIFT,
    SESSION_DRIFT,
    THROTTLE_APART,
    config_text,
)
from nsight_lab.host_speed import HOST_TOLERANCE
from nsight_lab.text.units import (
    UNDEFINED,
    format_change,
    format_quantity,
    format_ratio,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["CELL_KEYS", "legend_text", "pct_text", "tolerances", "verdict_cells"]

CELL_KEYS = ("region", "metric", "config", "verdict", "change", "ratio",
             "median_a", "median_b", "note")  # fmt: skip
"""The keys of a row's ``cells`` (:func:`verdict_cells`), one per column."""


def tolerances() -> dict[str, Any]:
    """What the verdicts were judged with, for the views to say (sent, not coded).

    Raises:
        Nothing.
    """
    return {
        "clock": CLOCK_TOLERANCE,
        "host": HOST_TOLERANCE,
        "throttle_apart": THROTTLE_APART,
        "drift": {**SESSION_DRIFT, "other GPU backends": GPU_SESSION_DRIFT},
        "default_threshold": DEFAULT_THRESHOLD,
    }


def pct_text(fraction: float) -> str:
    """A fraction as a percentage: ``0.022`` -> ``2.2 %``."""
    return f"{fraction * 100:g} %"


def legend_text(table: Mapping[str, Any]) -> str:
    """The legend under a verdict table: what b/a, the marks and the words mean.

    Raises:
        Nothing.
    """
    level = f"{round(float(table.get('confidence') or 0.95) * 100)} %"
    threshold = float(table.get("threshold") or 0.0)
    drift = ", ".join(
        f"{name} {pct_text(value)}" for name, value in SESSION_DRIFT.items()
    )
    flag = "\u26a0"
    return (
        f"b/a is the ratio of medians with its {level} interval, widened by the "
        f"drift between sessions of the same code ({drift}); a change is counted "
        "when the interval excludes 1 and the ratio is beyond "
        f"\u00b1{pct_text(threshold)} (the threshold); deterministic rows "
        "(work-model counts, the same value in every run) have nothing to judge; "
        f"{flag} flagged: SM clocks apart by more "
        f"than {pct_text(CLOCK_TOLERANCE)}, host speeds apart by more than "
        f"{pct_text(HOST_TOLERANCE)} (cpu backend) or throttled runs; inconclusive: "
        "clocks: one session's runs throttled and the other's not, or clocks apart "
        "and the ratio per SM cycle reads otherwise"
    )


def _quantity(value: object, unit: str) -> str:
    return format_quantity(value, unit)


def verdict_cells(row: Mapping[str, Any]) -> dict[str, str]:
    """One row of the table as display strings, by :data:`CELL_KEYS`.

    Raises:
        Nothing.
    """
    unit = str(row.get("unit") or "")
    verdict = str(row.get("verdict") or UNDEFINED)
    return {
        "region": str(row.get("annotation", "")),
        "metric": str(row.get("label") or row.get("metric", "")),
        "config": config_text(dict(row.get("config") or {})),
        "median_a": _quantity(row.get("median_a"), unit),
        "median_b": _quantity(row.get("median_b"), unit),
        "change": format_change(row.get("ratio")),
        "ratio": format_ratio(row.get("ratio"), row.get("ci_low"), row.get("ci_high")),
        "verdict": verdict + (" \u26a0" if row.get("flagged") else ""),
        "note": str(row.get("note") or ""),
    }
