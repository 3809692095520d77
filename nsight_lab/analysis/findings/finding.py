"""One finding: why a region is as slow as it is, on what evidence, and what would help.

A :class:`Finding` says one thing of one region (and config), of a chain of
regions, or of a region across a sweep: a one-line statement, the numbers it rests
on with their units, what to try, an estimated gain with its basis (a bound, never a
promise: "at most 1.9x if it reached the DRAM roof"), and how sure it is:

- ``measured``: it rests on a hardware counter or on per-kernel activity
  timestamps (pm, ncu, cupti) or NVML's telemetry;
- ``work model``: on the FLOPs and compulsory bytes the work model counted
  (:mod:`nsight_lab.roofline.workmodel`), with a measured duration;
- ``timing``: on durations alone.

A finding that another backend would settle says which in :attr:`answered_by`.
The rules that make them are the other modules of this package; this one only
holds the shape and how findings are ordered and sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.contract.records import JsonScalar

__all__ = [
    "FAMILIES",
    "Confidence",
    "Family",
    "Finding",
    "config_text",
    "gain_text",
]

Family = Literal["quality", "launch", "traffic", "cache", "bound", "sweep", "coverage"]
"""What a finding is about, in the order a region's findings are said: the quality
of the measurement first (issue 31: before any other finding of that region), then
a GPU that waits for the host (a roof says nothing of a region the host paces), the
bytes it moves beyond need, its caching, its bound; across a sweep; and last what
this backend cannot answer."""
FAMILIES: tuple[Family, ...] = (
    "quality",
    "launch",
    "traffic",
    "cache",
    "bound",
    "sweep",
    "coverage",
)
Confidence = Literal["measured", "work model", "timing"]
WHOLE_FROM = 10
"""A gain bound from this is whole (``12x``): its decimals say nothing."""
TWO_DECIMALS_BELOW = 2
"""A gain bound under this has two decimals (``1.15x``), one above (``2.3x``)."""
SHOWN_REGIONS = 3
"""Regions named in a finding's place before the rest are counted (all are sent)."""


def config_text(config: Mapping[str, JsonScalar]) -> str:
    """A config's parameters as text: ``n=1024, dtype=bf16`` ("" for none).

    Raises:
        Nothing.
    """
    return ", ".join(f"{k}={v}" for k, v in config.items())


def gain_text(gain: float) -> str:
    """A speedup bound as text: ``1.9x`` (``1.15x`` under 2, whole from 10).

    Written with the multiplication sign.

    Raises:
        Nothing.
    """
    if gain >= WHOLE_FROM:
        return f"{gain:.0f}\u00d7"
    return f"{gain:.2f}\u00d7" if gain < TWO_DECIMALS_BELOW else f"{gain:.1f}\u00d7"


@dataclass(frozen=True)
class Finding:
    """One thing nsight-lab can say of why a region is slow, and what would help.

    Attributes:
        regions: The regions it is about (one; two for a chain), in run order.
        kind: What it says, one word (``memory_bound``, ``host_bound``, ...).
        family: Its :data:`Family`.
        statement: One line: the diagnosis.
        evidence: The numbers it rests on, each with its unit.
        action: What to try, one line ("" where nothing is to be done).
        confidence: ``measured``, ``work model`` or ``timing``.
        basis: What exactly was measured or modelled, in a few words.
        gain: The most the action could speed the region (or chain) up, x; None
            where no bound is known.
        gain_basis: Why that bound ("at most 1.9x if it reached the DRAM roof").
        answered_by: The backend (option line) that would settle what this one
            cannot, or "".
        config: The config's parameters ({} for a session-wide finding or one
            across configs).
        config_index: The config's index; None across configs.
        time_ns: The time at stake: the region's (or chain's) median duration.
    """

    regions: tuple[str, ...]
    kind: str
    family: Family
    statement: str
    evidence: tuple[str, ...] = ()
    action: str = ""
    confidence: Confidence = "timing"
    basis: str = ""
    gain: float | None = None
    gain_basis: str = ""
    answered_by: str = ""
    config: Mapping[str, JsonScalar] = field(default_factory=dict)
    config_index: int | None = None
    time_ns: float = 0.0

    @property
    def region(self) -> str:
        """Where: the region, a chain as ``a → b``, several as ``a, b, c and 9 more``.

        "" for the whole session.
        """
        if self.kind == "chain_fusion":
            return " \u2192 ".join(self.regions)
        if len(self.regions) > SHOWN_REGIONS:
            more = len(self.regions) - SHOWN_REGIONS
            return f"{', '.join(self.regions[:SHOWN_REGIONS])} and {more} more"
        return ", ".join(self.regions)

    @property
    def saves_ns(self) -> float | None:
        """The time the action could save at most: ``time_ns * (1 - 1/gain)``."""
        if self.gain is None or not self.gain > 1:
            return None
        return self.time_ns * (1.0 - 1.0 / self.gain)

    def to_json(self) -> dict[str, Any]:
        """The wire shape (the sidebar's, ``explain --json``'s, the frame's rows).

        Raises:
            Nothing.
        """
        return {
            "region": self.region,
            "regions": list(self.regions),
            "config": config_text(self.config),
            "config_index": self.config_index,
            "family": self.family,
            "kind": self.kind,
            "statement": self.statement,
            "evidence": list(self.evidence),
            "action": self.action,
            "gain": None if self.gain is None else round(self.gain, 3),
            "gain_basis": self.gain_basis,
            "confidence": self.confidence,
            "basis": self.basis,
            "answered_by": self.answered_by,
            "time_ns": self.time_ns,
        }
