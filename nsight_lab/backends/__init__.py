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

IMPLEMENTED = ("cpu", "events", "cupti", "ncu")
"""Backend ids, in the order ``probe_all`` reports them."""


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
    if backend_id == "ncu":
        from nsight_lab.backends.ncu.probe import NcuBackend

        return NcuBackend()
    msg = f"no backend {backend_id!r} in this version; expected one of {IMPLEMENTED}"
    raise KeyError(msg)


def probe_all(ids: Iterable[str] = IMPLEMENTED) -> dict[str, Availability]:
    """Probe each backend; each says why it cannot run, where it cannot."""
    return {backend_id: get_backend(backend_id).probe() for backend_id in ids}
