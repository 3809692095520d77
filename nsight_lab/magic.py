"""The ``%%nsight`` cell magic and the ``%nsight`` line magic.

Options -> plan -> backend -> runner -> store -> DataFrame. This module is the boundary
between the user and nsight-lab: an :class:`NsightLabError` is shown as one line without
a traceback (as IPython's ``UsageError``); exceptions from the user's cell propagate
unchanged after the runs finished so far are stored and the session is marked.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import socket
import sys
import types
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from nsight_lab.errors import NsightLabError, OptionError
from nsight_lab.regions import annotate

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from nsight_lab.plan import Plan
    from nsight_lab.records import JsonScalar, RunRecord, SessionStatus
    from nsight_lab.results import UserDerive
    from nsight_lab.runner import Progress
    from nsight_lab.store.run_store import RunStore

    Sink = Callable[[list[RunRecord]], None]
    ProgressHook = Callable[[Progress], None]

USAGE = (
    "%%nsight [options]        profile the annotated regions of this cell\n"
    "  --configs V1,V2,...      values bound to `n`, one config each\n"
    "  --param NAME=V1,V2,...   "
    "a named parameter (repeatable; the grid is their product)\n"
    "  --runs N                 "
    "measured runs per config (default 10; minimum with --target-rsd)\n"
    "  --warmup N               untimed runs per config first (default 2)\n"
    "  --metrics M1,M2          "
    "Nsight Compute metrics (beyond gpu__time_duration.sum: ncu backend)\n"
    "  --backend B              auto|cpu|events|cupti|ncu (default auto)\n"
    "  --cache-control C        "
    "all|none: flush the L2 before each region (default all)\n"
    "  --clock-control C        base|none: lock the SM clock to base (default none)\n"
    "  --thermal T              "
    "auto|off: wait for thermal headroom before runs (default auto)\n"
    "  --derive D1,D2           "
    "tflops|gbps|NAME (NAME(duration_ns, **config) in the notebook)\n"
    "  --normalize-against A    "
    "divide every value column by region A's mean, per config\n"
    "  --combine C              "
    "sum|max|first: kernels of one region (cupti/ncu backends)\n"
    "  --target-rsd PCT         keep adding runs until the RSD is below PCT ...\n"
    "  --max-time S             "
    "... or S seconds passed per config (default 10 with --target-rsd)\n"
    "  --name LABEL             a label for the session in the history\n"
    "  --out VAR                also store the results DataFrame in VAR\n"
    "  --max-configs N          "
    "allow a grid of up to N configs (default 10,000)\n"
    "  --isolate                run the cell in a child process (ncu backend)\n"
    "  --quiet                  no progress display and no table output\n"
    "%nsight doctor | history [N] | show ID | peaks [--cpu] [--refresh] | help"
)


def _install_nsight_module() -> None:
    """Make ``import nsight`` work in cells when NVIDIA's nsight-python is absent."""
    if "nsight" in sys.modules or importlib.util.find_spec("nsight") is not None:
        return
    shim = types.ModuleType(
        "nsight", "nsight-lab's stand-in for nsight-python's annotate"
    )
    shim.annotate = annotate  # type: ignore[attr-defined]
    shim.__nsight_lab_shim__ = True  # type: ignore[attr-defined]
    sys.modules["nsight"] = shim


@contextmanager
def _nsight_python_routed() -> Iterator[None]:
    """Route nsight-python's ``nsight.annotate`` to ours during a profiled cell."""
    module = sys.modules.get("nsight")
    if module is None and importlib.util.find_spec("nsight") is not None:
        os.environ.setdefault("NSPY_NCU_INIT_AT_IMPORT", "0")  # no ncu probe at import
        import nsight as module  # type: ignore[no-redef]
    if module is None or getattr(module, "__nsight_lab_shim__", False):
        yield
        return
    original = module.annotate
    # nsight-python is untyped: mypy sees a bare ModuleType without ``annotate``.
    module.annotate = annotate  # type: ignore[attr-defined]
    try:
        yield
    finally:
        module.annotate = original  # type: ignore[attr-defined]


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
        try:
            line = self._expand(line)
            if cell is None:
                return self._line(line)
            return self._cell(line, cell)
        except NsightLabError as exc:
            raise UsageError(_one_line(str(exc))) from None

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
            print(USAGE)  # noqa: T201  (the magic's own output)
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
        from nsight_lab.roofline.placement import Peaks, peaks_for
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
        from nsight_lab.backends import get_backend, probe_all
        from nsight_lab.options import check_bindings, parse_options
        from nsight_lab.plan import make_plan
        from nsight_lab.runner import Runner
        from nsight_lab.store.run_store import RunStore

        if line.strip() in {"--help", "-h"}:
            print(USAGE)  # noqa: T201
            return None
        shell = self.shell
        assert shell is not None  # noqa: S101  (a registered magic always has a shell)
        options = parse_options(line)
        check_bindings(options, shell.user_ns)
        _check_cell_text(cell)
        functions = _derive_functions(options.derive, shell.user_ns)
        plan = make_plan(options, probe_all())
        source = shell.transform_cell(cell)
        filename = shell.compile.cache(cell)
        code = compile(source, filename, "exec")
        _install_nsight_module()

        if plan.backend == "ncu":
            # Isolated: the cell runs in a child Python under ncu
            # (nsight_lab.backends.ncu.isolate).
            from nsight_lab.backends.ncu.isolate import run_isolated

            def isolated(
                session_id: int, sink: Sink, progress: ProgressHook | None
            ) -> list[RunRecord]:
                return run_isolated(
                    plan, source, shell.user_ns, session_id, sink, on_progress=progress
                )

            notes = [
                (
                    f"isolated under ncu: --cache-control {options.cache_control}, "
                    f"--clock-control {options.clock_control} passed to ncu"
                ),
            ]
            with RunStore() as store:
                frame = self._profile(
                    plan, cell, functions, store, _gpu_name(), notes, isolated
                )
        else:
            measurement = get_backend(plan.backend).open(options)
            model = None
            # Model FLOPs/bytes for --derive, and for the roofline whenever a warm-up
            # run can carry the counting pass at no extra execution of the cell.
            if plan.model_work or (
                options.warmup >= 1 and importlib.util.find_spec("torch") is not None
            ):
                from nsight_lab.roofline.workmodel import count_work

                model = count_work

            def body(config: dict[str, JsonScalar]) -> None:
                shell.user_ns.update(config)
                exec(code, shell.user_ns)  # noqa: S102  (running the user's cell is the point)

            def in_process(
                session_id: int, sink: Sink, progress: ProgressHook | None
            ) -> list[RunRecord]:
                runner = Runner(
                    plan,
                    measurement,
                    session_id,
                    sink,
                    on_progress=progress,
                    model_work=model,
                )
                with _nsight_python_routed():
                    return runner.run(body)

            try:
                with RunStore() as store:
                    frame = self._profile(
                        plan,
                        cell,
                        functions,
                        store,
                        measurement.device_name,
                        measurement.notes,
                        in_process,
                    )
            finally:
                measurement.close()  # undoes clock locks even when the cell failed
        if options.out:
            shell.user_ns[options.out] = frame
        return None if options.quiet else frame

    def _profile(  # noqa: PLR0913, PLR0917  (private; the pieces _cell has built)
        self,
        plan: Plan,
        cell: str,
        functions: dict[str, UserDerive],
        store: RunStore,
        device_name: str | None,
        notes: list[str],
        execute: Callable[[int, Sink, ProgressHook | None], list[RunRecord]],
    ) -> pd.DataFrame:
        """Create the session, run ``execute`` with a store writer, build results.

        Nothing measured is deleted: a failure after runs finished leaves the session
        ``failed`` with its runs, and the error names it; only a bad option found
        before any run finished leaves nothing behind.
        """
        from nsight_lab.results import DeriveFailures, to_dataframe
        from nsight_lab.roofline.peaks import known_peaks
        from nsight_lab.roofline.placement import place_session
        from nsight_lab.store.writer import StoreWriter
        from nsight_lab.views.live import WidgetView

        shell = self.shell
        assert shell is not None  # noqa: S101
        options = plan.options
        session = store.create_session(
            backend=plan.backend,
            backend_reason=plan.backend_reason,
            name=options.name,
            notebook=_notebook_path(shell.user_ns),
            device=device_name,
            host=socket.gethostname(),
            options=options.to_json(),
            configs=plan.configs,
            runs_planned=plan.runs_planned,
            cell_source=cell,
            notes=list(notes),
        )
        self.last_session_id = session.id
        header = (
            f"nsight-lab session {session.id}: backend {plan.backend} "
            f"({plan.backend_reason}) on {device_name}"
        )
        display = (
            None
            if options.quiet
            else WidgetView(
                session_id=session.id,
                header=header + "".join(f"\n  note: {n}" for n in notes),
                sidebar_link=f"#nsight-lab/sessions/{session.id}",
            )
        )
        peaks = known_peaks(store, device_name, cpu=plan.backend == "cpu")
        writer = StoreWriter(store)
        done: list[RunRecord] = []

        def sink(batch: list[RunRecord]) -> None:
            done.extend(batch)
            writer.put(batch)

        def end(status: SessionStatus, message: str) -> None:
            if display is not None:
                display.finish(None, done, status=status, message=message)

        derive_failures = DeriveFailures()
        try:
            with writer:
                records = execute(session.id, sink, display.update if display else None)
            frame = to_dataframe(
                records,
                store.get_session(session.id),
                options.param_names,
                derive=options.derive,
                functions=functions,
                normalize_against=options.normalize_against,
                peaks=peaks,
                derive_failures=derive_failures,
            )
        except BaseException as exc:
            status, message, instead = _record_failure(store, session.id, exc, done)
            end(status, message)
            if instead is not None:
                raise instead from exc
            raise
        store.finish_session(session.id, "completed")
        if derive_failures:
            # The durations stand; each failing derive function and config gets one
            # line, in the session's notes and under the cell.
            frame.attrs["notes"] = derive_failures.notes()
            for note in frame.attrs["notes"]:
                store.add_note(session.id, note)
                print(f"nsight-lab session {session.id}: {note}", file=sys.stderr)  # noqa: T201
        if display is not None:
            placed = place_session(records, peaks) if peaks else []
            display.finish(frame, records, placed, peaks)
        return frame


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


def _gpu_name() -> str | None:
    """The first GPU's name through NVML (the isolated path has no CUDA context)."""
    from nsight_lab.gpu.stack import nvml_devices

    try:
        devices = nvml_devices()
    except NsightLabError:
        return None
    return devices[0].name if devices else None


def _notebook_path(user_ns: dict[str, Any]) -> str | None:
    session = user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME")
    return str(session) if session else None


def register(shell: InteractiveShell) -> None:
    """Register the magics on ``shell`` and make ``import nsight`` resolve."""
    shell.register_magics(NsightMagics)
    _install_nsight_module()
