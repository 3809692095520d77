"""Can PM sampling run here, and on which metrics: the probe's question, the doctor's.

The ``pm`` probe is cheap (cupti-python's version, a CUDA GPU, counter permission);
the rest is asked only when counters are, once per profile, by the session's prober
(:meth:`PmChecks.verdict`): it enables PM sampling once per device to see that it
starts (permission, nvperf libraries, driver) and checks the metrics through the
profiler host API, the verdicts kept per device in the store
(:class:`~.metrics.MetricCheck`). Its answers live in the :class:`PmChecks` its owner
holds (the magic's prober, for the kernel's life), not in the module.
:func:`diagnose` is ``%nsight doctor``'s "PM sampling" line: all of it, as a status,
what was found and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from nsight_lab.backends.gpu import require_cuda
from nsight_lab.backends.pm import errors, metrics
from nsight_lab.backends.pm.host import CuptiMetricsHost, chip_name, cupti_version
from nsight_lab.backends.pm.keep import Keeper
from nsight_lab.contract.probe import MetricVerdict
from nsight_lab.errors import NsightLabError
from nsight_lab.gpu import stack
from nsight_lab.store.run_store import RunStore


def _device_name(torch: Any, index: int) -> str:  # noqa: ANN401  (the torch module)
    return str(torch.cuda.get_device_properties(index).name)


class StoreCache:
    """The run store's cache, opened for each read or write: nothing stays open."""

    def cache_get(self, key: str) -> Any:  # noqa: ANN401  (any JSON value)
        """The JSON value under ``key``, or None."""
        with RunStore() as store:
            return store.cache_get(key)

    def cache_put(self, key: str, value: Any) -> None:  # noqa: ANN401
        """Keep ``value`` under ``key``."""
        with RunStore() as store:
            store.cache_put(key, value)


class PmChecks:
    """Answers kept by their owner: can PM sampling start here, which metrics fit.

    Args:
        cache: Where metric verdicts are kept per device (the run store by default).
    """

    def __init__(self, cache: metrics.MetricsCache | None = None) -> None:
        """Nothing asked yet."""
        self.cache = StoreCache() if cache is None else cache
        self.startable: dict[int, str | None] = {}
        self.by_device: dict[str, metrics.MetricCheck] = {}
        self.keeper = Keeper()
        """The sampling parts the pm collector keeps between this owner's cells."""

    def check(self, torch: Any, index: int) -> metrics.MetricCheck:  # noqa: ANN401
        """The metric check of CUDA device ``index`` (its verdicts cached in the store).

        Raises:
            BackendUnavailableError: CUPTI cannot name the device's chip.
        """
        name = _device_name(torch, index)
        found = self.by_device.get(name)
        if found is None:
            host = CuptiMetricsHost(chip_name(index))
            found = metrics.MetricCheck(name, host, self.cache)
            self.by_device[name] = found
        return found

    def start_problem(self, index: int) -> str | None:
        """Why PM sampling cannot be enabled on device ``index`` (tried once)."""
        if index not in self.startable:
            try:
                from cupti import pm_sampling  # noqa: PLC0415  (optional: cupti-python)

                probe = pm_sampling.Collector(index)
                probe.enable()
                probe.disable()
            except Exception as exc:  # noqa: BLE001  (the reason is the answer)
                self.startable[index] = str(errors.explain(exc, started=False))
            else:
                self.startable[index] = None
        return self.startable[index]

    def verdict(self, wanted: tuple[str, ...], *, given: bool) -> MetricVerdict:
        """The verdict on ``wanted`` on the current CUDA device; never raises.

        It carries this owner's :attr:`keeper` to the pm collector.
        """
        return replace(self._verdict(wanted, given=given), keeper=self.keeper)

    def _verdict(self, wanted: tuple[str, ...], *, given: bool) -> MetricVerdict:
        """:meth:`verdict` without the keeper.

        Metrics asked for (``--metrics``, nsight-python's ``metrics=``:
        :func:`asked_for`) are refused as a whole (PM sampling does not start, a
        metric it cannot sample, more than one pass), which the plan says in one
        line; the defaults are trimmed to the first group that fits one
        pass. Where the check itself fails, given metrics are refused with the
        reason and metrics not marked given are taken unchecked (CUPTI checks them
        when it configures sampling: an error then, never a metric dropped), said
        in the notes.
        """
        try:
            torch = require_cuda("pm")
            index = int(torch.cuda.current_device())
            whole = asked_for(wanted, given=given)
            problem = self.start_problem(index) if whole else None
            if problem is not None:
                return MetricVerdict(wanted, whole, refused=problem)
            check = self.check(torch, index)
            return judged(check, wanted, given=given)
        except Exception as exc:  # noqa: BLE001  (a probe never raises)
            if given:
                return MetricVerdict(wanted, given, refused=_said(exc))
            return MetricVerdict(
                wanted, given, chosen=wanted, unchecked=f"{type(exc).__name__}: {exc}"
            )


def asked_for(wanted: tuple[str, ...], *, given: bool) -> bool:
    """Whether ``wanted`` must be sampled whole (all or nothing), not trimmed.

    Only the backend's own defaults (:data:`~.metrics.DEFAULT_METRICS`) are trimmed
    to what fits: any other metrics were asked for by someone, and one dropped
    here would be missing from the results without a word. nsight-python's
    ``metrics=`` reaches the probe without ``--metrics`` among the options given,
    so ``given`` alone cannot tell: on an H100 its examples 08, 09 and 11 were
    trimmed to nothing ("no metric left to PM-sample") instead of moving to ncu,
    and ``sm__throughput`` was dropped from a pair PM sampling half takes.
    """
    return given or tuple(wanted) != metrics.DEFAULT_METRICS


def judged(
    check: metrics.MetricCheck, wanted: tuple[str, ...], *, given: bool
) -> MetricVerdict:
    """What ``check`` says of ``wanted``: refused as a whole, or trimmed to one pass.

    Only the backend's own defaults are trimmed (:func:`asked_for`).

    Raises:
        Exception: Whatever the profiler host API raised (the caller says so).
    """
    where = check.host.chip
    given = asked_for(wanted, given=given)
    if given:
        refused = check.why_not(wanted)
        return MetricVerdict(wanted, given, refused, chosen=wanted, where=where)
    accepted = [m for m in wanted if not check.why_not((m,))]
    first = check.groups(accepted)[0] if accepted else []
    return MetricVerdict(wanted, given, chosen=tuple(first), where=where)


def _said(exc: BaseException) -> str:
    return (
        str(exc) if isinstance(exc, NsightLabError) else f"{type(exc).__name__}: {exc}"
    )


@dataclass(frozen=True)
class Diagnosis:
    """The doctor's line about PM sampling."""

    status: Literal["ok", "warn", "missing", "error"]
    detail: str
    hint: str = ""


def _prerequisite_missing() -> Diagnosis | None:
    """cupti-python >= 13.4, a CUDA GPU, counter permission: what is missing."""
    problem = errors.version_problem(cupti_version())
    if problem is not None:
        reason, _, hint = problem.partition("; ")
        return Diagnosis("missing", reason, hint)
    try:
        require_cuda("pm")
    except NsightLabError as exc:
        reason = str(exc).removeprefix("backend 'pm' is unavailable: ")
        what, _, hint = reason.partition("; ")
        return Diagnosis("missing", what, hint)
    if stack.counter_permission().ok is False:
        return Diagnosis(
            "error", "GPU performance counters are for admins only", errors.PERMISSION
        )
    return None


def diagnose(checks: PmChecks | None = None) -> Diagnosis:
    """Whether PM sampling works here, the exact reason if not, and what to do.

    Tries everything the backend needs, in order: cupti-python >= 13.4, a CUDA GPU,
    counter permission, enabling PM sampling (nvperf libraries, driver, GPU), the
    chip's name, and whether the default counters fit in one pass.

    Args:
        checks: The answers already known in this process (asked afresh without).

    Raises:
        Nothing.
    """
    checks = PmChecks() if checks is None else checks
    missing = _prerequisite_missing()
    if missing is not None:
        return missing
    try:
        torch = require_cuda("pm")
        index = int(torch.cuda.current_device())
        problem = checks.start_problem(index)
        if problem is not None:
            why = problem.removeprefix("backend 'pm' is unavailable: ")
            return Diagnosis("error", f"PM sampling does not start: {why}")
        check = checks.check(torch, index)
        refused = check.why_not(metrics.DEFAULT_METRICS)
    except Exception as exc:  # noqa: BLE001  (the doctor reports, it never raises)
        return Diagnosis(
            "error",
            f"PM sampling check failed: {_said(exc)}",
            "please report this as an nsight-lab bug, with this output",
        )
    where = f"{check.host.chip} ({check.device}), cupti-python {cupti_version()}"
    if refused is not None:
        return Diagnosis(
            "warn",
            f"PM sampling works on {where}; not all default counters fit: {refused}",
            "--backend pm samples those that fit together and notes the rest",
        )
    return Diagnosis(
        "ok", f"PM sampling works on {where}; the default counters fit in one pass"
    )
