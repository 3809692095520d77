"""Hostile names and values at the options, configs and derives (issue 29, 1/4/7/8).

On 0ab1fce: ``--param`` names Python's parser normalises (NFKC, fullwidth or styled
letters) bound one name while the cell read another (a wrong measurement with no
error); ``--configs-from ['\\ud800']`` stored a session that failed with a traceback and
could never be exported; a 2-D numpy array, ``[10**5000]`` or a DataFrame given to
``--configs-from`` gave 100-line tracebacks or profiled column names; a derive raising
``GeneratorExit`` or a user's ``BaseException`` failed the session, one returning
``None`` or ``(1, 2, 3)`` gave NaN without a note or 1.0; ``--configs 1,1.0`` and
``--derive tflops,tflops`` were accepted; a BOM passed; a region name starting with a
no-break space before ``=`` reached a CSV cell unprefixed; an unwritable
``--output-csv`` was found after every run; a malformed ``NSIGHT_LAB_STORE`` URL was a
bare ``ValueError``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest

from nsight_lab.errors import OptionError, StoreError
from nsight_lab.options import parse_options
from nsight_lab.plan import json_value
from nsight_lab.store.run_store import RunStore
from nsight_lab.text.safe import csv_text

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from IPython.core.interactiveshell import InteractiveShell

HEAD = "%%nsight --backend cpu --runs 2 --warmup 0 --quiet"


def _sessions() -> list[tuple[int, str, list[str]]]:
    with RunStore() as store:
        return [(s.id, s.status, list(s.notes)) for s in store.list_sessions(limit=50)]


def _refused(ip: InteractiveShell, cell: str, *needles: str) -> str:
    """Run ``cell``: refused in one line naming ``needles``, nothing stored."""
    from IPython.core.error import UsageError

    before = _sessions()
    error = ip.run_cell(cell).error_in_exec
    assert isinstance(error, UsageError), repr(error)
    message = str(error)
    assert "\n" not in message
    assert len(message) <= 300
    message.encode("utf-8")
    for needle in needles:
        assert needle in message, message
    assert _sessions() == before, message
    return message


# -- 1: names as Python reads them (NFKC) ---------------------------------------------


def test_a_fullwidth_param_binds_the_name_the_cell_reads(ip: InteractiveShell) -> None:
    ip.user_ns["n"] = 5
    ip.user_ns["seen"] = []
    fullwidth_n = "\uff4e"
    result = ip.run_cell(
        f"{HEAD} --param {fullwidth_n}=100,200 --out f\nseen.append(n)\n"
    )
    assert result.error_in_exec is None, result.error_in_exec
    assert sorted(ip.user_ns["seen"]) == [100, 100, 200, 200]  # 0ab1fce: 5 each time
    frame = ip.user_ns.pop("f")
    assert set(frame["n"]) == {100, 200}  # labelled as read
    assert ip.user_ns["n"] == 5  # restored after the cell
    del ip.user_ns["n"]


def test_black_letter_h_is_h(ip: InteractiveShell) -> None:
    ip.user_ns["got"] = []
    result = ip.run_cell(f"{HEAD} --param \u210c=5\ngot.append(H)\n")
    assert result.error_in_exec is None, result.error_in_exec  # 0ab1fce: NameError 'H'
    assert ip.user_ns["got"] == [5, 5]


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("--param \uff21=1 --param A=2", "'A' is given twice"),
        ("--param n=1 --param \uff4e=2", "'n' is given twice"),
        ("--configs 1 --param \uff4e=2", "'n' is given twice"),
        ("--param \uff49\uff46=1", "reads as 'if'"),
        ("--param \uff50\uff52\uff49\uff4e\uff54=1", "a Python builtin"),
        ("--out \uff47\uff45\uff54_ipython", "IPython keeps"),
        ("--configs-from \uff21,A=pairs", "'A' is given twice"),
        ("--derive \uff54\uff46\uff4c\uff4f\uff50\uff53,tflops", "given twice"),
    ],
)
def test_names_that_read_alike_or_badly_are_refused(
    ip: InteractiveShell, line: str, needle: str
) -> None:
    with pytest.raises(OptionError, match=re.escape(needle)):
        parse_options(line)
    _refused(ip, f"{HEAD} {line}\npass\n", needle)


def test_out_and_derive_names_are_read_as_python_reads_them(
    ip: InteractiveShell,
) -> None:
    def halved(duration_ns: float, n: int) -> float:  # noqa: ARG001
        return duration_ns / 2

    ip.user_ns["halved"] = halved
    fullwidth = "\uff48\uff41\uff4c\uff56\uff45\uff44"  # halved
    result = ip.run_cell(
        f"{HEAD} --configs 3 --derive {fullwidth} --out \uff52\uff45\uff53\npass\n"
    )
    ip.user_ns.pop("halved")
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns.pop("res")  # bound as Python reads the name
    assert "halved" in set(frame["Metric"])


def test_config_dict_keys_that_read_alike_are_refused(ip: InteractiveShell) -> None:
    ip.user_ns["rows"] = [{"\uff21": 1, "A": 2}]
    _refused(ip, f"{HEAD} --configs-from rows\npass\n", "one name to Python")
    ip.user_ns["rows"] = [{"\uff4e": 7}]
    ip.user_ns["seen"] = []
    result = ip.run_cell(f"{HEAD} --configs-from rows\nseen.append(n)\n")
    assert result.error_in_exec is None, result.error_in_exec
    assert ip.user_ns["seen"] == [7, 7]
    del ip.user_ns["rows"]


# -- 4: text that cannot be encoded ---------------------------------------------------


def test_a_lone_surrogate_config_is_refused_at_the_option(ip: InteractiveShell) -> None:
    ip.user_ns["bad"] = ["\ud800"]
    _refused(ip, f"{HEAD} --configs-from bad\npass\n", "lone surrogate", "U+D800")
    ip.user_ns["bad"] = [("ok", "x\udfffy")]
    _refused(ip, f"{HEAD} --configs-from a,b=bad\npass\n", "b of config 0")
    del ip.user_ns["bad"]


def test_a_lone_surrogate_region_name_is_one_line(ip: InteractiveShell) -> None:
    from IPython.core.error import UsageError

    cell = f'{HEAD}\nimport nsight\nwith nsight.annotate("r\\ud800"):\n    pass\n'
    error = ip.run_cell(cell).error_in_exec
    assert isinstance(error, UsageError), repr(error)
    assert "\n" not in str(error)
    assert "lone surrogate (U+D800)" in str(error)
    for session_id, _, _ in _sessions():  # whatever was kept is UTF-8 all through
        with RunStore() as store:
            for record in store.runs(session_id):
                record.annotation.encode("utf-8")


@pytest.mark.parametrize(
    "value",
    ["\ud800", "a\udfffb", ("\ud800",), ["x", "\udc80"], {"k": "\ud83d"}],
)
def test_stored_config_text_is_always_utf8(value: object) -> None:
    stored = json_value(value)
    assert isinstance(stored, str)
    json.dumps(stored, ensure_ascii=False).encode("utf-8")  # exportable
    assert "\\ud" in stored  # escaped visibly, not dropped


@pytest.mark.parametrize("option", ["--name", "--configs", "--param x="])
def test_surrogates_in_options_are_one_line(option: str) -> None:
    with pytest.raises(OptionError, match="U\\+D800"):
        parse_options(f"{option}{'' if option.endswith('=') else ' '}'a\ud800'")


# -- 7: one line, or as the README says -----------------------------------------------


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (np.arange(6).reshape(3, 2), "2-D numpy array of shape (3, 2)"),
        (np.zeros((2, 2, 2)), "3-D numpy array"),
        ([10**5000], "about 5,001 digits"),
        ([-(2**64)], "fit in 64 bits"),
        (pd.DataFrame({"n": [1, 2], "m": [3, 4]}), "to_dict('records')"),
    ],
    ids=["2d-array", "3d-array", "10**5000", "-2**64", "dataframe"],
)
def test_configs_from_tables_and_huge_ints_are_one_line(
    ip: InteractiveShell, value: object, needle: str
) -> None:
    ip.user_ns["cfg"] = value
    _refused(ip, f"{HEAD} --configs-from cfg\npass\n", "--configs-from cfg", needle)
    del ip.user_ns["cfg"]


def test_a_list_of_numpy_rows_is_profiled_with_their_text(ip: InteractiveShell) -> None:
    ip.user_ns["cfg"] = [np.arange(2), np.arange(3)]
    result = ip.run_cell(f"{HEAD} --configs-from cfg\npass\n")
    assert result.error_in_exec is None, result.error_in_exec
    with RunStore() as store:
        (session,) = store.list_sessions(limit=1)
        assert store.get_session(session.id).configs == [
            {"n": "[0 1]"},
            {"n": "[0 1 2]"},
        ]
    del ip.user_ns["cfg"]


class _Custom(BaseException):
    """A user's own BaseException subclass."""


def _raises(exc: BaseException) -> Callable[..., float]:
    def derive(duration_ns: float, n: int) -> float:  # noqa: ARG001
        raise exc

    return derive


def _returns(value: object) -> Callable[..., object]:
    def derive(duration_ns: float, n: int) -> object:  # noqa: ARG001
        return value

    return derive


@pytest.mark.parametrize(
    ("derive", "note"),
    [
        (_raises(GeneratorExit()), "raised GeneratorExit"),
        (_raises(_Custom("mine")), "raised _Custom: mine"),
        (_raises(SystemExit(3)), "raised SystemExit: 3"),
        (_returns(None), "returned None; return a number"),
        (_returns((1, 2, 3)), "returned (1, 2, 3); return a number"),
        (_returns((5,)), "returned (5,)"),
    ],
    ids=["GeneratorExit", "BaseException", "SystemExit", "None", "triple", "single"],
)
def test_a_failing_derive_is_nan_and_a_note_as_the_readme_says(
    ip: InteractiveShell, derive: Callable[..., object], note: str
) -> None:
    ip.user_ns["bad_derive"] = derive
    result = ip.run_cell(
        f"{HEAD} --configs 4 --derive bad_derive --out f\nsum(range(n))\n"
    )
    ip.user_ns.pop("bad_derive")
    assert result.error_in_exec is None, result.error_in_exec
    ((_, status, notes),) = _sessions()
    assert status == "completed"
    assert any(note in n and "its value is NaN there" in n for n in notes), notes
    frame = ip.user_ns.pop("f")
    assert frame[frame["Metric"] == "bad_derive"]["AvgValue"].isna().all()


def test_a_two_tuple_is_still_a_value_and_its_unit(ip: InteractiveShell) -> None:
    ip.user_ns["good"] = _returns((2.5, "x/s"))
    result = ip.run_cell(f"{HEAD} --configs 4 --derive good --out f\npass\n")
    ip.user_ns.pop("good")
    assert result.error_in_exec is None, result.error_in_exec
    frame = ip.user_ns.pop("f")
    rows = frame[frame["Metric"] == "good"]
    assert (rows["AvgValue"] == 2.5).all()
    assert not [n for n in _sessions()[0][2] if "--derive" in n]  # no note


def test_ctrl_c_in_a_derive_interrupts_the_profile_and_keeps_its_runs(
    ip: InteractiveShell,
) -> None:
    """As the README says: Ctrl-C stops the profile wherever it lands."""
    ip.user_ns["stops"] = _raises(KeyboardInterrupt())
    result = ip.run_cell(f"{HEAD} --configs 4 --derive stops\npass\n")
    ip.user_ns.pop("stops")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    ((session_id, status, _),) = _sessions()
    assert status == "interrupted"
    with RunStore() as store:
        assert len(store.runs(session_id)) == 2


# -- 8: smaller ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("--configs 1,1.0", "1.0 is given twice"),
        ("--configs -0,0.0,-0.0", "is given twice"),
        ("--configs 0,-0", "is given twice"),
        ("--param m=2,2.0", "is given twice"),
        ("--derive tflops,tflops", "'tflops' is given twice"),
        ("--derive 'gbps, gbps'", "'gbps' is given twice"),
        ("--name '\ufeffmy run'", "byte-order mark (U+FEFF)"),
        ("--configs '\ufeff1,2'", "byte-order mark"),
    ],
)
def test_duplicates_and_byte_order_marks_are_refused(
    ip: InteractiveShell, line: str, needle: str
) -> None:
    with pytest.raises(OptionError, match=re.escape(needle)):
        parse_options(line)
    _refused(ip, f"{HEAD} {line}\npass\n", needle)


def test_distinct_values_stay_distinct() -> None:
    assert parse_options("--configs 1,true,1.5,x").params[0][1] == (1, True, 1.5, "x")
    assert parse_options("--configs 0,none,false").params[0][1] == (0, None, False)


@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\u2003", "\u202f", "\ufeff"])
@pytest.mark.parametrize("formula", ["=1+1", "+cmd", "@SUM(A1)", "-2+3"])
def test_a_unicode_space_before_a_formula_is_prefixed(space: str, formula: str) -> None:
    assert csv_text(space + formula).startswith("'")
    assert csv_text(f"a;{space}{formula}") == f"a;'{space}{formula}"


def test_a_unicode_space_before_a_number_is_left_alone() -> None:
    assert csv_text("\u00a0-1.5") == "\u00a0-1.5"


def test_an_unwritable_output_csv_prefix_is_refused_before_any_run(
    ip: InteractiveShell, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    ip.user_ns["calls"] = 0
    _refused(
        ip,
        f"{HEAD} --output-csv {blocker}/sub/\ncalls += 1\n",
        "--output-csv",
        "is not a folder",
    )
    assert ip.user_ns.pop("calls") == 0  # not one run


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgresql://[::1/db", "unbalanced [ ]"),
        ("postgresql://ada:s3cret@host:port/db", "a port not from 0 to 65535"),
        ("postgres://ada:s3cret/db", "a port not from 0 to 65535"),
    ],
)
def test_a_malformed_store_url_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, url: str, why: str
) -> None:
    monkeypatch.setenv("NSIGHT_LAB_STORE", url)
    with pytest.raises(StoreError) as caught:
        RunStore()
    message = str(caught.value)
    assert message.startswith(f"NSIGHT_LAB_STORE holds a malformed URL ({why})")
    assert "s3cret" not in message
