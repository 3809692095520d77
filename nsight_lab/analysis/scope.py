"""What two sessions have in common: regions and configs both ran, and why not.

:func:`compare_scope` says which regions and configs both sessions have, which only
one has, and, when nothing is shared, why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nsight_lab.analysis.rules import config_text
from nsight_lab.analysis.series import Series

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from nsight_lab.contract.records import JsonScalar, RunRecord


@dataclass(frozen=True)
class Scope:
    """What two sessions have in common, and what only one of them has."""

    regions: list[str] = field(default_factory=list)
    regions_only_a: list[str] = field(default_factory=list)
    regions_only_b: list[str] = field(default_factory=list)
    configs: list[dict[str, JsonScalar]] = field(default_factory=list)
    """Configs both sessions ran (of a region both ran), in a's order."""
    configs_only_a: list[dict[str, JsonScalar]] = field(default_factory=list)
    configs_only_b: list[dict[str, JsonScalar]] = field(default_factory=list)
    note: str = ""
    """One line: what was compared and what only one side has ("" when identical)."""
    reason: str | None = None
    """Why there is nothing to compare; ``None`` when there is."""

    def to_json(self) -> dict[str, Any]:
        """Return the wire shape."""
        return {
            "regions": list(self.regions),
            "regions_only_a": list(self.regions_only_a),
            "regions_only_b": list(self.regions_only_b),
            "configs": [dict(c) for c in self.configs],
            "configs_only_a": [dict(c) for c in self.configs_only_a],
            "configs_only_b": [dict(c) for c in self.configs_only_b],
            "note": self.note,
            "reason": self.reason,
        }


def compare_scope(runs_a: Iterable[RunRecord], runs_b: Iterable[RunRecord]) -> Scope:
    """Say which regions and configs two sessions share, and why nothing is if so.

    A config is shared when both sessions ran it (equal dicts) for some region both
    ran. ``reason`` names the cause when no row can be compared: a session without
    runs, no region in common, or common regions run with different configs.
    """
    return scope_of(Series.of(runs_a), Series.of(runs_b))


def scope_of(a: Series, b: Series) -> Scope:
    """:func:`compare_scope` of two sessions' series (read once for both)."""
    regions = [r for r in a.regions if r in b.regions]
    only_a = [r for r in a.regions if r not in b.regions]
    only_b = [r for r in b.regions if r not in a.regions]
    pairs_b = b.pairs
    shared = [c for c in a.config_order if any((r, c) in pairs_b for r in regions)]
    configs_only_a = [c for c in a.config_order if c not in b.configs]
    configs_only_b = [c for c in b.config_order if c not in a.configs]
    reason: str | None = None
    if not a.regions or not b.regions:
        empty = [name for name, s in (("a", a), ("b", b)) if not s.regions]
        reason = (
            f"session {empty[0]} has no runs yet"
            if len(empty) == 1
            else "neither session has runs yet"
        )
    elif not regions:
        reason = (
            f"no region in common: a ran {_names(list(a.regions))}; "
            f"b ran {_names(list(b.regions))}"
        )
    elif not shared:
        reason = (
            f"no config in common for {_names(regions)}: "
            f"a ran {_configs(a.configs, a.config_order)}; "
            f"b ran {_configs(b.configs, b.config_order)}"
        )
    parts: list[str] = []
    if reason is None:
        if configs_only_a or configs_only_b:
            parts.append(f"compared on {_configs(a.configs, shared)}")
        if configs_only_a:
            parts.append(f"only in a: {_configs(a.configs, configs_only_a)}")
        if configs_only_b:
            parts.append(f"only in b: {_configs(b.configs, configs_only_b)}")
        if only_a:
            parts.append(f"regions only in a: {_names(only_a)}")
        if only_b:
            parts.append(f"regions only in b: {_names(only_b)}")
    return Scope(
        regions=regions,
        regions_only_a=only_a,
        regions_only_b=only_b,
        configs=[a.configs[c] for c in shared],
        configs_only_a=[a.configs[c] for c in configs_only_a],
        configs_only_b=[b.configs[c] for c in configs_only_b],
        note="; ".join(parts),
        reason=reason,
    )


def _names(names: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _configs(
    configs: dict[str, dict[str, JsonScalar]], keys: Sequence[str], limit: int = 6
) -> str:
    """``n=512, n=1024`` for one parameter; ``(n=1, m=2), (n=2, m=2)`` for more."""
    texts = [config_text(configs[k]) for k in keys]
    if any(", " in t for t in texts):
        texts = [f"({t})" for t in texts]
    return _names(texts, limit)
