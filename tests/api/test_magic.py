"""The magic's nsight-python expressiveness (issue 12), on the real cpu backend.

``--derive`` takes nsight-python's derive functions, ``--combine`` a notebook function,
``--ignore-kernels``, ``--replay-mode``, ``--thermal manual`` with
``--thermal-settings``, ``--output-csv``, ``--configs-from``; and ``import nsight`` in
a cell is nsight-python's whole API where nsight-python is not installed.
"""

from __future__ import annotations

import importlib.util
import math
import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pytest

from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.options import ThermalSettings, parse_options, split_kernel_names
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

CELL = textwrap.dedent(
    """\
    import nsight
    with nsight.annotate("sum"):
        sum(range(n))
    with nsight.annotate("sort"):
        sorted(range(n), reverse=True)
    """
)


def run(ip: InteractiveShell, line: str, cell: str = CELL) -> Any:
    return ip.run_cell(f"%%nsight --backend cpu --warmup 0 --quiet {line}\n{cell}")


def test_derive_takes_nsight_pythons_functions(ip: InteractiveShell) -> None:
    ip.user_ns["tput"] = lambda time_ns, n: (n / time_ns, "items/ns")
    ip.user_ns["two"] = lambda time_ns, n: {"a": (time_ns, "ns"), "b": n * 1.0}
    result = run(ip, "--configs 1000,2000 --runs 3 --derive tput,two --out d")
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns["d"]
    units = dict(zip(frame["Metric"], frame["Unit"], strict=True))
    assert units["tput"] == "items/ns"
    assert units["a"] == "ns"
    assert math.isnan(units["b"])
    rows = frame.set_index(["Annotation", "Metric", "n"])
    assert rows.loc[("sum", "a", 1000), "AvgValue"] == pytest.approx(
        rows.loc[("sum", TIME_METRIC, 1000), "AvgValue"]
    )


def test_a_notebook_function_shadows_a_builtin_derive_with_a_note(
    ip: InteractiveShell,
) -> None:
    ip.user_ns["tflops"] = lambda time_ns, n: (n / time_ns, "mine")
    try:
        result = run(ip, "--configs 500 --runs 2 --derive tflops --out t")
        assert result.error_in_exec is None, result.error_in_exec
        frame = ip.user_ns["t"]
        assert set(frame.loc[frame["Metric"] == "tflops", "Unit"]) == {"mine"}
        with RunStore() as store:
            session = store.get_session(int(frame["SessionId"].iloc[0]))
        assert any(
            "the notebook's function tflops() is used" in n for n in session.notes
        )
    finally:
        del ip.user_ns["tflops"]


def test_combine_resolves_a_notebook_function(ip: InteractiveShell) -> None:
    from IPython.core.error import UsageError

    ip.user_ns["add2"] = lambda x, y: x + y
    ok = run(ip, "--configs 10 --runs 1 --combine add2 --out c")
    assert ok.error_in_exec is None, ok.error_in_exec
    with RunStore() as store:
        session = store.get_session(int(ip.user_ns["c"]["SessionId"].iloc[0]))
    assert session.options["combine"] == "add2"
    ip.user_ns["unary"] = lambda x: x
    for name in ("unary", "missing_fn"):
        bad = run(ip, f"--configs 10 --combine {name}")
        assert isinstance(bad.error_in_exec, UsageError)
        assert f"--combine {name}: no function {name}(x, y)" in str(bad.error_in_exec)


def test_kernel_thermal_and_replay_options_parse() -> None:
    opts = parse_options(
        "--ignore-kernels 'void gemm<float, 128>(int, int)',relu "
        "--replay-mode range --thermal manual "
        "--thermal-settings wait=5,cont=15,timeout=60,device=1"
    )
    assert opts.ignore_kernels == ("void gemm<float, 128>(int, int)", "relu")
    assert opts.replay_mode == "range"
    assert opts.thermal == "manual"
    assert opts.thermal_settings == ThermalSettings(5, 15, 60, 1)
    assert split_kernel_names("a,b<c, d>,e") == ["a", "b<c, d>", "e"]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("--thermal-settings wait=20,cont=10", "cont (10 C) must be above wait"),
        ("--thermal-settings hot=3", "expected wait=C,cont=C"),
        ("--thermal off --thermal-settings wait=3", "no effect with --thermal off"),
        ("--ignore-kernels a,,b", "empty kernel name"),
        ("--replay-mode app", "--replay-mode: unknown value 'app'"),
        ("--configs 1 --configs-from cfg", "--configs-from gives the configs itself"),
        ("--configs-from 1x", "--configs-from: '1x' is not a valid Python name"),
    ],
)
def test_bad_new_options_name_the_option(line: str, fragment: str) -> None:
    from nsight_lab.errors import OptionError

    with pytest.raises(OptionError) as caught:
        parse_options(line)
    assert fragment in str(caught.value)


def test_output_csv_writes_both_files(ip: InteractiveShell, tmp_path: Path) -> None:
    prefix = tmp_path / "csv" / "p_"
    result = run(
        ip, f"--configs 100,200 --runs 2 --name 'my run' --output-csv {prefix} --out o"
    )
    assert result.error_in_exec is None, result.error_in_exec
    session_id = int(ip.user_ns["o"]["SessionId"].iloc[0])
    raw = pd.read_csv(tmp_path / "csv" / f"p_profiled_data-my_run-{session_id}.csv")
    processed = pd.read_csv(
        tmp_path / "csv" / f"p_processed_data-my_run-{session_id}.csv"
    )
    assert len(raw) == 2 * 2 * 2
    assert list(raw.columns[:9]) == [
        "Annotation", "Value", "Metric", "Kernel", "GPU", "Host", "ComputeClock",
        "MemoryClock", "Unit",
    ]  # fmt: skip
    assert len(processed) == 4


def test_output_csv_neutralises_spreadsheet_formulas(
    ip: InteractiveShell, tmp_path: Path
) -> None:
    """An annotation that a spreadsheet would run as a formula is written as text."""
    prefix = tmp_path / "csv" / "f_"
    hostile = '=HYPERLINK("http://example.invalid","x")'
    cell = f"import nsight\nwith nsight.annotate({hostile!r}):\n    sum(range(9))\n"
    result = run(ip, f"--runs 2 --output-csv {prefix} --out o", cell)
    assert result.error_in_exec is None, result.error_in_exec
    files = sorted((tmp_path / "csv").iterdir())
    assert len(files) == 2
    for path in files:
        frame = pd.read_csv(path)
        assert set(frame["Annotation"]) == {"'" + hostile}, path.name
        cells = [str(v) for v in frame.to_numpy().ravel()] + list(frame.columns)
        assert not [c for c in cells if c.startswith(("=", "+", "@"))], path.name
        assert (frame["AvgValue" if "AvgValue" in frame else "Value"] > 0).all()


def test_configs_from_lists_of_tuples_dicts_and_values(ip: InteractiveShell) -> None:
    from IPython.core.error import UsageError

    ip.user_ns["pairs"] = [(300, np.float32), (600, np.int64)]
    cell = textwrap.dedent(
        """\
        import nsight, numpy
        with nsight.annotate("z"):
            numpy.zeros(n, dtype=dtype).sum()
        """
    )
    result = run(ip, "--configs-from n,dtype=pairs --runs 2 --out p", cell)
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns["p"]
    assert frame["dtype"].tolist() == [np.float32, np.int64]  # the objects themselves
    with RunStore() as store:
        session = store.get_session(int(frame["SessionId"].iloc[0]))
    assert session.configs == [
        {"n": 300, "dtype": str(np.float32)},
        {"n": 600, "dtype": str(np.int64)},
    ]
    ip.user_ns["dicts"] = [{"n": 50}, {"n": 70}]
    assert run(ip, "--configs-from dicts --out q").error_in_exec is None
    assert ip.user_ns["q"]["n"].tolist() == [50, 70, 50, 70]  # region by region
    ip.user_ns["plain"] = [40, 80]
    assert run(ip, "--configs-from plain --out r").error_in_exec is None
    assert sorted(set(ip.user_ns["r"]["n"])) == [40, 80]
    for line, fragment in [
        ("--configs-from nothing_here", "expected a non-empty list"),
        ("--configs-from pairs", "config 0 has 2 values for 1 name"),
    ]:
        bad = run(ip, line, cell)
        assert isinstance(bad.error_in_exec, UsageError)
        assert fragment in str(bad.error_in_exec)


@pytest.mark.skipif(
    importlib.util.find_spec("nsight") is not None,
    reason="nsight-python is installed: import nsight is NVIDIA's (switch with "
    "import nsight_lab as nsight)",
)
def test_import_nsight_is_the_whole_api_in_a_notebook(ip: InteractiveShell) -> None:
    result = ip.run_cell(
        textwrap.dedent(
            """\
            import nsight
            nsight.use_backend("cpu")

            @nsight.analyze.kernel(configs=[(100,), (200,)], runs=2,
                                   verbosity=nsight.VerbosityLevel.SILENT)
            def bench(n):
                with nsight.annotate("r"):
                    sum(range(n))

            shim_frame = bench().to_dataframe()
            nsight.use_backend(None)
            """
        )
    )
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns["shim_frame"]
    assert sorted(set(frame["n"])) == [100, 200]
    assert (frame["Backend"] == "cpu").all()
