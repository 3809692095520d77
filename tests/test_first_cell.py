"""The first ``%%nsight`` cell: nothing heavy on its path, the warm-up of ``%load_ext``.

Timings belong in ``benchmarks/first_cell.py``; these tests check what is imported and
that a cell works whatever became of the warm-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import nsight_lab
from nsight_lab.magic.warmup import WarmUp

if TYPE_CHECKING:
    import pytest
    from IPython.core.interactiveshell import InteractiveShell

    from nsight_lab.magic import NsightMagics

ROOT = Path(__file__).resolve().parent.parent

FRESH_KERNEL = textwrap.dedent(
    """
    import json, sys
    import nsight_lab.magic
    seen = {"after_import": sorted(m for m in ("scipy", "pandas") if m in sys.modules)}
    from IPython.core.interactiveshell import InteractiveShell
    try:
        import torch
        body = "y = x * 2.0"
        setup = "import torch\\nx = torch.ones(1024)\\n"
    except ImportError:
        torch = None
        body = "y = sum(range(100))"
        setup = ""
    import nsight_lab.roofline.workmodel as workmodel
    counted = []
    real_count_work = workmodel.count_work
    def spy(call):
        counted.append(real_count_work(call))
        return counted[-1]
    workmodel.count_work = spy
    shell = InteractiveShell.instance()
    shell.run_cell(setup)
    shell.run_line_magic("load_ext", "nsight_lab")
    result = shell.run_cell(
        "%%nsight --backend cpu --runs 3 --warmup 1 --quiet --out res\\n" + body
    )
    frame = shell.user_ns["res"]
    seen.update(
        ok=result.success,
        rows=len(frame),
        flops=[w["model__flops"] for model in counted for w in model.values()],
        torch=torch is not None,
        scipy="scipy" in sys.modules,
        dynamo="torch._dynamo" in sys.modules,
        warm_up_errors=shell.magics_manager.registry["NsightMagics"].warm_up.errors,
    )
    print(json.dumps(seen))
    """
)


def test_a_quiet_cpu_cell_imports_neither_scipy_nor_dynamo(tmp_path: Path) -> None:
    # Given: a fresh interpreter (every import cold), as a new kernel is
    env = {**os.environ, "NSIGHT_LAB_HOME": str(tmp_path / "home")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    )
    # When: the magic is imported, the extension loaded and a --quiet cell run
    proc = subprocess.run(  # noqa: S603
        [sys.executable, "-c", "import nsight_lab\n" + FRESH_KERNEL],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    # Then: importing the magic loads neither scipy nor pandas, and the cell (the work
    # model's counting pass included) never imports scipy or PyTorch's Dynamo
    assert seen["after_import"] == []
    assert seen["ok"]
    assert seen["rows"] == 1
    assert seen["scipy"] is False
    assert seen["warm_up_errors"] == []
    if seen["torch"]:
        assert seen["dynamo"] is False
        assert seen["flops"] == [1024.0]  # the work model did count, without Dynamo


def _magics(ip: InteractiveShell) -> NsightMagics:
    return ip.magics_manager.registry["NsightMagics"]  # type: ignore[no-any-return]


def test_load_ext_starts_the_warm_up(ip: InteractiveShell) -> None:
    # When: the extension is loaded
    nsight_lab.load_ipython_extension(ip)
    # Then: its magics' warm-up thread runs (or ran), once, and imports cleanly
    warm_up = _magics(ip).warm_up
    thread = warm_up.thread
    assert thread is not None
    assert thread.daemon
    assert warm_up.start() is thread
    warm_up.wait()
    assert not thread.is_alive()
    assert warm_up.errors == []
    # The warm-up is the magics' own: the package holds no thread of its own
    assert not hasattr(nsight_lab, "_warm_up")


def test_a_cell_works_when_the_warm_up_failed(
    ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a warm-up whose imports fail
    warm_up = WarmUp(modules=("nsight_lab.no_such_module",))
    monkeypatch.setattr(_magics(ip), "warm_up", warm_up)
    warm_up.start()
    warm_up.wait()
    assert warm_up.errors[0].startswith(
        "nsight_lab.no_such_module: ModuleNotFoundError"
    )
    # When: a cell runs
    result = ip.run_cell("%%nsight --backend cpu --runs 2 --quiet --out r\ny = 1 + 1\n")
    # Then: it profiles as usual
    assert result.success
    assert len(ip.user_ns["r"]) == 1


def test_a_cell_works_when_the_warm_up_hangs(
    ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a warm-up that never finishes, and a short wait for it
    release = threading.Event()
    warm_up = WarmUp(wait_s=0.05)
    monkeypatch.setattr(warm_up, "warm", release.wait)
    monkeypatch.setattr(_magics(ip), "warm_up", warm_up)
    thread = warm_up.start()
    try:
        # When: a cell runs
        result = ip.run_cell(
            "%%nsight --backend cpu --runs 2 --quiet --out r\ny = 1 + 1\n"
        )
        # Then: it waited no longer than the limit, and profiled as usual
        assert result.success
        assert thread.is_alive()
        assert len(ip.user_ns["r"]) == 1
    finally:
        release.set()
