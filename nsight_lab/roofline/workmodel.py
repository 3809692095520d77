"""Modelled work per region: FLOPs and compulsory DRAM bytes of the PyTorch ops it runs.

One extra, untimed call of the cell body runs under a ``TorchDispatchMode`` that sees
every aten op. FLOPs come from PyTorch's own ``torch.utils.flop_counter`` formulas
(matmul, convolution), :mod:`.opflops`'s (layer norm, GELU, softmax backward,
attention with its causal half: the convention is stated there), one FLOP per
output element of pointwise ops (two for fused multiply-add ops such as
``addcmul``), five per element of softmax and one per input element of reductions.
Ops that only move data count 0; any other op is *not modelled*: its calls are
counted under ``model__unmodelled__aten.<name>`` (:data:`UNMODELLED_PREFIX`), so the
views can name it where TFLOP/s is not shown. Bytes are *compulsory* traffic:
each op reads its tensor inputs once and writes its outputs once, so an unfused chain
pays for every intermediate and a fused op does not. Views move nothing. Beside them,
:mod:`.boundary` gives what one fused kernel of the region's ops would move
(``model__bytes_fused``) and what it reads of the region before
(``model__bytes_prev``). Values are labelled ``model__*`` because they are a model,
not a counter reading.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from nsight_lab.regions import CELL_REGION, RegionTracker, listening
from nsight_lab.roofline.boundary import BoundaryBytes
from nsight_lab.roofline.opflops import DATA_MOVEMENT, Call, formula_flops, is_causal

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from nsight_lab.contract.collector import WorkModel

DTYPE_PREFIX = "model__flops_dtype_"
"""Modelled FLOPs split by dtype class (``model__flops_dtype_bf16``...)."""
UNMODELLED_PREFIX = "model__unmodelled__"
"""Calls per run of an op the work model has no FLOP count for, by its name
(``model__unmodelled__aten.native_layer_norm``), so a note can name it."""
SOFTMAX = frozenset({"_softmax", "_log_softmax", "softmax", "log_softmax"})
SOFTMAX_FLOPS_PER_ELEMENT = 5
"""Row max, subtract, exp, row sum, divide: the algorithm's operations per element
(Nsight Compute counts several times more, as exp expands into FMAs on the GPU)."""
FMA_LIKE = frozenset({"addcmul", "addcdiv", "lerp", "fma"})
REDUCTIONS = frozenset(
    {"sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "linalg_vector_norm"}
)
"""Reductions: one FLOP per input element."""
NO_TRAFFIC = frozenset(
    {
        "empty", "empty_like", "empty_strided", "new_empty", "detach", "alias",
        "_unsafe_view",  # a view PyTorch does not tag as one (after a 3-D matmul)
    }
)  # fmt: skip


class _RegionCursor:
    """Listener that only remembers which region is open (no timing)."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.seen = False
        self.names: list[str] = []
        self.boundary = BoundaryBytes()

    def enter_region(self, name: str) -> None:
        self.current = name
        self.seen = True
        self.names.append(name)
        self.boundary.enter(name)

    def exit_region(self, name: str) -> None:
        self.current = None
        self.boundary.exit(name)


def _nbytes(value: Any) -> int:  # noqa: ANN401
    import torch  # noqa: PLC0415  (torch is optional)

    if isinstance(value, torch.Tensor):
        return int(value.numel() * value.element_size())
    return 0


def _tensors(tree: Any) -> list[Any]:  # noqa: ANN401
    import torch  # noqa: PLC0415  (torch is optional)
    from torch.utils._pytree import tree_flatten  # noqa: PLC0415  (torch is optional)

    leaves, _ = tree_flatten(tree)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def _skip_dynamo(cls: type) -> bool:  # noqa: ARG001  (a classmethod of the counter)
    """Whether the op counter's ``__torch_dispatch__`` is wrapped to skip Dynamo.

    PyTorch wraps every dispatch mode's ``__torch_dispatch__`` in
    ``torch._disable_dynamo`` (when its class is made), and that wrapper imports
    ``torch._dynamo`` on its first call: sympy, FSDP, the triton kernel wrapper,
    1-1.6 s on a 2-core CPU and 5 s on the H200 (``benchmarks/first_cell.py``), all on
    the first cell's path. The wrapper only matters to code that ``torch.compile``
    runs, so the counter goes without it while Dynamo is not even imported (the class
    is made anew for each count). If the counted cell itself imports Dynamo (its first
    ``torch.compile``), Dynamo may trace the counter's frames in that one count; the
    counts stay right (``tests/roofline/test_workmodel.py``).
    """
    return "torch._dynamo" in sys.modules


def _account(
    func: Any,  # noqa: ANN401  (a torch op overload)
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    out: Any,  # noqa: ANN401
    work: dict[str, float],  # a defaultdict(float)
) -> None:
    """Add one op's modelled FLOPs (per dtype too) and bytes to its region's work."""
    import torch  # noqa: PLC0415  (torch is optional)
    from torch.utils.flop_counter import flop_registry  # noqa: PLC0415  (torch is optional)

    name = func.overloadpacket.__name__.rstrip("_")
    work["model__flops"] += 0.0  # every region has a FLOP count, zero included
    packet = func.overloadpacket
    outputs = _tensors(out)
    call = Call(func, args, kwargs)
    flops = formula_flops(name, call)
    if name in DATA_MOVEMENT:
        flops = 0.0
    elif flops is not None:
        pass
    elif packet in flop_registry:
        flops = float(flop_registry[packet](*args, **kwargs, out_val=out))
        if is_causal(call):  # PyTorch counts the masked half too
            flops /= 2
    elif torch.Tag.pointwise in func.tags and outputs:
        per_element = 2 if name in FMA_LIKE else 1
        flops = float(per_element * outputs[0].numel())
    elif name in SOFTMAX and outputs:
        flops = float(SOFTMAX_FLOPS_PER_ELEMENT * outputs[0].numel())
    elif name in REDUCTIONS and args and isinstance(args[0], torch.Tensor):
        flops = float(args[0].numel())
    elif outputs:  # arithmetic the model has no formula for: named, not guessed
        work[f"{UNMODELLED_PREFIX}aten.{name}"] += 1.0
    flops = flops or 0.0
    work["model__flops"] += flops
    if flops and outputs:
        work[f"{DTYPE_PREFIX}{_dtype_key(outputs[0].dtype)}"] += flops
    inputs = {id(t): t for t in _tensors((args, kwargs))}
    work["model__bytes_read"] += float(sum(_nbytes(t) for t in inputs.values()))
    work["model__bytes_written"] += float(sum(_nbytes(t) for t in outputs))


def count_work(call: Callable[[], None]) -> WorkModel:
    """Run ``call`` once under the op counter; return modelled work per region.

    Ops outside any region are attributed to the whole cell only when the cell marks no
    regions (they are set-up code otherwise).
    """
    from torch.utils._python_dispatch import (  # noqa: PLC0415  (torch is optional)
        TorchDispatchMode,
    )

    cursor = _RegionCursor()
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    class _Counter(TorchDispatchMode):
        _should_skip_dynamo: classmethod[Any, [], bool] = classmethod(_skip_dynamo)

        def __torch_dispatch__(
            self,
            func: Any,  # noqa: ANN401
            types: Any,  # noqa: ANN401
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:  # noqa: ANN401
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.overloadpacket.__name__.rstrip("_")
            if getattr(func, "is_view", False) or name in NO_TRAFFIC:
                return out
            region = cursor.current or ("" if cursor.seen else CELL_REGION)
            if not region:
                return out
            _account(func, args, kwargs, out, totals[region])
            cursor.boundary.op(_tensors((args, kwargs)), _tensors(out))
            return out

    # The region rules hold in this pass too (a nested region raises here, as in
    # every run): the tracker checks them, then moves the cursor.
    # torch's TorchDispatchMode.__init__ is unannotated.
    with listening(RegionTracker(cursor)), _Counter():  # type: ignore[no-untyped-call]
        call()
    if cursor.seen:
        totals.pop(CELL_REGION, None)
    keys = ("model__flops", "model__bytes_read", "model__bytes_written")
    # A region that ran no op still did zero work.
    regions = cursor.names or [CELL_REGION]
    counted = set(totals)  # read before the lookups below add every region
    return {
        r: {
            **{k: float(totals[r][k]) for k in keys},
            **{
                k: v
                for k, v in totals[r].items()
                if k.startswith((DTYPE_PREFIX, UNMODELLED_PREFIX))
            },
            # Fusion headroom: only for a region that ran an op the model counted.
            **(cursor.boundary.results.get(r, {}) if r in counted else {}),
        }
        for r in dict.fromkeys(regions)
    }


def _dtype_key(dtype: Any) -> str:  # noqa: ANN401  (a torch.dtype)
    """Roofline dtype class of a torch dtype's FLOPs (TF32 when PyTorch allows it)."""
    import torch  # noqa: PLC0415  (torch is optional)

    if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return {
        torch.float64: "fp64",
        torch.float16: "fp16",
        torch.bfloat16: "bf16",
    }.get(dtype, "fp8" if "float8" in str(dtype) else "fp32")


def dominant_dtype(metrics: Mapping[str, float]) -> str | None:
    """The dtype class that carried most of a region's modelled FLOPs, if any."""
    shares = {
        k.removeprefix(DTYPE_PREFIX): v
        for k, v in metrics.items()
        if k.startswith(DTYPE_PREFIX)
    }
    if not shares or max(shares.values()) <= 0:
        return None
    return max(shares, key=lambda k: shares[k])
