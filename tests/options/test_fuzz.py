"""Fuzz the ``%%nsight`` option line through the real magic in a real IPython shell.

Over 1,000 lines in all (random tokens, mutations of valid lines, unicode with lone
surrogates and control characters, huge numbers, long lines), each run as
``%%nsight <line>`` on a one-line cell with the cpu backend. Every line must:

- end without a traceback: no exception other than IPython's ``UsageError``, whose
  message is one short line;
- take less than 5 s (hypothesis ``deadline``);
- store nothing when it is malformed (the parser or the name check refuses it);
- leave the kernel namespace's builtins and IPython's names as they were.

Lines that parse are rewritten (their own ``--runs``, ``--warmup``, ``--backend``,
``--target-rsd`` and ``--max-time`` replaced by ``--runs 1 --warmup 0 --backend cpu``)
so that they profile in milliseconds; most fuzzed lines fail at parse.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import shlex
import string
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from nsight_lab.errors import OptionError
from nsight_lab.magic import MAX_EXPANDED_CHARS
from nsight_lab.options import KNOWN_OPTIONS, check_bindings, parse_options
from nsight_lab.options.parse import _tokens
from nsight_lab.store.run_store import RunStore

if TYPE_CHECKING:
    from collections.abc import Iterator

    from IPython.core.interactiveshell import InteractiveShell

    from nsight_lab.options import ProfileOptions

CELL = "fuzz_cell_ran = 1\n"
MAX_MESSAGE_CHARS = 300
"""The magic's own cap; parse errors are shorter (values quoted to 80 characters)."""
WATCHED = ("__builtins__", "get_ipython", "In", "Out", "exit", "quit", "__name__")
"""Names of the kernel namespace that no option line may replace."""
OVERRIDDEN = frozenset(
    {"--runs", "--warmup", "--backend", "--target-rsd", "--max-time"}
)
FAST = ["--runs", "1", "--warmup", "0", "--backend", "cpu"]
MAX_GRID_RUN = 32
"""Valid lines with a larger grid are only parsed (profiling them is tested apart)."""

VALID_LINES = (
    "--backend cpu",
    "--configs 1,2 --runs 3 --warmup 1",
    "--param dtype=fp16,bf16 --configs 8 --name 'a label'",
    "--runs 2 --target-rsd 5 --max-time 0.5",
    "--metrics gpu__time_duration.sum --combine max",
    "--cache-control none --clock-control none --thermal off",
    "--derive tflops,gbps --out fuzz_res",
    "--normalize-against whole --quiet",
    "--configs 1,2,3 --param m=1.5,x,true --max-configs 20",
    "--name=x --warmup=0 --runs=1",
    "--isolate",
    "--param n=1,2",
)

_VALUES = st.sampled_from(
    [
        "0", "1", "-1", "3", "1.5", "1e308", "1e999", "nan", "inf", "-0", "0x10", "007",
        "true", "none", "cpu", "auto", "ncu", "sum", "all", "base", "off", "tflops",
        "x", "n", "print", "get_ipython", "__builtins__", "In", "_", "__", "_i1",
        "exit", "fuzz_function", "fuzz_res", "a=1", "n=1,2", "x=1,,2", "1,1", "1,2,3",
        "dram__bytes_read.sum", "'unclosed", '"', "\\", "=", ",", "", "''",
        "9" * 30, "9" * 4301, "1_000", "١٢٣",
        # issue 29: names Python reads otherwise (NFKC), values alike, a BOM
        "\uff4e=1", "\uff21=1", "A=2", "\u210c=5", "\uff49\uff46=1", "\ufb01=1",
        "\uff54\uff46\uff4c\uff4f\uff50\uff53", "\ufeff1", "\ufeffx=1",
        "1,1.0", "-0,0.0,-0.0", "tflops,tflops", "2,2.0,true",
    ]
)  # fmt: skip
_OPTION_WORDS = st.sampled_from(
    [
        *KNOWN_OPTIONS,
        "--",
        "-",
        "-x",
        "--bogus",
        "--runs=",
        "--quiet=1",
        "--max_configs",
    ]
)
_ASCII = st.text(alphabet=string.printable, max_size=12)
_CONTROL = st.characters(categories=["Cc"])
_SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
_BIDI = st.sampled_from(["\u202e", "\u2066", "\u200f", "\u061c"])
NFKC_LETTERS = tuple(
    char
    for char in map(chr, range(0xA0, 0x1EF00))
    if unicodedata.normalize("NFKC", char) != char
    and unicodedata.normalize("NFKC", char).isascii()
    and unicodedata.normalize("NFKC", char).isidentifier()
)
"""Letters Python's parser reads as ASCII ones (fullwidth, styled, ligatures)."""
_NFKC = st.sampled_from(NFKC_LETTERS)
_ANY_CHAR = st.one_of(
    st.characters(codec=None), _CONTROL, _SURROGATE, _BIDI, _NFKC, st.just("\ufeff")
)  # codec=None: any code point, surrogates included
_UNICODE = st.text(alphabet=_ANY_CHAR, max_size=12)
_HUGE = st.one_of(
    st.integers(min_value=2**63 - 2, max_value=10**4000).map(str),
    st.tuples(st.sampled_from("123456789"), st.integers(1, 60_000)).map(
        lambda digit_count: digit_count[0] * digit_count[1]
    ),
    st.integers(min_value=-(10**40), max_value=-(2**63)).map(str),
    st.sampled_from(["1e400", "-1e400", "1" + "0" * 400 + ".5", "0x" + "f" * 100]),
)
_DISPLAY = st.sampled_from(["quiet", "live"])
_TOKEN = st.one_of(_OPTION_WORDS, _VALUES, _ASCII, _UNICODE, _HUGE)


@pytest.fixture(autouse=True, scope="module")
def _in_a_scratch_folder(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """Random options may write files where the cell runs (``--output-csv x``): the
    kernel's folder is a scratch one, so the checkout stays as it was."""
    before = Path.cwd()
    os.chdir(tmp_path_factory.mktemp("fuzz-cwd"))
    try:
        yield
    finally:
        os.chdir(before)


@pytest.fixture
def shell(ip: InteractiveShell) -> Iterator[InteractiveShell]:
    """The shared shell with one user function defined, warmed up (in this store)."""
    ip.user_ns["fuzz_function"] = lambda duration_ns, **_config: duration_ns
    # First profile: imports (pandas, the backends, torch's counting) happen here,
    # not inside an example that has a deadline.
    result = ip.run_cell(
        "%%nsight --backend cpu --runs 1 --warmup 1 --derive tflops --quiet\n" + CELL
    )
    assert result.error_in_exec is None, result.error_in_exec
    yield ip
    ip.user_ns.pop("fuzz_function", None)


def _namespace_snapshot(ip: InteractiveShell) -> dict[str, int | None]:
    return {
        name: id(ip.user_ns[name]) if name in ip.user_ns else None for name in WATCHED
    }


def _event(text: str) -> None:
    """Count ``text`` in hypothesis's statistics (outside a given-test: nothing)."""
    with contextlib.suppress(InvalidArgument):
        event(text)


def _fast(line: str) -> str | None:
    """The valid ``line`` with its cost options replaced, or None for a large grid."""
    opts = parse_options(line)
    if opts.grid_size() > MAX_GRID_RUN:
        return None
    words: list[str] = []
    for name, value in _tokens(line):
        if name in OVERRIDDEN:
            continue
        words.append(name)
        if value is not None:
            words.append(value)
    return shlex.join([*words, *FAST])


def check_line(ip: InteractiveShell, line: str, *, quiet: bool) -> None:
    """Run ``%%nsight line`` and assert the fuzzing contract (see the module doc)."""
    from IPython.core.error import UsageError

    malformed = False
    try:
        check_bindings(parse_options(line), ip.user_ns)
    except OptionError:
        malformed = True
    # The magic expands $name and {expr} against the namespace first, as IPython
    # does, so the raw line's verdict is not always the magic's: such lines are held
    # to every other promise but not judged malformed or valid.
    unjudged = len(line) <= MAX_EXPANDED_CHARS and ("$" in line or "{" in line)
    run = line
    if not malformed:
        fast = _fast(line)
        if fast is None:
            _event("valid, grid too large to profile here")
            return
        run = fast + (" --quiet" if quiet and "--quiet" not in fast else "")
    _event("malformed" if malformed else "valid")
    before_ns = _namespace_snapshot(ip)
    with RunStore() as store:
        before = (store.count_sessions(), store.latest_change())
    result = ip.run_cell(f"%%nsight {run}\n{CELL}")
    assert result.error_before_exec is None, repr(result.error_before_exec)
    error = result.error_in_exec
    if isinstance(error, SyntaxError) and len(f"x{run}x".splitlines()) > 1:
        # A vertical tab, form feed, U+2028 ... ends the line for IPython
        # (str.splitlines), so the rest of the "option line" is the cell body, and
        # a body that does not compile is Python's SyntaxError, as in any cell;
        # it fails before a session exists.
        _event("line split by IPython")
        with RunStore() as store:
            assert (store.count_sessions(), store.latest_change()) == before
        return
    if error is not None:
        assert isinstance(error, UsageError), repr(error)
        message = str(error)
        assert message
        assert "\n" not in message
        assert "\r" not in message
        assert len(message) <= MAX_MESSAGE_CHARS, message
        assert "Traceback" not in message
        message.encode("utf-8")  # printable anywhere: no lone surrogate
    with RunStore() as store:
        after = (store.count_sessions(), store.latest_change())
    if unjudged:
        _event("expanded by the magic: not judged")
        if error is not None:
            assert after == before, f"refused line stored something: {run!r}"
    elif malformed:
        assert error is not None, f"malformed line accepted: {run!r}"
        assert after == before, f"malformed line stored something: {run!r}"
    else:
        assert after[0] - before[0] <= 1
    assert _namespace_snapshot(ip) == before_ns
    assert not any(name in ip.user_ns for name in ("print", "len", "sum", "id"))
    assert builtins.print is _PRINT


_PRINT = builtins.print

_FUZZ = settings(
    deadline=5_000,  # ms: no line may hang the kernel
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
    derandomize=True,  # the same 1,000+ lines in CI every time
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: bounded time on failure
)


@settings(_FUZZ, max_examples=400)
@given(st.lists(_TOKEN, min_size=1, max_size=8), _DISPLAY)
def test_random_tokens(
    shell: InteractiveShell, tokens: list[str], display: str
) -> None:
    check_line(shell, " ".join(tokens), quiet=display == "quiet")


@st.composite
def _mutated(draw: st.DrawFn) -> str:
    words = shlex.split(draw(st.sampled_from(VALID_LINES)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        kind = draw(
            st.sampled_from(["drop", "dup", "swap", "replace", "insert", "char", "eq"])
        )
        if not words:
            words.append(draw(_TOKEN))
            continue
        i = draw(st.integers(min_value=0, max_value=len(words) - 1))
        if kind == "drop":
            del words[i]
        elif kind == "dup":
            words.insert(i, words[i])
        elif kind == "swap":
            j = draw(st.integers(min_value=0, max_value=len(words) - 1))
            words[i], words[j] = words[j], words[i]
        elif kind == "replace":
            words[i] = draw(_TOKEN)
        elif kind == "insert":
            words.insert(i, draw(_TOKEN))
        elif kind == "char":
            pos = draw(st.integers(min_value=0, max_value=len(words[i])))
            words[i] = words[i][:pos] + draw(_ANY_CHAR) + words[i][pos:]
        else:
            words[i] = words[i] + "=" + draw(_VALUES)
    return shlex.join(words) if draw(st.booleans()) else " ".join(words)


@settings(_FUZZ, max_examples=400)
@given(_mutated(), _DISPLAY)
def test_mutations_of_valid_lines(
    shell: InteractiveShell, line: str, display: str
) -> None:
    check_line(shell, line, quiet=display == "quiet")


@settings(_FUZZ, max_examples=150)
@given(
    st.sampled_from([o for o in KNOWN_OPTIONS if o not in {"--isolate", "--quiet"}]),
    st.one_of(_UNICODE.filter(bool), _HUGE),
    st.sampled_from(["", "--param x=", "--param "]),
)
def test_unicode_and_huge_values(
    shell: InteractiveShell, option: str, value: str, prefix: str
) -> None:
    if prefix:
        option, value = "--param", prefix.removeprefix("--param ") + value
    check_line(shell, f"{option} {shlex.quote(value)}", quiet=True)


@settings(_FUZZ, max_examples=80)
@given(
    st.sampled_from(["--configs ", "--param x=", "--name ", "--runs ", "", "--"]),
    st.sampled_from(["1,", "a", "9", "\ud800", "--runs 1 ", "' '", "\x1b[31m"]),
    st.integers(min_value=100, max_value=40_000),
)
def test_long_lines(
    shell: InteractiveShell, start: str, unit: str, repeat: int
) -> None:
    check_line(shell, start + unit * repeat, quiet=True)


def test_the_fuzzing_covers_the_named_attacks(shell: InteractiveShell) -> None:
    """The issue's own examples, each through the same contract."""
    grid = " ".join(
        f"--param p{i}=" + ",".join(str(v) for v in range(100)) for i in range(12)
    )
    for line in (
        grid,
        "--param __builtins__=1",
        "--param print=1",
        "--out get_ipython",
        "--param fuzz_function=1",
        "--out fuzz_function",
        "--name '\ud800'",
        "--configs '\ud800'",
        "--runs " + "9" * 100_000,
        "--name '\x1b[31mred'",
        "--param \uff4e=100,200",
        "--param \uff21=1 --param A=2",
        "--param \u210c=5",
        "--param \uff49\uff46=1",
        "--out \uff46\uff55\uff5a\uff5a_function",
        "--configs 1,1.0",
        "--configs -0,0.0,-0.0",
        "--derive tflops,tflops",
        "--name '\ufeffx'",
        "--configs-from '\ud800'",
        "--configs 1,2 --param m=1,2 --out fuzz_res --quiet",
    ):
        check_line(shell, line, quiet=True)


@settings(_FUZZ, max_examples=100)
@given(
    st.sampled_from(["history", "show", "nope", ""]),
    st.lists(
        st.one_of(_VALUES, _HUGE, _UNICODE, st.sampled_from(["\u00b2", "\u0661", "1"])),
        max_size=2,
    ),
)
def test_line_magic_arguments(
    shell: InteractiveShell, command: str, args: list[str]
) -> None:
    """``%nsight history N`` / ``show ID``: one line for any argument, never a trace."""
    from IPython.core.error import UsageError

    before_ns = _namespace_snapshot(shell)
    line = f"%nsight {command} {' '.join(args)}".rstrip()
    result = shell.run_cell(line)
    if result.error_before_exec is not None and len(line.splitlines()) > 1:
        # A \x1e, U+2028 ... ends the line for IPython (as in check_line): the rest
        # is Python that need not compile.
        assert isinstance(result.error_before_exec, SyntaxError)
        return
    error = result.error_in_exec
    if error is not None:
        assert isinstance(error, UsageError), repr(error)
        assert "\n" not in str(error)
        assert len(str(error)) <= MAX_MESSAGE_CHARS
    assert result.error_before_exec is None
    assert _namespace_snapshot(shell) == before_ns


_NAME_CHARS = st.one_of(
    st.sampled_from(string.ascii_letters + string.digits + "_"), _NFKC, _ANY_CHAR
)
_NAMES = st.text(alphabet=_NAME_CHARS, min_size=1, max_size=6)


def _python_binds(name: str) -> str | None:
    """The name ``name = 1`` binds when Python runs it, or None (no valid source)."""
    namespace: dict[str, object] = {}
    try:
        exec(f"{name} = 1", namespace)  # noqa: S102  (a one-assignment probe)
    except (SyntaxError, ValueError):  # ValueError: a NUL in the source
        return None
    (bound,) = (key for key in namespace if key != "__builtins__")
    return bound


def _parsed(line: str) -> ProfileOptions | str:
    """The options of ``line``, or the one-line refusal's message."""
    try:
        return parse_options(line)
    except OptionError as exc:
        message = str(exc)
    assert "\n" not in message
    message.encode("utf-8")
    return message


@settings(_FUZZ, max_examples=300)
@given(_NAMES, st.sampled_from(["--param {}=1", "--out {}", "--configs-from {}=v"]))
def test_a_name_is_bound_as_python_reads_it(name: str, form: str) -> None:
    """Issue 29: a name accepted is the one Python binds (NFKC), or one line refuses it.

    ``--param`` of a fullwidth ``n`` bound that name while the cell read ``n``.
    """
    line = form.format(shlex.quote(name))
    options = _parsed(line)
    if isinstance(options, str):  # refused, in one line
        return
    bound = options.param_names[0] if "--param" in line else options.out
    if "--configs-from" in line:
        bound = (options.configs_from or "").partition("=")[0]
    assert bound == _python_binds(name), (name, bound)


@settings(_FUZZ, max_examples=300)
@given(_NAMES, _NAMES)
def test_two_names_that_read_alike_are_refused(first: str, second: str) -> None:
    """Two ``--param`` (and two ``--derive``) names are one when Python reads them."""
    same = unicodedata.normalize("NFKC", first) == unicodedata.normalize("NFKC", second)
    for line in (
        f"--param {shlex.quote(first)}=1 --param {shlex.quote(second)}=2",
        f"--derive {shlex.quote(first + ',' + second)}",
    ):
        assert isinstance(_parsed(line), str) or not same, line
