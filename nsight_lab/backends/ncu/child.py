"""The child of the isolated ncu path: ``python -m nsight_lab.backends.ncu.child ARGS``.

Nsight Compute runs this module; it runs the cell once per warm-up and measured run of
each config in the payload, with every ``nsight_lab.annotate`` region (or, in a run that
marks none, the whole cell) marked as an NVTX start/end range in the domain the payload
names::

    f"{region} [c{config_index} r{run_index}]"      # warm-up runs are r-1, r-2, ...

so that ``ncu --nvtx --nvtx-include "regex:nsight_lab@.+"`` profiles exactly the
kernels inside them. Start/end ranges, not push/pop: a push/pop range holds only the
kernels its own thread launches, so the kernels of ``loss.backward()`` (launched by
PyTorch's autograd threads) or of a ``threading.Thread`` inside a region would be left
out; a start/end range holds every kernel the process launches while it is open, as
NVIDIA's nsight-python 1.1 marks its annotations. Its protocol with the parent
(:mod:`nsight_lab.backends.ncu.isolate`):

* the payload is a JSON file (see ``isolate._write_payload``) naming the cell source,
  the configs, runs, warm-up, the NVTX domain, the sidecar log path and the file of
  shipped variables (:func:`nsight_lab.backends.ncu.shipping.ship`);
* one JSON line per region end goes to the sidecar log:
  ``{"config_index", "run_index", "region", "t_start_ns", "t_end_ns"}`` (host
  ``perf_counter_ns``);
* one line per finished run goes to stdout: ``[nsight-lab-child] config C run R done``;
* a failure prints ``[nsight-lab-child] error: <Type>: <message>`` (one line; the full
  traceback follows on stderr) and exits with :data:`EXIT_CELL_FAILED`;
* without the ``nvtx`` package no range can be marked: the child says so once with
  ``[nsight-lab-child] warning: ...`` and runs anyway (ncu then profiles nothing).

Until a run shows that the cell marks regions, each run is also wrapped in a ``cell``
range, so that a cell without regions is profiled whole. Under ncu's range replay
(payload ``"replay_mode": "range"``) a run wrapped so would be one range, its regions
inside it: there the first run marks no range at all (it is the first warm-up run,
or, with no warm-up, one extra run that is neither measured nor logged) and tells
whether the cell marks regions before any range is profiled.

It imports neither IPython nor any backend. It first calls the payload's ``prepare``
(``module:function``, the cell's ``CellCode.prepare``): a ``%%nsight`` cell's makes
``import nsight`` nsight-lab's stand-in (:func:`nsight_lab.nsight_shim.prepare_child`).
The region rules are the notebook's (:class:`nsight_lab.regions.RegionTracker`).
"""

from __future__ import annotations

import builtins
import importlib
import json
import logging
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from nsight_lab.backends.ncu.shipping import unship
from nsight_lab.contract.collector import RunKey
from nsight_lab.regions import (
    CELL_REGION,
    RegionTracker,
    listening,
    nsight_python_routed,
)
from nsight_lab.runner import running

if TYPE_CHECKING:
    import types
    from collections.abc import Callable, Sequence

CHILD_PREFIX = "[nsight-lab-child]"
"""Start of every protocol line the child prints."""
NVTX_DOMAIN = "nsight_lab"
EXIT_CELL_FAILED = 3
PAYLOAD_SCHEMA_VERSION = 1
NVTX_MISSING = "the nvtx package is not installed in the child's Python"


def range_name(region: str, config_index: int, run_index: int) -> str:
    """Return the NVTX range name of ``region`` in one run (parsed back by the reader).

    Args:
        region: The region (annotation) name.
        config_index: Index of the config.
        run_index: Index of the run; warm-up runs are negative.

    Returns:
        ``"{region} [c{config_index} r{run_index}]"``.
    """
    return f"{region} [c{config_index} r{run_index}]"


class _Ranges:
    """Starts and ends process-wide NVTX ranges in one domain (no-ops without ``nvtx``).

    ``nvtx.start_range`` returns a handle that ``nvtx.end_range`` takes; the open
    handles are kept last-started first, as the ``cell`` wrap is started before a
    region's range and ended after it (regions do not nest).
    """

    def __init__(self, domain: str) -> None:
        self.available = True
        self._open: list[object] = []
        try:
            nvtx = importlib.import_module("nvtx")
        except ImportError:
            self.available = False
            self._start: Callable[[str], object] = lambda _name: None
            self._end: Callable[[object], object] = lambda _handle: None
            return
        self._start = lambda name: nvtx.start_range(message=name, domain=domain)
        self._end = nvtx.end_range

    def start(self, name: str) -> None:
        """Open the range ``name``: every thread's kernels from now on are in it."""
        self._open.append(self._start(name))

    def end(self) -> None:
        """Close the range opened last."""
        self._end(self._open.pop())


class _RunRanges:
    """What one run's regions drive in the child: NVTX ranges and the sidecar log.

    The region rules are checked before it by :class:`nsight_lab.regions.RegionTracker`,
    the same as in the notebook.
    """

    def __init__(
        self, ranges: _Ranges, log: TextIO, config_index: int, run_index: int
    ) -> None:
        self._ranges = ranges
        self._log = log
        self._config_index = config_index
        self._run_index = run_index
        self._t_start = 0

    def enter_region(self, name: str) -> None:
        self._ranges.start(range_name(name, self._config_index, self._run_index))
        self._t_start = time.perf_counter_ns()

    def exit_region(self, name: str) -> None:
        t_end = time.perf_counter_ns()
        self._ranges.end()
        self.write(name, self._t_start, t_end)

    def write(self, region: str, t_start_ns: int, t_end_ns: int) -> None:
        line = {
            "config_index": self._config_index,
            "run_index": self._run_index,
            "region": region,
            "t_start_ns": t_start_ns,
            "t_end_ns": t_end_ns,
        }
        self._log.write(json.dumps(line) + "\n")
        self._log.flush()


class _Unmarked:
    """A run's regions, checked but neither marked as NVTX ranges nor logged."""

    def enter_region(self, name: str) -> None:
        """Nothing to mark."""

    def exit_region(self, name: str) -> None:
        """Nothing to mark."""


_lines = logging.getLogger("nsight_lab.backends.ncu.child.lines")
"""The child's lines to its parent (runs done, warnings, its one error): shown on
the child's stdout, which ncu passes on, once :func:`main` says where."""


def _say(text: str) -> None:
    _lines.info("%s %s", CHILD_PREFIX, text)


def _lines_on_stdout() -> None:
    """Send the child's lines to this process's stdout (the child's own ``main``)."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    _lines.addHandler(handler)
    _lines.setLevel(logging.INFO)
    _lines.propagate = False


def run_payload(payload: dict[str, Any]) -> None:
    """Run the cell as the payload says (the body of :func:`main`).

    Args:
        payload: The parsed payload JSON.

    Raises:
        ValueError: The payload is of another schema version.
        BaseException: Whatever the cell raised, or a region rule it broke.
    """
    # Where NVIDIA's nsight-python is what a shipped ``nsight`` names (a function of
    # analyze.kernel, whose cell gives no ``prepare``), its annotate marks our regions.
    with nsight_python_routed():
        _run_payload(payload)


def _run_payload(payload: dict[str, Any]) -> None:
    namespace, code = _prepare(payload)
    ranges = _Ranges(str(payload.get("domain", NVTX_DOMAIN)))
    if not ranges.available:
        _say(f"warning: {NVTX_MISSING}; no region can be marked for ncu")
    runs = int(payload["runs"])
    warmup = int(payload["warmup"])
    # Until a run shows that the cell marks regions, each run is also wrapped in a
    # "cell" range so that a cell without regions is profiled whole (see the module
    # docstring for range replay, where the first run finds out unmarked instead).
    has_regions = False
    discover = payload.get("replay_mode") == "range"
    with Path(payload["log_path"]).open("a", encoding="utf-8") as log:
        for entry in payload["configs"]:
            ci = int(entry["config_index"])
            config = dict(entry["config"])
            run_indices = [-(w + 1) for w in range(warmup)] + list(range(runs))
            if discover:
                discover = False
                has_regions = _marks_regions(code, namespace, config, ci)
                if warmup:  # that run was the first warm-up run
                    run_indices = run_indices[1:]
                    _say(f"config {ci} run -1 done")
            for ri in run_indices:
                run_ranges = _RunRanges(ranges, log, ci, ri)
                regions = RegionTracker(run_ranges)
                wrap = not has_regions
                if wrap:
                    ranges.start(range_name(CELL_REGION, ci, ri))
                t_start = time.perf_counter_ns()
                try:
                    # current_run() as in the notebook's process: info collectors
                    # shipped with an analyze.kernel function collect per run here.
                    with listening(regions), running(RunKey(ci, ri, warmup=ri < 0)):
                        namespace.update(config)
                        exec(code, namespace)  # noqa: S102  (running the cell is the point)
                finally:
                    t_end = time.perf_counter_ns()
                    if wrap:
                        ranges.end()
                regions.check_closed()
                if regions.seen:
                    has_regions = True
                else:
                    run_ranges.write(CELL_REGION, t_start, t_end)
                _say(f"config {ci} run {ri} done")


def _prepare(payload: dict[str, Any]) -> tuple[dict[str, Any], types.CodeType]:
    """The cell's namespace (shipped variables unpickled) and its compiled code.

    Raises:
        ValueError: The payload is of another schema version.
    """
    if payload.get("schema_version") != PAYLOAD_SCHEMA_VERSION:
        msg = (
            f"payload schema {payload.get('schema_version')!r} is not "
            f"{PAYLOAD_SCHEMA_VERSION}; the notebook and the child must run the same "
            "nsight-lab"
        )
        raise ValueError(msg)
    for entry in reversed(payload.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(1, entry)
    prepare = payload.get("prepare")
    if prepare:  # before unship: a shipped ``nsight`` is what it installs
        module, _, name = prepare.partition(":")
        getattr(importlib.import_module(module), name)()
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    namespace.update(
        unship(Path(payload["namespace_path"]).read_bytes(), payload.get("device"))
    )
    code = compile(payload["source"], payload.get("filename", "<cell>"), "exec")
    return namespace, code


def _marks_regions(
    code: types.CodeType,
    namespace: dict[str, Any],
    config: dict[str, Any],
    config_index: int,
) -> bool:
    """Run the cell once with no NVTX range (a warm-up run); whether it marks regions.

    Raises:
        BaseException: Whatever the cell raised, or a region rule it broke.
    """
    unmarked = RegionTracker(_Unmarked())
    with listening(unmarked), running(RunKey(config_index, -1, warmup=True)):
        namespace.update(config)
        exec(code, namespace)  # noqa: S102  (running the cell is the point)
    unmarked.check_closed()
    return bool(unmarked.seen)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the payload file named in ``argv``; return the exit status.

    Args:
        argv: ``[PAYLOAD_PATH]``; default ``sys.argv[1:]``.

    Returns:
        0, or :data:`EXIT_CELL_FAILED` after printing the one-line error marker.
    """
    _lines_on_stdout()
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        _say("error: UsageError: expected one argument, the payload path")
        return 2
    try:
        payload = json.loads(Path(args[0]).read_text(encoding="utf-8"))
        run_payload(payload)
    except BaseException as exc:  # noqa: BLE001  (report anything, then exit non-zero)
        text = str(exc).strip().splitlines()
        message = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
        _say(f"error: {message}")
        traceback.print_exc()
        sys.stderr.flush()
        return EXIT_CELL_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
