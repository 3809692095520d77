"""PM-sampling metric catalogs as a chip: the planner's CPU tests plan against them.

A catalog is the JSON ``benchmarks/pm_catalog.py`` writes on a GPU (or one written by
hand from ``shared/device/FACTS.md`` until the device records it): which metrics PM
sampling takes alone on the chip, and which sets asked for together fit one pass.
Every ``tests/fixtures/pm_catalog_*.json`` present is a case of the tests, so a
recorded catalog joins (or replaces) the hand-written one without a code change.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"


class NotInCatalogError(LookupError):
    """The catalog does not say (not a refusal: the test asked beyond its facts)."""


@dataclass(frozen=True)
class Catalog:
    """One chip's catalog, read from its file."""

    path: Path
    data: dict[str, Any]

    @property
    def chip(self) -> str:
        return str(self.data.get("chip") or "")

    @property
    def gpu(self) -> str:
        return str(self.data.get("gpu") or "")

    def alone(self, metric: str) -> bool | None:
        """Whether PM sampling takes ``metric`` alone; None when not recorded."""
        entry = self.data.get("metrics", {}).get(metric)
        if entry is not None and entry.get("alone") is not None:
            return bool(entry["alone"])
        offered = self.data.get("offered")
        if offered is not None and metric not in offered:
            return False  # the chip does not offer it at all
        return None

    def one_pass(self, metrics: Sequence[str]) -> bool | None:
        """Whether the set fits one pass; None when not recorded."""
        if len(set(metrics)) == 1:
            return self.alone(metrics[0])
        if any(self.alone(m) is False for m in metrics):
            return False
        for entry in self.data.get("sets", []):
            if set(entry.get("metrics", ())) == set(metrics):
                found = entry.get("one_pass")
                return None if found is None else bool(found)
        return None

    def refused(self, metrics: Sequence[str]) -> list[str]:
        """The metrics of ``metrics`` PM sampling refuses alone, in order."""
        return [m for m in dict.fromkeys(metrics) if self.alone(m) is False]

    def one_pass_sets(self) -> list[tuple[str, ...]]:
        """The recorded sets that fit one pass, and every metric taken alone."""
        sets = [
            tuple(e["metrics"]) for e in self.data.get("sets", []) if e.get("one_pass")
        ]
        singles = [
            (m,) for m, e in self.data.get("metrics", {}).items() if e.get("alone")
        ]
        return sets + singles


class CatalogHost:
    """The profiler host API of a catalog's chip (:class:`~.metrics.MetricsHost`)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.chip = catalog.chip

    def passes(self, metrics: Sequence[str]) -> int:
        """1 for a set that fits one pass; ValueError for a refusal, as CUPTI's host.

        Raises:
            ValueError: A metric PM sampling does not take on the chip.
            NotInCatalogError: The catalog does not say.
        """
        found = self.catalog.one_pass(metrics)
        if found is None:
            msg = f"{self.catalog.path.name} does not record {list(metrics)}"
            raise NotInCatalogError(msg)
        if found:
            return 1
        refused = self.catalog.refused(metrics)
        if refused:
            msg = f"PM sampling does not take {', '.join(refused)}"
            raise ValueError(msg)
        return 2

    def names(self) -> list[str]:
        """The metrics the chip offers (the accepted ones where not recorded)."""
        offered = self.catalog.data.get("offered")
        if offered is not None:
            return list(offered)
        return sorted(
            m for m, e in self.catalog.data.get("metrics", {}).items() if e.get("alone")
        )


def catalog_paths() -> list[Path]:
    """Every catalog file present, hand-written and recorded."""
    return sorted(FIXTURES.glob("pm_catalog_*.json"))


def load(path: Path) -> Catalog:
    """Read one catalog file."""
    return Catalog(path, json.loads(path.read_text()))


@cache
def script() -> ModuleType:
    """``benchmarks/pm_catalog.py`` as a module (it names the sets asked for)."""
    spec = importlib.util.spec_from_file_location(
        "pm_catalog_bench", ROOT / "benchmarks" / "pm_catalog.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
