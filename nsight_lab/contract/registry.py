"""The backend registry: every backend nsight-lab can measure with, in one table.

:func:`registered` is the only list of backends: the built-in ones
(:data:`BUILTIN_BACKENDS`) and those other packages register. Everything else is
derived from it: the ``--backend`` choices (:func:`backend_choices`), the probe table
(:func:`probe_all`), the order ``--backend auto`` tries them in
(:func:`auto_candidates`, used by :mod:`nsight_lab.plan`), the collector a profile runs
(:func:`get_collector`) and the list the sidebar filters by
(``GET /nsight-lab/api/status``).

An entry names its collector as ``"package.module:ClassName"`` and its default
metrics as ``"package.module:NAME"``: they are imported only when asked for, so this
module imports nothing above the contract, and reading the table (the Jupyter server,
the option parser) loads no backend (they may import PyTorch or CUPTI).

Adding a backend takes two steps:

1. a module with a collector class -- a subclass of
   :class:`~nsight_lab.backends.inprocess.InProcessCollector` (implement ``probe`` and
   ``open``, returning a :class:`~nsight_lab.contract.collector.Measurement`) for a
   backend that measures in this process, or any class with ``id``, ``probe()`` and
   ``collect(plan, cell, out)`` (:class:`~nsight_lab.contract.collector.Collector`);
2. one :class:`BackendEntry`: a line in :data:`BUILTIN_BACKENDS` for nsight-lab's own,
   or, from another package, an entry point in the group :data:`ENTRY_POINT_GROUP`
   naming the entry (``[project.entry-points."nsight_lab.backends"]`` ``mine =
   "my_pkg.entry:ENTRY"``). Entry points are read once per process (installing a
   package needs a kernel restart, as for any import).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Iterable

    from nsight_lab.contract.collector import Availability, Collector

__all__ = [
    "BUILTIN_BACKENDS",
    "ENTRY_POINT_GROUP",
    "BackendEntry",
    "Source",
    "auto_candidates",
    "backend_choices",
    "backend_entry",
    "backend_ids",
    "counters_source",
    "default_metrics",
    "get_collector",
    "keeps_report",
    "plugin_entries",
    "probe_all",
    "registered",
    "times_the_host",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "nsight_lab.backends"
"""Where another package registers a backend: each entry point loads a
:class:`BackendEntry`."""

Source = Literal["measured", "measured (PM sampling)", "modelled"]
"""Where a region's FLOPs or bytes come from (the roofline's hover)."""

ROOFLINE_METRICS_AT = "nsight_lab.roofline.counters:ROOFLINE_METRICS"
"""What the roofline and the traffic views need (a counter backend's default)."""


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
    default_metrics: str = ROOFLINE_METRICS_AT
    """``"package.module:NAME"`` of what a counter backend collects when asked for by
    name without ``--metrics`` (a tuple of metric names, the region time first);
    read by :func:`default_metrics`."""
    ranks: bool = False
    """It can time regions in several torch.distributed ranks (``--ranks N``, or a
    process group initialised in the kernel): :mod:`nsight_lab.distributed`."""
    keeps_report: bool = False
    """It keeps an Nsight Compute report (``.ncu-rep``) per config, which
    ``GET sessions/<id>/report`` serves: the session view offers its download."""
    measures: Source = "measured"
    """How the roofline names where the FLOPs and bytes its counters measured come
    from (``FLOPsSource``/``BytesSource``, the figures' hover)."""


BUILTIN_BACKENDS: tuple[BackendEntry, ...] = (
    BackendEntry(
        "cpu",
        "nsight_lab.backends.cpu:CpuTimerBackend",
        "host wall-clock time around each region (no GPU needed)",
        auto_order=1,
        # The reason {why} holds parentheses of its own: none around it.
        auto_reason="no GPU timing available, host wall-clock timing: {why}",
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
        "nsight_lab.backends.pm.backend:PmBackend",
        "CUPTI PM sampling: hardware counters and their timelines, in this process",
        auto_order=-1,  # before ncu: in process, streamed, no child Python
        auto_reason="metrics {metrics} are PM-sampled in this process (CUPTI)",
        counters=True,
        default_metrics="nsight_lab.backends.pm.metrics:DEFAULT_OPTION_METRICS",
        measures="measured (PM sampling)",
    ),
)
"""nsight-lab's own backends, in the order :func:`probe_all` and the sidebar list
them."""


@functools.cache
def plugin_entries() -> tuple[BackendEntry, ...]:
    """The entries other packages registered, read once per process.

    A test that fakes an entry point calls ``plugin_entries.cache_clear()``.

    An entry point that does not load, or loads something else than a
    :class:`BackendEntry`, is left out with a warning naming it: a broken plugin
    must not take the built-in backends down with it.
    """
    found: list[BackendEntry] = []
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry = point.load()
        except Exception as exc:  # noqa: BLE001  (one line, the others stay)
            logger.warning(
                "[nsight-lab] backend entry point %r does not load (%s: %s); "
                "reinstall the package that declares it",
                point.name,
                type(exc).__name__,
                exc,
            )
            continue
        if not isinstance(entry, BackendEntry):
            logger.warning(
                "[nsight-lab] backend entry point %r is a %s, not a BackendEntry; "
                "left out",
                point.name,
                type(entry).__name__,
            )
            continue
        found.append(entry)
    return tuple(found)


def registered() -> tuple[BackendEntry, ...]:
    """Every backend: the built-in ones, then those other packages registered.

    A registered entry whose id is already taken is left out (the first one wins).
    """
    entries: dict[str, BackendEntry] = {}
    for entry in (*BUILTIN_BACKENDS, *plugin_entries()):
        if entry.id in entries:
            logger.warning(
                "[nsight-lab] backend %r is registered twice; the first one is kept",
                entry.id,
            )
            continue
        entries[entry.id] = entry
    return tuple(entries.values())


def backend_ids() -> tuple[str, ...]:
    """The ids of :func:`registered`, in order (read when asked, not at import)."""
    return tuple(entry.id for entry in registered())


def backend_choices() -> tuple[str, ...]:
    """What ``--backend`` accepts: ``auto``, then every backend id."""
    return ("auto", *backend_ids())


def backend_entry(backend_id: str) -> BackendEntry:
    """Return the registry entry of ``backend_id``.

    Raises:
        KeyError: No backend of that id is registered.
    """
    for entry in registered():
        if entry.id == backend_id:
            return entry
    msg = f"no backend {backend_id!r} in this version; expected one of {backend_ids()}"
    raise KeyError(msg)


def _load(reference: str) -> Any:  # noqa: ANN401  (whatever the reference names)
    module_name, _, name = reference.partition(":")
    return getattr(importlib.import_module(module_name), name)


def get_collector(backend_id: str) -> Collector[Any]:
    """Import the collector of ``backend_id`` and return a new one.

    Raises:
        KeyError: No backend of that id is registered.
    """
    collector: Collector[Any] = _load(backend_entry(backend_id).collector)()
    return collector


def default_metrics(entry: BackendEntry) -> tuple[str, ...]:
    """The metrics ``entry`` collects when asked for without ``--metrics``."""
    return tuple(_load(entry.default_metrics))


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
    return any(entry.on_host for entry in registered() if entry.id == backend_id)


def keeps_report(backend_id: str) -> bool:
    """Whether a session of ``backend_id`` keeps a report to download (its entry's).

    For stored sessions: a backend this version no longer registers keeps none.
    """
    return any(entry.keeps_report for entry in registered() if entry.id == backend_id)


def counters_source(backend_id: str) -> Source:
    """The source label of counters a session of ``backend_id`` measured (``measures``).

    For stored sessions: a backend this version no longer registers is ``measured``.
    """
    return next(
        (entry.measures for entry in registered() if entry.id == backend_id),
        "measured",
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
        for entry in registered()
        if entry.auto_order is not None and entry.counters == counters
    ]
    return sorted(found, key=lambda entry: entry.auto_order or 0)
