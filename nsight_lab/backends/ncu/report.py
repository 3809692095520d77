"""Read the kernels of an isolated-ncu report: one :class:`KernelRow` per kernel.

Real reports (``.ncu-rep``) are read with NVIDIA's ``ncu_report`` module (the
``ncu-report`` wheel, imported lazily): ranges -> actions (kernels) -> the action's NVTX
state -> the ``nsight_lab`` domain's start/end ranges give the region, config and run
(see :func:`nsight_lab.backends.ncu.child.range_name`); ``action[metric].value()``
gives each metric. The domain's push/pop ranges are read too: reports written before
the child marked start/end ranges (and plain ncu runs of scripts that push
``nsight_lab`` ranges, as the benchmarks do) keep reading the same.

**Stand-in format.** CI has no GPU and no Nsight Compute; its stand-in ``ncu``
(``tests/fixtures/fake_ncu.py``) writes the report as a JSON list instead::

    [{"range_name": "matmul [c0 r1]", "kernel": "k",
      "metrics": {"gpu__time_duration.sum": 1.0}}]

A report whose first non-blank byte is ``[`` is read in that format; nothing else is.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import TIME_METRIC, RunRecord
from nsight_lab.errors import BackendUnavailableError, MeasurementError
from nsight_lab.regions import CELL_REGION

if TYPE_CHECKING:
    from nsight_lab.contract.records import JsonScalar
    from nsight_lab.kernels import KernelFold

logger = logging.getLogger(__name__)

BACKEND_ID = "ncu"

NVTX_DOMAIN = "nsight_lab"
_RANGE_RE = re.compile(
    r"^(?P<region>.*) \[c(?P<config>-?\d+) r(?P<run>-?\d+)\]$", re.DOTALL
)

_UNIT_SCALE: dict[str, float] = {
    "nsecond": 1.0,
    "ns": 1.0,
    "usecond": 1e3,
    "us": 1e3,
    "msecond": 1e6,
    "ms": 1e6,
    "second": 1e9,
    "s": 1e9,
    "byte": 1.0,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
}
"""Scale to the base unit (ns, bytes) for units ncu may attach to a value."""


@dataclass(frozen=True)
class KernelRow:
    """One profiled kernel, attributed to the region and run it ran in."""

    range_name: str
    """The NVTX range as marked by the child, e.g. ``"matmul [c0 r2]"``."""
    region: str
    config_index: int
    run_index: int
    """Negative for warm-up runs."""
    kernel: str
    metrics: dict[str, float] = field(default_factory=dict)
    """Metric -> value in base units (ns, bytes), for each requested metric found."""


def parse_range_name(name: str) -> tuple[str, int, int] | None:
    """Split ``"region [cC rR]"`` into ``(region, C, R)``; ``None`` if it is not ours.

    Args:
        name: An NVTX range name.

    Returns:
        The region, config index and run index, or ``None``.
    """
    match = _RANGE_RE.match(name)
    if match is None:
        return None
    return match["region"], int(match["config"]), int(match["run"])


def read_report(
    path: Path | str, metrics: list[str] | tuple[str, ...]
) -> list[KernelRow]:
    """Read every kernel profiled inside an nsight-lab NVTX range.

    Args:
        path: The ``.ncu-rep`` file (or a stand-in JSON report, see the module doc).
        metrics: The metric names to read from each kernel.

    Returns:
        The kernels in report order (the order they ran). A kernel in nested ranges
        belongs to the innermost region other than ``cell``.

    Raises:
        BackendUnavailableError: ``ncu_report`` cannot be imported.
        MeasurementError: The file is missing or cannot be read as a report.
    """
    report = Path(path)
    try:
        with report.open("rb") as handle:
            head = handle.read(64).lstrip()
    except OSError as exc:
        msg = f"cannot read the ncu report {str(report)!r}: {exc.strerror or exc}"
        raise MeasurementError(msg) from exc
    if head.startswith(b"["):
        return _read_stand_in(report, metrics)
    return _read_ncu_report(report, metrics)


def _read_ncu_report(
    path: Path, metrics: list[str] | tuple[str, ...]
) -> list[KernelRow]:
    try:
        import ncu_report  # noqa: PLC0415  (optional: ncu-report)
    except Exception as exc:
        msg = (
            f"ncu_report cannot be imported ({type(exc).__name__}: {exc}), so the ncu "
            "report cannot be read; install it with: pip install nsight-lab[ncu] "
            "(or: pip install ncu-report)"
        )
        raise BackendUnavailableError(msg) from exc
    try:
        context = ncu_report.load_report(str(path))
    except Exception as exc:
        msg = (
            f"ncu_report could not load {str(path)!r} ({type(exc).__name__}: {exc}); "
            "is ncu-report at least as new as the ncu that wrote it?"
        )
        raise MeasurementError(msg) from exc
    rows: list[KernelRow] = []
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            action = report_range.action_by_idx(action_index)
            names = domain_ranges(action.nvtx_state())
            parsed = _innermost(names)
            if parsed is None:
                continue
            name, (region, config_index, run_index) = parsed
            rows.append(
                KernelRow(
                    range_name=name,
                    region=region,
                    config_index=config_index,
                    run_index=run_index,
                    kernel=str(action.name()),
                    metrics=_action_metrics(action, metrics),
                )
            )
    return rows


def domain_ranges(state: Any) -> list[str]:  # noqa: ANN401  (an ncu_report.INvtxState)
    """Our domain's range names around one kernel: push/pop ones, then start/end ones.

    Either kind may name the region (see the module docstring); at most one region
    and the ``cell`` wrap are open at once, so their order does not matter.
    """
    if state is None:
        return []
    names: list[str] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is not None and domain.name() == NVTX_DOMAIN:
            names.extend(str(n) for n in _ranges_of(domain, "push_pop_ranges"))
            names.extend(str(n) for n in _ranges_of(domain, "start_end_ranges"))
    return names


def _ranges_of(domain: Any, kind: str) -> tuple[object, ...]:  # noqa: ANN401
    """``domain.<kind>()``, or nothing where this ``ncu_report`` lacks that kind."""
    method = getattr(domain, kind, None)
    return tuple(method() or ()) if method is not None else ()


def _innermost(names: list[str]) -> tuple[str, tuple[str, int, int]] | None:
    """The region range among ``names``, preferring a region over the ``cell`` wrap."""
    ours = [(n, p) for n in names if (p := parse_range_name(n)) is not None]
    if not ours:
        return None
    regions = [item for item in ours if item[1][0] != "cell"]
    return (regions or ours)[-1]


def _action_metrics(
    action: Any,  # noqa: ANN401  (an ncu_report.IAction)
    metrics: list[str] | tuple[str, ...],
) -> dict[str, float]:
    values: dict[str, float] = {}
    for metric in metrics:
        found = action.metric_by_name(metric)
        if found is None:
            continue
        value = found.value()
        if value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        unit = str(found.unit() or "")
        values[metric] = number * _UNIT_SCALE.get(unit, 1.0)
    return values


def _read_stand_in(path: Path, metrics: list[str] | tuple[str, ...]) -> list[KernelRow]:
    """Read the stand-in ``ncu``'s JSON list report (CI only; see the module doc)."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        msg = f"cannot read the stand-in ncu report {str(path)!r}: {exc}"
        raise MeasurementError(msg) from exc
    rows: list[KernelRow] = []
    for item in items:
        name = str(item["range_name"])
        parsed = parse_range_name(name)
        if parsed is None:
            continue
        region, config_index, run_index = parsed
        found = item.get("metrics") or {}
        rows.append(
            KernelRow(
                range_name=name,
                region=region,
                config_index=config_index,
                run_index=run_index,
                kernel=str(item["kernel"]),
                metrics={m: float(found[m]) for m in metrics if m in found},
            )
        )
    return rows


# ----------------------------------------------------------------------- records


def regions_by_run(log_path: Path) -> dict[int, list[str]]:
    """Run index -> the regions the child logged for it, in the order they ran."""
    regions: dict[int, list[str]] = {}
    try:
        lines = log_path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return regions
    for line in lines:
        try:
            entry = json.loads(line)
            regions.setdefault(int(entry["run_index"]), []).append(str(entry["region"]))
        except (ValueError, KeyError, TypeError):  # noqa: PERF203  (rare: logged)
            logger.debug("unreadable region log line: %r", line)
    return regions


def region_records(  # noqa: PLR0913  (one field each)
    rows: list[KernelRow],
    logged: dict[int, list[str]],
    *,
    fold: KernelFold,
    config_index: int,
    config: dict[str, JsonScalar],
    session_id: int,
    metrics: list[str],
) -> list[RunRecord]:
    """One record per region per measured run, kernels combined per ``fold``.

    ``logged`` is the child's region log (:func:`regions_by_run`): the regions each
    run marked, in the order they ran.
    """
    grouped: dict[int, dict[str, list[KernelRow]]] = {}
    for row in rows:
        if row.config_index != config_index or row.run_index < 0:
            continue
        grouped.setdefault(row.run_index, {}).setdefault(row.region, []).append(row)
    records: list[RunRecord] = []
    for run_index in sorted(grouped):
        regions = grouped[run_index]
        marked = [r for r in logged.get(run_index, ()) if r != CELL_REGION]
        if marked or len(regions) > 1:
            # The run marked regions: kernels that ran outside them are not measured.
            regions.pop(CELL_REGION, None)
        order = {name: i for i, name in enumerate(marked)}
        for region, kernels in sorted(
            regions.items(), key=lambda item: order.get(item[0], len(order))
        ):
            kernels = [k for k in kernels if fold.keep(k.kernel)]  # noqa: PLW2901
            values = _combine(kernels, metrics, fold)
            duration = values.pop(TIME_METRIC, None)
            if duration is None:
                continue
            records.append(
                RunRecord(
                    session_id=session_id,
                    config_index=config_index,
                    config=config,
                    run_index=run_index,
                    annotation=region,
                    duration_ns=duration,
                    backend=BACKEND_ID,
                    kernels=tuple(k.kernel for k in kernels),
                    metrics=values,
                )
            )
    return records


def _combine(
    kernels: list[KernelRow], metrics: list[str], fold: KernelFold
) -> dict[str, float]:
    combined: dict[str, float] = {}
    for metric in metrics:
        values = [k.metrics[metric] for k in kernels if metric in k.metrics]
        if values:
            combined[metric] = fold.fold(values)
    return combined
