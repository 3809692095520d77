"""The records that flow from a backend to the store and the views.

These dataclasses are the only wire shape of nsight-lab: the store persists them, the
server sends them as JSON and the widget holds them in a trait. Keys are snake_case and
quantities carry their unit in their name.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

SCHEMA_VERSION = 6
"""Version of the record shape and of the store schema (see ``store/migrations.py``)."""

TIME_METRIC = "gpu__time_duration.sum"
"""The metric name every backend reports (nsight-python's name for a region's time)."""

JsonScalar = str | int | float | bool | None
SessionStatus = Literal["running", "completed", "failed", "interrupted"]
SESSION_STATUSES: tuple[SessionStatus, ...] = (
    "running",
    "completed",
    "failed",
    "interrupted",
)


def utc_now() -> str:
    """Return the current time as ISO-8601 UTC with microseconds."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Telemetry:
    """GPU state read through NVML just outside one run's timed regions."""

    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    clock_event_reasons: tuple[str, ...] = ()
    """Active clock-event (throttle) reasons, in words.

    For example ``"software power cap"``.
    """
    throttled: bool = False
    """Whether the run counts as throttled.

    True when the SM clock was below 75% of its ceiling or a thermal/power bit was set.
    """


@dataclass(frozen=True)
class RunRecord:
    """One region measured in one run of one config."""

    session_id: int
    config_index: int
    config: dict[str, JsonScalar]
    run_index: int
    annotation: str
    duration_ns: float
    backend: str
    kernels: tuple[str, ...] = ()
    """Kernel names seen in the region, where the backend can see them."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Further per-run metrics (counter values, derived values), by name."""
    telemetry: Telemetry = field(default_factory=Telemetry)
    thermal_wait_s: float = 0.0
    """Seconds spent waiting for thermal headroom before this run."""
    finished_at: str = field(default_factory=utc_now)
    series: bytes | None = field(default=None, repr=False)
    """The region's counter timeline in this run, packed (the ``pm`` backend, see
    :mod:`nsight_lab.backends.pm.series`); kept in the store, not sent on the wire
    (figures are built in Python)."""


@dataclass(frozen=True)
class SessionInfo:
    """One profile: a cell (or script) measured over its configs and runs."""

    id: int
    status: SessionStatus
    backend: str
    created_at: str
    name: str | None = None
    notebook: str | None = None
    device: str | None = None
    host: str | None = None
    pid: int | None = None
    user: str | None = None
    """The login name of the writer (a team store filters by it)."""
    backend_reason: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    configs: list[dict[str, JsonScalar]] = field(default_factory=list)
    runs_planned: int = 0
    """Measured runs planned over all configs (``Plan.runs_planned``); served as
    ``runs_planned_total`` with ``runs_per_config`` beside it, never by this name."""
    cell_source: str = ""
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    finished_at: str | None = None
    uuid: str = ""
    """The session's identity in any store (ids are per-store numbers); "" only in
    a session that was never stored."""
    schema_version: int = SCHEMA_VERSION

    @property
    def runs_per_config(self) -> int:
        """Measured runs planned per config: ``runs_planned`` over the configs."""
        return self.runs_planned // max(len(self.configs), 1)


def telemetry_to_json(t: Telemetry) -> dict[str, Any]:
    """Return a JSON-able dict of ``t``."""
    d = dataclasses.asdict(t)
    d["clock_event_reasons"] = list(t.clock_event_reasons)
    return d


def telemetry_from_json(d: dict[str, Any]) -> Telemetry:
    """Rebuild a :class:`Telemetry` from :func:`telemetry_to_json` output."""
    return Telemetry(
        sm_clock_mhz=d.get("sm_clock_mhz"),
        mem_clock_mhz=d.get("mem_clock_mhz"),
        temperature_c=d.get("temperature_c"),
        power_w=d.get("power_w"),
        clock_event_reasons=tuple(d.get("clock_event_reasons") or ()),
        throttled=bool(d.get("throttled", False)),
    )


def record_to_json(r: RunRecord) -> dict[str, Any]:
    """Return a JSON-able dict of ``r`` (the wire and widget shape)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": r.session_id,
        "config_index": r.config_index,
        "config": dict(r.config),
        "run_index": r.run_index,
        "annotation": r.annotation,
        "duration_ns": r.duration_ns,
        "backend": r.backend,
        "kernels": list(r.kernels),
        "metrics": dict(r.metrics),
        "telemetry": telemetry_to_json(r.telemetry),
        "thermal_wait_s": r.thermal_wait_s,
        "finished_at": r.finished_at,
    }


def record_from_json(d: dict[str, Any]) -> RunRecord:
    """Rebuild a :class:`RunRecord` from :func:`record_to_json` output."""
    return RunRecord(
        session_id=int(d["session_id"]),
        config_index=int(d["config_index"]),
        config=dict(d["config"]),
        run_index=int(d["run_index"]),
        annotation=str(d["annotation"]),
        duration_ns=float(d["duration_ns"]),
        backend=str(d["backend"]),
        kernels=tuple(d.get("kernels") or ()),
        metrics={str(k): float(v) for k, v in (d.get("metrics") or {}).items()},
        telemetry=telemetry_from_json(d.get("telemetry") or {}),
        thermal_wait_s=float(d.get("thermal_wait_s", 0.0)),
        finished_at=str(d["finished_at"]),
    )


def session_to_json(s: SessionInfo) -> dict[str, Any]:
    """Return a JSON-able dict of ``s`` (the wire shape of a session).

    Every field but ``runs_planned``, which is sent under names that say what they
    count: ``runs_per_config`` and ``runs_planned_total`` (over all configs).
    """
    d = dataclasses.asdict(s)
    d.pop("runs_planned")
    d["runs_per_config"] = s.runs_per_config
    d["runs_planned_total"] = s.runs_planned
    return d
