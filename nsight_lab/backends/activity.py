"""CUPTI's activity API for one profile: a subscription and the kernels it records.

The ``cupti`` backend (and ``pm`` on top of it) own one :class:`ActivityBuffer` per
measurement; :data:`SUBSCRIBED` is the process's one subscriber slot.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any

from nsight_lab.errors import BackendUnavailableError

BUFFER_BYTES = 8 * 1024 * 1024
INSTALL_HINT = (
    "install it with: pip install nsight-lab[cupti] (cupti-python matching the "
    "driver's CUDA version, e.g. cupti-python==13.0.*)"
)


@dataclass(frozen=True)
class KernelActivity:
    """One kernel as CUPTI reported it."""

    name: str
    start_ns: int
    end_ns: int
    correlation_id: int

    @property
    def duration_ns(self) -> float:
        """GPU time of the kernel."""
        return float(self.end_ns - self.start_ns)


SUBSCRIBED = threading.Lock()
"""Held while an :class:`ActivityBuffer` is CUPTI's activity subscriber.

CUPTI's activity API is process-global (one set of buffer callbacks per process;
one subscriber before r610 drivers), so this lock is the one module-level object:
it holds no data, only says that the process's subscriber slot is taken. The
records, the enabled kinds and the cupti module live in the :class:`ActivityBuffer`
its measurement owns.
"""


class ActivityBuffer:
    """One profile's CUPTI activity subscription: its callbacks and its records."""

    def __init__(self) -> None:
        """Nothing loaded or subscribed yet."""
        self.cupti: Any = None
        self.active = False
        self.kernels: list[KernelActivity] = []
        self.external_ids: dict[int, int] = {}
        self._kernel_kinds: set[int] = set()
        self._external_kind = -1

    def load(self) -> Any:  # noqa: ANN401
        """cupti-python's ``cupti`` module (imported on the first call).

        Raises:
            BackendUnavailableError: cupti-python is not installed.
        """
        if self.cupti is None:
            try:
                from cupti import cupti  # noqa: PLC0415  (optional: cupti-python)
            except ImportError as exc:
                msg = (
                    "backend 'cupti' is unavailable: cupti-python is missing; "
                    f"{INSTALL_HINT}"
                )
                raise BackendUnavailableError(msg) from exc
            self.cupti = cupti
            self._kernel_kinds = {
                int(cupti.ActivityKind.CONCURRENT_KERNEL),
                int(cupti.ActivityKind.KERNEL),
            }
            self._external_kind = int(cupti.ActivityKind.EXTERNAL_CORRELATION)
        return self.cupti

    def kinds(self) -> list[Any]:
        """The activity kinds a profile enables."""
        c = self.cupti
        return [
            c.ActivityKind.CONCURRENT_KERNEL,
            c.ActivityKind.RUNTIME,
            c.ActivityKind.DRIVER,
            c.ActivityKind.EXTERNAL_CORRELATION,
        ]

    def _requested(self) -> tuple[int, int]:
        return BUFFER_BYTES, 0

    def _completed(self, records: Any) -> None:  # noqa: ANN401
        # Copy the fields out at once; the record objects are views into CUPTI's buffer.
        for record in records:
            kind = int(record.kind)
            if kind == self._external_kind:
                self.external_ids[int(record.correlation_id)] = int(record.external_id)
            elif kind in self._kernel_kinds:
                self.kernels.append(
                    KernelActivity(
                        name=str(record.name),
                        start_ns=int(record.start),
                        end_ns=int(record.end),
                        correlation_id=int(record.correlation_id),
                    )
                )

    def start(self) -> None:
        """Subscribe: register the callbacks, enable the kinds.

        Raises:
            BackendUnavailableError: cupti-python is missing, another profile of
                this process holds the subscription, or CUPTI refused.
        """
        cupti = self.load()
        if not SUBSCRIBED.acquire(blocking=False):
            msg = (
                "backend 'cupti' is busy: another cupti profile is running in this "
                "kernel (CUPTI allows one activity subscriber per process)"
            )
            raise BackendUnavailableError(msg)
        try:
            # Register every time: another CUPTI client of this process (Kineto under
            # torch.profiler) may have put its own buffer callbacks in since the last
            # profile, and its buffers would swallow our records.
            cupti.activity_register_callbacks(self._requested, self._completed)
            for kind in self.kinds():
                cupti.activity_enable(kind)
        except Exception as exc:
            msg = (
                f"CUPTI refused activity tracing ({exc}); another CUPTI client "
                "(torch.profiler, nsight-python, Nsight Systems) may hold this "
                "process's only subscriber: finish it, or use --backend events"
            )
            SUBSCRIBED.release()
            raise BackendUnavailableError(msg) from exc
        self.kernels.clear()
        self.external_ids.clear()
        self.active = True

    def drain(self) -> tuple[list[KernelActivity], dict[int, int]]:
        """Flush CUPTI's buffers; the kernels since the last drain, and the ids."""
        self.cupti.activity_flush_all(1)  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
        kernels, self.kernels = self.kernels, []
        return kernels, self.external_ids

    def stop(self) -> None:
        """Disable the kinds and give the subscription up (once; never raises)."""
        if not self.active:
            return
        self.active = False
        try:
            for kind in self.kinds():
                # Disable what can be disabled; one refusal must not leave the rest.
                with contextlib.suppress(Exception):
                    self.cupti.activity_disable(kind)
        finally:
            SUBSCRIBED.release()
