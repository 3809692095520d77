"""``--configs-from`` reads at most ``--max-configs`` + 1 items, lazily (issue 22).

On dbddba1 the whole variable was read before any limit: ``cfg = itertools.count()``
grew the kernel to 5.3 GB in 24 s, ``range(10**12)`` gave a MemoryError traceback,
and a repeated name (``n,n=pairs``) silently kept the last value.
"""

from __future__ import annotations

import collections
import itertools
import json
import time
import tracemalloc
import unicodedata
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsight_lab.errors import OptionError
from nsight_lab.options import namespace, parse_options
from nsight_lab.session import resolve

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    from IPython.core.interactiveshell import InteractiveShell


class Counted:
    """An iterable without a length that counts the items handed out."""

    def __init__(self, count: int | None) -> None:
        self.count = count
        self.taken = 0

    def __iter__(self) -> Iterator[int]:
        for i in itertools.count() if self.count is None else range(self.count):
            self.taken += 1
            yield i


class Sized(Counted):
    """A sized iterable: judged by its length before any item is read."""

    def __len__(self) -> int:
        return 10**15 if self.count is None else self.count


MAKERS: dict[str, Callable[[int], Iterable[Any]]] = {
    "list": lambda c: list(range(c)),
    "tuple": lambda c: tuple(range(c)),
    "range": range,
    "set": lambda c: set(range(c)),
    "deque": lambda c: collections.deque(range(c)),
    "generator": lambda c: (i for i in range(c)),
    "dicts": lambda c: [{"n": i} for i in range(c)],
    "map": lambda c: map(int, range(c)),
    "counted": Counted,
    "sized": Sized,
}


KINDS = sorted(MAKERS)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    limit=st.integers(1, 40),
    count=st.integers(0, 60),
)
def test_a_list_within_the_limit_is_read_and_one_beyond_is_refused(
    kind: str, limit: int, count: int
) -> None:
    value = MAKERS[kind](count)
    try:
        got = resolve.read_configs_from("cfg", {"cfg": value}, limit)
    except OptionError as exc:
        text = str(exc)
        assert "\n" not in text
        assert text.startswith("--configs-from cfg: ")
        if count == 0:
            assert "expected a non-empty list" in text
        else:
            assert count > limit
            assert f"above the limit of {limit:,}" in text
    else:
        assert 0 < count <= limit
        assert got is not None
        assert len(got.values) == count
        assert got.names == ("n",)
    if isinstance(value, Counted):
        # Read one at a time, one item beyond the limit at most; a sized one by
        # its length first, not at all when that is already too long.
        most = 0 if isinstance(value, Sized) and count > limit else limit + 1
        assert value.taken <= most


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (range(10**12), "1,000,000,000,000"),
        (range(10**20), "more than 2^63"),  # len() itself overflows
        (itertools.count(), "more than 10,000"),
        (itertools.repeat((1, 2)), "more than 10,000"),
        (Counted(None), "more than 10,000"),
        (Sized(None), "1,000,000,000,000,000"),
    ],
    ids=["range-1e12", "range-1e20", "count", "repeat", "endless", "sized-endless"],
)
def test_huge_and_endless_iterables_are_one_line_and_eat_no_memory(
    value: Iterable[Any], count: str
) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(OptionError) as caught:
            resolve.read_configs_from("cfg", {"cfg": value}, 10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (
        f"--configs-from cfg: {count} configs, above the limit of 10,000; give fewer "
        "(split them over several cells)"
    )
    assert peak < 8 * 2**20  # 10,001 small items at most, not the iterable


def test_reading_is_bounded_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(namespace, "CONFIGS_FROM_READ_S", 0.05)

    def slow() -> Iterator[int]:
        for i in range(1_000):
            time.sleep(0.01)
            yield i

    with pytest.raises(OptionError, match=r"reading the configs took over 0\.05 s"):
        resolve.read_configs_from("cfg", {"cfg": slow()}, 10_000)


def test_a_repeated_name_is_refused_as_param_is() -> None:
    with pytest.raises(OptionError) as caught:
        parse_options("--configs-from n,n=pairs")
    assert str(caught.value) == (
        "--configs-from: the name 'n' is given twice; give each name once"
    )
    with pytest.raises(OptionError, match="'b' is given twice"):
        parse_options("--configs-from 'a, b ,b=pairs'")
    assert parse_options("--configs-from n,m=pairs").configs_from == "n,m=pairs"


@pytest.mark.parametrize(
    ("setup", "fragment"),
    [
        ("cfg = itertools.count()", "more than 10,000 configs"),
        ("cfg = range(10**12)", "1,000,000,000,000 configs"),
        (
            "cfg = itertools.count()",
            "more than 5 configs",
        ),
    ],
    ids=["count", "range", "max-configs"],
)
def test_the_magic_refuses_them_in_one_line(
    ip: InteractiveShell, setup: str, fragment: str
) -> None:
    from IPython.core.error import UsageError

    ip.run_cell(f"import itertools\n{setup}")
    limit = " --max-configs 5" if fragment.startswith("more than 5") else ""
    result = ip.run_cell(
        f"%%nsight --backend cpu --quiet --runs 1 --configs-from cfg{limit}\npass\n"
    )
    assert isinstance(result.error_in_exec, UsageError)
    assert fragment in str(result.error_in_exec)
    assert "\n" not in str(result.error_in_exec)


@settings(max_examples=100, deadline=None)
@given(
    size=st.integers(10_001, 10**30),
    step=st.integers(1, 1_000),
    lazy=st.booleans(),
)
def test_huge_ranges_and_their_iterators_are_refused_without_laying_them_out(
    size: int,
    step: int,
    lazy: bool,  # noqa: FBT001  (hypothesis passes it by name)
) -> None:
    """A sized range by its length; its iterator (no length) at the 10,001st item."""
    value: Iterable[int] = range(0, size * step, step)
    if lazy:
        value = (i for i in value)
    with pytest.raises(OptionError) as caught:
        resolve.read_configs_from("cfg", {"cfg": value}, 10_000)
    text = str(caught.value)
    assert "above the limit of 10,000" in text
    assert "\n" not in text
    if not lazy:
        assert (f"{size:,} configs" in text) or ("more than 2^63" in text)


_TEXT_CHARS = st.one_of(
    st.characters(codec=None),  # any code point, lone surrogates included
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.sampled_from(["\uff4e", "\uff21", "A", "\u210c", "\ufb01", "n", "_"]),
)
_CONFIG_VALUES = st.one_of(
    st.text(_TEXT_CHARS, max_size=6),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(),
    st.tuples(st.text(_TEXT_CHARS, max_size=3)),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.text(_TEXT_CHARS, min_size=1, max_size=3), min_size=1, max_size=3),
    values=st.lists(_CONFIG_VALUES, min_size=3, max_size=3),
)
def test_any_config_is_stored_utf8_under_the_names_python_reads(
    keys: list[str], values: list[object]
) -> None:
    """Issue 29: configs with lone surrogates, huge ints or names Python normalises.

    Either one line refuses them, or every name is the one Python binds (NFKC, each
    once) and every stored value is JSON that encodes as UTF-8 (the session exports).
    """
    from nsight_lab.plan import json_value

    config = dict(zip(keys, values, strict=False))
    try:
        found = namespace.configs_from("cfg", {"cfg": [config]}, 10)
    except OptionError as exc:
        assert "\n" not in str(exc)  # noqa: PT017  (the message is the property)
        str(exc).encode("utf-8")
        return
    assert found is not None
    names, (bound,) = found
    assert list(names) == [unicodedata.normalize("NFKC", k) for k in config]
    assert len(set(names)) == len(names)
    assert all(n.isidentifier() for n in names)
    stored = {name: json_value(value) for name, value in bound.items()}
    json.dumps(stored, ensure_ascii=False).encode("utf-8")
