"""A stored session's tables: its results DataFrame rebuilt from its runs, its runs.

For the CLI and the server's export alike (``nsight-lab show --frame``, ``nsight-lab
export``, ``GET sessions/<id>/export``): the session's options give the parameters,
the built-in derived metrics and the normalization; the store's device peaks give the
roofline. :func:`runs_frame` is every stored run as a flat row (the export format).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from nsight_lab.contract.records import TIME_METRIC, record_to_json
from nsight_lab.contract.registry import times_the_host
from nsight_lab.results.derive import stored_derive
from nsight_lab.results.frame import to_dataframe
from nsight_lab.roofline.peaks import known_peaks

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nsight_lab.contract.records import RunRecord, SessionInfo
    from nsight_lab.roofline.placement import Peaks
    from nsight_lab.store.run_store import RunStore

__all__ = ["run_row", "runs_frame", "session_results", "stored_results"]


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
    derive = stored_derive(options)
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


def runs_frame(store: RunStore, session_ids: Sequence[int]) -> pd.DataFrame:
    """Every stored run of ``session_ids`` as flat rows (the export format).

    Raises:
        NotFoundError: No session of one of ``session_ids``.
    """
    rows = [run_row(record) for sid in session_ids for record in store.runs(sid)]
    frame: pd.DataFrame = pd.DataFrame(rows)
    return frame


def run_row(record: RunRecord) -> dict[str, Any]:
    """One run as a flat row of the export (:func:`runs_frame`, streamed or not).

    Its keys: the run's fields, ``param_<name>`` per parameter, ``metric`` (the
    time metric's name), the telemetry's, ``metric_<name>`` per counter.
    """
    data = record_to_json(record)
    tel = data.pop("telemetry")
    config = data.pop("config")
    metrics = data.pop("metrics")
    data["kernels"] = ";".join(data["kernels"])
    data.pop("schema_version")
    row = {**data, **{f"param_{k}": v for k, v in config.items()}}
    row["metric"] = TIME_METRIC
    row.update({f"{k}": v for k, v in tel.items()})
    row["clock_event_reasons"] = ", ".join(tel["clock_event_reasons"])
    row.update({f"metric_{k}": v for k, v in metrics.items()})
    return row
