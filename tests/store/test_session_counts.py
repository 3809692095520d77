"""What a history row says of a session: its runs and regions (issue 20).

A run is one execution of the cell for one config (what ``--runs`` and the progress
line count), whatever the number of regions: a 3 x 10 cell of two regions stores 60
records and has 30 runs. Both engines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.store.run_store import RunStore
from tests.store.test_run_store import record

if TYPE_CHECKING:
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
