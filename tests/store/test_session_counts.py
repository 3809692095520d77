"""What a history row says of a session: its runs and regions (issue 20).

The session list reads all of it in one or two statements
(``RunStore.list_session_page``).

A run is one execution of the cell for one config (what ``--runs`` and the progress
line count), whatever the number of regions: a 3 x 10 cell of two regions stores 60
records and has 30 runs. Both engines.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from nsight_lab.errors import NotFoundError, QueryError
from nsight_lab.store.run_store import RunStore
from nsight_lab.viewmodel.pages import sessions_page
from tests.store.test_run_store import record

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def test_runs_and_regions_of_a_page_of_sessions(store_location: Path | str) -> None:
    db: Any = store_location
    with RunStore(db) as store:
        two = store.create_session(backend="events").id
        store.add_runs([
            record(two, run_index=i, config_index=c, config={"n": c}, annotation=name)
            for c in range(3)
            for i in range(10)
            for name in ("mlp_up", "gelu")
        ])  # fmt: skip
        half = store.create_session(backend="cpu").id
        store.add_runs([record(half, run_index=0, annotation="only")])
        empty = store.create_session(backend="cpu").id
        ids = [two, half, empty, 999]
        assert store.run_counts([two])[two] == 60  # records: one per region
        assert store.runs_done_counts(ids) == {two: 30, half: 1}
        assert store.regions_of(ids) == {two: ["gelu", "mlp_up"], half: ["only"]}
        assert store.runs_done_counts([]) == {}
        assert store.regions_of([]) == {}
        # The one-session count the progress line uses agrees.
        assert store.runs_done(two)[0] == 30


def _listing_store(store: RunStore) -> tuple[int, int, int]:
    """Three sessions: two regions and a verdict, one region, no runs."""
    two = store.create_session(backend="events", notebook="a.ipynb").id
    store.add_runs([
        record(two, run_index=i, config_index=c, config={"n": c}, annotation=name)
        for c in range(2)
        for i in range(3)
        for name in ("mlp_up", "gelu")
    ])  # fmt: skip
    store.set_session_verdict(
        two,
        baseline_name="main",
        baseline_session_id=two,
        verdict="regressed",
        threshold=0.02,
    )
    half = store.create_session(backend="cpu", notebook="b.ipynb").id
    store.add_runs([record(half, run_index=0, annotation="only")])
    empty = store.create_session(backend="cpu", notebook="b.ipynb").id
    return two, half, empty


def test_one_read_lists_a_page_with_counts_regions_and_verdicts(
    store_location: Path | str,
) -> None:
    db: Any = store_location
    with RunStore(db) as store:
        two, half, empty = _listing_store(store)
        page = store.list_session_page(limit=2, offset=0)
        assert page.total == 3
        assert [row.session.id for row in page.sessions] == [empty, half]
        full = store.list_session_page(limit=None)
        by_id = {row.session.id: row for row in full.sessions}
        assert [row.session.id for row in full.sessions] == [empty, half, two]
        assert (by_id[two].run_count, by_id[two].runs_done) == (12, 6)
        assert by_id[two].regions == ["gelu", "mlp_up"]
        verdict = by_id[two].verdict
        assert verdict is not None
        assert (verdict.baseline_name, verdict.verdict) == ("main", "regressed")
        assert verdict == store.session_verdicts([two])[two]
        assert (by_id[half].run_count, by_id[half].runs_done) == (1, 1)
        assert by_id[half].regions == ["only"]
        assert by_id[half].verdict is None
        assert (by_id[empty].run_count, by_id[empty].regions) == (0, [])
        # Filters and paging mean what they mean for list/count_sessions.
        mine = store.list_session_page(notebook="b.ipynb", limit=1, offset=1)
        assert mine.total == store.count_sessions(notebook="b.ipynb") == 2
        assert [row.session.id for row in mine.sessions] == [half]
        named = store.list_session_page(annotation="gelu")
        assert [row.session.id for row in named.sessions] == [two]
        past = store.list_session_page(limit=5, offset=10)
        assert (past.total, past.sessions) == (3, [])
        none = store.list_session_page(status="failed")
        assert (none.total, none.sessions) == (0, [])
        with pytest.raises(QueryError, match="invalid offset -1"):
            store.list_session_page(offset=-1)


class _CountingConnection:
    """A read connection that counts its statements."""

    def __init__(self, conn: Any, seen: list[str]) -> None:
        self._conn = conn
        self._seen = seen

    def execute(self, sql: str, *args: Any) -> Any:
        self._seen.append(sql)
        return self._conn.execute(sql, *args)


def test_a_sessions_listing_is_at_most_two_statements(
    store_location: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db: Any = store_location
    with RunStore(db) as store:
        two, half, empty = _listing_store(store)
        expected = sessions_page(store, {}, limit=20, offset=0)
        read = store._read  # noqa: SLF001  (the test counts what reads run)
        seen: list[str] = []

        @contextlib.contextmanager
        def counted(action: str) -> Iterator[Any]:
            with read(action) as conn:
                yield _CountingConnection(conn, seen)

        monkeypatch.setattr(store, "_read", counted)
        body = sessions_page(store, {}, limit=20, offset=0)
    assert len(seen) <= 2, seen  # the six-call version ran six statements
    assert body == expected
    rows = {s["id"]: s for s in body["sessions"]}
    assert body["total"] == 3
    assert (rows[two]["run_count"], rows[two]["runs_done"]) == (12, 6)
    assert rows[two]["regions"] == ["gelu", "mlp_up"]
    assert rows[two]["baseline_verdict"]["verdict"] == "regressed"
    assert rows[half]["baseline_verdict"] is None
    assert rows[empty]["regions"] == []


def test_an_unknown_session_filter_is_refused_in_one_line(
    store_location: Path | str,
) -> None:
    db: Any = store_location
    with RunStore(db) as store:
        for read in (
            store.list_sessions,
            store.count_sessions,
            store.list_session_page,
        ):
            with pytest.raises(QueryError, match="unknown session filter 'gpu'"):
                read(gpu="H200")  # type: ignore[call-arg]


def test_a_session_state_is_what_the_separate_reads_say(
    store_location: Path | str,
) -> None:
    """``session_state`` (a live refresh's one round trip) agrees with the reads it
    stands for: counts, kept verdict, newest run; a missing session is an error."""
    db: Any = store_location
    with RunStore(db) as store:
        two, half, empty = _listing_store(store)
        for sid in (two, half, empty):
            state = store.session_state(sid)
            assert state.session == store.get_session(sid)
            assert state.run_count == store.run_counts([sid])[sid]
            assert (state.runs_done, state.newest) == store.runs_done(sid)
            assert state.verdict == store.session_verdicts([sid]).get(sid)
            tail = store.runs_tail(sid, limit=1)
            assert [state.newest_run] == tail if tail else state.newest_run is None
        assert store.session_state(two).newest == (1, 2)  # the last stored
        assert store.session_state(two).verdict is not None
        assert store.session_state(empty).newest is None
        assert store.session_state(empty).verdict is None
        with pytest.raises(NotFoundError, match="999"):
            store.session_state(999)
