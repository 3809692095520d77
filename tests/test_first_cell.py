"""The first ``%%nsight`` cell: nothing heavy on its path, the warm-up of ``%load_ext``.

Timings belong in ``benchmarks/first_cell.py``; these tests check what is imported and
that a cell works whatever became of the warm-up.
"""

from __future__ import annotations

import os
import sys
import textwrap
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import nsight_lab
from nsight_lab.magic.warmup import WarmUp
from tests._child import run_child
from tests.roofline.test_torch_flops import fake_triton

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from nsight_lab.magic import NsightMagics

ROOT = Path(__file__).resolve().parent.parent


def _fresh_kernel(
    tmp_path: Path, args: list[str], *paths: Path
) -> tuple[dict[str, Any], str]:
    """Run ``python args`` as a new kernel would (its own store, this checkout on
    the path after ``paths``); the JSON its last line printed, and its stderr."""
    env = {**os.environ, "NSIGHT_LAB_HOME": str(tmp_path / "home")}
    env["PYTHONPATH"] = os.pathsep.join(
        [
            *map(str, paths),
            str(ROOT),
            *filter(None, env.get("PYTHONPATH", "").split(os.pathsep)),
        ]
    )
    return run_child(args, env)


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
    # When: the magic is imported, the extension loaded and a --quiet cell run
    seen, _ = _fresh_kernel(tmp_path, ["-c", "import nsight_lab\n" + FRESH_KERNEL])
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


START, END = "first-cell-test: load_ext", "first-cell-test: cell done"
PLAIN_CELL = textwrap.dedent(
    f"""
    import json, sys
    from IPython.core.interactiveshell import InteractiveShell
    try:
        import torch
        setup = "import torch\\nx = torch.ones(1024)\\ny = x * 2.0\\n"
        body = "y = x * 2.0"
    except ImportError:
        setup, body = "", "y = sum(range(100))"
    cell = "%%nsight --backend cpu --runs 3 --warmup 1 --quiet"
    shell = InteractiveShell.instance()
    shell.run_cell(setup)
    before = set(sys.modules)
    print({START!r}, file=sys.stderr, flush=True)
    shell.run_line_magic("load_ext", "nsight_lab")
    plain = shell.run_cell(cell + "\\n" + body)
    print({END!r}, file=sys.stderr, flush=True)
    seen = dict(
        plain=plain.success,
        imported=sorted(set(sys.modules) - before),
        warm_up_errors=shell.magics_manager.registry["NsightMagics"].warm_up.errors,
    )
    # What needs pandas imports it when it is asked for
    out = shell.run_cell(cell + " --out res\\n" + body)
    frame = shell.user_ns["res"]
    shown = shell.run_line_magic("nsight", "show 1 --frame")
    history = shell.run_line_magic("nsight", "history")
    seen.update(
        out=out.success,
        out_frame=isinstance(frame, sys.modules["pandas"].DataFrame),
        out_rows=len(frame),
        show_rows=len(shown),
        show_sessions=sorted(set(shown["SessionId"].tolist())),
        history_rows=len(history),
    )
    print(json.dumps(seen))
    """
)
PLAIN_CELL_PACKAGES = {"IPython", "nsight", "nsight_lab", "numpy", "platformdirs"}
"""Every package outside the standard library that ``%load_ext nsight_lab`` and a
plain ``%%nsight`` cell (cpu, ``--quiet``, no DataFrame asked for) import, the
warm-up's included: the IPython magics, nsight-lab and its stand-in ``nsight``, numpy
(the statistics) and platformdirs (where the store is)."""
PLAIN_CELL_TORCH = ["torch.utils.flop_counter", "torch.utils.module_tracker"]
"""What of PyTorch it imports (the work model's FLOP formulas), where PyTorch is."""
HEAVY = (
    "pandas", "pyarrow", "triton", "plotly", "anywidget", "ipywidgets", "PIL",
    "scipy", "matplotlib", "sympy", "psycopg", "cloudpickle", "torch._dynamo",
    "torch._inductor",
)  # fmt: skip
"""Never on a plain cell's path (issue 32: pandas 0.53 s, Triton 0.24 s on an H100)."""


def _importers(importtime: str, package: str) -> str:
    """What imported ``package``: its outermost module <- its importer <- ...."""
    lines = importtime.splitlines()
    section = lines[lines.index(START) + 1 : lines.index(END)]
    rows = [
        (len(name) - len(name.lstrip()), name.strip())
        for line in section
        if line.startswith("import time:") and line.count("|") == 2
        for name in [line.split("|")[2]]
    ]
    own = [i for i, (_, name) in enumerate(rows) if name.split(".")[0] == package]
    if not own:
        return package
    found = min(own, key=lambda i: rows[i][0])
    chain, depth = [rows[found][1]], rows[found][0]
    for indent, name in rows[found + 1 :]:
        if indent < depth:
            chain.append(name)
            depth = indent
    return " <- ".join(chain)


def test_a_plain_cell_imports_only_what_it_needs(tmp_path: Path) -> None:
    # Given: a fresh interpreter (every import cold), as a new kernel is, where
    # Triton is installed (a stand-in: PyTorch's flop counter imports it if it can)
    site = fake_triton(tmp_path / "site")
    # When: the extension is loaded and a plain cell runs right after it (run all)
    seen, importtime = _fresh_kernel(
        tmp_path, ["-X", "importtime", "-c", PLAIN_CELL], site
    )
    assert seen["plain"]
    assert seen["warm_up_errors"] == []
    # Then: no heavy package was imported (the message says what imported it) ...
    imported = seen["imported"]
    heavy = [
        _importers(importtime, m.split(".")[0])
        for m in imported
        if m in HEAVY or (m.split(".")[0] in HEAVY and m.split(".")[0] == m)
    ]
    assert heavy == [], "\n".join(heavy)
    # ... and exactly these packages were, beside the standard library
    packages = {m.split(".")[0] for m in imported} - set(sys.stdlib_module_names)
    torch_modules = sorted(m for m in imported if m.split(".")[0] == "torch")
    expected = set(PLAIN_CELL_PACKAGES)
    if torch_modules:
        expected.add("torch")
        assert torch_modules == PLAIN_CELL_TORCH
    assert packages == expected
    # And: what needs pandas has it when asked for: --out's DataFrame, %nsight show's
    # frame and the history
    assert seen["out"]
    assert seen["out_frame"] is True
    assert seen["out_rows"] == 1
    assert seen["show_rows"] == 1
    assert seen["show_sessions"] == [1]
    assert seen["history_rows"] == 2


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


NO_TORCH_NOTEBOOK = textwrap.dedent(
    """
    import json, sys
    from IPython.core.interactiveshell import InteractiveShell
    import nsight_lab.roofline.workmodel as workmodel
    counted = []
    real_count_work = workmodel.count_work
    def spy(call):
        counted.append(real_count_work(call))
        return counted[-1]
    workmodel.count_work = spy
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nsight_lab")
    cell = "%%nsight --backend cpu --runs 3 --warmup 1 --quiet\\n"
    plain = shell.run_cell(cell + "y = sum(range(1000))")
    seen = dict(ok=plain.success, torch_after_plain="torch" in sys.modules)
    seen["counted_plain"] = len(counted)
    named = shell.run_cell(cell + "import torch\\ny = torch.ones(1024) * 2.0")
    seen.update(
        named_ok=named.success,
        flops=[w["model__flops"] for model in counted for w in model.values()],
    )
    print(json.dumps(seen))
    """
)


def test_a_notebook_that_never_imported_pytorch_is_not_made_to(tmp_path: Path) -> None:
    # Given: a fresh kernel where PyTorch is installed but the notebook never used it
    pytest.importorskip("torch", reason="PyTorch is not installed here")
    # When: a plain cell runs, then one that imports PyTorch itself
    seen, _ = _fresh_kernel(tmp_path, ["-c", NO_TORCH_NOTEBOOK])
    # Then: the plain cell left PyTorch unimported (no work model to count) ...
    assert seen["ok"]
    assert seen["torch_after_plain"] is False
    assert seen["counted_plain"] == 0
    # ... and the cell that imports it gets its work model (its FLOPs counted)
    assert seen["named_ok"]
    assert seen["flops"] == [1024.0]
