r"""The evidence of issue 19 on one GPU: the pm backend against ncu, events and cupti.

The issue's 12-region cell (elementwise ops on 32-64M floats, softmax, layernorm, bf16
and fp32 matmuls, a transpose copy, a sum, a cumsum, a tiny 16K add, an fp16 bmm; the
cell of ``pm_scale_h200.py``) runs through the real ``%%nsight`` magic in an in-process
IPython shell, as a user runs it:

* ``pm_dram``: ``--metrics dram__bytes_read.sum,dram__bytes_write.sum`` (auto picks pm),
  ``pm_default``: ``--backend pm`` (the default counters), ``events``, ``cupti``; each
  at 10, 50 and 200 runs (10 and 50 twice, the best wall kept).
* Per region: pm's median DRAM bytes read and written against a plain ``ncu`` run of
  the same kernels (one child process, ``--cache-control all``), the issue's bar being
  reads within 1 % and writes within 3 % for regions of at least 100 µs.
* Walls: the marginal wall per run, ``(wall(50) - wall(10)) / 40``, of each backend and
  pm's over events' (the bar: 1.3x for the DRAM pair, 2x for the default set); the
  first pm cell's set-up cost (the first pm cell minus the same cell again, after an
  events cell took the process's first-cell costs).
* Every session's status, stored runs and notes (pm's say the interval it chose), the
  pm sampler's drain statistics where it has them, and the "Counters over time" figure
  of a pm session as PNG (kaleido where it works, else matplotlib) and as JSON.

Each part is guarded (a failure is recorded and the next part runs), its wall is
recorded, the results are written after every part and every cell, and a time budget
(``--budget``, 300 s) skips what would run past it. Writes under ``--out``:
``pm_h200.json`` (everything), ``pm_h200.log``, ``pm_h200_timeline.png`` and
``pm_h200_timeline.json``. Copy the JSON and the PNG to ``benchmarks/results/``.

On the H200 (``benchmarks/device_h200.sh`` runs it), from the repository root::

    PYTHONPATH=$PWD:/tmp/site LD_LIBRARY_PATH=<the cupti wheel's lib> \
        python3 benchmarks/pm_h200.py --out $OUT/pm

``--smoke`` runs the same parts on the cpu backend with small CPU tensors and run
counts 2, 4 and 8 (ncu, when absent, is recorded as the part's error): the check of
everything but the GPU that CI and a laptop can make.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

DRAM = ("dram__bytes_read.sum", "dram__bytes_write.sum")
TENSORS = """
import torch
x = torch.randn(64 << 20, device="cuda")
a, b, c = (torch.randn(32 << 20, device="cuda") for _ in range(3))
s = torch.randn(8192, 4096, device="cuda")
m16 = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
m32 = torch.randn(4096, 4096, device="cuda")
small = torch.randn(16384, device="cuda")
q = torch.randn(32, 1024, 128, device="cuda", dtype=torch.float16)
k = torch.randn(32, 128, 1024, device="cuda", dtype=torch.float16)
"""
SMOKE_TENSORS = """
import torch
x = torch.randn(1 << 16)
a, b, c = (torch.randn(1 << 15) for _ in range(3))
s = torch.randn(64, 128)
m16 = torch.randn(64, 64, dtype=torch.bfloat16)
m32 = torch.randn(64, 64)
small = torch.randn(1024)
q = torch.randn(4, 32, 16, dtype=torch.float16)
k = torch.randn(4, 16, 32, dtype=torch.float16)
"""
REGIONS: dict[str, str] = {
    "x2": "x * 2",
    "unfused": "a + b * c",
    "fused": "torch.addcmul(a, b, c)",
    "softmax": "torch.softmax(s, dim=-1)",
    "layernorm": "torch.nn.functional.layer_norm(s, (s.shape[-1],))",
    "matmul_bf16": "m16 @ m16",
    "matmul_fp32": "m32 @ m32",
    "transpose": "s.t().contiguous()",
    "sum": "x.sum()",
    "cumsum": "a.cumsum(0)",
    "tiny": "small + 1",
    "bmm_fp16": "torch.bmm(q, k)",
}
SETS: dict[str, str] = {
    "events": "--backend events",
    "pm_dram": f"--metrics {','.join(DRAM)}",
    "pm_default": "--backend pm",
    "cupti": "--backend cupti",
}
"""Each measured set's options (``pm_dram`` goes to pm through ``auto``)."""
PM_SETS = ("pm_dram", "pm_default")
RUN_COUNTS = (10, 50, 200)
WALL_REPEATS = 2
"""Cells of 10 and 50 runs are run this often (the best wall is kept)."""
LONG_US = 100.0
READ_TOLERANCE = 0.01
WRITE_TOLERANCE = 0.03
"""The issue's bars for regions of at least ``LONG_US``: reads 1 %, writes 3 %."""
MARGINAL_BARS = {"pm_dram": 1.3, "pm_default": 2.0}
"""The issue's bars: pm's marginal wall per run over events'."""
BUDGET_S = 300.0


# ------------------------------------------------------------------ bookkeeping


class Bench:
    """The results so far, written after every part and cell, and the log."""

    def __init__(self, out: Path, budget_s: float) -> None:
        """Write into ``out``; parts that start after ``budget_s`` are skipped."""
        self.out = out
        self.budget_s = budget_s
        self.started = time.monotonic()
        self.results: dict[str, Any] = {"parts": {}, "cells": []}
        self._log = (out / "pm_h200.log").open("a", encoding="utf-8")

    def log(self, *parts: object) -> None:
        """Say ``parts`` on stdout and in the log."""
        line = " ".join(str(p) for p in parts)
        print(line, flush=True)
        self._log.write(line + "\n")
        self._log.flush()

    def elapsed(self) -> float:
        """Seconds since the benchmark started."""
        return time.monotonic() - self.started

    def over_budget(self) -> bool:
        """Whether the time budget is spent."""
        return self.elapsed() > self.budget_s

    def save(self) -> None:
        """Write the results so far."""
        self.results["elapsed_s"] = round(self.elapsed(), 2)
        text = json.dumps(self.results, indent=1, default=str) + "\n"
        (self.out / "pm_h200.json").write_text(text, encoding="utf-8")

    def part(
        self,
        name: str,
        run: Callable[[dict[str, Any]], object],
        *,
        always: bool = False,
    ) -> dict[str, Any]:
        """Run one part, ``run(entry)``: its failure recorded in ``entry``, not raised.

        Skipped once the budget is spent, unless ``always`` (the cheap parts that
        read what the others measured).
        """
        entry: dict[str, Any] = {}
        self.results["parts"][name] = entry
        if self.over_budget() and not always:
            entry["skipped"] = f"over the {self.budget_s:.0f} s budget"
            self.log(f"== {name}: skipped ({entry['skipped']})")
            self.save()
            return entry
        self.log(f"== {name} (at {self.elapsed():.1f} s)")
        t0 = time.monotonic()
        try:
            run(entry)
        except Exception as exc:  # noqa: BLE001  (one part never stops the rest)
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc()
            self.log(f"!! {name} failed: {entry['error']}\n{entry['traceback']}")
        finally:
            entry["part_s"] = round(time.monotonic() - t0, 3)
            self.log(f"   {name}: {json.dumps(entry, default=str)[:2000]}")
            self.save()
        return entry


# ------------------------------------------------------------------ pure parts


def cell_text(options: str, regions: Mapping[str, str] = REGIONS) -> str:
    """The cell: one ``nsight.annotate`` region per entry of ``regions``."""
    lines = [f"%%nsight {options}"]
    for name, expr in regions.items():
        lines += [f"with nsight.annotate({name!r}):", f"    _ = {expr}"]
    return "\n".join(lines) + "\n"


def cell_options(set_name: str, runs: int, *, smoke: bool = False) -> str:
    """The magic's options for ``set_name`` at ``runs`` (``--quiet``, named)."""
    chosen = "--backend cpu" if smoke else SETS[set_name]
    return f"{chosen} --runs {runs} --quiet --name {set_name}-{runs}"


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def region_stats(records: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Per region of stored runs (``RunRecord`` objects): median time and DRAM bytes.

    ``duration_us``, ``read`` and ``written`` (bytes; None without the counter),
    ``runs``, and the smallest and largest run's bytes (``read_range``,
    ``written_range``) to show the spread.
    """
    per: dict[str, dict[str, list[float]]] = {}
    for record in records:
        got = per.setdefault(
            record.annotation, {"ns": [], "read": [], "written": [], "writeback": []}
        )
        got["ns"].append(float(record.duration_ns))
        for key, metric in (
            ("read", DRAM[0]),
            ("written", DRAM[1]),
            ("writeback", f"{DRAM[1]}.writeback"),
        ):
            value = record.metrics.get(metric)
            if value is not None:
                got[key].append(float(value))
    out: dict[str, dict[str, Any]] = {}
    for name, got in per.items():
        ns = _median(got["ns"])
        out[name] = {
            "duration_us": None if ns is None else ns / 1e3,
            "read": _median(got["read"]),
            "written": _median(got["written"]),
            "writeback": _median(got["writeback"]),
            "runs": len(got["ns"]),
            "read_range": [min(got["read"]), max(got["read"])] if got["read"] else None,
            "written_range": (
                [min(got["written"]), max(got["written"])] if got["written"] else None
            ),
        }
    return out


def _ratio(got: float | None, ref: float | None) -> float | None:
    if got is None or ref is None or ref <= 0:
        return None
    return got / ref


def compare_regions(
    pm: Mapping[str, Mapping[str, Any]], ncu: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Compare pm's per-region bytes with ncu's: a row per region, the verdicts.

    ``pm``: :func:`region_stats`. ``ncu``: per region ``read``, ``written`` (bytes),
    ``ns`` (kernel time) and ``kernels``, as :func:`plain_ncu` gives them. A region is
    *long* when ncu's (else pm's) time is at least ``LONG_US``; the verdicts
    (``reads_within_1pct``, ``writes_within_3pct``) cover the long regions both
    measured, None when there is none.
    """
    rows: dict[str, dict[str, Any]] = {}
    for name, got in pm.items():
        ref = ncu.get(name, {})
        ncu_us = ref["ns"] / 1e3 if ref.get("ns") else None
        length = ncu_us if ncu_us is not None else got.get("duration_us")
        read_ratio = _ratio(got.get("read"), ref.get("read"))
        written_ratio = _ratio(got.get("written"), ref.get("written"))
        rows[name] = {
            "pm_us": got.get("duration_us"),
            "ncu_us": ncu_us,
            "ncu_kernels": ref.get("kernels"),
            "pm_read": got.get("read"),
            "ncu_read": ref.get("read"),
            "read_ratio": read_ratio,
            "pm_written": got.get("written"),
            "ncu_written": ref.get("written"),
            "written_ratio": written_ratio,
            "pm_writeback": got.get("writeback"),
            "long": length is not None and length >= LONG_US,
            "read_ok": None
            if read_ratio is None
            else abs(read_ratio - 1) <= READ_TOLERANCE,
            "written_ok": None
            if written_ratio is None
            else abs(written_ratio - 1) <= WRITE_TOLERANCE,
        }
    long_rows = {n: r for n, r in rows.items() if r["long"]}

    def verdict(key: str) -> bool | None:
        judged = [r[key] for r in long_rows.values() if r[key] is not None]
        return all(judged) if judged else None

    def worst(key: str) -> list[Any] | None:
        found = [(n, r[key]) for n, r in long_rows.items() if r[key] is not None]
        if not found:
            return None
        name, ratio = max(found, key=lambda item: abs(item[1] - 1))
        return [name, ratio]

    return {
        "rows": rows,
        "long_regions": sorted(long_rows),
        "reads_within_1pct": verdict("read_ok"),
        "writes_within_3pct": verdict("written_ok"),
        "worst_read": worst("read_ratio"),
        "worst_written": worst("written_ratio"),
    }


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.1f}"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown_table(comparison: Mapping[str, Any], title: str) -> str:
    """The per-region rows as a Markdown table (MB, ratios; ``*`` marks long)."""
    lines = [
        f"**{title}** (MB; pm/ncu; `*` = at least {LONG_US:.0f} µs)",
        "",
        (
            "| region | µs (pm) | read pm | read ncu | read x | written pm "
            "| written ncu | written x | write-back pm |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in comparison["rows"].items():
        us = "-" if row["pm_us"] is None else f"{row['pm_us']:,.1f}"
        lines.append(
            f"| {name}{' *' if row['long'] else ''} | {us} | {_mb(row['pm_read'])} "
            f"| {_mb(row['ncu_read'])} | {_x(row['read_ratio'])} "
            f"| {_mb(row['pm_written'])} | {_mb(row['ncu_written'])} "
            f"| {_x(row['written_ratio'])} | {_mb(row.get('pm_writeback'))} |"
        )
    return "\n".join(lines) + "\n"


def wall_summary(cells: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Walls per set and run count (the best of the completed cells), marginals.

    ``marginal_per_run_s``: ``(wall(50) - wall(10)) / 40`` per set (and
    ``marginal_per_run_long_s`` between 10 and 200 runs);
    ``fixed_per_cell_s``: ``wall(10) - 10 * marginal``; ``over_events_marginal``: each
    set's marginal over events'; ``bars``: pm's against the issue's bars.
    """
    best: dict[str, dict[int, float]] = {}
    for cell in cells:
        if cell.get("first") or not cell.get("ok") or "wall_s" not in cell:
            continue
        walls = best.setdefault(cell["set"], {})
        runs = int(cell["runs"])
        walls[runs] = min(walls.get(runs, float("inf")), float(cell["wall_s"]))
    out: dict[str, Any] = {
        "best_wall_s": {
            s: {str(n): w for n, w in sorted(d.items())} for s, d in best.items()
        }
    }
    low, high, top = RUN_COUNTS
    marginal = {
        s: (d[high] - d[low]) / (high - low)
        for s, d in best.items()
        if low in d and high in d
    }
    out["marginal_per_run_s"] = marginal
    out["marginal_per_run_long_s"] = {  # 10 -> 200 runs: less noise
        s: (d[top] - d[low]) / (top - low)
        for s, d in best.items()
        if low in d and top in d
    }
    out["fixed_per_cell_s"] = {s: best[s][low] - low * m for s, m in marginal.items()}
    events = marginal.get("events")
    if events and events > 0:
        out["over_events_marginal"] = {
            s: m / events for s, m in marginal.items() if s != "events"
        }
        out["bars"] = {
            s: {
                "bar": bar,
                "ratio": out["over_events_marginal"].get(s),
                "met": (
                    out["over_events_marginal"][s] <= bar
                    if s in out["over_events_marginal"]
                    else None
                ),
            }
            for s, bar in MARGINAL_BARS.items()
        }
    out["over_events_wall"] = {
        s: {
            str(n): w / best["events"][n]
            for n, w in d.items()
            if n in best.get("events", {})
        }
        for s, d in best.items()
        if s != "events"
    }
    return out


def plain_script(setup: str, runs: int) -> str:
    """A plain script of the cell's kernels: one warm-up, then ``runs`` in ranges.

    The ranges are nsight-lab's (domain ``nsight_lab``, ``"region [c0 rN]"``), so
    :func:`nsight_lab.backends.ncu.report.read_report` attributes the kernels; the
    warm-up is outside any range (ncu's NVTX filter leaves it unprofiled).
    """
    body = [
        "import nvtx, torch",
        setup.strip(),
        *(f"_ = {expr}" for expr in REGIONS.values()),
        "torch.cuda.synchronize()",
        f"for run in range({runs}):",
    ]
    for name, expr in REGIONS.items():
        body += [
            f"    with nvtx.annotate(f'{name} [c0 r{{run}}]', domain='nsight_lab'):",
            f"        _ = {expr}",
        ]
    body.append("torch.cuda.synchronize()")
    return "\n".join(body) + "\n"


def ncu_per_region(rows: Iterable[Any]) -> dict[str, dict[str, float]]:
    """Sum ncu's kernel rows per region and run; per region, the median over runs.

    Each region gets ``read``, ``written`` (bytes), ``ns`` and ``kernels``.
    """
    per_run: dict[tuple[str, int], dict[str, float]] = {}
    for row in rows:
        slot = per_run.setdefault(
            (row.region, row.run_index),
            {"read": 0.0, "written": 0.0, "ns": 0.0, "kernels": 0.0},
        )
        slot["read"] += row.metrics.get(DRAM[0], 0.0)
        slot["written"] += row.metrics.get(DRAM[1], 0.0)
        slot["ns"] += row.metrics.get("gpu__time_duration.sum", 0.0)
        slot["kernels"] += 1
    out: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(region for region, _ in per_run):
        found = [v for (r, _), v in per_run.items() if r == name]
        out[name] = {
            key: float(statistics.median(v[key] for v in found))
            for key in ("read", "written", "ns", "kernels")
        }
    return out


# ------------------------------------------------------------------ GPU parts


def stack(entry: dict[str, Any]) -> None:
    """Versions, the device, ncu, the cupti library path."""
    import importlib.metadata as md

    import torch

    from nsight_lab.gpu.stack import find_libcupti, find_ncu, ncu_version

    def version(name: str) -> str | None:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return None

    ncu = find_ncu()
    entry.update(
        python=sys.version.split()[0],
        torch=torch.__version__,
        cuda=torch.cuda.is_available(),
        device=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        packages={
            n: version(n)
            for n in (
                "cupti-python",
                "nvidia-cuda-cupti",
                "ipython",
                "plotly",
                "ncu-report",
                "kaleido",
            )
        },
        libcupti=find_libcupti(),
        ld_library_path=os.environ.get("LD_LIBRARY_PATH", ""),
        ncu=str(ncu) if ncu else None,
        ncu_version=".".join(map(str, ncu_version(ncu) or ())) if ncu else None,
    )


def loaded_libcupti() -> list[str]:
    """The libcupti files this process has mapped (which CUPTI the pm backend uses)."""
    try:
        maps = Path("/proc/self/maps").read_text(encoding="utf-8")
    except OSError:
        return []
    return sorted(
        {line.split()[-1] for line in maps.splitlines() if "libcupti" in line}
    )


@dataclass
class SamplerWatch:
    """The drain statistics and interval of each pm sampler when it closes.

    Read from the sampler's ``stats``, ``interval_ns`` and ``limit`` where it has them
    (the pm backend's internals, not an API: a sampler without them is left alone).
    """

    closed: list[dict[str, Any]] = field(default_factory=list)

    def install(self) -> str | None:
        """Wrap ``PmSampler.close``; the reason when it cannot be."""
        try:
            from nsight_lab.backends.pm.sampler import PmSampler
        except Exception as exc:  # noqa: BLE001
            return f"{type(exc).__name__}: {exc}"
        close = PmSampler.close
        closed = self.closed

        def recorded(sampler: Any) -> None:  # noqa: ANN401
            seen: dict[str, Any] = {}
            stats = getattr(sampler, "stats", None)
            if stats is not None:
                with contextlib.suppress(TypeError):
                    seen.update(vars(stats))
                    seen["largest_share"] = stats.largest_share
            for name in ("interval_ns", "limit", "mode"):
                if hasattr(sampler, name):
                    seen[name] = getattr(sampler, name)
            closed.append(seen)
            close(sampler)

        PmSampler.close = recorded  # type: ignore[method-assign,assignment]
        return None

    def since(self, count: int) -> list[dict[str, Any]]:
        """What closed after the first ``count``."""
        return self.closed[count:]


class Cells:
    """Runs cells through the magic and reads back their sessions."""

    def __init__(
        self,
        bench: Bench,
        ip: Any,  # noqa: ANN401
        watch: SamplerWatch,
        *,
        smoke: bool,
    ) -> None:
        """Cells in ``ip`` (an IPython shell with nsight_lab loaded)."""
        self.bench, self.ip, self.watch, self.smoke = bench, ip, watch, smoke

    def _newest_session(self) -> int:
        from nsight_lab.store.run_store import RunStore

        with RunStore() as store:
            found = store.list_sessions(limit=1)
        return found[0].id if found else 0

    def run(self, set_name: str, runs: int, **tags: Any) -> dict[str, Any]:  # noqa: ANN401
        """One cell: its wall, session, status, notes and per-region medians."""
        from nsight_lab.store.run_store import RunStore

        options = cell_options(set_name, runs, smoke=self.smoke)
        entry: dict[str, Any] = {
            "set": set_name,
            "runs": runs,
            **tags,
            "options": options,
        }
        self.bench.results["cells"].append(entry)
        if self.bench.over_budget():
            entry["skipped"] = f"over the {self.bench.budget_s:.0f} s budget"
            return entry
        before, closed = self._newest_session(), len(self.watch.closed)
        t0 = time.perf_counter()
        try:
            result = self.ip.run_cell(cell_text(options))
            entry["wall_s"] = round(time.perf_counter() - t0, 4)
            failure = result.error_before_exec or result.error_in_exec
            if failure is not None:
                entry["error"] = f"{type(failure).__name__}: {failure}"
            newest = self._newest_session()
            if newest > before:
                with RunStore() as store:
                    session = store.get_session(newest)
                    records = store.runs(newest)
                entry.update(
                    session=newest,
                    backend=session.backend,
                    backend_reason=session.backend_reason,
                    status=session.status,
                    session_error=session.error,
                    notes=list(session.notes),
                    runs_stored=len(records),
                    runs_with_series=sum(r.series is not None for r in records),
                    regions=region_stats(records),
                )
            entry["ok"] = "error" not in entry and entry.get("status") == "completed"
            sampled = self.watch.since(closed)
            if sampled:
                entry["samplers"] = sampled
        except Exception as exc:  # noqa: BLE001  (one cell never stops the rest)
            entry["error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc()
            entry["ok"] = False
        finally:
            self.bench.save()
        self.bench.log(
            f"   cell {set_name} x{runs}: wall {entry.get('wall_s')} s, "
            f"{entry.get('backend')}, {entry.get('status')}, "
            f"runs {entry.get('runs_stored')}, {entry.get('error') or 'ok'}"
        )
        return entry


def first_cells(entry: dict[str, Any], cells: Cells) -> None:
    """The first events cell, then the first pm cell and the same cell again."""
    low = RUN_COUNTS[0]
    first = cells.run("events", low, first=True)
    entry["first_events_cell_s"] = first.get("wall_s")
    for set_name in PM_SETS:
        one = cells.run(set_name, low, first=True)
        two = cells.run(set_name, low, repeat=0)
        entry[set_name] = {"first_s": one.get("wall_s"), "second_s": two.get("wall_s")}
        if one.get("ok") and two.get("ok"):
            entry[set_name]["setup_s"] = round(one["wall_s"] - two["wall_s"], 4)
    entry["libcupti_loaded"] = loaded_libcupti()


def walls(entry: dict[str, Any], cells: Cells) -> None:
    """Every set at every run count, interleaved; the summary of the best walls.

    Cells of 10 and 50 runs, then of 200, then 10 and 50 again (the best of two kept).
    """
    low, high, top = RUN_COUNTS
    for repeat in range(WALL_REPEATS):
        for runs in (low, high):
            for set_name in SETS:
                if runs == low and repeat == 0 and set_name in PM_SETS:
                    continue  # first_cells ran it (its second cell)
                cells.run(set_name, runs, repeat=repeat)
        if repeat == 0:  # the largest cells before the repeats: the budget may end
            for set_name in (*PM_SETS, "events", "cupti"):
                cells.run(set_name, top, repeat=0)
    entry.update(wall_summary(cells.bench.results["cells"]))


def plain_ncu(entry: dict[str, Any], setup: str, runs: int = 3) -> dict[str, Any]:
    """The cell's kernels in a plain script under ncu: per-region bytes (median run)."""
    from nsight_lab.backends.ncu.report import read_report
    from nsight_lab.gpu.stack import find_ncu

    ncu = find_ncu()
    if ncu is None:
        msg = "no ncu on PATH (or NSIGHT_LAB_NCU)"
        raise RuntimeError(msg)
    metrics = [*DRAM, "gpu__time_duration.sum"]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "plain.py"
        script.write_text(plain_script(setup, runs), encoding="utf-8")
        report = Path(tmp) / "plain"
        command = [
            str(ncu), "--nvtx", "--nvtx-include", "regex:nsight_lab@.+/",
            "--metrics", ",".join(metrics), "--cache-control", "all",
            "--clock-control", "none", "-f", "-o", str(report),
            sys.executable, str(script),
        ]  # fmt: skip
        entry["command"] = " ".join([*command[:-2], "python", "plain.py"])
        # The child needs no CUPTI of ours: ncu brings its own libraries, and the
        # cupti wheel's (on LD_LIBRARY_PATH for the pm backend) stays out of its way.
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = ":".join(
            p
            for p in env.get("LD_LIBRARY_PATH", "").split(":")
            if p and not (Path(p) / "libcupti.so.13").exists()
        )
        entry["child_ld_library_path"] = env["LD_LIBRARY_PATH"]
        t0 = time.perf_counter()
        done = subprocess.run(  # noqa: S603  (our own command line)
            command, capture_output=True, text=True, check=False, timeout=180, env=env
        )
        entry["wall_s"] = round(time.perf_counter() - t0, 2)
        if done.returncode != 0:
            msg = (
                f"ncu exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"
            )
            raise RuntimeError(msg)
        rows = read_report(str(report) + ".ncu-rep", metrics)
    entry["kernels"] = len(rows)
    entry["kernel_names"] = {
        name: sorted({r.kernel[:80] for r in rows if r.region == name})
        for name in REGIONS
    }
    per_region = ncu_per_region(rows)
    entry["regions"] = per_region
    return per_region


def region_tables(entry: dict[str, Any], bench: Bench, ncu: Mapping[str, Any]) -> None:
    """Each pm cell's per-region bytes against ncu; the largest run of each set."""
    tables: dict[str, Any] = {}
    largest: dict[str, Any] = {}
    for cell in bench.results["cells"]:
        if cell["set"] not in PM_SETS or not cell.get("regions"):
            continue
        key = f"{cell['set']}-{cell['runs']}-{cell.get('repeat', 'first')}"
        tables[key] = compare_regions(cell["regions"], ncu)
        if cell.get("ok") and cell["runs"] >= largest.get(cell["set"], {}).get(
            "runs", 0
        ):
            largest[cell["set"]] = {"runs": cell["runs"], "key": key}
    entry["tables"] = tables
    entry["largest_completed"] = largest
    entry["markdown"] = "\n".join(
        markdown_table(tables[got["key"]], f"{name}, {got['runs']} runs")
        for name, got in largest.items()
    )
    entry["verdicts"] = {
        name: {
            k: tables[got["key"]][k]
            for k in (
                "reads_within_1pct",
                "writes_within_3pct",
                "worst_read",
                "worst_written",
            )
        }
        for name, got in largest.items()
    }


def timeline(entry: dict[str, Any], bench: Bench) -> None:
    """The "Counters over time" figure of a pm session: PNG and JSON."""
    from nsight_lab.figures import counters_figure, figure_json
    from nsight_lab.store.run_store import RunStore

    candidates = [
        c
        for c in bench.results["cells"]
        if c["set"] in PM_SETS and c.get("runs_with_series")
    ]
    if not candidates:
        msg = "no pm session with counter series (did the pm cells run?)"
        raise RuntimeError(msg)
    # The default set at 50 runs where it ran: the most counters, runs enough.
    candidates.sort(
        key=lambda c: (c["set"] == "pm_default", c["runs"] == RUN_COUNTS[1], c["runs"])
    )
    chosen = candidates[-1]
    entry["session"] = chosen["session"]
    entry["cell"] = f"{chosen['set']} x{chosen['runs']}"
    with RunStore() as store:
        records = store.runs(chosen["session"])
    fig = counters_figure(records)
    if fig is None:
        msg = f"counters_figure drew nothing for session {chosen['session']}"
        raise RuntimeError(msg)
    fig.update_layout(width=1400)
    (bench.out / "pm_h200_timeline.json").write_text(
        json.dumps(figure_json(fig)), encoding="utf-8"
    )
    png = bench.out / "pm_h200_timeline.png"
    try:
        from nsight_lab.figures import write_png

        write_png(fig, png, width=1400, height=int(fig.layout.height or 900), scale=1.5)
        entry["png"] = "kaleido"
    except Exception as exc:  # noqa: BLE001  (no kaleido/Chrome: matplotlib draws it)
        from nsight_lab.figures import mpl_figure

        entry["kaleido"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        mpl_figure.write_png(fig, png, scale=1.5)
        entry["png"] = "matplotlib"
    entry["png_bytes"] = png.stat().st_size


def summary(bench: Bench) -> dict[str, Any]:
    """The figures the closing note needs, from the parts' results."""
    parts = bench.results["parts"]
    cells = bench.results["cells"]
    largest: dict[str, Any] = {}
    for cell in cells:
        if cell["set"] in PM_SETS and cell.get("runs_stored"):
            got = largest.setdefault(cell["set"], {"runs": 0})
            if cell["runs"] > got["runs"]:
                got.update(
                    runs=cell["runs"],
                    runs_stored=cell["runs_stored"],
                    status=cell.get("status"),
                    error=cell.get("error") or cell.get("session_error"),
                )
    notes = sorted(
        {n for c in cells if c["set"] in PM_SETS for n in c.get("notes", [])}
    )
    failed = [
        {k: c.get(k) for k in ("set", "runs", "error", "session_error", "status")}
        for c in cells
        if "skipped" not in c and not c.get("ok")
    ]
    walls_part = parts.get("walls", {})
    return {
        "largest_pm_cells": largest,
        "failed_cells": failed,
        "skipped_cells": sum("skipped" in c for c in cells),
        "pm_notes": notes,
        "sampler_intervals_us": {
            f"{c['set']}-{c['runs']}-{c.get('repeat', 'first')}": [
                x["interval_ns"] / 1e3 for x in c["samplers"] if "interval_ns" in x
            ]
            for c in cells
            if c.get("samplers")
        },
        "setup_s": {
            s: parts.get("first_cells", {}).get(s, {}).get("setup_s") for s in PM_SETS
        },
        "marginal_per_run_s": walls_part.get("marginal_per_run_s"),
        "over_events_marginal": walls_part.get("over_events_marginal"),
        "bars": walls_part.get("bars"),
        "bytes": parts.get("regions", {}).get("verdicts"),
        "part_errors": {n: p["error"] for n, p in parts.items() if "error" in p},
    }


# ------------------------------------------------------------------ main


def start_shell(setup: str) -> Any:  # noqa: ANN401
    """An in-process IPython shell with nsight_lab loaded and the cell's tensors."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()  # None once started in this process
    ip.run_line_magic("load_ext", "nsight_lab")
    result = ip.run_cell("import torch, nsight\n" + setup)
    failure = result.error_before_exec or result.error_in_exec
    if failure is not None:
        msg = f"the cell's set-up failed: {type(failure).__name__}: {failure}"
        raise RuntimeError(msg)
    ip.run_cell("torch.cuda.synchronize() if torch.cuda.is_available() else None")
    return ip


def main(argv: list[str] | None = None) -> int:
    """Run every part; write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="cpu backend, small CPU tensors, 2/4/8 runs",
    )
    args = parser.parse_args(argv)
    global RUN_COUNTS  # noqa: PLW0603  (--smoke: the same parts, smaller)
    if args.smoke:
        RUN_COUNTS = (2, 4, 8)
    setup = SMOKE_TENSORS if args.smoke else TENSORS
    args.out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="nsight-lab-pm-h200-"))
    os.environ["NSIGHT_LAB_HOME"] = str(home)  # a fresh store: the metric cache too
    bench = Bench(args.out, args.budget)
    bench.results.update(
        host=platform.node(),
        started=time.strftime("%Y-%m-%d %H:%M:%S"),
        smoke=args.smoke,
        run_counts=list(RUN_COUNTS),
        regions=REGIONS,
        tensors=setup,
        sets={s: cell_options(s, 0, smoke=args.smoke) for s in SETS},
    )
    bench.log(f"pm_h200: out={args.out} store={home} budget={args.budget:.0f} s")
    bench.part("stack", stack)
    # The reference first: a child process under ncu, before this one holds the GPU.
    ncu: dict[str, Any] = {}
    bench.part("plain_ncu", lambda e: ncu.update(plain_ncu(e, setup)))
    watch = SamplerWatch()
    shell: list[Cells] = []

    def open_shell(entry: dict[str, Any]) -> None:
        entry["sampler_watch"] = watch.install() or "installed"
        t0 = time.perf_counter()
        shell.append(Cells(bench, start_shell(setup), watch, smoke=args.smoke))
        entry["start_s"] = round(time.perf_counter() - t0, 3)

    bench.part("shell", open_shell)
    if shell:
        bench.part("first_cells", lambda e: first_cells(e, shell[0]))
        bench.part("walls", lambda e: walls(e, shell[0]))
    bench.part("regions", lambda e: region_tables(e, bench, ncu), always=True)
    bench.part("timeline", lambda e: timeline(e, bench), always=True)
    bench.results["summary"] = summary(bench)
    bench.save()
    bench.log(json.dumps(bench.results["summary"], indent=1, default=str))
    bench.log(bench.results["parts"].get("regions", {}).get("markdown", ""))
    bench.log(f"done in {bench.elapsed():.1f} s; {args.out / 'pm_h200.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
