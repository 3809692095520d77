"""The JSON contract fixture: the wire the front ends read cannot drift silently.

``tests/fixtures/wire.json`` is rebuilt from the Python code paths
(``tests/fixtures/make_wire.py``) and must equal the committed file; jest reads the
same file (``src/__tests__/wire.spec.ts``). After an intended change of the wire,
regenerate it with ``python tests/fixtures/make_wire.py`` and update the TypeScript
types with it.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from nsight_lab.figures import CHART_ORDER

_GENERATOR = Path(__file__).parent / "fixtures" / "make_wire.py"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_wire", _GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_wire"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def wire() -> tuple[dict[str, Any], dict[str, Any]]:
    """``(rebuilt, committed)``."""
    make_wire = _generator()
    committed = json.loads(make_wire.WIRE_PATH.read_text(encoding="utf-8"))
    return make_wire.build_wire(), committed


def _differences(a: Any, b: Any, path: str = "$") -> list[str]:  # noqa: PLR0911
    """Where two JSON values differ (floats to 1e-9 relative: libm may differ)."""
    if isinstance(a, float) or isinstance(b, float):
        if (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and not isinstance(a, bool)
            and not isinstance(b, bool)
            and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        ):
            return []
        return [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in _differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)}"]
        return [
            d for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, f"{path}[{i}]")
        ]  # fmt: skip
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


def test_the_committed_fixture_is_what_python_sends(wire):
    rebuilt, committed = wire
    differences = _differences(rebuilt, committed)
    assert not differences, (
        "the wire changed; if on purpose, run `python tests/fixtures/make_wire.py`, "
        "update src/types.ts / src/widget/types.ts and commit wire.json:\n"
        + "\n".join(differences[:20])
    )


def test_the_fixture_is_strict_json():
    text = _GENERATOR.with_name("wire.json").read_text(encoding="utf-8")
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in wire.json"))


def test_sidebar_and_widget_show_the_same_summary_order_and_names(wire):
    rebuilt, _ = wire
    detail = rebuilt["session_detail"]
    final = rebuilt["widget_final"]
    # One summary (results.summary_rows), over every run, in both views ...
    assert detail["summary"] == final["summary"]
    assert sum(int(r["Runs"]) for r in detail["summary"]) == 12
    assert len(detail["runs"]) == 4  # ... whatever the page holds
    # ... one chart order ...
    assert detail["chart_order"] == final["chart_order"] == list(CHART_ORDER)
    assert list(detail["figures"]) == [c for c in CHART_ORDER if c in detail["figures"]]
    # ... and progress under unambiguous names, totals as totals.
    live = rebuilt["live_session"]["session"]
    assert live["runs_per_config"] == 2
    assert live["runs_planned_total"] == 6
    assert live["progress"]["text"] == "3 / 6 runs · config 2 / 3 · run 1 / 2"
    for item in rebuilt["sessions_list"]["sessions"]:
        assert "runs_planned" not in item
        assert item["runs_planned_total"] == 2 * 3
    assert final["progress"]["text"].startswith("6 / 6 runs · config 2 / 2 · run 3 / 3")


def test_the_final_output_is_the_widgets_final_state(wire):
    rebuilt, _ = wire
    bundle = rebuilt["final_bundle"]
    final = rebuilt["widget_final"]
    # A cell's final output (views/bundle.py) draws what the widget ended with.
    assert bundle["session_id"] == final["session_id"]
    assert bundle["status"] == final["status"] == "completed"
    assert bundle["progress"] == final["progress"]
    assert bundle["summary"] == final["summary"]
    assert bundle["chart_order"] == final["chart_order"]
    assert bundle["sidebar_link"] == final["sidebar_link"]
    assert list(bundle["figures"]) == list(final["figures"])
    duration = bundle["figures"]["duration"]["data"]
    assert [t["x"] for t in duration] == [
        t["x"] for t in final["figures"]["duration"]["data"]
    ]
