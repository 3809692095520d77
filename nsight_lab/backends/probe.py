"""Probing once per profile: which backends can run here, and the metrics' verdicts.

A :class:`Prober` belongs to whoever profiles (the magic holds one for the kernel's
life; an API call makes its own): :meth:`Prober.probe` asks every registered backend
whether it can run here and, where a counter backend checks metrics itself (``pm``),
its verdict on the metrics the options ask for. The result
(:class:`~nsight_lab.contract.probe.ProbeResult`) goes to the pure
:func:`nsight_lab.plan.make_plan`; the plan hands the chosen backend's verdict to its
collector. What a device answered once (PM sampling starts; per-metric verdicts,
kept in the store as well) stays in the prober's :class:`PmChecks`, not in a module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.backends.pm.metrics import DEFAULT_METRICS
from nsight_lab.contract.probe import ProbeResult
from nsight_lab.contract.registry import probe_all

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.backends.pm.availability import PmChecks
    from nsight_lab.contract.collector import Availability
    from nsight_lab.options import ProfileOptions

__all__ = ["Prober", "metrics_to_check"]


def metrics_to_check(options: ProfileOptions) -> tuple[tuple[str, ...], bool]:
    """The metrics the ``pm`` backend would sample for ``options``, and if given.

    ``--metrics`` beyond the region time (all or nothing), else its defaults when
    ``--backend pm`` is asked for by name (it takes what fits); else none.
    """
    extra = options.extra_metrics
    if extra and options.backend in {"auto", "pm"}:
        return extra, "--metrics" in options.given
    if options.backend == "pm":
        return DEFAULT_METRICS, False
    return (), False


class Prober:
    """Asks this machine what a profile can use; the answers it keeps are its own.

    Args:
        pm: What this process learned about PM sampling (new by default).
    """

    def __init__(self, pm: PmChecks | None = None) -> None:
        """Nothing asked yet."""
        self._pm = pm

    @property
    def pm(self) -> PmChecks:
        """What this prober learned about PM sampling (made when first asked)."""
        if self._pm is None:
            # numpy, through the PM sampler: the magic holds a prober from
            # %load_ext on, and loading the extension stays light.
            from nsight_lab.backends.pm.availability import (  # noqa: PLC0415
                PmChecks,
            )

            self._pm = PmChecks()
        return self._pm

    def probe(
        self,
        options: ProfileOptions,
        backends: Mapping[str, Availability] | None = None,
    ) -> ProbeResult:
        """Probe for one profile of ``options``: every backend, then the verdicts.

        Args:
            options: The parsed options (which metrics, which backend).
            backends: The availability table when the caller already has it (the
                API chooses its backend from it); every backend is probed without.

        Returns:
            The probe result :func:`~nsight_lab.plan.make_plan` takes.
        """
        table = probe_all(_to_probe(options)) if backends is None else dict(backends)
        wanted, given = metrics_to_check(options)
        pm = table.get("pm")
        if not wanted or pm is None or not pm.ok:
            return ProbeResult(backends=table)
        verdict = self.pm.verdict(wanted, given=given)
        return ProbeResult(
            backends=table, verdicts={"pm": verdict}, device=verdict.where
        )


def _to_probe(options: ProfileOptions) -> tuple[str, ...] | None:
    """The backends a profile of ``options`` may take: the one named, else all.

    ``auto`` and ``--isolate`` (which picks its backend from the table) ask every
    backend; a named one asks only itself. The events, cupti and pm probes import
    PyTorch to look for a GPU: a notebook that never did is not made to for a
    ``--backend cpu`` cell (3.6 s on CI's CPU).
    """
    if options.backend == "auto" or options.isolate:
        return None
    return (options.backend,)
