"""The view model: what every view of a session shows, built from runs as they arrive.

One :class:`SessionViewModel` per session (``docs/architecture.md``, section 2): the
inline widget, the
sidebar's session and live views, the cell's final bundle and its static page read
it. ``add(records)`` costs the new runs only; ``to_json()`` is the payload, built
from state bounded by the regions and the window (:mod:`nsight_lab.viewmodel.session`).
The server keeps one per live session (:class:`ViewModels`, a bounded LRU cache fed
with the store's new runs), so a sidebar refresh costs the runs added since the last.

The names below load on first use: the Jupyter server imports
:mod:`nsight_lab.viewmodel.cache` at start; the view model itself (plotly) loads with
the first session viewed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsight_lab.contract.lazy import lazy_exports

if TYPE_CHECKING:
    from nsight_lab.viewmodel.cache import ViewModels, session_view
    from nsight_lab.viewmodel.session import (
        KeptBaseline,
        SessionViewModel,
        build,
    )
    from nsight_lab.viewmodel.streaming import StreamingSummary

__all__ = [
    "KeptBaseline",
    "SessionViewModel",
    "StreamingSummary",
    "ViewModels",
    "build",
    "session_view",
]

_HOMES = {
    "KeptBaseline": "session",
    "SessionViewModel": "session",
    "build": "session",
    "StreamingSummary": "streaming",
    "ViewModels": "cache",
    "session_view": "cache",
}


__getattr__ = lazy_exports(__name__, _HOMES)
