"""A stored session's view model, fed a page of runs at a time: ``show``'s tables.

``nsight-lab show`` and ``%nsight show`` print the view model's tables
(:mod:`nsight_lab.views.show`). Building it from a list of every run held the
whole session at once (issue 29: 1.6 GB and past 150 s at 10,000 configs x 100
runs); :func:`stored_model` instead adds the runs a page at a time
(:meth:`~nsight_lab.store.runs.RunQueries.run_pages`), so what is held is one page
of records plus the model's own state: running statistics per (region, config)
and windows kept within :data:`~nsight_lab.viewmodel.cache.WINDOW_BUDGET` runs over
every config, the rule the server's view models follow
(:func:`window_per_config`), so ``show`` and the session view print the same
rows. :meth:`~nsight_lab.viewmodel.session.SessionViewModel.add` is incremental:
pages give the same model as one list of every run (``tests/viewmodel/
test_streamed_reads.py`` checks it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.contract.points import MAX_POINTS
from nsight_lab.store.runs import RUN_PAGE
from nsight_lab.viewmodel.cache import WINDOW_BUDGET
from nsight_lab.viewmodel.latest_runs import NoLiveFigures
from nsight_lab.viewmodel.session import SessionViewModel

if TYPE_CHECKING:
    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.roofline.placement import Peaks
    from nsight_lab.store.run_store import RunStore

__all__ = ["stored_model", "window_per_config"]


def window_per_config(configs: int, max_points: int = MAX_POINTS) -> int:
    """Runs one config's window keeps: its share of :data:`WINDOW_BUDGET`, capped.

    A session of up to ``WINDOW_BUDGET // max_points`` (10) configs keeps
    ``max_points`` per config, as before the budget; 10,000 configs keep 2 each.
    What the windows feed (roofline columns, the charts' latest points) is drawn
    from fewer runs then; the statistics (medians, spreads, counts) are over every
    run whatever the window.

    Raises:
        Nothing.
    """
    return max(min(max_points, WINDOW_BUDGET // max(configs, 1)), 1)


def stored_model(
    store: RunStore,
    session: SessionInfo,
    *,
    peaks: Peaks | None = None,
    page: int = RUN_PAGE,
    figures: bool = True,
) -> SessionViewModel:
    """The view model of stored ``session``, its runs added ``page`` at a time.

    ``figures=False``: for its tables alone (:meth:`SessionViewModel.tables`, the
    same rows): the live charts take no points.

    Raises:
        NotFoundError: The session is gone.
        StoreError: The store cannot be read.
    """
    model = SessionViewModel(
        session,
        peaks=peaks,
        max_points=window_per_config(len(session.configs)),
        with_config=len(session.configs) > 1,
    )
    if not figures:
        model.live = NoLiveFigures(with_config=model.live.with_config)
    for records in store.run_pages(session.id, page=page):
        model.add(records)
    return model
