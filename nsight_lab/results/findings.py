"""``results.findings()``: why a session's regions are slow, as rows of a DataFrame.

A pandas accessor on every DataFrame (registered when this module is imported:
the results frame's module imports it): ``results.findings()`` returns one row per
finding of the session the frame holds (its ``SessionId``), most important first,
read from the run store as ``nsight-lab explain`` reads it
(:func:`~nsight_lab.viewmodel.findings.stored_findings`). A frame that carries its
findings already (``frame.attrs["findings"]``, the entries of
:func:`~nsight_lab.analysis.findings.findings_json`) is read without the store.
``results.findings(top=3)`` gives the ones the views show first.

Columns (:data:`COLUMNS`): ``Rank``, ``Top``, ``Region``, ``Config``, ``Family``,
``Kind``, ``Finding`` (the statement), ``Evidence`` (``; ``-joined), ``Try``,
``Gain`` (the bound, x; NaN where none), ``GainBasis``, ``Confidence``
(``measured``, ``work model``, ``timing``), ``Basis``, ``AnsweredBy``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from nsight_lab.analysis.findings import findings_json
from nsight_lab.errors import CellError
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["ATTR", "COLUMNS", "FindingsAccessor", "findings_frame"]

ATTR = "findings"
"""``frame.attrs`` key of a frame's own findings entries."""
COLUMNS = (
    "Rank", "Top", "Region", "Config", "Family", "Kind", "Finding", "Evidence",
    "Try", "Gain", "GainBasis", "Confidence", "Basis", "AnsweredBy",
)  # fmt: skip


def findings_frame(entries: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Findings entries (:func:`findings_json`'s) as rows, in their order.

    Raises:
        Nothing.
    """
    rows = [
        {
            "Rank": e.get("rank"),
            "Top": bool(e.get("top")),
            "Region": e.get("region", ""),
            "Config": e.get("config", ""),
            "Family": e.get("family", ""),
            "Kind": e.get("kind", ""),
            "Finding": e.get("statement", ""),
            "Evidence": "; ".join(e.get("evidence") or ()),
            "Try": e.get("action", ""),
            "Gain": math.nan if e.get("gain") is None else float(e["gain"]),
            "GainBasis": e.get("gain_basis", ""),
            "Confidence": e.get("confidence", ""),
            "Basis": e.get("basis", ""),
            "AnsweredBy": e.get("answered_by", ""),
        }
        for e in entries
    ]
    frame: pd.DataFrame = pd.DataFrame(rows, columns=list(COLUMNS))
    return frame


@pd.api.extensions.register_dataframe_accessor("findings")
class FindingsAccessor:
    """``frame.findings()``: the findings of the session a results frame holds."""

    def __init__(self, frame: pd.DataFrame) -> None:
        """Bind to ``frame`` (pandas makes one per frame, on first use)."""
        self._frame = frame

    def __call__(self, top: int | None = None) -> pd.DataFrame:
        """One row per finding, most important first (``top``: the first ones).

        Raises:
            CellError: The frame holds no nsight-lab session, or several.
            NotFoundError: Its session is not in the store.
        """
        entries = self._frame.attrs.get(ATTR)
        if entries is None:
            entries = findings_json(self._stored())
        frame = findings_frame(entries)
        return frame if top is None else frame[frame["Top"]].head(top)

    def _stored(self) -> list[Any]:
        column = self._frame.get("SessionId")
        ids = [] if column is None else sorted({int(s) for s in column.dropna()})
        if len(ids) != 1:
            what = "no SessionId column" if column is None else f"sessions {ids}"
            msg = (
                f"findings() reads one nsight-lab session's results; this frame has "
                f"{what}: call it on one profile's DataFrame (--out VAR)"
            )
            raise CellError(msg)
        # plotly (the view model's charts): loaded when a stored session is read
        from nsight_lab.viewmodel.findings import stored_findings  # noqa: PLC0415

        with RunStore() as store:
            return stored_findings(store, ids[0])[1]
