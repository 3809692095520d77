"""What a region's ops would move as one fused kernel, and what it reads from the last.

The work model (:mod:`nsight_lab.roofline.workmodel`) counts *op-level* compulsory
bytes: each op reads its inputs and writes its outputs once, so ``a + b * c`` pays
for the intermediate ``b * c`` twice (written, read back). Beside them, while the
same counting pass runs, :class:`BoundaryBytes` follows tensor storages through a
region and gives two more figures per region (issue 31's fusion headroom):

- ``model__bytes_fused`` (:data:`FUSED`): the bytes one kernel doing all of the
  region's ops would still move: every storage the region read that it did not
  write first (its inputs, each once), plus every storage it wrote that is still
  alive when the region closes (its outputs). Intermediates freed inside the region
  and re-reads of the same data are not in it. ``a + b * c`` kept as ``y``: a, b, c
  read and y written (4 N elements) against the op-level 6 N.
- ``model__bytes_prev`` (:data:`FROM_PREVIOUS`): the bytes the region read of
  storages the region just before it wrote (each once): what fusing the two would
  keep on the chip.

Storages are told apart by their data pointer (a view is its base's storage); a
storage the allocator hands out again counts from its new writer on. A region whose
tensors have no storage to follow (sparse, nested, fake) gets neither figure.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["FROM_PREVIOUS", "FUSED", "BoundaryBytes"]

FUSED = "model__bytes_fused"
"""Bytes one fused kernel of the region's ops would move (inputs once, live outputs)."""
FROM_PREVIOUS = "model__bytes_prev"
"""Bytes the region read of what the region before it wrote."""


def _key(tensor: Any) -> tuple[str, int]:  # noqa: ANN401  (a torch.Tensor)
    """The storage a tensor lives in: its device and data pointer."""
    return str(tensor.device), int(tensor.untyped_storage().data_ptr())


def _nbytes(tensor: Any) -> int:  # noqa: ANN401  (a torch.Tensor)
    return int(tensor.numel() * tensor.element_size())


@dataclass
class _Region:
    """One region's storages while it runs."""

    name: str
    previous: str | None
    reads: dict[tuple[str, int], int] = field(default_factory=dict)
    """Storages read before the region wrote them: bytes (the largest view read)."""
    outputs: dict[tuple[str, int], tuple[list[weakref.ref[Any]], int]] = field(
        default_factory=dict
    )
    from_previous: dict[tuple[str, int], int] = field(default_factory=dict)
    broken: bool = False


class BoundaryBytes:
    """Follows storages through the regions of one counting pass.

    Call :meth:`enter` and :meth:`exit` at each region's boundaries and :meth:`op`
    for each counted op inside one; :attr:`results` then holds each region's
    :data:`FUSED` and :data:`FROM_PREVIOUS`.
    """

    def __init__(self) -> None:
        """Start before any region."""
        self._writer: dict[tuple[str, int], str] = {}
        self._open: _Region | None = None
        self._last: str | None = None
        self.results: dict[str, dict[str, float]] = {}

    def enter(self, name: str) -> None:
        """Region ``name`` opens."""
        self._open = _Region(name, self._last)

    def exit(self, name: str) -> None:
        """Region ``name`` closes: its figures, from what is alive now."""
        region, self._open = self._open, None
        self._last = name
        if region is None or region.name != name or region.broken:
            return
        alive = sum(
            size
            for refs, size in region.outputs.values()
            if any(r() is not None for r in refs)
        )
        self.results[name] = {
            FUSED: float(sum(region.reads.values()) + alive),
            FROM_PREVIOUS: float(sum(region.from_previous.values())),
        }

    def op(self, inputs: Iterable[Any], outputs: Iterable[Any]) -> None:
        """One op of the open region: ``inputs`` read, ``outputs`` written."""
        region = self._open
        if region is None or region.broken:
            return
        try:
            read = [(_key(t), _nbytes(t)) for t in inputs]
            written = [(_key(t), _nbytes(t), t) for t in outputs]
        except (RuntimeError, NotImplementedError, TypeError, AttributeError):
            region.broken = True  # no storage to follow: no figure, never a guess
            return
        for key, size in read:
            writer = self._writer.get(key)
            if writer == region.name:
                continue  # an intermediate (or its own output read back)
            region.reads[key] = max(region.reads.get(key, 0), size)
            if writer is not None and writer == region.previous:
                region.from_previous[key] = max(region.from_previous.get(key, 0), size)
        for key, size, tensor in written:
            self._writer[key] = region.name
            refs, known = region.outputs.get(key, ([], 0))
            refs.append(weakref.ref(tensor))
            region.outputs[key] = (refs, max(known, size))
