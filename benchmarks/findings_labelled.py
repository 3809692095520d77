r"""Issue 31's check against known answers: labelled regions, each region's top finding.

Regions whose diagnosis is known by construction, profiled through the real
``%%nsight`` magic in one in-process IPython shell on each backend (events, cupti,
pm with the DRAM pair), as a user runs them:

================  =========================================  ===========================
region            what it is                                 its top finding must be
================  =========================================  ===========================
copy              ``src.clone()``, 256 MiB of fp32            DRAM-bound (near the roof)
matmul_bf16       8192^3 bf16 matmul                          compute-bound, tensor path
add_16k           a 16 K-element add                          launch-bound
unfused_abc       ``a + b * c`` on 64 M floats (kept)         fusion headroom
fused_addcmul     ``torch.addcmul(a, b, c)``, the same        DRAM-bound
l2_reuse          16 in-place adds on a 24 MiB buffer         L2-resident (pm); L2 or
                                                              fusion (events, cupti)
decode_step       24 tiny layers (72 small kernels)           host-bound (cupti, pm);
                                                              launch-bound (events)
decode_graphed    the same, captured in a CUDA graph          not launch- or host-bound
================  =========================================  ===========================

(:data:`LABELS`, for each region's diagnosis: its top finding past any
measurement-quality one, which is said first and reported beside;
``tests/analysis/findings/test_labelled.py`` holds the stored sessions to them.) Then the estimated gains are checked against what the fix does:
``unfused_abc`` against ``fused_addcmul`` (the fusion finding's bound) and
``decode_step`` against ``decode_graphed`` (the host-bound finding's bound), each
as measured by every backend.

It writes into ``--out``: ``findings_labelled.json`` (per backend and region the
median, the top finding, whether it is the label's; the gain checks; every
session's findings and ``explain`` text) and ``findings_<gpu>.sqlite`` (the run
store, counter timelines dropped: the CI fixture, well under 2 MB).

On the device, from the repository root, after the carried wheels are installed
(``benchmarks/device_realwork.sh`` does that part)::

    PYTHONPATH=$PWD:/tmp/site python3 benchmarks/findings_labelled.py --out $OUT

A smoke run of the script itself on a CPU (small shapes, the cpu backend)::

    python benchmarks/findings_labelled.py --out /tmp/fl --device cpu \
        --backends cpu --small
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sqlite3
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DRAM = "dram__bytes_read.sum,dram__bytes_write.sum"
BACKENDS = {
    "events": "--backend events",
    "cupti": "--backend cupti",
    "pm": f"--metrics {DRAM}",
    "cpu": "--backend cpu",
}
LAUNCH = frozenset({"launch_bound", "host_bound"})


@dataclass(frozen=True)
class Label:
    """What a labelled region's top finding must be (by kind), per backend.

    Attributes:
        kinds: The kinds its top finding may have on any backend.
        per_backend: Narrower or other kinds on a given backend.
        forbid: Kinds its top finding must not have (no finding at all passes).
    """

    kinds: frozenset[str] = frozenset()
    per_backend: dict[str, frozenset[str]] = field(default_factory=dict)
    forbid: frozenset[str] = frozenset()

    def allows(self, backend: str, kind: str | None) -> bool:
        """Whether a top finding of ``kind`` (None: none) on ``backend`` is right."""
        if self.forbid:
            return kind not in self.forbid
        wanted = self.per_backend.get(backend, self.kinds)
        return kind in wanted


LABELS: dict[str, Label] = {
    "copy": Label(frozenset({"memory_bound"})),
    "matmul_bf16": Label(frozenset({"compute_bound"})),
    "add_16k": Label(LAUNCH),
    "unfused_abc": Label(frozenset({"fusion_headroom"})),
    "fused_addcmul": Label(frozenset({"memory_bound"})),
    "l2_reuse": Label(
        frozenset({"l2_resident", "fusion_headroom"}),
        {"pm": frozenset({"l2_resident"})},
    ),
    "decode_step": Label(
        LAUNCH,
        {"cupti": frozenset({"host_bound"}), "pm": frozenset({"host_bound"})},
    ),
    "decode_graphed": Label(forbid=LAUNCH),
}
"""Each labelled region's known diagnosis (the kind of its top finding)."""
CPU_LABELS = frozenset({"host_timer"})
"""On the cpu backend (the smoke run) no GPU finding is made: its session says so."""

CELL_LINES = {
    "copy": "LAB.dst = LAB.src.clone()",
    "matmul_bf16": "LAB.mm = LAB.a16 @ LAB.b16",
    "add_16k": "LAB.s = LAB.x16k + LAB.y16k",
    "unfused_abc": "LAB.u = LAB.a + LAB.b * LAB.c",
    "fused_addcmul": "LAB.f = torch.addcmul(LAB.a, LAB.b, LAB.c)",
    "l2_reuse": "for _ in range(LAB.reuse):\n        LAB.r.add_(1.0)",
    "decode_step": "LAB.decode()",
    "decode_graphed": "LAB.replay()",
}
"""Each region's body; its outputs are kept on ``LAB`` (alive past the region)."""


def cell(regions: list[str]) -> str:
    """The profiled cell: one annotated region per labelled region."""
    body = "\n".join(
        f"with nsight.annotate({name!r}):\n    {CELL_LINES[name]}" for name in regions
    )
    return f"import nsight, torch\n{body}"


class Lab:
    """The tensors, the tiny decoder and its CUDA graph every region uses."""

    def __init__(self, device: str, *, small: bool) -> None:
        """Allocate on ``device``; capture the decoder's graph on a GPU."""
        import torch

        torch.manual_seed(0)
        self.torch = torch
        n = (1 << 20) if small else (1 << 26)  # 4 MiB / 256 MiB of fp32
        m = 512 if small else 8192
        self.src = torch.randn(n, device=device)
        self.dst = torch.empty_like(self.src)
        dtype = torch.bfloat16 if device != "cpu" else torch.float32
        self.a16 = torch.randn(m, m, device=device, dtype=dtype)
        self.b16 = torch.randn(m, m, device=device, dtype=dtype)
        self.x16k = torch.randn(1 << 14, device=device)
        self.y16k = torch.randn(1 << 14, device=device)
        self.a, self.b, self.c = (torch.randn(n, device=device) for _ in range(3))
        self.r = torch.zeros((1 << 18) if small else 6 << 20, device=device)  # 24 MiB
        self.reuse = 16
        width = 256
        self.layers = [
            (
                torch.randn(width, width, device=device) / width**0.5,
                torch.randn(width, device=device),
            )
            for _ in range(24)
        ]
        self.h0 = torch.randn(1, width, device=device)
        self.h = self.h0
        self.graph: Any = None
        if device != "cpu":
            self._capture()

    def _step(self, h: Any) -> Any:
        f = self.torch.nn.functional
        for w, b in self.layers:
            h = f.gelu(f.linear(f.layer_norm(h, (h.shape[-1],)), w, b))
        return h

    def decode(self) -> None:
        """24 tiny layers, eagerly: 72 small kernels, each launched from Python."""
        with self.torch.no_grad():
            self.h = self._step(self.h0)

    def _capture(self) -> None:
        torch = self.torch
        self.static_in = self.h0.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):
                self._step(self.static_in)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.no_grad():
            self.static_out = self._step(self.static_in)
        torch.cuda.synchronize()

    def replay(self) -> None:
        """The same 24 layers as one CUDA graph replay."""
        if self.graph is None:
            self.decode()
        else:
            self.graph.replay()


class Bench:
    """The results, written after every part (a part's failure never stops the rest)."""

    def __init__(self, out: Path) -> None:
        """Results under ``out``."""
        self.out = out
        self.results: dict[str, Any] = {"parts": {}, "sessions": {}}
        self.t0 = time.perf_counter()

    def log(self, *parts: object) -> None:
        """A line to stdout and findings_labelled.log."""
        line = f"[labelled +{time.perf_counter() - self.t0:6.1f}s] " + " ".join(
            str(p) for p in parts
        )
        print(line, flush=True)
        with (self.out / "findings_labelled.log").open("a") as f:
            f.write(line + "\n")

    def save(self) -> None:
        """findings_labelled.json."""
        (self.out / "findings_labelled.json").write_text(
            json.dumps(self.results, indent=1, default=str)
        )

    def part(self, name: str, fn: Any, *args: Any) -> Any:
        """Run one part; its failure is recorded and the next part runs."""
        t = time.perf_counter()
        self.log(f"{name}: start")
        try:
            got = fn(*args)
            self.results["parts"][name] = {"wall_s": round(time.perf_counter() - t, 2)}
            return got
        except Exception as exc:
            self.results["parts"][name] = {
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
            }
            self.log(f"{name}: FAILED {type(exc).__name__}: {exc}")
            return None
        finally:
            self.save()


def shell() -> Any:
    """An in-process IPython shell with nsight_lab loaded."""
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    return ip


def judge(store: Any, session_id: int, backend: str) -> dict[str, Any]:
    """A session's findings, each labelled region's top one and its verdict."""
    from nsight_lab.analysis.findings import findings_json, region_top
    from nsight_lab.viewmodel.findings import stored_findings
    from nsight_lab.views.explain import explain_text

    session, found = stored_findings(store, session_id)
    records = store.runs(session_id)
    regions: dict[str, Any] = {}
    for name in dict.fromkeys(r.annotation for r in records):
        durations = [r.duration_ns for r in records if r.annotation == name]
        first = region_top(found, name)  # a quality finding, if any, comes first
        top = region_top(found, name, quality=False)  # the diagnosis: labelled
        label = LABELS.get(name)
        kind = top.kind if top else None
        regions[name] = {
            "median_us": statistics.median(durations) / 1e3 if durations else None,
            "first_kind": first.kind if first else None,
            "top_kind": kind,
            "top": top.to_json() if top else None,
            "ok": (
                label.allows(backend, kind)
                if label is not None and backend != "cpu"
                else None
            ),
        }
    cpu_ok = None
    if backend == "cpu":
        cpu_ok = any(f.kind in CPU_LABELS for f in found) and not any(
            f.family in {"launch", "traffic", "cache"} for f in found
        )
    return {
        "session": session_id,
        "backend_used": session.backend,
        "status": session.status,
        "notes": list(session.notes),
        "regions": regions,
        "cpu_honest": cpu_ok,
        "findings": findings_json(found),
        "explain": explain_text(store, session_id),
    }


def run_cell(ip: Any, backend: str, args: argparse.Namespace, bench: Bench) -> None:
    """One ``%%nsight`` cell of every labelled region on ``backend``."""
    from nsight_lab.store.run_store import RunStore

    regions = [r for r in LABELS if args.device != "cpu" or r != "decode_graphed"]
    options = (
        f"{BACKENDS[backend]} --runs {args.runs} --warmup 2 --quiet "
        f"--name labelled-{backend}"
    )
    t = time.perf_counter()
    result = ip.run_cell(f"%%nsight {options}\n{cell(regions)}")
    wall = round(time.perf_counter() - t, 2)
    failure = result.error_before_exec or result.error_in_exec
    with RunStore() as store:
        found = store.list_sessions(limit=1)
        session = found[0] if found else None
        if session is None or session.name != f"labelled-{backend}":
            # The cell stopped before a session began: judge nothing (not the last).
            entry: dict[str, Any] = {"status": "failed", "regions": {}, "notes": []}
        else:
            entry = judge(store, session.id, session.backend)  # auto may pick another
    entry.update(options=options, wall_s=wall)
    if failure is not None:
        entry["error"] = f"{type(failure).__name__}: {failure}"
        chain, cause = [], failure.__cause__ or failure.__context__
        while cause is not None and len(chain) < 4:  # what the one line stands on
            chain.append(f"{type(cause).__name__}: {cause}")
            cause = cause.__cause__ or cause.__context__
        entry["error_chain"] = chain
    bench.results["sessions"][backend] = entry
    tops = " ".join(f"{n}={v['top_kind']}" for n, v in entry["regions"].items())
    bench.log(f"{backend}: {entry['status']} {wall} s {tops}")


LOOP_ITERS = 50
"""Back-to-back calls a loop timing takes (the user's view of a fix: wall per call)."""


def loop_times(lab: Lab) -> dict[str, float]:
    """Per call (µs), timed as a loop runs them: CUDA events around ``LOOP_ITERS``
    back-to-back calls, after a synchronize, no flush: what a user's loop sees.

    The magic's own durations are not the measure of a launch fix: cupti and pm
    sum kernel times (a graph does not change them) and events start each region
    behind a spin kernel that hides the host's launch gaps.
    """
    torch = lab.torch
    bodies = {
        "unfused_abc": lambda: lab.a + lab.b * lab.c,
        "fused_addcmul": lambda: torch.addcmul(lab.a, lab.b, lab.c),
        "decode_step": lab.decode,
        "decode_graphed": lab.replay,
    }
    out = {}
    for name, body in bodies.items():
        for _ in range(3):
            body()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(True)
        start.record()
        for _ in range(LOOP_ITERS):
            body()
        end.record()
        torch.cuda.synchronize()
        out[name] = start.elapsed_time(end) * 1e3 / LOOP_ITERS
    return out


def gain_checks(results: dict[str, Any], factor: float) -> list[dict[str, Any]]:
    """Each fix's estimated gain (per backend's finding) against its measured gain.

    Measured as a loop runs (:func:`loop_times`), beside each backend's own median
    ratio. A check holds when the measured gain is at most the estimate (a bound)
    times 1.1, and at least the estimate over ``factor``.
    """
    loops = results.get("loops") or {}
    pairs = (
        ("fusion", "unfused_abc", "fused_addcmul"),
        ("cuda_graph", "decode_step", "decode_graphed"),
    )
    rows = []
    for backend, entry in results["sessions"].items():
        regions = entry.get("regions") or {}
        for name, slow, fixed in pairs:
            a, b = regions.get(slow) or {}, regions.get(fixed) or {}
            top = a.get("top") or {}
            estimate = top.get("gain")
            measured = (
                loops[slow] / loops[fixed]
                if loops.get(slow) and loops.get(fixed)
                else None
            )
            within = None
            if estimate and measured:
                within = estimate / factor <= measured <= estimate * 1.1
            rows.append(
                {
                    "backend": backend,
                    "fix": name,
                    "region": slow,
                    "fixed_region": fixed,
                    "estimate": estimate,
                    "estimate_kind": top.get("kind"),
                    "estimate_basis": top.get("gain_basis"),
                    "measured": measured,
                    "measured_by": f"a loop of {LOOP_ITERS} calls, CUDA events",
                    "backend_median_ratio": (
                        a["median_us"] / b["median_us"]
                        if a.get("median_us") and b.get("median_us")
                        else None
                    ),
                    "within": within,
                }
            )
    return rows


def write_fixture(out: Path, gpu: str) -> Path:
    """The run store as a CI fixture: counter timelines dropped, vacuumed."""
    from nsight_lab.paths import db_path

    slug = (re.findall(r"\b([A-Z]\d{2,4})\b", gpu) or ["cpu"])[0].lower()
    target = out / f"findings_{slug}.sqlite"
    target.unlink(missing_ok=True)
    src = sqlite3.connect(db_path())
    try:
        src.execute("VACUUM INTO ?", (str(target),))
    finally:
        src.close()
    dst = sqlite3.connect(target)
    try:
        dst.execute("UPDATE runs SET series = NULL")
        dst.commit()
        dst.execute("VACUUM")
    finally:
        dst.close()
    return target


def main(argv: list[str] | None = None) -> int:
    """Every backend's cell, the verdicts, the gain checks, the fixture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--backends", default="events,cupti,pm")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--small", action="store_true", help="small shapes")
    parser.add_argument("--no-peaks", action="store_true", help="skip %%nsight peaks")
    parser.add_argument(
        "--factor", type=float, default=1.5, help="gain checks: measured >= est / F"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    home = args.out / "home"
    home.mkdir(exist_ok=True)
    os.environ["NSIGHT_LAB_HOME"] = str(home)  # before nsight_lab reads it
    bench = Bench(args.out)
    import torch

    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    bench.results.update(
        host=platform.node(),
        gpu=gpu,
        torch=torch.__version__,
        started=time.strftime("%Y-%m-%d %H:%M:%S"),
        runs=args.runs,
        small=args.small,
        labels={
            k: sorted(v.kinds) or f"not {sorted(v.forbid)}" for k, v in LABELS.items()
        },
    )
    lab = bench.part("setup", lambda: Lab(args.device, small=args.small))
    ip = shell()
    ip.push({"LAB": lab})
    if args.device == "cuda" and not args.no_peaks:
        bench.part("peaks", ip.run_line_magic, "nsight", "peaks")
    for backend in args.backends.split(","):
        bench.part(backend, run_cell, ip, backend, args, bench)
    if args.device == "cuda" and lab is not None:
        bench.results["loops"] = bench.part("loops", loop_times, lab)
    checks = gain_checks(bench.results, args.factor)
    bench.results["gain_checks"] = checks
    judged = [
        v["ok"]
        for s in bench.results["sessions"].values()
        for v in s["regions"].values()
        if v["ok"] is not None
    ]
    bench.results["all_labelled_ok"] = bool(judged) and all(judged)
    fixture = bench.part("fixture", write_fixture, args.out, gpu)
    if fixture is not None:
        bench.results["fixture"] = {
            "path": str(fixture),
            "bytes": fixture.stat().st_size,
        }
    bench.results["wall_s"] = round(time.perf_counter() - bench.t0, 1)
    bench.save()
    bench.log(
        f"done: labelled ok {bench.results['all_labelled_ok']} "
        f"({sum(map(bool, judged))}/{len(judged)}); gain checks "
        + "; ".join(
            f"{c['backend']} {c['fix']} est {c['estimate']} measured "
            f"{c['measured'] and round(c['measured'], 2)} within {c['within']}"
            for c in checks
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
