from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from nsight_lab.cli import EXIT_USAGE, main
from nsight_lab.contract.records import RunRecord, Telemetry
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture
def two_sessions() -> list[int]:
    ids = []
    with RunStore() as store:
        for label, scale in (("first", 1.0), ("second", 2.0)):
            session = store.create_session(
                backend="cpu",
                name=label,
                device="dev",
                options={"params": {"n": [1, 2]}},
                configs=[{"n": 1}, {"n": 2}],
            )
            records = [
                RunRecord(
                    session_id=session.id,
                    config_index=ci,
                    config={"n": n},
                    run_index=r,
                    annotation="op",
                    duration_ns=scale * n * 1000.0 + r,
                    backend="cpu",
                    telemetry=Telemetry(sm_clock_mhz=1500.0, temperature_c=50.0),
                )
                for ci, n in enumerate((1, 2))
                for r in range(4)
            ]
            store.add_runs(records)
            store.finish_session(session.id, "completed")
            ids.append(session.id)
    return ids


@pytest.mark.usefixtures("two_sessions")
def test_history_lists_newest_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["second", "first"]
    assert [r["runs"] for r in rows] == [8, 8]
    assert main(["history", "--text", "first", "--json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == ["first"]


def test_show_summarizes_a_session(
    two_sessions: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(two_sessions[1]), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_n = {r["n"]: r for r in rows}
    assert by_n[1]["AvgValue"] == pytest.approx(2000 + 1.5)
    assert by_n[2]["AvgValue"] == pytest.approx(4000 + 1.5)
    assert by_n[1]["NumRuns"] == 4


def test_export_says_what_it_wrote_on_stderr(
    two_sessions: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Success says what was written (issue 30); stdout stays the data's."""
    csv_path = tmp_path / "runs.csv"
    assert main(["export", *map(str, two_sessions), "-o", str(csv_path)]) == 0
    said = capsys.readouterr()
    assert said.out == ""
    sessions = ", ".join(map(str, two_sessions))
    assert said.err.startswith(f"wrote the runs of sessions {sessions} to {csv_path} (")
    assert said.err.rstrip().endswith("B)")  # its size, e.g. (2.1 kB)
    assert main(["export", str(two_sessions[0]), "-o", "-"]) == 0
    piped = capsys.readouterr()
    assert piped.out.startswith("session_id,")
    assert "wrote" not in piped.err  # the data went where the user reads it


def test_export_csv_and_parquet(two_sessions: list[int], tmp_path: Path) -> None:
    csv_path = tmp_path / "runs.csv"
    assert main(["export", *map(str, two_sessions), "-o", str(csv_path)]) == 0
    frame = pd.read_csv(csv_path)
    assert len(frame) == 16
    assert set(frame["session_id"]) == set(two_sessions)
    assert {"duration_ns", "param_n", "sm_clock_mhz", "annotation"} <= set(
        frame.columns
    )
    parquet_path = tmp_path / "results.parquet"
    assert (
        main(
            [
                "export",
                str(two_sessions[0]),
                "--what",
                "results",
                "--format",
                "parquet",
                "-o",
                str(parquet_path),
            ]
        )
        == 0
    )
    results = pd.read_parquet(parquet_path)
    assert list(results["NumRuns"]) == [4, 4]
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


@pytest.mark.usefixtures("two_sessions")
def test_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nsight-lab: ")
    assert err.count("\n") == 1
    assert "999" in err
    assert main(["export", "1", "--format", "parquet"]) == 2
    assert "-o FILE" in capsys.readouterr().err
    assert main(["history", "--since", "yesterday"]) == 2
    assert "since" in capsys.readouterr().err


def test_doctor_runs_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 0
    names = [c["name"] for c in json.loads(capsys.readouterr().out)]
    assert {"GPU", "ncu", "NVML", "CUPTI"} <= set(names)


def _session_with(annotations: list[str], runs: int = 2, name: str = "x") -> int:
    with RunStore() as store:
        session = store.create_session(
            backend="cpu", name=name, device="dev",
            options={"params": {"n": [1]}}, configs=[{"n": 1}],
        )  # fmt: skip
        store.add_runs(
            [
                RunRecord(
                    session_id=session.id,
                    config_index=0,
                    config={"n": 1},
                    run_index=r,
                    annotation=a,
                    duration_ns=1000.0 + r,
                    backend="cpu",
                    telemetry=Telemetry(),
                )
                for r in range(runs)
                for a in annotations
            ]
        )
        store.finish_session(session.id, "completed")
        return session.id


HOSTILE = "\x1b[31mred"


def test_show_and_history_escape_terminal_controls(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sid = _session_with([HOSTILE, "a\u202eb", "c\x9b2Jd"], name="\x1b]8;;x\x07n")
    for argv in (["show", str(sid)], ["show", str(sid), "--runs"], ["history"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out
        assert "\x9b" not in out
        assert "\x07" not in out
        assert "\u202e" not in out
    assert main(["show", str(sid)]) == 0
    out = capsys.readouterr().out
    assert "\\x1b[31mred" in out
    assert "a\\u202eb" in out
    assert main(["show", str(sid), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)  # JSON escapes; it reads back exact
    assert HOSTILE in {r["Annotation"] for r in rows}


def test_show_piped_into_head_ends_quietly(nsight_home: Path) -> None:
    sid = _session_with(["a"], runs=3000)  # ~700 KB of table: more than a pipe holds
    env = {**os.environ, "NSIGHT_LAB_HOME": str(nsight_home)}
    command = [sys.executable, "-m", "nsight_lab.cli", "show", str(sid), "--runs"]
    with subprocess.Popen(  # noqa: S603  (as `nsight-lab show ID --runs | head -1`)
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # the reader is gone before the table is written
        err = proc.stderr.read().decode()
        status = proc.wait(timeout=60)
    assert b"session_id" in first
    assert "Traceback" not in err
    assert "BrokenPipeError" not in err
    assert err == ""
    assert status in {0, 141}


def test_shell_pipe_into_head(nsight_home: Path) -> None:
    sid = _session_with(["a"], runs=3000)
    env = {**os.environ, "NSIGHT_LAB_HOME": str(nsight_home)}
    cli = f"{shlex.quote(sys.executable)} -m nsight_lab.cli"
    done = subprocess.run(  # noqa: S602  (a shell pipeline is the point)
        f"{cli} show {sid} --runs | head -1; {cli} export {sid} | head -1",
        shell=True, capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout.count("\n") == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["history", "--since", "9999-12-31T23:59:59-05:00"],
        ["history", "--since", "0001-01-01T00:00:00+05:00"],
        ["history", "--until", "9999-12-31T23:59:59-14:00"],
        ["history", "--since", "x" * 100_000],
        ["history", "--since", "\x1b[31m2025"],
        ["history", "--since", "\ud800"],
        ["history", "--limit", "9" * 5000],
        ["history", "--offset", "99999999999999999999"],
        ["history", "--limit", "-1"],
        ["show", "99999999999999999999999"],
        ["show", "0"],
        ["show", "9" * 100_000],
        ["export", "99999999999999999999", "1"],
        ["frobnicate"],
    ],
)
def test_bad_arguments_and_extreme_dates_are_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(argv)
    err = capsys.readouterr().err
    if status == 0:  # an extreme but valid date: the filter works
        assert argv[1] in {"--since", "--until"}
        assert err == ""
        return
    assert status == 2
    assert err.startswith("nsight-lab: ")
    assert err.count("\n") == 1
    assert len(err) <= 320
    assert "\x1b" not in err
    assert "Traceback" not in err
    err.encode("utf-8")


def test_extreme_dates_in_a_subprocess_exit_0_or_2() -> None:
    for since in ("9999-12-31T23:59:59-05:00", "not a date"):
        done = subprocess.run(  # noqa: S603  (our own command)
            [sys.executable, "-m", "nsight_lab.cli", "history", "--since", since],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode in {0, 2}
        assert "Traceback" not in done.stderr
        assert done.stderr.count("\n") <= 1


def test_csv_export_neutralises_formulas(tmp_path: Path) -> None:
    cells = ['=HYPERLINK("http://x")', "+1+2", "-2+3", "@SUM(A1)", "\tx", "ok"]
    sid = _session_with(cells)
    path = tmp_path / "runs.csv"
    assert main(["export", str(sid), "-o", str(path)]) == 0
    text = path.read_bytes().decode("utf-8")  # keep CRs as written
    assert '\n"\'=HYPERLINK(""http://x"")"' in text or "'=HYPERLINK" in text
    frame = pd.read_csv(path, keep_default_na=False)
    annotations = set(frame["annotation"])
    assert {'\'=HYPERLINK("http://x")', "'+1+2", "'-2+3", "'@SUM(A1)"} <= annotations
    assert {"'\tx", "ok"} <= annotations
    assert not any(a and a[0] in "=+-@\t\r" for a in annotations)
    assert frame["duration_ns"].dtype.kind == "f"  # numbers stay numbers
    results = tmp_path / "results.csv"
    assert main(["export", str(sid), "--what", "results", "-o", str(results)]) == 0
    table = pd.read_csv(results, keep_default_na=False)
    assert '\'=HYPERLINK("http://x")' in set(table["Annotation"])
    assert table["AvgValue"].dtype.kind == "f"


def test_csv_cell_keeps_numbers() -> None:
    from nsight_lab.text.safe import csv_cell, frame_for_csv

    assert csv_cell(-1.5) == -1.5
    assert csv_cell(-3) == -3
    assert csv_cell("-1.5") == "-1.5"
    assert csv_cell("+2e-3") == "+2e-3"
    assert csv_cell("-1.5+A1") == "'-1.5+A1"
    assert csv_cell("=1") == "'=1"
    assert csv_cell("\rx") == "'\rx"
    assert csv_cell("\tx") == "'\tx"
    assert csv_cell("a=1") == "a=1"
    frame = pd.DataFrame({"v": [-1.5, 2.0], "t": ["-x", "y"], "=h": [1, 2]})
    safe = frame_for_csv(frame)
    assert safe["v"].tolist() == [-1.5, 2.0]
    assert safe["t"].tolist() == ["'-x", "y"]
    assert list(safe.columns) == ["v", "t", "'=h"]


BAD_LINES = [
    "show x",
    "show",
    "history 0",
    "history --limit -1",
    "bogus",
    "peaks --gpu",
    "baseline frobnicate",
    "baseline set",
    "compare 1",
    "compare 1 2 --threshold 500",
    "export 1 --format xml",
    "show 1 --nope",
]


@pytest.mark.parametrize("line", BAD_LINES)
def test_the_magic_and_the_cli_share_one_parser(
    line: str, capsys: pytest.CaptureFixture[str], ip: InteractiveShell
) -> None:
    """``nsight-lab LINE`` and ``%nsight LINE``: the same one-line error."""
    from IPython.core.error import UsageError

    assert main(line.split()) == EXIT_USAGE
    cli = capsys.readouterr().err.strip().removeprefix("nsight-lab: ")
    with pytest.raises(UsageError) as magic:
        ip.run_line_magic("nsight", line)
    assert "\n" not in str(magic.value)
    assert str(magic.value) == cli.replace("see nsight-lab", "see %nsight")
    assert "(see %nsight " in str(magic.value)


def test_the_magic_and_the_cli_print_the_same_help(
    capsys: pytest.CaptureFixture[str], ip: InteractiveShell
) -> None:
    from nsight_lab.cli.parser import build_parser

    assert main(["show", "--help"]) == 0
    cli = capsys.readouterr().out
    assert ip.run_line_magic("nsight", "show --help") is None
    magic = capsys.readouterr().out
    assert "--frame" in cli
    assert magic == cli.replace("nsight-lab", "%nsight")
    assert ip.run_line_magic("nsight", "help") is None
    assert build_parser("%nsight").format_help() in capsys.readouterr().out
