"""The ``%%nsight`` cell magic and the ``%nsight`` line magic.

The cell magic parses the option line and hands the options and the cell to
:func:`nsight_lab.session.run_cell`, the one place a profile is assembled and run
(resolve in the notebook -> plan -> collect -> store -> views); it keeps what is
IPython's: expanding the line, compiling the cell, the errors. This module is
the boundary between the user and nsight-lab: an :class:`NsightLabError` is shown as
one line without a traceback (as IPython's ``UsageError``); exceptions from the user's
cell propagate unchanged after the runs finished so far are stored and the session is
marked, their traceback starting at the user's frames (nsight-lab's are cut off).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from nsight_lab.backends.probe import Prober
from nsight_lab.cli.line import line_command, usage
from nsight_lab.contract.collector import CellCode
from nsight_lab.errors import NsightLabError
from nsight_lab.magic.frames import interrupted, one_line, user_frames
from nsight_lab.magic.warmup import WarmUp
from nsight_lab.nsight_shim import install_nsight_shim, prepare_child
from nsight_lab.options import parse_options
from nsight_lab.session import NotebookCell, run_cell

if TYPE_CHECKING:
    import types

    from IPython.core.interactiveshell import InteractiveShell


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

        A function defined in an earlier cell that reads ``n`` escapes the check of
        the cell's names (:func:`nsight_lab.session.prepare.check_notebook_cell`);
        its ``NameError`` gets a note.
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
    def _cell(self, line: str, cell: str) -> None:
        """``%%nsight``: parse the line; :func:`run_cell` does the rest.

        Nothing is returned: the cell's output is its summary (the widget's final
        bundle), and the DataFrame goes only where ``--out`` names it.
        """
        if line.strip() in {"--help", "-h"}:
            print(usage())  # noqa: T201
            return
        shell = self.shell
        assert shell is not None  # noqa: S101  (a registered magic always has a shell)
        notebook = NotebookCell(
            cell, shell.user_ns, self._cell_code, install_nsight_shim, self.config_names
        )
        done = run_cell(
            parse_options(line),
            notebook,
            prober=self.prober,
            on_session=self._session_began,
        )
        for path in done.csv_files if done is not None else ():
            print(f"nsight-lab: wrote {path}", file=sys.stderr)  # noqa: T201

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


def register(shell: InteractiveShell) -> NsightMagics:
    """Register the magics on ``shell`` (their warm-up started); return them.

    ``import nsight`` then resolves to nsight-lab's stand-in.
    """
    magics = NsightMagics(shell)
    shell.register_magics(magics)
    install_nsight_shim()
    magics.warm_up.start()
    return magics
