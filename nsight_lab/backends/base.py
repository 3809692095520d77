"""The one seam every backend implements.

A backend is probed (can it run here, and if not why) and then opened for one profile,
giving a :class:`Measurement`. The runner drives the measurement run by run: it marks
run and region boundaries and collects :class:`RunTiming` results as they complete, so
asynchronous backends (CUDA events) can keep the GPU busy while finished runs stream
out.
Backends never store anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nsight_lab.records import Telemetry

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.options import ProfileOptions


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


class Measurement(Protocol):
    """An opened backend, measuring one profile."""

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


class Backend(Protocol):
    """A way of measuring regions: ``cpu``, ``events``, ``cupti`` or ``ncu``."""

    id: str

    def probe(self) -> Availability:
        """Say whether this backend can run here; never raises."""

    def open(self, options: ProfileOptions) -> Measurement:
        """Start measuring a profile with ``options``.

        Raises:
            BackendUnavailableError: The backend cannot run here.
        """
