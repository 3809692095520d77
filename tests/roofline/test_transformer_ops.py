"""Issue 30: the work model counts the ops a transformer runs, or names the rest.

Real PyTorch modules on the CPU, each against a count worked out by hand from the
convention in ``nsight_lab/roofline/opflops.py`` (an FMA is 2 FLOPs; matrix products
``2*M*N*K``; per-element counts stated there). At ``0ab1fce`` layer norm counted 0,
GELU 1 per element, the CPU's attention op 0, a ``clone`` 1 per element, and an op
without a formula was not named anywhere.
"""

from __future__ import annotations

import pytest

from nsight_lab.contract.records import RunRecord
from nsight_lab.regions import annotate
from nsight_lab.roofline.workmodel import count_work

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

B, L, E, H = 2, 8, 16, 4
"""Batch, sequence length, model width, heads: small enough to count by hand."""
T = B * L
"""Tokens: the rows of every linear layer."""


def _flops(body: object) -> float:
    """Modelled FLOPs of ``body()`` run in one region."""

    def cell() -> None:
        with annotate("r"):
            body()  # type: ignore[operator]

    return count_work(cell)["r"]["model__flops"]


def test_layer_norm_forward_and_backward() -> None:
    x = torch.randn(B, L, E)
    # 5 per element (mean 1, subtract 1, square-and-sum FMA 2, scale 1), +1 weight,
    # +1 bias
    assert _flops(lambda: nn.LayerNorm(E)(x)) == 7 * T * E
    plain = nn.LayerNorm(E, elementwise_affine=False)
    assert _flops(lambda: plain(x)) == 5 * T * E
    norm = nn.LayerNorm(E)
    leaf = x.clone().requires_grad_()
    y = norm(leaf)
    grad = torch.ones_like(y)
    # grad input 9 + 1 (the weight's multiply), grad weight an FMA (2), grad bias 1
    assert _flops(lambda: y.backward(grad)) == (10 + 2 + 1) * T * E


def test_gelu_exact_and_tanh() -> None:
    x = torch.randn(B, L, 4 * E)
    n = x.numel()
    assert _flops(lambda: nn.GELU()(x)) == 5 * n  # scale, erf, add, 2 multiplies
    assert _flops(lambda: nn.GELU(approximate="tanh")(x)) == 9 * n


def test_softmax_forward_and_backward() -> None:
    s = torch.randn(B, H, L, L, requires_grad=True)
    n = s.numel()
    assert _flops(lambda: F.softmax(s, dim=-1)) == 5 * n
    y = F.softmax(s, dim=-1)
    grad = torch.ones_like(y)
    # y * (dy - sum(dy * y)): FMA 2, subtract 1, multiply 1
    assert _flops(lambda: y.backward(grad)) == 4 * n


def test_scaled_dot_product_attention_counts_two_matmuls_causal_halves() -> None:
    # Ev == E: PyTorch's CPU op takes it whole (other shapes decompose into bmm)
    d, s_len, dv = E // H, 2 * L, E // H
    q = torch.randn(B, H, L, d)
    k = torch.randn(B, H, s_len, d)
    v = torch.randn(B, H, s_len, dv)
    # Q @ K^T: 2*L*S*E, P @ V: 2*L*S*Ev, per batch and head
    full = 2 * B * H * L * s_len * (d + dv)
    assert _flops(lambda: F.scaled_dot_product_attention(q, k, v)) == full
    same = torch.randn(B, H, L, d)
    causal = lambda: F.scaled_dot_product_attention(same, same, same, is_causal=True)  # noqa: E731
    assert _flops(causal) == 4 * B * H * L * L * d / 2


def test_attention_backward_is_two_and_a_half_forwards() -> None:
    d = E // H
    q = torch.randn(B, H, L, d, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q.detach(), q.detach())
    grad = torch.ones_like(out)
    assert _flops(lambda: out.backward(grad)) == 2.5 * 4 * B * H * L * L * d


def test_matrix_products_and_a_copy() -> None:
    a, b = torch.randn(3, 5, 7), torch.randn(3, 7, 4)
    c = torch.randn(3, 5, 4)
    assert _flops(lambda: torch.bmm(a, b)) == 2 * 3 * 5 * 7 * 4
    assert _flops(lambda: torch.baddbmm(c, a, b)) == 2 * 3 * 5 * 7 * 4
    m, w, bias = torch.randn(5, 7), torch.randn(7, 4), torch.randn(4)
    assert _flops(lambda: torch.addmm(bias, m, w)) == 2 * 5 * 7 * 4
    x = torch.randn(B, L, E)
    linear = nn.Linear(E, 3 * E)
    # 3-D input: one addmm over T rows (its bias add is not counted)
    assert _flops(lambda: linear(x)) == 2 * T * E * 3 * E
    # split heads: a copy moves data, no arithmetic
    heads = lambda: x.view(B, L, H, E // H).transpose(1, 2).contiguous()  # noqa: E731
    assert _flops(heads) == 0


def test_transformer_encoder_layer_forward() -> None:
    ff = 32
    layer = nn.TransformerEncoderLayer(E, H, ff, dropout=0.0, batch_first=True)
    x = torch.randn(B, L, E)
    expected = (
        2 * T * E * 3 * E + T * 3 * E  # in_proj: matmul + bias
        + 4 * B * H * L * L * (E // H)  # attention's two products
        + 2 * T * E * E  # out_proj (addmm: the bias add is not counted)
        + T * E  # residual add
        + 7 * T * E  # norm1
        + 2 * T * E * ff  # linear1 (addmm)
        + T * ff  # relu
        + 2 * T * ff * E  # linear2 (addmm)
        + T * E  # residual add
        + 7 * T * E  # norm2
    )  # fmt: skip
    assert _flops(lambda: layer(x)) == expected == 79_104


def test_an_op_without_a_formula_is_named_in_the_note() -> None:
    # Given: inference through PyTorch's fused encoder-layer op (its fast path)
    layer = nn.TransformerEncoderLayer(E, H, 32, batch_first=True).eval()
    x = torch.randn(B, L, E)

    def cell() -> None:
        with annotate("encoder"), torch.no_grad():
            layer(x)

    from nsight_lab.analysis.validity import check_region
    from nsight_lab.roofline.devices import Peaks
    from nsight_lab.roofline.placement import place_records

    work = count_work(cell)["encoder"]
    # Then: no FLOPs counted, and the op is named
    assert work["model__flops"] == 0
    assert work["model__unmodelled__aten._transformer_encoder_layer_fwd"] == 1
    record = RunRecord(
        session_id=1,
        annotation="encoder",
        config={},
        config_index=0,
        run_index=0,
        duration_ns=1e5,
        backend="cpu",
        metrics=work,
    )
    peaks = Peaks("cpu", {"fp32": 1e12}, 1e11, "test")
    placement = place_records([record], peaks)[0]
    note = check_region([record], placement).unmodelled
    assert note.startswith(
        "TFLOP/s not shown: the work model does not count "
        "aten._transformer_encoder_layer_fwd"
    ), note
