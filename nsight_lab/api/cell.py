"""A decorated function as the cell a collector runs (in process or in the ncu child).

:func:`function_cell` wraps the function for the profile; :class:`IsolatedCall` is
what the isolated (ncu) child calls per run, shipped in the cell's namespace.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nsight_lab.api.configs import call_with
from nsight_lab.api.exceptions import ProfilerException
from nsight_lab.contract.collector import CellCode
from nsight_lab.regions import entering_regions
from nsight_lab.runner import current_run

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from nsight_lab.api.collect import Collectors
    from nsight_lab.api.configs import FunctionConfigs
    from nsight_lab.plan import Plan

__all__ = ["CALL", "FunctionCell", "IsolatedCall", "function_cell", "isolated_call"]


@dataclass(frozen=True)
class FunctionCell(CellCode):
    """A decorated function as the cell a collector runs: one call per run.

    In this process :meth:`run` binds the config to the function's parameters
    (nsight-python's binding) and calls the info collectors of each measured run;
    the isolated (ncu) child runs :attr:`python`, a call of :class:`IsolatedCall`
    shipped in :attr:`namespace`. Build it with :func:`function_cell`.
    """

    func: Callable[..., Any] = print
    collectors: Collectors | None = None
    returned: list[bool] = field(default_factory=list)
    """One entry per measured call that returned something (nsight-python warns)."""

    def run(self, config: dict[str, Any]) -> None:
        """Call the function once with ``config`` (its parameters' objects).

        Raises:
            BaseException: Whatever the function raises, unchanged.
        """
        if self.collectors is not None:
            self.collectors.before_run()
        if call_with(self.func, config) is not None and current_run() is not None:
            self.returned.append(True)


def function_cell(
    func: Callable[..., Any], collectors: Collectors, namespace: dict[str, Any]
) -> FunctionCell:
    """``func`` as the cell of a profile (its source is stored with the session)."""
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        source = f"{getattr(func, '__qualname__', func)!r}(...)"
    python = f"{CALL}(globals())\n"
    return FunctionCell(
        source=source,
        python=python,
        code=compile(
            python, f"<nsight-lab {getattr(func, '__name__', 'func')}>", "exec"
        ),
        namespace=namespace,
        func=func,
        collectors=collectors,
    )


CALL = "nsight_lab_call_"
"""The name of the :class:`IsolatedCall` in the namespace shipped to the ncu child."""


@dataclass(frozen=True)
class IsolatedCall:
    """What the isolated ncu child calls per run: the function with a config's objects.

    The child binds each config's stored (JSON) values by name; this finds the
    objects of that config (a ``torch.dtype``, not its text) and calls the function.
    Shipped with cloudpickle, the function by value where it is not importable.
    """

    func: Callable[..., Any]
    names: tuple[str, ...]
    configs: list[tuple[tuple[object, ...], dict[str, Any]]]
    collectors: Collectors | None = None
    """The info collectors, called around each run in the child as in-process."""

    def __call__(self, namespace: Mapping[str, Any]) -> None:
        """Call the function with the config the child bound in ``namespace``.

        Raises:
            ProfilerException: The bound values match no config.
        """
        key = tuple(namespace.get(name) for name in self.names)
        for stored, bound in self.configs:
            if stored == key:
                self._call(bound)
                return
        msg = (
            f"no config of {getattr(self.func, '__name__', 'the function')} is {key!r}"
        )
        raise ProfilerException(msg)

    def _call(self, bound: dict[str, Any]) -> None:
        """One run: the collectors of its scopes, the function, then send the values."""
        collectors = self.collectors
        if collectors is None:
            call_with(self.func, bound)
            return
        collectors.before_run()
        with entering_regions(collectors.entering):
            call_with(self.func, bound)
        collectors.send()


def isolated_call(
    func: Callable[..., Any],
    chosen: FunctionConfigs,
    plan: Plan,
    collectors: Collectors,
) -> IsolatedCall:
    """The :class:`IsolatedCall` of ``func`` over the plan's configs."""
    return IsolatedCall(
        func=func,
        names=chosen.names,
        configs=[
            (tuple(stored[name] for name in chosen.names), bound)
            for stored, bound in zip(plan.configs, chosen.bound(), strict=True)
        ],
        collectors=collectors or None,
    )
