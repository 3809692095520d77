"""A writer process for ``test_run_store.py`` beside it (a script, never imported).

``loop DB``: create a session, write its id as one stdout line, then add one run every
few milliseconds until killed.

``worker DB OWN SHARED N GO``: wait for the file ``GO`` to exist, then add ``N`` runs
one at a time to session ``OWN``, each followed by one run to session ``SHARED``
(annotated ``w<OWN>``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore


def _record(session_id: int, run_index: int, annotation: str) -> RunRecord:
    return RunRecord(
        session_id=session_id,
        config_index=0,
        config={"n": 1024},
        run_index=run_index,
        annotation=annotation,
        duration_ns=1000.0 + run_index,
        backend="cpu",
        telemetry=Telemetry(sm_clock_mhz=1980.0, temperature_c=40.0),
    )


def _loop(db: str) -> None:
    with RunStore(db) as store:
        session = store.create_session(backend="cpu", name="killed-writer")
        sys.stdout.write(f"{session.id}\n")
        sys.stdout.flush()
        i = 0
        while True:
            store.add_runs([_record(session.id, i, "loop")])
            i += 1
            time.sleep(0.002)


def _worker(db: str, own: int, shared: int, n: int, go: str) -> None:
    deadline = time.monotonic() + 60
    while not Path(go).exists():
        if time.monotonic() > deadline:
            sys.exit("go file never appeared")
        time.sleep(0.001)
    with RunStore(db) as store:
        for i in range(n):
            store.add_runs([_record(own, i, "own")])
            store.add_runs([_record(shared, i, f"w{own}")])


def main(argv: list[str]) -> None:
    """Run the mode named by ``argv[0]``."""
    mode, db, *rest = argv
    if mode == "loop":
        _loop(db)
    else:
        own, shared, n, go = rest
        _worker(db, int(own), int(shared), int(n), go)


if __name__ == "__main__":
    main(sys.argv[1:])
