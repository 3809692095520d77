"""Fill a run store with many sessions fast, each row as the store's writer writes it.

Issue 32's history at 100,000 sessions / 10,000,000 runs: the store's own write path
(:meth:`RunStore.add_runs`, a 500-run transaction at a time) fills 10 M runs in hours
on the 2-core machine, so this writes **one** session through it (the template:
``create_session``, ``add_runs`` in the writer's 500-record batches,
``finish_session``), reads every row that session left in every table back, and
copies those rows for each further session with bulk statements (SQLite:
``executemany`` in one transaction per chunk; PostgreSQL: ``COPY``), through the
store's own schema and indexes, as they are. Per copy only what differs between two
real sessions changes: ids, name, notebook, uuid, times, region names (a vocabulary,
so a filter by annotation matches a share of the history) and durations (jittered).
Any table with a ``session_id`` column is copied, so a table a later schema adds is
filled too. ``tests/benchmarks/test_history_fill.py`` checks that a filled store
holds what the writer would have written.

Runs as a child with ``PYTHONPATH`` set to the nsight_lab whose schema the store
gets (``history_scale.py`` fills with the "before" code, then opens it with the
"after" code, which migrates it)::

    python benchmarks/history_fill.py LOCATION SESSIONS
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore

CONFIGS: tuple[dict[str, str | int], ...] = (
    {"n": 4096, "dtype": "float16"},
    {"n": 8192, "dtype": "float16"},
)
RUNS = 25
TEMPLATE_REGIONS = ("region_a", "region_b")
RUNS_PER_SESSION = len(CONFIGS) * RUNS * len(TEMPLATE_REGIONS)
"""Stored runs (records) per session: 2 configs x 25 runs x 2 regions = 100."""
VOCABULARY = tuple(
    f"{op}_{shape}"
    for op in ("matmul", "softmax", "layernorm", "attention", "gelu")
    for shape in ("small", "medium", "large", "xl")
)
"""Region names: a session's first region is ``VOCABULARY[i % 20]``."""
SECOND = tuple(f"copy_{k}" for k in range(20))
"""A session's second region is ``SECOND[i % 20]``, so session ``i`` and ``i + 20``
have the same regions (what a compare of them needs)."""
RARE = "rare_kernel"
"""Every :data:`RARE_EVERY`-th session's second region: a filter matching few."""
RARE_EVERY = 10_000
NOTEBOOKS = tuple(
    f"work/project-{k}/notebook-{j}.ipynb" for k in range(20) for j in range(5)
)
SPACING = dt.timedelta(seconds=37)
"""Time between two sessions' starts (100,000 sessions: six weeks of history)."""
CHUNK = 1_000
"""Sessions per bulk transaction."""


def regions_of(i: int) -> tuple[str, str]:
    """Session ``i``'s (0-based) two region names, in template order."""
    second = RARE if i % RARE_EVERY == RARE_EVERY - 1 else SECOND[i % 20]
    return VOCABULARY[i % 20], second


def template_records(session_id: int) -> list[Any]:
    """The template session's records: what an ``events`` profile hands the writer."""
    rng = random.Random(1)  # noqa: S311  (jitter)
    out = []
    for c, config in enumerate(CONFIGS):
        for r in range(RUNS):
            for k, region in enumerate(TEMPLATE_REGIONS):
                out.append(
                    RunRecord(
                        session_id=session_id, config_index=c, config=dict(config),
                        run_index=r, annotation=region,
                        duration_ns=(1.0 + c) * (2.0 + k) * 1e5 * rng.gauss(1, 0.02),
                        backend="events",
                        kernels=(f"ampere_fp16_s16816gemm_{c}_{k}",),
                        metrics={"tflops": 400.0 * rng.gauss(1, 0.02)},
                        telemetry=Telemetry(
                            sm_clock_mhz=1980.0, mem_clock_mhz=2619.0,
                            temperature_c=45.0 + r * 0.1, power_w=350.0,
                        ),
                    )
                )  # fmt: skip
    return out


@dataclass
class Template:
    """The rows the template session left, by table: column names and values."""

    tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]]


def write_template(home: Path) -> Template:
    """Write the template session through the store's API; read its rows back."""
    path = home / "template.sqlite"
    with RunStore(path) as store:
        s = store.create_session(
            backend="events", backend_reason="auto: events (CUDA events, no counters)",
            name="template", notebook=NOTEBOOKS[0], device="NVIDIA H100 80GB HBM3",
            options={"runs": RUNS, "warmup": 1, "backend": "auto"},
            configs=list(CONFIGS), runs_planned=len(CONFIGS) * RUNS,
            cell_source="with nsight.annotate('region_a'):\n    a @ b\n",
            notes=["events: kernel time between CUDA events"],
        )  # fmt: skip
        records = template_records(s.id)
        for start in range(0, len(records), 500):  # StoreWriter's batch
            store.add_runs(records[start : start + 500])
        store.finish_session(s.id, "completed")
    tables: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
    with sqlite3.connect(path) as conn:
        names = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        for table in names:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            key = "id" if table == "sessions" else "session_id"
            if key not in cols:
                continue
            order = " ORDER BY id" if "id" in cols else ""
            rows = conn.execute(
                f"SELECT * FROM {table} WHERE {key} = ?{order}",  # noqa: S608
                (s.id,),
            ).fetchall()
            if rows:
                tables[table] = (cols, [tuple(r) for r in rows])
    return Template(tables)


class Copier:
    """Makes session ``i``'s rows of every table from the template's."""

    def __init__(self, template: Template, now: dt.datetime, sessions: int) -> None:
        """Copies of ``template`` for ``sessions`` sessions, the last one ``now``."""
        self.t = template
        self.start = now - SPACING * sessions
        self.rng = random.Random(0)  # noqa: S311  (jitter)
        self.runs_per_session = len(template.tables["runs"][1])
        cols, rows = template.tables["runs"]
        self._run_at = {
            c: cols.index(c)
            for c in ("id", "session_id", "annotation", "duration_ns", "finished_at")
        }
        created = dt.datetime.fromisoformat(
            template.tables["sessions"][1][0][
                cols_index(template, "sessions", "created_at")
            ]
        )
        self._offsets = [
            dt.datetime.fromisoformat(r[self._run_at["finished_at"]]) - created
            for r in rows
        ]

    def session_rows(
        self, i: int, sid: int, first_run_id: int
    ) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's rows of the copy ``i`` (0-based) as session ``sid``."""
        regions = dict(zip(TEMPLATE_REGIONS, regions_of(i), strict=True))
        created = self.start + SPACING * i
        out: dict[str, list[tuple[Any, ...]]] = {}
        for table, (cols, rows) in self.t.tables.items():
            if table == "sessions":
                out[table] = [self._session(cols, rows[0], i, sid, created, regions)]
            elif table == "runs":
                out[table] = self._runs(rows, sid, first_run_id, created, regions)
            else:
                at = cols.index("session_id")
                ann = cols.index("annotation") if "annotation" in cols else -1
                copied = []
                for row in rows:
                    new = list(row)
                    new[at] = sid
                    if ann >= 0:
                        new[ann] = regions.get(new[ann], new[ann])
                    copied.append(tuple(new))
                out[table] = copied
        return out

    def _session(  # noqa: PLR0913, PLR0917  (what one copy's row differs by)
        self,
        cols: list[str],
        row: tuple[Any, ...],
        i: int,
        sid: int,
        created: dt.datetime,
        regions: dict[str, str],
    ) -> tuple[Any, ...]:
        new = dict(zip(cols, row, strict=True))
        finished = created + self._offsets[-1] + dt.timedelta(milliseconds=3)
        new.update(
            id=sid, name=f"scale-{i:06d}", notebook=NOTEBOOKS[i % len(NOTEBOOKS)],
            uuid=str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
            created_at=created.isoformat(timespec="microseconds"),
            finished_at=finished.isoformat(timespec="microseconds"),
        )  # fmt: skip
        if "annotations" in new:
            new["annotations"] = "\n".join(sorted(regions.values()))
        return tuple(new[c] for c in cols)

    def _runs(
        self,
        rows: list[tuple[Any, ...]],
        sid: int,
        first_run_id: int,
        created: dt.datetime,
        regions: dict[str, str],
    ) -> list[tuple[Any, ...]]:
        at = self._run_at
        scale = self.rng.uniform(0.5, 2.0)
        gauss = self.rng.gauss
        out = []
        for k, row in enumerate(rows):
            new = list(row)
            new[at["id"]] = first_run_id + k
            new[at["session_id"]] = sid
            new[at["annotation"]] = regions[new[at["annotation"]]]
            new[at["duration_ns"]] = row[at["duration_ns"]] * scale * gauss(1.0, 0.03)
            new[at["finished_at"]] = (created + self._offsets[k]).isoformat(
                timespec="microseconds"
            )
            out.append(tuple(new))
        return out


def cols_index(template: Template, table: str, column: str) -> int:
    """The position of ``column`` in the template's ``table`` rows."""
    return template.tables[table][0].index(column)


def fill(location: str, sessions: int, home: Path) -> dict[str, Any]:
    """Fill the (new, empty) store at ``location`` with ``sessions`` sessions."""
    t0 = time.perf_counter()
    with RunStore(location):  # the schema, through this nsight_lab's migrations
        pass
    template = write_template(home)
    copier = Copier(template, dt.datetime.now(dt.timezone.utc), sessions)
    postgres = location.startswith(("postgresql:", "postgres:"))
    writer = _PgWriter(location) if postgres else _SqliteWriter(location)
    # Parents first (the foreign keys): sessions, then the rest.
    order = ["sessions", *sorted(t for t in template.tables if t != "sessions")]
    per = copier.runs_per_session
    try:
        for start in range(0, sessions, CHUNK):
            batch: dict[str, list[tuple[Any, ...]]] = {t: [] for t in order}
            for i in range(start, min(sessions, start + CHUNK)):
                for table, rows in copier.session_rows(i, i + 1, i * per + 1).items():
                    batch[table].extend(rows)
            writer.write([(t, template.tables[t][0], batch[t]) for t in order])
            if start % (CHUNK * 10) == 0:
                print(
                    f"  {start + CHUNK:,} sessions, {time.perf_counter() - t0:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
        t_rows = time.perf_counter() - t0
        writer.finish(sessions * 3)
    finally:
        writer.close()
    return {
        "sessions": sessions,
        "runs": sessions * per,
        "runs_per_session": per,
        "rows_s": round(t_rows, 1),
        "fill_s": round(time.perf_counter() - t0, 1),
        "tables": {t: len(template.tables[t][1]) for t in order},
    }


class _SqliteWriter:
    def __init__(self, path: str) -> None:
        """Open the store's file for the fill."""
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.execute("PRAGMA synchronous = OFF")  # the fill only
        self.conn.execute("PRAGMA cache_size = -1000000")

    def write(self, tables: list[tuple[str, list[str], list[tuple[Any, ...]]]]) -> None:
        self.conn.execute("BEGIN")
        for table, cols, rows in tables:
            marks = ", ".join("?" * len(cols))
            self.conn.executemany(
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})",  # noqa: S608
                rows,
            )
        self.conn.execute("COMMIT")

    def finish(self, change_seq: int) -> None:
        self.conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'change_seq'", (change_seq,)
        )
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.conn.close()


class _PgWriter:
    def __init__(self, url: str) -> None:
        """Connect to the store's database."""
        self.conn = psycopg.connect(url)

    def write(self, tables: list[tuple[str, list[str], list[tuple[Any, ...]]]]) -> None:
        with self.conn.cursor() as cur:
            for table, cols, rows in tables:
                with cur.copy(f"COPY {table} ({', '.join(cols)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
        self.conn.commit()

    def finish(self, change_seq: int) -> None:
        with self.conn.cursor() as cur:
            for table in ("sessions", "runs"):  # what the ids drawn so far leave
                cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"  # noqa: S608
                    f" (SELECT max(id) FROM {table}))"
                )
            cur.execute(
                "UPDATE meta SET value = %s WHERE key = 'change_seq'", (change_seq,)
            )
        self.conn.commit()
        # What autovacuum would reach after a fill this size: the planner's statistics.
        self.conn.autocommit = True
        self.conn.execute("VACUUM ANALYZE")

    def close(self) -> None:
        self.conn.close()


def main() -> int:
    """``LOCATION SESSIONS``: fill, print the result as JSON."""
    location, sessions = sys.argv[1], int(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="nsight-lab-fill-") as home:
        result = fill(location, sessions, Path(home))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
