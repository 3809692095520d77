"""CUPTI's activity API for one profile: a subscription and the records it keeps.

The ``cupti`` backend (and ``pm`` on top of it) own one :class:`ActivityBuffer` per
measurement; :data:`SUBSCRIBED` is the process's one subscriber slot. It keeps the
GPU activity (kernels, memcpys, memsets), the external ids CUPTI stamped on the calls
of the thread that pushes them, and every runtime/driver API call's thread and start
time, which :mod:`nsight_lab.backends.causes` needs to attribute launches made by other
threads.
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
    """One kernel (or memcpy, memset) as CUPTI reported it."""

    name: str
    start_ns: int
    end_ns: int
    correlation_id: int
    kind: str = "kernel"
    """``kernel``, ``memcpy`` or ``memset``."""
    stream_id: int = 0
    graph_node_id: int = 0
    """The CUDA graph node that ran it (0 outside graphs)."""
    device_id: int = 0

    @property
    def duration_ns(self) -> float:
        """GPU time of the kernel."""
        return float(self.end_ns - self.start_ns)


def external_kind(cupti: Any) -> Any:  # noqa: ANN401
    """The external correlation kind nsight-lab pushes (Kineto: CUSTOM0, CUSTOM1)."""
    return cupti.ExternalCorrelationKind.CUSTOM2


@dataclass(frozen=True)
class LaunchCall:
    """One CUDA runtime or driver API call as CUPTI recorded it."""

    correlation_id: int
    start_ns: int
    thread_id: int


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
        self.launches: dict[int, LaunchCall] = {}
        self._kernel_kinds: set[int] = set()
        self._api_kinds: set[int] = set()
        self._copy_kinds: dict[int, str] = {}
        self._external_kind = -1
        self._ours = -1

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
            self._api_kinds = {
                int(cupti.ActivityKind.RUNTIME),
                int(cupti.ActivityKind.DRIVER),
            }
            self._copy_kinds = {
                int(cupti.ActivityKind.MEMCPY): "memcpy",
                int(cupti.ActivityKind.MEMSET): "memset",
            }
            self._external_kind = int(cupti.ActivityKind.EXTERNAL_CORRELATION)
            self._ours = int(external_kind(cupti))
        return self.cupti

    def kinds(self) -> list[Any]:
        """The activity kinds a profile enables."""
        c = self.cupti
        return [
            c.ActivityKind.CONCURRENT_KERNEL,
            c.ActivityKind.MEMCPY,
            c.ActivityKind.MEMSET,
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
            if kind in self._api_kinds:
                corr = int(record.correlation_id)
                self.launches[corr] = LaunchCall(
                    corr, int(record.start), int(record.thread_id)
                )
            elif kind == self._external_kind:
                # Kineto pushes ids of its own kinds on the same calls: only ours count.
                if int(record.external_kind) == self._ours:
                    self.external_ids[int(record.correlation_id)] = int(
                        record.external_id
                    )
            elif kind in self._kernel_kinds:
                self.kernels.append(
                    KernelActivity(
                        name=str(record.name),
                        start_ns=int(record.start),
                        end_ns=int(record.end),
                        correlation_id=int(record.correlation_id),
                        stream_id=int(record.stream_id),
                        graph_node_id=int(record.graph_node_id),
                        device_id=int(record.device_id),
                    )
                )
            elif kind in self._copy_kinds:
                what = self._copy_kinds[kind]
                self.kernels.append(
                    KernelActivity(
                        name=f"[{what}]",
                        start_ns=int(record.start),
                        end_ns=int(record.end),
                        correlation_id=int(record.correlation_id),
                        kind=what,
                        stream_id=int(record.stream_id),
                        graph_node_id=int(record.graph_node_id),
                        device_id=int(record.device_id),
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
        self.launches.clear()
        self.active = True

    def drain(
        self,
    ) -> tuple[list[KernelActivity], dict[int, int], dict[int, LaunchCall]]:
        """Flush CUPTI's buffers: the activity since the last drain, ids and launches.

        The launches handed out are forgotten here: their records all arrived in this
        flush (the GPU was synchronized before it).
        """
        self.cupti.activity_flush_all(1)  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
        kernels, self.kernels = self.kernels, []
        launches, self.launches = self.launches, {}
        return kernels, self.external_ids, launches

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
            # Take our half-filled buffers back now: left in CUPTI, they would be
            # handed to the next client's callbacks (Kineto: "bufferCompleted called
            # with unknown buffer").
            with contextlib.suppress(Exception):
                self.cupti.activity_flush_all(1)
        finally:
            self.kernels.clear()
            self.launches.clear()
            SUBSCRIBED.release()
