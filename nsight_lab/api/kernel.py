"""``analyze.kernel``: nsight-python's decorator, measured by nsight-lab's backends.

``@kernel`` (bare or with nsight-python 1.1.0's keyword arguments) turns a function
into one that profiles it over its configs and returns
:class:`~nsight_lab.api.results.ProfileResults`. Each call is one session of the
store, run by the same orchestrator as a ``%%nsight`` cell
(:func:`nsight_lab.session.prepare`, then :func:`nsight_lab.session.run`: plan,
backend, store writer, live view, DataFrame), so it shows in the sidebar and, in a
notebook, in the inline widget while it runs.

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
import functools
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from nsight_lab.api.cell import CALL, function_cell, isolated_call
from nsight_lab.api.collect import Collectors, validate_collectors
from nsight_lab.api.configs import FunctionConfigs, function_configs, parameters
from nsight_lab.api.results import ProfileResults
from nsight_lab.api.settings import KernelSettings, VerbosityLevel, kernel_signature
from nsight_lab.api.tools import default_backend, ncu_tool_chooses
from nsight_lab.backends.ncu.isolate import session_report_dir
from nsight_lab.backends.probe import Prober
from nsight_lab.contract.registry import backend_entry, probe_all
from nsight_lab.plan import ConfigList
from nsight_lab.regions import entering_regions
from nsight_lab.results import DeriveSpec, warn_at_user
from nsight_lab.session import Display, ProfileRequest, notebook_path, prepare, run
from nsight_lab.session.output import api_say

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from nsight_lab.api.cell import FunctionCell
    from nsight_lab.contract.collector import Availability
    from nsight_lab.plan import Plan
    from nsight_lab.session import Prepared, Profiled

__all__ = ["VerbosityLevel", "in_notebook", "kernel"]


@overload
def kernel(_func: Callable[..., None]) -> Callable[..., ProfileResults]: ...
@overload
def kernel(
    _func: None = None,
    **keywords: Any,  # noqa: ANN401  (KernelSettings' fields: its signature says)
) -> Callable[[Callable[..., None]], Callable[..., ProfileResults]]: ...
def kernel(
    _func: Callable[..., None] | None = None,
    **keywords: Any,
) -> (
    Callable[..., ProfileResults]
    | Callable[[Callable[..., None]], Callable[..., ProfileResults]]
):
    """Profile a function over its configs (nsight-python's ``analyze.kernel``).

    Use it bare (``@kernel``) or with arguments (``@kernel(configs=..., runs=10)``).
    The decorated function is called as ``f(*args)`` (one config), ``f()`` (the
    decoration's configs, or none for a function without required parameters) or
    ``f(configs=[...])``, and returns :class:`ProfileResults`; the function's own
    return value is dropped (with nsight-python's ``RuntimeWarning``). The keywords
    are :class:`~nsight_lab.api.settings.KernelSettings`' fields (nsight-python
    1.1.0's, then nsight-lab's ``backend`` and ``warmup``; see the module docstring
    for how each is measured); ``inspect.signature(kernel)`` lists them.

    Raises:
        ValueError: A closed option has another value, the thermal thresholds are the
            wrong way round, ``runs`` is not a positive integer, or a metric name or
            collector is malformed (at decoration, as nsight-python does).
        TypeError: An unknown keyword, a function argument that is not callable, or a
            collector of no accepted kind.
    """
    settings = KernelSettings.given(keywords)
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


kernel.__signature__ = kernel_signature()  # type: ignore[attr-defined]


def _profiled(
    func: Callable[..., None], *, settings: KernelSettings
) -> Callable[..., ProfileResults]:
    """``func`` wrapped to profile itself on each call (see :func:`kernel`).

    Raises:
        ProfilerException: A collector's name shadows a column or a parameter.
    """
    validate_collectors(settings.collectors, [p.name for p in parameters(func)])
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


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (the inline widget can show)."""
    try:
        from IPython import get_ipython  # noqa: PLC0415  (IPython: only to ask)
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _notebook() -> str | None:
    """The notebook this runs in, as the magic stores it with a session (or None)."""
    try:
        from IPython import get_ipython  # noqa: PLC0415  (IPython: only to ask)
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    return notebook_path(getattr(get_ipython(), "user_ns", None) or {})


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
    probes = probe_all()
    backend, no_ncu = _call_backend(settings, probes)
    options = settings.options(
        getattr(func, "__name__", None), _csv_prefix(settings), backend
    )
    # Probed once, on the table the backend came from; no --baseline, no ranks.
    prepared = prepare(
        options, Prober(), ConfigList(chosen.names, chosen.bound()), probes=probes
    )
    plan = prepared.plan
    collectors = Collectors(settings.collectors, chosen.values)
    isolated = backend_entry(plan.backend).isolated
    if isolated and collectors:
        collectors.inbox = Path(tempfile.mkdtemp(prefix="nsight-lab-collected-"))
    namespace = {CALL: isolated_call(func, chosen, plan, collectors)}
    cell = function_cell(func, collectors, namespace)
    if settings.verbosity >= VerbosityLevel.DEBUG:
        _debug_plan(func, plan)
    request = _request(
        func=func,
        plan=plan,
        settings=settings,
        collectors=collectors,
        chosen=chosen,
        no_ncu=no_ncu,
        tag=tag,
    )
    if no_ncu is not None and request.display == "none":  # else the header says it
        warn_at_user(_no_ncu_note(plan, no_ncu), RuntimeWarning)
    collectors.once()
    done = _profile(prepared, cell, collectors, request)
    written = [*done.csv_files]
    if settings.output_prefix is not None and isolated:
        written += _copy_reports(done.session_id, settings.output_prefix, tag)
    _after(func, cell, settings, written)
    assert done.frame is not None  # noqa: S101  (its request asks for the frame)
    return ProfileResults(done.frame, session_id=done.session_id)


def _profile(
    prepared: Prepared,
    cell: FunctionCell,
    collectors: Collectors,
    request: ProfileRequest,
) -> Profiled:
    """Run the profile (:func:`nsight_lab.session.run`) in the collectors' scopes.

    Raises:
        NsightLabError: The profile could not run or failed after runs (kept).
        BaseException: Whatever the function raised, unchanged.
    """
    hook = (
        entering_regions(collectors.entering)
        if collectors
        else contextlib.nullcontext()
    )
    try:
        with hook:
            done = run(prepared, cell, request)
    finally:
        if collectors.inbox is not None:  # read by now: the frame is built
            shutil.rmtree(collectors.inbox, ignore_errors=True)
    assert done is not None  # noqa: S101  (not over ranks: it never only follows)
    return done


def _request(  # noqa: PLR0913  (what one call's request is made of)
    *,
    func: Callable[..., None],
    plan: Plan,
    settings: KernelSettings,
    collectors: Collectors,
    chosen: FunctionConfigs,
    no_ncu: str | None,
    tag: str,
) -> ProfileRequest:
    """What :func:`nsight_lab.session.profile` is asked for one call of ``func``."""
    verbose = settings.verbosity >= VerbosityLevel.INFO
    display: Display = ("widget" if in_notebook() else "text") if verbose else "none"
    derive = settings.derive_metric
    names = plan.options.derive
    return ProfileRequest(
        derive=DeriveSpec(
            names=names,
            functions={names[0]: derive} if derive else {},
            inputs=settings.metrics,
            warn_units=True,
        ),
        notebook=_notebook(),
        display=display,
        info=collectors.columns,
        config_values=chosen.bound(),
        csv_tag=lambda _session: tag,
        label=f"nsight-lab {func.__name__}",
        notes=_notes(plan, settings, no_ncu),
        metrics=settings.metrics,
    )


def _after(
    func: Callable[..., None],
    cell: FunctionCell,
    settings: KernelSettings,
    written: list[Path],
) -> None:
    """What a call says once its profile is done: its files, a dropped return value."""
    if settings.verbosity >= VerbosityLevel.INFO:
        for path in written:
            api_say(f"[nsight-lab] Refer to {path}")
    if cell.returned:
        warn_at_user(
            f"Function '{func.__name__}' returns a value, but the return value for a "
            "function which is decorated with nsight.analyze.kernel is ignored and "
            "instead the ProfileResults object is returned.",
            RuntimeWarning,
        )


def _copy_reports(session_id: int, prefix: str, tag: str) -> list[Path]:
    """The session's kept ncu reports, copied where nsight-python writes its own.

    ``<output_prefix>ncu-output-<function>-<call>.ncu-rep`` (nsight-python's name);
    a profile of several configs has one report each here, named with
    ``-config_<i>`` before the suffix. The kept ones stay with the session.
    """
    kept = sorted(session_report_dir(session_id).glob("config_*.ncu-rep"))
    _make_prefix_directory(prefix)
    copied: list[Path] = []
    for report in kept:
        part = "" if len(kept) == 1 else f"-{report.stem}"
        target = Path(f"{prefix}ncu-output-{tag}{part}.ncu-rep")
        shutil.copyfile(report, target)
        copied.append(target)
    return copied


def _debug_plan(func: Callable[..., Any], plan: Plan) -> None:
    """``VerbosityLevel.DEBUG``: the backend, why, and each config, before the runs."""
    name = getattr(func, "__name__", "kernel")
    api_say(
        f"[nsight-lab] {name}: backend {plan.backend} ({plan.backend_reason}); "
        f"{len(plan.configs)} configs x {plan.options.runs} runs"
    )
    for index, config in enumerate(plan.configs):
        shown = ", ".join(f"{k}={v!r}" for k, v in config.items()) or "no parameters"
        api_say(f"[nsight-lab] config {index}: {shown}")


def _no_ncu_note(plan: Plan, why: str) -> str:
    """The one line of a call that nsight-python's NCU tool would have run under ncu."""
    return (
        f"output_prefix: ncu cannot run here ({why}), so no .ncu-rep is kept; "
        f"the durations come from the {plan.backend} backend"
    )


def _notes(plan: Plan, settings: KernelSettings, no_ncu: str | None) -> list[str]:
    """What the session should say about nsight-python settings with another effect."""
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
