"""Turn options and the backend probe table into a :class:`Plan`: pure, no hardware."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nsight_lab.errors import BackendUnavailableError, OptionError
from nsight_lab.roofline.counters import ROOFLINE_METRICS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.backends.base import Availability
    from nsight_lab.options import ProfileOptions
    from nsight_lab.records import JsonScalar


@dataclass(frozen=True)
class Plan:
    """What the runner will do: which backend, why, and over which configs."""

    options: ProfileOptions
    backend: str
    backend_reason: str
    configs: list[dict[str, JsonScalar]]
    model_work: bool
    """Count FLOPs and bytes per region (for ``--derive tflops|gbps``)."""

    @property
    def runs_planned(self) -> int:
        """Measured runs planned over all configs (a minimum with ``--target-rsd``)."""
        return len(self.configs) * self.options.runs


def make_plan(options: ProfileOptions, probes: Mapping[str, Availability]) -> Plan:
    """Choose the backend and lay out the configs.

    Args:
        options: Parsed magic options.
        probes: Backend id -> availability, from ``backends.probe_all()``.

    Returns:
        The plan.

    Raises:
        BackendUnavailableError: The requested backend (or every candidate for
            ``auto``) cannot run here; the message says why and what to do.
        OptionError: The options ask for something no backend here provides, or the
            config grid is larger than ``--max-configs`` (checked before it is laid
            out: a grid of 12 parameters x 100 values would not fit in memory).
    """
    options.check_grid()
    extra = options.extra_metrics
    if options.isolate and options.backend not in {"auto", "ncu"}:
        msg = (
            f"--isolate runs the cell in a child process under Nsight Compute (the ncu "
            f"backend), not with --backend {options.backend}; drop one of the two"
        )
        raise OptionError(msg)
    if options.isolate:
        options = replace(options, backend="ncu")
    if options.backend == "auto":
        backend, reason = _choose(extra, probes)
    else:
        backend = options.backend
        found = probes.get(backend)
        if found is None or not found.ok:
            why = found.reason if found else "unknown backend"
            hint = f"; {found.hint}" if found and found.hint else ""
            msg = f"backend {backend!r} is unavailable: {why}{hint}"
            raise BackendUnavailableError(msg)
        reason = f"requested with --backend {backend}"
    if extra and backend != "ncu":
        msg = (
            f"--metrics {_listed(extra)} needs the ncu backend (hardware counters); "
            f"the {backend} backend measures only gpu__time_duration.sum"
        )
        raise OptionError(msg)
    if backend == "ncu" and not extra:
        # Asked for ncu without naming metrics: collect what the roofline and the
        # traffic views need, so the run is worth its passes.
        options = replace(options, metrics=ROOFLINE_METRICS)
    return Plan(
        options=options,
        backend=backend,
        backend_reason=reason,
        configs=options.configs(),
        model_work=any(d in {"tflops", "gbps"} for d in options.derive),
    )


def _choose(
    extra: tuple[str, ...], probes: Mapping[str, Availability]
) -> tuple[str, str]:
    def ok(backend_id: str) -> bool:
        found = probes.get(backend_id)
        return found is not None and found.ok

    if extra:
        if ok("ncu"):
            return "ncu", f"metrics {_listed(extra, ', ')} need hardware counters"
        why = probes["ncu"].reason if "ncu" in probes else "not probed"
        msg = (
            f"--metrics {_listed(extra)} need the ncu backend, "
            f"which is unavailable: {why}"
        )
        raise BackendUnavailableError(msg)
    if ok("events"):
        return (
            "events",
            "a CUDA GPU is visible: CUDA events time each region on the GPU",
        )
    why = probes["events"].reason if "events" in probes else "events backend not probed"
    return "cpu", f"no GPU timing available ({why}): host wall-clock timing"


def _listed(names: tuple[str, ...], sep: str = ",", limit: int = 80) -> str:
    """``names`` joined for a one-line message, cut after ``limit`` characters."""
    text = sep.join(names)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(names)} metrics)"
