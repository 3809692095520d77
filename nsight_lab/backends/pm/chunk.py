"""One decode's samples (:class:`Chunk`): timestamps, and values read once.

Handed out by the samplers (:mod:`.sampler`, :mod:`.rolling`) and read by the
attribution (:mod:`.counters`), which asks only for the samples some region needs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from nsight_lab.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from numpy.typing import NDArray


@dataclass
class Chunk:
    """One decode's samples: their timestamps and metric values.

    Values come from ``table`` (every sample's, read as decoded: the live decode),
    or are evaluated when first asked for, through ``_evaluate_rows`` (the image's,
    many at once) or ``_evaluate`` (one sample); a recorded fixture or a test may give
    ``_data`` instead, whose items have the ``metric_values`` of one sample, or the
    values themselves in ``_values``.

    Attributes:
        metrics: The metric of each value column.
        starts: Sample start times (ns, GPU global timer).
        ends: Sample end times.
    """

    metrics: tuple[str, ...]
    starts: NDArray[np.int64]
    ends: NDArray[np.int64]
    _data: Any = None
    _values: dict[int, NDArray[np.float64]] = field(default_factory=dict)
    _evaluate: Callable[[int], NDArray[np.float64]] | None = None
    _evaluate_rows: Callable[[NDArray[np.intp]], NDArray[np.float64]] | None = None
    table: NDArray[np.float64] | None = None
    """Every sample's values, one row each, where they were read as decoded."""
    evaluate_s: float = 0.0
    """Host time spent evaluating this chunk's samples."""

    def __len__(self) -> int:
        """The number of samples."""
        return len(self.starts)

    @property
    def evaluated(self) -> int:
        """How many samples' metric values have been evaluated."""
        return len(self) if self.table is not None else len(self._values)

    def values(self, indices: Sequence[int] | NDArray[np.intp]) -> NDArray[np.float64]:
        """The metric values of the samples ``indices`` (one row each), evaluated once.

        Raises:
            MeasurementError: CUPTI could not evaluate a sample.
        """
        wanted = np.asarray(indices, dtype=np.intp)
        if self.table is not None:
            return np.asarray(self.table[wanted], dtype=np.float64)
        missing = [i for i in dict.fromkeys(wanted.tolist()) if i not in self._values]
        many = self._evaluate_rows
        if missing and many is not None:
            asked = np.array(missing, dtype=np.intp)
            rows = self._timed(lambda: many(asked), missing)
            self._values.update(zip(missing, rows, strict=True))
        for index in missing:
            if index not in self._values:
                self._values[index] = self._timed(partial(self._one, index), [index])
        out = np.zeros((len(wanted), len(self.metrics)))
        for row, index in enumerate(wanted.tolist()):
            out[row] = self._values[index]
        return out

    def _one(self, index: int) -> NDArray[np.float64]:
        if self._evaluate is not None:
            return np.asarray(self._evaluate(index), dtype=np.float64)
        return np.asarray(self._data[index].metric_values, dtype=np.float64)

    def _timed(self, read: Callable[[], Any], which: Sequence[int]) -> Any:  # noqa: ANN401
        """``read()``, its time counted; CUPTI's failure as one line."""
        sources = (self._evaluate, self._data, self._evaluate_rows)
        if all(source is None for source in sources):
            msg = "PM sample values are gone (the chunk was released)"
            raise MeasurementError(msg)
        started = time.perf_counter()
        try:
            return read()
        except Exception as exc:
            msg = (
                f"CUPTI could not evaluate PM sample {which[0]} "
                f"({type(exc).__name__}: {exc}); check %nsight doctor"
            )
            raise MeasurementError(msg) from exc
        finally:
            self.evaluate_s += time.perf_counter() - started

    def all_values(self) -> NDArray[np.float64]:
        """Every sample's values (a fixture or a check of the totals)."""
        return self.values(np.arange(len(self)))
