"""The names under which a multi-rank run's per-rank values travel in a record.

A multi-rank region is still one :class:`~nsight_lab.contract.records.RunRecord` per
run (the
store, the wire and every view take it unchanged): its ``duration_ns`` is the
region's *span* over the ranks (first start to last end, on the host's common
clock), and the per-rank values ride in ``RunRecord.metrics`` under the names here:

* ``rank__duration_ns.<r>``: rank ``r``'s own duration of the region;
* ``rank__start_ns.<r>``: when rank ``r`` entered it, after the first rank did;
* ``rank__device.<r>``: rank ``r``'s CUDA device ordinal, :data:`HOST_DEVICE` on
  the host (the cpu backend);
* ``rank__sm_clock_mhz.<r>``, ``rank__mem_clock_mhz.<r>``, ``rank__temperature_c.<r>``,
  ``rank__power_w.<r>``, ``rank__throttled.<r>``: rank ``r``'s GPU telemetry (NVML),
  where it was read;
* ``rank__count``, ``rank__span_ns`` and ``rank__straggler`` (the rank the others
  waited for, see :func:`nsight_lab.distributed.assemble.straggler`).

These are not counters of the region: :mod:`nsight_lab.results` turns them into
per-rank rows (``Rank``/``Device`` columns) and :mod:`nsight_lab.figures.ranks`
into the per-rank charts; they are never a ``Metric`` row of their own. The modelled
collective traffic (:mod:`nsight_lab.distributed.traffic`) is a region metric like
any other (``comm__bytes_modelled.sum``, ``comm__collectives.sum``).

Pure and import-light: the results frame and the figures read it.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nsight_lab.contract.records import RunRecord

PREFIX = "rank__"
"""Every per-rank name starts with this."""
COUNT = "rank__count"
SPAN = "rank__span_ns"
STRAGGLER = "rank__straggler"
HOST_DEVICE = -1
"""``rank__device.<r>`` of a rank timed on the host (no CUDA device)."""

DURATION = "duration_ns"
START = "start_ns"
DEVICE = "device"
SM_CLOCK = "sm_clock_mhz"
MEM_CLOCK = "mem_clock_mhz"
TEMPERATURE = "temperature_c"
POWER = "power_w"
THROTTLED = "throttled"
PER_RANK = (DURATION, START, DEVICE, SM_CLOCK, MEM_CLOCK, TEMPERATURE, POWER, THROTTLED)
"""The quantities kept per rank, in the order they are written."""

COMM_BYTES = "comm__bytes_modelled.sum"
"""Bytes one rank sends in the region's collectives, modelled (the busiest rank)."""
COMM_COUNT = "comm__collectives.sum"
"""Collectives the region called on one rank (the busiest rank)."""

_PER_RANK_RE = re.compile(r"^rank__([a-z_]+)\.([0-9]+)$")


def rank_metric(quantity: str, rank: int) -> str:
    """The metric name of ``quantity`` (one of :data:`PER_RANK`) of ``rank``."""
    return f"{PREFIX}{quantity}.{rank}"


def is_rank_metric(name: str) -> bool:
    """Whether ``name`` is one of the per-rank names (never a ``Metric`` row)."""
    return name.startswith(PREFIX)


def is_multi_rank(record: RunRecord) -> bool:
    """Whether ``record`` was measured in ranks (it carries :data:`COUNT`)."""
    return COUNT in record.metrics


def ranks_of(record: RunRecord) -> int:
    """How many ranks measured ``record`` (0 for a single-rank record)."""
    value = record.metrics.get(COUNT)
    return 0 if value is None or math.isnan(value) else int(value)


def per_rank(record: RunRecord, quantity: str) -> dict[int, float]:
    """Rank -> its value of ``quantity`` in ``record``, ranks in order."""
    out: dict[int, float] = {}
    for name, value in record.metrics.items():
        match = _PER_RANK_RE.match(name)
        if match is not None and match.group(1) == quantity:
            out[int(match.group(2))] = value
    return dict(sorted(out.items()))


def device_label(ordinal: float | None) -> str:
    """``cuda:<n>`` for a CUDA ordinal, ``cpu`` for :data:`HOST_DEVICE` or unknown."""
    if ordinal is None or math.isnan(ordinal) or ordinal < 0:
        return "cpu"
    return f"cuda:{int(ordinal)}"
