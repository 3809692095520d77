"""The kept baseline a server's view model judges a session against, its latest runs.

A session profiled with ``--baseline`` kept which session it was judged against;
its view model (:class:`~nsight_lab.viewmodel.cache.ViewModels`) holds that
session's latest :data:`~nsight_lab.viewmodel.session.WORK_RUNS` runs per region
(:func:`latest`), what the verdicts are drawn from. Moved out of
:mod:`~nsight_lab.viewmodel.cache` unchanged.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord, SessionInfo
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.viewmodel.session import KeptBaseline

__all__ = ["kept_baseline", "latest"]


def latest(records: Sequence[RunRecord], per_region: int) -> list[RunRecord]:
    """The last ``per_region`` records of each (region, config), in their order.

    Raises:
        Nothing.
    """
    kept: dict[tuple[str, int], deque[RunRecord]] = {}
    for record in records:
        key = (record.annotation, record.config_index)
        if key not in kept:
            kept[key] = deque(maxlen=max(per_region, 1))
        kept[key].append(record)
    chosen = {id(r) for window in kept.values() for r in window}
    return [r for r in records if id(r) in chosen]


def kept_baseline(store: RunStore, session: SessionInfo) -> KeptBaseline | None:
    """The baseline ``session`` was profiled against, with its latest runs; or None.

    Raises:
        StoreError: The store cannot be read.
    """
    from nsight_lab.viewmodel.session import (  # noqa: PLC0415  (plotly: the first view loads it, not the server's start)
        WORK_RUNS,
        KeptBaseline,
    )

    kept = store.session_verdicts([session.id]).get(session.id)
    if kept is None or kept.baseline_session_id is None:
        return None
    return KeptBaseline(
        session_id=kept.baseline_session_id,
        name=kept.baseline_name,
        threshold=kept.threshold,
        records=latest(store.runs(kept.baseline_session_id), WORK_RUNS),
    )
