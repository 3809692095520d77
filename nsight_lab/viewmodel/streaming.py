"""Statistics of a stream of values in bounded memory: what a view shows of a series.

:class:`StreamingSummary` takes per-run values one at a time (O(1) each, amortised)
and answers what the summary table shows: the count, mean, sample standard
deviation and relative spread (exact, Welford's update), minimum and maximum
(exact), and quantiles such as the median:

- **exact** while a series holds at most :data:`EXACT_VALUES` values (a session's
  region with up to that many runs gets the very median ``numpy.median`` gives);
- past that, from a log-bucketed histogram (the DDSketch construction): every
  quantile is within a relative error of :data:`RELATIVE_ACCURACY` (0.1 %) of the
  value of that rank, in memory that grows with the log of the values' range, not
  their number (durations from 1 us to 1 s: at most ~6,900 buckets).

No pandas, no numpy: the view model's path stays light.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["EXACT_VALUES", "RELATIVE_ACCURACY", "QuantileSketch", "StreamingSummary"]

EXACT_VALUES = 4096
"""Values a series keeps as they are; past this its quantiles come from buckets."""
RELATIVE_ACCURACY = 1e-3
"""The relative error bound of a quantile once a series holds more values."""
_GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
_LOG_GAMMA = math.log(_GAMMA)


class QuantileSketch:
    """Quantiles of a stream: exact up to :data:`EXACT_VALUES` values, then bucketed.

    Infinite values are counted apart (they sort first or last); NaN is not taken.
    """

    __slots__ = ("_exact", "_high", "_low", "_negative", "_positive", "_zero", "n")

    def __init__(self) -> None:
        """Start empty."""
        self.n = 0
        self._exact: list[float] | None = []
        self._positive: dict[int, int] = {}
        self._negative: dict[int, int] = {}
        self._zero = 0
        self._low = 0  # -inf
        self._high = 0  # +inf

    def add(self, value: float) -> None:
        """Take one value (NaN is ignored).

        Raises:
            Nothing.
        """
        if math.isnan(value):
            return
        self.n += 1
        if self._exact is not None:
            self._exact.append(value)
            if len(self._exact) > EXACT_VALUES:
                values, self._exact = self._exact, None
                for v in values:
                    self._bucket(v)
            return
        self._bucket(value)

    def _bucket(self, value: float) -> None:
        if value == math.inf:
            self._high += 1
        elif value == -math.inf:
            self._low += 1
        elif value == 0:
            self._zero += 1
        else:
            side = self._positive if value > 0 else self._negative
            key = math.ceil(math.log(abs(value)) / _LOG_GAMMA)
            side[key] = side.get(key, 0) + 1

    @property
    def exact(self) -> bool:
        """Whether quantiles are still exact (every value kept)."""
        return self._exact is not None

    def median(self) -> float:
        """The median: exact (the mean of the middle two for an even count) or bucketed.

        NaN when empty.
        """
        if self._exact is not None:
            if not self._exact:
                return math.nan
            ordered = sorted(self._exact)
            mid = len(ordered) // 2
            if len(ordered) % 2:
                return ordered[mid]
            return (ordered[mid - 1] + ordered[mid]) / 2
        return self.quantile(0.5)

    def quantile(self, q: float) -> float:
        """The value of rank ``q * (n - 1)`` (lower rank); NaN when empty.

        Raises:
            ValueError: ``q`` is outside [0, 1].
        """
        if not 0 <= q <= 1:
            msg = f"quantile: q must be within [0, 1], got {q!r}"
            raise ValueError(msg)
        if self.n == 0:
            return math.nan
        rank = math.floor(q * (self.n - 1))
        if self._exact is not None:
            return sorted(self._exact)[rank]
        for value, count in self._ordered():
            if rank < count:
                return value
            rank -= count
        return math.inf  # not reached: the counts sum to n

    def _ordered(self) -> Iterable[tuple[float, int]]:
        """(representative value, count) from the smallest bucket up."""
        if self._low:
            yield -math.inf, self._low
        for key in sorted(self._negative, reverse=True):
            yield -_value(key), self._negative[key]
        if self._zero:
            yield 0.0, self._zero
        for key in sorted(self._positive):
            yield _value(key), self._positive[key]
        if self._high:
            yield math.inf, self._high


def _value(key: int) -> float:
    """The bucket's representative: within RELATIVE_ACCURACY of all it holds."""
    return 2 * _GAMMA**key / (_GAMMA + 1)


class StreamingSummary:
    """Count, mean, spread, extremes and median of one series, one value at a time.

    The mean and the sample standard deviation are Welford's (exact up to rounding:
    within 1e-12 relative of numpy's two-pass values for any series a session
    holds); the median is :class:`QuantileSketch`'s. NaN values are not taken (as
    the results frame leaves them out); an infinite one makes the spread NaN.
    """

    __slots__ = ("_m2", "max", "mean", "min", "n", "sketch")

    def __init__(self) -> None:
        """Start empty."""
        self.n = 0
        self.mean = 0.0
        self._m2 = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.sketch = QuantileSketch()

    def add(self, value: float) -> None:
        """Take one value (NaN is ignored).

        Raises:
            Nothing.
        """
        if math.isnan(value):
            return
        self.n += 1
        if math.isinf(value) or math.isinf(self.mean):
            self.mean = (self.mean * (self.n - 1) + value) / self.n
            self._m2 = math.nan
        else:
            delta = value - self.mean
            self.mean += delta / self.n
            self._m2 += delta * (value - self.mean)
        self.min = min(self.min, value)
        self.max = max(self.max, value)
        self.sketch.add(value)

    @property
    def std(self) -> float:
        """Sample standard deviation (ddof=1); NaN below two values."""
        if self.n < 2:  # noqa: PLR2004
            return math.nan
        return math.sqrt(max(self._m2, 0.0) / (self.n - 1))

    @property
    def rsd_pct(self) -> float:
        """100 * std / |mean| (:func:`nsight_lab.stats.rsd_pct`); NaN when undefined."""
        if self.n < 2 or self.mean == 0:  # noqa: PLR2004
            return math.nan
        return self.std / abs(self.mean) * 100.0

    @property
    def median(self) -> float:
        """The median (exact up to :data:`EXACT_VALUES` values); NaN when empty."""
        return self.sketch.median()
