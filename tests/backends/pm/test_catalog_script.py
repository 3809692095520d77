"""``benchmarks/pm_catalog.py`` without a GPU: its JSON is what the tests read.

The script runs once on the device (H100, H200); here the chip's host API is the
hand-written GH100 catalog, so what it writes must plan the same as what it read.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from nsight_lab.backends.pm import host as pm_host
from tests.backends.pm.catalogs import FIXTURES, CatalogHost, load, script

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_the_script_records_every_metric_and_set_with_errors_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = load(FIXTURES / "pm_catalog_gh100_facts.json")
    monkeypatch.setattr(pm_host, "chip_name", lambda _index: "GH100")
    monkeypatch.setattr(pm_host, "CuptiMetricsHost", lambda _chip: CatalogHost(facts))
    out = tmp_path / "pm_catalog_test.json"
    bench = script()
    assert bench.main([str(out), "--budget", "20"]) == 0
    found = json.loads(out.read_text())
    assert found["chip"] == "GH100"
    assert found["elapsed_s"] < 20
    sets = bench.requested_sets()
    assert [s["name"] for s in found["sets"]] == list(sets)
    asked = {m for group in sets.values() for m in group}
    assert set(found["metrics"]) == asked
    for metric, entry in found["metrics"].items():
        known = facts.alone(metric)
        if known is None:  # the facts do not say: the probe's error is kept
            assert entry["outcome"] == "failed"
            assert "does not record" in entry["error"]
        else:
            assert entry["alone"] is known, metric
            assert (entry["error"] is None) is known
    step6 = next(s for s in found["sets"] if s["name"] == "tutorial step 6")
    assert step6["one_pass"] is False
    assert "sm__throughput" in step6["error"]
    assert load(out).refused(bench.TUTORIAL_STEP_6) == [bench.TUTORIAL_STEP_6[0]]


def test_without_cupti_the_file_says_why(tmp_path: Path) -> None:
    out = tmp_path / "pm_catalog_none.json"
    assert script().main([str(out), "--budget", "5"]) == 0
    found = json.loads(out.read_text())
    if found.get("chip"):  # a machine with CUPTI: nothing to check here
        return
    assert any(e.startswith("chip: ") for e in found["errors"])
    assert all(s["outcome"] == "not probed" for s in found["sets"])
