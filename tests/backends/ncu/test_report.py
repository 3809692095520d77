"""nsight_lab.backends.ncu.report: reading an isolated-ncu report into kernel rows.

The stand-in JSON report written by tests/fixtures/fake_ncu.py is read end to end in
tests/backends/ncu/test_isolate.py. Here: reports that cannot be read, and the walk
over a real report's ranges, actions and NVTX state, through a stand-in for NVIDIA's
``ncu_report`` module (CI has no Nsight Compute) that answers the calls
``read_report`` makes, as ``tests/fixtures/fake_ncu.py`` stands in for ``ncu``.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

from nsight_lab.backends.ncu.report import NVTX_DOMAIN, parse_range_name, read_report
from nsight_lab.errors import BackendUnavailableError, MeasurementError

TIME = "gpu__time_duration.sum"
BYTES = "dram__bytes.sum"

# -- a stand-in ncu_report: ranges -> actions -> NVTX state and metrics ----------------


@dataclass
class _Metric:
    number: object
    unit_name: str | None

    def value(self) -> object:
        return self.number

    def unit(self) -> str | None:
        return self.unit_name


@dataclass
class _Domain:
    """A domain as the child marks it now: its ranges are start/end ranges."""

    domain_name: str
    ranges: list[str]
    pushed: list[str] = field(default_factory=list)

    def name(self) -> str:
        return self.domain_name

    def start_end_ranges(self) -> tuple[str, ...]:
        return tuple(self.ranges)

    def push_pop_ranges(self) -> tuple[str, ...]:
        return tuple(self.pushed)


@dataclass
class _PushPopOnlyDomain:
    """A domain of an ``ncu_report`` that reads push/pop ranges only."""

    domain_name: str
    pushed: list[str]

    def name(self) -> str:
        return self.domain_name

    def push_pop_ranges(self) -> tuple[str, ...]:
        return tuple(self.pushed)


@dataclass
class _NvtxState:
    by_id: dict[int, _Domain | _PushPopOnlyDomain]

    def domains(self) -> list[int]:
        return list(self.by_id)

    def domain_by_id(self, domain_id: int) -> _Domain | _PushPopOnlyDomain | None:
        return self.by_id.get(domain_id)


@dataclass
class _Action:
    kernel: str
    state: _NvtxState | None
    metrics: dict[str, _Metric] = field(default_factory=dict)

    def name(self) -> str:
        return self.kernel

    def nvtx_state(self) -> _NvtxState | None:
        return self.state

    def metric_by_name(self, name: str) -> _Metric | None:
        return self.metrics.get(name)


@dataclass
class _Range:
    actions: list[_Action]

    def num_actions(self) -> int:
        return len(self.actions)

    def action_by_idx(self, index: int) -> _Action:
        return self.actions[index]


@dataclass
class _Context:
    ranges: list[_Range]

    def num_ranges(self) -> int:
        return len(self.ranges)

    def range_by_idx(self, index: int) -> _Range:
        return self.ranges[index]


def _ours(*names: str) -> _NvtxState:
    return _NvtxState(
        {
            0: _Domain("someone else", ["foreign [c9 r9]"]),
            7: _Domain(NVTX_DOMAIN, list(names)),
        }
    )


def _pushed(*names: str) -> _NvtxState:
    """The NVTX state of a report written when the child pushed push/pop ranges."""
    return _NvtxState({3: _Domain(NVTX_DOMAIN, [], pushed=list(names))})


@pytest.fixture
def binary_report(tmp_path):
    """A file that is not the stand-in JSON format: read with ncu_report."""
    path = tmp_path / "profile.ncu-rep"
    path.write_bytes(b"NVIDIA\x00binary report")
    return path


def _install(monkeypatch, load_report) -> list[str]:
    loaded: list[str] = []

    def load(path: str):
        loaded.append(path)
        return load_report(path)

    module = types.ModuleType("ncu_report")
    module.load_report = load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ncu_report", module)
    return loaded


def test_a_report_is_walked_range_by_range_action_by_action(monkeypatch, binary_report):
    context = _Context(
        [
            _Range(
                [
                    _Action(
                        "gemm",
                        _ours("cell [c0 r1]", "matmul [c0 r1]"),
                        {TIME: _Metric(2.5, "usecond"), BYTES: _Metric(4, "Kbyte")},
                    ),
                    _Action("memset", None),  # no NVTX state: not in a region
                ]
            ),
            _Range(
                [
                    # In the cell's wrap only (a cell without regions is one region).
                    _Action("whole", _ours("cell [c1 r-1]"), {TIME: _Metric(7, "ns")}),
                    # Only another domain's ranges: not ours.
                    _Action("other", _NvtxState({0: _Domain("x", ["a [c0 r0]"])})),
                ]
            ),
        ]
    )
    loaded = _install(monkeypatch, lambda _path: context)
    rows = read_report(binary_report, [TIME, BYTES])
    assert loaded == [str(binary_report)]
    assert [(r.kernel, r.region, r.config_index, r.run_index) for r in rows] == [
        ("gemm", "matmul", 0, 1),  # the innermost region, not the cell's wrap
        ("whole", "cell", 1, -1),
    ]
    assert rows[0].range_name == "matmul [c0 r1]"
    assert rows[0].metrics == {TIME: 2500.0, BYTES: 4000.0}  # in ns and bytes
    assert rows[1].metrics == {TIME: 7.0}  # a metric the kernel lacks is left out


def test_start_end_and_push_pop_ranges_are_both_read(monkeypatch, binary_report):
    """Start/end ranges (the child's now) and push/pop ones (older reports) alike."""
    actions = [
        # A start/end region range with the cell's start/end wrap around it.
        _Action("backward", _ours("cell [c0 r0]", "loss [c0 r0]")),
        # An older report: the region and the wrap as push/pop ranges.
        _Action("old", _pushed("cell [c0 r1]", "loss [c0 r1]")),
        # One kind each: the region is found whichever kind holds it.
        _Action(
            "mixed",
            _NvtxState({1: _Domain(NVTX_DOMAIN, ["cell [c0 r2]"], ["loss [c0 r2]"])}),
        ),
        # An ncu_report without start/end ranges still reads push/pop ones.
        _Action(
            "legacy",
            _NvtxState({2: _PushPopOnlyDomain(NVTX_DOMAIN, ["loss [c0 r3]"])}),
        ),
        # Start/end ranges of another domain are not ours.
        _Action("foreign", _NvtxState({4: _Domain("other", ["loss [c0 r4]"])})),
    ]
    _install(monkeypatch, lambda _path: _Context([_Range(actions)]))
    rows = read_report(binary_report, [TIME])
    assert [(r.kernel, r.region, r.run_index) for r in rows] == [
        ("backward", "loss", 0),
        ("old", "loss", 1),
        ("mixed", "loss", 2),
        ("legacy", "loss", 3),
    ]


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        (_Metric(3.0, "msecond"), {TIME: 3e6}),
        (_Metric("12", None), {TIME: 12.0}),  # a number as text, no unit
        (_Metric(5.0, "cycle"), {TIME: 5.0}),  # a unit with no scale stays as is
        (_Metric(None, "ns"), {}),  # no value
        (_Metric("n/a", "ns"), {}),  # not a number
    ],
)
def test_metric_values_are_scaled_to_base_units_or_left_out(
    monkeypatch, binary_report, metric, expected
):
    action = _Action("k", _ours("r [c0 r0]"), {TIME: metric})
    _install(monkeypatch, lambda _path: _Context([_Range([action])]))
    [row] = read_report(binary_report, [TIME])
    assert row.metrics == expected


def test_without_ncu_report_a_real_report_says_how_to_install_it(
    monkeypatch, binary_report
):
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # import raises ImportError
    with pytest.raises(BackendUnavailableError) as caught:
        read_report(binary_report, [TIME])
    message = str(caught.value)
    assert "pip install nsight-lab[ncu]" in message
    assert "\n" not in message


def test_a_report_ncu_report_cannot_load_names_the_file(monkeypatch, binary_report):
    def refuse(_path: str):
        msg = "unsupported report version"
        raise RuntimeError(msg)

    _install(monkeypatch, refuse)
    with pytest.raises(MeasurementError) as caught:
        read_report(binary_report, [TIME])
    message = str(caught.value)
    assert str(binary_report) in message
    assert "RuntimeError: unsupported report version" in message
    assert "at least as new as the ncu that wrote it" in message


def test_a_missing_report_is_a_measurement_error(tmp_path):
    missing = tmp_path / "never-written.ncu-rep"
    with pytest.raises(MeasurementError, match="cannot read the ncu report"):
        read_report(missing, [TIME])


def test_a_broken_stand_in_report_is_a_measurement_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # never consulted
    broken = tmp_path / "r.ncu-rep"
    broken.write_text("  \n[{not json", encoding="utf-8")  # blanks before "[" too
    with pytest.raises(MeasurementError, match="cannot read the stand-in ncu report"):
        read_report(broken, [TIME])


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("two\nlines [c1 r2]", ("two\nlines", 1, 2)),  # a region name may hold newlines
        ("neg [c-1 r0]", ("neg", -1, 0)),
        ("[c0 r0]", None),  # no region before the bracket
        ("x [c0 r0] tail", None),
        ("x [c0 r]", None),
    ],
)
def test_range_names_that_are_and_are_not_ours(name, parsed):
    assert parse_range_name(name) == parsed
