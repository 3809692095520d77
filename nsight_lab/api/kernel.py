"""``analyze.kernel``: nsight-python's decorator, measured by nsight-lab's backends.

``@kernel`` (bare or with nsight-python 1.1.0's keyword arguments) turns a function
into one that profiles it over its configs and returns
:class:`~nsight_lab.api.results.ProfileResults`. Each call is one session of the
store, run through the same path as a ``%%nsight`` cell (:func:`nsight_lab.session.
profile`: plan, backend, store writer, live view, DataFrame), so it shows in the
sidebar and, in a notebook, in the inline widget while it runs.

How nsight-python's parameters map:

* ``configs``, ``runs``, ``metrics``, ``derive_metric``, ``normalize_against``,
  ``cache_control``, ``clock_control``: as ``--configs-from``, ``--runs``,
  ``--metrics``, ``--derive``, ``--normalize-against``, ``--cache-control``,
  ``--clock-control``. The backend is ``auto`` as in the magic (counters beyond the
  duration take a counter backend), or what :func:`nsight_lab.api.tools.use_backend`,
  ``nsight.activate`` or ``backend=`` says.
* ``combine_kernel_metrics``: ``--combine`` with that function; ``None`` is
  ``--combine single``: a region that launches several kernels raises nsight-python's
  error (per-kernel backends; ``events``/``cpu`` time the region's span).
* ``ignore_kernel_list``, ``replay_mode``, ``thermal_mode`` and ``thermal_wait``/
  ``_cont``/``_timeout``/``_device``: ``--ignore-kernels``, ``--replay-mode``,
  ``--thermal``, ``--thermal-settings``.
* ``output_prefix``/``output_csv``: ``--output-csv`` with nsight-python's file names
  (``<prefix>profiled_data-<function>-<call>.csv``, ``processed_data-...``). Under
  nsight-python's NCU tool (the default, with no ``use_backend``/``backend=``), a call
  given ``output_prefix`` runs on the ncu path, as nsight-python's NCU tool does, and
  its reports are kept as ``<prefix>ncu-output-<function>-<call>.ncu-rep``; where ncu
  cannot run, the call says why in one line and its durations come from the backend
  ``auto`` picks.
* ``verbosity``: ``SILENT`` shows nothing; otherwise the inline widget in a notebook,
  progress lines on stderr elsewhere.
* ``info_collectors``: :mod:`nsight_lab.api.collect`.

nsight-lab's own, keyword-only after them: ``backend`` (a backend id or ``auto``) and
``warmup`` (untimed runs per config first; nsight-python has none, nsight-lab's
default is 2 because a first run pays for caches, allocators and clocks).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from nsight_lab.api.collect import Collectors, normalize_collectors, validate_collectors
from nsight_lab.api.configs import FunctionConfigs, call_with, function_configs
from nsight_lab.api.exceptions import ProfilerException
from nsight_lab.api.results import ProfileResults
from nsight_lab.api.tools import default_backend, ncu_tool_chooses
from nsight_lab.backends.base import CellCode
from nsight_lab.contract.records import TIME_METRIC
from nsight_lab.options import (
    DEFAULT_WARMUP,
    ProfileOptions,
    ThermalSettings,
    read_option,
)
from nsight_lab.results import warn_at_user
from nsight_lab.runner import current_run

if TYPE_CHECKING:
    from nsight_lab.backends.base import Availability
    from nsight_lab.plan import Plan

__all__ = ["VerbosityLevel", "kernel"]


class VerbosityLevel(enum.IntEnum):
    """nsight-python's verbosity: level N shows everything up to N."""

    SILENT = 0
    INFO = 3
    DEBUG = 4


DeriveMetric = Callable[
    ..., "float | tuple[float, str] | Mapping[str, float | tuple[float, str]]"
]


@dataclass(frozen=True)
class KernelSettings:
    """Everything ``analyze.kernel`` was given, checked at decoration."""

    configs: Iterable[Any] | None
    runs: int
    derive_metric: DeriveMetric | None
    normalize_against: str | None
    verbosity: int
    """nsight-python's level: ``SILENT`` (0) and below show nothing, from ``INFO``
    (3) the progress, from ``DEBUG`` (4) also the backend and each config."""
    metrics: tuple[str, ...]
    """The metrics as given, in order (what a derive function gets first)."""
    ignore_kernel_list: tuple[str, ...]
    clock_control: Literal["base", "none"]
    cache_control: Literal["all", "none"]
    replay_mode: Literal["kernel", "range"]
    thermal_mode: Literal["auto", "manual", "off"]
    thermal: ThermalSettings | None
    combine_kernel_metrics: Callable[[float, float], float] | None
    output_prefix: str | None
    output_csv: bool
    info_collectors: list[tuple[str, Callable[..., Any], str]] = field(
        default_factory=list
    )
    backend: str | None = None
    warmup: int | None = None


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    """nsight-python's decoration-time check of a closed option.

    Raises:
        ValueError: ``value`` is not one of ``allowed``.
    """
    if value not in allowed:
        expected = " or ".join(repr(a) for a in allowed)
        msg = f"Invalid {name} {value!r}. Expected {expected}."
        raise ValueError(msg)


def _settings(  # noqa: PLR0913  (nsight-python's parameters, keyword-only)
    *,
    configs: Iterable[Any] | None,
    runs: int,
    derive_metric: DeriveMetric | None,
    normalize_against: str | None,
    verbosity: VerbosityLevel,
    metrics: Sequence[str],
    ignore_kernel_list: Sequence[str] | None,
    clock_control: Literal["base", "none"],
    cache_control: Literal["all", "none"],
    replay_mode: Literal["kernel", "range"],
    thermal_mode: Literal["auto", "manual", "off"],
    thermal_wait: int | None,
    thermal_cont: int | None,
    thermal_timeout: int | None,
    thermal_device: int | None,
    combine_kernel_metrics: Callable[[float, float], float] | None,
    output_prefix: str | None,
    output_csv: bool,
    info_collectors: Sequence[object] | None,
    backend: str | None,
    warmup: int | None,
) -> KernelSettings:
    """Check the decorator's arguments now, as nsight-python does.

    Raises:
        ValueError: A closed option has another value, the thermal thresholds are
            the wrong way round, ``runs``/``warmup`` are not counts, a metric name is
            malformed, or a collector is malformed.
        TypeError: ``derive_metric``/``combine_kernel_metrics`` is not callable, or a
            collector is of no accepted kind.
    """
    metrics = tuple(
        m.strip() for m in ([metrics] if isinstance(metrics, str) else metrics)
    )
    _choice("clock_control", clock_control, ("base", "none"))
    _choice("cache_control", cache_control, ("all", "none"))
    _choice("replay_mode", replay_mode, ("kernel", "range"))
    _choice("thermal_mode", thermal_mode, ("auto", "manual", "off"))
    if (
        thermal_wait is not None
        and thermal_cont is not None
        and thermal_cont <= thermal_wait
    ):
        msg = (
            f"Invalid thermal control parameters: thermal_cont ({thermal_cont}°C) "
            f"must be greater than thermal_wait ({thermal_wait}°C). thermal_cont is "
            "the target thermal headroom after cooling, thermal_wait is the "
            "threshold that triggers cooling."
        )
        raise ValueError(msg)
    counts: tuple[tuple[str, object, int], ...] = (
        ("runs", runs, 1),
        ("warmup", warmup, 0),
    )
    for name, count, least in counts:
        if count is not None and (
            isinstance(count, bool) or not isinstance(count, int) or count < least
        ):
            msg = f"{name} must be an integer >= {least}, got {count!r}"
            raise ValueError(msg)
    if not metrics:
        msg = "metrics must name at least one metric (gpu__time_duration.sum)"
        raise ValueError(msg)
    read_option("--metrics", ",".join(metrics), "metrics")  # names checked here
    functions: tuple[tuple[str, object], ...] = (
        ("derive_metric", derive_metric),
        ("combine_kernel_metrics", combine_kernel_metrics),
    )
    for name, func in functions:
        if func is not None and not callable(func):
            msg = f"{name} must be a callable function, got {type(func).__name__}"
            raise TypeError(msg)
    if backend is not None:
        read_option("--backend", backend, "backend")
    thermal = None
    if any(
        v is not None
        for v in (thermal_wait, thermal_cont, thermal_timeout, thermal_device)
    ):
        thermal = ThermalSettings(
            wait_c=thermal_wait,
            cont_c=thermal_cont,
            timeout_s=thermal_timeout,
            device=thermal_device,
        )
    return KernelSettings(
        configs=configs,
        runs=runs,
        derive_metric=derive_metric,
        normalize_against=normalize_against,
        verbosity=_level(verbosity),
        metrics=metrics,
        ignore_kernel_list=tuple(ignore_kernel_list or ()),
        clock_control=clock_control,
        cache_control=cache_control,
        replay_mode=replay_mode,
        thermal_mode=thermal_mode,
        thermal=thermal,
        combine_kernel_metrics=combine_kernel_metrics,
        output_prefix=output_prefix,
        output_csv=bool(output_csv),
        info_collectors=normalize_collectors(info_collectors),
        backend=backend,
        warmup=warmup,
    )


@overload
def kernel(_func: Callable[..., None]) -> Callable[..., ProfileResults]: ...
@overload
def kernel(
    _func: None = None,
    *,
    configs: Iterable[Any] | None = None,
    runs: int = 1,
    derive_metric: DeriveMetric | None = None,
    normalize_against: str | None = None,
    verbosity: VerbosityLevel = VerbosityLevel.INFO,
    metrics: Sequence[str] = (TIME_METRIC,),
    ignore_kernel_list: Sequence[str] | None = None,
    clock_control: Literal["base", "none"] = "none",
    cache_control: Literal["all", "none"] = "all",
    replay_mode: Literal["kernel", "range"] = "kernel",
    thermal_mode: Literal["auto", "manual", "off"] = "auto",
    thermal_wait: int | None = None,
    thermal_cont: int | None = None,
    thermal_timeout: int | None = None,
    thermal_device: int | None = None,
    combine_kernel_metrics: Callable[[float, float], float] | None = None,
    output_prefix: str | None = None,
    output_csv: bool = False,
    info_collectors: Sequence[object] | None = None,
    backend: str | None = None,
    warmup: int | None = None,
) -> Callable[[Callable[..., None]], Callable[..., ProfileResults]]: ...
def kernel(  # noqa: PLR0913  (nsight-python's signature)
    _func: Callable[..., None] | None = None,
    *,
    configs: Iterable[Any] | None = None,
    runs: int = 1,
    derive_metric: DeriveMetric | None = None,
    normalize_against: str | None = None,
    verbosity: VerbosityLevel = VerbosityLevel.INFO,
    metrics: Sequence[str] = (TIME_METRIC,),
    ignore_kernel_list: Sequence[str] | None = None,
    clock_control: Literal["base", "none"] = "none",
    cache_control: Literal["all", "none"] = "all",
    replay_mode: Literal["kernel", "range"] = "kernel",
    thermal_mode: Literal["auto", "manual", "off"] = "auto",
    thermal_wait: int | None = None,
    thermal_cont: int | None = None,
    thermal_timeout: int | None = None,
    thermal_device: int | None = None,
    combine_kernel_metrics: Callable[[float, float], float] | None = None,
    output_prefix: str | None = None,
    output_csv: bool = False,
    info_collectors: Sequence[object] | None = None,
    backend: str | None = None,
    warmup: int | None = None,
) -> (
    Callable[..., ProfileResults]
    | Callable[[Callable[..., None]], Callable[..., ProfileResults]]
):
    """Profile a function over its configs (nsight-python's ``analyze.kernel``).

    Use it bare (``@kernel``) or with arguments (``@kernel(configs=..., runs=10)``).
    The decorated function is called as ``f(*args)`` (one config), ``f()`` (the
    decoration's configs, or none for a function without required parameters) or
    ``f(configs=[...])``, and returns :class:`ProfileResults`; the function's own
    return value is dropped (with nsight-python's ``RuntimeWarning``). The
    parameters are nsight-python 1.1.0's (see the module docstring for how each is
    measured), then nsight-lab's ``backend`` and ``warmup``.

    Raises:
        ValueError: A closed option has another value, the thermal thresholds are the
            wrong way round, ``runs`` is not a positive integer, or a metric name or
            collector is malformed (at decoration, as nsight-python does).
        TypeError: A function argument is not callable, or a collector is of no
            accepted kind.
    """
    settings = _settings(
        configs=configs,
        runs=runs,
        derive_metric=derive_metric,
        normalize_against=normalize_against,
        verbosity=verbosity,
        metrics=metrics,
        ignore_kernel_list=ignore_kernel_list,
        clock_control=clock_control,
        cache_control=cache_control,
        replay_mode=replay_mode,
        thermal_mode=thermal_mode,
        thermal_wait=thermal_wait,
        thermal_cont=thermal_cont,
        thermal_timeout=thermal_timeout,
        thermal_device=thermal_device,
        combine_kernel_metrics=combine_kernel_metrics,
        output_prefix=output_prefix,
        output_csv=output_csv,
        info_collectors=info_collectors,
        backend=backend,
        warmup=warmup,
    )
    if _func is None:
        return functools.partial(_profiled, settings=settings)
    given: object = _func  # user input: checked whatever its annotation says
    if not callable(given):
        msg = (
            f"analyze.kernel decorates a function, got {type(_func).__name__}; give "
            "its settings by keyword: @analyze.kernel(configs=...)"
        )
        raise TypeError(msg)
    return _profiled(_func, settings=settings)


def _profiled(
    func: Callable[..., None], *, settings: KernelSettings
) -> Callable[..., ProfileResults]:
    """``func`` wrapped to profile itself on each call (see :func:`kernel`).

    Raises:
        ProfilerException: A collector's name shadows a column or a parameter.
    """
    from nsight_lab.api.configs import parameters

    validate_collectors(settings.info_collectors, [p.name for p in parameters(func)])
    calls = [0]

    @functools.wraps(func)
    def wrapper(
        *args: Any,  # noqa: ANN401  (the function's own arguments)
        configs: Iterable[Any] | None = None,
        **kwargs: Any,  # noqa: ANN401
    ) -> ProfileResults:
        chosen = function_configs(func, args, kwargs, configs, settings.configs)
        results = _run(func, chosen, settings, tag=f"{func.__name__}-{calls[0]}")
        calls[0] += 1
        return results

    return wrapper


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
    python = f"{_CALL}(globals())\n"
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


_CALL = "nsight_lab_call_"
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
        from nsight_lab.regions import entering_regions

        collectors = self.collectors
        if collectors is None:
            call_with(self.func, bound)
            return
        collectors.before_run()
        with entering_regions(collectors.entering):
            call_with(self.func, bound)
        collectors.send()


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (the inline widget can show)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _notebook() -> str | None:
    """The notebook this runs in, as the magic stores it with a session (or None)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    shell = get_ipython()
    user_ns = getattr(shell, "user_ns", None) or {}
    found = user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME")
    return str(found) if found else None


def _call_backend(
    settings: KernelSettings, probes: Mapping[str, Availability]
) -> tuple[str, str | None]:
    """The backend of one call, and why not ncu where nsight-python's NCU tool would be.

    ``backend=`` wins, then :func:`~nsight_lab.api.tools.use_backend` and the tool.
    Under the NCU tool a call given ``output_prefix`` takes the ncu path (it keeps the
    ``.ncu-rep`` nsight-python's users get); where ncu cannot run, the backend the
    tool picks otherwise, with the reason ncu could not.
    """
    if settings.backend is not None:
        return settings.backend, None
    if settings.output_prefix is None or not ncu_tool_chooses():
        return default_backend(), None
    found = probes.get("ncu")
    if found is not None and found.ok:
        return "ncu", None
    return default_backend(), found.reason if found is not None else "no ncu backend"


def _options(
    func: Callable[..., Any],
    settings: KernelSettings,
    csv_prefix: str | None,
    backend: str,
) -> ProfileOptions:
    metrics = tuple(dict.fromkeys((TIME_METRIC, *settings.metrics)))
    combine = settings.combine_kernel_metrics
    return ProfileOptions(
        runs=settings.runs,
        warmup=DEFAULT_WARMUP if settings.warmup is None else settings.warmup,
        metrics=metrics,
        backend=backend,
        cache_control=settings.cache_control,
        clock_control=settings.clock_control,
        thermal=settings.thermal_mode,
        thermal_settings=settings.thermal,
        derive=(_derive_name(settings.derive_metric),)
        if settings.derive_metric
        else (),
        normalize_against=settings.normalize_against,
        combine="single"
        if combine is None
        else getattr(combine, "__name__", "combine"),
        combine_fn=combine,
        ignore_kernels=settings.ignore_kernel_list,
        replay_mode=settings.replay_mode,
        output_csv=csv_prefix,
        name=getattr(func, "__name__", None),
        quiet=settings.verbosity < VerbosityLevel.INFO,
    )


def _derive_name(func: Callable[..., Any] | None) -> str:
    """A derived metric's name: the function's (``<lambda>`` for a lambda)."""
    return str(getattr(func, "__name__", "derive_metric"))


def _csv_prefix(settings: KernelSettings) -> str | None:
    """Where the CSV files go (nsight-python's output_prefix, else a new temp dir)."""
    if not settings.output_csv:
        return None
    if settings.output_prefix is None:
        return os.path.join(tempfile.mkdtemp(prefix="nspy_"), "")  # noqa: PTH118
    _make_prefix_directory(settings.output_prefix)
    return settings.output_prefix


def _make_prefix_directory(prefix: str) -> None:
    """Create the folder an ``output_prefix`` names (``out/run_``: ``out``)."""
    directory = os.path.dirname(prefix)  # noqa: PTH120  (a prefix, not a path)
    if directory:
        os.makedirs(directory, exist_ok=True)  # noqa: PTH103


def _run(
    func: Callable[..., None],
    chosen: FunctionConfigs,
    settings: KernelSettings,
    *,
    tag: str,
) -> ProfileResults:
    """Profile ``func`` over ``chosen`` as one session; its results.

    Raises:
        NsightLabError: The profile could not run or failed after runs (kept).
        BaseException: Whatever the function raised, unchanged.
    """
    from nsight_lab.backends import backend_entry, get_collector, probe_all
    from nsight_lab.plan import ConfigList, make_plan
    from nsight_lab.regions import entering_regions
    from nsight_lab.results import DeriveSpec
    from nsight_lab.session import Display, ProfileRequest, profile
    from nsight_lab.store.run_store import RunStore

    probes = probe_all()
    backend, no_ncu = _call_backend(settings, probes)
    options = _options(func, settings, _csv_prefix(settings), backend)
    bound = chosen.bound()
    plan = make_plan(options, probes, ConfigList(chosen.names, bound))
    collectors = Collectors(settings.info_collectors, chosen.values)
    isolated = backend_entry(plan.backend).isolated
    if isolated and collectors:
        collectors.inbox = Path(tempfile.mkdtemp(prefix="nsight-lab-collected-"))
    namespace = {_CALL: _isolated_call(func, chosen, plan, collectors)}
    cell = function_cell(func, collectors, namespace)
    verbose = settings.verbosity >= VerbosityLevel.INFO
    if settings.verbosity >= VerbosityLevel.DEBUG:
        _debug_plan(func, plan)
    display: Display = ("widget" if _in_notebook() else "text") if verbose else "none"
    derive = settings.derive_metric
    request = ProfileRequest(
        derive=DeriveSpec(
            names=options.derive,
            functions={options.derive[0]: derive} if derive else {},
            inputs=settings.metrics,
            warn_units=True,
        ),
        notebook=_notebook(),
        display=display,
        info=collectors.columns,
        config_values=bound,
        csv_tag=lambda _session: tag,
        label=f"nsight-lab {func.__name__}",
        notes=_notes(plan, settings, no_ncu),
        metrics=settings.metrics,
    )
    if no_ncu is not None and display == "none":  # else the header shows the note
        warn_at_user(_no_ncu_note(plan, no_ncu), RuntimeWarning)
    collectors.once()
    hook = (
        entering_regions(collectors.entering)
        if collectors
        else contextlib.nullcontext()
    )
    try:
        with RunStore() as store, hook:
            done = profile(
                plan,
                cell,
                collector=get_collector(plan.backend),
                store=store,
                request=request,
            )
    finally:
        if collectors.inbox is not None:  # read by now: the frame is built
            shutil.rmtree(collectors.inbox, ignore_errors=True)
    written = [*done.csv_files]
    if settings.output_prefix is not None and isolated:
        written += _copy_reports(done.session_id, settings.output_prefix, tag)
    if verbose:
        for path in written:
            print(f"[nsight-lab] Refer to {path}", flush=True)  # noqa: T201  (verbosity INFO)
    if cell.returned:
        warn_at_user(
            f"Function '{func.__name__}' returns a value, but the return value for a "
            "function which is decorated with nsight.analyze.kernel is ignored and "
            "instead the ProfileResults object is returned.",
            RuntimeWarning,
        )
    return ProfileResults(done.frame, session_id=done.session_id)


def _isolated_call(
    func: Callable[..., Any],
    chosen: FunctionConfigs,
    plan: Plan,
    collectors: Collectors,
) -> IsolatedCall:
    return IsolatedCall(
        func=func,
        names=chosen.names,
        configs=[
            (tuple(stored[name] for name in chosen.names), bound)
            for stored, bound in zip(plan.configs, chosen.bound(), strict=True)
        ],
        collectors=collectors or None,
    )


def _copy_reports(session_id: int, prefix: str, tag: str) -> list[Path]:
    """The session's kept ncu reports, copied where nsight-python writes its own.

    ``<output_prefix>ncu-output-<function>-<call>.ncu-rep`` (nsight-python's name);
    a profile of several configs has one report each here, named with
    ``-config_<i>`` before the suffix. The kept ones stay with the session.
    """
    from nsight_lab.backends.ncu.isolate import session_report_dir

    kept = sorted(session_report_dir(session_id).glob("config_*.ncu-rep"))
    _make_prefix_directory(prefix)
    copied: list[Path] = []
    for report in kept:
        part = "" if len(kept) == 1 else f"-{report.stem}"
        target = Path(f"{prefix}ncu-output-{tag}{part}.ncu-rep")
        shutil.copyfile(report, target)
        copied.append(target)
    return copied


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
        raise ValueError(msg)  # noqa: TRY004  (the options' one error type)
    return int(verbosity)


def _debug_plan(func: Callable[..., Any], plan: Plan) -> None:
    """``VerbosityLevel.DEBUG``: the backend, why, and each config, before the runs."""
    name = getattr(func, "__name__", "kernel")
    print(  # noqa: T201  (verbosity DEBUG)
        f"[nsight-lab] {name}: backend {plan.backend} ({plan.backend_reason}); "
        f"{len(plan.configs)} configs x {plan.options.runs} runs",
        flush=True,
    )
    for index, config in enumerate(plan.configs):
        shown = ", ".join(f"{k}={v!r}" for k, v in config.items()) or "no parameters"
        print(f"[nsight-lab] config {index}: {shown}", flush=True)  # noqa: T201


def _no_ncu_note(plan: Plan, why: str) -> str:
    """The one line of a call that nsight-python's NCU tool would have run under ncu."""
    return (
        f"output_prefix: ncu cannot run here ({why}), so no .ncu-rep is kept; "
        f"the durations come from the {plan.backend} backend"
    )


def _notes(plan: Plan, settings: KernelSettings, no_ncu: str | None) -> list[str]:
    """What the session should say about nsight-python settings with another effect."""
    from nsight_lab.backends import backend_entry

    notes: list[str] = []
    if no_ncu is not None:
        notes.append(_no_ncu_note(plan, no_ncu))
    elif (
        settings.output_prefix is not None and not backend_entry(plan.backend).isolated
    ):
        notes.append(
            f"output_prefix: the {plan.backend} backend runs no ncu, so no ncu "
            "report is written there (CSV files are, with output_csv=True)"
        )
    if settings.info_collectors and backend_entry(plan.backend).isolated:
        notes.append(
            "info_collectors: the config, run and annotation ones ran in the ncu "
            "child process, with the function; once ones here, before the profile"
        )
    return notes
