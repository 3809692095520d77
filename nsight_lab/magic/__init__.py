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

import dis
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from nsight_lab.analysis.baselines import require_baseline
from nsight_lab.backends.ncu.shipping import free_variables
from nsight_lab.backends.probe import Prober
from nsight_lab.cli.line import line_command, usage
from nsight_lab.contract.collector import CellCode
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.contract.registry import backend_entry, get_collector
from nsight_lab.distributed import follows, rank_collector
from nsight_lab.errors import CellError, NsightLabError
from nsight_lab.magic.frames import interrupted, one_line, user_frames
from nsight_lab.magic.warmup import WarmUp
from nsight_lab.nsight_shim import install_nsight_shim, prepare_child
from nsight_lab.options import check_bindings, parse_options
from nsight_lab.options.namespace import (
    check_isolated_configs,
    configs_from,
    derive_functions,
    resolve_combine,
)
from nsight_lab.plan import ConfigList
from nsight_lab.session import ProfileRequest, plan_profile, profile
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    import types

    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from nsight_lab.contract.collector import Collector
    from nsight_lab.plan import Plan
    from nsight_lab.results import UserDerive
    from nsight_lab.session import Profiled


@magics_class
class NsightMagics(Magics):
    """``%%nsight`` (profile a cell) and ``%nsight`` (doctor, history, show)."""

    def __init__(self, shell: InteractiveShell) -> None:
        """Register on ``shell``."""
        super().__init__(shell)
        self.last_session_id: int | None = None
        self.config_names: set[str] = set()
        """Names a cell's configs bound (and unbound after it), this kernel."""
        self.warm_up = WarmUp()
        """The imports of the first cell, started by :func:`register`."""
        self.prober = Prober()
        """Probes once per cell; keeps what this kernel learned (PM sampling)."""

    @no_var_expand  # done in _expand: IPython's is quadratic in the line's length
    @line_cell_magic
    def nsight(self, line: str, cell: str | None = None) -> Any:  # noqa: ANN401
        """Profile the cell, or run a ``%nsight`` command."""
        __tracebackhide__ = True  # IPython shows no frame of the magic's own
        self.warm_up.wait()  # never import what the warm-up is importing, at once
        try:
            line = self._expand(line)
            if cell is None:
                return self._line(line)
            return self._cell(line, cell)
        except NsightLabError as exc:
            raise UsageError(one_line(str(exc))) from None
        except BaseException as exc:
            self._explain_name_error(exc)
            # The user's cell raised: its traceback starts at the user's frames.
            user_tb = user_frames(exc.__traceback__)
            if user_tb is None and isinstance(exc, KeyboardInterrupt):
                raise interrupted(exc)  # noqa: B904  (the same exception)
            if user_tb is None:  # nsight-lab itself failed: keep every frame
                raise
            raise exc.with_traceback(user_tb)  # noqa: B904  (the same exception)

    def _explain_name_error(self, exc: BaseException) -> None:
        """Say so when the cell failed on a config name an earlier cell bound.

        A function defined in an earlier cell that reads ``n`` escapes
        :meth:`_check_undeclared`; its ``NameError`` gets a note.
        """
        name = getattr(exc, "name", None) if isinstance(exc, NameError) else None
        add_note = getattr(exc, "add_note", None)  # Python 3.11+
        if (
            name in self.config_names
            and add_note is not None
            and self.shell is not None
            and name not in self.shell.user_ns
        ):
            add_note(
                f"nsight-lab: {name!r} was a config of an earlier %%nsight cell and is "
                "unbound again after it; declare it in this cell (--configs or "
                "--param) or assign it in the notebook"
            )

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
        """``%nsight COMMAND``: the CLI's commands (:mod:`nsight_lab.cli.line`)."""
        return line_command(line)

    # -- cell magic -------------------------------------------------------------------
    def _cell(self, line: str, cell: str) -> pd.DataFrame | None:
        if line.strip() in {"--help", "-h"}:
            print(usage())  # noqa: T201
            return None
        shell = self.shell
        assert shell is not None  # noqa: S101  (a registered magic always has a shell)
        options = parse_options(line)
        check_bindings(options, shell.user_ns)
        _check_cell_text(cell)
        functions, notes = derive_functions(options.derive, shell.user_ns)
        options = resolve_combine(options, shell.user_ns)
        config_list = read_configs_from(
            options.configs_from, shell.user_ns, options.config_limit
        )
        if options.baseline is not None:  # refused before anything runs or is stored
            with RunStore() as store:
                require_baseline(store, options.baseline)
        plan = plan_profile(
            options, self.prober, config_list, notebook_derives=functions
        )
        check_isolated_configs(
            plan.bindings, plan.backend, isolated=backend_entry(plan.backend).isolated
        )
        collector = rank_collector(plan, get_collector(plan.backend))
        code = self._cell_code(cell)
        self._check_undeclared(code, plan.param_names)
        install_nsight_shim()
        # The names the configs bind are the cell's: afterwards each is what it was
        # before (or unbound again), so a later cell cannot read the last config.
        saved = {name: shell.user_ns.get(name, _UNBOUND) for name in plan.param_names}
        try:
            done = self._profile(plan, code, collector, functions, notes)
        finally:
            for name, value in saved.items():
                if value is _UNBOUND:
                    shell.user_ns.pop(name, None)
                else:
                    shell.user_ns[name] = value
            self.config_names.update(saved)
        if done is None:
            return None
        for path in done.csv_files:
            print(f"nsight-lab: wrote {path}", file=sys.stderr)  # noqa: T201
        if options.out:
            shell.user_ns[options.out] = done.frame
        # The cell's output is the formatted summary (the widget's final bundle);
        # the raw DataFrame goes only where --out names it.
        return None

    def _profile(
        self,
        plan: Plan,
        code: CellCode,
        collector: Collector[Plan],
        functions: dict[str, UserDerive],
        notes: list[str],
    ) -> Profiled | None:
        """Profile ``code`` into the store; ``None`` on a rank that only follows."""
        from nsight_lab.results import (  # noqa: PLC0415  (pandas: on the first profile)
            DeriveFailures,
            DeriveSpec,
        )

        shell = self.shell
        assert shell is not None  # noqa: S101
        options = plan.options
        if follows(plan, code):  # a rank other than 0 of the kernel's group
            return None
        label = _file_label(options.name or "cell")
        request = ProfileRequest(
            derive=DeriveSpec(
                names=options.derive,
                functions=functions,
                inputs=options.extra_metrics or (TIME_METRIC,),
                failures=DeriveFailures(),
            ),
            notebook=_notebook_path(shell.user_ns),
            display="none" if options.quiet else "widget",
            config_values=plan.bindings,
            csv_tag=lambda session_id: f"{label}-{session_id}",
            notes=notes,
            frame=options.out is not None,  # pandas only for a DataFrame asked for
        )
        with RunStore() as store:
            return profile(
                plan,
                code,
                collector=collector,
                store=store,
                request=request,
                on_session=self._session_began,
            )

    def _check_undeclared(self, code: CellCode, declared: tuple[str, ...]) -> None:
        """Refuse a cell that reads a config name of an earlier cell, now unbound.

        Raises:
            CellError: The cell reads such a name before (or without) assigning it.
        """
        shell = self.shell
        assert shell is not None  # noqa: S101
        gone = {
            name: None
            for name in self.config_names
            if name not in declared and name not in shell.user_ns
        }
        if not gone:
            return
        assigned = _assigned_names(code.code)
        for name in free_variables(code.code, gone):
            if name not in assigned:
                how = "--configs V1,V2" if name == "n" else f"--param {name}=V1,V2"
                msg = (
                    f"%%nsight: the cell reads {name!r}, a config of an earlier "
                    "%%nsight cell, unbound again after it; declare it in this cell "
                    f"({how}) or assign it in the notebook first"
                )
                raise CellError(msg)

    def _session_began(self, session_id: int) -> None:
        self.last_session_id = session_id

    def _cell_code(self, cell: str) -> CellCode:
        """The cell as typed, as plain Python and compiled, with the user namespace."""
        shell = self.shell
        assert shell is not None  # noqa: S101
        python = shell.transform_cell(cell)
        filename = shell.compile.cache(cell, shell.execution_count)  # "Cell In[N]"
        return CellCode(
            source=cell,
            python=python,
            code=compile(python, filename, "exec"),
            namespace=shell.user_ns,
            prepare=prepare_child,
        )


MAX_EXPANDED_CHARS = 4_096
"""Longest magic line whose ``$name``/``{expr}`` are expanded (see ``_expand``)."""
_MAGIC_RUNNERS = frozenset({"run_cell_magic", "run_line_magic"})
_UNBOUND = object()
"""A name the notebook did not bind before the cell."""


def _assigned_names(code: types.CodeType) -> set[str]:
    """The names a cell's top level assigns or imports anywhere in it."""
    return {
        str(instr.argval)
        for instr in dis.get_instructions(code)
        if instr.opname in {"STORE_NAME", "STORE_GLOBAL"}
    }


def _check_cell_text(cell: str) -> None:
    """Refuse a cell the store cannot keep (its source is stored as UTF-8 text).

    Raises:
        CellError: The cell holds a lone surrogate; says on which line.
    """
    for number, text in enumerate(cell.splitlines(), start=1):
        bad = next((c for c in text if 0xD800 <= ord(c) <= 0xDFFF), None)  # noqa: PLR2004
        if bad is not None:
            msg = (
                f"%%nsight: line {number} of the cell holds a lone surrogate "
                f"(U+{ord(bad):04X}), which cannot be stored as text; remove it"
            )
            raise CellError(msg)


def read_configs_from(
    spec: str | None, user_ns: dict[str, Any], limit: int
) -> ConfigList | None:
    """``--configs-from [NAMES=]VAR``: the explicit config list in the notebook.

    Raises:
        OptionError: See :func:`nsight_lab.options.namespace.configs_from`.
    """
    found = configs_from(spec, user_ns, limit)
    return None if found is None else ConfigList(names=found[0], values=found[1])


def _file_label(name: str) -> str:
    """``name`` as a safe part of a file name (``--output-csv``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:60] or "cell"


def _notebook_path(user_ns: dict[str, Any]) -> str | None:
    session = user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME")
    return str(session) if session else None


def register(shell: InteractiveShell) -> NsightMagics:
    """Register the magics on ``shell`` (their warm-up started); return them.

    ``import nsight`` then resolves to nsight-lab's stand-in.
    """
    magics = NsightMagics(shell)
    shell.register_magics(magics)
    install_nsight_shim()
    magics.warm_up.start()
    return magics
