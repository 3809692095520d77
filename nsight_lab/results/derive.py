"""Derived metrics: nsight-python's ``derive_metric`` functions and the built-in ones.

``tflops``/``gbps`` divide a region's modelled FLOPs and bytes by its time; any other
``--derive`` name is a user function, called as nsight-python calls it and checked
(user code): one that fails costs its value in that run (NaN, one note), not the
profile (:class:`DeriveFailures`).
"""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nsight_lab.contract.records import TIME_METRIC, RunRecord
from nsight_lab.errors import CellError
from nsight_lab.roofline.workmodel import UNMODELLED_PREFIX

MODEL_PREFIX = "model__"
"""Per-region quantities from the work model (FLOPs, bytes).

They are carried in record metrics.
"""

RunKey = tuple[int, str, int, int]
"""A run of a session: ``(session_id, annotation, config_index, run_index)``."""

UserDerive = Callable[..., object]
"""A derive function: ``f(*metric_values, *config_values)`` as nsight-python calls it.

``f(duration_ns, **config)`` (the config by name) is accepted too. It returns a number,
a ``(number, unit)`` tuple, or a dict of either; being user code, it is checked.
"""

MISSING_UNIT_WARNING = (
    "Derived metric {!r} does not have a unit specified. Return a tuple (value, unit) "
    "instead of just the value. np.nan will be added to the 'Unit' column in the "
    "dataframe."
)
"""nsight-python's warning for a derived value without a unit (``warn_units``)."""


class DeriveFailures:
    """Where user ``--derive`` functions failed: their value is NaN there.

    A function that raises or returns a non-number for one run must not cost the
    profile: the durations stand, the derived value of that run is NaN, and one note
    per function and config (the first failure) says why.
    """

    MAX_NOTES_PER_FUNCTION = 3
    """Notes listed per function; further failing configs are only counted."""

    def __init__(self) -> None:
        """Start with no failures."""
        self._first: dict[tuple[str, int], str] = {}
        self._runs: dict[tuple[str, int], int] = {}

    def add(self, name: str, record: RunRecord, reason: str) -> None:
        """Count one failed call of ``name`` on ``record``; keep the first reason."""
        key = (name, record.config_index)
        if key not in self._first:
            config = ", ".join(f"{k}={v!r}" for k, v in record.config.items())
            self._first[key] = f"{name}(duration_ns{', ' if config else ''}{config})"
            self._first[key] += f" {reason}"
        self._runs[key] = self._runs.get(key, 0) + 1

    def __bool__(self) -> bool:
        """Whether any call failed."""
        return bool(self._first)

    def notes(self) -> list[str]:
        """One line per failing function and config, at most a few per function."""
        shown: dict[str, int] = {}
        hidden: dict[str, int] = {}
        lines: list[str] = []
        for (name, ci), first in self._first.items():
            if shown.get(name, 0) >= self.MAX_NOTES_PER_FUNCTION:
                hidden[name] = hidden.get(name, 0) + 1
                continue
            shown[name] = shown.get(name, 0) + 1
            runs = self._runs[(name, ci)]
            lines.append(
                f"--derive {name}: {first} ({runs} run{'s' if runs != 1 else ''} of "
                f"config {ci}); its value is NaN there"
            )
        lines.extend(
            f"--derive {name}: also failed for {n} more config{'s' if n != 1 else ''}"
            for name, n in hidden.items()
        )
        return lines


@dataclass
class DeriveSpec:
    """How derived metrics are computed for one profile.

    Attributes:
        names: The derive names in order: ``tflops``/``gbps`` (built-in, unless a
            function of that name is given) or a key of ``functions``.
        functions: User derive functions by name.
        inputs: The metrics whose per-run values come first in a user function's
            arguments, in order (nsight-python's ``metrics``).
        warn_units: Warn, as nsight-python does, for a value returned without a unit.
        failures: Collects user functions' failures (their value becomes NaN);
            ``None``: a failure raises (the user's own exception, unchanged).
        computed: Each run's derived values as :func:`derived_values` computed them
            (by :func:`run_key`), kept only when there are user functions: user code
            is called once per run (by the results frame) and the view model takes
            its values from here
            (:meth:`nsight_lab.viewmodel.SessionViewModel.add_derived`).
    """

    names: Sequence[str] = ()
    functions: Mapping[str, UserDerive] = field(default_factory=dict)
    inputs: Sequence[str] = (TIME_METRIC,)
    warn_units: bool = False
    failures: DeriveFailures | None = None
    computed: dict[RunKey, dict[str, tuple[float, float | str]]] = field(
        default_factory=dict
    )


def run_key(record: RunRecord) -> RunKey:
    """A run's key in :attr:`DeriveSpec.computed`: session, region, config, run."""
    return (record.session_id, record.annotation, record.config_index, record.run_index)


def stored_derive(options: Mapping[str, object]) -> DeriveSpec:
    """The derived metrics a stored session's runs give again: the built-in ones.

    A session's options name its ``--derive`` metrics; ``tflops`` and ``gbps`` are
    computed from the runs' work model, while a user function is not stored (the
    notebook that defined it is not here), so its values are not either.
    """
    names = options.get("derive") or []
    listed = names if isinstance(names, list | tuple) else []
    return DeriveSpec(names=tuple(str(d) for d in listed if d in BUILTIN_DERIVES))


def derived_values(
    record: RunRecord,
    spec: DeriveSpec,
    config: Mapping[str, object] | None = None,
) -> dict[str, tuple[float, float | str]]:
    """Compute the derived metrics of one record: name -> (value, unit).

    ``tflops`` and ``gbps`` divide the modelled FLOPs / bytes of the region by its time;
    any other name (or one of those two given as a function) is a user function,
    called as nsight-python calls ``derive_metric``: the values of ``spec.inputs``,
    then the config's values in order (``f(duration_ns, **config)`` is accepted too).
    It returns a number (the metric is named after the function), a ``(number,
    unit)`` tuple, or a dict of either (named by its keys). A missing unit is NaN.

    Args:
        record: The run (a region that failed in it yields NaN, uncalled).
        spec: The derive names, functions and inputs.
        config: The config's values as the function sees them (the objects the
            profile bound, e.g. a ``torch.dtype``); ``record.config`` by default.

    Raises:
        CellError: A user function's signature does not fit the metrics and the
            config, or it returned something that is not a number, and
            ``spec.failures`` is ``None``.
        Exception: Whatever a user function raised, when ``spec.failures`` is
            ``None``.
    """
    out: dict[str, tuple[float, float | str]] = {}
    ns = record.duration_ns
    for name in spec.names:
        func = spec.functions.get(name)
        if func is None and name == "tflops":
            flops = record.metrics.get(f"{MODEL_PREFIX}flops", math.nan)
            if flops == 0 and _has_unmodelled(record):
                flops = math.nan  # no formula counted, not zero work (issue 30)
            out["tflops"] = (flops / ns / 1e3 if ns > 0 else math.nan, "TFLOP/s")
        elif func is None and name == "gbps":
            moved = record.metrics.get(
                f"{MODEL_PREFIX}bytes_read", math.nan
            ) + record.metrics.get(f"{MODEL_PREFIX}bytes_written", math.nan)
            out["gbps"] = (moved / ns if ns > 0 else math.nan, "GB/s")
        elif func is not None:
            out.update(_user_values(name, func, record, spec, config))
    if spec.functions:
        spec.computed[run_key(record)] = out
    return out


def _has_unmodelled(record: RunRecord) -> bool:
    """Whether the work model met an op in the run it has no FLOP count for."""
    return any(name.startswith(UNMODELLED_PREFIX) for name in record.metrics)


def _user_values(
    name: str,
    func: UserDerive,
    record: RunRecord,
    spec: DeriveSpec,
    config: Mapping[str, object] | None,
) -> dict[str, tuple[float, float | str]]:
    """A user function's values for one record (NaN where it failed, if collected).

    Raises:
        CellError, Exception: As :func:`derived_values`.
    """
    inputs = [_input(record, metric) for metric in spec.inputs]
    values = dict(record.config if config is None else config)
    if any(math.isnan(v) for v in inputs):  # the region failed in this run
        return {name: (math.nan, math.nan)}
    try:
        return _call_derive(name, func, inputs, values, warn=spec.warn_units)
    except _DeriveError as exc:
        if spec.failures is None:
            raise CellError(str(exc)) from exc.__cause__
        spec.failures.add(name, record, exc.reason)
    except KeyboardInterrupt:  # Ctrl-C: the user stops the profile, not the derive
        raise
    except BaseException as exc:  # sys.exit(), GeneratorExit, a user's subclass:
        # the function's failure, not the profile's
        if spec.failures is None:
            raise
        spec.failures.add(name, record, _short(f"raised {type(exc).__name__}: {exc}"))
    return {name: (math.nan, math.nan)}


def _input(record: RunRecord, metric: str) -> float:
    if metric == TIME_METRIC:
        return record.duration_ns
    return float(record.metrics.get(metric, math.nan))


class _DeriveError(Exception):
    """A derive function that cannot be called, or returned a non-number."""

    def __init__(self, reason: str, name: str | None = None) -> None:
        """``reason``: what went wrong, one line; ``name``: the function, if known."""
        super().__init__(f"derive {name}: {name}(...) {reason}" if name else reason)
        self.reason = reason


def _call_derive(
    name: str,
    func: UserDerive,
    inputs: Sequence[float],
    config: Mapping[str, object],
    *,
    warn: bool,
) -> dict[str, tuple[float, float | str]]:
    """Call a user derive function; its named ``(value, unit)`` pairs.

    Raises:
        _DeriveError: It cannot be called with the metrics and the config, or it
            returned something that is not a number.
        Exception: Whatever the function raised.
    """
    value = _bound_call(func, inputs, config)()
    items = (
        [(str(key), val) for key, val in value.items()]
        if isinstance(value, Mapping)
        else [(name, value)]
    )
    return dict(_derived_pair(name, key, val, warn=warn) for key, val in items)


def _derived_pair(
    name: str, key: str, val: object, *, warn: bool
) -> tuple[str, tuple[float, float | str]]:
    """One returned value as ``(key, (number, unit))``.

    A number, or a ``(number, unit)`` pair: ``None`` (a function that forgot its
    ``return``) and a tuple of another length (``(1, 2, 3)`` read as 1.0 before)
    are refused, so they are a noted NaN, never a silent value.

    Raises:
        _DeriveError: ``val`` is not a number or a ``(number, unit)`` pair.
    """
    number: object = val
    unit: object = math.nan
    if isinstance(val, tuple) and len(val) == 2:  # noqa: PLR2004
        number, unit = val
    elif warn and not isinstance(val, tuple):
        warn_at_user(MISSING_UNIT_WARNING.format(key), UserWarning)
    if isinstance(number, bool) or not isinstance(number, int | float | np.number):
        reason = _short(
            f"returned {_shown_value(val)}; return a number, a (number, unit) tuple "
            "or a dict of them"
        )
        raise _DeriveError(reason, name)
    return key, (float(number), unit if isinstance(unit, str) else math.nan)


def _shown_value(val: object) -> str:
    """``repr(val)`` for a note, or its type where ``repr`` itself fails."""
    try:
        return repr(val)
    except Exception:  # noqa: BLE001  (a user object's __repr__)
        return f"a {type(val).__name__}"


def _bound_call(
    func: UserDerive, inputs: Sequence[float], config: Mapping[str, object]
) -> Callable[[], object]:
    """``func`` bound to the metric values and the config, as it accepts them.

    nsight-python's order first (metric values, then the config's values); else the
    config by name (``f(duration_ns, **config)``).

    Raises:
        _DeriveError: Neither fits the function's signature (nsight-python's
            message).
    """
    args = (*inputs, *config.values())
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a signature: just try it
        return lambda: func(*args)
    try:
        signature.bind(*args)
    except TypeError:
        pass
    else:
        return lambda: func(*args)
    try:
        signature.bind(*inputs, **config)
    except TypeError as exc:
        takes = sum(
            1
            for p in signature.parameters.values()
            if p.kind not in {p.VAR_POSITIONAL, p.VAR_KEYWORD}
        )
        reason = (
            f"derive_metric expects {len(args)} parameters ({len(inputs)} metric "
            f"values + {len(config)} configs), but has {takes} parameters"
        )
        raise _DeriveError(reason) from exc
    return lambda: func(*inputs, **config)


_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
"""nsight-lab's own files: a warning points at the first frame outside them."""


def warn_at_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` pointing at the first frame outside nsight-lab.

    The user's call (an ``analyze.kernel`` function, a notebook cell) is where the
    warning is shown, however deep in nsight-lab it was raised (Python 3.12's
    ``skip_file_prefixes``, for 3.10 and 3.11 too).
    """
    level = 2  # stacklevel 2: warn_at_user's caller
    frame = sys._getframe(1)  # noqa: SLF001
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _short(text: str, limit: int = 160) -> str:
    """One line of at most ``limit`` characters (user text can be anything)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


BUILTIN_DERIVES = frozenset({"tflops", "gbps"})
"""``--derive`` names computed from the records alone (user functions are not)."""
