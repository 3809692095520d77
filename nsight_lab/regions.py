"""Region markers: ``nsight_lab.annotate("name")`` as a context manager or decorator.

Outside a profile an annotation costs one attribute lookup and does nothing. Inside a
``%%nsight`` cell the runner installs a :class:`RegionListener` for the current thread;
the annotation forwards enter/exit to it, and the listener checks the rules (no nesting,
no name twice in one run) before the backend starts or stops its timers.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar, overload

from typing_extensions import Self

from nsight_lab.errors import OptionError

if TYPE_CHECKING:
    from types import TracebackType

_F = TypeVar("_F", bound=Callable[..., object])


class RegionListener(Protocol):
    """Receives region boundaries while a profile runs (implemented by the runner)."""

    def enter_region(self, name: str) -> None:
        """Called as region ``name`` opens, before its body runs."""

    def exit_region(self, name: str) -> None:
        """Called as region ``name`` closes, right after its body ran."""


_state = threading.local()


def active_listener() -> RegionListener | None:
    """Return the listener of the profile running on this thread, if any."""
    return getattr(_state, "listener", None)


@contextmanager
def listening(listener: RegionListener) -> Iterator[None]:
    """Route this thread's annotations to ``listener`` for the duration of the block."""
    previous = active_listener()
    _state.listener = listener
    try:
        yield
    finally:
        _state.listener = previous


class annotate:  # noqa: N801  (lower-case to match nsight-python's nsight.annotate)
    """Mark a region of a profiled cell: ``with annotate("matmul"): a @ b``.

    Also usable as a decorator (``@annotate("step")``). Names must be non-empty strings;
    regions may not nest, and a name may occur once per run. Regions can hold any number
    of kernels (see ``--combine``).
    """

    __slots__ = ("_entered", "name")

    def __init__(self, name: str) -> None:
        """Create a marker for the region ``name``.

        Raises:
            OptionError: ``name`` is not a non-empty string.
        """
        if not isinstance(name, str) or not name.strip():
            msg = f"annotate: region name must be a non-empty string, got {name!r}"
            raise OptionError(msg)
        self.name = name
        # The listener each open use of this marker entered under (a decorator's
        # marker can be re-entered), so its exit goes to that profile only.
        self._entered: list[RegionListener | None] = []

    def __enter__(self) -> Self:
        """Open the region."""
        listener = active_listener()
        if listener is not None:
            listener.enter_region(self.name)
        self._entered.append(listener)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the region (also when its body raised).

        A region entered in another profile (or outside any) and closed later -- a
        generator finalised during a later cell -- tells the current profile nothing.
        """
        listener = self._entered.pop() if self._entered else None
        if listener is not None and listener is active_listener():
            listener.exit_region(self.name)

    @overload
    def __call__(self, func: _F) -> _F: ...
    @overload
    def __call__(self, func: None = None) -> annotate: ...
    def __call__(self, func: _F | None = None) -> _F | annotate:
        """Decorate ``func`` so each call is the region."""
        if func is None:
            return self

        @functools.wraps(func)
        def wrapper(*args: object, **kwargs: object) -> object:
            with self:
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
