"""FLOP formulas for the aten ops a transformer runs that PyTorch's table misses.

Issue 30: the work model counted 0 FLOPs for layer norm (``TFLOP/s 0`` where ncu read
11.86 TFLOP/s), 1 per element for GELU, and nothing for the CPU's attention op; a
reader could not tell a modelled 0 from an op the model did not know.

**Convention** (so a reviewer can check every count by hand). FLOPs are arithmetic
operations as Nsight Compute counts them: one fused multiply-add is 2 FLOPs, an
add, multiply, divide, compare or one transcendental (``exp``, ``erf``, ``tanh``)
1. Matrix products are ``2 * M * N * K`` (PyTorch's ``torch.utils.flop_counter``:
``mm``, ``addmm``, ``bmm``, ``baddbmm``, convolutions; a bias or ``beta * C`` add is
not counted, as there). Elementwise and normalising ops are counted per element
with the per-element operation counts below, stated operation by operation (the
fvcore style of per-element estimates, with an FMA as 2); work done once per row
(a ``rsqrt``, a divide by the row length) is left out, being ``1/row`` of the rest.
Attention counts its two matrix products only, ``2 * B * H * L * S * (E + Ev)``
(``4 * B * H * L * S * E`` when ``E == Ev``), halved when causal, and its backward
2.5 times that: the FlashAttention benchmark's ``flops()`` convention, which
PyTorch's formulas share but for the causal half. Ops that only move or make data
(copies, concatenation, indexing, fills, random draws) are 0 FLOPs by design
(:data:`DATA_MOVEMENT`); any other op without a formula is *not modelled*, and
the work model records its name so the views can say which one it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "ATTENTION_BACKWARD_FACTOR",
    "DATA_MOVEMENT",
    "GELU_BACKWARD_PER_ELEMENT",
    "GELU_PER_ELEMENT",
    "LAYER_NORM_BACKWARD_PER_ELEMENT",
    "LAYER_NORM_PER_ELEMENT",
    "SOFTMAX_BACKWARD_PER_ELEMENT",
    "Call",
    "Formula",
    "attention_flops",
    "formula_flops",
    "is_causal",
]

LAYER_NORM_PER_ELEMENT = 5
"""Sum for the mean (1), subtract it (1), square and sum for the variance (an FMA,
2), scale by ``1/sigma`` (1); the affine weight adds 1 and the bias 1 more."""
LAYER_NORM_BACKWARD_PER_ELEMENT = 9
"""Grad input, ``rstd * (g - mean(g) - x_hat * mean(g * x_hat))`` with ``g = dy``:
``x_hat`` again (2), the two row sums (1 and an FMA, 2), subtract, multiply,
subtract, scale (4); ``g = dy * weight`` adds 1. Grad weight ``sum(dy * x_hat)``
adds an FMA (2), grad bias ``sum(dy)`` 1."""
SOFTMAX_BACKWARD_PER_ELEMENT = 4
"""``y * (dy - sum(dy * y))``: the dot product (an FMA, 2), subtract (1), multiply
(1); log-softmax's ``dy - exp(y) * sum(dy)`` is 4 too."""
GELU_PER_ELEMENT = {"none": 5, "tanh": 9}
"""``0.5 * x * (1 + erf(x / sqrt 2))``: scale, erf, add, two multiplies (5);
the tanh form ``0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3)))``: cube (2),
multiply, add, scale, tanh, add, two multiplies (9). As PyTorch's kernels compute
them (``aten/src/ATen/native/cpu/Activation.cpp``)."""
GELU_BACKWARD_PER_ELEMENT = {"none": 11, "tanh": 18}
"""``dy * (cdf + x * pdf)``: the cdf (4), the pdf ``exp(-x**2 / 2) * c`` (4),
multiply, add, multiply (3) = 11; the tanh form's 18 operations as PyTorch's
kernel writes them."""
NATIVE_DROPOUT_PER_ELEMENT = 2
"""The mask multiply and the ``1 / (1 - p)`` scale; drawing the mask is not
arithmetic on the data."""
ATTENTION_BACKWARD_FACTOR = 2.5
"""Backward attention: the scores again and four more products (dV, dP, dQ, dK),
five matrix products to the forward's two."""

DATA_MOVEMENT = frozenset(
    {
        "clone", "copy", "_to_copy", "_copy_from", "_copy_from_and_resize", "cat",
        "stack", "index_select", "embedding", "gather", "index", "fill", "zero",
        "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros",
        "new_ones", "new_full", "scalar_tensor", "arange", "constant_pad_nd",
        "slice_scatter", "select_scatter", "as_strided_scatter", "repeat", "flip",
        "roll", "tril", "triu", "_local_scalar_dense", "lift_fresh",
        "lift_fresh_copy", "set", "resize", "uniform", "normal", "bernoulli", "rand",
        "randn", "randint", "random", "exponential", "rand_like", "randn_like",
        "randperm", "masked_fill", "where",
    }
)  # fmt: skip
"""Ops that move, select or make data: 0 FLOPs by design, never "not modelled"."""


class Call(NamedTuple):
    """One call of an aten op: the op overload and its arguments."""

    func: Any  # a torch op overload (torch is optional)
    args: Sequence[Any]
    kwargs: dict[str, Any]

    def argument(self, name: str) -> Any:  # noqa: ANN401  (any argument's value)
        """The argument ``name``, positional or keyword, else its schema default."""
        for i, argument in enumerate(self.func._schema.arguments):  # noqa: SLF001
            if argument.name == name:
                if i < len(self.args) and not argument.kwarg_only:
                    return self.args[i]
                return self.kwargs.get(name, argument.default_value)
        return None

    @property
    def elements(self) -> int:
        """Elements of the first argument (0 when it is not a tensor)."""
        numel = getattr(self.args[0], "numel", None) if self.args else None
        return int(numel()) if callable(numel) else 0


Formula = Callable[[Call], float]
"""FLOPs of one call."""


def is_causal(call: Call) -> bool:
    """Whether an attention call masks causally (its ``is_causal`` argument).

    Raises:
        Nothing.
    """
    return bool(call.argument("is_causal"))


def _layer_norm(call: Call) -> float:
    weight = call.argument("weight") is not None
    bias = call.argument("bias") is not None
    return float(call.elements * (LAYER_NORM_PER_ELEMENT + weight + bias))


def _layer_norm_backward(call: Call) -> float:
    weight = call.argument("weight") is not None
    bias = call.argument("bias") is not None
    mask = list(call.argument("output_mask") or (True, True, True))
    per = 0
    if mask[0]:
        per += LAYER_NORM_BACKWARD_PER_ELEMENT + weight
    if mask[1] and weight:
        per += 2
    if mask[2] and bias:
        per += 1
    return float(call.elements * per)  # grad_out: the input's elements


def _gelu(per: Mapping[str, int]) -> Formula:
    def count(call: Call) -> float:
        return float(call.elements * per[call.argument("approximate") or "none"])

    return count


def _per_element(k: int) -> Formula:
    def count(call: Call) -> float:
        return float(k * call.elements)

    return count


def attention_flops(
    query: Sequence[int],
    key: Sequence[int],
    value: Sequence[int],
    *,
    causal: bool = False,
    backward: bool = False,
) -> float:
    """FLOPs of attention over 4-D ``[B, H, L, E]`` query, key and value shapes.

    ``2 * B * H * L * S * (E + Ev)``: the scores ``Q @ K^T`` and ``P @ V``, each
    ``2 * M * N * K``; key and value may have fewer heads (grouped-query attention:
    the query's heads are counted). Halved when ``causal``; times
    :data:`ATTENTION_BACKWARD_FACTOR` for the backward.

    Raises:
        Nothing.
    """
    *batch, heads, length, e = query
    s, ev = key[-2], value[-1]
    flops = 2.0 * math.prod(batch) * heads * length * s * (e + ev)
    if causal:
        flops /= 2
    return flops * (ATTENTION_BACKWARD_FACTOR if backward else 1.0)


def _attention(*, backward: bool) -> Formula:
    def count(call: Call) -> float:
        q, k, v = call.args[1:4] if backward else call.args[0:3]
        return attention_flops(
            q.shape, k.shape, v.shape, causal=is_causal(call), backward=backward
        )

    return count


_SDPA = (
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_attention_math",
    "_scaled_dot_product_fused_attention_overrideable",
)
_FORMULAS: dict[str, Formula] = {
    "native_layer_norm": _layer_norm,
    "native_layer_norm_backward": _layer_norm_backward,
    "gelu": _gelu(GELU_PER_ELEMENT),
    "gelu_backward": _gelu(GELU_BACKWARD_PER_ELEMENT),
    "_softmax_backward_data": _per_element(SOFTMAX_BACKWARD_PER_ELEMENT),
    "_log_softmax_backward_data": _per_element(SOFTMAX_BACKWARD_PER_ELEMENT),
    "native_dropout": _per_element(NATIVE_DROPOUT_PER_ELEMENT),
    **{name: _attention(backward=False) for name in _SDPA},
    **{f"{name}_backward": _attention(backward=True) for name in _SDPA},
}


def formula_flops(name: str, call: Call) -> float | None:
    """FLOPs of one call of op ``name`` by this module's formulas; None: none here.

    Raises:
        Nothing that a well-formed call of the op would not: the shapes are the
        op's own.
    """
    formula = _FORMULAS.get(name)
    return None if formula is None else formula(call)
