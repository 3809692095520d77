"""The backend registry: every backend nsight-lab can measure with, in one table.

:data:`BACKENDS` is the only list of backends. Everything else is derived from it: the
``--backend`` choices (:func:`backend_choices`), the probe table (:func:`probe_all`),
the order ``--backend auto`` tries them in (:func:`auto_candidates`, used by
:mod:`nsight_lab.plan`), the collector the magic runs (:func:`get_collector`) and the
list the sidebar filters by (``GET /nsight-lab/api/status``).

Adding a backend takes two steps:

1. a module with a collector class -- a subclass of
   :class:`~nsight_lab.backends.inprocess.InProcessCollector` (implement ``probe`` and
   ``open``, returning a :class:`~nsight_lab.backends.base.Measurement`) for a backend
   that measures in this process, or any class with ``id``, ``probe()`` and
   ``collect(plan, cell, out)`` (:class:`~nsight_lab.backends.base.Collector`);
2. one :class:`BackendEntry` line in :data:`BACKENDS`.

Importing this package imports no backend module (they may import PyTorch or CUPTI):
the Jupyter server reads the table, and a collector's module is imported only when
:func:`get_collector` asks for it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsight_lab.backends.base import (
    Availability,
    CellCode,
    Collector,
    Measurement,
    Output,
    RunKey,
    RunTiming,
)
from nsight_lab.backends.pm.metrics import DEFAULT_OPTION_METRICS as PM_DEFAULT_METRICS
from nsight_lab.roofline.counters import ROOFLINE_METRICS

if TYPE_CHECKING:
    from collections.abc import Iterable

    from nsight_lab.roofline.placement import Source

__all__ = [
    "BACKENDS",
    "Availability",
    "BackendEntry",
    "CellCode",
    "Collector",
    "Measurement",
    "Output",
    "RunKey",
    "RunTiming",
    "auto_candidates",
    "backend_choices",
    "backend_entry",
    "backend_ids",
    "counters_source",
    "get_collector",
    "keeps_report",
    "probe_all",
    "times_the_host",
]


@dataclass(frozen=True)
class BackendEntry:
    """One backend: its id, where its collector is, and how ``auto`` treats it."""

    id: str
    """The ``--backend`` value, stored with each session and run."""
    collector: str
    """``"package.module:ClassName"`` of its collector, built with no arguments."""
    description: str
    """What it measures, in a few words (the sidebar's backend filter, the docs)."""
    auto_order: int | None = None
    """Where ``--backend auto`` tries it among the backends that can serve the
    request, lowest first; ``None``: only when asked for by name."""
    auto_reason: str = ""
    """What ``auto`` says when it picks this backend. ``{metrics}`` is replaced by the
    metrics asked for, ``{why}`` by why the backend tried before it could not run."""
    counters: bool = False
    """It measures ``--metrics`` beyond ``gpu__time_duration.sum`` (hardware
    counters). ``auto`` takes it only when such metrics are asked for: its replay
    passes are not worth paying for durations alone."""
    isolated: bool = False
    """It runs the cell in a child process: what ``--isolate`` asks for."""
    on_host: bool = False
    """It times the host CPU, not a GPU: its regions are placed under the CPU's
    measured roofs (``%nsight peaks --cpu``)."""
    default_metrics: tuple[str, ...] = ROOFLINE_METRICS
    """What a counter backend collects when asked for by name without
    ``--metrics`` (the region time first)."""
    ranks: bool = False
    """It can time regions in several torch.distributed ranks (``--ranks N``, or a
    process group initialised in the kernel): :mod:`nsight_lab.distributed`."""
    keeps_report: bool = False
    """It keeps an Nsight Compute report (``.ncu-rep``) per config, which
    ``GET sessions/<id>/report`` serves: the session view offers its download."""
    measures: Source = "measured"
    """How the roofline names where the FLOPs and bytes its counters measured come
    from (``FLOPsSource``/``BytesSource``, the figures' hover)."""


BACKENDS: tuple[BackendEntry, ...] = (
    BackendEntry(
        "cpu",
        "nsight_lab.backends.cpu:CpuTimerBackend",
        "host wall-clock time around each region (no GPU needed)",
        auto_order=1,
        auto_reason="no GPU timing available ({why}): host wall-clock timing",
        on_host=True,
        ranks=True,
    ),
    BackendEntry(
        "events",
        "nsight_lab.backends.events:CudaEventsBackend",
        "CUDA events around each region, on the current stream",
        auto_order=0,
        auto_reason="a CUDA GPU is visible: CUDA events time each region on the GPU",
        ranks=True,
    ),
    BackendEntry(
        "cupti",
        "nsight_lab.backends.cupti:CuptiBackend",
        "per-kernel durations and kernel names through CUPTI",
    ),
    BackendEntry(
        "ncu",
        "nsight_lab.backends.ncu.collector:NcuCollector",
        "Nsight Compute hardware counters; the cell runs in a child process under ncu",
        auto_order=0,
        auto_reason="metrics {metrics} need hardware counters; not PM sampling: {why}",
        counters=True,
        isolated=True,
        keeps_report=True,
    ),
    BackendEntry(
        "pm",
        "nsight_lab.backends.pm.collector:PmBackend",
        "CUPTI PM sampling: hardware counters and their timelines, in this process",
        auto_order=-1,  # before ncu: in process, streamed, no child Python
        auto_reason="metrics {metrics} are PM-sampled in this process (CUPTI)",
        counters=True,
        default_metrics=PM_DEFAULT_METRICS,
        measures="measured (PM sampling)",
    ),
)
"""Every backend, in the order :func:`probe_all` and the sidebar list them."""


def backend_ids() -> tuple[str, ...]:
    """The ids of :data:`BACKENDS`, in order (read when asked, not at import)."""
    return tuple(entry.id for entry in BACKENDS)


def backend_choices() -> tuple[str, ...]:
    """What ``--backend`` accepts: ``auto``, then every backend id."""
    return ("auto", *backend_ids())


def backend_entry(backend_id: str) -> BackendEntry:
    """Return the registry entry of ``backend_id``.

    Raises:
        KeyError: No backend of that id is registered.
    """
    for entry in BACKENDS:
        if entry.id == backend_id:
            return entry
    msg = f"no backend {backend_id!r} in this version; expected one of {backend_ids()}"
    raise KeyError(msg)


def get_collector(backend_id: str) -> Collector:
    """Import the collector of ``backend_id`` and return a new one.

    Raises:
        KeyError: No backend of that id is registered.
    """
    module_name, _, class_name = backend_entry(backend_id).collector.partition(":")
    collector: Collector = getattr(importlib.import_module(module_name), class_name)()
    return collector


def probe_all(ids: Iterable[str] | None = None) -> dict[str, Availability]:
    """Probe each backend (default: every registered one); each says why it cannot run.

    Args:
        ids: The backends to probe, in the order to report them.

    Returns:
        Backend id -> availability, in registry order (or the order of ``ids``).
    """
    chosen = backend_ids() if ids is None else tuple(ids)
    return {backend_id: get_collector(backend_id).probe() for backend_id in chosen}


def times_the_host(backend_id: str) -> bool:
    """Whether a session of ``backend_id`` timed the host CPU (its ``on_host``).

    For stored sessions: a backend this version no longer registers counts as a GPU
    one, so its regions are placed under no CPU roofs.
    """
    return any(entry.on_host for entry in BACKENDS if entry.id == backend_id)


def keeps_report(backend_id: str) -> bool:
    """Whether a session of ``backend_id`` keeps a report to download (its entry's).

    For stored sessions: a backend this version no longer registers keeps none.
    """
    return any(entry.keeps_report for entry in BACKENDS if entry.id == backend_id)


def counters_source(backend_id: str) -> Source:
    """The source label of counters a session of ``backend_id`` measured (``measures``).

    For stored sessions: a backend this version no longer registers is ``measured``.
    """
    return next(
        (entry.measures for entry in BACKENDS if entry.id == backend_id), "measured"
    )


def auto_candidates(*, counters: bool) -> list[BackendEntry]:
    """The backends ``--backend auto`` tries, in order.

    Args:
        counters: ``--metrics`` asks for more than ``gpu__time_duration.sum``.

    Returns:
        The entries with an ``auto_order`` that measure counters (when ``counters``)
        or that do not (otherwise), lowest ``auto_order`` first, ties in registry
        order.
    """
    found = [
        entry
        for entry in BACKENDS
        if entry.auto_order is not None and entry.counters == counters
    ]
    return sorted(found, key=lambda entry: entry.auto_order or 0)
