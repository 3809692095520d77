"""The one formatter: durations, quantities, percentages and ratios as shown."""

from __future__ import annotations

import math

import pytest

from nsight_lab.text.units import (
    UNDEFINED,
    format_change,
    format_count,
    format_duration,
    format_percent,
    format_quantity,
    format_ratio,
)


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (999_960, "1.000 ms"),  # the unit picked after rounding
        (59_620.1, "59.62 µs"),
        (512, "512 ns"),
        (1.2e9, "1.200 s"),
        (math.nan, UNDEFINED),
        (None, UNDEFINED),
    ],
)
def test_durations(ns: float | None, text: str) -> None:
    assert format_duration(ns) == text


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (67_125_248, "bytes", "67.13 MB"),
        (4.123e12, "bytes/s", "4.123 TB/s"),
        (4123.0, "GB/s", "4123 GB/s"),  # served prefixed: its own unit (issue 30)
        (809.2, "TFLOP/s", "809.2 TFLOP/s"),
        (8.246e11, "FLOP", "824.6 GFLOP"),
        (189_890_560, "inst", "189.9 M inst"),
        (81.73, "%", "82 %"),
        (59_620.0, "ns", "59.62 µs"),
        (3.5, "", "3.5"),
        (math.inf, "bytes", UNDEFINED),
    ],
)
def test_quantities(value: float, unit: str, text: str) -> None:
    assert format_quantity(value, unit) == text


@pytest.mark.parametrize(
    ("pct", "text"),
    [
        (81.734, "82 %"),
        (2.4321, "2.4 %"),
        (0.3123, "0.31 %"),
        (0.0002023, "<0.01 %"),  # issue 20: an RSD read 0.0002023
        (0, "0 %"),
        (9.96, "10 %"),
    ],
)
def test_percentages_have_sane_digits(pct: float, text: str) -> None:
    assert format_percent(pct) == text


def test_ratios_changes_and_counts() -> None:
    assert format_ratio(1.0781, 1.033, 1.125) == "1.078\u00d7 [1.033, 1.125]"
    assert format_ratio(1.0, None, None) == "1.000\u00d7"
    assert format_change(1.078) == "+7.8 %"
    assert format_change(0.97) == "-3.0 %"
    assert format_count(12345) == "12,345"


def test_the_typescript_duration_fixture_is_what_python_writes() -> None:
    """tests/fixtures/units.json (jest checks formatDuration against it) is current.

    Regenerate with ``python tests/fixtures/make_units.py`` after a change here.
    """
    import importlib.util
    import json
    import sys
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "make_units.py"
    spec = importlib.util.spec_from_file_location("make_units", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_units"] = module
    spec.loader.exec_module(module)
    committed = json.loads(module.UNITS_PATH.read_text(encoding="utf-8"))
    assert committed == json.loads(json.dumps(module.build_units()))
    assert ["999960", "1.000 ms"] in [[str(ns), t] for ns, t in committed["durations"]]
