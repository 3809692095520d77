"""nsight_lab.backends.ncu.child: the regions it marks are process-wide NVTX ranges.

A push/pop range holds only its own thread's kernels, so the kernels autograd's threads
launch for ``loss.backward()`` were outside the region (an H100 read a training step's
backward as 2.4 us instead of ~8 ms). The child must start and end start/end ranges,
whose handle closes the range whichever thread launched the kernels in between. A
stand-in ``nvtx`` module records the calls; it has no push/pop, so using them fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from nsight_lab.backends.ncu.child import NVTX_DOMAIN, PAYLOAD_SCHEMA_VERSION, _Ranges
from nsight_lab.backends.ncu.shipping import ship

STAND_IN_NVTX = textwrap.dedent(
    """
    import itertools, json, os, threading

    _ids = itertools.count(1)

    def _record(*entry):
        with open(os.environ["NVTX_CALLS"], "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\\n")

    def start_range(message=None, color=None, domain=None, category=None,
                    payload=None):
        handle = (next(_ids), 0)
        _record("start", message, domain, list(handle))
        return handle

    def end_range(range_id):
        _record("end", list(range_id))
    """
)


class _RecordingNvtx:
    """An ``nvtx`` stand-in in this process: start/end only, no push/pop."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def start_range(self, message: str, domain: str) -> tuple[int, int]:
        handle = (len(self.calls) + 1, 0)
        self.calls.append(("start", message, domain, handle))
        return handle

    def end_range(self, handle: tuple[int, int]) -> None:
        self.calls.append(("end", handle))


def test_ranges_start_and_end_with_the_handle_nvtx_gave(monkeypatch):
    nvtx = _RecordingNvtx()
    monkeypatch.setitem(sys.modules, "nvtx", nvtx)
    ranges = _Ranges("dom")
    ranges.start("cell [c0 r0]")
    ranges.start("step [c0 r0]")
    ranges.end()
    ranges.end()
    assert nvtx.calls == [
        ("start", "cell [c0 r0]", "dom", (1, 0)),
        ("start", "step [c0 r0]", "dom", (2, 0)),
        ("end", (2, 0)),  # the region's range closes first, by its own handle
        ("end", (1, 0)),
    ]


def test_without_nvtx_ranges_are_no_ops(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)  # import raises ImportError
    ranges = _Ranges("dom")
    assert not ranges.available
    ranges.start("r [c0 r0]")
    ranges.end()


def _payload(tmp_path: Path, source: str, *, runs: int, warmup: int) -> Path:
    namespace = tmp_path / "namespace.pkl"
    namespace.write_bytes(ship([], {}))
    payload = {
        "schema_version": PAYLOAD_SCHEMA_VERSION,
        "source": source,
        "configs": [{"config_index": 0, "config": {}}],
        "runs": runs,
        "warmup": warmup,
        "domain": NVTX_DOMAIN,
        "log_path": str(tmp_path / "regions.jsonl"),
        "namespace_path": str(namespace),
        "sys_path": [p for p in sys.path if p],
    }
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_a_region_whose_work_runs_on_another_thread_is_one_process_range(tmp_path):
    """The child's real run: a thread inside the region, the range open around it."""
    fake = tmp_path / "fake_nvtx"
    fake.mkdir()
    (fake / "nvtx.py").write_text(STAND_IN_NVTX, encoding="utf-8")
    calls = tmp_path / "calls.jsonl"
    cell = textwrap.dedent(
        """
        import threading, json, os
        import nsight_lab
        with nsight_lab.annotate("backward"):
            t = threading.Thread(target=lambda: open(os.environ["NVTX_CALLS"], "a")
                                 .write(json.dumps(["thread"]) + "\\n"))
            t.start()
            t.join()
        """
    )
    payload = _payload(tmp_path, cell, runs=1, warmup=1)
    env = {"PYTHONPATH": f"{fake}:{Path.cwd()}", "NVTX_CALLS": str(calls)}
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "nsight_lab.backends.ncu.child", str(payload)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in calls.read_text().splitlines()]
    assert lines == [
        # Warm-up run: the cell wrap (regions not seen yet), the region inside it.
        ["start", "cell [c0 r-1]", NVTX_DOMAIN, [1, 0]],
        ["start", "backward [c0 r-1]", NVTX_DOMAIN, [2, 0]],
        ["thread"],
        ["end", [2, 0]],
        ["end", [1, 0]],
        # Measured run: the region's range only, open while the thread runs.
        ["start", "backward [c0 r0]", NVTX_DOMAIN, [3, 0]],
        ["thread"],
        ["end", [3, 0]],
    ]
