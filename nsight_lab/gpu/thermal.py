"""Waiting for thermal headroom before a run, as nsight-python's thermovision does."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsight_lab.errors import CoolingTimeoutError

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

THERMAL_WAIT_HEADROOM_C = 10
"""Pause before a run when the GPU is this close (deg C) to its slowdown temperature."""
THERMAL_RESUME_HEADROOM_C = 20
"""Resume once this much headroom is back (nsight-python's defaults)."""
THERMAL_TIMEOUT_S = 180.0
# nsight-python's adaptive resume threshold (thermal_mode="auto", its thermovision):
THERMAL_CONT_MIN_C = 12
"""``auto`` never resumes below this much headroom."""
THERMAL_CONT_MAX_C = 50
"""``auto`` never waits for more headroom than this."""
THERMAL_CONT_STEP_C = 3
"""How far ``auto`` moves the resume threshold at a time."""
THERMAL_FEW_RUNS = 5
"""Fewer runs than this between cooling and the next pause: the GPU heats fast."""
THERMAL_MANY_RUNS = 50
"""More runs than this: it heats slowly."""


@dataclass
class ThermalGuard:
    """Wait for thermal headroom before a run, as nsight-python's thermovision does.

    A run waits when the headroom is at or below ``wait_at_c``, until it is back to
    ``resume_at_c``. With ``adaptive`` (``thermal_mode="auto"``) the resume threshold
    follows how fast the GPU heats: it counts the runs from one cooling to the next
    pause, and at that pause waits 3 deg C longer next time after fewer than 5 runs,
    3 deg C less after more than 50 (within 12 and 50 deg C). Past ``timeout_s``,
    ``adaptive`` lowers the threshold by 3 deg C and waits again, and gives up once it
    is at 12 deg C and the GPU still has less; otherwise (``manual``) it gives up at
    once. Giving up raises :class:`~nsight_lab.errors.CoolingTimeoutError` with
    nsight-python's message.
    """

    headroom_c: Callable[[], float | None]
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    wait_at_c: float = THERMAL_WAIT_HEADROOM_C
    resume_at_c: float = THERMAL_RESUME_HEADROOM_C
    timeout_s: float = THERMAL_TIMEOUT_S
    poll_s: float = 0.5
    adaptive: bool = False
    counting: bool = False
    """Whether runs are being counted since the GPU last had ``resume_at_c``."""
    runs_since_resume: int = 0

    def wait(self, on_wait: Callable[[float, float], None] | None = None) -> float:
        """Block until there is headroom; return the seconds waited.

        Args:
            on_wait: Called with (headroom deg C, seconds waited so far) at each poll,
                so the progress display can show the wait.

        Raises:
            CoolingTimeoutError: The GPU did not cool in time (see the class).
        """
        headroom = self.headroom_c()
        if headroom is None:
            return 0.0
        if self.counting:
            self.runs_since_resume += 1  # the run about to start
        if headroom > self.wait_at_c:
            if headroom >= self.resume_at_c:
                self.counting = True
            return 0.0
        if self.adaptive and self.counting and self.runs_since_resume > 0:
            if self.runs_since_resume < THERMAL_FEW_RUNS:
                self.resume_at_c = min(
                    self.resume_at_c + THERMAL_CONT_STEP_C, THERMAL_CONT_MAX_C
                )
            elif self.runs_since_resume > THERMAL_MANY_RUNS:
                self.resume_at_c = max(
                    self.resume_at_c - THERMAL_CONT_STEP_C, THERMAL_CONT_MIN_C
                )
        self.runs_since_resume = 0
        self.counting = False
        waited = self._cool(headroom, on_wait)
        self.counting = True
        return waited

    def _cool(
        self, headroom: float | None, on_wait: Callable[[float, float], None] | None
    ) -> float:
        start = self.clock()
        deadline = start + self.timeout_s
        while headroom is not None and headroom < self.resume_at_c:
            now = self.clock()
            if on_wait is not None:
                on_wait(headroom, now - start)
            if now >= deadline:
                self._timed_out(headroom)
                deadline = now + self.timeout_s
                continue
            self.sleep(self.poll_s)
            headroom = self.headroom_c()
        return self.clock() - start

    def _timed_out(self, headroom: float) -> None:
        """Lower the resume threshold (``adaptive``) or give up.

        Raises:
            CoolingTimeoutError: ``manual``, or ``adaptive`` at its lowest threshold.
        """
        if not self.adaptive:
            msg = (
                f"Timeout after {self.timeout_s:g}s. Cannot reach "
                f"thermal_cont={self.resume_at_c:g}°C (current thermal headroom: "
                f"{headroom:g}°C). Try: increase thermal_wait, decrease thermal_cont, "
                "or increase thermal_timeout (%%nsight: --thermal-settings "
                "wait=,cont=,timeout=)"
            )
            raise CoolingTimeoutError(msg)
        self.resume_at_c = max(
            self.resume_at_c - THERMAL_CONT_STEP_C, THERMAL_CONT_MIN_C
        )
        log.info(
            "[nsight-lab] GPU did not cool in %.0f s; resuming at %s C of headroom",
            self.timeout_s,
            self.resume_at_c,
        )
        if self.resume_at_c == THERMAL_CONT_MIN_C and self.resume_at_c > headroom:
            msg = (
                "Adaptive thermal control reached minimum "
                f"thermal_cont={THERMAL_CONT_MIN_C}°C but GPU thermal headroom is "
                f"only {headroom:g}°C. Cannot continue profiling."
            )
            raise CoolingTimeoutError(msg)
