"""Drive a plan in process: run the cell per config and run, stream records.

``Runner.run`` calls the cell body once per warm-up and measured run of every config,
with this thread's annotations routed to a :class:`~nsight_lab.regions.RegionTracker`
that checks the region rules and forwards boundaries to the backend's measurement.
Each run the backend reports as finished becomes one :class:`RunRecord` per region and
goes to ``sink`` (the store) and to the progress hook (the live view), so a cell that
raises, a CUDA error or Ctrl-C keeps every run finished before it. The in-process
collector (:mod:`nsight_lab.backends.inprocess`) is its caller.

**Between two runs** the launching thread does only what the store needs and what
the next run needs: it ends the run, asks the backend for what finished, builds those
runs' records and queues them for the store's thread (``sink``: a list append), and
hands that thread the GIL if it is writing (``between_runs``). The progress hook (the
live view: its model, figures and JSON) is *notified* for the first measured run at
once, then at most every ``notify_s`` (:data:`NOTIFY_S`; the view draws at most ten
times a second) with every record since, and when a config begins or the profile
ends. A collection that waited for the GPU (a config's end) leaves the GPU idle, so
its records are handed over once the next run has been launched: the GPU works while
the host builds them. Nothing measured changes: the same timings become the same
records, and the store's bounds hold as before (issue 32: 0.1 s for a 3 x 10-run
matmul sweep against nsight-python's 0.056 s). ``notify_s=0``: every hand-over is
notified at once, as before.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
from collections import defaultdict
from typing import TYPE_CHECKING

from nsight_lab.contract.collector import RunKey, RunTiming, WorkModel
from nsight_lab.contract.progress import ProgressCounter
from nsight_lab.contract.records import RunRecord, utc_now
from nsight_lab.errors import CellError
from nsight_lab.gc_freeze import FreezeGuard
from nsight_lab.regions import CELL_REGION, RegionTracker, listening
from nsight_lab.stats import rsd_pct

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from nsight_lab.contract.collector import Measurement
    from nsight_lab.contract.progress import ProgressHook
    from nsight_lab.contract.records import JsonScalar
    from nsight_lab.plan import Plan

__all__ = [
    "FREEZE_EVERY",
    "NOTIFY_S",
    "Runner",
    "current_run",
    "running",
]

FREEZE_EVERY = 2_000
"""Move the records out of the cyclic GC's reach every this many (see ``run``)."""
NOTIFY_S = 0.05
"""Notify the progress hook of new records at most this often (the in-process
collector's; the module docstring says why)."""

_running = threading.local()


def current_run() -> RunKey | None:
    """The run whose cell body is executing on this thread, if a profile runs one.

    ``None`` outside a run and during the work model's counting pass. Info collectors
    (:mod:`nsight_lab.api.collect`) read it to collect for measured runs only.
    """
    key: RunKey | None = getattr(_running, "key", None)
    return key


@contextlib.contextmanager
def running(key: RunKey) -> Iterator[None]:
    """Make ``key`` this thread's :func:`current_run` for the block.

    The runner's runs, and the isolated ncu child's (so that info collectors shipped
    there collect for the same runs as in this process).
    """
    _running.key = key
    try:
        yield
    finally:
        _running.key = None


class Runner:
    """Executes a :class:`Plan` with an opened backend measurement."""

    def __init__(  # noqa: PLR0913, PLR0917  (the run's collaborators, each needed)
        self,
        plan: Plan,
        measurement: Measurement,
        session_id: int,
        sink: Callable[[list[RunRecord]], None],
        on_progress: ProgressHook | None = None,
        model_work: Callable[[Callable[[], None]], WorkModel] | None = None,
        *,
        notify_s: float = 0.0,
        between_runs: Callable[[], None] | None = None,
    ) -> None:
        """Prepare a run of ``plan``.

        Args:
            plan: What to run.
            measurement: The opened backend.
            session_id: Store id the records belong to.
            sink: Receives each batch of finished records (the store writer).
            on_progress: Receives a :class:`Progress` after every change, with the
                records that came with it.
            model_work: Counts FLOPs/bytes per region of one call of the body.
            notify_s: Notify ``on_progress`` of new records at most this often
                (0: with every hand-over to ``sink``).
            between_runs: Called on the launching thread after every run, outside
                the timed regions (the store writer takes the GIL there).
        """
        self.plan = plan
        self.measurement = measurement
        self.session_id = session_id
        self.sink = sink
        self.on_progress = on_progress
        self.model_work = model_work
        self.records: list[RunRecord] = []
        self.counter = ProgressCounter(
            len(plan.configs), plan.options.runs, on_progress
        )
        self._durations: dict[tuple[int, str], list[float]] = defaultdict(list)
        self._models: dict[int, WorkModel] = {}
        self._failed: dict[RunKey, set[str]] = {}
        """Regions whose body raised under ``annotate(ignore_failures=True)``."""
        self._tracker = RegionTracker(measurement)
        self._freeze = FreezeGuard(FREEZE_EVERY)
        self._notify_s = notify_s
        self._between_runs = between_runs
        self._unsent: list[RunTiming] = []
        """Runs a waited collection returned, handed over after the next launch."""
        self._unshown: list[RunRecord] = []
        """Records handed to the sink, not yet to the progress hook."""
        self._shown_at = 0.0
        self._shown_config = 0
        """The config of the last progress handed to the hook."""

    def run(self, body: Callable[[dict[str, JsonScalar]], None]) -> list[RunRecord]:
        """Run every config; return all records.

        Args:
            body: Executes the cell once with a config's parameters bound.

        Returns:
            Every measured record, in the order written.

        Raises:
            RegionError: The cell broke a region rule.
            CellError: ``--normalize-against`` names a region the cell lacks.
            BaseException: Whatever the cell raised, unchanged, after the finished
                runs were written.
        """
        # Records accumulate for the whole profile: moved out of the cyclic GC's
        # reach as they arrive (gc_freeze.py), its pauses stay out of timed regions
        # and the store's lag. Frozen at the start too: what the kernel holds before
        # the profile (imports, the user's data; ~270,000 objects with pandas and
        # plotly loaded) made the first full collection a 150 ms pause.
        self._freeze.start()
        try:
            with listening(self._tracker):
                self._run_configs(body)
            self._hand_over()
            self._notify()
        except BaseException:
            self.measurement.abandon_run()
            self._drain_after_error()
            raise
        finally:
            self._freeze.release()
        self.counter.complete()
        self.counter.emit()
        return self.records

    def _run_configs(self, body: Callable[[dict[str, JsonScalar]], None]) -> None:
        options = self.plan.options
        for ci in range(len(self.plan.configs)):
            # What the cell sees: the objects of an explicit config list, else the
            # config's values themselves.
            config = self.plan.bound(ci)
            self.counter.start_config(ci)
            if ci == 0 or not self._notify_s:
                self._shown_config = ci
                self.counter.emit()
            # Later configs' first progress goes with the next notification: the
            # GPU is idle here (the last config was waited for): nothing drawn now.
            first_warmup, warmups = 0, options.warmup
            # A backend that sizes itself on a measured warm-up (pm: its sampling
            # interval) gets one per config, whatever --warmup says.
            sizing = getattr(self.measurement, "sizes_on_warmup", False)
            if sizing:
                warmups = max(1, warmups)
            if self.model_work is not None:
                # The op counter's pass is an untimed run of the cell: it stands in for
                # the first warm-up run, so the cell runs no more often than asked.
                self._models[ci] = self.model_work(functools.partial(body, config))
                first_warmup = 0 if sizing else min(1, options.warmup)
            for w in range(first_warmup, warmups):
                self._one_run(body, config, RunKey(ci, w, warmup=True))
            started = time.monotonic()
            run_index = 0
            while not self._config_done(ci, run_index, started):
                self._one_run(body, config, RunKey(ci, run_index))
                run_index += 1
            self._collect(wait=True)

    def _config_done(self, ci: int, started_runs: int, started: float) -> bool:
        options = self.plan.options
        elapsed = time.monotonic() - started
        if (
            options.max_time_s is not None
            and started_runs >= 1
            and elapsed >= options.max_time_s
        ):
            return True
        if started_runs < options.runs:
            return False
        if options.target_rsd_pct is None:
            return True
        # Adaptive stopping (as nvbench): judge on runs the GPU has finished.
        self._collect(wait=False)
        self._hand_over()
        series = [v for (c, _), v in self._durations.items() if c == ci]
        if not series or any(len(v) < options.runs for v in series):
            self._collect(wait=True)
            self._hand_over()
            series = [v for (c, _), v in self._durations.items() if c == ci]
        # A region that failed in a run (annotate(ignore_failures=True)) has no value.
        return all(
            rsd_pct([x for x in v if not math.isnan(x)]) <= options.target_rsd_pct
            for v in series
        )

    def _one_run(
        self,
        body: Callable[[dict[str, JsonScalar]], None],
        config: dict[str, JsonScalar],
        key: RunKey,
    ) -> None:
        def show_wait(headroom_c: float, waited_s: float) -> None:
            self.counter.message = (
                f"waiting for the GPU to cool: {headroom_c:.0f} C of thermal headroom "
                f"left, waited {waited_s:.1f} s"
            )
            self.counter.emit()

        waited = self.measurement.thermal_wait(show_wait)
        if waited:
            self.counter.message = f"waited {waited:.1f} s for thermal headroom"
        self._tracker.reset()
        self.measurement.begin_run(key)
        with running(key):
            body(config)
        self._tracker.check_closed()
        if self._tracker.failed:
            self._failed[key] = set(self._tracker.failed)
        self.measurement.end_run(waited)
        self._hand_over()  # a config's last runs, now that the GPU has work again
        self._collect(wait=False)
        if self._unshown and self._notify_due():
            self._notify()
        if self._between_runs is not None:
            self._between_runs()

    def _collect(self, *, wait: bool) -> None:
        """Take what the backend finished and hand it over (waited: after a launch)."""
        timings = self.measurement.completed(wait=wait)
        measured = [t for t in timings if not t.key.warmup]
        self._unsent.extend(measured)
        if not wait or not self._notify_s:
            self._hand_over()

    def _hand_over(self) -> None:
        """Build the collected runs' records and give them to the sink."""
        timings, self._unsent = self._unsent, []
        if not timings:
            return
        finished_at = utc_now()
        batch = [r for timing in timings for r in self._records(timing, finished_at)]
        if not batch:
            return
        first = not self.records
        self.sink(batch)
        self.records.extend(batch)
        self._freeze.grew(len(self.records))
        for record in batch:
            self._durations[(record.config_index, record.annotation)].append(
                record.duration_ns
            )
        self._unshown.extend(batch)
        if first:
            self._check_normalize_target(batch)
        if first or not self._notify_s:
            self._notify()  # the first run shows at once

    def _notify_due(self) -> bool:
        """Whether the progress hook should hear of the records now."""
        return (
            time.monotonic() - self._shown_at >= self._notify_s
            or self.counter.config_index != self._shown_config
        )

    def _notify(self) -> None:
        """Count the records' runs; hand the progress and the records to the hook."""
        batch, self._unshown = self._unshown, []
        self._shown_at = time.monotonic()
        now = self.counter.config_index
        if not batch and now == self._shown_config:
            return
        runs = {(r.config_index, r.run_index) for r in batch}
        self.counter.runs_done(len(runs), in_config=sum(c == now for c, _ in runs))
        self._shown_config = now
        self.counter.emit(batch)

    def _records(self, timing: RunTiming, finished_at: str) -> list[RunRecord]:
        # A run with no regions is the whole cell; a backend that skipped timing the
        # whole cell (it had regions before) reports NaN, and nothing is recorded.
        whole = {} if math.isnan(timing.whole_ns) else {CELL_REGION: timing.whole_ns}
        regions = dict(timing.regions or whole)
        for name in self._failed.pop(timing.key, ()):
            regions[name] = math.nan  # the region raised: no value in this run
        config = self.plan.configs[timing.key.config_index]
        model = self._models.get(timing.key.config_index, {})
        return [
            RunRecord(
                session_id=self.session_id,
                config_index=timing.key.config_index,
                config=config,
                run_index=timing.key.run_index,
                annotation=name,
                duration_ns=duration,
                backend=self.plan.backend,
                kernels=timing.kernels.get(name, ()),
                # Measured counters after the model: a counted value wins.
                metrics={
                    **model.get(name, {}),
                    **timing.shape.get(name, {}),
                    **timing.counters.get(name, {}),
                },
                telemetry=timing.telemetry,
                thermal_wait_s=timing.thermal_wait_s,
                finished_at=finished_at,
                series=timing.series.get(name),
            )
            for name, duration in regions.items()
        ]

    def _check_normalize_target(self, batch: list[RunRecord]) -> None:
        target = self.plan.options.normalize_against
        names = [r.annotation for r in batch]
        if target is not None and target not in names:
            msg = (
                f"--normalize-against: no region named {target!r} in the cell; "
                f"regions seen: {', '.join(repr(n) for n in names)}"
            )
            raise CellError(msg)

    def _drain_after_error(self) -> None:
        # A CUDA error makes every later call fail: what was collected is kept.
        with contextlib.suppress(BaseException):
            self._collect(wait=True)
        with contextlib.suppress(BaseException):
            self._hand_over()
        with contextlib.suppress(BaseException):
            self._notify()
