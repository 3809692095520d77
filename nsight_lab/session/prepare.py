"""Everything a profile checks and decides before it runs or stores anything.

:func:`prepare` is shared by the magic and the API: the ``--baseline`` check, the one
probe and the plan (:func:`plan_profile`), and the collector that runs it (over the
ranks where the cell is a notebook's). A notebook cell is then checked against its
plan (:func:`check_notebook_cell`): an isolated backend gets its configs only as
text, and a config name an earlier cell bound is unbound again.
"""

from __future__ import annotations

import dis
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.baselines import require_baseline
from nsight_lab.backends.ncu.shipping import free_variables
from nsight_lab.contract.registry import backend_entry, get_collector
from nsight_lab.distributed import rank_collector
from nsight_lab.errors import CellError
from nsight_lab.options.namespace import check_isolated_configs
from nsight_lab.plan import make_plan
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    import types
    from collections.abc import Collection, Mapping

    from nsight_lab.backends.probe import Prober
    from nsight_lab.contract.collector import Availability, CellCode, Collector
    from nsight_lab.options import ProfileOptions
    from nsight_lab.plan import ConfigList, Plan

__all__ = [
    "Prepared",
    "check_cell_text",
    "check_notebook_cell",
    "plan_profile",
    "prepare",
]


@dataclass(frozen=True)
class Prepared:
    """A profile ready to run: its plan and the collector that runs it.

    Attributes:
        plan: What runs.
        collector: The plan's backend, or that backend over the ranks.
        over_ranks: Whether the collector may time the kernel's own process group
            (then a rank other than 0 only follows: :func:`~.entry.run`).
    """

    plan: Plan
    collector: Collector[Plan]
    over_ranks: bool = False


def prepare(  # noqa: PLR0913  (what an entry parsed, keyword-only after it)
    options: ProfileOptions,
    prober: Prober,
    config_list: ConfigList | None = None,
    *,
    notebook_derives: Collection[str] = (),
    probes: Mapping[str, Availability] | None = None,
    over_ranks: bool = False,
) -> Prepared:
    """Check the baseline, probe once, plan, and take the plan's collector.

    Args:
        options: The parsed (and, for a cell, resolved) options.
        prober: What probes the machine (the magic keeps one per kernel).
        config_list: Explicit configs (``--configs-from``, the API's configs).
        notebook_derives: ``--derive`` names the notebook defines.
        probes: The backends' availability where the caller already has it.
        over_ranks: Time over ranks: ``--ranks N``, or the kernel's own process
            group (the magic; an API call profiles its own rank only).

    Raises:
        BaselineError: ``--baseline`` names no baseline (before anything is stored).
        BackendUnavailableError: As :func:`~nsight_lab.plan.make_plan`.
        PlanError: As :func:`~nsight_lab.plan.make_plan`.
    """
    if options.baseline is not None:  # refused before anything runs or is stored
        with RunStore() as store:
            require_baseline(store, options.baseline)
    plan = plan_profile(
        options, prober, config_list, notebook_derives=notebook_derives, probes=probes
    )
    collector = get_collector(plan.backend)
    if over_ranks:
        collector = rank_collector(plan, collector)
    return Prepared(plan, collector, over_ranks=over_ranks)


def plan_profile(
    options: ProfileOptions,
    prober: Prober,
    config_list: ConfigList | None = None,
    *,
    notebook_derives: Collection[str] = (),
    probes: Mapping[str, Availability] | None = None,
) -> Plan:
    """Probe this machine once for ``options``, then plan on what it found.

    The one place a profile asks the hardware and the store what it can use
    (:meth:`~nsight_lab.backends.probe.Prober.probe`); the plan itself is pure
    (:func:`~nsight_lab.plan.make_plan`) and its collector does not ask again.

    Raises:
        BackendUnavailableError: As :func:`~nsight_lab.plan.make_plan`.
        PlanError: As :func:`~nsight_lab.plan.make_plan`.
    """
    probe = prober.probe(options, probes)
    return make_plan(options, probe, config_list, notebook_derives=notebook_derives)


def check_cell_text(cell: str) -> None:
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


def check_notebook_cell(
    plan: Plan, code: CellCode, earlier_configs: Collection[str]
) -> None:
    """Refuse a notebook cell its plan cannot run as the user means it.

    Args:
        plan: The cell's plan.
        code: The cell, compiled, with the notebook's namespace.
        earlier_configs: The names earlier cells' configs bound (unbound after them).

    Raises:
        OptionError: An explicit config is an object and the backend runs the cell
            in a child process, which gets only numbers and text.
        CellError: The cell reads a config name of an earlier cell, unbound again.
    """
    check_isolated_configs(
        plan.bindings, plan.backend, isolated=backend_entry(plan.backend).isolated
    )
    _check_undeclared(code, plan.param_names, earlier_configs)


def _check_undeclared(
    code: CellCode, declared: tuple[str, ...], earlier_configs: Collection[str]
) -> None:
    """Refuse a cell that reads a config name of an earlier cell, now unbound.

    Raises:
        CellError: The cell reads such a name before (or without) assigning it.
    """
    namespace: dict[str, Any] = code.namespace
    gone = {
        name: None
        for name in earlier_configs
        if name not in declared and name not in namespace
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


def _assigned_names(code: types.CodeType) -> set[str]:
    """The names a cell's top level assigns or imports anywhere in it."""
    return {
        str(instr.argval)
        for instr in dis.get_instructions(code)
        if instr.opname in {"STORE_NAME", "STORE_GLOBAL"}
    }
