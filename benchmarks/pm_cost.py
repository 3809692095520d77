# ruff: noqa: PLC0415  (nsight_lab, IPython: imported in the child, on its path)
r"""What PM sampling costs a cell, before and after issue 32, side by side (one GPU).

The 12-region cell of ``pm_h200.py`` runs through the real ``%%nsight`` magic in an
in-process IPython shell, in one child process per variant, one after the other:

* ``before``: the package at ``0ab1fce``, carried as ``.before/nsight_lab`` (made with
  ``git archive 0ab1fce nsight_lab | tar -x -C .before``) and imported through
  ``PYTHONPATH=.before:...``;
* ``after``: the working tree (the pm backend decodes while sampling goes on);
* ``after_stopped``: the working tree's default, without ``NSIGHT_LAB_PM_DECODE=live`` (its decode
  while the GPU waits, as before, with the kept parts), to tell the two gains apart.

In each: an events cell first (the process's first-cell costs), then per pm set its
first and its second 10-run cell; then, set by set (``events``, ``pm_dram`` = the DRAM
pair through ``auto``, ``pm_default`` = ``--backend pm --sample-interval 100``), an
unmeasured cell (so every measured cell finds the set's kept parts) and cells of 10
and 50 runs, twice. From those (``pm_h200.wall_summary``, the best of two): the
marginal wall per run ``(wall(50) - wall(10)) / 40`` and pm's over events', the
fixed cost of a cell ``wall(10) - 10 * marginal`` for the first and the second cell,
the DRAM bytes per region (medians over the runs of the last 50-run pm_dram cell)
before against after, the pm samplers' statistics and the CUPTI calls' host time per
cell. Targets (issue 32): pm_dram <= 1.3x events, pm_default <= 2x, the second cell's
fixed cost <= 0.2 s, the bytes per region unchanged.

On the GPU host, from the repository root (``.whl`` installed into ``/tmp/site`` as
``benchmarks/device_realwork.sh`` does, ``LD_LIBRARY_PATH`` to the wheel's libcupti)::

    PYTHONPATH=$PWD:/tmp/site python3 benchmarks/pm_cost.py --out $OUT/pm_cost

Writes ``pm_cost.json``, ``pm_cost.md`` and ``pm_cost.log`` under ``--out``.
``--smoke`` runs the same on the cpu backend with small CPU tensors and 2/4 runs (the
check CI and a laptop can make: children, store, tables; no PM sampling).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

import pm_h200  # benchmarks/: the cell, its shell's helpers, the wall summary

ROOT = Path(__file__).resolve().parent.parent
SETS = {
    "events": "--backend events",
    "pm_dram": f"--metrics {','.join(pm_h200.DRAM)}",
    "pm_default": "--backend pm --sample-interval 100",
}
PM_SETS = ("pm_dram", "pm_default")
VARIANTS = {
    "before": {"before": True, "env": {}},
    "after": {"before": False, "env": {"NSIGHT_LAB_PM_DECODE": "live"}},
    "after_stopped": {"before": False, "env": {}},
}
BARS = {"pm_dram": 1.3, "pm_default": 2.0}
SECOND_CELL_BAR_S = 0.2
BYTES_TOLERANCE = 0.02
"""Bytes per region before and after: within 2 % on regions of 100 µs or more."""
CHILD_BUDGET_S = 75.0
"""A child skips the cells that would start after this (the device call's limit)."""
BUDGET_S = 225.0
"""A variant that would start after this is skipped (the lead's call: < 4 min)."""
CUPTI_TIMED = ("configure", "image", "disable", "start", "stop", "release")
"""CuptiSampling's calls whose host time each cell records (both versions have them)."""


# ------------------------------------------------------------------ the child


def time_cupti(timers: dict[str, float]) -> str:
    """Add each timed CuptiSampling call's host seconds to ``timers``."""
    try:
        from nsight_lab.backends.pm import cupti_api, interval
    except Exception as exc:  # noqa: BLE001  (recorded, the cells still run)
        return f"{type(exc).__name__}: {exc}"
    timed_calls = [
        (cupti_api.CuptiSampling, n) for n in (*CUPTI_TIMED, "_config_image")
    ]
    timed_calls.append((interval.SamplingInterval, "_calibrate"))
    for cls, name in timed_calls:
        method = getattr(cls, name, None)
        if method is None:
            continue

        def timed(self: Any, *args: Any, _m: Any = method, _n: str = name) -> Any:  # noqa: ANN401
            t0 = time.perf_counter()
            try:
                return _m(self, *args)
            finally:
                timers[_n] += time.perf_counter() - t0

        setattr(cls, name, timed)
    return "installed"


def watch_more(watch: pm_h200.SamplerWatch) -> str:
    """Add to what ``watch`` records of a sampler: live or not, pumps, CUPTI calls.

    The calls are its api's set-up calls (enable, set_config, config_image, ...).
    """
    from nsight_lab.backends.pm.sampler import PmSampler

    close = PmSampler.close  # the watch's

    def recorded(sampler: Any) -> None:  # noqa: ANN401
        extra: dict[str, Any] = {"live": getattr(sampler, "live", None)}
        pumped = getattr(sampler, "pumped", None)
        if pumped is not None:
            extra["pumped"] = dict(vars(pumped))
        calls = getattr(getattr(sampler, "api", None), "calls", None)
        if calls is not None:
            extra["calls"] = dict(calls)
        close(sampler)
        if watch.closed:
            watch.closed[-1].update(extra)

    PmSampler.close = recorded  # type: ignore[method-assign]
    return "installed"


def start(setup: str) -> Any:  # noqa: ANN401
    """An IPython shell with nsight_lab loaded as ``nsight`` and the cell's tensors.

    ``pm_h200.start_shell`` imports ``nsight``, NVIDIA's nsight-python where the
    wheels installed it; here the cell's ``nsight.annotate`` is nsight-lab's own.
    """
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    result = ip.run_cell("import torch\nimport nsight_lab as nsight\n" + setup)
    failure = result.error_before_exec or result.error_in_exec
    if failure is not None:
        msg = f"the cell's set-up failed: {type(failure).__name__}: {failure}"
        raise RuntimeError(msg)
    ip.run_cell("torch.cuda.synchronize() if torch.cuda.is_available() else None")
    return ip


def child(variant: str, out: Path, *, smoke: bool) -> int:
    """Run every cell of one variant in this process; write ``out`` (JSON)."""
    if smoke:
        pm_h200.RUN_COUNTS = (2, 4, 8)
    low, high, _ = pm_h200.RUN_COUNTS
    pm_h200.SETS.clear()
    pm_h200.SETS.update(SETS)  # its cell_options reads them
    os.environ["NSIGHT_LAB_HOME"] = tempfile.mkdtemp(prefix=f"pm-cost-{variant}-")
    bench = pm_h200.Bench(Path(tempfile.mkdtemp()), CHILD_BUDGET_S)
    results = bench.results
    results.update(variant=variant, smoke=smoke, run_counts=[low, high])
    timers: dict[str, float] = defaultdict(float)

    def save() -> None:
        results["elapsed_s"] = round(bench.elapsed(), 2)
        out.write_text(json.dumps(results, indent=1, default=str) + "\n")

    try:
        import nsight_lab

        results["nsight_lab"] = str(Path(nsight_lab.__file__).parent)
        bench.part("stack", pm_h200.stack)
        results["cupti_timing"] = time_cupti(timers)
        watch = pm_h200.SamplerWatch()
        results["sampler_watch"] = watch.install() or watch_more(watch)
        ip = start(pm_h200.SMOKE_TENSORS if smoke else pm_h200.TENSORS)
        cells = pm_h200.Cells(bench, ip, watch, smoke=smoke)

        def run(set_name: str, runs: int, **tags: Any) -> None:  # noqa: ANN401
            seen = dict(timers)
            entry = cells.run(set_name, runs, **tags)
            entry["cupti_s"] = {
                k: round(v - seen.get(k, 0.0), 4) for k, v in timers.items()
            }
            save()

        run("events", low, first=True, tag="first events cell")
        for set_name in PM_SETS:
            run(set_name, low, first=True, tag="first")
            run(set_name, low, first=True, tag="second")
        for set_name in SETS:
            run(set_name, low, first=True, tag="unmeasured")  # its kept parts
            for repeat in range(2):
                for runs in (low, high):
                    run(set_name, runs, repeat=repeat)
        results["libcupti_loaded"] = pm_h200.loaded_libcupti()
    except Exception as exc:  # noqa: BLE001  (what ran is kept; the parent says it)
        results["error"] = f"{type(exc).__name__}: {exc}"
        results["traceback"] = traceback.format_exc()
    save()
    return 0


# ------------------------------------------------------------------ the parent


def variant_env(variant: str, before_dir: Path) -> dict[str, str]:
    """The child's environment: ``.before`` first on the path for ``before``."""
    env = dict(os.environ)
    env.pop("NSIGHT_LAB_PM_DECODE", None)  # each variant sets its own
    env.update(VARIANTS[variant]["env"])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    first = before_dir if VARIANTS[variant]["before"] else ROOT
    env["PYTHONPATH"] = os.pathsep.join([str(first), *paths])
    env.setdefault("NSPY_NCU_INIT_AT_IMPORT", "0")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def run_child(
    variant: str,
    args: argparse.Namespace,
    log: Any,  # noqa: ANN401
    left: float,
) -> dict[str, Any]:
    """One variant in a child process, within ``left`` seconds; its results."""
    before_dir = (ROOT / args.before).resolve()
    if VARIANTS[variant]["before"] and not (before_dir / "nsight_lab").is_dir():
        return {"variant": variant, "error": f"no {before_dir}/nsight_lab"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{variant}.json"
        command = [sys.executable, __file__, "--child", variant, "--json", str(path)]
        if args.smoke:
            command.append("--smoke")
        t0 = time.monotonic()
        try:
            done = subprocess.run(  # noqa: S603  (our own command)
                command,
                env=variant_env(variant, before_dir),
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=max(30.0, min(CHILD_BUDGET_S + 60, left)),
                check=False,
            )
            log.write(f"== {variant}: rc {done.returncode}\n{done.stdout}{done.stderr}")
        except subprocess.TimeoutExpired as exc:
            log.write(f"== {variant}: timed out\n{exc.stdout or ''}{exc.stderr or ''}")
        log.flush()
        found = json.loads(path.read_text()) if path.exists() else {}
    found.setdefault("variant", variant)
    found["child_s"] = round(time.monotonic() - t0, 1)
    if not found.get("cells"):
        found.setdefault("error", "the child wrote no cells (see pm_cost.log)")
    return found


def fixed_costs(cells: list[dict[str, Any]], marginal: dict[str, float]) -> dict:
    """Each pm set's first and second cell: wall, and wall - runs * marginal."""
    out: dict[str, dict[str, Any]] = {}
    for cell in cells:
        tag, name = cell.get("tag"), cell["set"]
        if tag not in {"first", "second"} or "wall_s" not in cell:
            continue
        per_run = marginal.get(name)
        fixed = None if per_run is None else cell["wall_s"] - cell["runs"] * per_run
        out.setdefault(name, {})[tag] = {"wall_s": cell["wall_s"], "fixed_s": fixed}
    return out


def last_regions(cells: list[dict[str, Any]], set_name: str) -> dict[str, Any]:
    """The per-region medians of the last completed, largest cell of ``set_name``."""
    done = [
        c for c in cells if c["set"] == set_name and c.get("ok") and c.get("regions")
    ]
    if not done:
        return {}
    most = max(c["runs"] for c in done)
    return [c for c in done if c["runs"] == most][-1]["regions"]


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Marginals, ratios, fixed costs, samplers and CUPTI time of one variant."""
    cells = result.get("cells", [])
    walls = pm_h200.wall_summary(cells)
    marginal = walls.get("marginal_per_run_s", {})
    keys = ("interval_ns", "live", "drains", "samples", "decode_s", "pumped", "calls")
    samplers = [
        {"set": c["set"], "runs": c["runs"], **{k: s.get(k) for k in keys}}
        for c in cells
        if c["set"] in PM_SETS and c.get("repeat") == 1
        for s in c.get("samplers", [])
    ]
    cupti: dict[str, dict[str, float]] = {}
    for c in cells:
        if c["set"] in PM_SETS and c.get("tag") in {"first", "second"}:
            cupti[f"{c['set']} {c['tag']}"] = c.get("cupti_s", {})
    low = pm_h200.RUN_COUNTS[0]
    events = walls.get("best_wall_s", {}).get("events", {}).get(str(low))
    return {
        "events_fixed_s": (
            None
            if events is None or "events" not in marginal
            else events - low * marginal["events"]
        ),
        "marginal_ms": {k: 1e3 * v for k, v in marginal.items()},
        "over_events": walls.get("over_events_marginal", {}),
        "best_wall_s": walls.get("best_wall_s", {}),
        "fixed": fixed_costs(cells, marginal),
        "regions": last_regions(cells, "pm_dram"),
        "samplers": samplers,
        "cupti_s": cupti,
        "notes": sorted(
            {n for c in cells if c["set"] in PM_SETS for n in c.get("notes", [])}
        ),
        "failed": [
            {k: c.get(k) for k in ("set", "runs", "tag", "error", "status")}
            for c in cells
            if "skipped" not in c and not c.get("ok")
        ],
    }


def bytes_table(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Per region: DRAM bytes read, written, written back, before and after."""
    rows: dict[str, Any] = {}
    worst = 0.0
    for name, got in after.items():
        ref = before.get(name, {})
        row: dict[str, Any] = {"us": got.get("duration_us")}
        for key in ("read", "written", "writeback"):
            b, a = ref.get(key), got.get(key)
            ratio = a / b if a is not None and b else None
            row[key] = {"before": b, "after": a, "ratio": ratio}
            long = (got.get("duration_us") or 0) >= pm_h200.LONG_US
            if ratio is not None and long and key != "writeback":
                worst = max(worst, abs(ratio - 1))
        rows[name] = row
    return {"rows": rows, "worst_long": worst, "within": worst <= BYTES_TOLERANCE}


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


BYTES_HEAD = (
    "| region | µs | read before | read after | x | written before "
    "| written after | x | write-back before | after |"
)


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.2f}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def markdown(report: dict[str, Any]) -> str:
    """The side-by-side table and the bytes table."""
    names = [v for v in VARIANTS if v in report["variants"]]
    sums = {v: report["variants"][v].get("summary", {}) for v in names}
    title = (
        f"**PM sampling's cost, 12-region cell** ({report.get('device')}; "
        "marginal = best of two, (wall(50) - wall(10)) / 40)"
    )
    lines = [title, "", _row(["", *names, "target"]), "|---|" + "---:|" * len(names)]
    lines[-1] += "---|"
    marginal = {v: sums[v].get("marginal_ms", {}) for v in names}
    lines.append(
        _row(["events ms/run", *(_ms(marginal[v].get("events")) for v in names), ""])
    )
    fixed_events = [_s(sums[v].get("events_fixed_s")) for v in names]
    lines.append(_row(["events fixed s, 10-run cell", *fixed_events, ""]))
    for name in PM_SETS:
        cells = [
            f"{_ms(marginal[v].get(name))} "
            f"({_x(sums[v].get('over_events', {}).get(name))})"
            for v in names
        ]
        lines.append(_row([f"{name} ms/run (x events)", *cells, f"<= {BARS[name]}x"]))
    for name in PM_SETS:
        for tag in ("first", "second"):
            cells = [
                _s(sums[v].get("fixed", {}).get(name, {}).get(tag, {}).get("fixed_s"))
                for v in names
            ]
            bar = f"<= {SECOND_CELL_BAR_S} s" if tag == "second" else ""
            lines.append(_row([f"{name} fixed s, {tag} cell", *cells, bar]))
    lines += ["", "**DRAM bytes per region** (MB, pm_dram, medians)", ""]
    for label, table in report.get("bytes", {}).items():
        within = "within" if table["within"] else "NOT within"
        lines += [
            (
                f"{label}: worst ratio off 1 on regions >= {pm_h200.LONG_US:.0f} µs: "
                f"{table['worst_long']:.4f} ({within} {BYTES_TOLERANCE:.0%})"
            ),
            "",
            BYTES_HEAD,
            "|---|" + "---:|" * 9,
        ]
        for region, row in table["rows"].items():
            r, w, b = row["read"], row["written"], row["writeback"]
            lines.append(
                _row(
                    [
                        region,
                        _ms(row["us"]),
                        _mb(r["before"]),
                        _mb(r["after"]),
                        _s(r["ratio"]),
                        _mb(w["before"]),
                        _mb(w["after"]),
                        _s(w["ratio"]),
                        _mb(b["before"]),
                        _mb(b["after"]),
                    ]
                )
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def parent(args: argparse.Namespace) -> int:
    """Run the variants one after the other; write the JSON, the table and the log."""
    args.out.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        pm_h200.RUN_COUNTS = (2, 4, 8)
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "smoke": args.smoke,
        "variants": {},
    }
    with (args.out / "pm_cost.log").open("a", encoding="utf-8") as log:
        started = time.monotonic()
        for variant in args.variants.split(","):
            left = args.budget - (time.monotonic() - started)
            if left < CHILD_BUDGET_S / 2:
                report["variants"][variant] = {
                    "skipped": f"{left:.0f} s of budget left"
                }
                continue
            print(f"pm_cost: {variant} ...", flush=True)
            result = run_child(variant, args, log, left)
            with contextlib.suppress(Exception):
                result["summary"] = summarise(result)
            report["variants"][variant] = result
            if not report.get("device"):
                report["device"] = (
                    result.get("parts", {}).get("stack", {}).get("device")
                )
            (args.out / "pm_cost.json").write_text(
                json.dumps(report, indent=1, default=str)
            )
            print(json.dumps(result.get("summary", {}).get("marginal_ms")), flush=True)
    regions = {
        v: r.get("summary", {}).get("regions", {})
        for v, r in report["variants"].items()
    }
    report["bytes"] = {
        f"{v} vs before": bytes_table(regions["before"], regions[v])
        for v in regions
        if v != "before" and regions.get("before") and regions[v]
    }
    (args.out / "pm_cost.json").write_text(json.dumps(report, indent=1, default=str))
    text = markdown(report)
    (args.out / "pm_cost.md").write_text(text, encoding="utf-8")
    print(text, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The parent (``--out``) or one variant's child (``--child``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--before", default=".before", help="holds nsight_lab at 0ab1fce"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds")
    parser.add_argument("--child", choices=tuple(VARIANTS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.json, smoke=args.smoke)
    if args.out is None:
        parser.error("--out is required")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
