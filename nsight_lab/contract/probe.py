"""What a profile can use here, asked once before it is planned: a :class:`ProbeResult`.

The session probes (:class:`nsight_lab.backends.probe.Prober`: each backend's
``probe()``, and for a counter backend that takes only some metrics here, its verdict
on the metrics asked for) and hands the result to :func:`nsight_lab.plan.make_plan`,
which asks nothing of the hardware or the store itself. The plan carries the chosen
backend's verdict to its collector, which does not check the metrics again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.contract.collector import Availability


@dataclass(frozen=True)
class MetricVerdict:
    """What a counter backend's own check said about the metrics of one profile (pm).

    Attributes:
        asked: The metrics checked (without the region time), in order.
        given: They were named (``--metrics``): all must be measured, or none.
            Otherwise they are the backend's defaults: it takes what fits.
        refused: Why the backend cannot measure ``asked`` together here (one line,
            the plan's refusal), or ``None``.
        chosen: What the backend measures: ``asked`` when given, else the defaults
            that fit together.
        where: What was asked (the chip), for the notes.
        unchecked: Why the check could not be made (the backend's tool checks the
            metrics when it configures them), or ``None``.
        keeper: What the backend keeps for the life of the prober that judged
            (pm: its ``Keeper`` of sampling parts), handed to its collector with
            the verdict; ``None`` where nobody keeps anything. Not compared.
    """

    asked: tuple[str, ...]
    given: bool
    refused: str | None = None
    chosen: tuple[str, ...] = ()
    where: str = "this GPU"
    unchecked: str | None = None
    keeper: object | None = field(default=None, compare=False, repr=False)

    @property
    def left_out(self) -> tuple[str, ...]:
        """The asked metrics not chosen (defaults that do not fit with the rest)."""
        return tuple(m for m in self.asked if m not in self.chosen)


@dataclass(frozen=True)
class ProbeResult:
    """Which backends can run here and why not, and the counter backends' verdicts.

    Made once per profile, before planning (``Prober.probe``); a test builds one
    from a table of availabilities (``ProbeResult(backends={...})``).
    """

    backends: Mapping[str, Availability]
    """Backend id -> whether it can run here, in registry order."""
    verdicts: Mapping[str, MetricVerdict] = field(default_factory=dict)
    """Counter backend id -> its verdict on the metrics this profile asks for
    (only where the backend can run and checks metrics: ``pm``)."""
    device: str | None = None
    """The GPU the verdicts are about (its chip, e.g. ``GH100``), if one was asked."""

    def availability(self, backend_id: str) -> Availability | None:
        """Whether ``backend_id`` can run here; ``None`` when it was not probed."""
        return self.backends.get(backend_id)

    def refusal(self, backend_id: str, metrics: tuple[str, ...]) -> str | None:
        """Why ``backend_id`` cannot measure ``metrics`` together here, or ``None``.

        ``None`` also where the backend has no verdict (it takes whatever its tool
        accepts) or its verdict is about other metrics.
        """
        verdict = self.verdicts.get(backend_id)
        if verdict is None or not metrics or verdict.asked != metrics:
            return None
        return verdict.refused
