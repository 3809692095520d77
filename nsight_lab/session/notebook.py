"""A ``%%nsight`` cell's profile: parsed options in, a finished profile out.

The magic parses the line and hands the options and the cell to :func:`run_cell`,
which takes them the whole way: resolve in the notebook (:mod:`.resolve`), prepare
(:mod:`.prepare`: baseline, plan, collector, the cell's checks), run (:mod:`.entry`:
store and views). The magic keeps only what is IPython's: compiling the cell, its
errors and what it prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.results.derive import DeriveFailures, DeriveSpec
from nsight_lab.session.entry import run
from nsight_lab.session.prepare import check_cell_text, check_notebook_cell, prepare
from nsight_lab.session.request import ProfileRequest
from nsight_lab.session.resolve import notebook_path, resolve_in_notebook

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.backends.probe import Prober
    from nsight_lab.contract.collector import CellCode
    from nsight_lab.options import ProfileOptions
    from nsight_lab.plan import Plan
    from nsight_lab.session.request import Profiled
    from nsight_lab.session.resolve import Resolved

__all__ = ["NotebookCell", "run_cell"]


@dataclass(frozen=True)
class NotebookCell:
    """A ``%%nsight`` cell as the magic hands it over.

    Attributes:
        text: The cell as typed.
        namespace: The notebook's namespace (the kernel's ``user_ns``).
        compile: The cell as plain Python, compiled with the namespace (IPython's
            transforms); called once the cell is planned, so a wrong option is
            said before a syntax error.
        install_nsight: Makes ``import nsight`` nsight-lab's stand-in where
            nsight-python is absent, just before the cell runs. The entry layer's
            (:func:`nsight_lab.nsight_shim.install_nsight_shim`): the stand-in
            serves the API, a layer above this one.
        config_names: The names earlier cells' configs bound, this kernel; the
            cell's own are added (each is unbound again after its cell).
    """

    text: str
    namespace: dict[str, Any]
    compile: Callable[[str], CellCode]
    install_nsight: Callable[[], None]
    config_names: set[str]


def run_cell(
    options: ProfileOptions,
    cell: NotebookCell,
    *,
    prober: Prober,
    on_session: Callable[[int], None] | None = None,
) -> Profiled | None:
    """Profile ``cell`` as its parsed ``options`` say, into the store and the views.

    Returns:
        The finished profile, its DataFrame bound to ``--out``'s name in the
        notebook; ``None`` on a rank that only follows rank 0.

    Raises:
        NsightLabError: An option, the cell or the plan is refused (nothing stored),
            or the profile failed after runs (kept; the message says so).
        BaseException: Whatever the cell raised, after the finished runs were stored.
    """
    check_cell_text(cell.text)
    resolved = resolve_in_notebook(options, cell.namespace)
    prepared = prepare(
        resolved.options,
        prober,
        resolved.config_list,
        notebook_derives=resolved.derive_functions,
        over_ranks=True,
    )
    code = cell.compile(cell.text)
    check_notebook_cell(prepared.plan, code, cell.config_names)
    cell.install_nsight()
    request = _request(prepared.plan, resolved, cell.namespace)
    # The names the configs bind are the cell's: afterwards each is what it was
    # before (or unbound again), so a later cell cannot read the last config.
    saved = {n: cell.namespace.get(n, _UNBOUND) for n in prepared.plan.param_names}
    try:
        done = run(prepared, code, request, on_session=on_session)
    finally:
        for name, value in saved.items():
            if value is _UNBOUND:
                cell.namespace.pop(name, None)
            else:
                cell.namespace[name] = value
        cell.config_names.update(saved)
    if done is not None and options.out:
        # The cell's output is the formatted summary (the widget's final bundle);
        # the raw DataFrame goes only where --out names it.
        cell.namespace[options.out] = done.frame
    return done


_UNBOUND = object()
"""A name the notebook did not bind before the cell."""


def _request(
    plan: Plan, resolved: Resolved, namespace: dict[str, Any]
) -> ProfileRequest:
    """What a cell's profile is asked for: its derived metrics, view and files."""
    options = plan.options
    label = _file_label(options.name or "cell")
    return ProfileRequest(
        derive=DeriveSpec(
            names=options.derive,
            functions=resolved.derive_functions,
            inputs=options.extra_metrics or (TIME_METRIC,),
            failures=DeriveFailures(),
        ),
        notebook=notebook_path(namespace),
        display="none" if options.quiet else "widget",
        config_values=plan.bindings,
        csv_tag=lambda session_id: f"{label}-{session_id}",
        notes=resolved.notes,
        frame=options.out is not None,  # pandas only for a DataFrame asked for
    )


def _file_label(name: str) -> str:
    """``name`` as a safe part of a file name (``--output-csv``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._")[:60] or "cell"
