"""One profile, from a plan to a stored session and its DataFrame.

The ``%%nsight`` magic and nsight-python's API (:mod:`nsight_lab.api`) both profile
through :func:`profile`: the plan's collector measures the cell (or the decorated
function, as a :class:`~nsight_lab.backends.CellCode`) into a new session of the store,
streaming each run to the store writer and the live view (the inline widget in a
notebook, progress lines elsewhere); then the records become the results DataFrame
(:func:`nsight_lab.results.to_dataframe`), written as nsight-python's CSV files when
asked. Nothing measured is deleted: a failure after runs finished leaves the session
``failed`` with its runs, and the error names it.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from nsight_lab.errors import InputError, MeasurementError, NsightLabError, OutputError
from nsight_lab.kernels import check_kernel_counts
from nsight_lab.plan import make_plan

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

    import pandas as pd

    from nsight_lab.backends.probe import Prober
    from nsight_lab.contract.collector import CellCode, Collector, Output, Progress
    from nsight_lab.contract.records import RunRecord, SessionStatus
    from nsight_lab.options import ProfileOptions
    from nsight_lab.plan import ConfigList, Plan
    from nsight_lab.results import DeriveSpec, InfoColumn
    from nsight_lab.roofline.placement import Peaks, Placement
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.store.writer import StoreWriter

Display = Literal["widget", "text", "none"]
"""How a running profile shows: the inline widget, progress lines on stderr, or not."""

MAX_MESSAGE_CHARS = 300
"""Longest error message the magic shows (the options already quote values short)."""


class View(Protocol):
    """What shows a running profile (:class:`~nsight_lab.views.live.WidgetView`)."""

    def update(self, progress: Progress, *, force: bool = False) -> None:
        """Take the progress after a change."""

    def finish(  # noqa: PLR0913  (the WidgetView's signature)
        self,
        frame: pd.DataFrame | None,
        records: Sequence[RunRecord],
        placements: Sequence[Placement] = (),
        peaks: Peaks | None = None,
        *,
        status: SessionStatus = "completed",
        message: str = "",
        verdicts: Mapping[str, Any] | None = None,
    ) -> None:
        """Show how the profile ended (and the verdicts against ``--baseline``)."""


@dataclass
class Profiled:
    """A finished profile: its session, records and results."""

    session_id: int
    frame: pd.DataFrame
    records: list[RunRecord]
    notes: list[str] = field(default_factory=list)
    csv_files: list[Path] = field(default_factory=list)
    verdicts: dict[str, Any] | None = None
    """The verdict table against ``--baseline`` (``VerdictTable.to_json``)."""


@dataclass
class ProfileRequest:
    """What :func:`profile` needs beyond the plan and the cell.

    Attributes:
        derive: The derived metrics and how they are computed.
        notebook: The notebook's path, stored with the session.
        display: How the running profile shows.
        info: Info collectors' columns, filled while the runs go.
        config_values: Per config, the values the DataFrame shows (the objects of an
            explicit config list); the stored configs by default.
        csv_tag: The ``<name>-<id>`` of the CSV file names, from the session id.
        label: What the progress lines call the profile.
        notes: What the user should know about the session beyond the backend's
            notes (a notebook function used in place of a built-in one, ...).
        metrics: The metrics the DataFrame has rows for (nsight-python's
            ``metrics``, whose frame has a duration row only when asked for), with
            the derived ones; None: the duration and every counter (the magic's).
    """

    derive: DeriveSpec
    notebook: str | None = None
    display: Display = "widget"
    info: Sequence[InfoColumn] = ()
    config_values: Sequence[dict[str, object]] | None = None
    csv_tag: Callable[[int], str] | None = None
    label: str = "nsight-lab"
    notes: Sequence[str] = ()
    metrics: Sequence[str] | None = None


def plan_profile(
    options: ProfileOptions,
    prober: Prober,
    config_list: ConfigList | None = None,
    *,
    notebook_derives: Collection[str] = (),
) -> Plan:
    """Probe this machine once for ``options``, then plan on what it found.

    The one place a profile asks the hardware and the store what it can use
    (:meth:`~nsight_lab.backends.probe.Prober.probe`); the plan itself is pure
    (:func:`~nsight_lab.plan.make_plan`) and its collector does not ask again.

    Raises:
        BackendUnavailableError: As :func:`~nsight_lab.plan.make_plan`.
        PlanError: As :func:`~nsight_lab.plan.make_plan`.
    """
    probe = prober.probe(options)
    return make_plan(options, probe, config_list, notebook_derives=notebook_derives)


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
        The session id, the DataFrame, the records and the notes shown.

    Raises:
        NsightLabError: The backend could not start, a region rule was broken, an
            option was wrong, or a region launched more kernels than
            ``--combine single`` allows; after runs finished, the message says the
            session was kept.
        BaseException: Whatever the cell raised, unchanged (with a note), after the
            finished runs were stored.
    """
    from nsight_lab.results import to_dataframe
    from nsight_lab.roofline.placement import place_session
    from nsight_lab.store.writer import StoreWriter
    from nsight_lab.text.frame import shown_frame

    options = plan.options
    writer = StoreWriter(store)
    target = SessionTarget(
        plan,
        cell,
        store=store,
        writer=writer,
        request=request,
        on_session=on_session,
    )
    raw: list[dict[str, object]] = []
    try:
        with writer:
            records = collector.collect(plan, cell, target.output())
        session_id = target.session_id()
        check_kernel_counts(records, options)
        session = store.get_session(session_id)
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
        )
        csv_files = _write_csv(options.output_csv, request, session_id, frame, raw)
    except BaseException as exc:
        target.fail(exc)
        raise
    store.finish_session(session_id, "completed")
    notes: list[str] = []
    failures = request.derive.failures
    if failures:
        # The durations stand; each failing derive function and config gets one
        # line, in the session's notes and on stderr.
        notes = failures.notes()
        frame.attrs["notes"] = notes
        for note in notes:
            store.add_note(session_id, note)
            print(f"nsight-lab session {session_id}: {note}", file=sys.stderr)  # noqa: T201
    verdicts = _judge(store, session_id, records, options.baseline, notes)
    if verdicts is not None:
        frame.attrs["verdicts"] = verdicts
    if target.display is not None:
        peaks = target.peaks
        _finish_display(
            store,
            session_id,
            lambda view: view.finish(
                frame,
                records,
                place_session(records, peaks) if peaks else [],
                peaks,
                verdicts=verdicts,
            ),
            target.display,
        )
    # Its text form escapes the control characters of region names (issue 22).
    shown = shown_frame(frame)
    return Profiled(session_id, shown, records, notes, csv_files, verdicts)


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
    from nsight_lab.analysis.baselines import judge_profiled

    try:
        return judge_profiled(store, session_id, records, baseline).to_json()
    except NsightLabError as exc:
        note = f"no verdict against baseline {baseline}: {exc}"
        notes.append(note)
        store.add_note(session_id, note)
        print(f"nsight-lab session {session_id}: {note}", file=sys.stderr)  # noqa: T201
        return None


@functools.cache
def _nvml_clocks() -> dict[str, tuple[int | None, int | None]]:
    """Device name -> NVML's maximum SM and memory clocks (MHz); empty without NVML."""
    from nsight_lab.gpu.stack import nvml_devices

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
    import pandas as pd

    from nsight_lab.text.safe import frame_to_csv

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


class TextView:
    """Progress lines on stderr, for a profile run outside a notebook.

    At most one line every :data:`INTERVAL_S` while runs arrive, and one at the end
    (nsight-python's progress bar, as lines a log keeps).
    """

    INTERVAL_S = 2.0

    def __init__(self, header: str) -> None:
        """Print ``header`` (session, backend, device, notes)."""
        self._last = time.monotonic()
        print(header, file=sys.stderr)  # noqa: T201  (the profile's own output)

    def update(self, progress: Progress, *, force: bool = False) -> None:
        """Print where the profile stands, now and then."""
        now = time.monotonic()
        if not force and now - self._last < self.INTERVAL_S:
            return
        self._last = now
        total = progress.configs_total * progress.runs_target
        print(  # noqa: T201
            f"  config {progress.config_index + 1}/{progress.configs_total}: "
            f"{progress.runs_done_total}/{total} runs, {progress.elapsed_s:.1f} s"
            + (f" ({progress.message})" if progress.message else ""),
            file=sys.stderr,
        )

    def finish(  # noqa: PLR0913  (View's signature)
        self,
        frame: pd.DataFrame | None,  # noqa: ARG002
        records: Sequence[RunRecord],
        placements: Sequence[Placement] = (),  # noqa: ARG002
        peaks: Peaks | None = None,  # noqa: ARG002
        *,
        status: SessionStatus = "completed",
        message: str = "",
        verdicts: Mapping[str, Any] | None = None,
    ) -> None:
        """Print how the profile ended, and the verdict table if any."""
        runs = len({(r.config_index, r.run_index) for r in records})
        said = f": {message}" if message else ""
        print(f"  {status}, {runs} runs{said}", file=sys.stderr)  # noqa: T201
        if verdicts:
            from nsight_lab.text.safe import for_terminal
            from nsight_lab.views.verdicts import verdict_text

            text = "\n".join(
                for_terminal(line) for line in verdict_text(verdicts).splitlines()
            )
            print(text, file=sys.stderr)  # noqa: T201


class SessionTarget:
    """Where one profile's records go: its session, the store writer, the live view.

    The collector opens the session through :meth:`begin` once it knows the device; a
    failure after that keeps the session and its runs (:meth:`fail`).
    """

    def __init__(  # noqa: PLR0913  (the profile's collaborators)
        self,
        plan: Plan,
        cell: CellCode,
        *,
        store: RunStore,
        writer: StoreWriter,
        request: ProfileRequest,
        on_session: Callable[[int], None] | None = None,
    ) -> None:
        """Prepare to open a session for ``plan`` when the collector begins."""
        self._plan = plan
        self._cell = cell
        self._store = store
        self._writer = writer
        self._request = request
        self._on_session = on_session
        self.id: int | None = None
        self.display: View | None = None
        self.peaks: Peaks | None = None
        self.done: list[RunRecord] = []

    def output(self) -> Output:
        """The hooks handed to the collector."""
        from nsight_lab.contract.collector import Output

        shown = self._request.display != "none"
        return Output(
            self.begin, self.sink, self.progress if shown else None, note=self.note
        )

    def begin(self, device_name: str | None, notes: Sequence[str]) -> int:
        """Create the session, show the live view; return the session id."""
        from nsight_lab.contract.registry import backend_entry
        from nsight_lab.roofline.peaks import known_peaks

        plan, options = self._plan, self._plan.options
        notes = [*self._request.notes, *notes]
        session = self._store.create_session(
            backend=plan.backend,
            backend_reason=plan.backend_reason,
            name=options.name,
            notebook=self._request.notebook,
            device=device_name,
            host=socket.gethostname(),
            options=options.to_json(),
            configs=plan.configs,
            runs_planned=plan.runs_planned,
            cell_source=self._cell.source,
            notes=list(notes),
        )
        self.id = session.id
        if self._on_session is not None:
            self._on_session(session.id)
        header = (
            f"{self._request.label} session {session.id}: backend {plan.backend} "
            f"({plan.backend_reason}) on {device_name}"
        ) + "".join(f"\n  note: {n}" for n in notes)
        if self._request.display == "widget":
            from nsight_lab.views.bundle import session_link
            from nsight_lab.views.live import WidgetView  # plotly, anywidget

            self.display = WidgetView(
                session_id=session.id,
                header=header,
                sidebar_link=session_link(session.id, session.uuid),
            )
        elif self._request.display == "text":
            self.display = TextView(header)
        on_host = backend_entry(plan.backend).on_host
        self.peaks = known_peaks(self._store, device_name, cpu=on_host)
        return session.id

    def note(self, text: str) -> None:
        """Keep a note the collector learned while running (pm's interval)."""
        if self.id is not None:
            self._store.add_note(self.id, text)

    def sink(self, batch: list[RunRecord]) -> None:
        """Keep ``batch`` for a failure's count and hand it to the store writer."""
        self.done.extend(batch)
        self._writer.put(batch)

    def progress(self, now: Progress) -> None:
        """Show the progress in the live view."""
        if self.display is not None:
            self.display.update(now)

    def session_id(self) -> int:
        """The session the collector began.

        Raises:
            MeasurementError: The collector returned without beginning one.
        """
        if self.id is None:  # pragma: no cover - every collector begins
            msg = f"the {self._plan.backend} collector returned without a session"
            raise MeasurementError(msg)
        return self.id

    def fail(self, exc: BaseException) -> None:
        """Record how the profile ended early (see :func:`record_failure`).

        Raises:
            NsightLabError: ``exc`` as one line that says the session was kept.
        """
        if self.id is None:  # the backend could not start: nothing to keep
            return
        ended = record_failure(self._store, self.id, exc, self.done)
        if self.display is not None:
            _finish_display(
                self._store,
                self.id,
                lambda view: view.finish(
                    None, ended.stored, status=ended.status, message=ended.message
                ),
                self.display,
            )
        if ended.instead is not None:
            raise ended.instead from exc


def _finish_display(
    store: RunStore, session_id: int, show: Callable[[View], None], view: View
) -> None:
    """Show how the profile ended; a failure of the view is one line, not the end.

    The session and its runs are stored whatever the view does: a view that raises
    leaves a note in the session and one line on stderr naming it, and the profile
    goes on (the magic still binds ``--out`` and returns the DataFrame).
    """
    try:
        show(view)
    except Exception as exc:  # noqa: BLE001  (any failure of the view: said, not raised)
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        note = f"the final display failed ({reason}); the results are stored"
        with contextlib.suppress(NsightLabError):
            store.add_note(session_id, note)
        print(  # noqa: T201
            f"nsight-lab session {session_id}: {note}: %nsight show {session_id}",
            file=sys.stderr,
        )


@dataclass(frozen=True)
class Ended:
    """How a profile that ended early was recorded (:func:`record_failure`)."""

    status: SessionStatus
    message: str
    """What the view shows as the reason."""
    instead: BaseException | None
    """Ours, saying the session was kept, to raise instead of the exception."""
    stored: list[RunRecord]
    """The records the store holds (read back): what the view may show."""


@dataclass(frozen=True)
class Stored:
    """What the store holds of a session, read back after the profile ended."""

    runs: int
    """Complete runs (distinct config and run)."""
    rows: int
    """Records (one per region and run)."""
    last: tuple[int, int] | None
    """The newest stored run's (config index, run index)."""


def stored_runs(store: RunStore, session_id: int) -> Stored | str:
    """What the store holds of ``session_id``, or why it could not be read."""
    try:
        runs, last = store.runs_done(session_id)
        rows = store.count_runs_after(session_id)
    except NsightLabError as exc:
        return " ".join(str(exc).split())[:120]
    return Stored(runs, rows, last)


def kept_text(
    session_id: int, stored: Stored | str, handed: Sequence[RunRecord]
) -> str:
    """Say what the store kept of a session, as the store says it.

    The count is read back, not the runs handed to the writer: after a write failed
    (a full disk) those are more than the store holds, and the text names the last
    run that was committed.
    """
    show = f"%nsight show {session_id}"
    if isinstance(stored, str):
        return f"session {session_id} kept, its runs could not be read back ({stored})"
    plural = "" if stored.runs == 1 else "s"
    lost = len({(r.config_index, r.run_index) for r in handed}) - stored.runs
    if stored.rows >= len(handed) or lost <= 0:
        return f"session {session_id} kept with its {stored.runs} run{plural}: {show}"
    last = (
        f", the last config {stored.last[0]} run {stored.last[1]}"
        if stored.last is not None
        else ""
    )
    return (
        f"session {session_id} kept with the {stored.runs} run{plural} the store "
        f"holds{last} ({lost} later run{'' if lost == 1 else 's'} not stored): {show}"
    )


def record_failure(
    store: RunStore, session_id: int, exc: BaseException, done: list[RunRecord]
) -> Ended:
    """Record how a profile ended early; nothing measured is deleted.

    Ctrl-C leaves the session ``interrupted``. Any other failure after runs finished
    (the cell, a region rule, an empty ``annotate()`` name, ``--normalize-against``,
    a store write) leaves it ``failed`` with the reason and its runs; only a bad option
    found before any run was stored leaves nothing behind. Every count said is read
    back from the store (:func:`kept_text`).

    Returns:
        The status and message to show, the error to raise instead of ``exc`` (ours,
        saying the session was kept), if any, and the records the store holds.
    """
    stored = stored_runs(store, session_id)
    kept = kept_text(session_id, stored, done)
    shown = done[: stored.rows] if isinstance(stored, Stored) else []
    if isinstance(exc, KeyboardInterrupt):
        message = "stopped by KeyboardInterrupt"
        with contextlib.suppress(NsightLabError):  # a broken store: say the rest
            store.finish_session(session_id, "interrupted", message)
        _add_note(exc, f"nsight-lab: {kept} (interrupted)")
        return Ended("interrupted", message, None, shown)
    if isinstance(exc, InputError) and isinstance(stored, Stored) and not stored.rows:
        store.delete_session(session_id)
        return Ended("failed", str(exc), None, [])
    error = f"{type(exc).__name__}: {exc}"
    marked = "marked failed"
    try:
        store.finish_session(session_id, "failed", error)
    except NsightLabError as broken:  # a broken store: raise exc itself, say so
        marked = f"not marked failed: {' '.join(str(broken).split())[:100]}"
    if isinstance(exc, NsightLabError):  # shown as one line: say it there
        suffix = f" ({kept})"
        budget = MAX_MESSAGE_CHARS - len(suffix)  # shorten the reason, not the news
        reason = " ".join(str(exc).split())
        if len(reason) > budget:
            reason = reason[: max(budget - 3, 0)] + "..."
        return Ended("failed", error, type(exc)(reason + suffix), shown)
    _add_note(exc, f"nsight-lab: {kept} ({marked})")
    return Ended("failed", error, None, shown)


def _add_note(exc: BaseException, note: str) -> None:
    """Add ``note`` to ``exc``'s traceback (Python 3.11+; nothing before)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(note)
