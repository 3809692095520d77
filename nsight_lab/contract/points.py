"""The point budget: the most points of one per-run trace a chart holds.

One number for Python and TypeScript, defined once: the default of the sidebar's
``maxPoints`` setting in ``schema/sidebar.json``. The front end reads the same default
(``DEFAULT_SIDEBAR_SETTINGS`` in ``src/types.ts`` imports the schema); here it is
:data:`MAX_POINTS`, what the inline widget (``views/live.py``), the view model
(``viewmodel/session.py``) and the server's view models (``viewmodel/cache.py``) keep
per trace. ``tests/test_point_budget.py`` fails where a second definition appears.

The schema is read from the checkout's ``schema/`` folder, or from the copy a wheel
carries inside the package (``force-include`` in ``pyproject.toml``).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["MAX_POINTS", "SIDEBAR_SCHEMA"]

_PACKAGE = Path(__file__).resolve().parent.parent
_PLACES = (
    _PACKAGE / "schema" / "sidebar.json",  # an installed wheel
    _PACKAGE.parent / "schema" / "sidebar.json",  # a checkout (editable install)
)


def _schema_path() -> Path:
    for path in _PLACES:
        if path.is_file():
            return path
    msg = "the sidebar's settings schema is missing; looked at " + ", ".join(
        str(p) for p in _PLACES
    )
    raise FileNotFoundError(msg)


SIDEBAR_SCHEMA = _schema_path()
"""The sidebar's settings schema (``schema/sidebar.json``) this process reads."""

MAX_POINTS: int = json.loads(SIDEBAR_SCHEMA.read_text(encoding="utf-8"))["properties"][
    "maxPoints"
]["default"]
"""Points per trace (the latest while a session runs) and runs per region in the view
model's window: the default of ``maxPoints`` in ``schema/sidebar.json``."""
