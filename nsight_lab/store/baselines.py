"""The baseline methods of :class:`~nsight_lab.store.run_store.RunStore` (a mixin).

A baseline is a name that points at one session (``%nsight baseline set NAME [ID]``);
setting it again moves it. A session profiled with ``--baseline NAME`` keeps its
overall verdict against that baseline (``session_verdicts``), so the history can
badge regressions without comparing anything. Names are checked by the caller
(:func:`nsight_lab.analysis.baselines.check_name`); this only reads and writes rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import utc_now
from nsight_lab.store.connection import StoreBase
from nsight_lab.store.rows import in_list

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True)
class Baseline:
    """A named session to compare against."""

    name: str
    session_id: int
    set_at: str

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape."""
        return {"name": self.name, "session_id": self.session_id, "set_at": self.set_at}


@dataclass(frozen=True)
class StoredVerdict:
    """A session's overall verdict against the baseline it was profiled with."""

    session_id: int
    baseline_name: str
    baseline_session_id: int | None
    """The baseline's session then; ``None`` once that session was deleted."""
    verdict: str | None
    """``slower``, ``faster``, ``no change``; ``None`` when nothing was judged."""
    threshold: float
    computed_at: str

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape (``baseline_verdict`` of a session)."""
        return {
            "baseline": self.baseline_name,
            "baseline_session_id": self.baseline_session_id,
            "verdict": self.verdict,
            "threshold": self.threshold,
            "computed_at": self.computed_at,
        }


class BaselineQueries(StoreBase):
    """Baseline methods of :class:`~nsight_lab.store.run_store.RunStore`."""

    def set_baseline(self, name: str, session_id: int) -> Baseline:
        """Point baseline ``name`` at ``session_id`` (creating or moving it).

        Raises:
            NotFoundError: No session has that id.
            StoreError: The store is closed, read-only or the write failed.
        """
        set_at = utc_now()
        with self._write("set a baseline") as conn:
            found = conn.execute(
                "SELECT id FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if found is None:
                raise self._not_found(session_id)
            conn.execute(
                "INSERT INTO baselines (name, session_id, set_at) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE"
                " SET session_id = excluded.session_id, set_at = excluded.set_at",
                (name, session_id, set_at),
            )
        return Baseline(name, session_id, set_at)

    def get_baseline(self, name: str) -> Baseline | None:
        """Return baseline ``name``, or ``None`` when there is none of that name.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("read a baseline") as conn:
            row = conn.execute(
                "SELECT name, session_id, set_at FROM baselines WHERE name = ?",
                (name,),
            ).fetchone()
        return None if row is None else Baseline(str(row[0]), int(row[1]), str(row[2]))

    def list_baselines(self) -> list[Baseline]:
        """Return every baseline, by name.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("list baselines") as conn:
            rows = conn.execute(
                "SELECT name, session_id, set_at FROM baselines ORDER BY name"
            ).fetchall()
        return [Baseline(str(n), int(s), str(t)) for n, s, t in rows]

    def latest_completed_session(self) -> int | None:
        """Return the id of the newest completed session, ``None`` when there is none.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        with self._read("find the latest completed session") as conn:
            row = conn.execute(
                "SELECT id FROM sessions WHERE status = 'completed'"
                " ORDER BY id DESC LIMIT 1"
            ).fetchone()
        return None if row is None else int(row[0])

    def set_session_verdict(
        self,
        session_id: int,
        *,
        baseline_name: str,
        baseline_session_id: int,
        verdict: str | None,
        threshold: float,
    ) -> None:
        """Keep ``session_id``'s overall verdict against a baseline (replacing one).

        Raises:
            StoreError: The store is closed, read-only or the write failed.
        """
        with self._write("keep a session's verdict") as conn:
            conn.execute(
                "DELETE FROM session_verdicts WHERE session_id = ?", (session_id,)
            )
            conn.execute(
                "INSERT INTO session_verdicts (session_id, baseline_name,"
                " baseline_session_id, verdict, threshold, computed_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    baseline_name,
                    baseline_session_id,
                    verdict,
                    threshold,
                    utc_now(),
                ),
            )

    def session_verdicts(self, session_ids: Sequence[int]) -> dict[int, StoredVerdict]:
        """Return the kept verdicts of those of ``session_ids`` that have one.

        Raises:
            StoreError: The store is closed or unreadable.
        """
        ids, marks = in_list(session_ids)
        if not ids:
            return {}
        with self._read("read sessions' verdicts") as conn:
            rows = conn.execute(
                "SELECT session_id, baseline_name, baseline_session_id, verdict,"  # noqa: S608  (constant SQL)
                " threshold, computed_at FROM session_verdicts"
                f" WHERE session_id IN ({marks})",
                ids,
            ).fetchall()
        return {int(row[0]): verdict_from_row(row) for row in rows}


def verdict_from_row(row: Sequence[Any]) -> StoredVerdict:
    """The verdict a row of ``session_verdicts`` holds (its columns in order)."""
    return StoredVerdict(
        session_id=int(row[0]),
        baseline_name=str(row[1]),
        baseline_session_id=None if row[2] is None else int(row[2]),
        verdict=None if row[3] is None else str(row[3]),
        threshold=float(row[4]),
        computed_at=str(row[5]),
    )
