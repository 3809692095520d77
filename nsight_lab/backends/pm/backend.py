"""The ``pm`` backend's collector: probed cheaply, opened with the probe's verdict.

What it measures and how is :class:`~.collector.PmMeasurement`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.backends.gpu import require_cuda
from nsight_lab.backends.inprocess import InProcessCollector
from nsight_lab.backends.pm import errors
from nsight_lab.backends.pm.collector import PmMeasurement
from nsight_lab.backends.pm.host import cupti_version
from nsight_lab.contract.collector import Availability
from nsight_lab.errors import BackendUnavailableError
from nsight_lab.gpu import stack

if TYPE_CHECKING:
    from nsight_lab.contract.probe import MetricVerdict
    from nsight_lab.options import ProfileOptions
    from nsight_lab.plan import Plan


class PmBackend(InProcessCollector):
    """Hardware counters per region through CUPTI PM sampling, in this process."""

    id = "pm"

    def probe(self) -> Availability:
        """Available with cupti-python >= 13.4, a CUDA GPU and counter permission.

        Cheap: whether PM sampling really starts, and which metrics it takes, is
        asked only when counters are, by the session's prober
        (:mod:`nsight_lab.backends.probe`), before the plan.
        """
        problem = errors.version_problem(cupti_version())
        if problem is not None:
            reason, _, hint = problem.partition("; ")
            return Availability(ok=False, reason=reason, hint=hint)
        try:
            require_cuda(self.id)
        except BackendUnavailableError as exc:
            return Availability(ok=False, reason=str(exc).split(": ", 1)[-1])
        permission = stack.counter_permission()
        if permission.ok is False:
            return Availability(
                ok=False,
                reason="GPU performance counters need permission (ERR_NVGPUCTRPERM)",
                hint=errors.PERMISSION,
            )
        return Availability(
            ok=True,
            reason="CUPTI PM sampling: counters and their timelines, in process",
        )

    def open(self, options: ProfileOptions) -> PmMeasurement:
        """Start CUPTI activity and PM sampling on the current CUDA device.

        Raises:
            BackendUnavailableError: No CUDA device, no cupti-python >= 13.4, or
                CUPTI refused (permission, nvperf libraries, driver, busy).
            OptionError: The metrics do not fit in one PM sampling pass.
        """
        return self._opened(options, None)

    def measure(self, plan: Plan) -> PmMeasurement:
        """Open with the plan's options and the probe's verdict on its metrics.

        Raises:
            BackendUnavailableError: As :meth:`open`.
        """
        return self._opened(plan.options, plan.metric_verdict)

    def _opened(
        self, options: ProfileOptions, verdict: MetricVerdict | None
    ) -> PmMeasurement:
        problem = errors.version_problem(cupti_version())
        if problem is not None:
            raise errors.unavailable(problem)
        return PmMeasurement(options, verdict)
