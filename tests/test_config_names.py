"""The names a cell's configs bind are the cell's own (issue 22).

On dbddba1 ``n`` stayed bound after a ``--configs`` cell, so a later ``--param size``
cell that still read ``n`` "completed", measuring the old size for every config. Now
each name is restored after the cell (or removed if it was new), and a cell that reads
an earlier cell's config name, unbound again, is told so in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

HEAD = "%%nsight --backend cpu --runs 2 --warmup 0 --quiet"


def _sessions() -> int:
    with RunStore() as store:
        return len(store.list_sessions(limit=100))


def test_config_names_are_removed_or_restored_after_the_cell(
    ip: InteractiveShell,
) -> None:
    for name in ("n", "size", "dtype"):
        ip.user_ns.pop(name, None)
    ip.user_ns["seen"] = []
    result = ip.run_cell(f"{HEAD} --configs 3,4\nseen.append(n)\n")
    assert result.error_in_exec is None, result.error_in_exec
    assert set(ip.user_ns["seen"]) == {3, 4}  # bound while the cell ran
    assert "n" not in ip.user_ns  # new: removed again
    ip.user_ns["size"] = "mine"
    result = ip.run_cell(f"{HEAD} --param size=7,8\nseen.append(size)\n")
    assert result.error_in_exec is None, result.error_in_exec
    assert ip.user_ns["size"] == "mine"  # the notebook's value, restored
    ip.user_ns["pairs"] = [(5, np.float32), (6, np.int64)]
    result = ip.run_cell(f"{HEAD} --configs-from n,dtype=pairs\nseen.append(dtype)\n")
    assert result.error_in_exec is None, result.error_in_exec
    assert "n" not in ip.user_ns
    assert "dtype" not in ip.user_ns


def test_names_are_restored_after_a_failing_cell(ip: InteractiveShell) -> None:
    ip.user_ns["n"] = 99
    result = ip.run_cell(f"{HEAD} --configs 1,2\nraise ValueError(n)\n")
    assert isinstance(result.error_in_exec, ValueError)
    assert ip.user_ns["n"] == 99


def test_reading_an_earlier_cells_config_name_is_one_line(
    ip: InteractiveShell,
) -> None:
    from IPython.core.error import UsageError

    ip.user_ns.pop("n", None)
    assert ip.run_cell(f"{HEAD} --configs 10,20\nsum(range(n))\n").error_in_exec is None
    before = _sessions()
    result = ip.run_cell(f"{HEAD} --param size=30,40\nsum(range(n * size))\n")
    error = result.error_in_exec
    assert isinstance(error, UsageError), error
    assert str(error) == (
        "%%nsight: the cell reads 'n', a config of an earlier %%nsight cell, unbound "
        "again after it; declare it in this cell (--configs V1,V2) or assign it in the "
        "notebook first"
    )
    assert _sessions() == before  # refused before anything was stored
    # Assigning it first, in the cell or the notebook, is reading one's own value.
    cell = "n = 2\nsum(range(n * size))\n"
    assert ip.run_cell(f"{HEAD} --param size=30\n{cell}").error_in_exec is None
    ip.user_ns["n"] = 5
    result = ip.run_cell(f"{HEAD} --param size=30\nsum(range(n * size))\n")
    assert result.error_in_exec is None
    assert ip.user_ns["n"] == 5


def test_a_function_reading_it_gets_a_note(ip: InteractiveShell) -> None:
    ip.user_ns.pop("n", None)
    assert ip.run_cell(f"{HEAD} --configs 10\nsum(range(n))\n").error_in_exec is None
    ip.run_cell("def reads_n_later():\n    return sum(range(n))\n")
    result = ip.run_cell(f"{HEAD} --param size=3\nreads_n_later()\n")
    ip.user_ns.pop("reads_n_later")  # the shell is every test's
    error = result.error_in_exec
    assert isinstance(error, NameError), error
    assert error.__notes__[-1] == (
        "nsight-lab: 'n' was a config of an earlier %%nsight cell and is unbound "
        "again after it; declare it in this cell (--configs or --param) or assign it "
        "in the notebook"
    )
