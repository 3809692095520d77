"""What a profile is asked for and what it gives back, and what shows it running."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

    import pandas as pd

    from nsight_lab.contract.progress import Progress
    from nsight_lab.contract.records import RunRecord, SessionStatus
    from nsight_lab.results import DeriveSpec, InfoColumn
    from nsight_lab.roofline.placement import Peaks

Display = Literal["widget", "text", "none"]
"""How a running profile shows: the inline widget, progress lines on stderr, or not."""

MAX_MESSAGE_CHARS = 300
"""Longest error message the magic shows (the options already quote values short)."""


class View(Protocol):
    """What shows a running profile (:class:`~nsight_lab.views.live.WidgetView`)."""

    def update(
        self,
        progress: Progress,
        records: Sequence[RunRecord] = (),
        *,
        force: bool = False,
    ) -> None:
        """Take the progress after a change, with the records that came with it."""

    def finish(
        self,
        records: Sequence[RunRecord],
        peaks: Peaks | None = None,
        *,
        status: SessionStatus = "completed",
        message: str = "",
        verdicts: Mapping[str, Any] | None = None,
    ) -> None:
        """Show how the profile ended (and the verdicts against ``--baseline``)."""


@dataclass
class Profiled:
    """A finished profile: its session, records and results."""

    session_id: int
    frame: pd.DataFrame | None
    """The results DataFrame; ``None`` where the request asked for none."""
    records: list[RunRecord]
    notes: list[str] = field(default_factory=list)
    csv_files: list[Path] = field(default_factory=list)
    verdicts: dict[str, Any] | None = None
    """The verdict table against ``--baseline`` (``VerdictTable.to_json``)."""


@dataclass
class ProfileRequest:
    """What :func:`profile` needs beyond the plan and the cell.

    Attributes:
        derive: The derived metrics and how they are computed.
        notebook: The notebook's path, stored with the session.
        display: How the running profile shows.
        info: Info collectors' columns, filled while the runs go.
        config_values: Per config, the values the DataFrame shows (the objects of an
            explicit config list); the stored configs by default.
        csv_tag: The ``<name>-<id>`` of the CSV file names, from the session id.
        label: What the progress lines call the profile.
        notes: What the user should know about the session beyond the backend's
            notes (a notebook function used in place of a built-in one, ...).
        metrics: The metrics the DataFrame has rows for (nsight-python's
            ``metrics``, whose frame has a duration row only when asked for), with
            the derived ones; None: the duration and every counter (the magic's).
        frame: Build the results DataFrame (pandas). ``False`` (a cell without
            ``--out`` or ``--output-csv``): only what building it checks and
            computes runs (:func:`nsight_lab.results.rows.gather_runs`), so
            pandas is not imported.
    """

    derive: DeriveSpec
    notebook: str | None = None
    display: Display = "widget"
    info: Sequence[InfoColumn] = ()
    config_values: Sequence[dict[str, object]] | None = None
    csv_tag: Callable[[int], str] | None = None
    label: str = "nsight-lab"
    notes: Sequence[str] = ()
    metrics: Sequence[str] | None = None
    frame: bool = True
