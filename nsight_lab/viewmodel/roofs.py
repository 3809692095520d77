"""The roofs a stored session's view model places and judges its regions against.

Two sets of peaks, both read from the store, never measured here:

- the device's peaks (:func:`~nsight_lab.roofline.peaks.known_peaks`: the datasheet
  for a listed GPU, else ``%nsight peaks``' kept ones): the roofline and the
  table's "% of roof";
- the attainable peaks ``%nsight peaks`` measured on the device, where the store
  keeps them (:func:`~nsight_lab.roofline.peaks.measured_peaks`): what the
  findings judge a region against before the datasheet's (issue 31);

and the same cell's session in the other cache mode (:func:`cache_counterpart`),
whose medians the ``cache_sensitive`` finding compares (``analysis/findings/
warmth.py``).

``nsight-lab show`` (``views/show.py``), ``explain`` (``viewmodel/findings.py``)
and the cell's widget (``session/target.py``) set both; the server's view models
(``viewmodel/cache.py``) are put under them here (:func:`with_roofs`), so the
sidebar's findings say what they say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.analysis.findings.warmth import flushed, same_cell
from nsight_lab.contract.registry import times_the_host
from nsight_lab.roofline.peaks import known_peaks, measured_peaks

if TYPE_CHECKING:
    from nsight_lab.analysis.findings.warmth import Counterpart
    from nsight_lab.contract.records import SessionInfo
    from nsight_lab.roofline.placement import Peaks
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.viewmodel.session import SessionViewModel

__all__ = ["cache_counterpart", "session_roofs", "with_roofs"]

COUNTERPART_SESSIONS = 50
"""The latest sessions of the device and backend searched for the same cell."""
COUNTERPART_RUNS = 2_000
"""The counterpart's newest runs its medians are taken over."""


def session_roofs(
    store: RunStore, session: SessionInfo
) -> tuple[Peaks | None, Peaks | None]:
    """``(peaks, attainable)`` of the session's device: either may be None.

    A host-timed backend's (cpu) are the CPU's, measured by ``%nsight peaks --cpu``.

    Raises:
        StoreError: The store's cache cannot be read.
    """
    on_host = times_the_host(session.backend)
    return (
        known_peaks(store, session.device, cpu=on_host),
        measured_peaks(store, session.device, cpu=on_host),
    )


def with_roofs(store: RunStore, model: SessionViewModel) -> SessionViewModel:
    """``model``, before it takes runs, under its session's :func:`session_roofs`.

    Its ``peaks`` place the regions (roofline, % of roof), its ``attainable`` are
    what its findings judge against; a model of no session is returned as is.

    Raises:
        StoreError: The store's cache cannot be read.
    """
    if model.session is not None:
        model.peaks, model.attainable = session_roofs(store, model.session)
        model.counterpart = cache_counterpart(store, model.session)
    return model


def cache_counterpart(store: RunStore, session: SessionInfo) -> Counterpart | None:
    """The newest completed session of the same cell in the other cache mode.

    Searched among the device's and backend's latest
    :data:`COUNTERPART_SESSIONS`; its newest :data:`COUNTERPART_RUNS` runs.

    Raises:
        StoreError: The store cannot be read.
    """
    if flushed(session) is None or not session.cell_source:
        return None
    latest = store.list_sessions(
        limit=COUNTERPART_SESSIONS,
        device=session.device,
        backend=session.backend,
        status="completed",
    )
    other = next((s for s in latest if same_cell(session, s)), None)
    if other is None:
        return None
    runs = store.runs_tail(other.id, limit=COUNTERPART_RUNS)
    return other, [record for _, record in runs]
