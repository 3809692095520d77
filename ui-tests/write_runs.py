"""A writer of its own, apart from any kernel, for tests/postgres.spec.ts.

``python write_runs.py URL NAME HOST USER RUNS INTERVAL_S``: open the run store at
``URL`` (a PostgreSQL store the JupyterLab under test reads), create session ``NAME``
as if written on ``HOST`` by ``USER``, add ``RUNS`` runs ``INTERVAL_S`` apart, one
transaction each, then mark it completed. Each step is one JSON line on stdout with
its wall-clock time in milliseconds (``Date.now()``'s clock, so the spec can tell
how long the sidebar took to show it).
"""

from __future__ import annotations

import json
import sys
import time

from nsight_lab.contract.records import RunRecord
from nsight_lab.store.run_store import RunStore


def _say(event: str, **fields: object) -> None:
    line = json.dumps({"event": event, "at_ms": time.time() * 1000, **fields})
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> None:
    """Write the session ``argv`` describes (see the module docstring)."""
    if len(argv) != 6:  # noqa: PLR2004  (the six arguments of the docstring)
        sys.exit("usage: write_runs.py URL NAME HOST USER RUNS INTERVAL_S")
    url, name, host, user, runs, interval = argv
    count, pause = int(runs), float(interval)
    with RunStore(url) as store:
        session = store.create_session(
            backend="cpu", name=name, host=host, user=user, runs_planned=count
        )
        _say("session", id=session.id)
        for i in range(count):
            time.sleep(pause)
            record = RunRecord(
                session_id=session.id,
                config_index=0,
                config={},
                run_index=i,
                annotation="",
                duration_ns=1_000_000.0 + 1_000.0 * i,
                backend="cpu",
            )
            store.add_runs([record])
            _say("run", index=i)
        store.finish_session(session.id, "completed")
        _say("completed")


if __name__ == "__main__":
    main(sys.argv[1:])
