"""Records -> the results' values per row key, and the checks on them; no pandas.

:func:`gather_runs` computes every run's measured and derived values (calling the
user's ``--derive`` functions once per run, their failures collected) and refuses
what the results cannot show: a metric asked for with no value, a
``--normalize-against`` region that never ran. ``to_dataframe`` (:mod:`.frame`)
builds the DataFrame from what it returns; a cell that asks for no DataFrame (no
``--out``, no ``--output-csv``) runs only :func:`gather_runs`, so its path never
imports pandas (issue 32).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nsight_lab.analysis.compare import metric_unit
from nsight_lab.contract.records import TIME_METRIC, RunRecord
from nsight_lab.contract.shape import PREFIX as SHAPE_PREFIX
from nsight_lab.distributed.metrics import PREFIX as RANK_PREFIX
from nsight_lab.errors import CellError
from nsight_lab.host_speed import PREFIX as HOST_PREFIX
from nsight_lab.results.columns import check_normalize_target
from nsight_lab.results.derive import MODEL_PREFIX, DeriveSpec, derived_values

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.contract.records import SessionInfo

NOT_ROWS = (MODEL_PREFIX, RANK_PREFIX, HOST_PREFIX, SHAPE_PREFIX)
"""Metrics that are no ``Metric`` row: the work model (its own columns), the ranks
(per-rank rows), the host's speed (it qualifies comparisons) and a region's shape
(the ``GPUBusyPct`` and ``Flag`` columns, :func:`.columns.add_validity`)."""


@dataclass(frozen=True)
class InfoColumn:
    """Values an info collector gave, for the frame (nsight-python's info collectors).

    Attributes:
        name: The column name.
        scope: ``once``, ``config``, ``run`` or ``annotation``.
        by_run: The value per ``(annotation, config index, run index)``; ``once``,
            ``config`` and ``run`` values are given for every annotation of the run.
    """

    name: str
    scope: str
    by_run: Mapping[tuple[str, int, int], object]


@dataclass(frozen=True)
class RowContext:
    """What every row of one frame shares: the session and the optional inputs."""

    session: SessionInfo
    param_names: Sequence[str]
    config_values: Sequence[Mapping[str, object]] | None = None
    rated: tuple[int | None, int | None] = (None, None)
    info: Sequence[InfoColumn] = ()

    def config(self, ci: int, record: RunRecord) -> Mapping[str, object]:
        """The values config ``ci``'s columns show (``record.config`` by default)."""
        return self.config_values[ci] if self.config_values else record.config


@dataclass
class Runs:
    """The runs' values per row key and the runs per (region, config)."""

    series: defaultdict[tuple[str, str, int], list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )
    units: dict[str, float | str] = field(default_factory=dict)
    derived: set[str] = field(default_factory=set)
    groups: defaultdict[tuple[str, int], list[RunRecord]] = field(
        default_factory=lambda: defaultdict(list)
    )


@dataclass(frozen=True)
class RowRequest:
    """Which rows the results have and what they must hold (see ``to_dataframe``).

    Attributes:
        metrics: The metrics that get rows, with the derived ones; None: the
            duration and every counter measured.
        required: Metrics that must get a row where ``metrics`` is None.
        normalize_against: The region whose values divide the others'; it must run.
    """

    metrics: Sequence[str] | None = None
    required: Sequence[str] = ()
    normalize_against: str | None = None


def gather_runs(
    records: Sequence[RunRecord],
    ctx: RowContext,
    spec: DeriveSpec,
    request: RowRequest,
    raw: list[dict[str, object]] | None = None,
) -> Runs:
    """Every run's values (measured and derived) by row key; ``raw`` rows added.

    Raises:
        CellError: A metric of ``request.metrics``/``request.required`` has no value
            in any record, or ``request.normalize_against`` names no region that
            ran; as :func:`~nsight_lab.results.derive.derived_values` where
            ``spec`` collects no failures.
    """
    runs = Runs()
    for record in records:
        runs.groups[(record.annotation, record.config_index)].append(record)
        config_shown = (
            ctx.config_values[record.config_index] if ctx.config_values else None
        )
        derived = derived_values(record, spec, config_shown)
        runs.derived.update(derived)
        values = run_values(record, derived, request.metrics)
        for metric, (value, unit) in values.items():
            runs.series[(record.annotation, metric, record.config_index)].append(value)
            if isinstance(unit, str) or metric not in runs.units:
                runs.units[metric] = unit
        if raw is not None:
            raw.extend(_raw_rows(record, values, ctx=ctx, shown=config_shown))
    if records:
        requested = (*request.required, *(request.metrics or ()))
        _check_requested(runs, requested, ctx.session.backend)
    if request.normalize_against is not None and runs.series:
        annotations = [annotation for annotation, _, _ in runs.series]
        check_normalize_target(request.normalize_against, annotations)
    return runs


def _check_requested(runs: Runs, requested: Sequence[str], backend: str) -> None:
    """Refuse a frame without a row for a metric that was asked for.

    A counter backend that measured only some of the metrics asked for (PM
    sampling on a chip that does not sample one) would otherwise give a frame with
    no row for it and no word why (seen on an H100: ``sm__throughput`` missing).

    Raises:
        CellError: One line naming the missing metrics and what to do.
    """
    present = {metric for _, metric, _ in runs.series} | runs.derived
    missing = [
        m
        for m in dict.fromkeys(requested)
        if m not in present and not m.startswith(NOT_ROWS)
    ]
    if not missing:
        return
    them = "it" if len(missing) == 1 else "them"
    msg = (
        f"metrics: {', '.join(missing)} asked for, but the {backend} backend "
        f"measured no value of {them} (no row would show {them}); "
        f"profile {them} with --backend ncu"
    )
    raise CellError(msg)


def run_values(
    record: RunRecord,
    derived: Mapping[str, tuple[float, float | str]],
    metrics: Sequence[str] | None,
) -> dict[str, tuple[float, float | str]]:
    """One record's values and units: its duration, its counters, its derived values.

    Only ``metrics`` and the derived values where ``metrics`` is given (see
    ``to_dataframe``). A counter's unit is what its name says
    (:func:`~nsight_lab.analysis.compare.metric_unit`; NaN where it says none, as
    nsight-python leaves a derived value's).
    """
    values: dict[str, tuple[float, float | str]] = {
        TIME_METRIC: (record.duration_ns, "ns")
    }
    values.update(
        (metric, (value, metric_unit(metric) or math.nan))
        for metric, value in record.metrics.items()
        if not metric.startswith(NOT_ROWS)
    )
    if metrics is not None:
        values = {k: v for k, v in values.items() if k in metrics}
    values.update(derived)
    return values


def _raw_rows(
    record: RunRecord,
    values: Mapping[str, tuple[float, float | str]],
    *,
    ctx: RowContext,
    shown: Mapping[str, object] | None,
) -> list[dict[str, object]]:
    """nsight-python's raw rows of one record: one per value of :func:`run_values`."""
    config = record.config if shown is None else shown
    key = (record.annotation, record.config_index, record.run_index)
    return [
        {
            "Annotation": record.annotation,
            "Value": value,
            "Metric": metric,
            "Kernel": "|".join(record.kernels),
            "GPU": ctx.session.device,
            "Host": ctx.session.host,
            "ComputeClock": ctx.rated[0],
            "MemoryClock": ctx.rated[1],
            "Unit": unit,
            **{column.name: column.by_run.get(key) for column in ctx.info},
            **{name: config.get(name) for name in ctx.param_names},
        }
        for metric, (value, unit) in values.items()
    ]
