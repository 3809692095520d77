"""Counter timelines: one region's sampled rates in one run, packed into a few bytes.

A :class:`CounterSeries` is what the "Counters over time" chart draws: for each PM
sample that overlapped the region, its time within the region (µs from the region's
first kernel start to the sample's midpoint) and each metric as a rate (GB/s for
bytes, % for ratios, per second for other counts). Runs carry it packed
(:func:`pack`, about ``4 * (1 + metrics)`` bytes a point, at most
:data:`MAX_POINTS` points: longer series are averaged down), the store keeps it in the
``runs.series`` column, and :func:`unpack` reads it back. Pure: the figure code
imports this module without CUPTI.

The layout, little-endian: the 4-byte magic ``NLS1``, a uint32 header length, a UTF-8
JSON header ``{"metrics": [...], "units": [...], "points": n}``, then ``n * (1 +
metrics)`` float32 values, row by row (time first).
"""

from __future__ import annotations

import itertools
import json
import math
import struct
from array import array
from dataclasses import dataclass

MAGIC = b"NLS1"
MAX_POINTS = 256
"""Points kept per region and run; more are averaged in consecutive groups."""
_HEADER = struct.Struct("<4sI")


@dataclass(frozen=True)
class CounterSeries:
    """One region's counter rates over one run.

    Attributes:
        metrics: Metric names, one column each.
        units: The unit of each column (``"GB/s"``, ``"%"``, ``"/s"``, ...).
        t_us: Time within the region of each point (µs).
        values: One tuple per metric, aligned with ``t_us``.
    """

    metrics: tuple[str, ...]
    units: tuple[str, ...]
    t_us: tuple[float, ...]
    values: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        """Check that the columns line up.

        Raises:
            ValueError: A units or values column is missing, or has another length.
        """
        if len(self.units) != len(self.metrics) or len(self.values) != len(
            self.metrics
        ):
            msg = (
                f"counter series of {len(self.metrics)} metrics has "
                f"{len(self.units)} units and {len(self.values)} value columns; "
                "give one of each per metric"
            )
            raise ValueError(msg)
        if any(len(column) != len(self.t_us) for column in self.values):
            msg = "counter series columns differ in length from its times"
            raise ValueError(msg)


def downsample(
    t_us: list[float], columns: list[list[float]], limit: int = MAX_POINTS
) -> tuple[list[float], list[list[float]]]:
    """Average consecutive points in equal groups so at most ``limit`` remain."""
    n = len(t_us)
    if n <= limit:
        return t_us, columns
    edges = [round(i * n / limit) for i in range(limit + 1)]
    groups = [(lo, hi) for lo, hi in itertools.pairwise(edges) if hi > lo]

    def mean(values: list[float], lo: int, hi: int) -> float:
        finite = [v for v in values[lo:hi] if math.isfinite(v)]
        return sum(finite) / len(finite) if finite else math.nan

    return (
        [mean(t_us, lo, hi) for lo, hi in groups],
        [[mean(column, lo, hi) for lo, hi in groups] for column in columns],
    )


def pack(series: CounterSeries) -> bytes:
    """The compact form stored with a run (averaged down to :data:`MAX_POINTS`)."""
    t_us, columns = downsample(list(series.t_us), [list(c) for c in series.values])
    header = json.dumps(
        {
            "metrics": list(series.metrics),
            "units": list(series.units),
            "points": len(t_us),
        },
        separators=(",", ":"),
    ).encode()
    body = array("f")
    for i, t in enumerate(t_us):
        body.append(t)
        body.extend(column[i] for column in columns)
    if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover - big-endian
        body.byteswap()
    return _HEADER.pack(MAGIC, len(header)) + header + body.tobytes()


def unpack(blob: bytes) -> CounterSeries:
    """Read a series written by :func:`pack`.

    Raises:
        ValueError: ``blob`` is not a packed counter series (one line, says why).
    """
    if len(blob) < _HEADER.size or blob[:4] != MAGIC:
        msg = "not a packed counter series (no NLS1 header); it was not written by pack"
        raise ValueError(msg)
    _, header_len = _HEADER.unpack_from(blob)
    try:
        header = json.loads(blob[_HEADER.size : _HEADER.size + header_len])
        metrics = tuple(str(m) for m in header["metrics"])
        units = tuple(str(u) for u in header["units"])
        points = int(header["points"])
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"counter series header is unreadable ({exc}); the blob is damaged"
        raise ValueError(msg) from exc
    body = array("f")
    body.frombytes(blob[_HEADER.size + header_len :])
    if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover - big-endian
        body.byteswap()
    width = 1 + len(metrics)
    if len(body) != points * width:
        msg = (
            f"counter series holds {len(body)} values, expected {points} points x "
            f"{width} columns; the blob is damaged"
        )
        raise ValueError(msg)
    return CounterSeries(
        metrics=metrics,
        units=units,
        t_us=tuple(float(body[i * width]) for i in range(points)),
        values=tuple(
            tuple(float(body[i * width + 1 + j]) for i in range(points))
            for j in range(len(metrics))
        ),
    )
