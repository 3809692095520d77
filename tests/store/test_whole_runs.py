"""After a failed write the counts add up, and a run is stored whole (issue 29, 6).

At 0ab1fce, with a real ``ulimit -f`` filling the store mid-cell: the stored runs
plus "later runs not stored" were one more than the summary's runs, the progress
line was the last one drawn ("run 846 · elapsed 0.1 s"), the message said "check
the file ... writable", and the writer's batches of 500 records cut runs of three
regions: the store held regions a and b of the last run but not c. A second Ctrl-C
while the runs were being saved dropped the "kept N runs" line.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

from nsight_lab.contract.records import RunRecord
from nsight_lab.store.run_store import RunStore
from nsight_lab.store.writer import BATCH_ROWS, StoreWriter

if TYPE_CHECKING:
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

CELL = textwrap.dedent(
    """
    import os, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    from IPython.testing.globalipapp import start_ipython
    ip = start_ipython()
    ip.run_line_magic("load_ext", "nsight_lab")
    from nsight_lab.store.run_store import RunStore
    with RunStore():
        pass
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    ip.run_cell("import nsight_lab as nsight")
    r = ip.run_cell('''%%nsight --backend cpu --runs 20000 --warmup 0
    with nsight.annotate("a"):
        sum(range(3))
    with nsight.annotate("b"):
        sum(range(3))
    with nsight.annotate("c"):
        sum(range(3))
    ''')
    print("ERROR:", r.error_in_exec)
    """
)


def test_a_full_file_size_limit_counts_add_up_and_runs_are_whole(
    tmp_path: Path, nsight_home: Path
) -> None:
    script = tmp_path / "cell.py"
    script.write_text(CELL)
    done = subprocess.run(  # noqa: S603  (our interpreter, our script)
        [sys.executable, str(script), "3000000"],
        capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "NSIGHT_LAB_HOME": str(nsight_home)},
    )  # fmt: skip
    out = done.stdout + done.stderr
    error = next(line for line in out.splitlines() if line.startswith("ERROR:"))
    kept = re.search(
        r"kept with the (\d+) runs the store holds.*?\((\d+) later runs not stored\)",
        error,
    )
    assert kept is not None, out[-3000:]
    stored, lost = int(kept.group(1)), int(kept.group(2))
    assert "no space left on" in error
    assert "writable" not in error
    # The summary's runs (every region's row) are the stored plus the lost.
    shown = {
        int(n.replace(",", ""))
        for n in re.findall(r"^[abc]\s.*?\s([\d,]+)\s+none", out, re.MULTILINE)
    }
    assert shown == {stored + lost}, out[-3000:]
    # The progress line of the end is the end's.
    progress = re.findall(
        r"^(\d+) / 20000 runs · config 1 / 1 · run (\d+) / 20000", out, re.MULTILINE
    )
    assert progress, out[-3000:]
    assert int(progress[-1][0]) == int(progress[-1][1]) == stored + lost
    with RunStore() as store:
        (session,) = store.list_sessions(limit=5)
        assert store.runs_done(session.id)[0] == stored
        reader = store._reader()  # noqa: SLF001  (a raw count per region)
        assert reader is not None
        counts = dict(
            reader.execute(
                "SELECT annotation, count(*) FROM runs GROUP BY annotation"
            ).fetchall()
        )
    assert counts == {"a": stored, "b": stored, "c": stored}


def test_every_batch_holds_whole_runs(nsight_home: Path) -> None:
    """Runs of 3 regions (500 is not a multiple of 3): no batch ends mid-run."""
    del nsight_home
    with RunStore() as store:
        sid = store.create_session(backend="cpu").id
        batches: list[list[RunRecord]] = []
        real = store.add_runs

        def add_runs(records: list[RunRecord]) -> list[int]:
            batches.append(list(records))
            return real(records)

        store.add_runs = add_runs  # type: ignore[method-assign]
        with StoreWriter(store) as writer:
            for i in range(2000):
                writer.put([
                    RunRecord(
                        session_id=sid, config_index=0, config={}, run_index=i,
                        annotation=a, duration_ns=1.0, backend="cpu",
                    )
                    for a in "abc"
                ])  # fmt: skip
    assert sum(len(b) for b in batches) == 6000
    assert any(len(b) > BATCH_ROWS for b in batches) or len(batches) > 1
    for batch in batches:
        assert len(batch) % 3 == 0
        keys = {r.run_index for r in batch}
        assert len(keys) * 3 == len(batch)


def test_a_second_ctrl_c_while_saving_still_says_what_was_kept(
    ip: InteractiveShell,
) -> None:
    """The cell's Ctrl-C, then a real SIGINT while the store counts what it kept."""
    real = RunStore.runs_done
    sent: list[int] = []

    def count_then_interrupt(self: RunStore, session_id: int):
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, delivered here
        return real(self, session_id)

    RunStore.runs_done = count_then_interrupt  # type: ignore[method-assign]
    try:
        result = ip.run_cell(
            "%%nsight --backend cpu --runs 50 --warmup 0 --quiet\n"
            "calls = globals().get('calls', 0) + 1\n"
            "globals()['calls'] = calls\n"
            "if calls == 5:\n    raise KeyboardInterrupt\n"
        )
    finally:
        RunStore.runs_done = real  # type: ignore[method-assign]
        ip.user_ns.pop("calls", None)
    assert sent == [1]
    error = result.error_in_exec
    assert isinstance(error, KeyboardInterrupt)
    notes = getattr(error, "__notes__", [])
    assert any("kept with its 4 runs" in note for note in notes), notes
