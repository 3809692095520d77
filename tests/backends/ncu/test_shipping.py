from __future__ import annotations

import math
import pickle
import socket
import subprocess
import sys
import textwrap

import pytest

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
    from nsight_lab.regions import install_nsight_shim

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
        from nsight_lab.regions import RegionTracker, install_nsight_shim, listening

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
