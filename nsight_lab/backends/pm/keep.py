"""What PM sampling keeps between cells: one metric set's sampling parts per device.

A :class:`Keeper` belongs to whoever profiles for long: the magic's prober holds one
(in its :class:`~.availability.PmChecks`) for the kernel's life and hands it to the
pm collector with its verdict; a measurement opened without one makes its own and
releases it when it closes. Per device it keeps a :class:`Kept`: the
:class:`~.cupti_api.SamplingApi` of one chip and metric set (its config image,
profiler host, structs and image memory, made once), the decode's host cost per
sample as measured, and the interval each kind of cell settled on, so the next cell
pays for none of them again.

**When it is made again** (the invalidation rule): a ``Kept`` serves only the same
device, chip and metrics (in that order); a cell asking another set on that device
releases it and makes a new one; a cell whose PM sampling failed with a CUPTI error
drops it; the keeper releases everything when it is collected and at interpreter
exit (:func:`weakref.finalize`). PM sampling itself is enabled only while a cell
samples: nothing here holds the GPU's counters between cells (ncu, nsight-python or
another profiler may use them).
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from nsight_lab.backends.pm.cupti_api import SamplingApi

Key = tuple[int, str, tuple[str, ...]]
"""(CUDA device index, chip, metrics in value-column order)."""
SMOOTHING = 0.5
"""A new measurement of the per-sample cost weighs this much against the kept one."""


@dataclass
class Kept:
    """One chip and metric set's sampling parts, and what its cells measured."""

    key: Key
    api: SamplingApi
    per_sample_s: dict[str, float] = field(default_factory=dict)
    """Host seconds to decode and evaluate a sample, by decode mode (``"stopped"``:
    calibrated at the first open; ``"live"``: measured while decoding)."""
    intervals: dict[tuple[int, bool, str], int] = field(default_factory=dict)
    """(asked interval ns, tuned, mode) -> the interval the last such cell ended at."""
    live_ok: bool = True
    """False once a live decode failed with this chip and metrics (stopped after)."""
    sessions: int = 0
    """Cells that sampled with it."""

    def interval_for(self, floor_ns: int, *, tune: bool, mode: str) -> int:
        """Where a cell asking ``floor_ns`` starts: where the last such one ended."""
        return self.intervals.get((floor_ns, tune, mode), floor_ns)

    def remember(
        self,
        floor_ns: int,
        *,
        tune: bool,
        mode: str,
        interval_ns: int,
        per_sample_s: float,
    ) -> None:
        """Keep what a cell ended with: its interval, its per-sample cost."""
        self.intervals[(floor_ns, tune, mode)] = int(interval_ns)
        if per_sample_s > 0:
            old = self.per_sample_s.get(mode)
            self.per_sample_s[mode] = (
                per_sample_s
                if old is None
                else SMOOTHING * per_sample_s + (1 - SMOOTHING) * old
            )


def _release(kept: dict[int, Kept]) -> None:
    """Release every kept api (the keeper's finalizer: no reference to the keeper)."""
    for one in list(kept.values()):
        with contextlib.suppress(Exception):
            one.api.release()
    kept.clear()


class Keeper:
    """The :class:`Kept` of each device, for as long as its owner lives (module doc)."""

    def __init__(self) -> None:
        """Nothing kept yet; released when collected or at interpreter exit."""
        self._kept: dict[int, Kept] = {}
        self._finalizer = weakref.finalize(self, _release, self._kept)

    def take(self, key: Key, make: Callable[[], SamplingApi]) -> Kept:
        """The kept parts of ``key``; ``make()`` a new api where there are none.

        Another chip or metric set kept on the device is released first.
        """
        device = key[0]
        found = self._kept.get(device)
        if found is None or found.key != key:
            self.drop(device)
            found = Kept(key, make())
            self._kept[device] = found
        found.sessions += 1
        return found

    def drop(self, device: int) -> None:
        """Release what is kept for ``device`` (after a CUPTI error)."""
        found = self._kept.pop(device, None)
        if found is not None:
            with contextlib.suppress(Exception):
                found.api.release()

    def close(self) -> None:
        """Release everything now (the keeper may keep again afterwards)."""
        _release(self._kept)

    def __len__(self) -> int:
        """Devices with kept parts."""
        return len(self._kept)
