"""The options that name objects of the notebook: checked against its namespace.

``--derive F`` (a function of the notebook, or the built-in ``tflops``/``gbps``),
``--combine F`` (a binary function of the notebook, or a built-in fold) and
``--configs-from [NAMES=]VAR`` (an iterable of configs in a notebook variable): the
magic reads the options with :func:`~nsight_lab.options.parse_options`, then these
resolve the names in the user's namespace, each refusing in one line what cannot be
profiled (:class:`~nsight_lab.errors.OptionError`).
"""

from __future__ import annotations

import inspect
import itertools
import keyword
import math
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nsight_lab.errors import OptionError
from nsight_lab.options.names import reserved_name
from nsight_lab.options.profile import BUILTIN_FOLDS, MAX_CONFIGS
from nsight_lab.options.values import BUILTIN_DERIVED, python_name, shown

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from nsight_lab.options.profile import ProfileOptions

__all__ = [
    "CONFIGS_FROM_READ_S",
    "check_isolated_configs",
    "configs_from",
    "derive_functions",
    "resolve_combine",
]


def derive_functions(
    names: tuple[str, ...], user_ns: dict[str, Any]
) -> tuple[dict[str, Callable[..., Any]], list[str]]:
    """The notebook's functions named by ``--derive``, and the notes to show.

    A notebook function named ``tflops`` or ``gbps`` is used in place of the built-in
    model, and a note says so.

    Raises:
        OptionError: A named function is not defined in the notebook.
    """
    functions: dict[str, Callable[..., Any]] = {}
    notes: list[str] = []
    for name in names:
        func = user_ns.get(name)
        if name in BUILTIN_DERIVED:
            if callable(func) and not isinstance(func, type):
                functions[name] = func
                notes.append(
                    f"--derive {name}: the notebook's function {name}() is used, not "
                    f"the built-in {name} (rename it to get the built-in one)"
                )
            continue
        if not callable(func):
            msg = (
                f"--derive {name}: no function named {name!r} in the notebook; "
                f"define def {name}(duration_ns, *config) first, "
                "or use tflops or gbps"
            )
            raise OptionError(msg)
        functions[name] = func
    return functions, notes


def resolve_combine(options: ProfileOptions, user_ns: dict[str, Any]) -> ProfileOptions:
    """``--combine F``: the notebook's binary function ``F``, in the options.

    Raises:
        OptionError: ``F`` is not a function of the notebook taking two values.
    """
    name = options.combine
    if name in BUILTIN_FOLDS:
        return options
    func = user_ns.get(name)
    binary = callable(func)
    if func is not None and binary:
        try:
            inspect.signature(func).bind(1.0, 2.0)
        except TypeError:
            binary = False
        except ValueError:  # no signature to read (a builtin): let it try
            pass
    if not binary:
        msg = (
            f"--combine {name}: no function {name}(x, y) in the notebook; define one "
            f"that takes two values (def {name}(x, y): return x + y) or use "
            "sum, max, first or single"
        )
        raise OptionError(msg)
    return replace(options, combine_fn=func)


CONFIGS_FROM_READ_S = 10.0
"""Longest time ``--configs-from`` spends reading the configs out of its variable."""


def configs_from(
    spec: str | None, user_ns: dict[str, Any], limit: int
) -> tuple[tuple[str, ...], list[dict[str, Any]]] | None:
    """``--configs-from [NAMES=]VAR``: the explicit configs in the notebook.

    Returns their names and, per config, the objects bound to them (``None`` without
    ``--configs-from``).

    At most ``limit`` + 1 items are taken, one at a time, so that an endless or huge
    iterable (``itertools.count()``, ``range(10**12)``) is refused in one line rather
    than laid out in memory: a sized one is judged by its length before any item is
    read, anything else is refused at its ``limit + 1``-th item or once reading took
    :data:`CONFIGS_FROM_READ_S`.

    Raises:
        OptionError: ``VAR`` is missing or not a non-empty iterable of dicts, tuples
            or single values; it holds more than ``limit`` configs or takes too long
            to read; or its items do not fit the names.
    """
    if spec is None:
        return None
    given, _, var = spec.rpartition("=")
    var = python_name(var.strip())
    names = tuple(python_name(n.strip()) for n in given.split(",")) if given else ()
    value = user_ns.get(var)
    _check_container(var, value)
    items = _config_items(var, value, limit)
    bound = [_bind_item(spec, i, item, names) for i, item in enumerate(items)]
    raw_names = tuple(bound[0])
    names = _python_names(var, raw_names)
    for i, config in enumerate(bound):
        if tuple(config) != raw_names:
            msg = (
                f"--configs-from {spec}: config {i} has names {list(config)}, config "
                f"0 has {list(raw_names)}; give every config the same names"
            )
            raise OptionError(msg)
        for name, item in zip(names, config.values(), strict=True):
            _check_value(var, i, name, item)
    return names, [dict(zip(names, c.values(), strict=True)) for c in bound]


def _python_names(var: str, raw: tuple[str, ...]) -> tuple[str, ...]:
    """The config names as the cell reads them (NFKC), each a name it can bind.

    Raises:
        OptionError: A name is not a Python name (or reads as a keyword), is
            reserved, or two read alike (a fullwidth ``A``, U+FF21, and ``A`` are
            one name to Python).
    """
    names: list[str] = []
    for name in raw:
        read = python_name(name)
        why = (
            "not a Python name"
            if not name.isidentifier()
            or not read.isidentifier()
            or keyword.iskeyword(read)
            else reserved_name(read)
        )
        if why is not None:
            msg = f"--configs-from {var}: the config name {shown(name)} is {why}"
            raise OptionError(msg)
        if read in names:
            other = raw[names.index(read)]
            msg = (
                f"--configs-from {var}: the config names {shown(other)} and "
                f"{shown(name)} are one name to Python ({read!r}, NFKC); give each "
                "name once"
            )
            raise OptionError(msg)
        names.append(read)
    return tuple(names)


_INT64 = 2**63
"""Config integers must fit in 64 bits: the store keeps them as such."""


def _check_value(var: str, index: int, name: str, value: object) -> None:
    """Refuse a config value the store cannot keep as it is.

    An integer beyond 64 bits (``10**5000`` cannot even be written as text by
    default) and text with a lone surrogate (not UTF-8) would fail only once the
    session is stored, with a traceback, and leave it un-exportable.

    Raises:
        OptionError: ``value`` is such an integer or text.
    """
    where = f"--configs-from {var}: {name} of config {index}"
    if isinstance(value, int) and not isinstance(value, bool):
        if not -_INT64 <= value < _INT64:
            digits = int(value.bit_length() * math.log10(2)) + 1
            msg = (
                f"{where} is an integer of about {digits:,} digits; integers must "
                "fit in 64 bits (give a float or text)"
            )
            raise OptionError(msg)
    elif isinstance(value, str):
        bad = next((c for c in value if 0xD800 <= ord(c) <= 0xDFFF), None)  # noqa: PLR2004
        if bad is not None:
            msg = (
                f"{where} holds a lone surrogate (U+{ord(bad):04X}), which cannot be "
                "stored or exported as text; remove it"
            )
            raise OptionError(msg)


def _check_container(var: str, value: object) -> None:
    """Refuse a table given as the config list: it does not iterate over its rows.

    A pandas DataFrame iterates over its column names (each would be profiled as a
    config) and a 2-D numpy array over rows that are not tuples.

    Raises:
        OptionError: ``value`` is a DataFrame or a numpy array of 2 or more
            dimensions; says what to pass instead.
    """
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(value, pandas.DataFrame):
        msg = (
            f"--configs-from {var}: a pandas DataFrame iterates over its column "
            f"names, not its rows; bind rows = {var}.to_dict('records') (one config "
            "per row) and give --configs-from rows"
        )
        raise OptionError(msg)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray) and value.ndim > 1:
        msg = (
            f"--configs-from {var}: a {value.ndim}-D numpy array of shape "
            f"{value.shape} is not a list of configs; bind rows = {var}.tolist() "
            "and give --configs-from NAME1,NAME2=rows (a name per column)"
        )
        raise OptionError(msg)


def _config_items(var: str, value: object, limit: int) -> list[Any]:
    """The items of ``--configs-from``'s variable: at most ``limit``, read lazily.

    Raises:
        OptionError: Not a non-empty iterable (text and dicts are not config lists),
            more than ``limit`` items, or reading them took too long.
    """
    iterator = _config_iterator(var, value, limit)
    items: list[Any] = []
    if iterator is not None:
        started = time.monotonic()
        for item in itertools.islice(iterator, limit + 1):
            items.append(item)
            if time.monotonic() - started > CONFIGS_FROM_READ_S:
                msg = (
                    f"--configs-from {var}: reading the configs took over "
                    f"{CONFIGS_FROM_READ_S:g} s ({len(items):,} read); give a list"
                )
                raise OptionError(msg)
        if len(items) > limit:
            raise OptionError(_too_many_configs(var, f"more than {limit:,}", limit))
    if not items:
        msg = (
            f"--configs-from {var}: expected a non-empty list of configs in the "
            f"notebook variable {var!r}, got {type(value).__name__}"
        )
        raise OptionError(msg)
    return items


def _config_iterator(var: str, value: object, limit: int) -> Iterator[Any] | None:
    """An iterator over ``value``'s items; ``None`` when it is no config list.

    Raises:
        OptionError: Its length (read before any item) is above ``limit``.
    """
    if value is None or isinstance(value, str | bytes | dict):
        return None
    try:
        size = len(value)  # type: ignore[arg-type]
    except OverflowError:  # range(10**20): more than an index holds
        raise OptionError(_too_many_configs(var, "more than 2^63", limit)) from None
    except (TypeError, ValueError):  # no length (a generator), or a broken one
        size = None
    if size is not None and size > limit:
        raise OptionError(_too_many_configs(var, f"{size:,}", limit))
    try:
        return iter(value)  # type: ignore[call-overload,no-any-return]
    except TypeError:
        return None


def _too_many_configs(var: str, count: str, limit: int) -> str:
    how = (
        f"--max-configs N raises the limit, up to {MAX_CONFIGS:,}"
        if limit < MAX_CONFIGS
        else "split them over several cells"
    )
    return (
        f"--configs-from {var}: {count} configs, above the limit of {limit:,}; "
        f"give fewer ({how})"
    )


def _bind_item(
    spec: str, index: int, item: object, names: tuple[str, ...]
) -> dict[str, Any]:
    """One config of ``--configs-from``: a dict as it is, else its values named.

    Raises:
        OptionError: A tuple's length is not that of ``names`` (``n`` by default).
    """
    if isinstance(item, dict):
        return {str(k): v for k, v in item.items()}
    values = tuple(item) if isinstance(item, tuple | list) else (item,)
    wanted = names or ("n",)
    if len(values) != len(wanted):
        var = spec.rpartition("=")[2].strip()
        msg = (
            f"--configs-from {spec}: config {index} has {len(values)} value"
            f"{'' if len(values) == 1 else 's'} for {len(wanted)} name"
            f"{'' if len(wanted) == 1 else 's'}; name them all "
            f"({','.join(f'p{j}' for j in range(len(values)))}={var})"
        )
        raise OptionError(msg)
    return dict(zip(wanted, values, strict=True))


def check_isolated_configs(
    bindings: list[dict[str, Any]] | None, backend: str, *, isolated: bool
) -> None:
    """Refuse objects a child process would only get as text.

    Raises:
        OptionError: An explicit config holds a value that is not a number, text,
            true/false or None, and the backend runs the cell in a child process.
    """
    if bindings is None or not isolated:
        return
    for i, bound in enumerate(bindings):
        for name, value in bound.items():
            if value is not None and not isinstance(value, str | int | float):
                msg = (
                    f"--configs-from: {name}={shown(repr(value))} of config {i} is "
                    f"not a number or text, and the {backend} backend runs the "
                    "cell in a child process that gets only those; bind a number or "
                    "text and build the object in the cell"
                )
                raise OptionError(msg)
