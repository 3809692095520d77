"""Baselines: named sessions, and the verdict table of a session against another.

``%nsight baseline set NAME [ID]`` (and ``nsight-lab baseline set``) names a session;
``%%nsight --baseline NAME`` profiles a cell and judges it against that session;
``nsight-lab compare A B`` judges any two (ids or names). The statistics are the
comparison's (:mod:`nsight_lab.analysis.compare`, intervals from
:mod:`nsight_lab.stats`);
this module resolves names, builds the :class:`VerdictTable` (the one shape the
widget, the static page, the server and the CLI show) and keeps a profiled session's
overall verdict in the store for the history's regression badge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.compare import (
    CONFIDENCE,
    DEFAULT_THRESHOLD,
    METHOD,
    Comparison,
    Scope,
    SessionVerdict,
    compare,
    session_verdict,
)
from nsight_lab.analysis.verdict_cells import legend_text, tolerances, verdict_cells
from nsight_lab.errors import BaselineError
from nsight_lab.options import read_option, shown, whole_number

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.store.baselines import Baseline
    from nsight_lab.store.run_store import RunStore

__all__ = [
    "MAX_THRESHOLD_PCT",
    "VerdictTable",
    "check_name",
    "check_threshold_pct",
    "judge_profiled",
    "require_baseline",
    "resolve",
    "set_baseline",
    "verdict_table",
]

MAX_THRESHOLD_PCT = 99.0
"""Largest ``--threshold`` (a ratio 1 - t must stay positive)."""
_MAX_ID = 2**63 - 1


def check_name(raw: str, what: str = "--baseline") -> str:
    """Return ``raw`` if it is a valid baseline name, else raise (one line, ``what``).

    The syntax is the ``--baseline`` option's (:mod:`nsight_lab.options`): a letter
    or ``_`` first, so a name never reads as a session id.

    Raises:
        BaselineError: ``raw`` is not a valid name.
    """
    return str(read_option("--baseline", raw, what))


def check_threshold_pct(value: float, what: str = "--threshold") -> float:
    """Return ``value`` (a percentage) as a fraction, or raise if out of range.

    Raises:
        BaselineError: Not a finite number in ``[0, MAX_THRESHOLD_PCT]``.
    """
    if not (math.isfinite(value) and 0 <= value <= MAX_THRESHOLD_PCT):
        msg = (
            f"{what}: {value!r} is not a percentage from 0 to {MAX_THRESHOLD_PCT:g}; "
            "give the change to ignore, e.g. 2 for 2 %"
        )
        raise BaselineError(msg)
    return value / 100.0


def _known(store: RunStore) -> str:
    names = [b.name for b in store.list_baselines()]
    if not names:
        return "there are no baselines yet"
    listed = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")  # noqa: PLR2004
    return f"baselines: {listed}"


def require_baseline(store: RunStore, name: str, what: str = "--baseline") -> Baseline:
    """Return baseline ``name``, refusing a bad or unknown name in one line.

    Raises:
        BaselineError: The name is malformed or no baseline has it (names the known
            ones and how to set one).
    """
    check_name(name, what)
    found = store.get_baseline(name)
    if found is None:
        msg = (
            f"{what}: no baseline named {shown(name)} ({_known(store)}); "
            f"set one with %nsight baseline set {name} [ID] "
            f"(or nsight-lab baseline set {name} [ID])"
        )
        raise BaselineError(msg)
    return found


def resolve(store: RunStore, ref: str, what: str) -> int:
    """Return the session id ``ref`` names: a session id, or a baseline's name.

    Raises:
        BaselineError: ``ref`` is neither a known session id nor a baseline's name.
        NotFoundError: ``ref`` is an id that no session has.
    """
    text = ref.strip()
    number = whole_number(text, 1, _MAX_ID) if text[:1].isdigit() else None
    if number is not None:
        store.get_session(number)  # raises NotFoundError naming the store
        return number
    if text[:1].isdigit():
        msg = f"{what}: {shown(ref)} is not a session id (a whole number from 1)"
        raise BaselineError(msg)
    return require_baseline(store, text, what).session_id


def set_baseline(store: RunStore, name: str, ref: str | None) -> Baseline:
    """Name a session as baseline ``name`` (moving the name if it exists).

    ``ref`` is a session id or another baseline's name; ``None`` takes the latest
    completed session.

    Raises:
        BaselineError: A malformed name or reference, or no completed session yet.
        NotFoundError: ``ref`` is an id that no session has.
    """
    check_name(name, "baseline name")
    if ref is None:
        latest = store.latest_completed_session()
        if latest is None:
            msg = (
                f"cannot set baseline {name}: the store has no completed session yet; "
                "profile a cell first, or give a session id"
            )
            raise BaselineError(msg)
        session_id = latest
    else:
        session_id = resolve(store, ref, "session")
    return store.set_baseline(name, session_id)


@dataclass(frozen=True)
class VerdictTable:
    """Session b against a: per region, metric and config, a ratio and a verdict."""

    a: int
    """The baseline's session id."""
    b: int
    """The candidate's session id."""
    baseline: str | None
    """The baseline's name, when a was named by one."""
    threshold: float
    """The verdicts' threshold, a fraction."""
    rows: list[Comparison]
    scope: Scope
    overall: SessionVerdict

    @property
    def regression(self) -> bool:
        """Whether some timed row is slower beyond noise and threshold."""
        return self.overall.verdict == "slower"

    @property
    def inconclusive(self) -> bool:
        """Whether some timed row is inconclusive (clocks): ``--strict`` fails it."""
        return self.overall.inconclusive > 0

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape (``verdicts`` of a bundle, ``GET compare``'s).

        Plain JSON: a ratio that is not a number (a zero median) is ``null``. Each
        row carries its display strings (``cells``,
        :func:`nsight_lab.analysis.verdict_cells.verdict_cells`); the table carries
        what it was judged with (``tolerances``) and its ``legend``, so that views
        show them rather than know them.
        """
        rows = []
        for row in self.rows:
            wire = _finite(row.to_json())
            wire["cells"] = verdict_cells(wire)
            rows.append(wire)
        out: dict[str, Any] = _finite(
            {
                "a": self.a,
                "b": self.b,
                "baseline": self.baseline,
                "threshold": self.threshold,
                "method": METHOD,
                "confidence": CONFIDENCE,
                "verdict": self.overall.to_json(),
                "rows": rows,
                "scope": self.scope.to_json(),
                "tolerances": tolerances(),
            }
        )
        out["legend"] = legend_text(out)
        return out


def _finite(value: Any) -> Any:  # noqa: ANN401  (a JSON value)
    """``value`` with every non-finite float replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def table_of(  # noqa: PLR0913  (the two sides and how they were named)
    runs_a: Iterable[RunRecord],
    runs_b: Iterable[RunRecord],
    *,
    a: int,
    b: int,
    baseline: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> VerdictTable:
    """Build the :class:`VerdictTable` of runs b against runs a.

    Raises:
        ValueError: ``threshold`` is outside ``[0, 1)``.
    """
    rows, scope = compare(runs_a, runs_b, threshold=threshold)
    return VerdictTable(
        a=a,
        b=b,
        baseline=baseline,
        threshold=threshold,
        rows=rows,
        scope=scope,
        overall=session_verdict(rows, threshold),
    )


def verdict_table(
    store: RunStore,
    a: int,
    b: int,
    *,
    baseline: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> VerdictTable:
    """Build the :class:`VerdictTable` of stored session b against stored session a.

    Raises:
        NotFoundError: Either session is unknown.
        StoreError: The store cannot be read.
    """
    store.get_session(a)
    store.get_session(b)
    return table_of(
        _streamed(store, a),
        _streamed(store, b),
        a=a,
        b=b,
        baseline=baseline,
        threshold=threshold,
    )


def _streamed(store: RunStore, session_id: int) -> Iterator[RunRecord]:
    """A session's runs, read a page at a time (never a list of every record).

    The comparison keeps each run's finite values (a float each, exact medians
    and intervals over every run), not its record: issue 29's 1,000,000-run
    sessions held every record of both sides at once (2.3 GB).
    """
    for page in store.run_pages(session_id):
        yield from page


def judge_profiled(
    store: RunStore, session_id: int, records: Iterable[RunRecord], name: str
) -> VerdictTable:
    """Judge a just-profiled session against baseline ``name``; keep its verdict.

    The overall verdict goes to the store (``session_verdicts``), so the history
    badges the session without comparing again; the baseline's session is read
    from the store, the candidate's runs are the ones in hand.

    Raises:
        BaselineError: No baseline of that name (any more).
        NotFoundError: The baseline's session was deleted meanwhile.
        StoreError: The store cannot be read or written.
    """
    found = require_baseline(store, name)
    runs_a = store.runs(found.session_id)
    table = table_of(runs_a, records, a=found.session_id, b=session_id, baseline=name)
    store.set_session_verdict(
        session_id,
        baseline_name=name,
        baseline_session_id=found.session_id,
        verdict=table.overall.verdict,
        threshold=table.threshold,
    )
    return table
