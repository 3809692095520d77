"""One profile, from a plan to a stored session and its DataFrame (:func:`profile`)."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.baselines import judge_profiled
from nsight_lab.errors import NsightLabError, OutputError
from nsight_lab.gpu.stack import nvml_devices
from nsight_lab.kernels import check_kernel_counts
from nsight_lab.results.rows import RowContext, RowRequest, gather_runs
from nsight_lab.session.output import say
from nsight_lab.session.request import Profiled
from nsight_lab.session.target import SessionTarget, finish_display
from nsight_lab.store.writer import StoreWriter
from nsight_lab.text.safe import frame_to_csv

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pandas as pd

    from nsight_lab.contract.collector import CellCode, Collector
    from nsight_lab.contract.records import RunRecord
    from nsight_lab.plan import Plan
    from nsight_lab.session.request import ProfileRequest
    from nsight_lab.store.run_store import RunStore


def profile(  # noqa: PLR0913  (the profile's collaborators, keyword-only after it)
    plan: Plan,
    cell: CellCode,
    *,
    collector: Collector[Plan],
    store: RunStore,
    request: ProfileRequest,
    on_session: Callable[[int], None] | None = None,
) -> Profiled:
    """Let ``collector`` measure ``cell`` into a new session; build the results.

    Args:
        plan: What to run.
        cell: The cell (or function) to measure.
        collector: The plan's backend.
        store: Where the session goes.
        request: Derived metrics, display, info collectors, CSV naming.
        on_session: Told the session id as soon as the collector opened it.

    Returns:
        The session id, the DataFrame (``None`` where ``request.frame`` is false and
        no CSV files are asked for), the records and the notes shown.

    Raises:
        NsightLabError: The backend could not start, a region rule was broken, an
            option was wrong, or a region launched more kernels than
            ``--combine single`` allows; after runs finished, the message says the
            session was kept.
        BaseException: Whatever the cell raised, unchanged (with a note), after the
            finished runs were stored.
    """
    check_csv_prefix(plan.options.output_csv)
    writer = StoreWriter(store)
    target = SessionTarget(
        plan, cell, store=store, writer=writer, request=request, on_session=on_session
    )
    try:
        with writer:
            records = collector.collect(plan, cell, target.output())
        session_id = target.session_id()
        check_kernel_counts(records, plan.options)
        frame, csv_files = _results(plan, store, session_id, records, request, target)
    except BaseException as exc:
        target.fail(exc)
        raise
    store.finish_session(session_id, "completed")
    notes = _derive_notes(store, session_id, frame, request)
    verdicts = _judge(store, session_id, records, plan.options.baseline, notes)
    if verdicts is not None and frame is not None:
        frame.attrs["verdicts"] = verdicts
    _show_end(store, target, records, verdicts)  # after the frame: its --derive values
    if frame is None:
        return Profiled(session_id, None, records, notes, csv_files, verdicts)
    # Its text form escapes the control characters of region names (issue 22).
    from nsight_lab.text.frame import shown_frame  # noqa: PLC0415  (pandas)

    shown = shown_frame(frame)
    return Profiled(session_id, shown, records, notes, csv_files, verdicts)


def _show_end(
    store: RunStore,
    target: SessionTarget,
    records: list[RunRecord],
    verdicts: dict[str, Any] | None,
) -> None:
    """Show the finished profile in its view, if it has one."""
    view, peaks, session_id = target.display, target.peaks, target.session_id()
    if view is None:
        return
    finish_display(
        store,
        session_id,
        lambda shown: shown.finish(records, peaks, verdicts=verdicts),
        view,
    )


def _results(  # noqa: PLR0913, PLR0917  (the profile's parts the results need)
    plan: Plan,
    store: RunStore,
    session_id: int,
    records: list[RunRecord],
    request: ProfileRequest,
    target: SessionTarget,
) -> tuple[pd.DataFrame | None, list[Path]]:
    """The results DataFrame of the records, and the CSV files written.

    Without ``request.frame`` or ``--output-csv``, no DataFrame (``None``): only
    its checks run and the derived values are computed, without pandas.

    Raises:
        CellError: As :func:`~nsight_lab.results.rows.gather_runs`.
        OutputError: ``--output-csv`` cannot be written.
    """
    options = plan.options
    session = store.get_session(session_id)
    # Every --metrics name is a row, or the cell fails naming it (issue 28).
    required = options.extra_metrics if "--metrics" in options.given else ()
    if not request.frame and options.output_csv is None:
        ctx = RowContext(
            session,
            plan.param_names,
            request.config_values,
            rated_clocks_khz(session.device),
            request.info,
        )
        wanted = RowRequest(request.metrics, required, options.normalize_against)
        gather_runs(records, ctx, request.derive, wanted)
        return None, []
    # pandas: loaded only for a profile whose DataFrame is asked for
    from nsight_lab.results.frame import to_dataframe  # noqa: PLC0415

    raw: list[dict[str, object]] = []
    frame = to_dataframe(
        records,
        session,
        plan.param_names,
        derive=request.derive,
        normalize_against=options.normalize_against,
        peaks=target.peaks,
        config_values=request.config_values,
        rated_clocks_khz=rated_clocks_khz(session.device),
        info=request.info,
        raw=raw if options.output_csv is not None else None,
        metrics=request.metrics,
        required=required,
    )
    csv_files = _write_csv(options.output_csv, request, session_id, frame, raw)
    return frame, csv_files


def _derive_notes(
    store: RunStore,
    session_id: int,
    frame: pd.DataFrame | None,
    request: ProfileRequest,
) -> list[str]:
    """A line per failing derive function and config: kept and said; durations stand."""
    failures = request.derive.failures
    if not failures:
        return []
    notes = failures.notes()
    if frame is not None:
        frame.attrs["notes"] = notes
    for note in notes:
        store.add_note(session_id, note)
        say(f"nsight-lab session {session_id}: {note}")
    return notes


def _judge(
    store: RunStore,
    session_id: int,
    records: Sequence[RunRecord],
    baseline: str | None,
    notes: list[str],
) -> dict[str, Any] | None:
    """The verdict table against ``--baseline`` (kept in the store), or ``None``.

    The session is complete and stays so: a baseline that vanished since the cell
    began (deleted in another process) is a note, not a failure.
    """
    if baseline is None:
        return None
    try:
        return judge_profiled(store, session_id, records, baseline).to_json()
    except NsightLabError as exc:
        note = f"no verdict against baseline {baseline}: {exc}"
        notes.append(note)
        store.add_note(session_id, note)
        say(f"nsight-lab session {session_id}: {note}")
        return None


@functools.cache
def _nvml_clocks() -> dict[str, tuple[int | None, int | None]]:
    """Device name -> NVML's maximum SM and memory clocks (MHz); empty without NVML."""
    try:
        devices = nvml_devices()
    except NsightLabError:
        return {}
    return {d.name: (d.max_sm_clock_mhz, d.max_mem_clock_mhz) for d in devices}


def rated_clocks_khz(device: str | None) -> tuple[int | None, int | None]:
    """The rated SM and memory clocks of GPU ``device``, in nsight-python's kHz.

    nsight-python's ``ComputeClock``/``MemoryClock`` are ncu's
    ``device__attribute_clock_rate``/``..._memory_clock_rate`` (cuda-core's
    ``clock_rate``/``memory_clock_rate`` under its CUPTI tool): the device's peak
    clocks in kHz, which NVML reports in MHz as its maximum clocks. ``(None, None)``
    where ``device`` is not a GPU NVML sees (the cpu backend).
    """
    if device is None:
        return (None, None)
    sm, mem = _nvml_clocks().get(device, (None, None))
    return (
        None if sm is None else int(sm) * 1000,
        None if mem is None else int(mem) * 1000,
    )


def check_csv_prefix(prefix: str | None) -> None:
    """Refuse an ``--output-csv`` prefix whose files cannot be written, before any run.

    Found after the runs, it cost the whole profile and left a failed session. The
    files' folder must be a writable folder, or be creatable (as :func:`_write_csv`
    does) in the nearest folder that exists.

    Raises:
        OutputError: That folder is not a folder, or cannot be written in.
    """
    if prefix is None:
        return
    folder = Path(f"{prefix}x").parent
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    why = (
        "not a folder"
        if not existing.is_dir()
        else "not writable"
        if not os.access(existing, os.W_OK | os.X_OK)
        else None
    )
    if why is not None:
        msg = (
            f"--output-csv: {str(existing)!r} is {why}, so {str(folder)!r} cannot "
            "hold the CSV files; give a prefix in a writable folder"
        )
        raise OutputError(msg)


def _write_csv(
    prefix: str | None,
    request: ProfileRequest,
    session_id: int,
    frame: pd.DataFrame,
    raw: list[dict[str, object]],
) -> list[Path]:
    """nsight-python's two CSV files: per run (``profiled_data``) and the results.

    Raises:
        OutputError: The files cannot be written there.
    """
    if prefix is None:
        return []
    import pandas as pd  # noqa: PLC0415  (heavy: only when --output-csv is given)

    tag = request.csv_tag(session_id) if request.csv_tag else f"cell-{session_id}"
    raw_path = Path(f"{prefix}profiled_data-{tag}.csv")
    processed_path = Path(f"{prefix}processed_data-{tag}.csv")
    try:
        raw_path.parent.mkdir(parents=True, exist_ok=True)
        # Through the one CSV writer: an annotation "=HYPERLINK(...)" must not run
        # as a formula when the file is opened in a spreadsheet (issue 8).
        frame_to_csv(pd.DataFrame(raw), raw_path)
        frame_to_csv(frame, processed_path)
    except OSError as exc:
        msg = (
            f"--output-csv: cannot write {str(raw_path)!r}: {exc.strerror or exc}; "
            "give a prefix in a writable directory"
        )
        raise OutputError(msg) from exc
    return [raw_path, processed_path]
