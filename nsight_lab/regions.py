"""Region markers and the region rules, for every backend.

``nsight_lab.annotate("name")`` marks a region, as a context manager or a decorator.
Outside a profile an annotation costs one attribute lookup and does nothing. Inside a
``%%nsight`` cell (or the isolated ncu child) a :class:`RegionTracker` listens on the
current thread: it checks the rules -- a non-empty name (checked by ``annotate``
itself), no nesting, a name once per run, nothing left open when the cell ends -- and
only then forwards the boundary to what measures it (a backend's measurement, or the
child's NVTX ranges). The rules live here once; the runner and the child both use them.

Where NVIDIA's nsight-python is ``import nsight``, :func:`nsight_python_routed` routes
its ``nsight.annotate`` here while a profile runs; where it is absent, ``import nsight``
is nsight-lab's stand-in (:mod:`nsight_lab.nsight_shim`, the entry layer's).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar, overload

from typing_extensions import Self

from nsight_lab.errors import CellError, RegionError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType, TracebackType

_F = TypeVar("_F", bound=Callable[..., object])

CELL_REGION = "cell"
"""Annotation used for the whole cell when it marks no regions."""


class RegionListener(Protocol):
    """Receives region boundaries while a profile runs (a :class:`RegionTracker`)."""

    def enter_region(self, name: str) -> None:
        """Called as region ``name`` opens, before its body runs."""

    def exit_region(self, name: str) -> None:
        """Called as region ``name`` closes, right after its body ran."""


_state = threading.local()

_enter_hooks: list[Callable[[str], None]] = []
"""Called with the region's name as any region opens, before its timing starts.

Process-wide, as nsight-python's annotation collectors are (a region may open on a
worker thread); the API's info collectors add theirs for one profile
(:func:`entering_regions`).
"""


@contextmanager
def entering_regions(hook: Callable[[str], None]) -> Iterator[None]:
    """Call ``hook(name)`` as each region opens, for the duration of the block."""
    _enter_hooks.append(hook)
    try:
        yield
    finally:
        _enter_hooks.remove(hook)


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


class RegionTracker:
    """Checks the region rules of one run, then forwards each boundary to ``target``.

    Install it with :func:`listening`; call :meth:`reset` before each run and
    :meth:`check_closed` after it.
    """

    def __init__(self, target: RegionListener) -> None:
        """Track regions for ``target`` (what starts and stops the measuring)."""
        self._target = target
        self._open: str | None = None
        self.seen: list[str] = []
        """The regions of the current run so far, in the order they opened."""
        self.failed: set[str] = set()
        """Regions of the current run whose body raised under ``ignore_failures``."""

    def reset(self) -> None:
        """Start a new run."""
        self._open = None
        self.seen = []
        self.failed = set()

    def fail_region(self, name: str) -> None:
        """Region ``name`` raised and the error was ignored: it has no value."""
        self.failed.add(name)

    def enter_region(self, name: str) -> None:
        """Open ``name``, then tell the target.

        Raises:
            RegionError: Another region is open, or ``name`` already ran in this run.
        """
        if self._open is not None:
            msg = (  # nsight-python's words first: its users match them
                f"Nested annotations are not supported: region {name!r} opened inside "
                f"region {self._open!r}; regions may not nest, so close "
                f"{self._open!r} first or merge them into one region"
            )
            raise RegionError(msg)
        if name in self.seen:
            msg = (  # nsight-python's words first: its users match them
                f"Annotation name {name!r} has already been used: region {name!r} ran "
                "twice in one run; give each region its own name (a loop belongs "
                "inside one region)"
            )
            raise RegionError(msg)
        self._open = name
        self.seen.append(name)
        self._target.enter_region(name)

    def exit_region(self, name: str) -> None:
        """Tell the target that ``name`` closed."""
        if self._open != name:  # pragma: no cover - annotate() guarantees pairing
            msg = f"region {name!r} closed while {self._open!r} was open"
            raise RegionError(msg)
        self._target.exit_region(name)
        self._open = None

    def check_closed(self) -> None:
        """Raise if a region is still open at the end of a run.

        Raises:
            RegionError: A region was entered but never left (e.g. in a generator).
        """
        if self._open is not None:
            msg = f"region {self._open!r} was still open when the cell ended"
            raise RegionError(msg)


def _check_storable(name: str) -> None:
    """Refuse a region name the store cannot keep as text (nor export).

    A lone surrogate is no UTF-8: stored, it failed the session at its end with a
    traceback and made it un-exportable.

    Raises:
        CellError: ``name`` holds a lone surrogate; says which.
    """
    bad = next((c for c in name if 0xD800 <= ord(c) <= 0xDFFF), None)  # noqa: PLR2004
    if bad is not None:
        msg = (
            f"annotate: the region name {name!r} holds a lone surrogate "
            f"(U+{ord(bad):04X}), which cannot be stored as text; remove it"
        )
        raise CellError(msg)


class annotate:  # noqa: N801  (lower-case to match nsight-python's nsight.annotate)
    """Mark a region of a profiled cell: ``with annotate("matmul"): a @ b``.

    Also usable as a decorator (``@annotate("step")``). Names must be non-empty strings;
    regions may not nest, and a name may occur once per run. Regions can hold any number
    of kernels (see ``--combine``).

    With ``ignore_failures=True`` (nsight-python's), an exception raised in the region
    is swallowed: the profile goes on and the region has no value in that run (NaN,
    left out of its statistics). nsight-lab needs no cuda-core for it.
    """

    __slots__ = ("_entered", "ignore_failures", "name")

    def __init__(self, name: str, ignore_failures: bool = False) -> None:  # noqa: FBT001, FBT002  (nsight-python's signature)
        """Create a marker for the region ``name``.

        Raises:
            CellError: ``name`` is not a non-empty string.
        """
        if not isinstance(name, str) or not name.strip():
            msg = f"annotate: region name must be a non-empty string, got {name!r}"
            raise CellError(msg)
        _check_storable(name)
        self.name = name
        self.ignore_failures = bool(ignore_failures)
        # The listener each open use of this marker entered under (a decorator's
        # marker can be re-entered), so its exit goes to that profile only.
        self._entered: list[RegionListener | None] = []

    def __enter__(self) -> Self:
        """Open the region (the enter hooks first, then its timing)."""
        listener = active_listener()
        if listener is not None:
            for hook in tuple(_enter_hooks):  # a hook may end its own profile
                hook(self.name)
            listener.enter_region(self.name)
        self._entered.append(listener)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        """Close the region (also when its body raised).

        A region entered in another profile (or outside any) and closed later -- a
        generator finalised during a later cell -- tells the current profile nothing.

        Returns:
            Whether the body's exception is swallowed (``ignore_failures``; a
            ``KeyboardInterrupt`` or ``SystemExit`` never is).
        """
        listener = self._entered.pop() if self._entered else None
        swallow = self.ignore_failures and isinstance(exc, Exception)
        if listener is not None and listener is active_listener():
            listener.exit_region(self.name)
            fail = getattr(listener, "fail_region", None)
            if swallow and fail is not None:
                fail(self.name)
        return swallow

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
            return None  # the body raised and ignore_failures swallowed it

        return wrapper  # type: ignore[return-value]


@contextmanager
def nsight_python_routed() -> Iterator[None]:
    """Route nsight-python's ``nsight.annotate`` to ours while a profile runs.

    An ``nsight`` imported already is routed at once; one the cell imports is routed
    as its import finishes (a finder on ``sys.meta_path`` while the profile runs).
    Never imported here: nsight-python pulls in matplotlib and pandas, 1.1 s of a
    first cell that does not use it (issue 32, measured on an H100).
    """
    routed: list[tuple[ModuleType, object]] = []  # each module, its own annotate
    finder = _RouteOnImport(routed)
    module = sys.modules.get("nsight")
    if module is not None:
        _route(module, routed)
    else:
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        for done, original in routed:
            setattr(done, "annotate", original)  # noqa: B010  (nsight-python is untyped)


def _route(module: ModuleType, routed: list[tuple[ModuleType, object]]) -> None:
    """Point ``module.annotate`` at ours (not nsight-lab's own stand-in)."""
    if getattr(module, "__nsight_lab_shim__", False) or not hasattr(module, "annotate"):
        return
    routed.append((module, getattr(module, "annotate")))  # noqa: B009
    setattr(module, "annotate", annotate)  # noqa: B010


class _RouteOnImport(importlib.abc.MetaPathFinder):
    """Routes ``nsight`` as the cell imports it: its loader runs it, then we route."""

    def __init__(self, routed: list[tuple[ModuleType, object]]) -> None:
        self._routed = routed

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        """The real ``nsight``'s spec, its loader wrapped; ``None`` for other names."""
        if fullname != "nsight":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _route(module, self._routed)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
