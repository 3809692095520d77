"""A GPU in software: PyTorch's CUDA calls, CUPTI's activity API and NVML, faked.

The events and cupti backends' Python paths run on the CPU against it, unchanged:
:class:`FakeGpu` stands in for the device (launches run back to back on a virtual
timeline, so every duration is a known number), ``fake.torch`` for ``torch`` (events,
streams, the L2 flush's sum, the spin kernel, ``synchronize``), ``fake.cupti`` for
cupti-python (external correlation ids per thread, runtime/external-id/kernel records
delivered by ``activity_flush_all``) and ``fake.pynvml`` for NVML (fixed readings,
each call sleeping ``nvml_s`` with the GIL released, as ctypes does).

A cell's body launches with :meth:`FakeGpu.launch`. An event completes once ``depth``
later launches were made (the GPU a few launches behind the host) or the GPU was
synchronized, so the backends' in-flight paths run too. :meth:`FakeGpu.install` puts
the three modules in ``sys.modules`` (a pytest ``monkeypatch`` undoes it);
``benchmarks/beside_nsight_python.py --smoke`` uses it to time the GPU backends'
host work on a CPU, before and after.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
import types
from importlib.machinery import ModuleSpec
from typing import Any

BASE_NS = 1_000_000_000_000
"""Where the virtual GPU timeline starts."""
FLUSH_NS = 30_000
"""The L2 flush's sum, on the virtual timeline."""
NVML = {
    "name": "NVIDIA H100 80GB HBM3 (fake)",
    "sm_mhz": 1980,
    "mem_mhz": 2619,
    "temperature_c": 45,
    "power_mw": 300_000,
    "margin_c": 40,
}


class FakeGpu:
    """The device: a launch order, a virtual timeline, and who listens (CUPTI)."""

    def __init__(self, depth: int = 4, nvml_s: float = 0.0) -> None:
        """A GPU ``depth`` launches behind the host; NVML calls take ``nvml_s``."""
        self.depth = depth
        self.nvml_s = nvml_s
        self.t_ns = BASE_NS
        self.launches = 0
        self.synced = 0
        self.lock = threading.Lock()
        self.torch = _torch(self)
        self.cupti = FakeCupti(self)
        self.pynvml = _pynvml(self)

    def launch(self, name: str, duration_ns: int) -> None:
        """Launch a kernel of ``duration_ns`` after everything launched before."""
        with self.lock:
            start = self.t_ns
            self.t_ns += int(duration_ns)
            self.launches += 1
        self.cupti.launched(name, start, start + int(duration_ns))

    def done(self, at: int) -> bool:
        """Whether the GPU is past the ``at``-th launch."""
        return self.synced >= at or self.launches - at >= self.depth

    def synchronize(self) -> None:
        """Wait for every launch (nothing to wait for: the timeline is virtual)."""
        self.synced = self.launches

    def install(self, monkeypatch: Any) -> FakeGpu:
        """Make ``torch``, ``cupti`` and ``pynvml`` this GPU's until undone."""
        for name, module in (
            ("torch", self.torch),
            ("cupti", self.cupti.package),
            ("pynvml", self.pynvml),
        ):
            monkeypatch.setitem(sys.modules, name, module)
        return self


class _Patch:
    """What :meth:`FakeGpu.install` needs of pytest's ``monkeypatch``, for scripts."""

    def __init__(self) -> None:
        self.saved: dict[str, Any] = {}

    def setitem(self, mapping: dict[str, Any], name: str, value: Any) -> None:
        self.saved.setdefault(name, mapping.get(name))
        mapping[name] = value

    def undo(self) -> None:
        for name, value in self.saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value


def install(depth: int = 4, nvml_s: float = 0.0) -> tuple[FakeGpu, _Patch]:
    """Outside pytest: a :class:`FakeGpu` installed, and the patch that undoes it."""
    patch = _Patch()
    return FakeGpu(depth, nvml_s).install(patch), patch


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = ModuleSpec(name, None)
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


class _Event:
    """``torch.cuda.Event``: stamped where the host's launches have reached."""

    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu
        self.t_ns = 0
        self.at = 0

    def record(self, _stream: object = None) -> None:
        with self.gpu.lock:
            self.t_ns, self.at = self.gpu.t_ns, self.gpu.launches

    def query(self) -> bool:
        return self.gpu.done(self.at)

    def synchronize(self) -> None:
        self.gpu.synced = max(self.gpu.synced, self.at)

    def elapsed_time(self, end: _Event) -> float:
        return (end.t_ns - self.t_ns) / 1e6


def _torch(gpu: FakeGpu) -> types.ModuleType:
    props = types.SimpleNamespace(
        name=NVML["name"], L2_cache_size=50 * 2**20, uuid="fake-0000"
    )
    stream = object()
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        current_device=lambda: 0,
        device_count=lambda: 1,
        get_device_properties=lambda _d=0: props,
        get_device_name=lambda _d=0: props.name,
        Event=lambda **_kw: _Event(gpu),
        synchronize=lambda _d=None: gpu.synchronize(),
        current_stream=lambda _d=None: stream,
        _sleep=lambda cycles: gpu.launch("spin", int(cycles) // 2),
    )

    def tensor(*_a: object, **_kw: object) -> object:
        return types.SimpleNamespace(numel=lambda: 0)

    def flush(*_a: object, **_kw: object) -> None:
        gpu.launch("reduce_kernel", FLUSH_NS)

    return _module(
        "torch",
        cuda=cuda,
        _C=types.SimpleNamespace(_cuda_getCurrentStream=lambda _d: (1, 0, 0)),
        autograd=types.SimpleNamespace(
            profiler=types.SimpleNamespace(_is_profiler_enabled=False)
        ),
        float32="float32",
        ones=tensor,
        empty=tensor,
        sum=flush,
        __version__="0.0+fake",
    )


class FakeCupti:
    """cupti-python's ``cupti`` module, as the activity API of the cupti backend."""

    class ActivityKind:
        CONCURRENT_KERNEL, RUNTIME, DRIVER, EXTERNAL_CORRELATION = 10, 2, 3, 4
        KERNEL, MEMCPY, MEMSET = 5, 6, 7

    class ExternalCorrelationKind:
        CUSTOM2 = 12

    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu
        self.enabled: set[int] = set()
        self.records: list[types.SimpleNamespace] = []
        self.completed: Any = None
        self._ids = itertools.count(1)
        self._stacks = threading.local()
        self.package = _module("cupti", cupti=self)

    def _stack(self) -> list[int]:
        stack: list[int] | None = getattr(self._stacks, "ids", None)
        if stack is None:
            stack = self._stacks.ids = []
        return stack

    def launched(self, name: str, start: int, end: int) -> None:
        """CUPTI's records of one launch: the API call, its external id, the kernel."""
        kinds = self.ActivityKind
        if kinds.CONCURRENT_KERNEL not in self.enabled:
            return
        corr = next(self._ids)
        rec = types.SimpleNamespace
        out = [
            rec(
                kind=kinds.RUNTIME,
                correlation_id=corr,
                start=self.get_timestamp(),
                thread_id=threading.get_ident(),
            )
        ]
        stack = self._stack()
        if stack:
            out.append(
                rec(
                    kind=kinds.EXTERNAL_CORRELATION,
                    correlation_id=corr,
                    external_kind=self.ExternalCorrelationKind.CUSTOM2,
                    external_id=stack[-1],
                )
            )
        out.append(
            rec(
                kind=kinds.CONCURRENT_KERNEL,
                name=name,
                start=start,
                end=end,
                correlation_id=corr,
                stream_id=7,
                graph_node_id=0,
                device_id=0,
            )
        )
        with self.gpu.lock:
            self.records.extend(out)

    # -- the API ----------------------------------------------------------------------
    def activity_register_callbacks(self, _requested: Any, completed: Any) -> None:
        self.completed = completed

    def activity_enable(self, kind: int) -> None:
        self.enabled.add(int(kind))

    def activity_disable(self, kind: int) -> None:
        self.enabled.discard(int(kind))

    def activity_flush_all(self, _flag: int) -> None:
        with self.gpu.lock:
            records, self.records = self.records, []
        if records and self.completed is not None:
            self.completed(records)

    def activity_push_external_correlation_id(self, _kind: int, ext: int) -> None:
        self._stack().append(int(ext))

    def activity_pop_external_correlation_id(self, _kind: int) -> None:
        self._stack().pop()

    @staticmethod
    def get_timestamp() -> int:
        return time.perf_counter_ns()  # 1 tick per ns: CUPTI's own clock


def _pynvml(gpu: FakeGpu) -> types.ModuleType:
    class NVMLError(Exception):
        pass

    def reading(value: object) -> Any:
        def call(*_args: object) -> object:
            if gpu.nvml_s:
                time.sleep(gpu.nvml_s)  # ctypes releases the GIL around the call
            return value

        return call

    return _module(
        "pynvml",
        NVMLError=NVMLError,
        NVML_CLOCK_SM=0,
        NVML_CLOCK_MEM=1,
        NVML_CLOCK_GRAPHICS=2,
        NVML_TEMPERATURE_GPU=0,
        NVML_TEMPERATURE_THRESHOLD_SLOWDOWN=1,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=reading("580.00"),
        nvmlSystemGetCudaDriverVersion=reading(13000),
        nvmlDeviceGetCount=reading(1),
        nvmlDeviceGetUUID=reading("GPU-fake-0000"),
        nvmlDeviceGetMemoryInfo=reading(types.SimpleNamespace(total=80 * 2**30)),
        nvmlDeviceGetHandleByUUID=reading("handle"),
        nvmlDeviceGetHandleByIndex=reading("handle"),
        nvmlDeviceGetName=reading(NVML["name"]),
        nvmlDeviceGetMaxClockInfo=reading(NVML["sm_mhz"]),
        nvmlDeviceGetClockInfo=lambda _h, which: reading(
            NVML["sm_mhz"] if which == 0 else NVML["mem_mhz"]
        )(),
        nvmlDeviceGetTemperature=reading(NVML["temperature_c"]),
        nvmlDeviceGetPowerUsage=reading(NVML["power_mw"]),
        nvmlDeviceGetCurrentClocksEventReasons=reading(0),
        nvmlDeviceGetMarginTemperature=reading(NVML["margin_c"]),
    )


# -- a replayed cell ------------------------------------------------------------------
CELL = """\
with annotate("mm"):
    gpu.launch("sgemm", 50_000 * n)
    gpu.launch("bias", 2_000)
with annotate("relu"):
    gpu.launch("relu", 3_000 + n)
    side = threading.Thread(target=gpu.launch, args=("side", 7_000))
    side.start()
    side.join()
"""
"""Two regions, three kernels of the opening thread and one of another thread."""
OPTIONS = "--configs 1,2,3 --runs 5 --warmup 1"
HOST_TIMED = ("region__host_enqueue_ns", "region__host_span_ns")
"""Shape metrics the host's clock gives: they differ from one replay to the next."""


def replay(gpu: FakeGpu, backend_id: str, options: str = OPTIONS) -> dict[str, Any]:
    """Run :data:`CELL` through ``backend_id``'s collector, as the magic does.

    Returns the records (what the host's clock gave left out: ``finished_at`` and
    :data:`HOST_TIMED`), each batch the sink took and each progress the hook took.
    """
    import dataclasses

    from nsight_lab.backends import inprocess
    from nsight_lab.contract.collector import CellCode, Output
    from nsight_lab.contract.registry import get_collector
    from nsight_lab.options import parse_options
    from nsight_lab.plan import make_plan
    from nsight_lab.regions import annotate

    collector = get_collector(backend_id)
    parsed = parse_options(f"--backend {backend_id} {options}")
    plan = make_plan(parsed, {backend_id: collector.probe()})
    namespace = {"gpu": gpu, "annotate": annotate, "threading": threading}
    cell = CellCode(CELL, CELL, compile(CELL, "<cell>", "exec"), namespace)
    batches: list[int] = []
    shown: list[tuple[int, int, int]] = []
    out = Output(
        begin=lambda _device, _notes: 1,
        sink=lambda batch: batches.append(len(batch)),
        progress=lambda p, records: shown.append(
            (p.config_index, p.runs_done_total, len(records))
        ),
    )
    model = inprocess.work_model
    inprocess.work_model = lambda *_: None  # PyTorch's op counter needs torch
    try:
        records = collector.collect(plan, cell, out)
    finally:
        inprocess.work_model = model
    rows = []
    for r in records:
        row = dataclasses.asdict(r)
        row.pop("finished_at")
        row["kernels"] = list(r.kernels)
        row["telemetry"]["clock_event_reasons"] = list(r.telemetry.clock_event_reasons)
        row["metrics"] = {
            k: v for k, v in sorted(r.metrics.items()) if k not in HOST_TIMED
        }
        rows.append(row)
    return {"records": rows, "batches": batches, "progress": shown}
