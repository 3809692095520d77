"""One profile, from the options an entry parsed to a stored session and its views.

The one place a profile is assembled and run, for the ``%%nsight`` magic and
nsight-python's API (:mod:`nsight_lab.api`) alike. The options path:

parse (the entry) -> resolve in the notebook (:mod:`.resolve`) -> plan
(:mod:`.prepare`: baseline, one probe, the plan, its collector) -> collect -> store
-> views (:mod:`.entry`, :func:`~.profiling.profile`).

A cell goes the whole way through :func:`run_cell` (:mod:`.notebook`); an API call
:func:`prepare` s, builds its function's cell and request from the plan, and hands
them to :func:`run`. The plan's collector measures the cell (or the decorated
function, as a :class:`~nsight_lab.contract.collector.CellCode`) into a new session
of the store, streaming each run to the store writer and the live view
(:mod:`.target`: the inline widget in a notebook, progress lines elsewhere); then the
records become the results DataFrame (:func:`nsight_lab.results.to_dataframe`),
written as nsight-python's CSV files when asked. Nothing measured is deleted: a
failure after runs finished leaves the session ``failed`` with its runs, and the
error names it (:mod:`.failure`). The profile's own lines go to a logger
(:mod:`.output`), shown on stderr.
"""

from __future__ import annotations

from nsight_lab.session.entry import run
from nsight_lab.session.failure import (
    Ended,
    Stored,
    kept_text,
    record_failure,
    stored_runs,
)
from nsight_lab.session.notebook import NotebookCell, run_cell
from nsight_lab.session.prepare import Prepared, plan_profile, prepare
from nsight_lab.session.profiling import profile, rated_clocks_khz
from nsight_lab.session.request import (
    MAX_MESSAGE_CHARS,
    Display,
    Profiled,
    ProfileRequest,
    View,
)
from nsight_lab.session.resolve import notebook_path
from nsight_lab.session.target import SessionTarget, TextView

__all__ = [
    "MAX_MESSAGE_CHARS",
    "Display",
    "Ended",
    "NotebookCell",
    "Prepared",
    "ProfileRequest",
    "Profiled",
    "SessionTarget",
    "Stored",
    "TextView",
    "View",
    "kept_text",
    "notebook_path",
    "plan_profile",
    "prepare",
    "profile",
    "rated_clocks_khz",
    "record_failure",
    "run",
    "run_cell",
    "stored_runs",
]
