"""The one seam every backend implements: a :class:`Collector`, and what it hands over.

A collector is probed (can it run here, and if not why) and then asked to
:meth:`~Collector.collect` one plan: it runs the cell once per warm-up and measured run
of every config, however it measures (a timer in this process, CUDA events, CUPTI, or a
child process under Nsight Compute), opens the session through :class:`Output` once it
knows the device, and hands each finished run's :class:`RunRecord` to ``Output.sink`` as
soon as it has it. Collectors never store anything; the session only probes, builds
the plan, picks a collector from the registry (:mod:`nsight_lab.contract.registry`)
and stores what it is given.

In-process backends (``cpu``, ``events``, ``cupti``) are written against the smaller
:class:`Measurement` interface, run by run, and get ``collect`` from
:class:`~nsight_lab.backends.inprocess.InProcessCollector`, which drives them with the
:class:`~nsight_lab.runner.Runner`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nsight_lab.contract.records import RunRecord, Telemetry

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import CodeType

    from nsight_lab.contract.progress import ProgressHook
    from nsight_lab.contract.records import JsonScalar

PlanT_contra = TypeVar("PlanT_contra", contravariant=True)
"""The plan a collector takes (:class:`nsight_lab.plan.Plan`): the contract sits
below the options and the plan, so a collector is typed ``Collector[Plan]`` above."""

WorkModel = dict[str, dict[str, float]]
"""Region -> modelled quantities (``model__flops``, ``model__bytes_read``, ...)."""


@dataclass(frozen=True)
class Availability:
    """Whether a backend can run here, and in words why (not)."""

    ok: bool
    reason: str
    hint: str = ""


@dataclass(frozen=True)
class RunKey:
    """Which run a timing belongs to; warm-up runs have ``warmup=True``."""

    config_index: int
    run_index: int
    warmup: bool = False


@dataclass(frozen=True)
class RunTiming:
    """What a backend measured for one run of the cell."""

    key: RunKey
    regions: dict[str, float]
    """Region name -> duration in ns, in the order the regions ran."""
    whole_ns: float
    """Duration of the whole cell body (used when the cell has no regions)."""
    kernels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    telemetry: Telemetry = field(default_factory=Telemetry)
    thermal_wait_s: float = 0.0
    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    """Region name -> counter metric -> its value in this run (counter backends)."""
    series: dict[str, bytes] = field(default_factory=dict)
    """Region name -> its packed counter timeline (``pm.series.pack``), if sampled."""
    shape: dict[str, dict[str, float]] = field(default_factory=dict)
    """Region name -> its shape in this run (:mod:`nsight_lab.contract.shape`), where
    the backend sees each activity record (``cupti``, ``pm``)."""


@dataclass(frozen=True)
class CellCode:
    """The cell to profile, in every form a collector may need."""

    source: str
    """The cell as the user wrote it (IPython syntax too), stored with the session."""
    python: str
    """The cell as plain Python (``shell.transform_cell``): what a child runs."""
    code: CodeType
    """``python`` compiled, under a file name IPython's tracebacks can show."""
    namespace: dict[str, Any]
    """The notebook's namespace: the cell runs in it and reads its variables from it."""
    prepare: Callable[[], None] | None = None
    """What a process that runs the cell away from the notebook (the isolated ncu
    child, a spawned rank) calls first, a module-level function it imports by name:
    the magic's makes ``import nsight`` nsight-lab's stand-in there
    (:func:`nsight_lab.nsight_shim.prepare_child`)."""

    def run(self, config: dict[str, JsonScalar]) -> None:
        """Run the cell once in the notebook's namespace with ``config`` bound.

        Raises:
            BaseException: Whatever the cell raises, unchanged.
        """
        self.namespace.update(config)
        exec(self.code, self.namespace)  # noqa: S102  (running the user's cell is the point)


@dataclass(frozen=True)
class Output:
    """Where a collector's results go: the session, the records, the progress."""

    begin: Callable[[str | None, Sequence[str]], int]
    """``begin(device_name, notes)`` opens the session and returns its id.

    A collector calls it once, after it has opened what it measures with (so a backend
    that cannot start leaves no session behind) and before its first run; the records
    it makes carry the returned id. ``notes`` are what the user should know about the
    session (clocks not locked, options without effect, ...).
    """
    sink: Callable[[list[RunRecord]], None]
    """Takes each batch of finished records at once (the store writer)."""
    progress: ProgressHook | None = None
    """Takes the progress after every change, with the records that came with it
    (the live view); ``None`` when quiet."""
    note: Callable[[str], None] | None = None
    """Adds a note the collector learned after ``begin`` (kept with the session)."""
    between_runs: Callable[[], None] | None = None
    """Called on the thread that runs the cell after every run, outside the timed
    regions: where the store's writer thread is given the GIL (it may take it then
    rather than in the middle of the next run's regions)."""


class Collector(Protocol[PlanT_contra]):
    """A way of measuring a cell's regions, chosen from the registry by its ``id``."""

    id: str

    def probe(self) -> Availability:
        """Say whether this backend can run here, and if not why and what to do.

        Never raises, and must be cheap: ``--backend auto`` probes every backend.
        """

    def collect(
        self, plan: PlanT_contra, cell: CellCode, out: Output
    ) -> list[RunRecord]:
        """Run every config of ``plan`` and measure the cell.

        Calls ``out.begin`` once before the first run, ``out.sink`` with each batch of
        finished measured runs (warm-up runs are never handed over) and
        ``out.progress`` after every change, ending with status ``"completed"``.
        Releases everything it opened (clock locks, profiler state, child processes)
        before it returns or raises.

        Args:
            plan: What to run (``plan.backend`` is this collector's id).
            cell: The cell and the namespace it runs in.
            out: The session, record and progress hooks.

        Returns:
            Every record handed to ``out.sink``, in that order.

        Raises:
            BackendUnavailableError: The backend cannot start here; found before
                ``out.begin`` where it can be (then no session is left behind).
            NsightLabError: The measurement failed; runs finished before it were
                already handed to ``out.sink``.
            BaseException: Whatever the cell raised, unchanged, after the finished
                runs were handed over.
        """


class Measurement(Protocol):
    """An opened in-process backend, measuring one profile run by run."""

    device_name: str | None
    notes: list[str]
    """Things the user should know about this session (clocks not locked, ...)."""

    def thermal_wait(self, on_wait: Callable[[float, float], None] | None) -> float:
        """Wait for thermal headroom before a run; return seconds waited."""

    def begin_run(self, key: RunKey) -> None:
        """Start run ``key`` (the cell body runs next)."""

    def enter_region(self, name: str) -> None:
        """Region ``name`` opens."""

    def exit_region(self, name: str) -> None:
        """Region ``name`` closes."""

    def end_run(self, thermal_wait_s: float) -> None:
        """The cell body of the current run finished."""

    def abandon_run(self) -> None:
        """The cell body raised: drop the current run, keep the finished ones."""

    def completed(self, *, wait: bool) -> list[RunTiming]:
        """Return runs finished since the last call; ``wait`` blocks for all pending."""

    def close(self) -> None:
        """Release resources and undo controls (clock locks), even after errors."""
