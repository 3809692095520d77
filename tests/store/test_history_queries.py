"""The history's queries at scale (issue 32): same answers, and the plans they need.

``benchmarks/history_scale.py`` times the history at 100,000 sessions / 10,000,000
runs; what made it fast there is kept here, on small stores, on both engines:

- a page of the session list reads the page's ids first (from the index alone) and
  only those rows, and the total of a filter by annotation alone is counted in
  ``session_annotations``' index: the answers are those of the query before
  (:func:`_old_page`, the statement of ``9e4a4c2``), whatever the filters, limit and
  offset (a property test);
- the first page walks the primary key backwards and stops after its rows (no sort
  of every session), a filter by annotation reads ``session_annotations``' index,
  and a SQLite store's open finds its running sessions through ``sessions_status``
  (``EXPLAIN QUERY PLAN``; PostgreSQL: ``EXPLAIN`` on an analysed store).
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nsight_lab.store.dialect import POSTGRES, SQLITE
from nsight_lab.store.listing import page_query
from nsight_lab.store.liveness import RUNNING_HERE_SQL
from nsight_lab.store.rows import SESSION_COLUMNS, session_filter
from nsight_lab.store.run_store import RunStore
from tests.conftest import POSTGRES_ONLY, SQLITE_ONLY
from tests.store.test_run_store import raw, record

if TYPE_CHECKING:
    from pathlib import Path

NOTEBOOKS = ("a.ipynb", "b.ipynb", None)
DEVICES = ("H100", "H200", None)
REGIONS = ("matmul", "softmax", "gelu", "copy")
STATUSES = ("completed", "failed", "interrupted")


def _old_page(
    filters: dict[str, Any],
    postgres: bool,  # noqa: FBT001
    limit: int | None,
    offset: int,
) -> tuple[str, list[Any]]:
    """The session list's statement before issue 32 (``9e4a4c2``), and its params."""
    where, params = session_filter(filters, "ILIKE" if postgres else "LIKE")  # type: ignore[arg-type]
    configs = "configs_json::json" if postgres else "configs_json"
    inner = SESSION_COLUMNS.replace(
        "configs_json", "substr(configs_json, 1, 8192) AS configs_json"
    )
    page_cols = ", ".join(f"p.{c.strip()}" for c in SESSION_COLUMNS.split(","))
    sql = (
        f"SELECT t.total, {page_cols}, p.run_count, p.runs_done,"  # noqa: S608
        " v.session_id, v.baseline_name, v.baseline_session_id, v.verdict,"
        " v.threshold, v.computed_at, p.config_count"
        f" FROM (SELECT count(*) AS total FROM sessions{where}) AS t"
        f" LEFT JOIN (SELECT {inner}, run_count, runs_done,"
        f" json_array_length({configs}) AS config_count"
        f" FROM sessions{where} ORDER BY id DESC LIMIT ? OFFSET ?) AS p ON 1 = 1"
        " LEFT JOIN session_verdicts AS v ON v.session_id = p.id"
        " ORDER BY p.id DESC"
    )
    no_limit = POSTGRES.no_limit if postgres else SQLITE.no_limit
    return sql, [*params, *params, no_limit if limit is None else limit, offset]


def _fill(store: RunStore, n: int) -> list[str]:
    """``n`` sessions of mixed notebooks, devices, regions and statuses; their times."""
    times = []
    for i in range(n):
        s = store.create_session(
            backend=("cpu", "events")[i % 2],
            name=f"s{i}",
            notebook=NOTEBOOKS[i % 3],
            device=DEVICES[(i // 3) % 3],
            configs=[{"n": k} for k in range(i % 4)],
            cell_source=f"cell {i} " + REGIONS[i % 4],
        )
        times.append(s.created_at)
        names = [r for k, r in enumerate(REGIONS) if (i >> k) & 1]
        if names:
            store.add_runs([record(s.id, run_index=0, annotation=r) for r in names])
        if i % 5:
            store.finish_session(s.id, STATUSES[i % 3])  # type: ignore[arg-type]
        if i % 7 == 0 and i:
            store.set_session_verdict(
                s.id,
                baseline_name="base",
                baseline_session_id=1,
                verdict="faster",
                threshold=0.05,
            )
    return times


def _filters(times: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    values: dict[str, st.SearchStrategy[Any]] = {
        "notebook": st.sampled_from([*NOTEBOOKS[:2], "none.ipynb"]),
        "annotation": st.sampled_from([*REGIONS, "absent"]),
        "device": st.sampled_from([*DEVICES[:2], "B200"]),
        "backend": st.sampled_from(["cpu", "events", "pm"]),
        "status": st.sampled_from(["running", *STATUSES]),
        "since": st.sampled_from(times),
        "until": st.sampled_from(times),
        "text": st.sampled_from(["", "cell 1", "softmax", "S3", "zzz"]),
    }
    return st.dictionaries(st.sampled_from(sorted(values)), st.none()).flatmap(
        lambda keys: st.fixed_dictionaries({k: values[k] for k in keys})
    )


def test_a_page_answers_as_the_query_before(store_location: Path | str) -> None:
    db: Any = store_location
    postgres = isinstance(db, str)
    dialect = POSTGRES if postgres else SQLITE
    with RunStore(db) as store:
        times = _fill(store, 40)
    # Opened once: a PostgreSQL open marks the sessions left running interrupted.
    store = RunStore(db)
    conn = raw(db)

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        filters=_filters(times),
        limit=st.sampled_from([None, 0, 1, 7, 50]),
        offset=st.integers(0, 45),
    )
    def check(filters: dict[str, Any], limit: int | None, offset: int) -> None:
        old = conn.execute(*_old_page(filters, postgres, limit, offset)).fetchall()
        new = conn.execute(*page_query(filters, dialect, limit, offset)).fetchall()  # type: ignore[arg-type]
        assert [tuple(r) for r in new] == [tuple(r) for r in old]
        page = store.list_session_page(limit=limit, offset=offset, **filters)
        assert page.total == old[0][0] == store.count_sessions(**filters)
        assert [s.session.id for s in page.sessions] == [
            r[1] for r in old if r[1] is not None
        ]

    try:
        check()
    finally:
        conn.close()
        store.close()


def _sqlite_plan(db: Path, sql: str, params: list[Any]) -> list[tuple[int, int, str]]:
    with contextlib.closing(raw(db)) as conn:
        rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return [(int(r[0]), int(r[1]), str(r[3])) for r in rows]


@SQLITE_ONLY
def test_the_first_page_walks_the_primary_key_on_sqlite(store_location: Path) -> None:
    with RunStore(store_location) as store:
        _fill(store, 5)
    plan = _sqlite_plan(store_location, *page_query({}, SQLITE, 50, 0))
    # Sessions are walked once, in rowid (primary key) order, so the LIMIT stops the
    # walk after the page; their rows are then read by key, and the total from a
    # covering index. A sort of them all (a temporary B-tree below the top, where
    # only the page's rows are sorted) would mean the order is not the key's.
    scans = sorted(d for _, _, d in plan if d.startswith("SCAN"))
    assert len(scans) == 3
    assert (scans[0], scans[2]) == ("SCAN sessions", "SCAN t")
    assert scans[1].startswith("SCAN sessions USING COVERING INDEX")
    assert all(parent == 0 for _, parent, d in plan if "TEMP B-TREE" in d)
    assert not [d for _, _, d in plan if "runs" in d]


@SQLITE_ONLY
def test_a_filter_by_annotation_reads_its_index_on_sqlite(store_location: Path) -> None:
    with RunStore(store_location) as store:
        _fill(store, 5)
    plan = _sqlite_plan(
        store_location, *page_query({"annotation": "gelu"}, SQLITE, 50, 0)
    )
    details = [d for _, _, d in plan]
    index = (
        "SEARCH session_annotations USING COVERING INDEX session_annotations_annotation"
    )
    assert sum(d.startswith(index) for d in details) == 2  # the total and the page
    # Sessions are looked up for the page's ids and rows only, never for the total.
    assert sum(d.startswith("SEARCH sessions") for d in details) == 2
    assert not [d for d in details if d.startswith("SCAN") and "session" in d]
    assert not [d for d in details if "runs" in d]


@SQLITE_ONLY
def test_an_open_finds_running_sessions_by_status(store_location: Path) -> None:
    with RunStore(store_location) as store:
        _fill(store, 3)
    plan = _sqlite_plan(store_location, RUNNING_HERE_SQL, ["host"])
    assert [d for _, _, d in plan] == [
        "SEARCH sessions USING INDEX sessions_status (status=?)"
    ]


def _pg_plan(db: str, sql: str, params: list[Any]) -> dict[str, Any]:
    with contextlib.closing(raw(db)) as conn:
        row = conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()
    plan = row[0] if not isinstance(row[0], str) else json.loads(row[0])
    return dict(plan[0]["Plan"])


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    out = [plan]
    for child in plan.get("Plans", ()):
        out.extend(_nodes(child))
    return out


def _analysed_store(db: str, sessions: int) -> None:
    """``sessions`` more sessions (one region each, a tenth ``rare``), analysed."""
    with RunStore(db) as store:
        _fill(store, 5)
    with contextlib.closing(raw(db)) as conn:
        conn.execute(
            # A cell's source of 600 characters: rows as wide as a real session's.
            "INSERT INTO sessions (backend, status, created_at, schema_version, uuid,"
            " host, cell_source) SELECT 'cpu', 'completed',"
            " '2026-01-01T00:00:00+00:00', 6, md5(g::text), 'h', repeat('x', 600)"
            " FROM generate_series(1, ?) AS g",
            (sessions,),
        )
        conn.execute(
            "INSERT INTO session_annotations (session_id, annotation)"
            " SELECT id, CASE WHEN id % 10 = 0 THEN 'rare' ELSE 'common' END"
            " FROM sessions"
        )
        conn.execute("VACUUM ANALYZE")


@POSTGRES_ONLY
def test_the_first_page_walks_the_primary_key_on_postgres(store_location: str) -> None:
    _analysed_store(store_location, 3_000)
    plan = _pg_plan(store_location, *page_query({}, POSTGRES, 50, 0))
    nodes = _nodes(plan)
    (limit,) = [n for n in nodes if n["Node Type"] == "Limit"]
    (scan,) = limit["Plans"]
    assert scan["Node Type"] in {"Index Only Scan", "Index Scan"}
    assert (scan["Index Name"], scan["Scan Direction"]) == ("sessions_pkey", "Backward")
    # No sort below the page's limit: the only sort is of the page's rows.
    assert all(n["Plan Rows"] <= 50 for n in nodes if n["Node Type"] == "Sort")
    assert not [n for n in nodes if n.get("Relation Name") == "runs"]


@POSTGRES_ONLY
def test_a_filter_by_annotation_reads_its_index_on_postgres(
    store_location: str,
) -> None:
    _analysed_store(store_location, 3_000)
    sql, params = page_query({"annotation": "rare"}, POSTGRES, 50, 0)
    nodes = _nodes(_pg_plan(store_location, sql, params))
    index = "session_annotations_annotation"
    # The total and the page's ids: each through the annotation's index.
    reads = [n for n in nodes if n.get("Relation Name") == "session_annotations"]
    assert len(reads) == 2
    for node in reads:
        used = node if node["Node Type"] != "Bitmap Heap Scan" else node["Plans"][0]
        assert used.get("Index Name") == index
    # Sessions are read for the page's ids and rows only, never for the total.
    assert len([n for n in nodes if n.get("Relation Name") == "sessions"]) == 2
    assert not [
        n
        for n in nodes
        if n["Node Type"] == "Seq Scan"
        and n["Relation Name"] in {"sessions", "session_annotations", "runs"}
    ]
