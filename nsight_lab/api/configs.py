"""The configs of an ``analyze.kernel`` call, checked as nsight-python checks them.

A config is the tuple of a call's arguments, in the decorated function's parameter
order: given at decoration (``configs=``), at the call (``configs=``), or as the
call's own arguments (one config). A function of one parameter takes single values;
trailing parameters with defaults may be left out (their defaults fill them). The
errors are nsight-python's (:class:`~nsight_lab.api.exceptions.ProfilerException`,
same words), so code that matches them keeps working.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nsight_lab.api.exceptions import ProfilerException

__all__ = ["FunctionConfigs", "call_with", "function_configs", "parameters"]


def parameters(func: Callable[..., Any]) -> list[inspect.Parameter]:
    """The function's parameters a config fills (``*args``/``**kwargs`` left out)."""
    return [
        p
        for p in inspect.signature(func).parameters.values()
        if p.kind not in {p.VAR_POSITIONAL, p.VAR_KEYWORD}
    ]


def _is_scalar(config: object) -> bool:
    return isinstance(config, str) or not isinstance(config, Sequence)


@dataclass(frozen=True)
class FunctionConfigs:
    """The checked configs of one call: the names and each config's values."""

    names: tuple[str, ...]
    values: list[tuple[Any, ...]]

    def bound(self) -> list[dict[str, Any]]:
        """Each config as ``{parameter: value}``."""
        return [dict(zip(self.names, config, strict=True)) for config in self.values]


def function_configs(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    configs: Iterable[Any] | None,
    decorator_configs: Iterable[Any] | None,
) -> FunctionConfigs:
    """The configs a call of the decorated ``func`` profiles.

    Raises:
        ProfilerException: nsight-python's errors: keyword arguments, no configs,
            configs given twice, an empty list, configs of different lengths, or a
            length the function does not take.
    """
    params = parameters(func)
    required = sum(1 for p in params if p.default is inspect.Parameter.empty)
    if kwargs:
        msg = f"Keyword arguments are not supported yet: {list(kwargs)}"
        raise ProfilerException(msg)
    chosen = _chosen_configs(args, configs, decorator_configs, required=required)
    if isinstance(chosen, str) or not isinstance(chosen, Iterable):
        msg = f"configs must be an iterable, got {type(chosen)}"
        raise ProfilerException(msg)
    items = list(chosen)
    if not items:
        msg = "configs cannot be empty"
        raise ProfilerException(msg)
    if len(params) == 1:
        items = [(c,) if _is_scalar(c) else c for c in items]
    count = _config_length(items, len(params), required)
    defaults = tuple(p.default for p in params[count:])
    names = tuple(p.name for p in params)
    return FunctionConfigs(names, [(*tuple(c), *defaults) for c in items])


def _chosen_configs(
    args: tuple[Any, ...],
    configs: Iterable[Any] | None,
    decorator_configs: Iterable[Any] | None,
    *,
    required: int,
) -> object:
    """The configs of a call: its arguments, its ``configs=`` or the decoration's.

    Raises:
        ProfilerException: Arguments and configs, configs given twice, or none for a
            function with required parameters.
    """
    if args:
        if configs is not None or decorator_configs is not None:
            msg = (
                "You have provided arguments and configs. Call the function with one "
                "config's arguments or with configs=, not both."
            )
            raise ProfilerException(msg)
        return [tuple(args)]
    if configs is not None:
        if decorator_configs is not None:
            msg = (
                "You have provided configs at decoration time and at runtime. Provide "
                "configs at decoration time or at runtime."
            )
            raise ProfilerException(msg)
        return configs
    if decorator_configs is not None:
        return decorator_configs
    if required:
        msg = (
            "You have provided no configs. Provide configs at decoration time "
            "or at runtime."
        )
        raise ProfilerException(msg)
    return [()]


def _config_length(items: list[Any], params: int, required: int) -> int:
    """The configs' one length, which the function must take.

    Raises:
        ProfilerException: A single value for several parameters, configs of
            different lengths, or a length outside ``[required, params]``.
    """
    for i, config in enumerate(items):
        if _is_scalar(config):
            msg = (
                f"Config {i} ({config!r}) is a single value, but the function takes "
                f"{params} parameters; give each config as a tuple"
            )
            raise ProfilerException(msg)
    lengths = [len(c) for c in items]
    if len(set(lengths)) > 1:
        msg = (
            "All configs must have the same number of arguments. Found lengths: "
            f"{lengths}"
        )
        raise ProfilerException(msg)
    count = lengths[0]
    if not required <= count <= params:
        if required == params:
            msg = f"Configs have {count} arguments, but function expects {params}"
        else:
            msg = (
                f"Configs have {count} arguments, but function expects between "
                f"{required} and {params}"
            )
        raise ProfilerException(msg)
    return count


def call_with(func: Callable[..., Any], bound: dict[str, Any]) -> Any:  # noqa: ANN401
    """Call ``func`` with one config, as nsight-python binds it.

    Positional parameters get their values by position, keyword-only ones by name.
    """
    positional: list[Any] = []
    keyword: dict[str, Any] = {}
    for param in parameters(func):
        if param.kind == param.KEYWORD_ONLY:
            keyword[param.name] = bound[param.name]
        else:
            positional.append(bound[param.name])
    return func(*positional, **keyword)
