"""The real work of issue 28, as one object a cell (or a plain script) drives.

Each step is one region of ``benchmarks/realwork.py``'s cell: a bf16 transformer
training step (forward, loss, backward -- its kernels launched by autograd's engine
threads -- and an AdamW step), a ``torch.compile``d MLP forward (Triton kernels), a
CUDA-graph replay of an MLP forward, a matmul on a side stream joined back, and
decode steps of a small model (many tiny kernels, bound by their launches).

Built once per process (``work()``), inside the cell that uses it, so the ncu
backend's child builds its own instead of being shipped a graph or a compiled module.
"""

from __future__ import annotations

from typing import Any

STEPS = (
    "forward",
    "loss",
    "backward",
    "optimizer",
    "compiled_forward",
    "graph_replay",
    "side_stream",
    "decode",
)
"""The regions, in the order the cell runs them."""

_WORK: list[Any] = []


class RealWork:
    """The models, inputs and state every step needs (CUDA, bf16 where it trains)."""

    def __init__(self, *, small: bool = False) -> None:
        """Build the models and warm every path once (compile, capture)."""
        import torch
        from torch import nn

        torch.manual_seed(0)
        dev = "cuda"
        d, layers, batch, seq = (256, 2, 2, 64) if small else (1024, 4, 8, 512)
        layer = nn.TransformerEncoderLayer(
            d, nhead=16 if not small else 4, dim_feedforward=4 * d, batch_first=True
        )
        self.model = nn.TransformerEncoder(layer, layers).to(dev, torch.bfloat16)
        self.x = torch.randn(batch, seq, d, device=dev, dtype=torch.bfloat16)
        self.target = torch.randn_like(self.x)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, foreach=True)
        self.out: Any = None
        self.loss_value: Any = None

        width = 2048 if not small else 256
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width),
            nn.GELU(),
            nn.Linear(4 * width, width),
            nn.LayerNorm(width),
        ).to(dev, torch.bfloat16)
        self.mlp_in = torch.randn(4096, width, device=dev, dtype=torch.bfloat16)
        self.compiled = torch.compile(self.mlp)
        with torch.no_grad():
            self.compiled(self.mlp_in)

        self.static_in = self.mlp_in.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):
                self.mlp(self.static_in)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.no_grad():
            self.static_out = self.mlp(self.static_in)

        n = 4096 if not small else 256
        self.a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        self.side = torch.cuda.Stream()

        self.tiny = nn.Sequential(
            nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)
        ).to(dev)
        self.token = torch.randn(1, 256, device=dev)
        self.torch = torch
        for step in STEPS:
            getattr(self, step)()
        torch.cuda.synchronize()

    def forward(self) -> None:
        """The transformer's forward pass."""
        self.out = self.model(self.x)

    def loss(self) -> None:
        """MSE against a fixed target."""
        self.loss_value = self.torch.nn.functional.mse_loss(self.out, self.target)

    def backward(self) -> None:
        """``loss.backward()``: autograd's engine threads launch its kernels."""
        self.loss_value.backward()

    def optimizer(self) -> None:
        """AdamW (foreach), then the gradients are dropped."""
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def compiled_forward(self) -> None:
        """The compiled MLP (inductor's Triton kernels)."""
        with self.torch.no_grad():
            self.compiled(self.mlp_in)

    def graph_replay(self) -> None:
        """The MLP forward captured in a CUDA graph, replayed."""
        self.graph.replay()

    def side_stream(self) -> None:
        """A matmul on a side stream, joined back to the current one."""
        torch = self.torch
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            self.a @ self.a
        torch.cuda.current_stream().wait_stream(self.side)

    def decode(self) -> None:
        """32 decode steps of a tiny model: ~100 small kernels, launch-bound."""
        with self.torch.no_grad():
            t = self.token
            for _ in range(32):
                t = self.tiny(t)


def work(*, small: bool = False) -> RealWork:
    """The process's one :class:`RealWork` (built on the first call)."""
    if not _WORK:
        _WORK.append(RealWork(small=small))
    return _WORK[0]
