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
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nsight_lab.errors import OptionError
from nsight_lab.kernels import BUILTIN_FOLDS
from nsight_lab.options.names import reserved_name
from nsight_lab.options.profile import MAX_CONFIGS
from nsight_lab.options.values import BUILTIN_DERIVED, shown

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
    var = var.strip()
    names = tuple(n.strip() for n in given.split(",")) if given else ()
    value = user_ns.get(var)
    items = _config_items(var, value, limit)
    bound = [_bind_item(spec, i, item, names) for i, item in enumerate(items)]
    names = tuple(bound[0])
    for name in names:
        why = reserved_name(name) if name.isidentifier() else "not a Python name"
        if why is not None:
            msg = f"--configs-from {var}: the config name {name!r} is {why}"
            raise OptionError(msg)
    for i, config in enumerate(bound):
        if tuple(config) != names:
            msg = (
                f"--configs-from {spec}: config {i} has names {list(config)}, config "
                f"0 has {list(names)}; give every config the same names"
            )
            raise OptionError(msg)
    return names, bound


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
