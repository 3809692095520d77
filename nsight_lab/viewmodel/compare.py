"""The ``GET compare`` payload: session b against session a, and its threshold.

Built in the server's child processes (:mod:`nsight_lab.viewmodel.jobs`): the
comparison's statistics load numpy, which the Jupyter server does not at start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.baselines import check_threshold_pct, verdict_table
from nsight_lab.analysis.compare import DEFAULT_THRESHOLD
from nsight_lab.contract.records import SCHEMA_VERSION
from nsight_lab.errors import RequestError
from nsight_lab.options import shown
from nsight_lab.viewmodel.pages import session_json

if TYPE_CHECKING:
    from nsight_lab.store.run_store import RunStore

__all__ = ["compare_payload", "threshold_fraction"]


def threshold_fraction(raw: str | None) -> float:
    """The ``threshold`` query argument (a percentage) as a fraction.

    Absent: the comparison's practical threshold
    (:data:`nsight_lab.analysis.compare.DEFAULT_THRESHOLD`).

    Raises:
        RequestError: Not a number from 0 to 99 (400).
    """
    if raw is None or raw == "":
        return DEFAULT_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        msg = f"invalid threshold {shown(raw)}; expected a percentage, e.g. 2"
        raise RequestError(msg) from None
    return check_threshold_pct(value, "threshold")


def compare_payload(
    store: RunStore, a: int, b: int, threshold: float = 0.0
) -> dict[str, Any]:
    """Return the ``GET compare`` body of sessions ``a`` and ``b``.

    The verdict table of :mod:`nsight_lab.analysis.baselines` with ``a`` and ``b``
    as the sessions' JSON (each with its kept ``baseline_verdict``).

    Raises:
        NotFoundError: Either session is unknown.
        StoreError: The store cannot be read.
    """
    sessions = [store.get_session(a), store.get_session(b)]
    counts = store.run_counts([a, b])
    kept = store.session_verdicts([a, b])
    table = verdict_table(store, a, b, threshold=threshold).to_json()
    return {
        "schema_version": SCHEMA_VERSION,
        **table,
        "a": session_json(sessions[0], counts.get(a, 0), kept.get(a)),
        "b": session_json(sessions[1], counts.get(b, 0), kept.get(b)),
    }
