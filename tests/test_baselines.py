"""Baselines end to end: the store, ``%nsight baseline``, ``%%nsight --baseline`` on
the real cpu backend, and ``nsight-lab baseline/compare`` run as a subprocess against
a real SQLite store file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import numpy as np
import pytest

from nsight_lab.analysis.baselines import VerdictTable, set_baseline, verdict_table
from nsight_lab.cli import EXIT_REGRESSION, EXIT_USAGE
from nsight_lab.contract.records import TIME_METRIC, RunRecord, Telemetry
from nsight_lab.errors import BaselineError, NotFoundError, OptionError
from nsight_lab.store.run_store import RunStore
from nsight_lab.views.bundle import MIME_TYPE, final_bundle

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

RUNS = 20


def _session(
    store: RunStore,
    scale: float,
    *,
    seed: int,
    region: str = "scale",
    clock: float = 1980.0,
) -> int:
    """A completed session of one region: ``RUNS`` runs at RSD 0.5 %, a GPU backend."""
    rng = np.random.default_rng(seed)
    session = store.create_session(backend="events", configs=[{"n": 1024}])
    store.add_runs(
        [
            RunRecord(
                session_id=session.id,
                config_index=0,
                config={"n": 1024},
                run_index=i,
                annotation=region,
                duration_ns=float(scale * 40_000.0 * (1 + 0.005 * v)),
                backend="events",
                telemetry=Telemetry(sm_clock_mhz=clock),
            )
            for i, v in enumerate(rng.standard_normal(RUNS))
        ]
    )
    store.finish_session(session.id, "completed")
    return session.id


# -- the store and the core ----------------------------------------------------------


def test_set_moves_a_name_and_defaults_to_the_latest_completed_session() -> None:
    with RunStore() as store:
        with pytest.raises(BaselineError, match="no completed session yet"):
            set_baseline(store, "main", None)
        first = _session(store, 1.0, seed=1)
        second = _session(store, 1.0, seed=2)
        running = store.create_session(backend="cpu").id  # not completed: skipped
        assert set_baseline(store, "main", None).session_id == second
        assert set_baseline(store, "old", str(first)).session_id == first
        assert set_baseline(store, "alias", "old").session_id == first  # a name
        assert set_baseline(store, "main", str(first)).session_id == first  # moved
        assert [(b.name, b.session_id) for b in store.list_baselines()] == [
            ("alias", first), ("main", first), ("old", first),
        ]  # fmt: skip
        with pytest.raises(NotFoundError):
            set_baseline(store, "x", "999")
        with pytest.raises(OptionError, match="baseline name: '9lives' is not a"):
            set_baseline(store, "9lives", None)
        assert running not in {b.session_id for b in store.list_baselines()}
        # Deleting the session deletes its baselines (nothing points nowhere).
        store.delete_session(first)
        assert store.list_baselines() == []


def test_baselines_and_verdicts_on_both_engines(store_location: Path | str) -> None:
    """The same SQL on SQLite and PostgreSQL: upsert, cascade, SET NULL."""
    with RunStore(store_location) as store:
        base = _session(store, 1.0, seed=1)
        slow = _session(store, 1.05, seed=2)
        store.set_baseline("main", base)
        store.set_baseline("main", slow)  # moved, not duplicated
        assert [(b.name, b.session_id) for b in store.list_baselines()] == [
            ("main", slow)
        ]
        assert store.latest_completed_session() == slow
        store.set_baseline("main", base)
        table = verdict_table(store, base, slow, baseline="main")
        store.set_session_verdict(
            slow, baseline_name="main", baseline_session_id=base,
            verdict=table.overall.verdict, threshold=0.0,
        )  # fmt: skip
        store.set_session_verdict(  # replaced, not duplicated
            slow, baseline_name="main", baseline_session_id=base,
            verdict="slower", threshold=0.01,
        )  # fmt: skip
        assert store.session_verdicts([slow])[slow].threshold == 0.01
        store.delete_session(base)
        assert store.list_baselines() == []
        assert store.session_verdicts([slow])[slow].baseline_session_id is None
    assert table.overall.verdict == "slower"


def test_a_kept_verdict_survives_its_baseline_session_being_deleted() -> None:
    with RunStore() as store:
        base = _session(store, 1.0, seed=1)
        slow = _session(store, 1.05, seed=2)
        store.set_session_verdict(
            slow, baseline_name="main", baseline_session_id=base,
            verdict="slower", threshold=0.02,
        )  # fmt: skip
        store.delete_session(base)
        (kept,) = store.session_verdicts([slow, base]).values()
    assert (kept.baseline_name, kept.baseline_session_id) == ("main", None)
    assert (kept.verdict, kept.threshold) == ("slower", 0.02)


def test_the_verdict_table_in_the_final_bundle_static_page_and_text() -> None:
    with RunStore() as store:
        base = _session(store, 1.0, seed=1, region="mul <b>")
        slow = _session(store, 1.05, seed=2, region="mul <b>")
        table = verdict_table(store, base, slow, baseline="main")
    assert isinstance(table, VerdictTable)
    assert table.regression
    wire = table.to_json()
    bundle = final_bundle(
        session_id=slow, status="completed", progress={}, message="", figures={},
        summary=[], verdicts=wire,
    )  # fmt: skip
    assert bundle[MIME_TYPE]["verdicts"] == wire
    text = bundle["text/plain"]
    heading = f"verdict: slower (session {slow} against baseline main session {base}"
    assert f"{heading}, threshold ±2.2 %)" in text
    # seeded: 5 % at RSD 0.5 %, widened by the events backend's 0.9 % drift
    assert "slower   +4.8 %  1.048\u00d7 [1.038, 1.058]" in text
    page = bundle["text/html"]
    assert '<tr data-verdict="slower">' in page
    assert "mul &lt;b&gt;" in page  # region names are text, not markup
    assert "<b>mul" not in page


# -- the magic -----------------------------------------------------------------------

CELL = textwrap.dedent(
    """\
    import nsight
    data = list(range(20_000))
    with nsight.annotate("sort"):
        sorted(data, reverse=True)
    """
)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("9lives", "--baseline: '9lives' is not a baseline name"),
        ("a;b", "--baseline: 'a;b' is not a baseline name"),
        ("missing", "--baseline: no baseline named 'missing'"),
    ],
)
def test_a_bad_baseline_is_one_line_naming_the_option_and_stores_nothing(
    ip: InteractiveShell, name: str, message: str
) -> None:
    from IPython.core.error import UsageError

    with RunStore() as store:
        set_baseline(store, "main", str(_session(store, 1.0, seed=1)))
        before = store.count_sessions()
    result = ip.run_cell(
        f"%%nsight --backend cpu --runs 3 --quiet --baseline {name}\n{CELL}"
    )
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    said = str(result.error_in_exec)
    assert said.startswith(message)
    assert "\n" not in said
    with RunStore() as store:
        assert store.count_sessions() == before


def test_baseline_commands_and_a_profile_against_a_baseline(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    from IPython.core.error import UsageError

    profile = f"%%nsight --backend cpu --runs 8 --warmup 1 --quiet --out res\n{CELL}"
    assert ip.run_cell(profile).error_in_exec is None
    first = int(ip.user_ns["res"]["SessionId"].iloc[0])
    assert ip.run_cell("%nsight baseline set main").error_in_exec is None
    assert capsys.readouterr().out.strip() == f"baseline main is session {first}"
    listed = ip.run_cell("%nsight baseline list").result
    assert list(listed["baseline"]) == ["main"]
    assert list(listed["session"]) == [first]
    shown = ip.run_cell("%nsight baseline show main").result
    assert set(shown["SessionId"]) == {first}

    result = ip.run_cell(profile.replace("--quiet", "--quiet --baseline main"))
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns["res"]
    second = int(frame["SessionId"].iloc[0])
    verdicts = frame.attrs["verdicts"]
    assert (verdicts["a"], verdicts["b"], verdicts["baseline"]) == (
        first, second, "main",
    )  # fmt: skip
    (row,) = [r for r in verdicts["rows"] if r["metric"] == TIME_METRIC]
    assert row["annotation"] == "sort"
    assert row["verdict"] in {"faster", "slower", "no change"}
    with RunStore() as store:
        kept = store.session_verdicts([second])[second]
    assert (kept.baseline_name, kept.baseline_session_id) == ("main", first)
    assert kept.verdict == verdicts["verdict"]["verdict"]

    bad = ip.run_cell("%nsight baseline frobnicate")
    assert isinstance(bad.error_in_exec, UsageError)
    assert str(bad.error_in_exec).startswith(
        "baseline: argument VERB: invalid choice: 'frobnicate' (choose from 'set'"
    )


# -- the command line, as CI runs it -------------------------------------------------


def _cli(*args: str, columns: int = 200) -> subprocess.CompletedProcess[str]:
    """The CLI as a terminal ``columns`` wide would run it."""
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(  # noqa: S603  (the installed interpreter, our module)
        [sys.executable, "-m", "nsight_lab.cli", *args],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


@pytest.fixture
def three() -> dict[str, int]:
    """A baseline, the same code again, and a session 5 % slower, in a store file."""
    with RunStore() as store:
        ids = {
            "base": _session(store, 1.0, seed=1),
            "same": _session(store, 1.0, seed=2),
            "slow": _session(store, 1.05, seed=3),
            "clocked": _session(store, 1.0, seed=4, clock=1755.0),
        }
        assert store.path.is_file()
    return ids


def test_cli_baseline_set_and_list(three: dict[str, int]) -> None:
    done = _cli("baseline", "set", "main", str(three["base"]))
    assert (done.returncode, done.stdout) == (
        0, f"baseline main is session {three['base']}\n",
    )  # fmt: skip
    done = _cli("baseline", "set", "latest")  # the latest completed session
    assert done.stdout == f"baseline latest is session {three['clocked']}\n"
    done = _cli("baseline", "list", "--json")
    assert done.returncode == 0
    rows = json.loads(done.stdout)
    assert [(r["baseline"], r["session"]) for r in rows] == [
        ("latest", three["clocked"]), ("main", three["base"]),
    ]  # fmt: skip


def test_cli_compare_exit_codes(three: dict[str, int]) -> None:
    assert _cli("baseline", "set", "main", str(three["base"])).returncode == 0
    slow, same = str(three["slow"]), str(three["same"])

    regressed = _cli("compare", "main", slow, "--fail-on-regression")
    assert regressed.returncode == EXIT_REGRESSION
    assert regressed.stdout.startswith(
        f"verdict: slower (session {slow} against baseline main session "
        f"{three['base']}, threshold ±2.2 %): 1 slower"
    )
    assert regressed.stderr == ""
    # Without --fail-on-regression the table is the answer: status 0.
    assert _cli("compare", "main", slow).returncode == 0
    # The same code is no regression; nor is 5 % within a 10 % threshold.
    assert _cli("compare", "main", same, "--fail-on-regression").returncode == 0
    loose = _cli("compare", "main", slow, "--threshold", "10", "--fail-on-regression")
    assert loose.returncode == 0
    assert "within the ±10 % threshold" in loose.stdout
    # Faster is no regression either.
    assert _cli("compare", slow, "main", "--fail-on-regression").returncode == 0

    as_json = _cli("compare", "main", slow, "--json")
    payload = json.loads(as_json.stdout)
    assert payload["verdict"]["verdict"] == "slower"
    assert payload["rows"][0]["ratio"] == pytest.approx(1.05, abs=0.01)


def test_cli_compare_flags_clocks_apart(three: dict[str, int]) -> None:
    done = _cli("compare", str(three["base"]), str(three["clocked"]))
    assert done.returncode == 0
    # The same time at an 11 % lower clock: per SM cycle 11 % faster. Which one
    # answers depends on what bounds the kernel: inconclusive, with both clocks.
    assert "inconclusive: clocks" in done.stdout
    assert "a at 1980 MHz" in done.stdout
    assert "b at 1755 MHz" in done.stdout
    assert "flagged rows: 1 with SM clocks apart" in done.stdout
    strict = ("--fail-on-regression", "--strict")
    pair = (str(three["base"]), str(three["clocked"]))
    assert _cli("compare", *pair, "--fail-on-regression").returncode == 0
    assert _cli("compare", *pair, *strict).returncode == EXIT_REGRESSION


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("compare", "nope", "1"), "compare A: no baseline named 'nope'"),
        (("compare", "1", "99"), "no session with id 99"),
        (("compare", "1", "2", "--threshold", "-1"), "expected a percentage"),
        (("compare", "1", "2", "--threshold", "x"), "expected a percentage"),
        (("baseline", "set", "1main"), "'1main' is not a baseline name"),
        (("baseline", "set", "main", "99"), "no session with id 99"),
    ],
)
def test_cli_mistakes_are_one_line_and_status_2(
    three: dict[str, int], args: tuple[str, ...], said: str
) -> None:
    assert three
    done = _cli(*args)
    assert done.returncode == EXIT_USAGE
    assert done.stdout == ""
    assert said in done.stderr
    assert done.stderr.count("\n") == 1


def test_cli_compare_escapes_terminal_control_characters() -> None:
    with RunStore() as store:
        a = _session(store, 1.0, seed=1, region="evil\x1b]0;owned\x07")
        b = _session(store, 1.0, seed=2, region="evil\x1b]0;owned\x07")
    done = _cli("compare", str(a), str(b))
    assert done.returncode == 0
    assert "\x1b" not in done.stdout
    assert "\x07" not in done.stdout
    assert "evil" in done.stdout
