"""Numbers as people read them: the one formatter of every table, verdict and chart.

Every value nsight-lab shows with a unit goes through here, in Python, so a
duration, a rate or a percentage reads the same in the sidebar's tables, the
charts' labels and hovers, the CLI and a cell's text output. The front end does not
format: it shows the strings the server sends (``src/components/format.ts`` keeps
only the dates and configs of the session list).

The rules:

- **Four significant digits**, as JavaScript's ``toPrecision(4)`` writes them
  (``21.56 ms``, ``7.200 µs``, ``809.2 TFLOP/s``); the unit or SI prefix is chosen
  after rounding, so 999,960 ns reads ``1.000 ms``, never ``1000 µs``.
- **Durations** in ns, µs, ms or s; **bytes** and **FLOP** with decimal SI prefixes
  (``67.13 MB``, ``824.6 GFLOP``), as Nsight Compute prints them; **rates** the same
  (``4.123 TB/s``); other counted units (``inst``, ``cycles``, ``sectors``) with an
  SI prefix before the unit (``189.9 M inst``).
- **Percentages** (% of roof, RSD, changes) with the digits that matter: whole
  from 10 up (``82 %``), one decimal from 1 (``2.4 %``), two below (``0.31 %``), and
  ``<0.01 %`` below that; a change is signed (``+7.8 %``).
- A unit that arrives **prefixed** (``TFLOP/s`` of a metric named ``tflops``) is
  kept as it is: a metric's unit is its own (issue 30: ``tflops`` read ``63.02
  GFLOP/s``).
- A **clock** is the median over the runs with the range beside it
  (:func:`format_clock`), in every view: a table's mean and a comparison's median
  read 1840 and 1950 MHz for one session (issue 30).
- A missing or non-finite value is :data:`UNDEFINED` (an en dash); a value not
  measured or not modelled is that too, never 0, with the reason in a note.
"""

from __future__ import annotations

import math

__all__ = [
    "UNDEFINED",
    "format_change",
    "format_clock",
    "format_count",
    "format_duration",
    "format_number",
    "format_percent",
    "format_quantity",
    "format_ratio",
    "precision4",
]

UNDEFINED = "\u2013"
"""What a value that is not a number reads: an en dash."""

_DURATIONS = ((1e9, "s"), (1e6, "ms"), (1e3, "\u00b5s"))
_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_SI_UNITS = {"bytes": "B", "bytes/s": "B/s", "FLOP": "FLOP", "FLOP/s": "FLOP/s"}
"""Units written with an SI prefix glued to a short symbol (``MB``, ``TFLOP/s``)."""
_PREFIXED = {
    "TFLOP/s": (1e12, "FLOP/s"),
    "GFLOP/s": (1e9, "FLOP/s"),
    "TB/s": (1e12, "bytes/s"),
    "GB/s": (1e9, "bytes/s"),
    "MB/s": (1e6, "bytes/s"),
}
"""Units that arrive already prefixed (``--derive`` rates, the roofline columns):
shown in that unit, never rescaled."""
_COUNTED = frozenset({"inst", "cycles", "sectors", "requests", "ops"})


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def precision4(value: float) -> str:
    """``value`` with 4 significant digits, as JavaScript's ``toPrecision(4)``.

    Raises:
        Nothing.
    """
    if value == 0:
        return "0.000"
    rounded = float(f"{value:.4g}")  # 9.9996 -> 10.0: decimals after rounding
    if abs(rounded) >= 1e4:  # noqa: PLR2004  (past 4 digits: no decimals)
        return f"{rounded:.0f}"
    decimals = max(3 - math.floor(math.log10(abs(rounded))), 0)
    return f"{value:.{decimals}f}"


def format_duration(ns: object) -> str:
    """A duration in nanoseconds in the unit that reads best, 4 significant digits.

    ``6.473 µs``, ``21.56 ms``, ``1.200 s``; whole nanoseconds as they are
    (``512 ns``); :data:`UNDEFINED` if not a finite number.

    Raises:
        Nothing.
    """
    value = _finite(ns)
    if value is None:
        return UNDEFINED
    for scale, unit in _DURATIONS:
        if abs(float(f"{value / scale:.4g}")) >= 1:
            return f"{precision4(value / scale)} {unit}"
    if value == int(value):
        return f"{int(value)} ns"
    return f"{precision4(value)} ns"


def format_number(value: object) -> str:
    """A plain number: 4 significant digits, an exponent past a million.

    Raises:
        Nothing.
    """
    number = _finite(value)
    if number is None:
        return UNDEFINED
    if number == int(number) and abs(number) < 1e4:  # noqa: PLR2004
        return str(int(number))
    if number != 0 and (abs(number) >= 1e6 or abs(number) < 1e-3):  # noqa: PLR2004
        return f"{number:.3e}"
    return f"{float(f'{number:.4g}'):g}"


def _with_prefix(value: float) -> tuple[str, str]:
    """``value`` scaled to an SI prefix (chosen after rounding): text, prefix."""
    for scale, prefix in _SI:
        if abs(float(f"{value / scale:.4g}")) >= 1:
            return precision4(value / scale), prefix
    if value == int(value):
        return str(int(value)), ""
    return precision4(value), ""


def format_quantity(value: object, unit: str) -> str:  # noqa: PLR0911  (one per unit)
    """A value with its unit (the unit names of ``compare.metric_unit``).

    ``ns`` as a duration, bytes and FLOP (and their rates) with an SI prefix,
    ``%`` through :func:`format_percent`, counted units with a spaced prefix
    (``189.9 M inst``), anything else as a number and its unit.

    Raises:
        Nothing.
    """
    number = _finite(value)
    if number is None:
        return UNDEFINED
    if unit == "ns":
        return format_duration(number)
    if unit in _PREFIXED:
        return f"{precision4(number)} {unit}"
    if unit == "%":
        return format_percent(number)
    symbol = _SI_UNITS.get(unit)
    if symbol is not None:
        text, prefix = _with_prefix(number)
        return f"{text} {prefix}{symbol}"
    if unit in _COUNTED or unit.endswith("/s"):
        text, prefix = _with_prefix(number)
        return f"{text} {prefix} {unit}" if prefix else f"{text} {unit}"
    text = format_number(number)
    return f"{text} {unit}" if unit else text


def format_percent(pct: object) -> str:
    """A percentage with the digits that matter: ``82 %``, ``2.4 %``, ``0.31 %``.

    Whole from 10 up, one decimal from 1, two below; ``<0.01 %`` for a positive
    value below 0.005 (an RSD of 0.0002 % says "steady", not its digits).

    Raises:
        Nothing.
    """
    number = _finite(pct)
    if number is None:
        return UNDEFINED
    if number == 0:
        return "0 %"
    if abs(number) < 0.005:  # noqa: PLR2004
        return "<0.01 %" if number > 0 else ">-0.01 %"
    magnitude = math.floor(math.log10(abs(float(f"{number:.2g}"))))
    decimals = min(max(1 - magnitude, 0), 2)
    return f"{number:.{decimals}f} %"


def format_change(ratio: object) -> str:
    """A ratio as a signed change: 1.078 reads ``+7.8 %``, 0.97 ``-3.0 %``.

    Raises:
        Nothing.
    """
    number = _finite(ratio)
    if number is None:
        return UNDEFINED
    text = format_percent((number - 1) * 100)
    return text if text.startswith(("-", "<", ">", "0 ")) else f"+{text}"


def format_ratio(ratio: object, low: object = None, high: object = None) -> str:
    """A ratio and its interval: ``1.078`` times ``[1.033, 1.125]``, or alone.

    Raises:
        Nothing.
    """
    number = _finite(ratio)
    if number is None:
        return UNDEFINED
    lo, hi = _finite(low), _finite(high)
    interval = f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else ""
    return f"{number:.3f}\u00d7{interval}"


def format_count(value: object) -> str:
    """A whole count with thousands separators (``1,234``).

    Raises:
        Nothing.
    """
    number = _finite(value)
    if number is None:
        return UNDEFINED
    return f"{round(number):,}"


def format_clock(median: object, low: object = None, high: object = None) -> str:
    """A clock over runs, with its statistic: ``1950 MHz median (1650-1950)``.

    The one way a session's or region's SM clock is shown (the table, ``show``
    and the comparison's notes), so one session cannot read two clocks. A clock
    that never moved reads ``1980 MHz in every run``; without a range, the median
    alone (``1950 MHz median``).

    Raises:
        Nothing.
    """
    mid = _finite(median)
    if mid is None:
        return UNDEFINED
    lo, hi = _finite(low), _finite(high)
    if lo is None or hi is None:
        return f"{mid:.0f} MHz median"
    if round(lo) == round(hi):
        return f"{mid:.0f} MHz in every run"
    return f"{mid:.0f} MHz median ({lo:.0f}\u2013{hi:.0f})"
