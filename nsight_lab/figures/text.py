"""User text in figures: names a user chose made safe for plotly.js and kaleido.

Annotations and config values are *text*: HTML-escaped wherever plotly.js would read
markup (:func:`plotly_text`), with control, bidi and zero-width characters and lone
surrogates made visible (:mod:`nsight_lab.text.visible`), and kept unescaped only as
data in each trace's ``meta`` (:func:`meta_text`). Also the labels built from them.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from nsight_lab.text.visible import printable, surrogates_visible

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.contract.records import JsonScalar, RunRecord


def plotly_text(value: object) -> str:
    """``value`` as plotly text: markup escaped, control characters made visible."""
    return html.escape(printable(value), quote=False)


def meta_text(value: str) -> str:
    """An annotation kept as data: lone surrogates (not UTF-8) made visible."""
    return surrogates_visible(value)


def config_label(config: Mapping[str, JsonScalar]) -> str:
    """A config as ``k=v, k=v`` (user text: escape it where plotly reads markup)."""
    return ", ".join(f"{k}={v}" for k, v in config.items())


def series_label(
    annotation: str,
    config: Mapping[str, JsonScalar],
    with_config: bool,  # noqa: FBT001
) -> str:
    """A series' name: the region, with its config in brackets where configs vary."""
    label = config_label(config) if with_config else ""
    return f"{annotation} [{label}]" if label else annotation


def throttle_text(record: RunRecord) -> str:
    """Hover text saying why a run was throttled ("" where it was not)."""
    t = record.telemetry
    if not t.throttled:
        return ""
    reasons = ", ".join(t.clock_event_reasons) or "SM clock below 75% of its maximum"
    return plotly_text(f"throttled: {reasons}")
