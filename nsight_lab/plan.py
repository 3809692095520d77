"""Turn options and a probe result into a :class:`Plan`: pure, no hardware, no store.

Which backends exist, which one ``--isolate`` means and the order ``--backend auto``
tries them in come from the registry (:mod:`nsight_lab.contract.registry`); whether
each can run here, and whether a counter backend takes the metrics asked for, come
from the :class:`~nsight_lab.contract.probe.ProbeResult` the session made once before
planning (:class:`nsight_lab.backends.probe.Prober`). The same options and probe give
the same plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nsight_lab.contract import registry
from nsight_lab.contract.probe import ProbeResult
from nsight_lab.errors import BackendUnavailableError, PlanError

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from nsight_lab.contract.collector import Availability
    from nsight_lab.contract.probe import MetricVerdict
    from nsight_lab.contract.records import JsonScalar
    from nsight_lab.options import ProfileOptions


@dataclass(frozen=True)
class ConfigList:
    """An explicit list of configs (nsight-python's ``configs``, ``--configs-from``).

    Attributes:
        names: The parameter names, in order.
        values: Per config, the objects bound to the names (any Python objects).
    """

    names: tuple[str, ...]
    values: list[dict[str, Any]]


def json_value(value: object) -> JsonScalar:
    r"""A config value as the store and the wire keep it.

    JSON scalars as they are, numpy scalars as Python numbers, anything else (a
    ``torch.dtype``, a numpy row) as its text. Text is kept UTF-8-encodable (a lone
    surrogate written as its ``\udXXX`` escape), so every stored session exports.
    """
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()  # type: ignore[attr-defined]
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    text = value if isinstance(value, str) else _text_of(value)[:MAX_VALUE_TEXT]
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _text_of(value: object) -> str:
    """``str(value)``, or its type's name where ``__str__`` fails (user objects)."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001  (any user __str__)
        return f"<{type(value).__name__}>"


MAX_VALUE_TEXT = 200
"""The longest text kept for a config value that is not a JSON scalar."""


@dataclass(frozen=True)
class Plan:
    """What the collector will do: which backend, why, and over which configs."""

    options: ProfileOptions
    backend: str
    backend_reason: str
    configs: list[dict[str, JsonScalar]]
    """Each config as the store keeps it (JSON scalars)."""
    model_work: bool
    """Count FLOPs and bytes per region (for ``--derive tflops|gbps``)."""
    bindings: list[dict[str, Any]] | None = None
    """Each config's objects as the cell sees them (an explicit config list); else
    the cell sees :attr:`configs` themselves."""
    names: tuple[str, ...] | None = None
    """The parameter names of an explicit config list."""
    metric_verdict: MetricVerdict | None = None
    """The probe's verdict on the metrics, for a backend that checks them (``pm``):
    its collector measures what it chose and does not check them again."""

    @property
    def runs_planned(self) -> int:
        """Measured runs planned over all configs (a minimum with ``--target-rsd``)."""
        return len(self.configs) * self.options.runs

    @property
    def param_names(self) -> tuple[str, ...]:
        """The parameter names, in order: the grid's or the explicit list's."""
        return self.names if self.names is not None else self.options.param_names

    def bound(self, config_index: int) -> dict[str, Any]:
        """What config ``config_index`` binds in the cell: its objects or values."""
        if self.bindings is not None:
            return self.bindings[config_index]
        return self.configs[config_index]


def make_plan(
    options: ProfileOptions,
    probe: ProbeResult | Mapping[str, Availability],
    config_list: ConfigList | None = None,
    *,
    notebook_derives: Collection[str] = (),
) -> Plan:
    """Choose the backend and lay out the configs: a pure function of its arguments.

    Args:
        options: Parsed magic options.
        probe: What can run here (``Prober.probe``, made once before planning); a
            bare table of availabilities stands for a probe without verdicts.
        config_list: An explicit list of configs, in place of the options' grid.
        notebook_derives: The ``--derive`` names the notebook defines as functions:
            a notebook ``tflops``/``gbps`` replaces the model (no counting pass).

    Returns:
        The plan.

    Raises:
        BackendUnavailableError: The requested backend (or every candidate for
            ``auto``) cannot run here; the message says why and what to do.
        PlanError: The options ask for something no backend here provides, or the
            config grid is larger than ``--max-configs`` (checked before it is laid
            out: a grid of 12 parameters x 100 values would not fit in memory).
    """
    if not isinstance(probe, ProbeResult):
        probe = ProbeResult(backends=dict(probe))
    options.check_grid()
    extra = options.extra_metrics
    if options.isolate:
        options = replace(options, backend=_isolated_backend(options.backend))
    _check_ranks(options, options.backend)  # before its probe says it is missing
    backend, reason = _backend(options, extra, probe)
    entry = registry.backend_entry(backend)
    _check_ranks(options, backend)
    _check_counters(entry, extra, probe)
    if entry.counters and not extra:
        # Asked for counters without naming metrics: collect the backend's defaults
        # (for ncu what the roofline and the traffic views need), so the run is worth
        # its passes. A backend takes what of its defaults it can and notes the rest.
        options = replace(options, metrics=registry.default_metrics(entry))
    modelled = {"tflops", "gbps"} - set(notebook_derives)
    plan = Plan(
        options=options,
        backend=backend,
        backend_reason=reason,
        configs=[],
        model_work=any(d in modelled for d in options.derive),
        metric_verdict=probe.verdicts.get(backend),
    )
    return _laid_out(plan, config_list)


def _laid_out(plan: Plan, config_list: ConfigList | None) -> Plan:
    """``plan`` with its configs: the options' grid, or the explicit list.

    Raises:
        PlanError: The explicit list is longer than ``--max-configs``.
    """
    options = plan.options
    if config_list is None:
        return replace(plan, configs=options.configs())
    if len(config_list.values) > options.config_limit:
        msg = (
            f"configs: {len(config_list.values):,} configs, above "
            f"{options.config_limit:,}; give fewer (or raise --max-configs)"
        )
        raise PlanError(msg)
    return replace(
        plan,
        configs=[
            {name: json_value(value) for name, value in bound.items()}
            for bound in config_list.values
        ],
        bindings=list(config_list.values),
        names=config_list.names,
    )


def _backend(
    options: ProfileOptions, extra: tuple[str, ...], probe: ProbeResult
) -> tuple[str, str]:
    """The backend of the plan and why: ``auto``'s choice, or the one asked for.

    Raises:
        BackendUnavailableError: It cannot run here (the probe says why).
    """
    if options.backend == "auto":
        return _choose(extra, probe)
    backend = options.backend
    found = probe.availability(backend)
    if found is None or not found.ok:
        why = found.reason if found else "unknown backend"
        hint = f"; {found.hint}" if found and found.hint else ""
        msg = f"backend {backend!r} is unavailable: {why}{hint}"
        raise BackendUnavailableError(msg)
    reason = (
        f"requested with --backend {backend}"
        if {"--backend", "--isolate"} & set(options.given)
        else f"requested: backend {backend!r}"  # nsight-python's API, use_backend
    )
    return backend, reason


def _check_counters(
    entry: registry.BackendEntry, extra: tuple[str, ...], probe: ProbeResult
) -> None:
    """Refuse ``--metrics`` the backend does not measure, or cannot here together.

    Raises:
        PlanError: A timing backend with counters asked for, or the counter
            backend's verdict (``pm``) refuses them.
    """
    if extra and not entry.counters:
        msg = (
            f"--metrics {_listed(extra)} needs {_counter_backends()} "
            f"(hardware counters); the {entry.id} backend measures only "
            "gpu__time_duration.sum"
        )
        raise PlanError(msg)
    refused = _refusal(entry.id, extra, probe) if entry.counters else None
    if refused:
        raise PlanError(refused)


def _refusal(backend_id: str, extra: tuple[str, ...], probe: ProbeResult) -> str | None:
    """Why ``backend_id`` cannot measure every one of ``extra`` here, or ``None``.

    The backend's own refusal first (pm names the metrics its chip does not sample,
    or the passes they need). A verdict that took only some of the metrics asked
    for is a refusal too: every metric asked for is measured, or the plan moves on
    (``auto``) or says which are left out (a named backend); none goes missing
    from the results without a word.
    """
    refused = probe.refusal(backend_id, extra)
    verdict = probe.verdicts.get(backend_id)
    if refused or verdict is None or not extra or verdict.asked != extra:
        return refused
    left_out = verdict.left_out
    if not left_out:
        return None
    return (
        f"--metrics: PM sampling on {verdict.where} cannot take "
        f"{', '.join(left_out)} with the rest in one pass; use --backend ncu for "
        f"{'it' if len(left_out) == 1 else 'them'}"
    )


def _choose(extra: tuple[str, ...], probe: ProbeResult) -> tuple[str, str]:
    """The first backend ``auto`` may take that can run here, and why it was taken.

    Raises:
        BackendUnavailableError: None of the candidates can run here.
    """
    candidates = registry.auto_candidates(counters=bool(extra))
    skipped: list[str] = []
    for entry in candidates:
        found = probe.availability(entry.id)
        # A counter backend may run here and still not take these metrics (pm):
        # auto takes one only if it measures every metric asked for.
        refused = _refusal(entry.id, extra, probe) if found is not None else None
        if found is not None and found.ok and not refused:
            # The note says why the earlier candidate was passed over, e.g. which
            # metrics PM sampling does not take on this chip.
            why = skipped[0] if skipped else ""
            return entry.id, entry.auto_reason.format(
                metrics=_listed(extra, ", "), why=why
            )
        skipped.append(
            refused or (found.reason if found else f"{entry.id} backend not probed")
        )
    why = skipped[0] if skipped else "none is registered"
    if extra:
        each = "; ".join(
            f"{entry.id}: {reason}"
            for entry, reason in zip(candidates, skipped, strict=True)
        )
        msg = (
            f"--metrics {_listed(extra)} need {_counter_backends()}, "
            f"which is unavailable: {each}"
        )
    else:
        names = ", ".join(entry.id for entry in candidates)
        msg = f"no backend can time this cell here (tried {names}): {why}"
    raise BackendUnavailableError(msg)


def _isolated_backend(requested: str) -> str:
    """The backend ``--isolate`` means, checked against ``--backend``.

    Raises:
        PlanError: ``--backend`` names another backend, or none runs isolated.
    """
    isolated = [entry.id for entry in registry.registered() if entry.isolated]
    if not isolated:  # pragma: no cover - the registry has one
        msg = "--isolate: no backend of this version runs the cell in a child process"
        raise PlanError(msg)
    if requested not in {"auto", *isolated}:
        msg = (
            f"--isolate runs the cell in a child process under Nsight Compute (the "
            f"{isolated[0]} backend), not with --backend {requested}; "
            "drop one of the two"
        )
        raise PlanError(msg)
    return requested if requested in isolated else isolated[0]


def _check_ranks(options: ProfileOptions, backend: str) -> None:
    """Refuse ``--ranks`` where ``backend`` or the options cannot take it.

    ``auto`` is checked once it is resolved to a backend.

    Raises:
        PlanError: The backend times regions in this process only, or
            ``--target-rsd`` asks for a number of runs the ranks would have to agree on.
    """
    if options.ranks is None or backend == "auto":
        return
    entry = registry.backend_entry(backend)
    if not entry.ranks:
        able = " or ".join(
            f"--backend {e.id}" for e in registry.registered() if e.ranks
        )
        msg = (
            f"--ranks {options.ranks}: the {entry.id} backend cannot time regions in "
            f"several ranks; use {able}, or drop --ranks"
        )
        raise PlanError(msg)
    if options.target_rsd_pct is not None:
        msg = (
            f"--ranks {options.ranks}: every rank runs the cell --runs times per "
            "config; drop --target-rsd"
        )
        raise PlanError(msg)


def _counter_backends() -> str:
    """The backends that measure hardware counters, for a message."""
    ids = [entry.id for entry in registry.registered() if entry.counters]
    return f"the {' or '.join(ids)} backend"


def _listed(names: tuple[str, ...], sep: str = ",", limit: int = 80) -> str:
    """``names`` joined for a one-line message, cut after ``limit`` characters."""
    text = sep.join(names)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(names)} metrics)"
