"""A failure after the runs never deletes them (real IPython shell, cpu backend)."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import nsight_lab
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    import pytest
    from IPython.core.interactiveshell import InteractiveShell

REGIONS = textwrap.dedent(
    """\
    import nsight
    with nsight.annotate("work"):
        sum(range(n))
    """
)


def _only_session() -> tuple[int, str, str | None, list[str], int]:
    """The store's one session: id, status, error, notes and stored run count."""
    with RunStore() as store:
        (session,) = store.list_sessions(limit=10)
        runs = store.runs(session.id)
        return session.id, session.status, session.error, list(session.notes), len(runs)


def test_derive_raising_for_one_config_keeps_the_durations(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """``per_item`` divides by zero for n=0: that config's value is NaN, with a note."""
    ip.user_ns["per_item"] = lambda duration_ns, n: duration_ns / n
    result = ip.run_cell(
        "%%nsight --backend cpu --configs 0,100 --runs 5 --warmup 0 --quiet "
        "--out framed --derive per_item\n" + REGIONS
    )
    assert result.error_in_exec is None, result.error_in_exec
    sid, status, error, notes, stored = _only_session()
    assert (status, error, stored) == ("completed", None, 10)

    frame = ip.user_ns["framed"]
    durations = frame[frame["Metric"] == TIME_METRIC].set_index("n")
    assert (durations["NumRuns"] == 5).all()
    assert (durations["AvgValue"] > 0).all()  # the durations stand
    derived = frame[frame["Metric"] == "per_item"].set_index("n")
    assert math.isnan(derived.loc[0, "AvgValue"])
    assert derived.loc[100, "AvgValue"] > 0  # the config where it worked

    (note,) = frame.attrs["notes"]
    assert note in notes  # kept with the session, for the sidebar and history
    assert "--derive per_item" in note
    assert "n=0" in note
    assert "ZeroDivisionError" in note
    assert "\n" not in note
    assert f"session {sid}: {note}" in capsys.readouterr().err


def test_derive_returning_a_string_keeps_the_session(ip: InteractiveShell) -> None:
    ip.user_ns["label"] = lambda duration_ns, **_config: f"{duration_ns} ns"
    result = ip.run_cell(
        "%%nsight --backend cpu --configs 10,20,30,40,50 --runs 3 --warmup 0 --quiet "
        "--out labelled --derive label\n" + REGIONS
    )
    assert result.error_in_exec is None, result.error_in_exec
    _, status, _, stored_notes, stored = _only_session()
    assert (status, stored) == ("completed", 15)
    frame = ip.user_ns["labelled"]
    notes = frame.attrs["notes"]
    assert set(notes) <= set(stored_notes)
    assert frame.loc[frame["Metric"] == "label", "AvgValue"].isna().all()
    assert len(frame[frame["Metric"] == TIME_METRIC]) == 5
    # One line per config for the first three, then a count: a failing function on a
    # big grid does not bury the output.
    assert len(notes) == 4
    assert all("returned '" in n for n in notes[:3])
    assert "return a number" in notes[0]
    assert "2 more configs" in notes[3]


def test_empty_annotation_on_run_5_keeps_the_finished_runs(
    ip: InteractiveShell,
) -> None:
    from IPython.core.error import UsageError

    ip.user_ns["calls"] = 0
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 20 --warmup 0 --quiet\n"
        + textwrap.dedent(
            """\
            import nsight
            calls += 1
            with nsight.annotate("" if calls == 6 else "step"):
                sum(range(100))
            """
        )
    )
    error = result.error_in_exec
    assert isinstance(error, UsageError), error
    sid, status, reason, _, stored = _only_session()
    assert stored == 5  # runs 0-4 finished before run 5 raised
    assert status == "failed"
    assert reason is not None
    assert "region name must be a non-empty string" in reason
    message = str(error)
    assert "region name must be a non-empty string" in message
    assert f"session {sid} kept with its 5 runs: %nsight show {sid}" in message
    assert "\n" not in message
    shown = ip.run_line_magic("nsight", f"show {sid} --frame")
    assert int(shown["NumRuns"].iloc[0]) == 5


def test_normalize_against_a_missing_region_keeps_the_runs(
    ip: InteractiveShell,
) -> None:
    from IPython.core.error import UsageError

    result = ip.run_cell(
        "%%nsight --backend cpu --runs 3 --warmup 0 --quiet "
        "--normalize-against missing\n" + REGIONS.replace("range(n)", "range(9)")
    )
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    sid, status, reason, _, stored = _only_session()
    assert status == "failed"
    assert reason is not None
    assert "missing" in reason
    assert stored >= 1
    assert f"session {sid} kept with its" in str(result.error_in_exec)


def test_cell_error_says_the_runs_were_kept(ip: InteractiveShell) -> None:
    ip.user_ns["calls"] = 0
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 10 --warmup 0 --quiet\n"
        "calls += 1\n"
        "if calls == 4:\n"
        "    raise KeyError('boom')\n"
    )
    error = result.error_in_exec
    assert isinstance(error, KeyError)  # the cell's own exception, unchanged
    sid, status, reason, _, stored = _only_session()
    assert (status, reason, stored) == ("failed", "KeyError: 'boom'", 3)
    notes = getattr(error, "__notes__", None)
    if notes is not None:  # Python 3.11+
        assert f"session {sid} kept with its 3 runs: %nsight show {sid}" in notes[0]


def test_a_bad_option_before_any_run_leaves_nothing(ip: InteractiveShell) -> None:
    from IPython.core.error import UsageError

    result = ip.run_cell(
        "%%nsight --backend cpu --runs 3 --warmup 0 --quiet\n"
        "import nsight\nwith nsight.annotate(''):\n    pass\n"
    )
    assert isinstance(result.error_in_exec, UsageError)
    with RunStore() as store:
        assert store.list_sessions(limit=10) == []


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _shown_traceback(ip: InteractiveShell, error: BaseException) -> str:
    """The traceback IPython shows for ``error``, without colours."""
    lines = ip.InteractiveTB.structured_traceback(
        type(error), error, error.__traceback__
    )
    return ANSI.sub("", "\n".join(lines))


def test_cell_error_shows_the_users_frames_not_nsight_labs(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 3 --warmup 0 --quiet\nx = 1\nx / 0\n"
    )
    error = result.error_in_exec
    assert isinstance(error, ZeroDivisionError)
    shown = _shown_traceback(ip, error)
    assert "----> 2 x / 0" in shown  # the user's cell, at the failing line
    assert "ZeroDivisionError" in shown
    package = str(Path(nsight_lab.__file__).parent)
    assert package not in shown
    assert "nsight_lab" not in shown
    # What run_cell printed is the same: no nsight-lab frame.
    printed = ANSI.sub("", capsys.readouterr().out)
    assert "x / 0" in printed
    assert package not in printed


def test_a_failure_of_nsight_lab_itself_keeps_its_frames(
    ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nsight_lab.runner import Runner

    def broken(*_args: object, **_kwargs: object) -> None:
        msg = "a bug in nsight-lab"
        raise RuntimeError(msg)

    monkeypatch.setattr(Runner, "_collect", broken)
    result = ip.run_cell("%%nsight --backend cpu --runs 3 --warmup 0 --quiet\nx = 1\n")
    error = result.error_in_exec
    assert isinstance(error, RuntimeError)
    assert "nsight_lab" in _shown_traceback(ip, error)  # where to look for the bug
