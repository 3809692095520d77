"""nsight-python's ``analyze.kernel`` keywords, declared once.

:class:`KernelSettings` is the one declaration of the decorator's keywords: their
names in nsight-python 1.1.0's order (then nsight-lab's ``backend`` and ``warmup``),
their types and defaults. :func:`kernel_signature` derives ``kernel``'s
``inspect.signature`` from it, :meth:`KernelSettings.given` checks a call's keywords
(nsight-python's decoration-time checks, in ``__post_init__``), and
:meth:`KernelSettings.options` turns them into the plan's
:class:`~nsight_lab.options.ProfileOptions`.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal

from nsight_lab.api.collect import Normalized, normalize_collectors
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.options import (
    DEFAULT_WARMUP,
    ProfileOptions,
    ThermalSettings,
    read_option,
)

__all__ = ["KernelSettings", "VerbosityLevel", "kernel_signature"]


class VerbosityLevel(enum.IntEnum):
    """nsight-python's verbosity: level N shows everything up to N."""

    SILENT = 0
    INFO = 3
    DEBUG = 4


DeriveMetric = Callable[
    ..., "float | tuple[float, str] | Mapping[str, float | tuple[float, str]]"
]

_CLOSED: dict[str, tuple[str, ...]] = {
    "clock_control": ("base", "none"),
    "cache_control": ("all", "none"),
    "replay_mode": ("kernel", "range"),
    "thermal_mode": ("auto", "manual", "off"),
}
"""The closed keywords and their values (checked at decoration, as nsight-python)."""


@dataclass(frozen=True, kw_only=True)
class KernelSettings:
    """``analyze.kernel``'s keywords: the one declaration, checked when built.

    The fields in order are nsight-python 1.1.0's parameters, then nsight-lab's
    ``backend`` (a backend id or ``auto``) and ``warmup`` (untimed runs per config
    first; ``None`` is nsight-lab's default of 2). Built with :meth:`given`;
    ``__post_init__`` runs nsight-python's checks and keeps the values normalised
    (``metrics`` and ``ignore_kernel_list`` as tuples, ``verbosity`` as an int).
    """

    configs: Iterable[Any] | None = None
    runs: int = 1
    derive_metric: DeriveMetric | None = None
    normalize_against: str | None = None
    verbosity: int = VerbosityLevel.INFO
    """``SILENT`` (0) and below show nothing, from ``INFO`` (3) the progress, from
    ``DEBUG`` (4) also the backend and each config."""
    metrics: Sequence[str] = (TIME_METRIC,)
    """The metrics as given, in order (what a derive function gets first)."""
    ignore_kernel_list: Sequence[str] | None = None
    clock_control: Literal["base", "none"] = "none"
    cache_control: Literal["all", "none"] = "all"
    replay_mode: Literal["kernel", "range"] = "kernel"
    thermal_mode: Literal["auto", "manual", "off"] = "auto"
    thermal_wait: int | None = None
    thermal_cont: int | None = None
    thermal_timeout: int | None = None
    thermal_device: int | None = None
    combine_kernel_metrics: Callable[[float, float], float] | None = None
    output_prefix: str | None = None
    output_csv: bool = False
    info_collectors: Sequence[object] | None = None
    backend: str | None = None
    warmup: int | None = None
    collectors: list[Normalized] = field(init=False, default_factory=list)
    """``info_collectors`` normalised: ``(name, callback, scope word)``."""

    @classmethod
    def given(cls, keywords: Mapping[str, Any]) -> KernelSettings:
        """The settings of a call's keywords (``kernel(**keywords)``).

        Raises:
            TypeError: A keyword is not one of ``kernel``'s (Python's own words), a
                function argument is not callable, or a collector is of no
                accepted kind.
            ValueError: See :meth:`__post_init__`.
        """
        names = {f.name for f in fields(cls) if f.init}
        for name in keywords:
            if name not in names:
                msg = f"kernel() got an unexpected keyword argument {name!r}"
                raise TypeError(msg)
        return cls(**keywords)  # their values are checked in __post_init__

    def __post_init__(self) -> None:
        """Check the keywords now, as nsight-python does at decoration.

        Raises:
            ValueError: A closed option has another value, the thermal thresholds are
                the wrong way round, ``runs``/``warmup`` are not counts, a metric name
                is malformed, ``verbosity`` is not an int, or a collector is
                malformed.
            TypeError: ``derive_metric``/``combine_kernel_metrics`` is not callable,
                or a collector is of no accepted kind.
        """
        given = [self.metrics] if isinstance(self.metrics, str) else self.metrics
        metrics = tuple(m.strip() for m in given)
        for name, allowed in _CLOSED.items():
            _choice(name, getattr(self, name), allowed)
        self._check_thermal()
        _count("runs", self.runs, 1)
        _count("warmup", self.warmup, 0)
        if not metrics:
            msg = "metrics must name at least one metric (gpu__time_duration.sum)"
            raise ValueError(msg)
        read_option("--metrics", ",".join(metrics), "metrics")  # names checked here
        for name in ("derive_metric", "combine_kernel_metrics"):
            func = getattr(self, name)
            if func is not None and not callable(func):
                msg = f"{name} must be a callable function, got {type(func).__name__}"
                raise TypeError(msg)
        if self.backend is not None:
            read_option("--backend", self.backend, "backend")
        normal = {
            "metrics": metrics,
            "verbosity": _level(self.verbosity),
            "ignore_kernel_list": tuple(self.ignore_kernel_list or ()),
            "output_csv": bool(self.output_csv),
            "collectors": normalize_collectors(self.info_collectors),
        }
        for name, value in normal.items():
            object.__setattr__(self, name, value)  # frozen: normalised once, here

    def _check_thermal(self) -> None:
        """nsight-python's check of the thermal thresholds.

        Raises:
            ValueError: ``thermal_cont`` is not above ``thermal_wait``.
        """
        wait, cont = self.thermal_wait, self.thermal_cont
        if wait is not None and cont is not None and cont <= wait:
            msg = (
                f"Invalid thermal control parameters: thermal_cont ({cont}°C) "
                f"must be greater than thermal_wait ({wait}°C). thermal_cont is "
                "the target thermal headroom after cooling, thermal_wait is the "
                "threshold that triggers cooling."
            )
            raise ValueError(msg)

    @property
    def thermal(self) -> ThermalSettings | None:
        """The thermal thresholds given (``None`` where none is)."""
        values = (
            self.thermal_wait,
            self.thermal_cont,
            self.thermal_timeout,
            self.thermal_device,
        )
        if all(v is None for v in values):
            return None
        return ThermalSettings(
            wait_c=self.thermal_wait,
            cont_c=self.thermal_cont,
            timeout_s=self.thermal_timeout,
            device=self.thermal_device,
        )

    @property
    def derive_name(self) -> str | None:
        """The derived metric's name: its function's (``<lambda>`` for a lambda)."""
        if self.derive_metric is None:
            return None
        return str(getattr(self.derive_metric, "__name__", "derive_metric"))

    def options(
        self, name: str | None, csv_prefix: str | None, backend: str
    ) -> ProfileOptions:
        """The plan's options: what the magic's flags would say for these keywords."""
        combine = self.combine_kernel_metrics
        derive = self.derive_name
        return ProfileOptions(
            runs=self.runs,
            warmup=DEFAULT_WARMUP if self.warmup is None else self.warmup,
            metrics=tuple(dict.fromkeys((TIME_METRIC, *self.metrics))),
            backend=backend,
            cache_control=self.cache_control,
            clock_control=self.clock_control,
            thermal=self.thermal_mode,
            thermal_settings=self.thermal,
            derive=(derive,) if derive is not None else (),
            normalize_against=self.normalize_against,
            combine="single"
            if combine is None
            else getattr(combine, "__name__", "combine"),
            combine_fn=combine,
            ignore_kernels=tuple(self.ignore_kernel_list or ()),
            replay_mode=self.replay_mode,
            output_csv=csv_prefix,
            name=name,
            quiet=self.verbosity < VerbosityLevel.INFO,
        )


def kernel_signature() -> inspect.Signature:
    """``kernel``'s signature: ``_func``, then :class:`KernelSettings`' keywords."""
    parameters = [
        inspect.Parameter(
            "_func", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None
        ),
        *(
            inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=f.default,
                annotation=f.type,
            )
            for f in fields(KernelSettings)
            if f.init and f.default is not MISSING
        ),
    ]
    return inspect.Signature(parameters)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    """nsight-python's decoration-time check of a closed option.

    Raises:
        ValueError: ``value`` is not one of ``allowed``.
    """
    if value not in allowed:
        expected = " or ".join(repr(a) for a in allowed)
        msg = f"Invalid {name} {value!r}. Expected {expected}."
        raise ValueError(msg)


def _count(name: str, count: object, least: int) -> None:
    """A count keyword (``runs``, ``warmup``): ``None`` or an int from ``least``.

    Raises:
        ValueError: Anything else.
    """
    if count is not None and (
        isinstance(count, bool) or not isinstance(count, int) or count < least
    ):
        msg = f"{name} must be an integer >= {least}, got {count!r}"
        raise ValueError(msg)


def _level(verbosity: object) -> int:
    """nsight-python's verbosity as a level (it compares levels: any int is one).

    Raises:
        ValueError: ``verbosity`` is not an int.
    """
    if isinstance(verbosity, bool) or not isinstance(verbosity, int):
        msg = (
            f"Invalid verbosity {verbosity!r}. Expected a nsight.VerbosityLevel "
            "(SILENT, INFO or DEBUG)."
        )
        raise ValueError(msg)  # noqa: TRY004  (nsight-python's error type)
    return int(verbosity)
