"""Where one profile's records go (its session, the store writer, the live view).

The collector opens the session through :class:`SessionTarget`; a profile outside a
notebook shows progress lines (:class:`TextView`).
"""

from __future__ import annotations

import contextlib
import socket
import time
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.collector import Output
from nsight_lab.contract.registry import backend_entry
from nsight_lab.errors import MeasurementError, NsightLabError
from nsight_lab.roofline.peaks import known_peaks, measured_peaks
from nsight_lab.session.failure import record_failure
from nsight_lab.session.output import say
from nsight_lab.store.writer import interrupts_deferred
from nsight_lab.text.safe import for_terminal
from nsight_lab.views.answer import backend_line
from nsight_lab.views.verdicts import verdict_text

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from nsight_lab.contract.collector import CellCode
    from nsight_lab.contract.progress import Progress
    from nsight_lab.contract.records import RunRecord, SessionStatus
    from nsight_lab.plan import Plan
    from nsight_lab.roofline.placement import Peaks
    from nsight_lab.session.request import ProfileRequest, View
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.store.writer import StoreWriter


class TextView:
    """Progress lines on stderr (:func:`~.output.say`), for a profile in no notebook.

    At most one line every :data:`INTERVAL_S` while runs arrive, and one at the end
    (nsight-python's progress bar, as lines a log keeps).
    """

    INTERVAL_S = 2.0

    def __init__(self, header: str) -> None:
        """Say ``header`` (session, backend, device, notes)."""
        self._last = time.monotonic()
        say(header)

    def update(
        self,
        progress: Progress,
        records: Sequence[RunRecord] = (),  # noqa: ARG002  (View's signature)
        *,
        force: bool = False,
    ) -> None:
        """Say where the profile stands, now and then."""
        now = time.monotonic()
        if not force and now - self._last < self.INTERVAL_S:
            return
        self._last = now
        elapsed = progress.elapsed_s or 0.0
        say(
            f"  config {progress.config_index + 1}/{progress.configs_total}: "
            f"{progress.runs_done_total}/{progress.runs_planned_total} runs, "
            f"{elapsed:.1f} s" + (f" ({progress.message})" if progress.message else "")
        )

    def finish(
        self,
        records: Sequence[RunRecord],
        peaks: Peaks | None = None,  # noqa: ARG002  (View's signature)
        *,
        status: SessionStatus = "completed",
        message: str = "",
        verdicts: Mapping[str, Any] | None = None,
    ) -> None:
        """Say how the profile ended, and the verdict table if any."""
        runs = len({(r.config_index, r.run_index) for r in records})
        said = f": {message}" if message else ""
        say(f"  {status}, {runs} runs{said}")
        if verdicts:
            text = "\n".join(
                for_terminal(line) for line in verdict_text(verdicts).splitlines()
            )
            say(text)


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
        shown = self._request.display != "none"
        return Output(
            self.begin,
            self.sink,
            self.progress if shown else None,
            note=self.note,
            between_runs=self._writer.between_runs,
        )

    def begin(self, device_name: str | None, notes: Sequence[str]) -> int:
        """Create the session, show the live view; return the session id."""
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
        header = backend_line(
            self._request.label,
            session.id,
            plan.backend,
            plan.backend_reason,
            device_name,
        ) + "".join(f"\n  note: {n}" for n in notes)
        if self._request.display == "widget":
            # plotly and anywidget: loaded only when a notebook shows the widget
            from nsight_lab.viewmodel.roofs import cache_counterpart  # noqa: PLC0415
            from nsight_lab.views.bundle import session_link  # noqa: PLC0415
            from nsight_lab.views.live import WidgetView  # noqa: PLC0415

            self.display = view = WidgetView(
                session_id=session.id,
                header=header,
                sidebar_link=session_link(session.id, session.uuid),
                session=session,
                derive=self._request.derive,
            )
            # The findings judge against %nsight peaks' measured roofs where kept.
            on_host = backend_entry(plan.backend).on_host
            view.model.attainable = measured_peaks(
                self._store, device_name, cpu=on_host
            )
            view.model.counterpart = cache_counterpart(self._store, session)
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

    def progress(self, now: Progress, records: Sequence[RunRecord]) -> None:
        """Show the progress, with the records that came with it, in the live view."""
        if self.display is not None:
            self.display.update(now, records)

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
        with interrupts_deferred():  # a second Ctrl-C must not drop the "kept" line
            ended = record_failure(self._store, self.id, exc, self.done)
            if self.display is not None:
                # Every run measured, as the failure's message counts them: the
                # runs the store holds plus the later ones it could not store.
                finish_display(
                    self._store,
                    self.id,
                    lambda view: view.finish(
                        self.done, status=ended.status, message=ended.message
                    ),
                    self.display,
                )
        if ended.instead is not None:
            raise ended.instead from exc


def finish_display(
    store: RunStore, session_id: int, show: Callable[[View], None], view: View
) -> None:
    """Show how the profile ended; a failure of the view is one line, not the end.

    The session and its runs are stored whatever the view does: a view that raises
    leaves a note in the session and one line (:func:`~.output.say`) naming it, and
    the profile goes on (the magic still binds ``--out`` and returns the DataFrame).
    """
    try:
        show(view)
    except Exception as exc:  # noqa: BLE001  (any failure of the view: said, not raised)
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        note = f"the final display failed ({reason}); the results are stored"
        with contextlib.suppress(NsightLabError):
            store.add_note(session_id, note)
        say(f"nsight-lab session {session_id}: {note}: %nsight show {session_id}")
