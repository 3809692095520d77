"""Ship a cell's free variables from the notebook to the isolated ncu child process.

The isolated ncu path runs the cell in a fresh Python process under Nsight Compute, so
the variables the cell reads but does not define must travel with it:

* :func:`free_variables` finds them (names the cell reads before it assigns them, that
  exist in the notebook's namespace, builtins excluded);
* :func:`ship` turns them into bytes with cloudpickle: modules go by name and are
  re-imported in the child; torch tensors (CPU or CUDA, also inside lists, dicts and
  modules) are copied to the CPU with their device and ``requires_grad`` recorded, and
  re-materialised on that device by :func:`unship`; ``torch.compile``'d modules and
  functions and ``ctypes.CDLL`` libraries are rebuilt in the child
  (:mod:`nsight_lab.backends.ncu.rebuild`); functions and classes defined in the
  notebook (``__main__``) are pickled by value; everything else by cloudpickle;
* :func:`unship` rebuilds the namespace in the child.

A value that cannot be pickled raises :class:`ShippingError` before the child starts:
one line that names the variable, the object inside it at fault, its type, why, and
what to do (:mod:`nsight_lab.backends.ncu.unshippable`). A CUDA graph is one: it is
captured in this process's CUDA context and cannot be rebuilt elsewhere.
"""

from __future__ import annotations

import builtins
import contextlib
import dis
import functools
import importlib
import io
import pickle
import re
import sys
import types
from typing import TYPE_CHECKING, Any

from nsight_lab.backends.ncu.rebuild import reduce_for_child
from nsight_lab.backends.ncu.unshippable import explain
from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

SHIPPING_FORMAT = 1
"""Version of the bytes :func:`ship` writes; :func:`unship` refuses any other."""

_LOAD_OPS = frozenset(
    {
        "LOAD_NAME",
        "LOAD_GLOBAL",
        "LOAD_FROM_DICT_OR_GLOBALS",  # 3.12+: class bodies, annotations
        "LOAD_CLASSDEREF",  # <= 3.11: class bodies
    }
)
_STORE_OPS = frozenset({"STORE_NAME", "STORE_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL"})

_IPYTHON_NAMES = frozenset(
    {"In", "Out", "get_ipython", "exit", "quit", "_ih", "_oh", "_dh", "_sh"}
)
_IPYTHON_HISTORY_RE = re.compile(r"^(_+|_i+|_i?\d+)$")

_TARGET_DEVICE: list[str | None] = [None]
"""Device override for GPU tensors while :func:`unship` runs (a one-slot stack)."""


class ShippingError(MeasurementError):
    """A variable the cell reads cannot be sent to the child process."""


# ----------------------------------------------------------------- free variables


def free_variables(
    code_or_source: types.CodeType | str, user_ns: Mapping[str, object]
) -> list[str]:
    """Return the names a cell reads before defining them that ``user_ns`` holds.

    The cell's top-level bytecode is read in order: a name whose first use is a read
    (including reads inside functions, classes and comprehensions the cell defines,
    counted where they are defined) is free; one whose first use is an assignment or
    import is the cell's own. The answer is conservative: a name that is read by a
    function defined before the cell assigns it is still shipped.

    Builtins (unless ``user_ns`` shadows them), dunder names and IPython's own
    history names (``In``, ``Out``, ``_``, ``_i3``, ...) are left out.

    Args:
        code_or_source: The cell's compiled code, or its (IPython-transformed) source.
        user_ns: The notebook namespace.

    Returns:
        The free names, in the order the cell first reads them.

    Raises:
        SyntaxError: ``code_or_source`` is source that does not compile.
    """
    code = (
        compile(code_or_source, "<nsight-lab cell>", "exec")
        if isinstance(code_or_source, str)
        else code_or_source
    )
    defined: set[str] = set()
    free: dict[str, None] = {}

    def read(name: str) -> None:
        if name not in defined:
            free.setdefault(name, None)

    for instr in dis.get_instructions(code):
        if instr.opname in _STORE_OPS and isinstance(instr.argval, str):
            if instr.argval not in free:
                defined.add(instr.argval)
        elif instr.opname in _LOAD_OPS and isinstance(instr.argval, str):
            read(instr.argval)
        elif isinstance(instr.argval, types.CodeType):
            for name in _nested_reads(instr.argval):
                read(name)
    return [name for name in free if _shippable_name(name, user_ns)]


def _nested_reads(code: types.CodeType) -> Iterator[str]:
    """Global reads of a nested code object and of every code object inside it."""
    for instr in dis.get_instructions(code):
        if instr.opname in _LOAD_OPS and isinstance(instr.argval, str):
            yield instr.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested_reads(const)


def _shippable_name(name: str, user_ns: Mapping[str, object]) -> bool:
    if name not in user_ns:
        return False
    if name.startswith("__") and name.endswith("__"):
        return False
    if name in _IPYTHON_NAMES or _IPYTHON_HISTORY_RE.match(name):
        return False
    builtin = vars(builtins).get(name, _MISSING)
    return builtin is _MISSING or user_ns[name] is not builtin


_MISSING = object()


# ------------------------------------------------------------------------ shipping


def ship(names: Sequence[str], user_ns: Mapping[str, object]) -> bytes:
    """Serialise the variables ``names`` of ``user_ns`` for the child process.

    Args:
        names: Variable names, usually from :func:`free_variables`.
        user_ns: The notebook namespace.

    Returns:
        Bytes for :func:`unship`.

    Raises:
        ShippingError: A variable is missing or cannot be pickled; the message names
            it, its type, and what to do.
    """
    modules: dict[str, str] = {}
    values: dict[str, object] = {}
    for name in names:
        if name not in user_ns:
            msg = (
                f"cannot ship variable {name!r} to the ncu child process: it is not "
                "defined in the notebook; define it, or create it inside the cell"
            )
            raise ShippingError(msg)
        value = user_ns[name]
        module_name = _importable_module_name(value)
        if module_name is not None:
            modules[name] = module_name
        else:
            values[name] = value
    try:
        blob = _dumps(values)
    except Exception:  # any pickling failure: find the culprit below
        _raise_for_culprit(values)
        raise  # pragma: no cover - _raise_for_culprit always raises here
    return pickle.dumps(
        {"format": SHIPPING_FORMAT, "modules": modules, "values": blob},
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def unship(payload: bytes, device: str | None = None) -> dict[str, Any]:
    """Rebuild the namespace :func:`ship` serialised (runs in the child).

    Args:
        payload: What :func:`ship` returned.
        device: Where tensors that lived on a GPU go; ``None`` puts each back on the
            device it was shipped from (e.g. ``"cuda:0"``). CPU tensors stay on the CPU.

    Returns:
        Variable name -> value.

    Raises:
        ShippingError: The payload is of another format, a shipped module cannot be
            imported here, or a value cannot be rebuilt (e.g. no GPU for a CUDA tensor).
    """
    outer = pickle.loads(payload)  # noqa: S301  (our own payload, written by ship())
    if not isinstance(outer, dict) or outer.get("format") != SHIPPING_FORMAT:
        msg = (
            "the shipped variables are in an unknown format; the notebook and the "
            "child process must run the same nsight-lab version"
        )
        raise ShippingError(msg)
    namespace: dict[str, Any] = {}
    for name, module_name in outer["modules"].items():
        try:
            namespace[name] = importlib.import_module(module_name)
        except ImportError as exc:  # noqa: PERF203  (stops at the first failure)
            msg = (
                f"module {module_name!r} (variable {name!r}) cannot be imported in the "
                f"ncu child process ({exc}); install it for {sys.executable}, "
                "or pass --backend events"
            )
            raise ShippingError(msg) from exc
    with _target_device(device):
        try:
            values = pickle.loads(outer["values"])  # noqa: S301  (see above)
        except Exception as exc:
            msg = (
                "the shipped variables could not be rebuilt in the ncu child process "
                f"({type(exc).__name__}: {exc}); create them inside the cell, "
                "or pass --backend events"
            )
            raise ShippingError(msg) from exc
    namespace.update(values)
    return namespace


def _importable_module_name(value: object) -> str | None:
    """The name to re-import ``value`` by, if it is a module the child can import."""
    if not isinstance(value, types.ModuleType):
        return None
    name = value.__name__
    if sys.modules.get(name) is not value:
        return None
    if getattr(value, "__nsight_lab_shim__", False):
        return name  # our ``import nsight`` stand-in: the child installs its own
    return name if getattr(value, "__spec__", None) is not None else None


def _raise_for_culprit(values: Mapping[str, object]) -> None:
    for name, value in values.items():
        try:
            _dumps(value)
        except Exception as exc:  # noqa: PERF203  (stops at the first failure)
            raise ShippingError(explain(name, value, exc, _dumps)) from exc
    msg = (
        "the cell's variables cannot be pickled together (each one alone can); "
        "create them inside the cell, or pass --backend events"
    )
    raise ShippingError(msg)


def _dumps(obj: object) -> bytes:
    buffer = io.BytesIO()
    _pickler_class()(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


@functools.cache
def _pickler_class() -> type[pickle.Pickler]:
    """A cloudpickle Pickler: tensors via the CPU, some objects rebuilt in the child."""
    import cloudpickle  # noqa: PLC0415  (optional: the ncu extra)

    base: type[pickle.Pickler] = cloudpickle.Pickler

    class TensorShippingPickler(base):  # type: ignore[valid-type,misc]
        def reducer_override(self, obj: object) -> object:
            reduced = _reduce_tensor(obj)
            if reduced is None:
                reduced = reduce_for_child(obj)
            if reduced is not None:
                return reduced
            return super().reducer_override(obj)

    return TensorShippingPickler


def _reduce_tensor(obj: object) -> tuple[object, tuple[object, ...]] | None:
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return None
    is_parameter = isinstance(obj, torch.nn.Parameter)
    if type(obj) not in {torch.Tensor, torch.nn.Parameter}:
        return None  # subclasses pickle their own way
    if obj.device.type == "cpu" and not obj.requires_grad and not is_parameter:
        return None  # torch's own pickling keeps a plain CPU tensor as it is
    cpu = obj.detach().to("cpu")
    return _rebuild_tensor, (
        cpu,
        str(obj.device),
        bool(obj.requires_grad),
        is_parameter,
    )


def _rebuild_tensor(
    cpu: Any,  # noqa: ANN401  (a torch.Tensor; torch is optional)
    device: str,
    requires_grad: bool,  # noqa: FBT001  (positional: pickled reduce arguments)
    is_parameter: bool,  # noqa: FBT001
) -> Any:  # noqa: ANN401
    """Put a shipped tensor back on its device (called while unpickling)."""
    import torch  # noqa: PLC0415  (optional and heavy: PyTorch)

    target = device
    if device != "cpu" and _TARGET_DEVICE[-1] is not None:
        target = _TARGET_DEVICE[-1]
    tensor = cpu.to(target)
    if is_parameter:
        return torch.nn.Parameter(tensor, requires_grad=requires_grad)
    if requires_grad:
        tensor.requires_grad_(True)  # noqa: FBT003
    return tensor


@contextlib.contextmanager
def _target_device(device: str | None) -> Iterator[None]:
    _TARGET_DEVICE.append(device)
    try:
        yield
    finally:
        _TARGET_DEVICE.pop()
