"""nsight-python's info collectors: extra columns collected while a profile runs.

``@nsight.experimental.collect(scope=...)`` marks a function; ``analyze.kernel``'s
``info_collectors`` takes such functions, :class:`InfoCollector` objects or
``(name, callback, scope)`` tuples. Each is called, as in nsight-python:

* ``once``: with no arguments, before the first run;
* ``config``: with the config's values, once per config (at its first measured run);
* ``run``: with the config's values, before each measured run;
* ``annotation``: with the region's name and the config's values, as each region of a
  measured run opens (before its timing starts).

A collector with a fixed number of positional parameters gets only that many values.
One that raises gives ``None`` there, with one ``RuntimeWarning`` per collector and
scope. Warm-up runs collect nothing. The values become columns of the results, as
nsight-python aggregates them (:class:`nsight_lab.results.InfoColumn`).

On the isolated ncu path the function runs in the child process under ncu, and so do
the ``config``, ``run`` and ``annotation`` collectors -- in the process that runs the
function, as nsight-python calls them: :class:`Collectors` is shipped with the
function, :meth:`Collectors.send` writes what the child collected (and the warnings
it would have given) to a folder after each run, and this process reads it back as
the values are asked for. ``once`` collectors run here, before the profile.
"""

from __future__ import annotations

import inspect
import os
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar, overload

from nsight_lab.api.exceptions import ProfilerException
from nsight_lab.results import InfoColumn, warn_at_user
from nsight_lab.runner import current_run

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "RESERVED_COLUMN_NAMES",
    "CollectionScope",
    "Collectors",
    "InfoCollector",
    "collect",
    "normalize_collectors",
    "validate_collectors",
]

_Collector = TypeVar("_Collector", bound=Callable[..., Any])


class CollectionScope(Enum):
    """When an info collector is called (nsight-python's scopes)."""

    ONCE = "once"
    CONFIG = "config"
    RUN = "run"
    ANNOTATION = "annotation"


@dataclass
class InfoCollector:
    """A named collector with its scope (nsight-python's ``InfoCollector``)."""

    name: str
    callback: Callable[..., Any]
    scope: CollectionScope

    def collect(self, *args: Any) -> Any:  # noqa: ANN401  (whatever it collects)
        """Call the callback (``once``: with no arguments)."""
        if self.scope == CollectionScope.ONCE:
            return self.callback()
        return self.callback(*args)


RESERVED_COLUMN_NAMES = frozenset(
    {
        "Annotation", "Value", "Metric", "Kernel", "GPU", "Host", "ComputeClock",
        "MemoryClock", "Unit", "AvgValue", "StdDev", "MinValue", "MaxValue", "NumRuns",
        "CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "StableMeasurement", "Geomean",
        "Normalized", "NormalizationValue",
    }
)  # fmt: skip
"""nsight-python's columns, which a collector may not shadow."""

_VALID_SCOPES = tuple(scope.value for scope in CollectionScope)


def _scope_of(scope: object) -> str:
    """The scope as its word.

    Raises:
        ValueError: Not a :class:`CollectionScope` or one of its words.
    """
    if isinstance(scope, CollectionScope):
        return scope.value
    if isinstance(scope, str) and scope in _VALID_SCOPES:
        return scope
    valid = ", ".join(repr(v) for v in _VALID_SCOPES)
    msg = (
        f"Invalid collection scope {scope!r}. Expected one of {valid} or a "
        "CollectionScope."
    )
    raise ValueError(msg)


@overload
def collect(_func: _Collector, *, scope: CollectionScope | str) -> _Collector: ...
@overload
def collect(
    _func: None = None, *, scope: CollectionScope | str
) -> Callable[[_Collector], _Collector]: ...
def collect(
    _func: _Collector | None = None, *, scope: CollectionScope | str
) -> _Collector | Callable[[_Collector], _Collector]:
    """Mark a function as an info collector of ``scope`` (decorator or direct call).

    Raises:
        ValueError: ``scope`` is not a scope.
        TypeError: What is decorated is not callable.
    """
    word = _scope_of(scope)

    def decorator(func: _Collector) -> _Collector:
        given: object = func  # user input: checked whatever its annotation says
        if not callable(given):
            msg = "collect can only decorate a callable"
            raise TypeError(msg)
        func._nsight_collector_scope = word  # type: ignore[attr-defined]  # noqa: SLF001
        func._nsight_collector_name = func.__name__  # type: ignore[attr-defined]  # noqa: SLF001
        return func

    return decorator if _func is None else decorator(_func)


Normalized = tuple[str, Callable[..., Any], str]


def normalize_collectors(collectors: Sequence[object] | None) -> list[Normalized]:
    """``info_collectors`` as ``(name, callback, scope word)``, nsight-python's checks.

    Raises:
        ValueError: A scope is not one, a tuple is not of three, or a function lacks
            ``@collect``.
        TypeError: An entry is none of the accepted kinds.
    """
    out: list[Normalized] = []
    for entry in collectors or ():
        if isinstance(entry, InfoCollector):
            out.append((entry.name, entry.callback, _scope_of(entry.scope)))
        elif isinstance(entry, tuple):
            if len(entry) != 3:  # noqa: PLR2004
                msg = (
                    "Tuple-format info collector must be (name, callback, scope); "
                    f"got {entry!r}."
                )
                raise ValueError(msg)
            name, callback, scope = entry
            if not isinstance(name, str) or not callable(callback):
                msg = (
                    "Tuple-format info collector must be (str name, callable "
                    f"callback, scope); got {entry!r}."
                )
                raise TypeError(msg)
            out.append((name, callback, _scope_of(scope)))
        elif callable(entry):
            scope = getattr(entry, "_nsight_collector_scope", None)
            if scope is None:
                name = getattr(entry, "__name__", repr(entry))
                msg = (
                    f"Collector function {name} is missing "
                    "@nsight.experimental.collect(scope=...) decorator"
                )
                raise ValueError(msg)
            out.append((entry._nsight_collector_name, entry, _scope_of(scope)))  # type: ignore[attr-defined]  # noqa: SLF001
        else:
            msg = (
                f"Invalid collector type: {type(entry)}. Expected tuple (name, "
                "callback, scope) or decorated function."
            )
            raise TypeError(msg)
    return out


def validate_collectors(
    collectors: Sequence[Normalized], params: Sequence[str]
) -> None:
    """Refuse names that would shadow another column (nsight-python's checks).

    Raises:
        ProfilerException: A name is repeated, reserved, or a parameter's.
    """
    seen: set[str] = set()
    for name, _, _ in collectors:
        if name in seen:
            msg = (
                f"Duplicate info collector name '{name}'. Each collector must have a "
                "unique name (the function name becomes the column name)."
            )
            raise ProfilerException(msg)
        seen.add(name)
        if name in RESERVED_COLUMN_NAMES:
            msg = (
                f"Info collector name '{name}' collides with a reserved profiler "
                f"column. Reserved names: {sorted(RESERVED_COLUMN_NAMES)}."
            )
            raise ProfilerException(msg)
        if name in params:
            msg = (
                f"Info collector name '{name}' collides with a parameter of the "
                "profiled function. Rename the collector so it does not shadow a "
                "function argument column."
            )
            raise ProfilerException(msg)


def _arguments(
    callback: Callable[..., Any], leading: Sequence[object], config: Sequence[object]
) -> list[object]:
    """The arguments a collector gets: all, or as many as its positional parameters."""
    try:
        params = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):
        return [*leading, *config]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return [*leading, *config]
    positional = [
        p for p in params if p.kind in {p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD}
    ]
    room = max(0, len(positional) - len(leading))
    return [*leading, *config[:room]]


class _ByConfig(Mapping[tuple[str, int, int], object]):
    """Values kept per config (or per run, or once), read per record."""

    def __init__(
        self,
        pick: Callable[[tuple[str, int, int]], tuple[object, ...]],
        refresh: Callable[[], None],
    ) -> None:
        self.kept: dict[tuple[object, ...], object] = {}
        self._pick = pick
        self._refresh = refresh

    def __getitem__(self, key: tuple[str, int, int]) -> object:
        picked = self._pick(key)
        if picked not in self.kept:
            self._refresh()  # collected in the ncu child: read what it sent
        return self.kept[picked]

    def __iter__(self) -> Iterator[tuple[str, int, int]]:
        return iter(())  # read by key only

    def __len__(self) -> int:
        return len(self.kept)


class Collectors:
    """The info collectors of one profile: called as its runs go, kept as columns."""

    def __init__(
        self, collectors: Sequence[Normalized], configs: Sequence[tuple[object, ...]]
    ) -> None:
        """Prepare the collectors for a profile over ``configs`` (value tuples)."""
        self._collectors = list(collectors)
        self._configs = configs
        self._warned: set[tuple[str, str]] = set()
        picks: dict[str, Callable[[tuple[str, int, int]], tuple[object, ...]]] = {
            "once": lambda _key: (),
            "config": lambda key: (key[1],),
            "run": lambda key: (key[1], key[2]),
            "annotation": lambda key: key,
        }
        self._values = {
            name: _ByConfig(picks[scope], self.receive) for name, _, scope in collectors
        }
        self.columns = [
            InfoColumn(name, scope, self._values[name]) for name, _, scope in collectors
        ]
        self.inbox: Path | None = None
        """Where the ncu child's :meth:`send` writes (set for the isolated path)."""
        self._messages: dict[tuple[str, str], str] = {}
        self._received: dict[str, tuple[int, int]] = {}

    def __bool__(self) -> bool:
        """Whether there is any collector."""
        return bool(self._collectors)

    def _call(
        self, name: str, scope: str, callback: Callable[..., Any], args: list[object]
    ) -> object:
        try:
            return callback(*args)
        except Exception as exc:  # noqa: BLE001  (user code: None there, and a warning)
            self._warn(
                scope,
                name,
                f"Info collector '{name}' ({scope} scope) raised "
                f"{type(exc).__name__}: {exc}. Its column will be None for failed "
                "runs.",
            )
            return None

    def _warn(self, scope: str, name: str, message: str) -> None:
        """Warn once per collector and scope (kept to send from the ncu child)."""
        if (scope, name) in self._warned:
            return
        self._warned.add((scope, name))
        self._messages[(scope, name)] = message
        warn_at_user(message, RuntimeWarning)

    def send(self) -> None:
        """Write what this process collected to :attr:`inbox` (in the ncu child).

        One file per process, replaced after each run, so the notebook's process
        reads whole files only. A value that cannot be pickled is sent as its
        ``repr``.
        """
        if self.inbox is None:
            return
        values = {
            name: {k: _picklable(v) for k, v in self._values[name].kept.items()}
            for name, _, scope in self._collectors
            if scope != "once"  # collected in the notebook's process
        }
        blob = pickle.dumps(
            {"values": values, "warnings": self._messages},
            protocol=pickle.HIGHEST_PROTOCOL,
        )
        target = self.inbox / f"collected-{os.getpid()}.pkl"
        partial = target.with_suffix(".partial")
        partial.write_bytes(blob)
        partial.replace(target)

    def receive(self) -> None:
        """Read what the ncu child sent to :attr:`inbox` since the last call."""
        if self.inbox is None or not self.inbox.is_dir():
            return
        for path in sorted(self.inbox.glob("collected-*.pkl")):
            stat = path.stat()
            seen = (stat.st_mtime_ns, stat.st_size)
            if self._received.get(path.name) == seen:
                continue
            self._received[path.name] = seen
            sent = pickle.loads(path.read_bytes())  # noqa: S301  (our child's file)
            for name, kept in sent["values"].items():
                if name in self._values:
                    self._values[name].kept.update(kept)
            for (scope, name), message in sent["warnings"].items():
                self._warn(scope, name, message)

    def once(self) -> None:
        """Call the ``once`` collectors (before the profile)."""
        for name, callback, scope in self._collectors:
            if scope == "once":
                self._values[name].kept[()] = self._call(name, scope, callback, [])

    def before_run(self) -> None:
        """Call the ``config`` (first run of a config) and ``run`` collectors."""
        key = current_run()
        if key is None or key.warmup:
            return
        config = self._configs[key.config_index]
        for name, callback, scope in self._collectors:
            store = self._values[name].kept
            if scope == "config" and (key.config_index,) not in store:
                args = _arguments(callback, (), config)
                store[(key.config_index,)] = self._call(name, scope, callback, args)
            elif scope == "run":
                args = _arguments(callback, (), config)
                store[(key.config_index, key.run_index)] = self._call(
                    name, scope, callback, args
                )

    def entering(self, region: str) -> None:
        """Call the ``annotation`` collectors as ``region`` opens (measured runs)."""
        key = current_run()
        if key is None or key.warmup:
            return
        config = self._configs[key.config_index]
        for name, callback, scope in self._collectors:
            if scope == "annotation":
                args = _arguments(callback, (region,), config)
                self._values[name].kept[(region, key.config_index, key.run_index)] = (
                    self._call(name, scope, callback, args)
                )


def _picklable(value: object) -> object:
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001  (any value a user's collector returns)
        return repr(value)
    return value
