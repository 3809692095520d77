"""``nsight.thermovision``: nsight-python's thermal control, as nsight-lab's thresholds.

``thermal_mode``/``thermal_wait``/``thermal_cont``/``thermal_timeout`` of
``analyze.kernel`` drive nsight-lab's thermal guard (:mod:`nsight_lab.gpu.telemetry`),
whose defaults and adaptive limits are nsight-python's: they are the constants here.
nsight-python's ``ThermalController`` (its NVML polling) is not served.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute, unserved
from nsight_lab.gpu.thermal import (
    THERMAL_CONT_MAX_C,
    THERMAL_CONT_MIN_C,
    THERMAL_CONT_STEP_C,
    THERMAL_FEW_RUNS,
    THERMAL_MANY_RUNS,
    THERMAL_RESUME_HEADROOM_C,
    THERMAL_TIMEOUT_S,
    THERMAL_WAIT_HEADROOM_C,
)

__all__ = [
    "ADJUSTMENT_STEP",
    "DEFAULT_THERMAL_CONT",
    "DEFAULT_THERMAL_TIMEOUT",
    "DEFAULT_THERMAL_WAIT",
    "MAX_THERMAL_CONT",
    "MIN_THERMAL_CONT",
    "TARGET_MAX_ITERATIONS",
    "TARGET_MIN_ITERATIONS",
]

DEFAULT_THERMAL_WAIT = THERMAL_WAIT_HEADROOM_C
DEFAULT_THERMAL_CONT = THERMAL_RESUME_HEADROOM_C
DEFAULT_THERMAL_TIMEOUT = int(THERMAL_TIMEOUT_S)
MIN_THERMAL_CONT = THERMAL_CONT_MIN_C
MAX_THERMAL_CONT = THERMAL_CONT_MAX_C
TARGET_MIN_ITERATIONS = THERMAL_FEW_RUNS
TARGET_MAX_ITERATIONS = THERMAL_MANY_RUNS
ADJUSTMENT_STEP = THERMAL_CONT_STEP_C

_MODULE = "nsight.thermovision"
ThermalController = unserved(
    _MODULE,
    "ThermalController",
    "nsight-lab's thermal guard runs with analyze.kernel(thermal_mode=...) and "
    "thermal_wait/thermal_cont/thermal_timeout/thermal_device",
)


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
