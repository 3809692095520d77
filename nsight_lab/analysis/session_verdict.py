"""Session b against a in one word, folded from its compared rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.rules import (
    DEFAULT_THRESHOLD,
    FASTER,
    INCONCLUSIVE,
    NO_CHANGE,
    SLOWER,
    timed,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.analysis.row import Comparison


@dataclass(frozen=True)
class SessionVerdict:
    """Session b against a in one word, from its timed rows (durations and rates)."""

    verdict: str | None
    """``slower`` when any timed row is slower (a regression), else ``inconclusive:
    clocks`` when any is, else ``faster`` when any is faster, else ``no change``;
    ``None`` when no timed row could be judged."""
    slower: int = 0
    """Timed rows judged slower."""
    faster: int = 0
    unchanged: int = 0
    """Timed rows judged "no change"."""
    inconclusive: int = 0
    """Timed rows judged "inconclusive: clocks"."""
    folded: int = 0
    """Deterministic rows (folded away in the views)."""
    flagged: int = 0
    """Rows whose clocks or host speeds differ or that have throttled runs."""
    threshold: float = 0.0
    note: str = ""
    """One line: the counts, and the clock and throttling caveats."""

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape."""
        return {
            "verdict": self.verdict,
            "slower": self.slower,
            "faster": self.faster,
            "unchanged": self.unchanged,
            "inconclusive": self.inconclusive,
            "folded": self.folded,
            "flagged": self.flagged,
            "threshold": self.threshold,
            "note": self.note,
        }


def session_verdict(
    rows: Sequence[Comparison], threshold: float = DEFAULT_THRESHOLD
) -> SessionVerdict:
    """Fold :func:`compare_runs` rows into one verdict of session b against a.

    Only timed rows count (a duration, or a rate made from one): counters read
    "higher"/"lower", which is no regression by itself. A flagged row (clocks,
    throttling) still counts; an inconclusive one is no regression, and the
    session is inconclusive only when nothing is slower.
    """
    timed_rows = [r for r in rows if timed(r.metric, r.unit)]
    slower = sum(r.verdict == SLOWER for r in timed_rows)
    faster = sum(r.verdict == FASTER for r in timed_rows)
    unchanged = sum(r.verdict == NO_CHANGE for r in timed_rows)
    inconclusive = sum(r.verdict == INCONCLUSIVE for r in timed_rows)
    judged: str | None = None
    if slower:
        judged = SLOWER
    elif inconclusive:
        judged = INCONCLUSIVE
    elif faster:
        judged = FASTER
    elif unchanged:
        judged = NO_CHANGE
    parts = [
        f"{n} {word}"
        for n, word in (
            (slower, "slower"),
            (faster, "faster"),
            (inconclusive, "inconclusive (clocks)"),
            (unchanged, "no change"),
        )
        if n
    ]
    note = ", ".join(parts) if parts else "no timed row could be judged"
    note += _caveats(rows, inconclusive=inconclusive)
    return SessionVerdict(
        verdict=judged,
        slower=slower,
        faster=faster,
        unchanged=unchanged,
        inconclusive=inconclusive,
        folded=sum(r.folded for r in rows),
        flagged=sum(r.flagged for r in rows),
        threshold=threshold,
        note=note,
    )


def _caveats(rows: Sequence[Comparison], *, inconclusive: int) -> str:
    """The note's tail: why rows are flagged, what to do about inconclusive ones."""
    note = ""
    if any(r.flagged for r in rows):
        clock = sum(r.clock_differs for r in rows)
        host = sum(r.host_differs for r in rows)
        throttle = sum(
            r.flagged and (r.throttled_a > 0 or r.throttled_b > 0) for r in rows
        )
        why = [
            f"{n} {what}"
            for n, what in (
                (clock, "with SM clocks apart"),
                (host, "with host speeds apart"),
                (throttle, "throttled"),
            )
            if n
        ]
        whose = "the host's" if host and not clock and not throttle else "the clocks'"
        note += f"; flagged rows: {', '.join(why)} (the ratio may be {whose})"
    if inconclusive:
        note += (
            "; to judge the inconclusive rows, profile both sessions with "
            "--clock-control base --thermal auto"
        )
    return note
