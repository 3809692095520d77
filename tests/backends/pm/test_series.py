"""Counter timelines packed for the store (backends/pm/series.py)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsight_lab.backends.pm.series import (
    MAX_POINTS,
    CounterSeries,
    downsample,
    pack,
    unpack,
)


def test_pack_and_unpack_round_trip_as_float32() -> None:
    series = CounterSeries(
        metrics=("dram__bytes_read.sum", "sm__pipe_tensor.pct"),
        units=("GB/s", "%"),
        t_us=(0.0, 10.0, 30.5),
        values=((1200.5, 3400.25, math.nan), (12.5, 99.0, 0.0)),
    )
    blob = pack(series)
    back = unpack(blob)
    assert back.metrics == series.metrics
    assert back.units == series.units
    assert back.t_us == series.t_us
    assert back.values[0][:2] == (1200.5, 3400.25)
    assert math.isnan(back.values[0][2])
    assert back.values[1] == series.values[1]
    # Compact: a header and 4 bytes per value.
    assert len(blob) < 200 + 4 * 3 * 3


def test_long_series_are_averaged_down() -> None:
    n = 1000
    series = CounterSeries(
        metrics=("m",), units=("GB/s",), t_us=tuple(range(n)), values=((1.0,) * n,)
    )
    back = unpack(pack(series))
    assert len(back.t_us) == MAX_POINTS
    assert back.t_us[0] == pytest.approx((n / MAX_POINTS - 1) / 2, abs=1)
    assert set(back.values[0]) == {1.0}
    assert len(pack(series)) < 4 * 2 * MAX_POINTS + 200


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=600),
    limit=st.integers(1, 300),
)
def test_downsampling_keeps_the_mean_and_the_limit(
    values: list[float], limit: int
) -> None:
    t = [float(i) for i in range(len(values))]
    t2, (v2,) = downsample(t, [values], limit)
    assert len(t2) == len(v2) <= limit
    if len(values) <= limit:
        assert v2 == values
    assert min(values) - 1e-6 <= min(v2)
    assert max(v2) <= max(values) + 1e-6


def test_a_misshapen_series_is_refused() -> None:
    with pytest.raises(ValueError, match="give one of each per metric"):
        CounterSeries(metrics=("a", "b"), units=("%",), t_us=(), values=((), ()))
    with pytest.raises(ValueError, match="differ in length"):
        CounterSeries(metrics=("a",), units=("%",), t_us=(1.0,), values=((),))


def test_damaged_blobs_say_so() -> None:
    with pytest.raises(ValueError, match="no NLS1 header"):
        unpack(b"not a series")
    blob = pack(CounterSeries(("m",), ("%",), (1.0,), ((2.0,),)))
    with pytest.raises(ValueError, match="expected 1 points x 2 columns"):
        unpack(blob[:-4])
    bad_header = b"NLS1" + struct.pack("<I", 3) + b"{x}"
    with pytest.raises(ValueError, match="header is unreadable"):
        unpack(bad_header)
