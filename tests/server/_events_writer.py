"""A separate writer process for ``test_events.py`` (run as a script, never imported).

Each mode does one write to the store ``DB`` and prints one JSON line with what it
wrote and ``written_at`` (``time.time()`` right after the commit returned):

- ``run DB SESSION``: add one run to ``SESSION``;
- ``session DB``: create a session;
- ``finish DB SESSION``: mark ``SESSION`` completed;
- ``session-with-run DB``: create a session and add one run to it.
"""

from __future__ import annotations

import json
import sys
import time

from nsight_lab.contract.records import RunRecord
from nsight_lab.store.run_store import RunStore


def _run(store: RunStore, session_id: int) -> int:
    record = RunRecord(
        session_id=session_id, config_index=0, config={"n": 1}, run_index=0,
        annotation="from-another-process", duration_ns=1234.0, backend="cpu",
    )  # fmt: skip
    return store.add_runs([record])[0]


def main(argv: list[str]) -> None:
    """Do the write that ``argv`` names and print it."""
    mode, db, *rest = argv
    with RunStore(db) as store:
        out: dict[str, int] = {}
        if mode == "run":
            out["run_id"] = _run(store, int(rest[0]))
        elif mode == "session":
            out["session_id"] = store.create_session(backend="cpu").id
        elif mode == "finish":
            store.finish_session(int(rest[0]), "completed")
        else:
            out["session_id"] = store.create_session(backend="cpu").id
            out["run_id"] = _run(store, out["session_id"])
        written_at = time.time()
    sys.stdout.write(json.dumps({**out, "written_at": written_at}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
