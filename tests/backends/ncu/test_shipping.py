from __future__ import annotations

import ctypes
import ctypes.util
import math
import pickle
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

from nsight_lab.backends.ncu.rebuild import compile_settings
from nsight_lab.backends.ncu.shipping import ShippingError, free_variables, ship, unship

torch = pytest.importorskip("torch")


def notebook(source: str) -> dict[str, object]:
    """A namespace like a notebook's: code defined in it belongs to ``__main__``."""
    ns: dict[str, object] = {"__name__": "__main__"}
    exec(textwrap.dedent(source), ns)  # noqa: S102
    return ns


# ------------------------------------------------------------------ free variables


def test_free_variables_reads_before_definitions():
    ns = {"x": 1, "y": 2, "helper": len, "unused": 3, "np": math}
    cell = textwrap.dedent(
        """
        y = x + 1
        z = helper(y) + np.pi
        print(len([y, z]))
        """
    )
    assert free_variables(cell, ns) == ["x", "helper", "np"]


def test_free_variables_recurse_into_functions_classes_and_comprehensions():
    ns = {"scale": 2, "offset": 1, "base": object, "items": [1, 2], "k": 5}
    cell = textwrap.dedent(
        """
        def f(v):
            return v * scale
        class C(base):
            shift = offset
        out = [f(i) + k for i in items]
        """
    )
    assert set(free_variables(cell, ns)) == {"scale", "base", "offset", "items", "k"}


def test_free_variables_leave_out_builtins_dunders_and_ipython_names():
    ns = {"__name__": "__main__", "In": [], "_": 1, "_i3": "", "get_ipython": print}
    cell = "print(__name__, In, _, _i3, get_ipython, len([]))"
    assert free_variables(cell, ns) == []


def test_free_variables_keep_a_shadowed_builtin():
    ns = {"input": 3}
    assert free_variables("y = input * 2", ns) == ["input"]


def test_free_variables_take_code_objects():
    code = compile("a = b + 1", "<cell>", "exec")
    assert free_variables(code, {"a": 0, "b": 1}) == ["b"]


# ------------------------------------------------------------------------ shipping


def test_ship_round_trip_tensor_function_module_lambda():
    ns = notebook(
        """
        import math
        def double(v):
            return v * 2
        class Box:
            def __init__(self, v):
                self.v = v
        square = lambda v: v * v
        """
    )
    ns["t"] = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    ns["g"] = torch.ones(3, requires_grad=True)
    ns["w"] = torch.nn.Parameter(torch.zeros(2))
    ns["box"] = ns["Box"](7)  # type: ignore[operator]
    names = ["t", "g", "w", "double", "Box", "box", "square", "math"]
    payload = ship(names, ns)
    assert pickle.loads(payload)["modules"] == {"math": "math"}  # noqa: S301
    out = unship(payload)
    assert set(out) == set(names)
    assert torch.equal(out["t"], ns["t"])
    assert out["t"].device.type == "cpu"
    assert out["g"].requires_grad
    assert out["g"].is_leaf
    assert isinstance(out["w"], torch.nn.Parameter)
    assert out["double"](4) == 8
    assert out["square"](5) == 25
    assert out["box"].v == 7
    assert out["math"] is math


def test_shipped_notebook_code_rebuilds_in_another_process(tmp_path):
    ns = notebook(
        """
        factor = 3
        def triple(v):
            return v * factor
        """
    )
    ns["t"] = torch.full((2,), 2.0, requires_grad=True)
    blob = tmp_path / "ns.pkl"
    blob.write_bytes(ship(["triple", "t", "math"], {**ns, "math": math}))
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from nsight_lab.backends.ncu.shipping import unship
        ns = unship(Path({str(blob)!r}).read_bytes())
        print(ns["triple"](5), ns["t"].tolist(), ns["t"].requires_grad, ns["math"].pi)
        """
    )
    out = subprocess.run(  # noqa: S603
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["15", "[2.0,", "2.0]", "True", str(math.pi)]


def test_a_function_reading_the_nsight_stand_in_ships_by_reference(
    tmp_path, monkeypatch
):
    from nsight_lab.nsight_shim import install_nsight_shim

    monkeypatch.setitem(sys.modules, "nsight", None)  # restored after the test
    install_nsight_shim(replace=True)
    ns = notebook(
        """
        import nsight
        def step(v):
            with nsight.annotate("step"):
                return v + 1
        """
    )
    blob = tmp_path / "ns.pkl"
    blob.write_bytes(ship(["step"], ns))
    # In the child, as child.run_payload does: the stand-in first, then unship; the
    # function's ``nsight`` is that stand-in, and its regions reach the tracker.
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from nsight_lab.backends.ncu.shipping import unship
        from nsight_lab.nsight_shim import install_nsight_shim
        from nsight_lab.regions import RegionTracker, listening

        class Log:
            def enter_region(self, name): pass
            def exit_region(self, name): pass

        install_nsight_shim(replace=True)
        import nsight
        step = unship(Path({str(blob)!r}).read_bytes())["step"]
        tracker = RegionTracker(Log())
        with listening(tracker):
            value = step(41)
        print(value, tracker.seen, step.__globals__["nsight"] is nsight)
        """
    )
    out = subprocess.run(  # noqa: S603
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["42", "['step']", "True"]


def test_unpicklable_variable_is_named():
    with socket.socket() as sock:
        ns = {"sock": sock, "fine": 1}
        with pytest.raises(ShippingError) as err:
            ship(["fine", "sock"], ns)
    message = str(err.value)
    assert "'sock'" in message
    assert "socket.socket" in message
    assert "create it inside the cell, or pass --backend events" in message
    assert "\n" not in message


def test_missing_variable_is_named():
    with pytest.raises(ShippingError, match="'nope'"):
        ship(["nope"], {})


def test_unship_refuses_other_formats():
    with pytest.raises(ShippingError, match="unknown format"):
        unship(pickle.dumps({"format": 999}))


@pytest.mark.gpu
def test_cuda_tensor_ships_through_the_cpu_and_comes_back_on_the_gpu():
    ns = {"x": torch.arange(4.0, device="cuda").requires_grad_()}
    out = unship(ship(["x"], ns))
    assert out["x"].device.type == "cuda"
    assert out["x"].requires_grad
    assert torch.equal(out["x"].detach().cpu(), torch.arange(4.0))


# ------------------------------------------ what cannot travel, and what is rebuilt


class CUDAGraph:
    """Stands in for ``torch.cuda.CUDAGraph``: pickling fails the same way."""

    def __reduce__(self):
        msg = "cannot pickle 'CUDAGraph' object"
        raise TypeError(msg)


def _refusal(names, ns) -> str:
    with pytest.raises(ShippingError) as err:
        ship(names, ns)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_cuda_graph_is_named_with_what_to_do():
    message = _refusal(["g"], {"g": CUDAGraph()})
    assert message.startswith("cannot ship variable 'g' (")
    assert "CUDAGraph) to the ncu child process: a CUDA graph is captured" in message
    assert "build (capture) the CUDA graph inside the cell" in message
    assert message.endswith(
        "or use --backend pm or cupti, which measure in this process"
    )


def test_torchs_own_cuda_graph_class_is_recognised():
    graph = object.__new__(torch.cuda.CUDAGraph)  # CPU torch: no CUDA context needed
    from nsight_lab.backends.ncu.unshippable import _advice

    why, todo = _advice(graph, TypeError("x"))
    assert "CUDA graph" in why
    assert "inside the cell" in todo


def test_a_graph_inside_a_notebook_function_is_found_where_it_is():
    ns = notebook(
        """
        def replay():
            graphs["step"].replay()
        """
    )
    ns["graphs"] = {"step": CUDAGraph()}
    message = _refusal(["replay"], ns)
    assert (
        "variable 'replay' to the ncu child process: function 'replay' reads global "
        "'graphs' -> ['step'] (" in message
    )
    assert "build (capture) the CUDA graph inside the cell" in message


def test_a_ctypes_pointer_in_the_analyze_kernel_call_names_the_function():
    """nsight-python's path ships an IsolatedCall; the fault is named inside it."""
    from nsight_lab.api.cell import (
        CALL,
        IsolatedCall,
    )

    ns = notebook(
        """
        def bench(n):
            return handle.value + n
        """
    )
    ns["handle"] = ctypes.c_void_p(1234)
    ns[CALL] = IsolatedCall(func=ns["bench"], names=("n",), configs=[((1,), {"n": 1})])
    message = _refusal([CALL], ns)
    assert message.startswith(
        "cannot ship the function nsight.analyze.kernel profiles to the ncu child "
        "process: .func -> function 'bench' reads global 'handle' (ctypes.c_void_p): "
        "a ctypes pointer or function pointer holds an address in this process; "
    )
    assert "or use --backend pm or cupti" in message


def test_another_unpicklable_object_keeps_the_general_advice():
    ns = {"holder": [1, {"lock": threading.Lock()}]}
    message = _refusal(["holder"], ns)
    assert "variable 'holder' to the ncu child process: [1] -> ['lock']" in message
    assert "(_thread.lock): it cannot be pickled (TypeError:" in message
    assert message.endswith("create it inside the cell, or pass --backend events")


def test_a_ctypes_library_is_loaded_again_with_its_prototypes():
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    libm.cos.restype = ctypes.c_double
    libm.cos.argtypes = [ctypes.c_double]
    out = unship(ship(["libm"], {"libm": libm}))["libm"]
    assert out is not libm
    assert out._name == libm._name  # noqa: SLF001
    assert out.cos(0.0) == 1.0  # a double back: the prototype travelled


def test_a_compiled_module_ships_as_its_module_and_is_compiled_again():
    module = torch.nn.Linear(3, 2)
    compiled = torch.compile(module, mode="reduce-overhead", fullgraph=True)
    out = unship(ship(["m"], {"m": compiled}))["m"]
    assert type(out).__name__ == "OptimizedModule"
    assert (
        compile_settings(out)
        == compile_settings(compiled)
        == {
            "fullgraph": True,
            "backend": "inductor",
            "options": {"triton.cudagraphs": True},
            "dynamic": None,
        }
    )
    assert torch.equal(out._orig_mod.weight, module.weight)  # noqa: SLF001


def test_a_compiled_notebook_function_ships_and_runs():
    ns = notebook("def f(x):\n    return x + 1\n")
    ns["cf"] = torch.compile(ns["f"], backend="eager")
    out = unship(ship(["cf"], ns))["cf"]
    assert compile_settings(out) == compile_settings(ns["cf"])
    assert torch.equal(out(torch.ones(2)), torch.full((2,), 2.0))


def test_a_compiled_module_whose_module_cannot_travel_names_the_module():
    class Holder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.graph = CUDAGraph()

        def forward(self, x):
            return x

    message = _refusal(["model"], {"model": torch.compile(Holder(), backend="eager")})
    assert "variable 'model' to the ncu child process: " in message
    assert ".graph (" in message
    assert "a CUDA graph is captured" in message


def test_internal_names_match_the_api():
    from nsight_lab.api.cell import CALL
    from nsight_lab.backends.ncu.unshippable import _INTERNAL

    assert CALL in _INTERNAL
