"""The child of ``beside_nsight_python.py``: one process, every variant interleaved.

Imported by the script; runs with the side's package first on ``sys.path``. Each
variant is a callable returning the session's per-config durations (nsight-lab: a
``%%nsight`` cell in an in-process IPython shell; nsight-python: its CUPTI tool).
"""

# ruff: noqa: PLC0415  (each side's package, torch and nsight-python load in the child)
from __future__ import annotations

import contextlib
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
Variant = Callable[[], dict[str, Any]]
LAB = {  # variant -> (backend, options beyond --configs/--runs)
    "cupti": ("cupti", "--quiet"),
    "cupti_same_work": ("cupti", "--warmup 0 --cache-control none --quiet"),
    "cupti_view": ("cupti", ""),
    "events": ("events", "--quiet"),
    "events_same_work": ("events", "--warmup 0 --cache-control none --quiet"),
}
SMOKE = {
    "cpu": ("cpu", "--quiet"),
    "cpu_view": ("cpu", ""),
    "fake_cupti": ("cupti", "--quiet"),
    "fake_cupti_same_work": ("cupti", "--warmup 0 --cache-control none --quiet"),
    "fake_cupti_view": ("cupti", ""),
    "fake_events": ("events", "--quiet"),
}
PER_RUN = {  # variant -> what its per-run figure is called
    "nsight_python": "nsight_python",
    "cupti_same_work": "cupti",
    "cupti_view": "cupti_view",
    "events_same_work": "events",
    "cpu": "cpu",
    "cpu_view": "cpu_view",
    "fake_cupti_same_work": "fake_cupti",
    "fake_events": "fake_events",
}
MARGINAL = ("256", 10, 110)
"""The per-run part: one small config, 10 and 110 runs."""


class Cells:
    """An IPython shell with nsight-lab loaded, running ``%%nsight`` cells."""

    def __init__(self, smoke: bool) -> None:  # noqa: FBT001
        from IPython import get_ipython
        from IPython.testing.globalipapp import start_ipython

        self.ip = start_ipython() or get_ipython()
        self.ip.run_line_magic("load_ext", "nsight_lab")
        self.ip.run_cell("import nsight_lab as nl")
        self.smoke = smoke
        self.body = "x = sum(range(n // 16))"  # the cpu backend's work

    def cell(
        self, backend: str, options: str, configs: str, runs: int
    ) -> dict[str, Any]:
        """One cell: its wall and each config's durations (µs)."""
        fake = self.smoke and backend != "cpu"
        body = 'gpu.launch("sgemm", n * 50)' if fake else self.body
        source = (f"%%nsight --backend {backend} --configs {configs} --runs {runs} "
                  f"{options}\nwith nl.annotate('matmul'):\n    {body}\n")  # fmt: skip
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            started, cpu = time.perf_counter(), time.process_time()
            result = self.ip.run_cell(source)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        failure = result.error_before_exec or result.error_in_exec
        if failure is not None:
            said = f"{type(failure).__name__}: {failure}: {sink.getvalue()[-800:]}"
            raise RuntimeError(said)
        return {"wall": wall, "cpu": cpu, "per_config": self._durations()}

    def _durations(self) -> dict[str, dict[str, float]]:
        from nsight_lab.store.run_store import RunStore

        magics = self.ip.magics_manager.registry["NsightMagics"]
        with RunStore() as store:
            records = store.runs(magics.last_session_id)
        by: dict[str, list[float]] = {}
        for r in records:
            by.setdefault(str(r.config.get("n")), []).append(r.duration_ns / 1e3)
        return {k: stats(v) for k, v in by.items()}


def stats(values: list[float]) -> dict[str, float]:
    """Mean, min and median of ``values`` (µs), and how many."""
    return {
        "mean_us": round(statistics.fmean(values), 3),
        "min_us": round(min(values), 3),
        "median_us": round(statistics.median(values), 3),
        "runs": len(values),
    }


class NsightPython:
    """NVIDIA nsight-python's CUPTI tool on the same sweep, in this process."""

    def __init__(self, mats: dict[int, Any]) -> None:
        import nsight  # NSPY_NCU_INIT_AT_IMPORT=0: set by the parent

        if not hasattr(nsight, "Tool"):
            said = f"nsight-python >= 1.1 is not installed ({nsight.__file__})"
            raise RuntimeError(said)
        self.nsight = nsight
        self.version = getattr(nsight, "__version__", "?")
        self.mats = mats
        nsight.activate(nsight.Tool.CUPTI)

    def sweep(self, configs: str, runs: int) -> dict[str, Any]:
        """The sweep through ``@nsight.analyze.kernel``: wall and per-config values."""
        nsight, mats = self.nsight, self.mats

        @nsight.analyze.kernel(
            configs=[(int(n),) for n in configs.split(",")], runs=runs,
            verbosity=nsight.VerbosityLevel.SILENT,
        )  # fmt: skip
        def matmul(n: int) -> None:
            with nsight.annotate("matmul"):
                mats[n] @ mats[n]

        started, cpu = time.perf_counter(), time.process_time()
        results = matmul()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        frame = results.to_dataframe()
        per_config = {
            str(int(row["n"]) if "n" in frame.columns else i): {
                "mean_us": round(float(row["AvgValue"]) / 1e3, 3),
                "min_us": round(float(row.get("MinValue", float("nan"))) / 1e3, 3),
                "runs": int(row.get("NumRuns", -1)),
            }
            for i, (_, row) in enumerate(frame.iterrows())
        }
        return {"wall": wall, "cpu": cpu, "per_config": per_config}

    def close(self) -> None:
        """Deactivate the tool."""
        self.nsight.deactivate()


def variants(cells: Cells, args: Any, result: dict[str, Any]) -> dict[str, Any]:  # noqa: ANN401
    """Each variant: its backend, and a callable ``(configs, runs) -> its cell``."""
    table = SMOKE if cells.smoke else LAB
    out: dict[str, Any] = {}
    for name, (backend, options) in table.items():
        out[name] = (backend, lambda c, r, b=backend, o=options: cells.cell(b, o, c, r))
    if cells.smoke:
        return out
    import torch

    result["device"] = torch.cuda.get_device_name(0)
    result["torch"] = torch.__version__
    sizes = sorted({int(n) for n in (*args.configs.split(","), MARGINAL[0])})
    mats = {n: torch.randn(n, n, device="cuda") for n in sizes}
    cells.ip.user_ns["mats"] = mats
    cells.body = "mats[n] @ mats[n]"
    try:
        nspy = NsightPython(mats)
    except Exception as exc:  # noqa: BLE001  (nsight-lab's parts run without it)
        result["errors"].append(f"nsight-python: {type(exc).__name__}: {exc}")
        return out
    result["nsight_python"] = nspy.version
    result["_close"] = nspy.close
    out["nsight_python"] = ("nsight_python", nspy.sweep)
    return out


def rounds(table: dict[str, Any], args: Any, result: dict[str, Any]) -> None:  # noqa: ANN401
    """A warm-up pass, then ``args.reps`` rounds, the order rotated each round."""
    names = list(table)
    found = result["variants"]
    for name in names:  # warm: the first cell of a kind of each variant
        entry = found.setdefault(name, {"walls": [], "errors": []})
        try:
            first = table[name][1](args.configs, args.runs)
            entry["warm_up_wall"] = round(first["wall"], 4)
            if name == "cupti" and "first_cupti_cell_s" not in result:
                result["first_cupti_cell_s"] = round(first["wall"], 4)
        except Exception:  # noqa: BLE001
            entry["errors"].append(traceback.format_exc()[-1500:])
    for rep in range(args.reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            entry = found[name]
            try:
                got = table[name][1](args.configs, args.runs)
            except Exception:  # noqa: BLE001
                entry["errors"].append(traceback.format_exc()[-1500:])
                continue
            entry["walls"].append(round(got["wall"], 5))
            entry.setdefault("cpus", []).append(round(got["cpu"], 5))
            entry["per_config"] = got["per_config"]


def marginal(table: dict[str, Any], args: Any, result: dict[str, Any]) -> None:  # noqa: ANN401
    """The wall per run: one small config at 10 and 110 runs, min of ``args.reps``."""
    config, few, many = MARGINAL
    if args.smoke:  # a CPU shared with other work: more runs for a steadier figure
        many = 1010
    kinds = {PER_RUN[name]: table[name][1] for name in PER_RUN if name in table}
    for backend, run in kinds.items():
        walls: dict[int, list[float]] = {few: [], many: []}
        cpus: dict[int, list[float]] = {few: [], many: []}
        try:
            for _ in range(args.reps):
                for n in (few, many):
                    got = run(config, n)
                    walls[n].append(got["wall"])
                    cpus[n].append(got["cpu"])
        except Exception:  # noqa: BLE001
            result["errors"].append(traceback.format_exc()[-1500:])
            continue

        def per_run(values: dict[int, list[float]]) -> float:
            return round((min(values[many]) - min(values[few])) / (many - few) * 1e6, 2)

        each = per_run(walls)
        result["marginal"][backend] = {
            "walls_few": walls[few], "walls_many": walls[many],
            "per_run_us": each, "cpu_per_run_us": per_run(cpus),
            "fixed_s": round(min(walls[few]) - few * each / 1e6, 5),
        }  # fmt: skip


def profiled(table: dict[str, Any], args: Any, result: dict[str, Any]) -> None:  # noqa: ANN401
    """One warm cell per nsight-lab backend under cProfile: where its time goes."""
    for name in ("cupti", "events", "cpu", "fake_cupti", "fake_events"):
        if name not in table:
            continue
        profile = cProfile.Profile()
        profile.enable()
        try:
            table[name][1](args.configs, args.runs)
        finally:
            profile.disable()
        text = io.StringIO()
        stats_ = pstats.Stats(profile, stream=text)
        stats_.sort_stats("cumulative").print_stats(r"nsight_lab|sqlite|threading", 30)
        stats_.sort_stats("tottime").print_stats(15)
        result.setdefault("profiles", {})[name] = text.getvalue()[-9000:]


def child_main(args: Any) -> int:  # noqa: ANN401
    """Run every part in this process; write what came out to ``args.child_out``."""
    import nsight_lab

    result: dict[str, Any] = {
        "side": args.child, "package": str(Path(nsight_lab.__file__).parent),
        "python": sys.version.split()[0], "variants": {}, "marginal": {}, "errors": [],
    }  # fmt: skip
    try:
        cells = Cells(args.smoke)
        if args.smoke:
            result["device"] = "cpu (smoke: cpu backend and the fake GPU)"
            cells.cell("cpu", "--quiet", "1", 2)  # waits for %load_ext's warm-up
            sys.path.insert(0, str(ROOT))
            from nsight_lab.backends import inprocess
            from tests.backends.fake_gpu import install

            cells.ip.user_ns["gpu"] = install(depth=4, nvml_s=20e-6)[0]
            inprocess.work_model = lambda _plan: None  # PyTorch's op counter
        table = variants(cells, args, result)
        rounds(table, args, result)
        marginal(table, args, result)
        profiled(table, args, result)
    except Exception:  # noqa: BLE001
        result["errors"].append(traceback.format_exc()[-3000:])
    finally:
        close = result.pop("_close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                close()
        walls = {
            k: min(v["walls"]) for k, v in result["variants"].items() if v.get("walls")
        }
        result["summary_line"] = " ".join(f"{k}={v:.4f}" for k, v in walls.items())
        Path(args.child_out).write_text(json.dumps(result, default=str))
    return 0
