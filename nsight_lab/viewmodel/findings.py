"""A stored session's findings, as ``show``, ``explain`` and the sidebar read them.

The findings of :mod:`nsight_lab.analysis.findings` over the session's runs as its
view model keeps them (read a page at a time, each region's latest
:data:`~nsight_lab.viewmodel.session.WORK_RUNS` runs:
:func:`~nsight_lab.viewmodel.stored.stored_model`), judged against the device's
roofs and, where ``%nsight peaks`` measured them, its attainable peaks: the same
findings ``nsight-lab show``, ``nsight-lab explain``, ``results.findings()`` and the
sidebar's session view give.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from nsight_lab.analysis.findings import session_findings
from nsight_lab.contract.registry import times_the_host
from nsight_lab.roofline.peaks import known_peaks, measured_peaks
from nsight_lab.viewmodel.roofs import cache_counterpart
from nsight_lab.viewmodel.session import WORK_RUNS
from nsight_lab.viewmodel.stored import stored_model

if TYPE_CHECKING:
    from nsight_lab.analysis.findings import Finding
    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.store.run_store import RunStore

__all__ = ["stored_findings"]


def stored_findings(
    store: RunStore, session_id: int
) -> tuple[SessionInfo, list[Finding]]:
    """A stored session and its findings, most important first.

    Raises:
        NotFoundError: No session ``session_id``.
        StoreError: The store cannot be read.
    """
    session = store.get_session(session_id)
    on_host = times_the_host(session.backend)
    peaks = known_peaks(store, session.device, cpu=on_host)
    model = stored_model(store, session, peaks=peaks, figures=False)
    window = [r for r in model.window(WORK_RUNS) if not math.isnan(r.duration_ns)]
    attainable = measured_peaks(store, session.device, cpu=on_host)
    found = session_findings(
        window,
        session,
        peaks=peaks,
        attainable=attainable,
        counterpart=cache_counterpart(store, session),
    )
    return session, found
