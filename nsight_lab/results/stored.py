"""A stored session's results DataFrame, rebuilt from its runs.

For the views and the CLI alike (``nsight-lab show``, the sidebar, the static page):
the session's options give the parameters, the built-in derived metrics and the
normalization; the store's device peaks give the roofline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.contract.registry import times_the_host
from nsight_lab.results.derive import BUILTIN_DERIVES
from nsight_lab.results.frame import to_dataframe
from nsight_lab.roofline.peaks import known_peaks

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from nsight_lab.contract.records import RunRecord, SessionInfo
    from nsight_lab.roofline.placement import Peaks
    from nsight_lab.store.run_store import RunStore


def stored_results(
    records: Sequence[RunRecord], session: SessionInfo, peaks: Peaks | None
) -> pd.DataFrame:
    """The results DataFrame of a stored session, rebuilt from its runs.

    The session's options give the parameters, the built-in ``--derive`` metrics
    and ``--normalize-against``; user ``--derive`` functions are not recomputed
    (the notebook that defined them is not here), and normalization is left out
    while its target region has no runs (a session still running, say).

    Raises:
        Nothing beyond what :func:`to_dataframe` raises for stored records.
    """
    options = session.options
    params = [str(p) for p in (options.get("params") or {})]
    if not params and session.configs:  # an explicit config list (--configs-from)
        params = [str(p) for p in session.configs[0]]
    derive = [str(d) for d in options.get("derive") or [] if d in BUILTIN_DERIVES]
    target = options.get("normalize_against")
    if target is not None and not any(r.annotation == target for r in records):
        target = None
    return to_dataframe(
        records,
        session,
        params,
        derive=derive,
        normalize_against=target,
        peaks=peaks,
    )


def session_results(store: RunStore, session_id: int) -> pd.DataFrame:
    """The results DataFrame of a stored session, rebuilt from its runs.

    Built-in derived metrics are recomputed; user ``--derive`` functions are not
    (the notebook that defined them is not here), nor is normalization re-applied
    when its target region is missing (:func:`stored_results`).

    Raises:
        NotFoundError: No session ``session_id``.
    """
    session = store.get_session(session_id)
    peaks = known_peaks(store, session.device, cpu=times_the_host(session.backend))
    return stored_results(store.runs(session_id), session, peaks)
