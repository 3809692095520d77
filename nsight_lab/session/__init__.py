"""One profile, from a plan to a stored session and its DataFrame.

The ``%%nsight`` magic and nsight-python's API (:mod:`nsight_lab.api`) both profile
through :func:`profile` (:mod:`.profiling`): the session probes once and plans
(:func:`plan_profile`), the plan's collector measures the cell (or the decorated
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

from nsight_lab.session.failure import (
    Ended,
    Stored,
    kept_text,
    record_failure,
    stored_runs,
)
from nsight_lab.session.profiling import plan_profile, profile, rated_clocks_khz
from nsight_lab.session.request import (
    MAX_MESSAGE_CHARS,
    Display,
    Profiled,
    ProfileRequest,
    View,
)
from nsight_lab.session.target import SessionTarget, TextView

__all__ = [
    "MAX_MESSAGE_CHARS",
    "Display",
    "Ended",
    "ProfileRequest",
    "Profiled",
    "SessionTarget",
    "Stored",
    "TextView",
    "View",
    "kept_text",
    "plan_profile",
    "profile",
    "rated_clocks_khz",
    "record_failure",
    "stored_runs",
]
