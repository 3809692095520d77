"""nsight-lab's DataFrame against nsight-python 1.1.0's own, frozen.

``tests/fixtures/nsight_python_frame.json`` was produced by nsight-python 1.1.0's
profiler and aggregation with a fake collector (``nsight_python_make_frame.py``). The
same scenarios run here through ``nsight_lab.api`` on the cpu backend (real
measurements) and must give nsight-python's columns, in its order, with its dtypes
(or their nullable counterparts where the cpu backend has no value), its units and
its missing values.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nsight_lab as nsight

FROZEN = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "nsight_python_frame.json").read_text()
)["scenarios"]

NULLABLE = {"int64": "Int64", "bool": "boolean"}
"""nsight-python's dtype -> the nullable one nsight-lab may use for it."""
RATED_CLOCKS = ("ComputeClock", "MemoryClock")


@pytest.fixture(autouse=True)
def _cpu() -> Any:
    nsight.use_backend("cpu")
    yield
    nsight.use_backend(None)


@nsight.experimental.collect(scope="once")
def tool_version() -> str:
    return "1.0"


@nsight.experimental.collect(scope="config")
def elements(n: int, mode: str) -> int:  # noqa: ARG001  (nsight-python's signature)
    return n * n


@nsight.experimental.collect(scope="run")
def run_tag(*config: Any) -> str:
    return f"run-{config[0]}"


@nsight.experimental.collect(scope="annotation")
def name_length(annotation_name: str, *config: Any) -> int:  # noqa: ARG001
    return len(annotation_name)


def rates(time_ns: float, n: int, mode: str) -> dict[str, Any]:  # noqa: ARG001
    return {"tput": (n / time_ns, "GB/s"), "plain": n * 2.0}


def tflops(time_ns: float, n: int) -> tuple[float, str]:
    return 2 * n**3 / time_ns / 1e3, "TFLOPS"


def speedup(time_ns: float, n: int) -> float:  # noqa: ARG001
    return 1.0 / time_ns


def body(n: int, mode: str = "fast") -> None:  # noqa: ARG001
    with nsight.annotate("a"):
        sum(range(n))
    with nsight.annotate("b"):
        sorted(range(n))


def body1(n: int) -> None:
    with nsight.annotate("a"):
        sum(range(n))
    with nsight.annotate("b"):
        sorted(range(n))


def single(n: int) -> None:
    with nsight.annotate("a"):
        sum(range(n))


SCENARIOS: dict[str, tuple[Any, dict[str, Any]]] = {
    "single_run": (single, {"configs": [(1024,)], "runs": 1}),
    "collectors_derive_normalize": (
        body,
        {
            "configs": [(256, "fast"), (512, "slow")],
            "runs": 3,
            "derive_metric": rates,
            "normalize_against": "a",
            "info_collectors": [tool_version, elements, run_tag, name_length],
        },
    ),
    "tuple_derive": (
        body1,
        {"configs": [(256,), (512,)], "runs": 2, "derive_metric": tflops},
    ),
    "scalar_derive": (
        body1,
        {"configs": [(256,), (512,)], "runs": 2, "derive_metric": speedup},
    ),
}


def _ours(name: str) -> tuple[pd.DataFrame, list[str]]:
    func, kwargs = SCENARIOS[name]
    profiled = nsight.analyze.kernel(
        **kwargs, verbosity=nsight.VerbosityLevel.SILENT, warmup=0
    )(func)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = profiled().to_dataframe()
    return frame, sorted({str(w.message) for w in caught})


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_columns_dtypes_units_as_nsight_python(name: str) -> None:
    theirs = FROZEN[name]
    frame, warned = _ours(name)
    columns = [str(c) for c in frame.columns]
    # nsight-python's columns are all there, in its order, before nsight-lab's own.
    assert columns[: len(theirs["columns"])] == _in_our_order(
        theirs["columns"], columns
    )
    assert set(columns[: len(theirs["columns"])]) == set(theirs["columns"])
    for column, dtype in theirs["dtypes"].items():
        ours = str(frame[column].dtype)
        if column in RATED_CLOCKS:  # no GPU here: the rated clocks are <NA>
            assert ours == NULLABLE[dtype], column
            assert frame[column].isna().all()
        else:
            assert ours in {dtype, NULLABLE.get(dtype)}, (column, ours, dtype)
    units = {
        str(m): (None if isinstance(u, float) and math.isnan(u) else u)
        for m, u in zip(frame["Metric"], frame["Unit"], strict=True)
    }
    assert units == theirs["units"]  # normalized too: nsight-python keeps the unit
    assert warned == theirs["warnings"]


def _in_our_order(theirs: list[str], ours: list[str]) -> list[str]:
    """nsight-python's columns in its order, its collectors' (set-ordered) as ours."""
    fixed = [c for c in theirs if c in ours]
    collectors = [c for c in theirs if c not in FROZEN["single_run"]["columns"]]
    collectors = [c for c in collectors if c not in {"n", "mode", "NormalizationValue"}]
    ordered = [c for c in ours if c in collectors]
    it = iter(ordered)
    return [next(it) if column in collectors else column for column in fixed]


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_rows_keys_and_missing_values_as_nsight_python(name: str) -> None:
    theirs = FROZEN[name]["rows"]
    frame, _ = _ours(name)
    assert len(frame) == len(theirs)
    keys = ["Annotation", "Metric", "NumRuns", "Normalized"]
    keys += [c for c in ("n", "mode") if c in frame.columns]
    ours = frame[keys].to_dict("records")
    # In nsight-python's order: measured rows, then derived; region by region.
    assert list(map(repr, ours)) == [repr({k: row[k] for k in keys}) for row in theirs]
    mine = {repr({k: r[k] for k in keys}): r for r in frame.to_dict("records")}
    for row in theirs:
        ours_row = mine[repr({k: row[k] for k in keys})]
        for column in ("StableMeasurement", "StdDev", "RelativeStdDevPct"):
            assert (row[column] is None) == bool(pd.isna(ours_row[column])), column


def test_one_run_leaves_stability_unknown() -> None:
    frame, _ = _ours("single_run")
    assert frame["StableMeasurement"].isna().all()
    assert str(frame["StableMeasurement"].dtype) == "boolean"


def test_normalization_value_is_the_divisor() -> None:
    frame, _ = _ours("collectors_derive_normalize")
    columns = list(frame.columns)
    assert columns.index("NormalizationValue") == columns.index("Normalized") + 1
    base = frame[frame["Annotation"] == "a"]
    # nsight-python's: the target region's AvgValue divided by its own mean is 1,
    # and the divisor is that mean; nsight-lab's median has its own divisor.
    assert base["AvgValue"].tolist() == pytest.approx([1.0] * len(base))
    assert base["MedianValue"].tolist() == pytest.approx([1.0] * len(base))
    # Min and Max stay as measured: the mean the ratio came from lies between them.
    mean = frame["AvgValue"] * frame["NormalizationValue"]
    assert (frame["MinValue"] <= mean * (1 + 1e-9)).all()
    assert (mean <= frame["MaxValue"] * (1 + 1e-9)).all()
    assert (frame["Normalized"] == "a").all()


def test_collector_columns_aggregate_as_nsight_python() -> None:
    frame, _ = _ours("collectors_derive_normalize")
    assert (frame["tool_version"] == "1.0").all()
    assert (frame["elements_Avg"] == frame["n"] ** 2).all()
    assert (frame["elements_Std"] == 0).all()
    assert (frame["run_tag"] == [f"run-{n}" for n in frame["n"]]).all()
    lengths = frame["Annotation"].str.len()
    assert (frame["name_length_Min"] == lengths).all()
    assert (frame["name_length_Max"] == lengths).all()
