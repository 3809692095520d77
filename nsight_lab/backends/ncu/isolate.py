"""The isolated ncu path: run the cell in a child process under Nsight Compute.

For each config, :func:`run_isolated` writes a payload (the cell, the config, runs,
warm-up and the shipped free variables), runs::

    ncu --nvtx --nvtx-include "regex:nsight_lab@.+" --metrics M1,M2,...
        --cache-control C --clock-control K --replay-mode R --target-processes all
        -f -o REPORT_DIR/config_<i>  python -m nsight_lab.backends.ncu.child PAYLOAD

(``R``: ``--replay-mode``, nsight-python's ``replay_mode``: ``kernel`` replays each
kernel of a region for its counters, ``range`` the region's NVTX range as one
result),

streams ncu's output into the progress display (``==PROF== Profiling "kernel"`` lines
and the child's ``[nsight-lab-child] config C run R done`` lines), reads the report
(:mod:`nsight_lab.backends.ncu.report`), and hands one :class:`RunRecord` per region per
measured run to ``sink``, once per config. The ``.ncu-rep`` of each config is kept in
``REPORT_DIR`` (default ``reports_dir()/session_<id>``) for "open in Nsight Compute".

Its caller is the ``ncu`` collector (:class:`.collector.NcuCollector`), which the magic
picks from the registry like any other backend (``--backend ncu``, ``--isolate``, or
``auto`` when ``--metrics`` asks for counters).

Every failure is a one-line :class:`~nsight_lab.errors.NsightLabError` (no ncu,
counter permission, an unknown metric with close names, the cell failing in the child,
no kernels in the regions); records of configs finished before it were already given to
``sink``. ``--target-rsd``/``--max-time`` do not apply here: each config runs
``--runs`` times. Per-run telemetry is not read (ncu controls clocks itself).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nsight_lab.backends.ncu.child import NVTX_DOMAIN, PAYLOAD_SCHEMA_VERSION
from nsight_lab.backends.ncu.errors import (
    QUERY_METRICS_TIMEOUT_S,
    Counts,
    Outcome,
    no_rows_message,
    query_metrics,
    raise_for_absent_metrics,
    raise_for_failure,
    take_line,
)
from nsight_lab.backends.ncu.report import (
    BACKEND_ID,
    read_report,
    region_records,
    regions_by_run,
)
from nsight_lab.backends.ncu.shipping import free_variables, ship
from nsight_lab.contract.records import TIME_METRIC, RunRecord
from nsight_lab.errors import BackendUnavailableError, MeasurementError
from nsight_lab.gpu.stack import NCU_INSTALL_HINT, find_ncu
from nsight_lab.kernels import KernelFold
from nsight_lab.paths import reports_dir

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from nsight_lab.contract.progress import ProgressHook
    from nsight_lab.contract.records import JsonScalar
    from nsight_lab.plan import Plan


__all__ = [
    "BACKEND_ID",
    "NVTX_INCLUDE",
    "QUERY_METRICS_TIMEOUT_S",
    "query_metrics",
    "run_isolated",
    "ship_cell_variables",
]

logger = logging.getLogger(__name__)

NVTX_INCLUDE = f"regex:{NVTX_DOMAIN}@.+"
"""ncu's NVTX filter: every start/end range of our domain.

In ``--nvtx-include`` a trailing ``/`` names a push/pop range and its absence a
start/end range; the child marks start/end ranges so that kernels launched by other
threads inside a region (autograd's) are profiled too.
"""


def run_isolated(  # noqa: PLR0913  (the run's collaborators, as Runner's)
    plan: Plan,
    cell_source: str,
    user_ns: Mapping[str, object],
    session_id: int,
    sink: Callable[[list[RunRecord]], None],
    *,
    on_progress: ProgressHook | None = None,
    report_dir: Path | str | None = None,
    shipped: bytes | None = None,
    prepare: Callable[[], None] | None = None,
) -> list[RunRecord]:
    """Profile every config of ``plan`` under ncu in a child process.

    Args:
        plan: The plan (metrics, runs, warm-up, cache, clocks, ``--combine``).
        cell_source: The cell as plain Python (``shell.transform_cell(cell)``).
        user_ns: The notebook namespace; the cell's free variables are shipped from it.
        session_id: Store id the records belong to.
        sink: Receives the records of each config as soon as its report is read.
        on_progress: Receives a :class:`~nsight_lab.contract.progress.Progress` after
            every change (kernels, runs, configs), with each config's records.
        report_dir: Where the ``config_<i>.ncu-rep`` reports are kept; default
            ``reports_dir()/session_<session_id>``.
        shipped: The cell's variables as :func:`ship_cell_variables` gave them (the
            collector ships them before it opens a session); default: shipped here.
        prepare: What the child calls first (the cell's ``CellCode.prepare``).

    Returns:
        Every record, in the order handed to ``sink``.

    Raises:
        BackendUnavailableError: No ncu was found, or ncu may not read the GPU's
            counters (ERR_NVGPUCTRPERM); the message says what to do.
        MeasurementError: A metric is unknown to this ncu (with close names), the cell
            failed in the child (its one-line error), ncu failed, or no kernel ran
            inside the regions.
        ShippingError: A free variable of the cell cannot be pickled.
        SyntaxError: ``cell_source`` does not compile.
    """
    ncu = _require_ncu()
    metrics = list(dict.fromkeys((TIME_METRIC, *plan.options.metrics)))
    if shipped is None:
        shipped = ship_cell_variables(plan, cell_source, user_ns)
    out_dir = Path(report_dir or session_report_dir(session_id))
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = Counts(len(plan.configs), plan.options.runs, on_progress)
    records: list[RunRecord] = []
    with tempfile.TemporaryDirectory(prefix="nsight-lab-child-") as tmp:
        run = _ConfigRuns(
            plan, cell_source, ncu, metrics, session_id, Path(tmp), out_dir, prepare
        )
        run.namespace_path.write_bytes(shipped)
        for ci, config in enumerate(plan.configs):
            batch = run.config(ci, config, counts)
            sink(batch)
            records.extend(batch)
    counts.completed()
    return records


def ship_cell_variables(
    plan: Plan, cell_source: str, user_ns: Mapping[str, object]
) -> bytes:
    """The cell's free variables (not the configs' names), pickled for the child.

    Raises:
        ShippingError: One cannot be pickled.
    """
    params = set(plan.options.param_names)
    names = [n for n in free_variables(cell_source, user_ns) if n not in params]
    logger.debug("shipping %d variables to the ncu child: %s", len(names), names)
    return ship(names, user_ns)


def _require_ncu() -> Path:
    """The ncu to run.

    Raises:
        BackendUnavailableError: None was found (the message says what to install).
    """
    ncu = find_ncu()
    if ncu is None:
        msg = (
            f"backend {BACKEND_ID!r} is unavailable: no ncu (Nsight Compute CLI) was "
            f"found; {NCU_INSTALL_HINT}"
        )
        raise BackendUnavailableError(msg)
    return ncu


@dataclass(frozen=True)
class _ConfigRuns:
    """One config at a time under ncu: its payload, its command, its records."""

    plan: Plan
    cell_source: str
    ncu: Path
    metrics: list[str]
    session_id: int
    work: Path
    """The temporary directory of the payloads and region logs."""
    out_dir: Path
    """Where the reports are kept."""
    prepare: Callable[[], None] | None = None
    """The module-level function the child calls first, if any."""

    @property
    def namespace_path(self) -> Path:
        """The shipped free variables, read by every config's child."""
        return self.work / "namespace.pkl"

    def config(
        self,
        ci: int,
        config: dict[str, JsonScalar],
        counts: Counts,
    ) -> list[RunRecord]:
        """Run config ``ci`` under ncu; its records (the progress says where).

        Raises:
            BackendUnavailableError: ncu may not read the counters.
            MeasurementError: ncu or the cell failed, or no kernel ran in a region.
        """
        options = self.plan.options
        counts.start_config(ci)
        log_path = self.work / f"config_{ci}.regions.jsonl"
        payload_path = self.work / f"config_{ci}.payload.json"
        _write_payload(
            payload_path,
            source=self.cell_source,
            config_index=ci,
            config=config,
            runs=options.runs,
            warmup=options.warmup,
            namespace_path=self.namespace_path,
            log_path=log_path,
            replay_mode=options.replay_mode,
            prepare=(
                ""
                if self.prepare is None
                else f"{self.prepare.__module__}:{self.prepare.__qualname__}"
            ),
        )
        base = self.out_dir / f"config_{ci}"
        outcome = _run_ncu(self._command(base, payload_path), counts)
        report = base.with_name(base.name + ".ncu-rep")
        raise_for_failure(outcome, self.ncu, self.metrics, report)
        rows = read_report(report, self.metrics) if report.exists() else []
        raise_for_absent_metrics(rows, ci, self.ncu, self.metrics)
        batch = region_records(
            rows,
            regions_by_run(log_path),
            fold=KernelFold.of(options),
            config_index=ci,
            config=config,
            session_id=self.session_id,
            metrics=self.metrics,
        )
        if not batch:
            raise MeasurementError(no_rows_message(ci, config, outcome))
        counts.config_done(batch, report)
        return batch

    def _command(self, base: Path, payload_path: Path) -> list[str]:
        """The ncu command line of one config: the child under our NVTX filter."""
        options = self.plan.options
        return [
            str(self.ncu),
            "--nvtx",
            "--nvtx-include",
            NVTX_INCLUDE,
            "--metrics",
            ",".join(self.metrics),
            "--cache-control",
            options.cache_control,
            "--clock-control",
            options.clock_control,
            "--replay-mode",
            options.replay_mode,
            "--target-processes",
            "all",
            "-f",
            "-o",
            str(base),
            sys.executable,
            "-m",
            "nsight_lab.backends.ncu.child",
            str(payload_path),
        ]


def session_report_dir(session_id: int) -> Path:
    """Where session ``session_id``'s reports are kept (``config_<i>.ncu-rep``)."""
    return reports_dir() / f"session_{session_id}"


def _write_payload(  # noqa: PLR0913  (one field each)
    path: Path,
    *,
    source: str,
    config_index: int,
    config: dict[str, JsonScalar],
    runs: int,
    warmup: int,
    namespace_path: Path,
    log_path: Path,
    replay_mode: str,
    prepare: str,
) -> None:
    payload = {
        "schema_version": PAYLOAD_SCHEMA_VERSION,
        "source": source,
        "filename": "<nsight-lab cell>",
        "configs": [{"config_index": config_index, "config": config}],
        "runs": runs,
        "warmup": warmup,
        "replay_mode": replay_mode,
        "domain": NVTX_DOMAIN,
        "log_path": str(log_path),
        "namespace_path": str(namespace_path),
        "device": None,
        "sys_path": [p for p in sys.path if p],
        "prepare": prepare,
    }
    path.write_text(json.dumps(payload), encoding="utf-8")


# ------------------------------------------------------------------- running ncu


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[3])
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = (
        package_root + os.pathsep + existing if existing else package_root
    )
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("NSPY_NCU_INIT_AT_IMPORT", "0")
    return env


def _run_ncu(command: list[str], counts: Counts) -> Outcome:
    logger.debug("running: %s", " ".join(command))
    outcome = Outcome()
    process = subprocess.Popen(  # noqa: S603  (our ncu and our child, no shell)
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        bufsize=1,
        env=_child_env(),
        start_new_session=True,
    )
    try:
        assert process.stdout is not None  # noqa: S101  (stdout=PIPE above)
        with process.stdout:
            for raw in process.stdout:
                line = raw.rstrip("\n")
                outcome.tail.append(line)
                logger.debug("ncu: %s", line)
                take_line(line, outcome, counts)
        outcome.returncode = process.wait()
    except BaseException:
        _stop(process)
        raise
    return outcome


def _stop(process: subprocess.Popen[str]) -> None:
    """End ncu and the child it started (its own process group), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# ------------------------------------------------------------------------ errors
