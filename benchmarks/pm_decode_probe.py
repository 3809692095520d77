r"""What CUPTI PM sampling's decode costs, and what it allows, on the GPU at hand.

The pm backend's wall time is its decode: this probe times each primitive of it and
answers the questions its design turns on, each in a part of its own (a fresh
``cupti.pm_sampling.Collector`` per part, so one part's failure cannot poison the next):

1. ``stopped``: ``x * 2`` launches sampled, then stop and decode; the decode's steps
   timed apart (image allocation and initialisation, ``pm_sampling_decode_data``, the
   per-sample ``get_sample_info`` loop with cupti-python's fresh structs and with one
   kept struct, metric evaluation per sample through cupti-python's ``CounterData[i]``
   and through one kept evaluation struct) and the DRAM bytes against the known total.
2. ``live``: decoding while sampling runs and kernels are still queued (no stop):
   does it work, does a later decode continue where the last one ended, are the bytes
   all there, and what does each decode cost?
3. ``live_past_one_image``: more than 10,000 samples in all (5 µs interval), decoded
   live in images of 10,000: is every byte there?
4. ``gil``: does ``pm_sampling_decode_data`` / evaluation release the GIL (a Python
   counter thread keeps counting while the main thread decodes)?
5. ``reuse``: one image, initialised again before each decode, instead of a new one.

Run from the repository root on the GPU machine (cupti-python >= 13.4 and its CUPTI)::

    python benchmarks/pm_decode_probe.py --out $OUT/pm_decode_probe.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MiB = 1 << 20
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
DEFAULTS = (
    *DRAM,
    "lts__t_bytes.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_active.avg",
    "pcie__read_bytes.sum",
    "pcie__write_bytes.sum",
)
LAUNCH_BYTES = 2 * 256 * MiB
"""``x * 2`` over 64M floats reads and writes 256 MiB each."""


def now() -> float:
    return time.perf_counter()


@contextlib.contextmanager
def collector(metrics: tuple[str, ...], interval_ns: int) -> Iterator[Any]:
    from cupti import pm_sampling

    c = pm_sampling.Collector(0)
    c.enable()
    try:
        c.configure(
            metrics=list(metrics),
            sampling_interval=interval_ns,
            trigger_mode=pm_sampling.TriggerMode.GPU_TIME_INTERVAL,
            hardware_buffer_size=512 << 20,
        )
        yield c
    finally:
        with contextlib.suppress(Exception):
            c.stop()
        c.disable()


class Decoder:
    """Decode with kept structs: an image, the info and sample-info params."""

    def __init__(self, c: Any, max_samples: int) -> None:  # noqa: ANN401
        from cupti import cupti

        self.cupti = cupti
        self.c = c
        self.max_samples = max_samples
        self.image = c._create_counter_data_image(max_samples)  # noqa: SLF001
        p = cupti.PmSamplingDecodeDataParams()
        p.struct_size = cupti.PM_SAMPLING_DECODE_DATA_PARAMS_STRUCT_SIZE
        p.p_pm_sampling_object = c._pm_sampling_object  # noqa: SLF001
        p.p_counter_data_image = self.image.ctypes.data
        p.counter_data_image_size = len(self.image)
        self.decode_params = p
        info = cupti.PmSamplingGetCounterDataInfoParams()
        info.struct_size = cupti.PM_SAMPLING_GET_COUNTER_DATA_INFO_PARAMS_STRUCT_SIZE
        info.p_counter_data_image = self.image.ctypes.data
        info.counter_data_image_size = len(self.image)
        self.info = info
        s = cupti.PmSamplingCounterDataGetSampleInfoParams()
        s.struct_size = (
            cupti.PM_SAMPLING_COUNTER_DATA_GET_SAMPLE_INFO_PARAMS_STRUCT_SIZE
        )
        s.p_pm_sampling_object = c._pm_sampling_object  # noqa: SLF001
        s.p_counter_data_image = self.image.ctypes.data
        s.counter_data_image_size = len(self.image)
        self.sample = s

    def reinit(self) -> None:
        cupti = self.cupti
        init = cupti.PmSamplingCounterDataImageInitializeParams()
        init.struct_size = (
            cupti.PM_SAMPLING_COUNTER_DATA_IMAGE_INITIALIZE_PARAMS_STRUCT_SIZE
        )
        init.p_pm_sampling_object = self.c._pm_sampling_object  # noqa: SLF001
        init.counter_data_size = len(self.image)
        init.p_counter_data = self.image.ctypes.data
        cupti.pm_sampling_counter_data_image_initialize(init.ptr)

    def decode(self) -> dict[str, Any]:
        t0 = now()
        self.cupti.pm_sampling_decode_data(self.decode_params.ptr)
        t1 = now()
        self.cupti.pm_sampling_get_counter_data_info(self.info.ptr)
        n = int(self.info.num_completed_samples)
        starts, ends = [], []
        s = self.sample
        for i in range(n):
            s.sample_index = i
            self.cupti.pm_sampling_counter_data_get_sample_info(s.ptr)
            starts.append(int(s.start_timestamp))
            ends.append(int(s.end_timestamp))
        t2 = now()
        stop = getattr(self.decode_params, "decode_stop_reason", None)
        return {
            "n": n,
            "populated": int(self.info.num_populated_samples),
            "total": int(self.info.num_total_samples),
            "stop_reason": str(stop),
            "overflow": str(getattr(self.decode_params, "overflow", None)),
            "decode_s": t1 - t0,
            "sample_info_s": t2 - t1,
            "starts": starts,
            "ends": ends,
        }


class Evaluator:
    """Evaluate samples of one image through one kept struct."""

    def __init__(self, chip: str, metrics: tuple[str, ...], image: Any) -> None:  # noqa: ANN401
        import numpy as np
        from cupti import cupti, profiler_host
        from cupti.utils import metrics_to_c_array

        self.cupti = cupti
        self.host = profiler_host.ProfilerHost(
            chip, profiler_host.ProfilerType.PM_SAMPLING
        )
        self.host.initialize()
        self._names_keep, names_ptr = metrics_to_c_array(list(metrics))
        self.values = np.zeros(len(metrics), dtype=np.float64)
        p = cupti.ProfilerHostEvaluateToGpuValuesParams()
        p.struct_size = cupti.PROFILER_HOST_EVALUATE_TO_GPU_VALUES_PARAMS_STRUCT_SIZE
        p.p_host_object = self.host._p_host_object  # noqa: SLF001
        p.p_counter_data_image = image.ctypes.data
        p.counter_data_image_size = len(image)
        p.pp_metric_names = names_ptr
        p.num_metrics = len(metrics)
        p.p_metric_values = self.values.ctypes.data
        self.params = p
        self.image = image

    def __call__(self, index: int) -> list[float]:
        self.params.range_index = index
        self.cupti.profiler_host_evaluate_to_gpu_values(self.params.ptr)
        return self.values.tolist()

    def close(self) -> None:
        self.host.deinitialize()


def launches(x: Any, count: int) -> None:  # noqa: ANN401
    for _ in range(count):
        x.mul(2.0)


def dram_total(values: list[list[float]]) -> float:
    return sum(v[0] + v[1] for v in values)


def part_stopped(x: Any, torch: Any) -> dict[str, Any]:  # noqa: ANN401
    out: dict[str, Any] = {}
    for metrics in (DRAM, DEFAULTS):
        entry: dict[str, Any] = {}
        with collector(metrics, 20_000) as c:
            c.start()
            launches(x, 200)
            torch.cuda.synchronize()
            c.stop()
            t0 = now()
            d = Decoder(c, 10_000)
            entry["image_create_s"] = now() - t0
            entry["image_bytes"] = len(d.image)
            got = d.decode()
            entry.update({k: v for k, v in got.items() if k not in ("starts", "ends")})
            t0 = now()
            ev = Evaluator(c._chip_name, metrics, d.image)  # noqa: SLF001
            entry["evaluator_open_s"] = now() - t0
            t0 = now()
            vals = [ev(i) for i in range(got["n"])]
            entry["evaluate_kept_s"] = now() - t0
            entry["evaluate_kept_us_per_sample"] = (
                1e6 * entry["evaluate_kept_s"] / max(1, got["n"])
            )
            ev.close()
            entry["dram_ratio"] = dram_total(vals) / (200 * LAUNCH_BYTES)
        # cupti-python's own path, for comparison
        with collector(metrics, 20_000) as c:
            c.start()
            launches(x, 200)
            torch.cuda.synchronize()
            c.stop()
            t0 = now()
            data = c.decode(max_samples=10_000)
            entry["cupti_python_decode_s"] = now() - t0
            n = len(data)
            t0 = now()
            vals = [data[i].metric_values for i in range(n)]
            entry["cupti_python_evaluate_s"] = now() - t0
            entry["cupti_python_n"] = n
            entry["cupti_python_dram_ratio"] = dram_total(vals) / (200 * LAUNCH_BYTES)
        out["+".join(m.split("__")[0] for m in metrics) + f"_{len(metrics)}"] = entry
    return out


def part_live(
    x: Any,  # noqa: ANN401
    torch: Any,  # noqa: ANN401
    interval_ns: int,
    rounds: int,
    per_round: int,
    *,
    fresh: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {"interval_ns": interval_ns, "fresh": fresh, "decodes": []}
    with collector(DRAM, interval_ns) as c:
        d = Decoder(c, 10_000)
        ev = Evaluator(c._chip_name, DRAM, d.image)  # noqa: SLF001
        total = 0.0
        samples = 0
        last_end = 0
        gaps: list[int] = []
        overlaps = 0
        c.start()
        t_start = now()

        def drain(tag: str) -> int:
            nonlocal total, samples, last_end, overlaps, d, ev
            t_img = now()
            if fresh:  # a new image each time, as cupti-python's decode() does
                ev.close()
                d = Decoder(c, 10_000)
                ev = Evaluator(c._chip_name, DRAM, d.image)  # noqa: SLF001
            else:
                d.reinit()
            image_s = now() - t_img
            got = d.decode()
            t0 = now()
            vals = [ev(i) for i in range(got["n"])]
            eval_s = now() - t0
            total += dram_total(vals)
            samples += got["n"]
            if got["n"]:
                if last_end:
                    gap = got["starts"][0] - last_end
                    gaps.append(gap)
                    if gap < 0:
                        overlaps += 1
                last_end = got["ends"][-1]
            out["decodes"].append(
                {
                    "tag": tag,
                    "image_ms": 1e3 * image_s,
                    "n": got["n"],
                    "populated": got["populated"],
                    "stop_reason": got["stop_reason"],
                    "decode_ms": 1e3 * got["decode_s"],
                    "sample_info_ms": 1e3 * got["sample_info_s"],
                    "eval_ms": 1e3 * eval_s,
                }
            )
            return int(got["n"])

        for r in range(rounds):
            launches(x, per_round)  # queued; the GPU is still busy when we decode
            drain(f"running-{r}")
        torch.cuda.synchronize()
        for k in range(50):  # what is left, still live
            if drain(f"idle-{k}") == 0 and k > 2:
                break
            time.sleep(0.002)
        c.stop()
        drain("after-stop")
        out["wall_s"] = now() - t_start
        ev.close()
    expected = rounds * per_round * LAUNCH_BYTES
    out["samples"] = samples
    out["dram_ratio"] = total / expected
    out["gap_ns_max"] = max(gaps) if gaps else None
    out["gap_ns_median"] = sorted(gaps)[len(gaps) // 2] if gaps else None
    out["overlapping_chunks"] = overlaps
    return out


def part_gil(x: Any, torch: Any) -> dict[str, Any]:  # noqa: ANN401
    counted = [0]
    running = [True]

    def count() -> None:
        while running[0]:
            counted[0] += 1

    out: dict[str, Any] = {}
    with collector(DEFAULTS, 20_000) as c:
        c.start()
        launches(x, 400)
        torch.cuda.synchronize()
        c.stop()
        d = Decoder(c, 10_000)
        t = threading.Thread(target=count, daemon=True)
        t.start()
        time.sleep(0.05)
        c0, t0 = counted[0], now()
        time.sleep(0.05)
        baseline = (counted[0] - c0) / (now() - t0)
        c0, t0 = counted[0], now()
        got = d.decode()
        during_decode = (counted[0] - c0) / (now() - t0)
        ev = Evaluator(c._chip_name, DEFAULTS, d.image)  # noqa: SLF001
        c0, t0 = counted[0], now()
        for i in range(got["n"]):
            ev(i)
        during_eval = (counted[0] - c0) / (now() - t0)
        running[0] = False
        t.join()
        ev.close()
    # With the GIL held by the main thread, the counter thread runs only at the
    # interpreter's switch interval (5 ms): its rate falls to a few percent.
    out["counter_rate_baseline"] = baseline
    out["share_during_decode_data_and_info"] = during_decode / baseline
    out["share_during_evaluate"] = during_eval / baseline
    out["samples"] = got["n"]
    return out


def part_reuse(x: Any, torch: Any) -> dict[str, Any]:  # noqa: ANN401
    out: dict[str, Any] = {}
    with collector(DRAM, 20_000) as c:
        d = Decoder(c, 10_000)
        c.start()
        for variant in ("reinit", "no-reinit"):
            launches(x, 100)
            torch.cuda.synchronize()
            time.sleep(0.001)
            if variant == "reinit":
                t0 = now()
                d.reinit()
                out["reinit_s"] = now() - t0
            got = d.decode()
            out[variant] = {k: v for k, v in got.items() if k not in ("starts", "ends")}
        c.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default="", help="comma-separated part names")
    args = parser.parse_args()
    import torch

    x = torch.randn(64 * MiB, device="cuda")
    launches(x, 20)
    torch.cuda.synchronize()
    results: dict[str, Any] = {"device": torch.cuda.get_device_name()}
    parts: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("stopped", lambda: part_stopped(x, torch)),
        ("live_20us", lambda: part_live(x, torch, 20_000, 10, 100)),
        ("live_past_one_image_5us", lambda: part_live(x, torch, 5_000, 12, 50)),
        ("live_fresh_20us", lambda: part_live(x, torch, 20_000, 10, 100, fresh=True)),
        ("gil", lambda: part_gil(x, torch)),
        ("reuse", lambda: part_reuse(x, torch)),
    ]
    wanted = set(filter(None, args.only.split(",")))
    for name, run in parts:
        if wanted and name not in wanted:
            continue
        t0 = now()
        try:
            results[name] = run()
        except Exception as exc:  # noqa: BLE001  (every part is reported)
            results[name] = {
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
            }
        results[name]["part_s"] = now() - t0
        args.out.write_text(json.dumps(results, indent=1))
        print(name, json.dumps(results[name])[:1500], flush=True)


if __name__ == "__main__":
    main()
