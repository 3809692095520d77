"""Bytes a rank moves in its collectives, modelled from each op's arguments.

Eager ``torch.distributed`` collectives reach the dispatcher as ``c10d`` ops
(``c10d.allreduce_``, ``c10d.allgather_``, ``c10d._allgather_base_``,
``c10d.reduce_scatter_``, ``c10d._reduce_scatter_base_``, ``c10d.broadcast_``,
``c10d.reduce_``, ``c10d.alltoall_base_``), so a ``TorchDispatchMode``
(:func:`counting`) sees every one a region calls with its tensors and its process
group. :func:`modelled_bytes` turns one call into the bytes *one rank sends* under
NCCL's ring algorithms, the quantity nccl-tests divides by time for its "bus
bandwidth", for a group of ``N`` ranks and a payload of ``S`` bytes:

===================  ===========================  ==========================
collective           ``S``                        bytes one rank sends
===================  ===========================  ==========================
all-reduce           the tensor                   ``2 (N - 1) / N * S``
all-gather           the gathered output          ``(N - 1) / N * S``
reduce-scatter       the input before scattering  ``(N - 1) / N * S``
all-to-all           the input                    ``(N - 1) / N * S``
broadcast, reduce    the tensor                   ``S``
===================  ===========================  ==========================

(an all-reduce is a reduce-scatter then an all-gather: each rank sends ``(N-1)/N * S``
twice). A group of one rank sends nothing. This is a model of the algorithm, not a
measurement: NCCL may pick a tree or NVLS algorithm, and point-to-point ``send``/
``recv`` are not counted.

The measured counterpart is NVLink traffic from the GPU's own counters: the ``pm``
backend samples ``nvlrx__bytes.sum``/``nvltx__bytes.sum`` per interval beside the
kernels, which would put each rank's measured NVLink bytes (and their timeline) next
to this model; it needs CUPTI PM sampling on each GPU, so ``--ranks`` takes the
``cpu`` and ``events`` backends only and the region metric here is the modelled one
(:data:`~nsight_lab.distributed.metrics.COMM_BYTES`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

RING_FACTOR: dict[str, Callable[[int], float]] = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda _n: 1.0,
    "reduce": lambda _n: 1.0,
}
"""Collective -> the factor on its payload ``S`` that gives the bytes one rank sends."""

_OPS: dict[str, tuple[str, str]] = {
    # c10d op name -> (collective, where its payload S is: "first" tensor(s) or "out")
    "allreduce_": ("allreduce", "first"),
    "allreduce_coalesced_": ("allreduce", "first"),
    "allgather_": ("allgather", "out"),
    "_allgather_base_": ("allgather", "out"),
    "allgather_into_tensor_coalesced_": ("allgather", "out"),
    "reduce_scatter_": ("reduce_scatter", "in"),
    "_reduce_scatter_base_": ("reduce_scatter", "in"),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", "in"),
    "alltoall_base_": ("alltoall", "in"),
    "broadcast_": ("broadcast", "first"),
    "reduce_": ("reduce", "first"),
}


def modelled_bytes(collective: str, payload_bytes: float, ranks: int) -> float:
    """Bytes one rank sends in ``collective`` of ``payload_bytes`` over ``ranks``.

    Args:
        collective: A key of :data:`RING_FACTOR` (``allreduce``, ``allgather``, ...).
        payload_bytes: ``S`` of the table in this module's docstring.
        ranks: The process group's size ``N``.

    Returns:
        The ring model's bytes sent per rank; 0 for a group of one.

    Raises:
        KeyError: ``collective`` is not modelled.
    """
    if ranks <= 1:
        return 0.0
    return RING_FACTOR[collective](ranks) * float(payload_bytes)


@dataclass
class Traffic:
    """What one rank's collectives moved, per region (filled by :func:`counting`)."""

    bytes_sent: dict[str, float] = field(default_factory=dict)
    """Region -> modelled bytes this rank sent."""
    calls: dict[str, int] = field(default_factory=dict)
    """Region -> collectives this rank called."""

    def add(self, region: str, sent: float) -> None:
        """Count one collective of ``sent`` bytes in ``region``."""
        self.bytes_sent[region] = self.bytes_sent.get(region, 0.0) + sent
        self.calls[region] = self.calls.get(region, 0) + 1


def _tensor_bytes(value: object) -> int:
    """Bytes of the tensors in ``value`` (a tensor, or nested lists of them)."""
    import torch  # noqa: PLC0415  (torch is optional)

    if isinstance(value, torch.Tensor):
        return int(value.numel()) * int(value.element_size())
    if isinstance(value, list | tuple):
        return sum(_tensor_bytes(v) for v in value)
    return 0


def _group_size(args: tuple[Any, ...], default: int) -> int:
    """The size of the process group among a c10d op's arguments, else ``default``."""
    import torch  # noqa: PLC0415  (torch is optional)

    for arg in args:
        if isinstance(arg, torch.ScriptObject):
            with contextlib.suppress(Exception):  # not a process group, or no unbox
                from torch.distributed import ProcessGroup  # noqa: PLC0415  (torch is optional)

                return int(ProcessGroup.unbox(arg).size())
    return default


def call_bytes(op: str, args: tuple[Any, ...], ranks: int) -> float | None:
    """Bytes one rank sends in the c10d call ``op(*args)``, or ``None`` if not modelled.

    Args:
        op: The c10d op's name (``allreduce_``, ``_allgather_base_``, ...).
        args: Its positional arguments as the dispatcher passes them (outputs
            first for gathers and scatters, as in ``c10d``'s schemas).
        ranks: The default group's size, where the op's group cannot be read.
    """
    found = _OPS.get(op)
    if found is None:
        return None
    collective, where = found
    tensors = [a for a in args if _tensor_bytes(a)]
    if not tensors:
        return 0.0
    if where == "out":
        payload = _tensor_bytes(tensors[0])  # gathers: output first
    elif where == "in" and len(tensors) > 1:
        payload = _tensor_bytes(tensors[1])  # scatters, all-to-all: (output, input)
    else:
        payload = _tensor_bytes(tensors[0])
    return modelled_bytes(collective, payload, _group_size(args, ranks))


@contextlib.contextmanager
def counting(
    traffic: Traffic, region: Callable[[], str | None], ranks: int
) -> Iterator[None]:
    """Count the collectives run in the block into ``traffic``, by ``region()``.

    Args:
        traffic: Receives each collective's modelled bytes.
        region: The region open when a collective runs (``None``: outside regions,
            not counted).
        ranks: The default process group's size.
    """
    from torch.utils._python_dispatch import TorchDispatchMode  # noqa: PLC0415  (torch is optional)

    class _CommCounter(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]

        def __torch_dispatch__(
            self,
            func: Any,  # noqa: ANN401  (a torch OpOverload)
            types: Any,  # noqa: ANN401
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:  # noqa: ANN401
            packet = func.overloadpacket
            if getattr(packet, "_qualified_op_name", "").startswith("c10d::"):
                name = str(packet.__name__)
                sent = call_bytes(name, args, ranks)
                where = region()
                if sent is not None and where is not None:
                    traffic.add(where, sent)
            return func(*args, **(kwargs or {}))

    with _CommCounter():
        yield
