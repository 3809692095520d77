"""The tables the commands show, for both ``nsight-lab`` (printed) and ``%nsight``.

The CLI prints them; the line magic returns them (a notebook shows a DataFrame).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from nsight_lab.analysis.baselines import require_baseline
from nsight_lab.cli.history import sessions_frame
from nsight_lab.cli.parser import FILTERS
from nsight_lab.results.stored import session_results
from nsight_lab.roofline.peaks import cached_peaks, device_name
from nsight_lab.roofline.placement import peaks_for
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    import argparse

    from nsight_lab.roofline.placement import Peaks

__all__ = ["baseline_results", "history_frame", "peaks_frame"]


def history_frame(store: RunStore, args: argparse.Namespace) -> pd.DataFrame:
    """``history [N]``: the sessions, newest first (sessions left running marked)."""
    store.mark_interrupted()
    filters = {k: getattr(args, k) for k in FILTERS}
    limit = args.limit if args.count is None else args.count
    sessions = store.list_sessions(limit=limit, offset=args.offset, **filters)
    return sessions_frame(store, sessions)


def baseline_results(
    store: RunStore, name: str, where: str
) -> tuple[str, pd.DataFrame]:
    """``baseline show NAME``: a line naming its session, and the session's results.

    Raises:
        NsightLabError: No baseline of that name (the message lists the known ones).
    """
    found = require_baseline(store, name, where)
    frame = session_results(store, found.session_id)
    frame.attrs["baseline"] = found.to_json()
    return (
        f"baseline {found.name}: session {found.session_id} (set {found.set_at})",
        frame,
    )


def peaks_frame(*, cpu: bool, refresh: bool) -> pd.DataFrame:
    """``peaks``: the attainable peaks, measured once per device (kept in the store).

    Next to the datasheet's where the device is one nsight-lab knows.
    """
    import torch  # noqa: PLC0415  (torch: only this command needs it)

    cuda = not cpu and torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    name = device_name(device)
    with RunStore() as store:
        measured = cached_peaks(store, name, device=device, refresh=refresh)
    listed = peaks_for(name) if cuda else None
    nan = float("nan")

    def roof(peaks: Peaks | None, dtype: str) -> float:
        return peaks.flops_per_s.get(dtype, nan) / 1e12 if peaks else nan

    dtypes = sorted(
        set(measured.flops_per_s) | set(listed.flops_per_s if listed else {})
    )
    rows = [
        {
            "roof": f"{dtype} TFLOP/s",
            "measured": roof(measured, dtype),
            "datasheet": roof(listed, dtype),
        }
        for dtype in dtypes
    ]
    rows.append(
        {
            "roof": "DRAM TB/s",
            "measured": measured.dram_bytes_per_s / 1e12,
            "datasheet": listed.dram_bytes_per_s / 1e12 if listed else nan,
        }
    )
    frame: pd.DataFrame = pd.DataFrame(rows)
    frame.attrs["device"] = name
    frame.attrs["source"] = measured.source
    return frame
