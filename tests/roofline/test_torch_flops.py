"""PyTorch's FLOP formulas load without Triton and still know its kernels (issue 32).

Each case runs in a fresh interpreter (``torch.utils.flop_counter`` is imported once
per process) with a stand-in ``triton`` package on the path: an installed Triton that
nobody imported yet, as on a GPU machine.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests._child import run_child

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


def fake_triton(folder: Path) -> Path:
    """A ``triton`` package with ``triton.runtime.jit.JITFunction``, in ``folder``."""
    (folder / "triton" / "runtime").mkdir(parents=True)
    (folder / "triton" / "__init__.py").write_text("")
    (folder / "triton" / "runtime" / "__init__.py").write_text("")
    (folder / "triton" / "runtime" / "jit.py").write_text(
        "class JITFunction:\n    pass\n"
    )
    return folder


def _run(script: str, tmp_path: Path) -> dict[str, object]:
    paths = [str(fake_triton(tmp_path / "site")), str(ROOT)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    seen, stderr = run_child(["-c", textwrap.dedent(script)], env)
    seen["stderr"] = stderr
    return seen


def test_the_formulas_load_without_triton_and_know_its_kernels(tmp_path: Path) -> None:
    # Given: Triton installed but not imported, on a CUDA build of PyTorch (whose
    # flop_counter warns when it cannot import Triton)
    seen = _run(
        """
        import json, sys, torch
        torch.version.cuda = "13.0"
        from nsight_lab.roofline.torch_flops import TritonKernel, flop_counter
        # When: the formulas are loaded
        counter = flop_counter()
        seen = {
            "triton": "triton" in sys.modules,
            "formulas": torch.ops.aten.mm in counter.flop_registry,
            "stand_in": counter._JITFunction is TritonKernel,
            "plain_object_is_kernel": isinstance(object(), TritonKernel),
        }
        # and the user's code imports Triton later and registers a kernel's formula
        from triton.runtime.jit import JITFunction
        kernel = JITFunction()
        counter.register_flop_formula(kernel)(lambda *a, **k: 7)
        seen["kernel_is_kernel"] = isinstance(kernel, TritonKernel)
        seen["registered"] = kernel in counter.flop_registry
        print(json.dumps(seen))
        """,
        tmp_path,
    )
    # Then: no Triton was imported, no warning said it was missing, PyTorch's
    # formulas are there, and a Triton kernel is still recognised once loaded
    assert seen["triton"] is False
    assert "triton not found" not in str(seen["stderr"])
    assert seen["formulas"] is True
    assert seen["stand_in"] is True
    assert seen["plain_object_is_kernel"] is False
    assert seen["kernel_is_kernel"] is True
    assert seen["registered"] is True


def test_where_triton_is_loaded_pytorch_uses_it_as_ever(tmp_path: Path) -> None:
    # Given: the notebook imported Triton first
    seen = _run(
        """
        import json, torch
        import triton.runtime.jit
        from nsight_lab.roofline.torch_flops import flop_counter
        # When: the formulas are loaded
        counter = flop_counter()
        print(json.dumps({
            "real": counter._JITFunction is triton.runtime.jit.JITFunction,
        }))
        """,
        tmp_path,
    )
    # Then: PyTorch's module is imported unchanged
    assert seen["real"] is True


def test_another_thread_imports_triton_while_the_formulas_load(
    tmp_path: Path,
) -> None:
    # Given: the formulas load on one thread (the warm-up of %load_ext)
    seen = _run(
        """
        import json, sys, threading, torch
        import nsight_lab.roofline.torch_flops as tf
        loading, imported = threading.Event(), threading.Event()
        real = tf.importlib.import_module
        def slow_import(name, *args):
            if name == "torch.utils.flop_counter":
                loading.set()
                imported.wait(30)
            return real(name, *args)
        tf.importlib.import_module = slow_import
        thread = threading.Thread(target=tf.flop_counter)
        thread.start()
        # When: the user's code imports Triton meanwhile, on the main thread
        loading.wait(30)
        import triton.runtime.jit
        imported.set()
        thread.join(30)
        print(json.dumps({"triton": triton.runtime.jit.__name__}))
        """,
        tmp_path,
    )
    # Then: the user's import works
    assert seen["triton"] == "triton.runtime.jit"


def test_a_cell_counting_work_loads_no_triton_when_torch_came_after_load_ext(
    tmp_path: Path,
) -> None:
    # Given: a notebook that loaded nsight-lab before it imported PyTorch (so the
    # warm-up of %load_ext left PyTorch's formulas alone)
    seen = _run(
        f"""
        import json, os, sys
        os.environ["NSIGHT_LAB_HOME"] = {str(tmp_path / "home")!r}
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "nsight_lab")
        shell.magics_manager.registry["NsightMagics"].warm_up.wait()
        shell.run_cell("import torch\\na = torch.ones(64, 64)")
        # When: a cell whose work model counts a matmul runs
        ok = shell.run_cell(
            "%%nsight --backend cpu --runs 2 --quiet --derive tflops --out r\\na @ a"
        ).success
        frame = shell.user_ns["r"]
        print(json.dumps({{
            "ok": ok,
            "triton": "triton" in sys.modules,
            "tflops": bool((frame["Metric"] == "tflops").any()),
            "flops": float(frame["FLOPs"].dropna().iloc[0]),
        }}))
        """,
        tmp_path,
    )
    # Then: PyTorch's matmul formula counted it, and Triton stayed out
    assert seen["ok"] is True
    assert seen["triton"] is False
    assert seen["tflops"] is True
    assert seen["flops"] == 2 * 64**3
