r"""The evidence of issue 11 on one GPU: the pm backend (CUPTI PM sampling) vs ncu.

Parts, each on its own (a failure is logged and the next part runs), results written
after every part so a timeout keeps what was done:

1. ``stack``: versions, the doctor's PM sampling line, which metrics PM sampling takes
   on this chip (alone, and the default set in one pass), the base metric count.
2. ``fixture``: a cell of four regions (``x*2`` over 256 MB, ``a + b*c`` and
   ``torch.addcmul`` on 32M floats, a tiny 4 MB ``x*2``) driven through the pm
   measurement with its quiet gaps, and again without them (back-to-back regions);
   every sample and kernel interval is kept and written as the CI fixture
   ``pm_samples_h200.json`` (a few hundred KB).
3. ``decode``: 2,000 launches of ``x*2`` in four collections at 20 µs, decoded live
   (about 12,000 samples): are the bytes all there?
4. ``cell``: the issue's cell (``x*2`` over 256 MB, ``a + b*c``, ``addcmul``, softmax,
   layernorm, a transpose copy of 8192x4096 fp32, a sum over 64M floats, an 8192^2
   bf16 matmul; the L2 flushed before each region) through ``%%nsight --backend pm``,
   on the default counters (read stopped) and on the DRAM pair (read live): per-region
   DRAM bytes against a plain ``ncu --metrics dram__bytes_read.sum,
   dram__bytes_write.sum`` run of the same kernels (and against the isolated ncu
   backend), the unfused/fused traffic ratio of both, and each sampler's pace.
5. ``walls``: wall time of the same cell on events, cupti, pm (DRAM pair; defaults)
   and the isolated ncu backend (whole cells, and the marginal cost per run between
   two run counts); the issue's bar is the DRAM pair at most 1.15x events.
6. ``streaming``: per-run store lag (``store_lag.lag_run``) for pm (DRAM pair;
   defaults) and events.
7. ``timeline``: the "Counters over time" figure of the cell, as PNG (kaleido) or
   JSON.

Writes to ``--out``: ``pm_h200.json``, ``pm_h200.log``, ``pm_samples_h200.json``,
``pm_h200_timeline.png`` (or ``.json``). Copy the first and the PNG to
``benchmarks/results/`` and the fixture to ``tests/fixtures/``.

Run from the repository root, as root, with cupti-python >= 13.4 and its libcupti::

    PYTHONPATH=/tmp/site:$PWD LD_LIBRARY_PATH=<site>/nvidia/cu13/lib \\
        python benchmarks/pm_h200.py --out $OUT
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

MiB = 1 << 20
BUDGET_S = 300.0
TOLERANCE = 0.02
WALL_BAR = 1.15
"""The issue's bar: the pm cell at most this multiple of the events cell."""
"""The issue's bar: per-region DRAM bytes within 2 % of ncu's ..."""
LONG_US = 100.0
"""... for every region of at least 100 µs."""
DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
FIXTURE_METRICS = (
    *DRAM,
    "lts__t_bytes.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
)
"""The fixture keeps these columns (the others would only make it bigger)."""
CANDIDATE_METRICS = (
    *DRAM,
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_bytes.sum",
    "gr__cycles_elapsed.max",
    "sm__cycles_active.avg",
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__cycles_elapsed.sum",
    "sm__inst_executed.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "pcie__read_bytes.sum",
    "pcie__write_bytes.sum",
    "nvlrx__bytes.sum",
)

TENSORS = """
import torch
dev = "cuda"
x = torch.randn(64 * 1024 * 1024, device=dev)
a, b, c = (torch.randn(32 * 1024 * 1024, device=dev) for _ in range(3))
s = torch.randn(8192, 4096, device=dev)
m = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
small = torch.randn(1024 * 1024, device=dev)
"""
REGIONS: dict[str, str] = {
    "x2": "x * 2",
    "unfused": "a + b * c",
    "fused": "torch.addcmul(a, b, c)",
    "softmax": "torch.softmax(s, dim=-1)",
    "layernorm": "torch.nn.functional.layer_norm(s, (4096,))",
    "transpose": "s.t().contiguous()",
    "sum": "x.sum()",
    "matmul_bf16": "m @ m",
}
FIXTURE_REGIONS = ("x2", "unfused", "fused", "tiny")
"""``tiny``: ``small * 2``, 4 MB each way, a few µs: shorter than a sample."""
KNOWN_BYTES: dict[str, tuple[int, int]] = {
    # (read, written) the kernels must move at least, from the tensor sizes.
    "x2": (256 * MiB, 256 * MiB),
    "unfused": (512 * MiB, 256 * MiB),  # b*c -> t (2 in, 1 out), a + t (2 in, 1 out)
    "fused": (384 * MiB, 128 * MiB),
    "softmax": (128 * MiB, 128 * MiB),
    "layernorm": (128 * MiB, 128 * MiB),
    "transpose": (128 * MiB, 128 * MiB),
    "sum": (256 * MiB, 0),
    "matmul_bf16": (256 * MiB, 128 * MiB),
    "tiny": (4 * MiB, 4 * MiB),
}

PLAIN_SCRIPT = """
import nvtx, torch
{setup}
for run in range({runs}):
{body}
torch.cuda.synchronize()
"""


class Log:
    """Everything said goes to stdout and to the log file."""

    def __init__(self, path: Path) -> None:
        """Append to ``path``."""
        self.file = path.open("a", encoding="utf-8")

    def __call__(self, *parts: object) -> None:
        """Say ``parts``, space-separated."""
        line = " ".join(str(p) for p in parts)
        print(line, flush=True)
        self.file.write(line + "\n")
        self.file.flush()


class Bench:
    """The results so far, written after every part."""

    def __init__(self, out: Path) -> None:
        """Write into ``out``."""
        self.out = out
        self.log = Log(out / "pm_h200.log")
        self.results: dict[str, Any] = {"parts": {}}
        self.started = time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the benchmark started."""
        return time.monotonic() - self.started

    def save(self) -> None:
        """Write the results so far."""
        path = self.out / "pm_h200.json"
        path.write_text(json.dumps(self.results, indent=2, default=str) + "\n")

    @contextlib.contextmanager
    def part(self, name: str, *, optional: bool = True) -> Iterator[dict[str, Any]]:
        """Run one part: its entry in the results, its failure logged, not raised."""
        entry: dict[str, Any] = {}
        self.results["parts"][name] = entry
        if optional and self.elapsed() > BUDGET_S:
            entry["skipped"] = f"over the {BUDGET_S:.0f} s budget"
            self.log(f"== {name}: skipped ({entry['skipped']})")
            self.save()
            yield entry
            return
        self.log(f"== {name} (at {self.elapsed():.1f} s)")
        t0 = time.monotonic()
        try:
            yield entry
        except BaseException as exc:  # one part never stops the rest
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc()
            self.log(f"!! {name} failed: {entry['error']}\n{entry['traceback']}")
            if isinstance(exc, KeyboardInterrupt):
                raise
        finally:
            entry["part_s"] = round(time.monotonic() - t0, 3)
            self.log(f"   {name}: {json.dumps(entry, default=str)[:3000]}")
            self.save()


# ------------------------------------------------------------------ 1. the stack


def stack(entry: dict[str, Any]) -> None:
    """Versions, the doctor's line, the metrics PM sampling takes here."""
    import torch

    from nsight_lab.backends.pm import availability
    from nsight_lab.backends.pm.metrics import DEFAULT_METRICS
    from nsight_lab.backends.pm.sampler import cupti_version
    from nsight_lab.gpu.stack import find_ncu, ncu_version

    ncu = find_ncu()
    entry.update(
        python=sys.version.split()[0],
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        cupti_python=cupti_version(),
        device=torch.cuda.get_device_name(0),
        ld_library_path=os.environ.get("LD_LIBRARY_PATH", ""),
        ncu=str(ncu) if ncu else None,
        ncu_version=".".join(map(str, ncu_version(ncu) or ())) if ncu else None,
    )
    diagnosis = availability.diagnose()
    entry["doctor"] = {
        "status": diagnosis.status,
        "detail": diagnosis.detail,
        "hint": diagnosis.hint,
    }
    check = availability.CHECKS.check(torch, torch.cuda.current_device())
    entry["chip"] = check.host.chip
    t0 = time.perf_counter()
    entry["alone"] = {m: check.why_not((m,)) is None for m in CANDIDATE_METRICS}
    entry["defaults_refusal"] = check.why_not(DEFAULT_METRICS)
    entry["default_groups"] = check.groups(
        [m for m in DEFAULT_METRICS if entry["alone"].get(m, True)]
    )
    entry["check_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with contextlib.suppress(Exception):
        names = check.host.names()
        entry["known_metric_names"] = len(names)
        entry["known_dram"] = [n for n in names if n.startswith("dram__bytes")][:20]
    entry["names_s"] = time.perf_counter() - t0


# ------------------------------------------------------------------ 2. the fixture


def drive(
    measurement: Any,  # noqa: ANN401  (a PmMeasurement)
    ns: dict[str, Any],
    regions: dict[str, str],
    runs: int,
) -> list[Any]:
    """Run ``regions`` ``runs`` times through an opened measurement (as the runner)."""
    from nsight_lab.backends.base import RunKey

    code = {
        name: compile(f"_ = {expr}", name, "exec") for name, expr in regions.items()
    }
    timings = []
    for run in range(runs):
        measurement.begin_run(RunKey(0, run))
        for name in regions:
            measurement.enter_region(name)
            exec(code[name], ns)  # noqa: S102  (our own fixed workloads)
            measurement.exit_region(name)
        measurement.end_run(0.0)
    timings += measurement.completed(wait=True)
    return timings


def open_pm(metrics: tuple[str, ...], interval_us: int = 20) -> Any:  # noqa: ANN401
    """An opened pm measurement (the collector's own, as the magic opens it)."""
    from nsight_lab.backends.pm.collector import PmBackend
    from nsight_lab.options import parse_options

    options = parse_options(
        f"--backend pm --metrics {','.join(metrics)} --sample-interval {interval_us}"
    )
    return PmBackend().open(options)


def fixture(entry: dict[str, Any], bench: Bench, ns: dict[str, Any]) -> None:
    """Record the CI fixture: with quiet gaps, then back to back without."""
    import torch

    from nsight_lab.backends.pm import availability
    from nsight_lab.backends.pm.attribution import Layout, attribute
    from nsight_lab.backends.pm.sampler import cupti_version

    regions = {name: REGIONS.get(name, "small * 2") for name in FIXTURE_REGIONS}
    # The fixture's columns: DRAM bytes first, then what fits in the same pass.
    check = availability.CHECKS.check(torch, torch.cuda.current_device())
    usable = [m for m in FIXTURE_METRICS if check.why_not((m,)) is None]
    chosen = tuple(check.groups(usable)[0])
    entry["metrics"] = chosen
    batches = []
    for quiet in (True, False):
        m = open_pm(chosen)
        try:
            m.quiet_gaps = quiet
            drive(m, ns, regions, 1)  # warm-up, its samples dropped
            m.keep_raw = True
            m.raw.clear()
            timings = drive(m, ns, regions, 3)
            entry[f"cost_quiet_{quiet}"] = vars(m.cost)
        finally:
            m.close()
        for raw in m.raw:
            first = min(k[0] for _, _, ks in raw.regions for k in ks)
            last = max(k[1] for _, _, ks in raw.regions for k in ks)
            window = 200_000  # keep 200 µs either side of the runs' kernels
            samples = [
                [int(s[0]), int(s[1]), *s[2:]]
                for s in raw.samples
                if s[1] > first - window and s[0] < last + window
            ]
            batches.append(
                {
                    "quiet_gaps": quiet,
                    "samples": samples,
                    "regions": [
                        {"run": seq, "name": name, "kernels": kernels}
                        for seq, name, kernels in raw.regions
                    ],
                    "busy": [
                        b
                        for b in raw.busy
                        if b[1] > first - window and b[0] < last + window
                    ],
                    "quiet": raw.quiet,
                }
            )
        entry[f"durations_us_quiet_{quiet}"] = {
            name: [t.regions[name] / 1e3 for t in timings] for name in regions
        }
        entry[f"counters_quiet_{quiet}"] = {
            name: [t.counters.get(name, {}) for t in timings] for name in regions
        }
    torch.cuda.synchronize()
    metrics = list(chosen)
    data = {
        "version": 1,
        "what": "PM samples and CUPTI kernel intervals per region, recorded by "
        "benchmarks/pm_h200.py (issue 11)",
        "device": torch.cuda.get_device_name(0),
        "chip": bench.results["parts"].get("stack", {}).get("chip"),
        "cupti_python": cupti_version(),
        "interval_ns": 20_000,
        "metrics": metrics,
        "known_bytes": {n: list(KNOWN_BYTES[n]) for n in FIXTURE_REGIONS},
        "batches": batches,
    }
    path = bench.out / "pm_samples_h200.json"
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    entry["fixture_bytes"] = path.stat().st_size
    entry["fixture_samples"] = [len(b["samples"]) for b in batches]
    # What the attribution makes of it, as the CI test will.
    for batch in batches:
        layout = Layout(
            regions={
                (r["run"], r["name"]): [tuple(k) for k in r["kernels"]]
                for r in batch["regions"]
            },
            busy=[tuple(k) for k in batch["busy"]],
        )
        table = [row[2:] for row in batch["samples"]]
        starts = [row[0] for row in batch["samples"]]
        ends = [row[1] for row in batch["samples"]]
        result = attribute(starts, ends, table, layout)
        read, write = metrics.index(DRAM[0]), metrics.index(DRAM[1])
        per: dict[str, list[float]] = {}
        for (_, name), values in result.regions.items():
            per.setdefault(name, []).append(float(values[read] + values[write]))
        entry[f"dram_rw_over_known_quiet_{batch['quiet_gaps']}"] = {
            name: statistics.median(v) / sum(KNOWN_BYTES[name])
            for name, v in per.items()
        }


# ------------------------------------------------------------------ 3. decoding


PACES: list[dict[str, Any]] = []
"""Each closed PM sampler's mode, note and live pace (see :func:`record_paces`)."""


def record_paces() -> None:
    """Keep every PmSampler's mode and live-decoding pace when it closes."""
    from nsight_lab.backends.pm.sampler import PmSampler

    close = PmSampler.close

    def recorded(self: PmSampler) -> None:
        close(self)
        PACES.append(
            {
                "mode": self.mode,
                "note": self.note,
                **self.pace,
                "stopped_zeros": self.stopped_zeros[:4],
            }
        )

    PmSampler.close = recorded  # type: ignore[method-assign]


def last_pace() -> dict[str, Any]:
    """The pace of the sampler closed last."""
    return dict(PACES[-1]) if PACES else {}


def decode(entry: dict[str, Any], ns: dict[str, Any]) -> None:
    """Live decoding of more than 10,000 samples over four collections: all bytes?"""
    import torch
    from cupti import cupti

    from nsight_lab.backends.pm.live import CAPACITY
    from nsight_lab.backends.pm.sampler import PmSampler

    batches, per_batch = 4, 500
    sampler = PmSampler(torch.cuda.current_device(), DRAM, 20_000)
    chunks: list[Any] = []
    waits: list[float] = []
    try:
        entry["mode"] = sampler.mode
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(batches):
            for _ in range(per_batch):
                ns["x"].mul(2)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            chunks += sampler.drain(until_ns=int(cupti.get_timestamp()))
            waits.append(time.perf_counter() - t1)
        entry["gpu_and_drains_s"] = time.perf_counter() - t0
        entry["drain_waits_s"] = waits
        entry["mode_after"] = sampler.mode
    finally:
        sampler.close()
    entry["pace"] = last_pace()
    samples = sum(len(c) for c in chunks)
    read = float(sum(c.all_values()[:, 0].sum() for c in chunks))
    written = float(sum(c.all_values()[:, 1].sum() for c in chunks))
    expected = batches * per_batch * 256 * MiB
    entry.update(
        samples=samples,
        read_over_expected=read / expected,
        written_over_expected=written / expected,
        past_10000=samples > CAPACITY,
    )


# ------------------------------------------------------------------ 4. the cell


def cell_text(options: str) -> str:
    """The issue's cell, one region per kernel, with ``options``."""
    lines = [f"%%nsight {options}"]
    for name, expr in REGIONS.items():
        lines += [f"with nsight.annotate({name!r}):", f"    _ = {expr}"]
    return "\n".join(lines) + "\n"


def run_cell(ip: Any, options: str) -> tuple[float, Any]:  # noqa: ANN401
    """Run the cell through the magic; its wall time and ``--out`` DataFrame."""
    t0 = time.perf_counter()
    result = ip.run_cell(cell_text(options))
    wall = time.perf_counter() - t0
    if result.error_in_exec is not None:
        msg = f"{type(result.error_in_exec).__name__}: {result.error_in_exec}"
        raise RuntimeError(msg)
    return wall, ip.user_ns.get("_out")


def per_region_bytes(frame: Any) -> dict[str, dict[str, Any]]:  # noqa: ANN401
    """Each region's bytes as the roofline columns have them, and the metric rows."""
    out: dict[str, dict[str, Any]] = {}
    rows = frame[frame["Metric"] == "gpu__time_duration.sum"]
    for _, row in rows.iterrows():
        name = str(row["Annotation"])
        metric_rows = frame[frame["Annotation"] == name].set_index("Metric")
        medians = {
            metric: float(metric_rows.loc[metric, "MedianValue"])
            for metric in metric_rows.index
            if metric != "gpu__time_duration.sum"
        }
        read, written = float(row["BytesRead"]), float(row["BytesWritten"])
        if math.isnan(read) or math.isnan(written):  # no FLOPs: no roofline columns
            read, written = medians.get(DRAM[0], read), medians.get(DRAM[1], written)
        out[name] = {
            "read": read,
            "written": written,
            "source": str(row["BytesSource"]),
            "flops_source": str(row["FLOPsSource"]),
            "duration_us": float(row["MedianValue"]) / 1e3,
            "metric_medians": medians,
        }
    return out


def plain_ncu(entry: dict[str, Any], runs: int = 3) -> dict[str, dict[str, float]]:
    """The same kernels in a plain script under ncu: bytes per region (median run)."""
    from nsight_lab.backends.ncu.report import read_report
    from nsight_lab.gpu.stack import find_ncu

    ncu = find_ncu()
    if ncu is None:
        msg = "no ncu on PATH"
        raise RuntimeError(msg)
    body = "".join(
        f"    with nvtx.annotate(f'{name} [c0 r{{run}}]', domain='nsight_lab'):\n"
        f"        _ = {expr}\n"
        for name, expr in REGIONS.items()
    )
    metrics = [*DRAM, "gpu__time_duration.sum"]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "plain.py"
        script.write_text(PLAIN_SCRIPT.format(setup=TENSORS, runs=runs, body=body))
        report = Path(tmp) / "plain"
        command = [
            str(ncu), "--nvtx", "--nvtx-include", "regex:nsight_lab@.+/",
            "--metrics", ",".join(metrics), "--cache-control", "all",
            "--clock-control", "none", "-f", "-o", str(report),
            sys.executable, str(script),
        ]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(  # noqa: S603  (our own command line)
            command, capture_output=True, text=True, check=False, timeout=240
        )
        entry["plain_ncu_wall_s"] = time.perf_counter() - t0
        if done.returncode != 0:
            msg = (
                f"ncu exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"
            )
            raise RuntimeError(msg)
        rows = read_report(str(report) + ".ncu-rep", metrics)
    per_run: dict[tuple[str, int], dict[str, float]] = {}
    for row in rows:
        slot = per_run.setdefault(
            (row.region, row.run_index),
            {"read": 0.0, "written": 0.0, "ns": 0.0, "kernels": 0},
        )
        slot["read"] += row.metrics.get(DRAM[0], 0.0)
        slot["written"] += row.metrics.get(DRAM[1], 0.0)
        slot["ns"] += row.metrics.get("gpu__time_duration.sum", 0.0)
        slot["kernels"] += 1
    out: dict[str, dict[str, float]] = {}
    for name in REGIONS:
        found = [v for (r, _), v in per_run.items() if r == name]
        if found:
            out[name] = {
                key: statistics.median(v[key] for v in found)
                for key in ("read", "written", "ns", "kernels")
            }
    return out


def isolated_ncu(
    entry: dict[str, Any],
    bench: Bench,
    ip: Any,  # noqa: ANN401
    rows: dict[str, dict[str, Any]],
) -> None:
    """The same cell on the isolated ncu backend: its bytes and its wall time."""
    options = f"--backend ncu --metrics {','.join(DRAM)} --runs 10 --warmup 2"
    try:
        ncu_wall, ncu_frame = run_cell(ip, f"{options} --quiet --out _out")
        entry["ncu_backend_wall_10_runs_s"] = ncu_wall
        bench.results["ncu_backend_wall_10_runs_s"] = ncu_wall
        isolated = per_region_bytes(ncu_frame)
        entry["ncu_backend"] = isolated
        for name, row in rows.items():
            found = isolated.get(name)
            if found and found["read"] + found["written"]:
                row["pm_over_ncu_backend"] = row["pm_read_written"] / (
                    found["read"] + found["written"]
                )
    except Exception as exc:  # noqa: BLE001  (the rest of the part still counts)
        entry["ncu_backend_error"] = f"{type(exc).__name__}: {exc}"


def add_reference(path: Path, reference: dict[str, dict[str, float]]) -> None:
    """Give the CI fixture ncu's bytes of its regions (an independent reference)."""
    if not reference or not path.exists():
        return
    recorded = json.loads(path.read_text())
    recorded["ncu_bytes"] = {
        name: [reference[name]["read"], reference[name]["written"]]
        for name in FIXTURE_REGIONS
        if name in reference
    }
    path.write_text(json.dumps(recorded, separators=(",", ":")) + "\n")


def region_rows(
    pm: dict[str, dict[str, Any]],
    defaults: dict[str, dict[str, Any]],
    reference: dict[str, dict[str, float]],
) -> dict[str, dict[str, Any]]:
    """Per region: pm's bytes (DRAM pair, defaults) against the known and ncu's."""
    rows = {}
    for name, got in pm.items():
        ref = reference.get(name)
        row: dict[str, Any] = {
            "duration_us": got["duration_us"],
            "pm_read_written": got["read"] + got["written"],
            "known_read_written": sum(KNOWN_BYTES[name]),
        }
        if name in defaults:
            row["pm_defaults_read_written"] = (
                defaults[name]["read"] + defaults[name]["written"]
            )
        if ref:
            ncu_rw = ref["read"] + ref["written"]
            row["ncu_read_written"] = ncu_rw
            row["pm_over_ncu"] = row["pm_read_written"] / ncu_rw if ncu_rw else None
            row["within_2pct"] = (
                abs(row["pm_over_ncu"] - 1) <= TOLERANCE if row["pm_over_ncu"] else None
            )
            if "pm_defaults_read_written" in row and ncu_rw:
                row["pm_defaults_over_ncu"] = row["pm_defaults_read_written"] / ncu_rw
            row["ncu_kernels"] = ref["kernels"]
            row["ncu_duration_us"] = ref["ns"] / 1e3
        rows[name] = row
    return rows


def cell(entry: dict[str, Any], bench: Bench, ip: Any) -> None:  # noqa: ANN401
    """The issue's cell on pm: bytes per region against ncu, the fusion ratio."""
    import torch

    from nsight_lab.figures import counters_figure

    wall, frame = run_cell(ip, "--backend pm --runs 20 --warmup 2 --quiet --out _out")
    entry["pm_wall_s"] = wall
    entry["pm_pace"] = last_pace()
    defaults = per_region_bytes(frame)
    entry["pm_defaults"] = defaults
    # The timeline picture shows the default counters (tensor pipe, L2, PCIe too).
    entry["defaults_session_id"] = int(frame["SessionId"].iloc[0])
    # The DRAM pair, the metrics ncu is asked for: decoded live.
    wall, frame = run_cell(
        ip,
        f"--backend pm --metrics {','.join(DRAM)} --runs 20 --warmup 2 --quiet "
        "--out _out",
    )
    entry["pm_dram_wall_s"] = wall
    entry["pm_dram_pace"] = last_pace()
    pm = per_region_bytes(frame)
    entry["pm"] = pm
    entry["session_id"] = int(frame["SessionId"].iloc[0])
    entry["backend"] = str(frame["Backend"].iloc[0])
    bench.results["pm_session_id"] = entry["defaults_session_id"]
    try:
        reference = plain_ncu(entry)
    except Exception as exc:  # noqa: BLE001  (the rest of the part still counts)
        entry["plain_ncu_error"] = f"{type(exc).__name__}: {exc}"
        reference = {}
    entry["plain_ncu"] = reference
    add_reference(bench.out / "pm_samples_h200.json", reference)
    rows = region_rows(pm, defaults, reference)
    entry["regions"] = rows
    long_ones = [
        r for r in rows.values() if r["duration_us"] >= LONG_US and "within_2pct" in r
    ]
    entry["all_regions_over_100us_within_2pct"] = (
        all(r["within_2pct"] for r in long_ones) if long_ones else None
    )
    # ncu flushes the caches before every kernel: a region of several kernels may
    # reuse its own intermediate in L2 when run as written (pm sees that, ncu not).
    single = [r for r in long_ones if r.get("ncu_kernels") == 1]
    entry["single_kernel_regions_over_100us_within_2pct"] = (
        all(r["within_2pct"] for r in single) if single else None
    )
    if "unfused" in pm and "fused" in pm:
        ratio = pm["unfused"]["read"] + pm["unfused"]["written"]
        ratio /= pm["fused"]["read"] + pm["fused"]["written"]
        entry["fusion_ratio_pm"] = ratio
        if "unfused" in reference and "fused" in reference:
            ref_ratio = (
                reference["unfused"]["read"] + reference["unfused"]["written"]
            ) / (reference["fused"]["read"] + reference["fused"]["written"])
            entry["fusion_ratio_ncu"] = ref_ratio
            entry["fusion_ratio_pm_over_ncu"] = ratio / ref_ratio
    isolated_ncu(entry, bench, ip, rows)
    with contextlib.suppress(Exception):
        from nsight_lab.store.run_store import RunStore

        with RunStore() as store:
            records = store.runs(entry["session_id"])
        entry["runs_with_series"] = sum(r.series is not None for r in records)
        fig = counters_figure(records)
        entry["timeline_traces"] = len(fig.data) if fig is not None else 0
    torch.cuda.synchronize()


# ------------------------------------------------------------------ 5. wall times


WALL_CELLS = {
    "events": ("--backend events", 3),
    "cupti": ("--backend cupti", 3),
    "pm_dram": (f"--backend pm --metrics {','.join(DRAM)}", 3),
    "pm_defaults": ("--backend pm", 1),
}
"""Each timed cell's options and how often it is timed (the best is kept)."""


def walls(entry: dict[str, Any], bench: Bench, ip: Any) -> None:  # noqa: ANN401
    """Wall time of the cell on events, pm (DRAM pair, defaults) and isolated ncu."""
    base = " --runs {runs} --warmup 2 --quiet --out _out"
    times: dict[str, dict[int, list[float]]] = {name: {} for name in WALL_CELLS}
    paces: dict[str, list[dict[str, Any]]] = {}
    for runs in (10, 60):
        for repeat in range(3):
            for name, (options, repeats) in WALL_CELLS.items():
                if repeat >= repeats:
                    continue
                wall, _ = run_cell(ip, options + base.format(runs=runs))
                times[name].setdefault(runs, []).append(wall)
                if name.startswith("pm"):
                    paces.setdefault(f"{name}_{runs}", []).append(last_pace())
    entry["walls_s"] = {b: {str(r): v for r, v in d.items()} for b, d in times.items()}
    entry["paces"] = paces
    best = {b: {r: min(v) for r, v in d.items()} for b, d in times.items()}
    marginal = {b: (best[b][60] - best[b][10]) / 50 for b in best}
    entry["marginal_per_run_s"] = marginal
    for name in ("cupti", "pm_dram", "pm_defaults"):
        entry[f"{name}_over_events_10_runs"] = best[name][10] / best["events"][10]
        entry[f"{name}_over_events_60_runs"] = best[name][60] / best["events"][60]
        entry[f"{name}_over_events_marginal"] = marginal[name] / marginal["events"]
    ncu_wall = bench.results.get("ncu_backend_wall_10_runs_s")
    if ncu_wall is not None:
        entry["ncu_over_pm_dram_10_runs"] = ncu_wall / best["pm_dram"][10]
    entry["pm_dram_within_1_15x_events_60_runs"] = (
        entry["pm_dram_over_events_60_runs"] <= WALL_BAR
    )


# ------------------------------------------------------------------ 6. streaming


def streaming(entry: dict[str, Any], ip: Any, home: Path) -> None:  # noqa: ANN401
    """Per-run store lag of pm and events (benchmarks/store_lag.py's measure)."""
    spec = importlib.util.spec_from_file_location(
        "store_lag", Path(__file__).with_name("store_lag.py")
    )
    assert spec is not None  # noqa: S101
    assert spec.loader is not None  # noqa: S101
    store_lag = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(store_lag)
    ip.run_cell("_x = torch.zeros(1, device='cuda')")
    cells = {
        "pm_dram": ("pm", f"--metrics {','.join(DRAM)}"),
        "pm_defaults": ("pm", ""),
        "events": ("events", ""),
    }
    for name, (backend, options) in cells.items():
        entry[name] = store_lag.lag_run(
            ip, home / "store.sqlite", backend, 3000, options=options, label=name
        )
        if not entry[name]["runs"]:
            msg = f"the {name} lag cell ran no run (see the log for its error)"
            raise RuntimeError(msg)


# ------------------------------------------------------------------ 7. timeline


def timeline(entry: dict[str, Any], bench: Bench) -> None:
    """The cell's "Counters over time" figure as PNG (or JSON without kaleido)."""
    from nsight_lab.figures import counters_figure, figure_json, write_png
    from nsight_lab.store.run_store import RunStore

    session_id = bench.results.get("pm_session_id")
    if session_id is None:
        msg = "no pm session (the cell part failed)"
        raise RuntimeError(msg)
    with RunStore() as store:
        records = store.runs(session_id)
    fig = counters_figure(records)
    if fig is None:
        msg = "the pm session's runs have no counter series"
        raise RuntimeError(msg)
    (bench.out / "pm_h200_timeline.json").write_text(json.dumps(figure_json(fig)))
    try:
        path = write_png(
            fig, bench.out / "pm_h200_timeline.png", width=1400, height=700
        )
        entry["png"] = str(path)
    except Exception as exc:  # noqa: BLE001
        entry["png_error"] = f"{type(exc).__name__}: {exc}"
        entry["figure_json"] = str(bench.out / "pm_h200_timeline.json")


# ------------------------------------------------------------------ main


def main() -> None:
    """Run every part and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="nsight-lab-pm-"))
    os.environ["NSIGHT_LAB_HOME"] = str(home)  # a fresh store: the metric cache too
    bench = Bench(args.out)
    record_paces()
    bench.results.update(
        host=platform.node(), started=time.strftime("%Y-%m-%d %H:%M:%S")
    )
    bench.log(f"pm_h200: out={args.out} store={home}")
    ns: dict[str, Any] = {}
    ip = None
    steps: list[tuple[str, Callable[[dict[str, Any]], None], bool]] = [
        ("stack", stack, False),
        ("setup", lambda e: _setup(e, ns), False),
        ("fixture", lambda e: fixture(e, bench, ns), False),
        ("decode", lambda e: decode(e, ns), True),
        ("cell", lambda e: cell(e, bench, _ip()), False),
        ("walls", lambda e: walls(e, bench, _ip()), True),
        ("streaming", lambda e: streaming(e, _ip(), home), True),
        ("timeline", lambda e: timeline(e, bench), False),
    ]

    def _ip() -> Any:  # noqa: ANN401
        nonlocal ip
        if ip is None:
            from IPython.testing.globalipapp import start_ipython

            ip = start_ipython()
            ip.run_line_magic("load_ext", "nsight_lab")
            ip.run_cell("import torch, nsight")
            # The tensors of the setup part, not a second copy.
            ip.user_ns.update({k: v for k, v in ns.items() if not k.startswith("__")})
        return ip

    for name, step, optional in steps:
        with bench.part(name, optional=optional) as entry:
            if "skipped" not in entry:
                step(entry)
    bench.results["paces"] = PACES
    bench.results["total_s"] = bench.elapsed()
    bench.save()
    bench.log(
        f"done in {bench.elapsed():.1f} s; results in {args.out / 'pm_h200.json'}"
    )
    bench.log(
        "copy: pm_h200.json pm_h200_timeline.png -> benchmarks/results/, "
        "pm_samples_h200.json -> tests/fixtures/"
    )


def _setup(entry: dict[str, Any], ns: dict[str, Any]) -> None:
    import torch

    exec(TENSORS, ns)  # noqa: S102  (our own fixed workloads)
    torch.cuda.synchronize()
    entry["allocated_gib"] = torch.cuda.memory_allocated() / (1 << 30)


if __name__ == "__main__":
    main()
