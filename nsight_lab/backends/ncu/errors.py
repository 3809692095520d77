"""ncu output parsing and the error messages of the isolated ncu path.

Part of :mod:`nsight_lab.backends.ncu.isolate`: :class:`Outcome` collects what one ncu
run printed (:func:`take_line` reads each line, and counts the kernels profiled and
the child's finished runs in :class:`Counts`, which hands the progress hook a
:class:`~nsight_lab.contract.progress.Progress` after each change), and the
``_raise_for_*`` / ``_*_message`` helpers turn it into one-line errors (counter
permission, unknown metrics with close names from :func:`query_metrics`, the cell
failing in the child, no kernels in the regions).
:mod:`nsight_lab.backends.ncu.isolate` re-exports :func:`query_metrics` and
``QUERY_METRICS_TIMEOUT_S``.
"""

from __future__ import annotations

import difflib
import functools
import logging
import re
import subprocess
import sys
from collections import deque
from typing import TYPE_CHECKING

from nsight_lab.backends.ncu.child import CHILD_PREFIX, NVTX_MISSING
from nsight_lab.contract.progress import ProgressCounter
from nsight_lab.errors import BackendUnavailableError, MeasurementError
from nsight_lab.gpu.stack import COUNTER_PERMISSION_HINT, format_version, ncu_version

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

    from nsight_lab.backends.ncu.report import KernelRow
    from nsight_lab.contract.records import JsonScalar, RunRecord

# Log as before the split, under the public module's name.
logger = logging.getLogger("nsight_lab.backends.ncu.isolate")

QUERY_METRICS_TIMEOUT_S = 120.0
_TAIL_LINES = 200

_PROF_KERNEL_RE = re.compile(r'^==PROF==\s+Profiling\s+"(?P<kernel>[^"]*)"')
_CHILD_RUN_RE = re.compile(
    rf"^{re.escape(CHILD_PREFIX)} config (?P<config>-?\d+) run (?P<run>-?\d+) done"
)
_CHILD_ERROR = f"{CHILD_PREFIX} error: "
_CHILD_WARNING = f"{CHILD_PREFIX} warning: "
_UNKNOWN_METRIC_RE = re.compile(
    r"(?:failed to find metric|unknown metric|invalid metric)\s*:?\s*(?P<what>\S*)",
    re.IGNORECASE,
)
_METRIC_NAME_RE = re.compile(r"^(?P<name>[A-Za-z0-9_]+__[A-Za-z0-9_.]+)\s")


class Outcome:
    """What one ncu run printed and how it ended."""

    def __init__(self) -> None:
        """Nothing printed yet."""
        self.returncode = 0
        self.tail: deque[str] = deque(maxlen=_TAIL_LINES)
        self.errors: list[str] = []
        self.child_error: str | None = None
        self.child_warnings: list[str] = []
        self.kernels = 0


class Counts(ProgressCounter):
    """Where the isolated run stands: the :class:`ProgressCounter`, with ncu's steps.

    ``hook`` gets a :class:`~nsight_lab.contract.progress.Progress` snapshot after each
    change and the records that came with it (a config's, once its report is read).
    """

    def start_config(self, config_index: int) -> None:
        """Config ``config_index`` starts under ncu."""
        super().start_config(config_index)
        self.message = f"config {config_index + 1}/{self.configs_total}: starting ncu"
        self.emit()

    def kernel(self, name: str, count: int) -> None:
        """Kernel ``name`` is being profiled, the ``count``-th of this config."""
        self.message = (
            f'config {self.config_index + 1}: profiling "{name}" (kernel {count})'
        )
        self.emit()

    def run_done(self) -> None:
        """The child finished a measured run."""
        self.runs_done()
        self.emit()

    def config_done(self, records: Sequence[RunRecord], report: Path) -> None:
        """The config's report was read into ``records`` (kept at ``report``)."""
        self.message = f"config {self.config_index + 1}: report kept at {report}"
        self.emit(records)

    def completed(self) -> None:
        """Every config ran."""
        self.complete()
        self.emit()


def take_line(line: str, outcome: Outcome, counts: Counts) -> None:
    """Read one line of ncu's output: a kernel profiled, a run done, an error."""
    if kernel := _PROF_KERNEL_RE.match(line):
        outcome.kernels += 1
        counts.kernel(kernel["kernel"], outcome.kernels)
    elif run := _CHILD_RUN_RE.match(line):
        if int(run["run"]) >= 0:
            counts.run_done()
    elif line.startswith(_CHILD_ERROR):
        outcome.child_error = line.removeprefix(_CHILD_ERROR)
    elif line.startswith(_CHILD_WARNING):
        outcome.child_warnings.append(line.removeprefix(_CHILD_WARNING))
    elif line.startswith("==ERROR=="):
        outcome.errors.append(line.removeprefix("==ERROR==").strip())


def raise_for_failure(
    outcome: Outcome, ncu: Path, metrics: list[str], report: Path
) -> None:
    """Raise what ncu's run said went wrong, in one line; nothing when it did not.

    Raises:
        BackendUnavailableError: No permission to read the counters.
        MeasurementError: An unknown metric, the cell failed, or ncu failed.
    """
    text = "\n".join(outcome.tail)
    if "ERR_NVGPUCTRPERM" in text:
        msg = (
            "ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM); "
            f"{COUNTER_PERMISSION_HINT}"
        )
        raise BackendUnavailableError(msg)
    unknown = [e for e in outcome.errors if _UNKNOWN_METRIC_RE.search(e)]
    if unknown:
        bad = _unknown_metrics(unknown, metrics)
        raise MeasurementError(_unknown_metric_message(bad, ncu, metrics))
    if outcome.child_error is not None:
        msg = (
            "the cell failed in the ncu child process: "
            f"{outcome.child_error}; fix the cell, or run it with --backend events "
            "to see the full traceback"
        )
        raise MeasurementError(msg)
    if outcome.returncode != 0 and not report.exists():
        detail = (
            outcome.errors[-1]
            if outcome.errors
            else next((ln for ln in reversed(outcome.tail) if ln.strip()), "")
        )
        msg = (
            f"ncu exited with status {outcome.returncode}"
            f"{': ' + detail if detail else ''}; run `nsight-lab doctor`, and see the "
            "nsight_lab.backends.ncu.isolate debug log for ncu's full output"
        )
        raise MeasurementError(msg)


def raise_for_absent_metrics(
    rows: list[KernelRow], config_index: int, ncu: Path, metrics: list[str]
) -> None:
    """Raise when a metric is in no kernel of the config's measured runs.

    ncu refuses an unknown metric *without* a rollup suffix (``Failed to find
    metric``) but silently leaves out an unknown one *with* a suffix (seen with
    2025.3.1: ``dram__bytes_reed.sum`` ran and came back without values).
    """
    mine = [r for r in rows if r.config_index == config_index and r.run_index >= 0]
    if not mine:
        return
    absent = [m for m in metrics if not any(m in r.metrics for r in mine)]
    if absent:
        raise MeasurementError(_unknown_metric_message(absent, ncu, metrics))


def no_rows_message(
    config_index: int, config: dict[str, JsonScalar], outcome: Outcome
) -> str:
    """Why a config's ncu run measured no kernel, and what to check."""
    where = f"config {config_index} {config!r}" if config else f"config {config_index}"
    msg = (
        f"no kernels ran inside the annotated regions ({where}): ncu profiles only "
        "CUDA kernels launched inside nsight_lab.annotate regions (or the whole cell "
        "when it marks none); check that the cell runs work on the GPU "
        "(tensors on device='cuda')"
    )
    if any(NVTX_MISSING in w for w in outcome.child_warnings):
        msg += (
            f"; {NVTX_MISSING} ({sys.executable}), so no region was marked: "
            "install it with: pip install nvtx"
        )
    return msg


def _unknown_metric_message(bad: list[str], ncu: Path, metrics: list[str]) -> str:
    version = ncu_version(ncu)
    found = f"ncu {format_version(version)}" if version else "this ncu"
    known = query_metrics(str(ncu))
    parts: list[str] = []
    newer = False
    for metric in bad:
        base, dot, suffix = metric.partition(".")
        close = difflib.get_close_matches(base, known, n=3, cutoff=0.6)
        if close:
            hint = " or ".join(repr(c + dot + suffix) for c in close)
            parts.append(f"{metric!r} (did you mean {hint}?)")
        else:
            newer = True
            parts.append(repr(metric))
    what = ", ".join(parts) if parts else "one of " + ", ".join(map(repr, metrics))
    msg = f"--metrics: {found} at {ncu} does not know (or did not collect) {what}"
    if newer:
        msg += (
            f"; it may be newer than {found}: install a newer Nsight Compute, "
            "or pick another metric"
        )
    return msg + "; list the metrics with: ncu --query-metrics"


def _unknown_metrics(errors: Iterable[str], metrics: list[str]) -> list[str]:
    """The requested metrics the ncu errors name (by full name or base name)."""
    bad: list[str] = []
    for error in errors:
        text = error.replace("\\.", ".")
        match = _UNKNOWN_METRIC_RE.search(text)
        what = match["what"] if match else ""
        what = what.removeprefix("regex:").lstrip("^")
        for metric in metrics:
            base = metric.partition(".")[0]
            if metric in bad:
                continue
            if what.startswith(metric) or re.match(rf"{re.escape(base)}(?![\w])", what):
                bad.append(metric)
    return bad


@functools.cache
def query_metrics(ncu: str) -> tuple[str, ...]:
    """Return the metric base names ``ncu --query-metrics`` lists (cached per ncu).

    Args:
        ncu: Path of the ncu executable.

    Returns:
        The names (``dram__bytes_read``, ...), or ``()`` when ncu cannot list them
        (for example, without a GPU).
    """
    try:
        completed = subprocess.run(  # noqa: S603  (our ncu, no shell)
            [ncu, "--query-metrics"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=QUERY_METRICS_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.debug("ncu --query-metrics failed: %s", exc)
        return ()
    names = (_METRIC_NAME_RE.match(line) for line in completed.stdout.splitlines())
    return tuple(dict.fromkeys(m["name"] for m in names if m))
