"""Backend registry: ids to classes, and the probe table the planner decides from."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.backends.base import (
    Availability,
    Backend,
    Measurement,
    RunKey,
    RunTiming,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "Availability",
    "Backend",
    "Measurement",
    "RunKey",
    "RunTiming",
    "get_backend",
    "probe_all",
]

IMPLEMENTED = ("cpu", "events", "cupti")
"""Backend ids that exist in this version.

cupti and ncu come with hardware counters.
"""


def get_backend(backend_id: str) -> Backend:
    """Return an instance of the backend ``backend_id`` (an id from ``IMPLEMENTED``)."""
    if backend_id == "cpu":
        from nsight_lab.backends.cpu import CpuTimerBackend

        return CpuTimerBackend()
    if backend_id == "events":
        from nsight_lab.backends.events import CudaEventsBackend

        return CudaEventsBackend()
    if backend_id == "cupti":
        from nsight_lab.backends.cupti import CuptiBackend

        return CuptiBackend()
    msg = f"no backend {backend_id!r} in this version; expected one of {IMPLEMENTED}"
    raise KeyError(msg)


def probe_all(
    ids: Iterable[str] = ("cpu", "events", "cupti", "ncu"),
) -> dict[str, Availability]:
    """Probe each backend; ids not implemented yet answer why."""
    table: dict[str, Availability] = {}
    for backend_id in ids:
        if backend_id in IMPLEMENTED:
            table[backend_id] = get_backend(backend_id).probe()
        else:
            table[backend_id] = Availability(
                ok=False,
                reason=(
                    f"the {backend_id} backend is not in this version of nsight-lab yet"
                ),
                hint="use --backend events on a GPU (durations only)",
            )
    return table
