"""Multi-rank regions: an all-reduce and a 2-way tensor-parallel matmul, per rank.

Two ``%%nsight --ranks N`` cells in a real IPython shell, each rank one process
started by ``torch.multiprocessing`` (NCCL on the events backend, one GPU per rank;
gloo on the cpu backend):

- ``all_reduce``: ``dist.all_reduce`` of a 256 MB float32 tensor (one region);
- ``tp_matmul``: a row-parallel linear layer, ``Y = X @ W`` with ``X`` split by
  columns and ``W`` by rows over the ranks: region ``local_matmul`` (each rank's
  ``X_r @ W_r``, bf16 on GPUs, float32 on the CPU) then ``reduce_partial`` (the
  all-reduce that sums the partial ``Y``).

For every region it reports the per-rank median durations, the span's median and
CI95 (the region over every rank), the straggler counts, the modelled bytes each rank
sent (ring model, :mod:`nsight_lab.distributed.traffic`) with the bus bandwidth they
give over the span (nccl-tests' ``busbw``) and the algorithm bandwidth ``S / span``;
for the matmul its TFLOP/s over the span; per GPU the median SM clock and
temperature. The per-rank charts of each session are written beside the JSON as
plotly JSON (``*_ranks.json``, ``*_rank_clocks.json``), and as PNG where kaleido
and a browser work.

Run on the 2-GPU machine (NVLink multicast stays off: :data:`MULTICAST_OFF`)::

    python benchmarks/multigpu_h200.py                      # every visible GPU
    python benchmarks/multigpu_h200.py --ranks 1            # one GPU, one rank
    python benchmarks/multigpu_h200.py --backend cpu        # gloo, small sizes

It writes ``benchmarks/results/multigpu_h200x<N>.json`` (``multigpu_cpu_x<N>.json``
with ``--backend cpu``) unless ``--out`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
"""NVLink multicast stays off (the lent machines' rule): set where not set already,
before any rank starts (the ranks inherit this environment)."""

MAGIC = (
    "%%nsight --backend {backend} --ranks {ranks} --runs {runs} --warmup {warmup} "
    "--quiet --out _bench --name {name!r}\n"
)
ALL_REDUCE = """\
import torch
import torch.distributed as dist
import nsight
device = f"cuda:{dist.get_rank()}" if on_gpu else "cpu"
buffer = globals().get("buffer")
if buffer is None:
    buffer = torch.ones(numel, dtype=torch.float32, device=device)
with nsight.annotate("all_reduce"):
    dist.all_reduce(buffer)
"""

TP_MATMUL = """\
import torch
import torch.distributed as dist
import nsight
rank, world = dist.get_rank(), dist.get_world_size()
device = f"cuda:{rank}" if on_gpu else "cpu"
dtype = torch.bfloat16 if on_gpu else torch.float32
if globals().get("x_part") is None:
    torch.manual_seed(rank)
    x_part = torch.randn(m, k // world, dtype=dtype, device=device)
    w_part = torch.randn(k // world, n, dtype=dtype, device=device)
with nsight.annotate("local_matmul"):
    y = x_part @ w_part
with nsight.annotate("reduce_partial"):
    dist.all_reduce(y)
"""


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v == v]  # noqa: PLR0124  (NaN test)
    return statistics.median(values) if values else None


def _regions(records: list[Any]) -> dict[str, Any]:
    """Per region: what the JSON reports (see the module docstring)."""
    from nsight_lab.distributed import metrics as m
    from nsight_lab.stats import summarize

    out: dict[str, Any] = {}
    for name in dict.fromkeys(r.annotation for r in records):
        group = [r for r in records if r.annotation == name]
        ranks = sorted(m.per_rank(group[0], m.DURATION))
        spans = [r.duration_ns for r in group]
        stats = summarize(spans)
        stragglers = [int(r.metrics[m.STRAGGLER]) for r in group]
        sent = _median([r.metrics.get(m.COMM_BYTES, float("nan")) for r in group])
        span_s = stats.median * 1e-9
        entry: dict[str, Any] = {
            "runs": len(group),
            "span_ns_median": stats.median,
            "span_ns_ci95": [stats.ci95_low, stats.ci95_high],
            "span_rsd_pct": stats.rsd_pct,
            "per_rank_ns_median": {
                str(r): _median(
                    [g.metrics[m.rank_metric(m.DURATION, r)] for g in group]
                )
                for r in ranks
            },
            "per_rank_start_offset_ns_median": {
                str(r): _median(
                    [g.metrics.get(m.rank_metric(m.START, r), 0.0) for g in group]
                )
                for r in ranks
            },
            "straggler_runs": {str(r): stragglers.count(r) for r in ranks},
            "devices": {
                str(r): m.device_label(group[0].metrics[m.rank_metric(m.DEVICE, r)])
                for r in ranks
            },
            "sm_clock_mhz_median": {
                str(r): _median(
                    [
                        g.metrics.get(m.rank_metric(m.SM_CLOCK, r), float("nan"))
                        for g in group
                    ]
                )
                for r in ranks
            },
            "temperature_c_median": {
                str(r): _median(
                    [
                        g.metrics.get(m.rank_metric(m.TEMPERATURE, r), float("nan"))
                        for g in group
                    ]
                )
                for r in ranks
            },
            "modelled_bytes_sent_per_rank": sent,
            "collectives_per_run": _median(
                [r.metrics.get(m.COMM_COUNT, float("nan")) for r in group]
            ),
        }
        if sent:
            entry["bus_bandwidth_gbps"] = sent / span_s / 1e9
        out[name] = entry
    return out


def _figures(records: list[Any], stem: Path) -> list[str]:
    """Write the session's per-rank charts; the files written."""
    from nsight_lab.figures import StaticExportError, figure_json, write_png
    from nsight_lab.figures.ranks import rank_figures

    written: list[str] = []
    for name, fig in rank_figures(records).items():
        path = stem.with_name(f"{stem.name}_{name}.json")  # plotly JSON: small
        path.write_text(json.dumps(figure_json(fig)), encoding="utf-8")
        written.append(path.name)
        try:
            png = write_png(fig, stem.with_name(f"{stem.name}_{name}.png"))
            written.append(png.name)
        except StaticExportError as exc:
            print(f"  no PNG of {name}: {exc}", flush=True)
    return written


def _profile(ip: Any, cell: str) -> tuple[int, list[Any], float]:  # noqa: ANN401
    """Run one cell; its session id, records and wall seconds."""
    from nsight_lab.store.run_store import RunStore

    t0 = time.perf_counter()
    result = ip.run_cell(cell)
    wall = time.perf_counter() - t0
    if result.error_in_exec is not None:
        msg = f"{type(result.error_in_exec).__name__}: {result.error_in_exec}"
        raise RuntimeError(msg)
    with RunStore() as store:
        session = store.list_sessions(limit=1)[0]
        return session.id, store.runs(session.id), wall


def _nccl_version(torch: Any) -> str:  # noqa: ANN401  (the torch module)
    """NCCL's version as torch reports it (a tuple, or an int in older builds)."""
    version = torch.cuda.nccl.version()
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line; keeps NVLink multicast off and points the store (--store)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("events", "cpu"), default="events")
    parser.add_argument("--ranks", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--mb", type=int, default=None, help="all-reduce size in MB")
    parser.add_argument("--size", type=int, default=None, help="matmul M = K = N")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="the store's directory (NSIGHT_LAB_HOME), to bring back and open in "
        "the sidebar (ui-tests/tests/ranks.spec.ts, NSIGHT_LAB_RANKS_SESSION)",
    )
    args = parser.parse_args(argv)
    if args.store is not None:
        args.store.mkdir(parents=True, exist_ok=True)
        os.environ["NSIGHT_LAB_HOME"] = str(args.store.resolve())
    for name, value in MULTICAST_OFF.items():
        os.environ.setdefault(name, value)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run both workloads; write the JSON (and the charts) next to it."""
    args = _arguments(argv)

    import torch
    from IPython.testing.globalipapp import start_ipython

    from nsight_lab.backends.cpu import cpu_name

    on_gpu = args.backend == "events"
    if on_gpu and not torch.cuda.is_available():
        print("--backend events needs a CUDA GPU; pass --backend cpu", file=sys.stderr)
        return 2
    ranks = args.ranks or (torch.cuda.device_count() if on_gpu else 2)
    runs = args.runs or (30 if on_gpu else 5)
    mb = args.mb or (256 if on_gpu else 16)
    size = args.size or (8192 if on_gpu else 512)
    out = args.out or RESULTS / (
        f"multigpu_h200x{ranks}.json" if on_gpu else f"multigpu_cpu_x{ranks}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)

    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    ip.user_ns.update(
        {
            "numel": mb * 1024 * 1024 // 4,
            "m": size,
            "k": size,
            "n": size,
            "on_gpu": on_gpu,
        }
    )
    common = {
        "backend": args.backend,
        "ranks": ranks,
        "runs": runs,
        "warmup": args.warmup,
    }
    report: dict[str, Any] = {
        "backend": args.backend,
        "ranks": ranks,
        "runs": runs,
        "warmup": args.warmup,
        "devices": [torch.cuda.get_device_name(i) for i in range(ranks)]
        if on_gpu
        else [cpu_name()],
        "torch": torch.__version__,
        "nccl": _nccl_version(torch) if on_gpu else None,
        "python": platform.python_version(),
        "env": {name: os.environ.get(name) for name in MULTICAST_OFF},
        "workloads": {},
    }
    for workload, body, name in (
        ("all_reduce", ALL_REDUCE, f"all_reduce {mb} MB x{ranks}"),
        ("tp_matmul", TP_MATMUL, f"tp_matmul {size}^3 x{ranks}"),
    ):
        print(f"{workload}: {ranks} ranks, {args.backend} ...", flush=True)
        cell = MAGIC.format(**common, name=name) + body
        session_id, records, wall = _profile(ip, cell)
        regions = _regions(records)
        entry: dict[str, Any] = {
            "session_id": session_id,
            "wall_s": wall,
            "regions": regions,
            "figures": _figures(records, out.with_name(f"{out.stem}_{workload}")),
        }
        if workload == "all_reduce":
            span_s = regions["all_reduce"]["span_ns_median"] * 1e-9
            entry["payload_bytes"] = mb * 1024 * 1024
            # One rank reduces with nobody: NCCL returns at once (1.3 µs for 256 MB
            # on the H200), so a bandwidth from it would be meaningless.
            entry["algorithm_bandwidth_gbps"] = (
                mb * 1024 * 1024 / span_s / 1e9 if ranks > 1 else None
            )
        else:
            flops = 2.0 * size**3  # over every rank: each does 2 M (K / N) N
            local = regions["local_matmul"]["span_ns_median"] * 1e-9
            step = local + regions["reduce_partial"]["span_ns_median"] * 1e-9
            entry["flops_total"] = flops
            entry["local_matmul_tflops"] = flops / local / 1e12
            entry["step_tflops"] = flops / step / 1e12
        report["workloads"][workload] = entry
        print(json.dumps(entry, indent=1), flush=True)
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
