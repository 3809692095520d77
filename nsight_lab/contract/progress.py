"""Where a profile stands: the one progress type, made here and shown by every view.

A collector (the :class:`~nsight_lab.runner.Runner`, the distributed stream, the
isolated ncu run) counts its runs in one :class:`ProgressCounter`, which hands its
progress hook (:data:`ProgressHook`) a frozen :class:`Progress` snapshot made by
:func:`make_progress`, with the records that just arrived. The inline widget (its
``progress`` trait), the static fallback (the same trait), the progress lines of a
profile in no notebook and the sidebar (``session.progress`` of ``GET
sessions/<id>``, from the store: :func:`session_progress`) all show that one type, as
:meth:`Progress.to_json`; the front ends render its ``text`` and ``fraction`` and
compute nothing.

Names say what they count, so a total is never read as a per-config number:
``runs_per_config`` (``--runs``), ``runs_planned_total`` (configs x runs per config),
``runs_done_in_config`` and ``runs_done_total`` (complete runs: one per config and
repetition, whatever the number of regions). The store's ``runs_planned`` is the
total over all configs (``Plan.runs_planned``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.contract.records import RunRecord

if TYPE_CHECKING:
    from nsight_lab.contract.records import SessionInfo

__all__ = [
    "Progress",
    "ProgressCounter",
    "ProgressHook",
    "format_seconds",
    "make_progress",
    "session_progress",
]

_MINUTE = 60


def format_seconds(seconds: float) -> str:
    """Seconds as ``12.3 s``, ``4 min 05 s`` or ``1 h 02 min`` (``?`` if undefined).

    Raises:
        Nothing.
    """
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    if seconds < _MINUTE:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    minutes = whole // _MINUTE
    if minutes < _MINUTE:
        return f"{minutes} min {whole % _MINUTE:02d} s"
    return f"{minutes // _MINUTE} h {minutes % _MINUTE:02d} min"


@dataclass(frozen=True)
class Progress:
    """Where a profile stands, in names that cannot be misread.

    Build it with :func:`make_progress` or :func:`session_progress`.
    """

    status: str
    """running, completed, failed or interrupted."""
    configs_total: int
    """Configs in the plan (at least 1)."""
    config_index: int
    """0-based index of the config running now (of the newest run)."""
    runs_per_config: int
    """Measured runs planned per config (a minimum with ``--target-rsd``); 0 unknown."""
    runs_planned_total: int
    """``configs_total * runs_per_config``: measured runs planned over all configs."""
    runs_done_in_config: int
    """Complete runs of config ``config_index``."""
    runs_done_total: int
    """Complete runs over all configs."""
    elapsed_s: float | None
    """Seconds since the profile started; None where not known (the sidebar)."""
    eta_s: float | None
    """Estimated seconds left while running; None when unknown or ended."""
    message: str = ""
    """What the collector is doing now (``waited 2.0 s for thermal headroom``,
    ``config 2: profiling "gemm"``); shown beside the progress, not in
    :meth:`to_json`."""

    @property
    def fraction(self) -> float:
        """Share of the planned runs done, 0..1 (1 once completed)."""
        if self.status == "completed":
            return 1.0
        if self.runs_planned_total <= 0:
            return 0.0
        return min(max(self.runs_done_total / self.runs_planned_total, 0.0), 1.0)

    @property
    def text(self) -> str:
        """The progress line every view shows.

        ``30 / 90 runs · config 2 / 3 · run 0 / 30 · elapsed 7.5 s · ETA 15.0 s``
        (elapsed and ETA where known; ``30 runs`` when nothing was planned).
        """
        done = self.runs_done_total
        parts = [
            f"{done} / {self.runs_planned_total} runs"
            if self.runs_planned_total > 0
            else f"{done} runs",
            f"config {self.config_index + 1} / {self.configs_total}",
        ]
        if self.runs_per_config > 0:
            parts.append(f"run {self.runs_done_in_config} / {self.runs_per_config}")
        if self.elapsed_s is not None:
            parts.append(f"elapsed {format_seconds(self.elapsed_s)}")
        if self.status == "running" and self.eta_s is not None:
            parts.append(f"ETA {format_seconds(self.eta_s)}")
        return " · ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The wire shape: every field but ``message``, ``fraction`` and ``text``."""
        return {
            "status": self.status,
            "configs_total": self.configs_total,
            "config_index": self.config_index,
            "runs_per_config": self.runs_per_config,
            "runs_planned_total": self.runs_planned_total,
            "runs_done_in_config": self.runs_done_in_config,
            "runs_done_total": self.runs_done_total,
            "elapsed_s": _finite(self.elapsed_s),
            "eta_s": _finite(self.eta_s),
            "fraction": self.fraction,
            "text": self.text,
        }


def make_progress(  # noqa: PLR0913  (one keyword per counter)
    *,
    status: str,
    configs_total: int,
    runs_per_config: int,
    config_index: int,
    runs_done_in_config: int,
    runs_done_total: int,
    elapsed_s: float | None = None,
    message: str = "",
) -> Progress:
    """Return the progress of a profile; the ETA comes from the elapsed time.

    Counts are clamped to be non-negative and ``config_index`` to the configs.
    The ETA (while running, once a run is done and with a plan) assumes the runs
    left take as long as those done: ``elapsed * left / done``.

    Raises:
        Nothing.
    """
    configs = max(int(configs_total), 1)
    per_config = max(int(runs_per_config), 0)
    planned = configs * per_config
    done = max(int(runs_done_total), 0)
    eta: float | None = None
    if (
        status == "running"
        and elapsed_s is not None
        and math.isfinite(elapsed_s)
        and done > 0
        and planned > 0
    ):
        eta = max(elapsed_s * (planned - done) / done, 0.0)
    return Progress(
        status=status,
        configs_total=configs,
        config_index=min(max(int(config_index), 0), configs - 1),
        runs_per_config=per_config,
        runs_planned_total=planned,
        runs_done_in_config=max(int(runs_done_in_config), 0),
        runs_done_total=done,
        elapsed_s=elapsed_s,
        eta_s=eta,
        message=message,
    )


def session_progress(
    session: SessionInfo,
    *,
    runs_done_total: int,
    newest: tuple[int, int] | None,
) -> Progress:
    """Return the progress of a stored session (what the sidebar shows).

    Args:
        session: The session.
        runs_done_total: Its complete runs stored (distinct config and run index).
        newest: ``(config_index, run_index)`` of its newest stored run, if any.
            Runs of a config are measured in order, so that config has
            ``run_index + 1`` runs done.

    Raises:
        Nothing.
    """
    config_index, done_in_config = (
        (newest[0], newest[1] + 1) if newest is not None else (0, 0)
    )
    return make_progress(
        status=session.status,
        configs_total=len(session.configs),
        runs_per_config=session.runs_per_config,
        config_index=config_index,
        runs_done_in_config=done_in_config,
        runs_done_total=runs_done_total,
    )


ProgressHook = Callable[[Progress, Sequence[RunRecord]], None]
"""``hook(progress, records)``: a collector's progress after every change, with the
measured records that arrived with it (usually none)."""


class ProgressCounter:
    """A collector's counters: where its profile stands, shown to ``hook`` on change.

    The one place runs done are counted; :attr:`progress` is the snapshot and
    :meth:`emit` hands it to ``hook`` with the records that came with it.
    """

    def __init__(
        self, configs_total: int, runs_per_config: int, hook: ProgressHook | None
    ) -> None:
        """Nothing done yet of ``configs_total`` configs, ``runs_per_config`` each."""
        self.hook = hook
        self.configs_total = configs_total
        self.runs_per_config = runs_per_config
        self.status = "running"
        self.config_index = 0
        self.runs_done_in_config = 0
        self.runs_done_total = 0
        self.message = ""
        """What the collector is doing now (:attr:`Progress.message`)."""
        self._started_at = time.monotonic()

    def start_config(self, config_index: int) -> None:
        """Config ``config_index`` starts: none of its runs done yet (no emit)."""
        self.config_index = config_index
        self.runs_done_in_config = 0

    def runs_done(self, count: int = 1, *, in_config: int | None = None) -> None:
        """``count`` more complete runs (no emit).

        ``in_config`` of them (all: ``None``) are of the current config, the rest of
        configs before it (dispatched after the next config began).
        """
        self.runs_done_in_config += count if in_config is None else in_config
        self.runs_done_total += count

    def complete(self) -> None:
        """Every config ran: the status becomes completed (no emit)."""
        self.status = "completed"

    @property
    def progress(self) -> Progress:
        """Where the profile stands now (a snapshot)."""
        return make_progress(
            status=self.status,
            configs_total=self.configs_total,
            runs_per_config=self.runs_per_config,
            config_index=self.config_index,
            runs_done_in_config=self.runs_done_in_config,
            runs_done_total=self.runs_done_total,
            elapsed_s=time.monotonic() - self._started_at,
            message=self.message,
        )

    def emit(self, records: Sequence[RunRecord] = ()) -> None:
        """Hand ``hook`` the progress and ``records`` (nothing without a hook)."""
        if self.hook is not None:
            self.hook(self.progress, records)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
