"""The ``%%nsight`` cell magic and the ``%nsight`` line magic.

Options -> plan -> collector -> records -> store -> DataFrame. The magic builds the
plan, takes the plan's collector from the registry (:mod:`nsight_lab.backends`) and
stores what it hands over; it knows nothing of how any backend measures. This module is
the boundary between the user and nsight-lab: an :class:`NsightLabError` is shown as
one line without a traceback (as IPython's ``UsageError``); exceptions from the user's
cell propagate unchanged after the runs finished so far are stored and the session is
marked, their traceback starting at the user's frames (nsight-lab's are cut off).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from nsight_lab import wait_for_warm_up
from nsight_lab.errors import MeasurementError, NsightLabError, OptionError
from nsight_lab.regions import install_nsight_shim

if TYPE_CHECKING:
    import types
    from collections.abc import Sequence

    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from nsight_lab.backends import CellCode, Collector, Output
    from nsight_lab.plan import Plan
    from nsight_lab.records import RunRecord, SessionStatus
    from nsight_lab.results import UserDerive
    from nsight_lab.roofline.placement import Peaks
    from nsight_lab.runner import Progress
    from nsight_lab.store.run_store import RunStore
    from nsight_lab.store.writer import StoreWriter
    from nsight_lab.views.live import WidgetView

LINE_COMMANDS = (
    "%nsight doctor | history [N] | show ID | peaks [--cpu] [--refresh] | help"
)
"""The line magic's commands, listed under the options by :func:`usage`."""


def usage() -> str:
    """The ``%nsight help`` / ``%%nsight --help`` text.

    The option lines are generated from :data:`nsight_lab.options.OPTIONS`, the one
    declaration of the options; then the line magic's commands.
    """
    from nsight_lab.options import help_text

    return f"{help_text()}\n{LINE_COMMANDS}"


@magics_class
class NsightMagics(Magics):
    """``%%nsight`` (profile a cell) and ``%nsight`` (doctor, history, show)."""

    def __init__(self, shell: InteractiveShell) -> None:
        """Register on ``shell``."""
        super().__init__(shell)
        self.last_session_id: int | None = None

    @no_var_expand  # done in _expand: IPython's is quadratic in the line's length
    @line_cell_magic
    def nsight(self, line: str, cell: str | None = None) -> Any:  # noqa: ANN401
        """Profile the cell, or run a ``%nsight`` command."""
        __tracebackhide__ = True  # IPython shows no frame of the magic's own
        wait_for_warm_up()  # never import what the warm-up is importing, at once
        try:
            line = self._expand(line)
            if cell is None:
                return self._line(line)
            return self._cell(line, cell)
        except NsightLabError as exc:
            raise UsageError(_one_line(str(exc))) from None
        except BaseException as exc:
            # The user's cell raised: its traceback starts at the user's frames.
            user_tb = _user_frames(exc.__traceback__)
            if user_tb is None:  # nsight-lab itself failed: keep every frame
                raise
            raise exc.with_traceback(user_tb)  # noqa: B904  (the same exception)

    def _expand(self, line: str) -> str:
        """Expand ``$name`` and ``{expr}`` as IPython does, in lines of modest length.

        IPython's expansion takes seconds on a line of 30,000 characters (its pattern
        is quadratic); longer lines are taken as written (the options refuse them).
        """
        shell = self.shell
        if (
            shell is None
            or len(line) > MAX_EXPANDED_CHARS
            or ("$" not in line and "{" not in line)
        ):
            return line
        depth = 0
        frame: types.FrameType | None = sys._getframe(1)  # noqa: SLF001
        while frame is not None and frame.f_code.co_name not in _MAGIC_RUNNERS:
            frame, depth = frame.f_back, depth + 1
        # var_expand looks ``depth + 1`` frames above itself: the runner's caller.
        return str(shell.var_expand(line, depth + 2 if frame is not None else 0))

    # -- line magic -------------------------------------------------------------------
    def _line(self, line: str) -> Any:  # noqa: ANN401
        words = line.split()
        command = words[0] if words else "help"
        if command in {"help", "--help", "-h"}:
            print(usage())  # noqa: T201  (the magic's own output)
            return None
        if command == "doctor":
            from nsight_lab.doctor import format_checks, run_checks

            print(format_checks(run_checks()))  # noqa: T201
            return None
        if command == "history":
            return self._history(words[1:])
        if command == "show":
            return self._show(words[1:])
        if command == "peaks":
            return self._peaks(words[1:])
        msg = (
            f"unknown %nsight command {_shown(command)}; "
            "expected doctor, history, show, peaks or help"
        )
        raise OptionError(msg)

    def _history(self, args: list[str]) -> pd.DataFrame:
        from nsight_lab.history import sessions_frame
        from nsight_lab.store.run_store import RunStore

        limit = 20
        if args:
            given = _whole(args[0]) if len(args) == 1 else None
            if given is None or given < 1:
                msg = (
                    "%nsight history: expected a positive number of sessions, "
                    f"got {_shown(' '.join(args))}"
                )
                raise OptionError(msg)
            limit = given
        with RunStore() as store:
            store.mark_interrupted()
            return sessions_frame(store, store.list_sessions(limit=limit))

    def _peaks(self, args: list[str]) -> pd.DataFrame:
        """Measure (once per device; cached in the store) and show attainable peaks."""
        import pandas as pd

        from nsight_lab.roofline.peaks import cached_peaks, device_name
        from nsight_lab.roofline.placement import peaks_for
        from nsight_lab.store.run_store import RunStore

        unknown = [a for a in args if a not in {"--cpu", "--refresh"}]
        if unknown:
            msg = (
                f"%nsight peaks: unknown argument {unknown[0]!r}; "
                "expected --cpu and/or --refresh"
            )
            raise OptionError(msg)
        import torch

        cuda = "--cpu" not in args and torch.cuda.is_available()
        device = "cuda" if cuda else "cpu"
        name = device_name(device)
        with RunStore() as store:
            measured = cached_peaks(
                store, name, device=device, refresh="--refresh" in args
            )
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

    def _show(self, args: list[str]) -> pd.DataFrame:
        from nsight_lab.history import session_results
        from nsight_lab.store.run_store import RunStore

        session_id = _whole(args[0]) if len(args) == 1 else None
        if session_id is None or session_id < 1:
            msg = (
                "%nsight show: expected one session id (see %nsight history), "
                f"got {_shown(' '.join(args))}"
            )
            raise OptionError(msg)
        with RunStore() as store:
            return session_results(store, session_id)

    # -- cell magic -------------------------------------------------------------------
    def _cell(self, line: str, cell: str) -> pd.DataFrame | None:
        from nsight_lab.backends import get_collector, probe_all
        from nsight_lab.options import check_bindings, parse_options
        from nsight_lab.plan import make_plan
        from nsight_lab.store.run_store import RunStore

        if line.strip() in {"--help", "-h"}:
            print(usage())  # noqa: T201
            return None
        shell = self.shell
        assert shell is not None  # noqa: S101  (a registered magic always has a shell)
        options = parse_options(line)
        check_bindings(options, shell.user_ns)
        _check_cell_text(cell)
        functions = _derive_functions(options.derive, shell.user_ns)
        plan = make_plan(options, probe_all())
        collector = get_collector(plan.backend)
        code = self._cell_code(cell)
        install_nsight_shim()
        with RunStore() as store:
            frame = self._profile(plan, code, functions, store, collector)
        if options.out:
            shell.user_ns[options.out] = frame
        return None if options.quiet else frame

    def _cell_code(self, cell: str) -> CellCode:
        """The cell as typed, as plain Python and compiled, with the user namespace."""
        from nsight_lab.backends import CellCode

        shell = self.shell
        assert shell is not None  # noqa: S101
        python = shell.transform_cell(cell)
        filename = shell.compile.cache(cell, shell.execution_count)  # "Cell In[N]"
        return CellCode(
            source=cell,
            python=python,
            code=compile(python, filename, "exec"),
            namespace=shell.user_ns,
        )

    def _profile(
        self,
        plan: Plan,
        cell: CellCode,
        functions: dict[str, UserDerive],
        store: RunStore,
        collector: Collector,
    ) -> pd.DataFrame:
        """Let ``collector`` measure the cell into a new session; build the results.

        Nothing measured is deleted: a failure after runs finished leaves the session
        ``failed`` with its runs, and the error names it; only a bad option found
        before any run finished leaves nothing behind.
        """
        from nsight_lab.results import DeriveFailures, to_dataframe
        from nsight_lab.roofline.placement import place_session
        from nsight_lab.store.writer import StoreWriter

        shell = self.shell
        assert shell is not None  # noqa: S101
        options = plan.options
        writer = StoreWriter(store)
        notebook = _notebook_path(shell.user_ns)
        target = _SessionTarget(plan, cell, store, writer, notebook)
        derive_failures = DeriveFailures()
        try:
            with writer:
                records = collector.collect(plan, cell, target.output())
            session_id = target.session_id()
            frame = to_dataframe(
                records,
                store.get_session(session_id),
                options.param_names,
                derive=options.derive,
                functions=functions,
                normalize_against=options.normalize_against,
                peaks=target.peaks,
                derive_failures=derive_failures,
            )
        except BaseException as exc:
            target.fail(exc)
            raise
        finally:
            if target.id is not None:
                self.last_session_id = target.id
        store.finish_session(session_id, "completed")
        if derive_failures:
            # The durations stand; each failing derive function and config gets one
            # line, in the session's notes and under the cell.
            frame.attrs["notes"] = derive_failures.notes()
            for note in frame.attrs["notes"]:
                store.add_note(session_id, note)
                print(f"nsight-lab session {session_id}: {note}", file=sys.stderr)  # noqa: T201
        if target.display is not None:
            placed = place_session(records, target.peaks) if target.peaks else []
            target.display.finish(frame, records, placed, target.peaks)
        return frame


class _SessionTarget:
    """Where one profile's records go: its session, the store writer, the live view.

    The collector opens the session through :meth:`begin` once it knows the device; a
    failure after that keeps the session and its runs (:meth:`fail`).
    """

    def __init__(
        self,
        plan: Plan,
        cell: CellCode,
        store: RunStore,
        writer: StoreWriter,
        notebook: str | None,
    ) -> None:
        """Prepare to open a session for ``plan`` when the collector begins."""
        self._plan = plan
        self._cell = cell
        self._store = store
        self._writer = writer
        self._notebook = notebook
        self.id: int | None = None
        self.display: WidgetView | None = None
        self.peaks: Peaks | None = None
        self.done: list[RunRecord] = []

    def output(self) -> Output:
        """The hooks handed to the collector."""
        from nsight_lab.backends import Output

        quiet = self._plan.options.quiet
        return Output(self.begin, self.sink, None if quiet else self.progress)

    def begin(self, device_name: str | None, notes: Sequence[str]) -> int:
        """Create the session, show the live view; return the session id."""
        from nsight_lab.backends import backend_entry
        from nsight_lab.roofline.peaks import known_peaks

        plan, options = self._plan, self._plan.options
        session = self._store.create_session(
            backend=plan.backend,
            backend_reason=plan.backend_reason,
            name=options.name,
            notebook=self._notebook,
            device=device_name,
            host=socket.gethostname(),
            options=options.to_json(),
            configs=plan.configs,
            runs_planned=plan.runs_planned,
            cell_source=self._cell.source,
            notes=list(notes),
        )
        self.id = session.id
        header = (
            f"nsight-lab session {session.id}: backend {plan.backend} "
            f"({plan.backend_reason}) on {device_name}"
        )
        if not options.quiet:
            from nsight_lab.views.live import WidgetView  # plotly, anywidget

            self.display = WidgetView(
                session_id=session.id,
                header=header + "".join(f"\n  note: {n}" for n in notes),
                sidebar_link=f"#nsight-lab/sessions/{session.id}",
            )
        on_host = backend_entry(plan.backend).on_host
        self.peaks = known_peaks(self._store, device_name, cpu=on_host)
        return session.id

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
        """Record how the profile ended early (see :func:`_record_failure`).

        Raises:
            NsightLabError: ``exc`` as one line that says the session was kept.
        """
        if self.id is None:  # the backend could not start: nothing to keep
            return
        status, message, instead = _record_failure(self._store, self.id, exc, self.done)
        if self.display is not None:
            self.display.finish(None, self.done, status=status, message=message)
        if instead is not None:
            raise instead from exc


def _record_failure(
    store: RunStore, session_id: int, exc: BaseException, done: list[RunRecord]
) -> tuple[SessionStatus, str, BaseException | None]:
    """Record how a profile ended early; nothing measured is deleted.

    Ctrl-C leaves the session ``interrupted``. Any other failure after runs finished
    (the cell, a region rule, an empty ``annotate()`` name, ``--normalize-against``)
    leaves it ``failed`` with the reason and its runs; only a bad option found before
    any run finished leaves nothing behind.

    Returns:
        The status and message to show, and the error to raise instead of ``exc``
        (ours, saying the session was kept), if any.
    """
    if isinstance(exc, KeyboardInterrupt):
        message = "stopped by KeyboardInterrupt"
        store.finish_session(session_id, "interrupted", message)
        return "interrupted", message, None
    runs = len({(r.config_index, r.run_index) for r in done})
    if isinstance(exc, OptionError) and not runs:
        store.delete_session(session_id)
        return "failed", str(exc), None
    error = f"{type(exc).__name__}: {exc}"
    with contextlib.suppress(NsightLabError):  # a broken store: raise exc itself
        store.finish_session(session_id, "failed", error)
    kept = (
        f"session {session_id} kept with its {runs} run{'' if runs == 1 else 's'}: "
        f"%nsight show {session_id}"
    )
    if isinstance(exc, NsightLabError):  # shown as one line: say it there
        suffix = f" ({kept})"
        budget = MAX_MESSAGE_CHARS - len(suffix)  # shorten the reason, not the news
        reason = " ".join(str(exc).split())
        if len(reason) > budget:
            reason = reason[: budget - 3] + "..."
        return "failed", error, type(exc)(reason + suffix)
    if isinstance(exc, Exception) and hasattr(exc, "add_note"):  # Python 3.11+
        exc.add_note(f"nsight-lab: {kept} (marked failed)")
    return "failed", error, None


MAX_MESSAGE_CHARS = 300
"""Longest error message the magic shows (the options already quote values short)."""
MAX_EXPANDED_CHARS = 4_096
"""Longest magic line whose ``$name``/``{expr}`` are expanded (see ``_expand``)."""
_MAGIC_RUNNERS = frozenset({"run_cell_magic", "run_line_magic"})
_PACKAGE_DIR = f"{Path(__file__).parent}{os.sep}"


def _user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` from its first frame outside nsight-lab (the user's cell) on.

    Returns:
        That part of ``tb``, or ``None`` when every frame is nsight-lab's.
    """
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            return tb
        tb = tb.tb_next
    return None


def _one_line(message: str) -> str:
    """The message as one printable line of at most :data:`MAX_MESSAGE_CHARS`.

    A safety net for messages built from user text: newlines become spaces, control
    characters and lone surrogates are escaped, and an over-long message is cut.
    """
    text = " ".join(message.split())
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    return text


def _whole(text: str) -> int | None:
    """``text`` as a whole number an SQLite INTEGER holds, else ``None``.

    ASCII digits only (``str.isdigit`` accepts ``'²'``, which ``int`` refuses), and
    checked before ``int()`` (which refuses more than 4,300 digits).
    """
    if not re.fullmatch(r"[0-9]{1,18}", text, re.ASCII):
        return None
    return int(text)


def _shown(text: str) -> str:
    """``text`` quoted for a one-line message: ``repr``, cut to 80 characters."""
    from nsight_lab.options import shown

    return shown(text)


def _check_cell_text(cell: str) -> None:
    """Refuse a cell the store cannot keep (its source is stored as UTF-8 text).

    Raises:
        OptionError: The cell holds a lone surrogate; says on which line.
    """
    for number, text in enumerate(cell.splitlines(), start=1):
        bad = next((c for c in text if 0xD800 <= ord(c) <= 0xDFFF), None)  # noqa: PLR2004
        if bad is not None:
            msg = (
                f"%%nsight: line {number} of the cell holds a lone surrogate "
                f"(U+{ord(bad):04X}), which cannot be stored as text; remove it"
            )
            raise OptionError(msg)


def _derive_functions(
    names: tuple[str, ...], user_ns: dict[str, Any]
) -> dict[str, UserDerive]:
    """The notebook's functions named by ``--derive`` (built-in names excluded).

    Raises:
        OptionError: A named function is not defined in the notebook.
    """
    from nsight_lab.options import BUILTIN_DERIVED

    functions: dict[str, UserDerive] = {}
    for name in names:
        if name in BUILTIN_DERIVED:
            continue
        func = user_ns.get(name)
        if not callable(func):
            msg = (
                f"--derive {name}: no function named {name!r} in the notebook; "
                f"define def {name}(duration_ns, **config) first, "
                "or use tflops or gbps"
            )
            raise OptionError(msg)
        functions[name] = func
    return functions


def _notebook_path(user_ns: dict[str, Any]) -> str | None:
    session = user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME")
    return str(session) if session else None


def register(shell: InteractiveShell) -> None:
    """Register the magics on ``shell`` and make ``import nsight`` resolve."""
    shell.register_magics(NsightMagics)
    install_nsight_shim()
