"""How a ``%%nsight`` cell ends, said truthfully and briefly (issue 22).

On dbddba1: after a store write failed mid-run the message counted the runs handed to
the writer ("kept with its 638 runs" while the store held 0); a ``--derive`` that
called ``sys.exit()`` marked the session failed; a failure of the final display left a
bare traceback naming no session and ``--out`` unset; a Ctrl-C that landed between
runs printed ~80 lines of nsight-lab's frames; a derive returning +-inf printed numpy
warnings; and the DataFrame's text form printed the control characters of region
names raw.
"""

from __future__ import annotations

import re
import textwrap
import time
import warnings
from typing import TYPE_CHECKING

import nsight_lab.runner
from nsight_lab.errors import StoreError
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from pathlib import Path

    import pytest
    from IPython.core.interactiveshell import InteractiveShell

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _only_session() -> tuple[int, str, list[str], int, int]:
    """The one session: id, status, notes, distinct runs stored, newest run index."""
    with RunStore() as store:
        (session,) = store.list_sessions(limit=10)
        runs, last = store.runs_done(session.id)
        return (
            session.id,
            session.status,
            list(session.notes),
            runs,
            -1 if last is None else last[1],
        )


def test_a_write_failure_says_what_the_store_holds_and_its_last_run(
    ip: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store fault on the second batch (a full disk): the count is read back."""
    from IPython.core.error import UsageError

    real = RunStore.add_runs
    batches = []

    def full_disk(self: RunStore, records: list) -> list[int]:
        batches.append(len(records))
        if len(batches) > 1:
            msg = "cannot add runs at 'store.sqlite': database or disk is full"
            raise StoreError(msg)
        return real(self, records)

    monkeypatch.setattr(RunStore, "add_runs", full_disk)
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 5000 --warmup 0 --quiet\nsum(range(3))\n"
    )
    error = result.error_in_exec
    assert isinstance(error, UsageError), error
    monkeypatch.setattr(RunStore, "add_runs", real)
    sid, status, _, stored, last = _only_session()
    assert status == "failed"
    assert 0 < stored < 5000
    message = str(error)
    assert "\n" not in message
    assert "database or disk is full" in message
    kept = re.search(r"session (\d+) kept with the (\d+) runs? the store", message)
    assert kept is not None, message
    assert (int(kept.group(1)), int(kept.group(2))) == (sid, stored)
    assert f"the last config 0 run {last} (" in message
    assert "later runs not stored" in message
    assert message.endswith(f": %nsight show {sid})")


def test_a_cell_error_counts_the_stored_runs(ip: InteractiveShell) -> None:
    ip.user_ns["calls"] = 0
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 10 --warmup 0 --quiet\n"
        "calls += 1\nif calls == 4:\n    raise KeyError('boom')\n"
    )
    assert isinstance(result.error_in_exec, KeyError)
    sid, status, _, stored, _ = _only_session()
    assert (status, stored) == ("failed", 3)
    notes = result.error_in_exec.__notes__
    said = f"session {sid} kept with its 3 runs: %nsight show {sid} (marked failed)"
    assert notes == [f"nsight-lab: {said}"]


def test_a_derive_calling_sys_exit_keeps_the_session_completed(
    ip: InteractiveShell,
) -> None:
    def leaves(duration_ns: float, n: int) -> float:  # noqa: ARG001
        raise SystemExit(3)

    ip.user_ns["leaves"] = leaves
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 2 --warmup 0 --quiet --configs 5 "
        "--derive leaves --out f\nsum(range(n))\n"
    )
    assert result.error_in_exec is None, result.error_in_exec
    _, status, notes, stored, _ = _only_session()
    assert (status, stored) == ("completed", 2)
    assert any("raised SystemExit: 3" in note for note in notes), notes
    frame = ip.user_ns["f"]
    assert frame[frame["Metric"] == "leaves"]["AvgValue"].isna().all()
    ip.user_ns.pop("leaves")  # the shell is every test's: no callable left behind


def test_a_failing_final_display_names_the_session_and_binds_out(
    ip: InteractiveShell,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from nsight_lab.views.live import WidgetView

    def broken(*_args: object, **_kwargs: object) -> None:
        msg = "the figure could not be built"
        raise ValueError(msg)

    monkeypatch.setattr(WidgetView, "finish", broken)
    ip.user_ns.pop("shown_out", None)
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 2 --warmup 0 --out shown_out\nsum(range(9))\n"
    )
    assert result.error_in_exec is None, result.error_in_exec
    sid, status, notes, stored, _ = _only_session()
    assert (status, stored) == ("completed", 2)
    assert "shown_out" in ip.user_ns
    assert len(ip.user_ns["shown_out"]) == 1
    said = (
        f"nsight-lab session {sid}: the final display failed (ValueError: the figure "
        "could not be built); the results are stored"
    )
    err = capsys.readouterr().err
    assert said in err
    assert "Traceback" not in err
    assert any("the final display failed" in note for note in notes)


def test_a_ctrl_c_between_runs_is_two_lines(
    ip: InteractiveShell,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C landing in nsight-lab's own code: the runner, between two runs.

    The interrupt is raised from a function compiled under runner.py's name, as a
    real SIGINT lands there: no frame of the traceback is the user's.
    """
    from nsight_lab.runner import Runner

    scope = {"real": Runner._collect, "calls": [0]}  # noqa: SLF001
    source = textwrap.dedent(
        """\
        def collect(self, *, wait):
            calls[0] += 1
            if calls[0] == 5:
                raise KeyboardInterrupt
            return real(self, wait=wait)
        """
    )
    exec(compile(source, nsight_lab.runner.__file__, "exec"), scope)  # noqa: S102
    monkeypatch.setattr(Runner, "_collect", scope["collect"])
    capsys.readouterr()
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 10 --warmup 0 --quiet\nsum(range(9))\n"
    )
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    sid, status, _, stored, _ = _only_session()
    assert status == "interrupted"
    printed = ANSI.sub("", capsys.readouterr().out).strip().splitlines()
    assert printed == [
        "KeyboardInterrupt (in nsight-lab's code; its frames not shown)",
        (
            f"nsight-lab: session {sid} kept with its {stored} runs: "
            f"%nsight show {sid} (interrupted)"
        ),
    ]


def test_a_derive_returning_infinities_prints_no_warning(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.user_ns["endless"] = lambda _ns, n: (
        (float("inf") if n == 1 else float("-inf")),
        "x",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = ip.run_cell(
            "%%nsight --backend cpu --runs 3 --warmup 0 --quiet --configs 1,2 "
            "--derive endless --out inf_out\nsum(range(9))\n"
        )
    assert result.error_in_exec is None, result.error_in_exec
    assert [str(w.message) for w in caught] == []
    assert "Warning" not in capsys.readouterr().err
    frame = ip.user_ns["inf_out"]
    ip.user_ns.pop("endless")
    rows = frame[frame["Metric"] == "endless"]
    assert rows["AvgValue"].tolist() == [float("inf"), float("-inf")]
    assert rows["StdDev"].isna().all()


def test_the_frames_text_form_escapes_control_characters(
    ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "\x1b[2J\x1b]8;;http://x\x07red\u202eevil"
    cell = f"import nsight\nwith nsight.annotate({name!r}):\n    sum(range(9))\n"
    result = ip.run_cell(
        f"%%nsight --backend cpu --runs 2 --warmup 0 --quiet --out ctl\n{cell}"
    )
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns["ctl"]
    assert frame["Annotation"].iloc[0] == name  # the data as measured
    sid = int(frame["SessionId"].iloc[0])
    capsys.readouterr()
    ip.run_line_magic("nsight", f"show {sid}")  # the summary, printed
    printed = capsys.readouterr().out
    assert "\x1b" not in printed
    assert "\u202e" not in printed
    shown = ip.run_line_magic("nsight", f"show {sid} --frame")
    history = ip.run_line_magic("nsight", "history")
    for table in (frame, shown):
        for text in (repr(table), str(table), table._repr_html_()):
            assert "\x1b" not in text
            assert "\u202e" not in text
            assert "\x07" not in text
        assert "\\x1b[2J\\x1b]8;;http://x\\x07red\\u202eevil" in repr(table)
    assert "\x1b" not in repr(history)
    capsys.readouterr()
    ip.run_cell("ctl")  # IPython shows the returned frame: no raw escape printed
    assert "\x1b[2J" not in capsys.readouterr().out


def test_a_real_ctrl_c_in_a_real_kernel_is_short(tmp_path: Path) -> None:
    """SIGINT to a real kernel (jupyter_client) while a cell of many runs goes."""
    import os

    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, "NSIGHT_LAB_HOME": str(tmp_path / "home")}
    env.pop("NSIGHT_LAB_STORE", None)
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(tmp_path))
    try:
        reply = kc.execute_interactive("%load_ext nsight_lab", timeout=120)
        assert reply["content"]["status"] == "ok"
        msg_id = kc.execute(
            "%%nsight --backend cpu --runs 1000000 --warmup 0 --quiet\npass\n"
        )
        with RunStore(tmp_path / "home" / "store.sqlite") as store:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # a bound on waiting, not a pace
                sessions = store.list_sessions(limit=1)
                if sessions and store.runs_done(sessions[0].id)[0] > 0:
                    break
                time.sleep(0.1)
        km.interrupt_kernel()
        error = None
        while error is None:
            msg = kc.get_iopub_msg(timeout=120)
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "error"
            ):
                error = msg["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert error["ename"] == "KeyboardInterrupt"
    shown = ANSI.sub("", "\n".join(error["traceback"]))
    assert len(shown.splitlines()) <= 12, shown
    # A Ctrl-C while the writer's queue is full drops the batch waiting to go in:
    # the message then says so ("the N runs the store holds ... 1 later run not
    # stored"), and N is the store's count either way.
    kept = re.search(r"kept with (?:its|the) (\d+) runs?", shown)
    assert kept is not None, shown
    with RunStore(tmp_path / "home" / "store.sqlite") as store:
        (session,) = store.list_sessions(limit=1)
        assert session.status == "interrupted"
        assert int(kept.group(1)) == store.runs_done(session.id)[0]
    for module in ("runner.py", "session.py", "writer.py", "inprocess.py"):
        assert f"nsight_lab/{module}" not in shown, shown
