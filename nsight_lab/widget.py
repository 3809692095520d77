"""The inline widget: one profile session's progress, charts and summary in a cell.

:class:`NsightWidget` is declarations only: the bundled front end
(``static/widget.js``, built from ``src/widget/index.ts`` by ``jlpm build:widget``)
plus the synced traits it draws. State lives in the traits, so a re-rendered output or
a notebook reopened with saved widget state shows the same view.
:class:`nsight_lab.live.WidgetView` drives the traits from a running profile.

Hosts that render no widgets (nbconvert, GitHub) get the static fallback of
:mod:`nsight_lab.fallback` as ``text/html`` in the same MIME bundle.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from nsight_lab.records import SESSION_STATUSES

__all__ = ["STATIC_DIR", "NsightWidget"]

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
"""Where ``jlpm build:widget`` writes ``widget.js`` and ``widget.css``."""

_MISSING_BUNDLE_ESM = """
export default {
  render({ el }) {
    el.textContent =
      "[nsight-lab] the widget bundle nsight_lab/static/widget.js is missing; " +
      "build it with: jlpm build:widget (or reinstall nsight-lab)";
  }
};
"""


def _asset(name: str, missing: str) -> Path | str:
    path = STATIC_DIR / name
    if path.is_file():
        return path
    logger.warning("[nsight-lab] %s is missing; run jlpm build:widget", path)
    return missing


class NsightWidget(anywidget.AnyWidget):
    """Live progress, charts and the summary table of one ``%%nsight`` session."""

    _esm = _asset("widget.js", _MISSING_BUNDLE_ESM)
    _css = _asset("widget.css", "")

    session_id = traitlets.Int(0).tag(sync=True)
    status = traitlets.Enum(SESSION_STATUSES, default_value="running").tag(sync=True)
    configs_total = traitlets.Int(0).tag(sync=True)
    config_index = traitlets.Int(0).tag(sync=True)
    """0-based index of the config now running."""
    runs_done = traitlets.Int(0).tag(sync=True)
    """Measured runs finished in the current config."""
    runs_target = traitlets.Int(0).tag(sync=True)
    """Measured runs planned per config (a minimum with ``--target-rsd``)."""
    elapsed_s = traitlets.Float(0.0).tag(sync=True)
    eta_s = traitlets.Float(None, allow_none=True).tag(sync=True)
    """Estimated seconds left; None while unknown."""
    message = traitlets.Unicode("").tag(sync=True)
    records = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Run records as ``records.record_to_json`` dicts: the latest, up to a cap."""
    figures = traitlets.Dict().tag(sync=True)
    """Chart name -> plotly figure JSON (``figures.figure_json``)."""
    summary = traitlets.List(traitlets.Dict()).tag(sync=True)
    """Rows of the final summary table: column -> value."""
    sidebar_link = traitlets.Unicode("").tag(sync=True)
    """Link target of the session in the lab extension's sidebar ("" for none)."""

    def __init__(self, **kwargs: Any) -> None:  # noqa: ANN401  (traitlets' own kwargs)
        """Create the widget; keyword arguments set traits."""
        super().__init__(**kwargs)
        self._fallback: dict[str, str] | None = None
        self.observe(self._forget_fallback, names=list(self._fallback_traits()))

    @staticmethod
    def _fallback_traits() -> tuple[str, ...]:
        return (
            "session_id",
            "status",
            "configs_total",
            "config_index",
            "runs_done",
            "runs_target",
            "elapsed_s",
            "message",
            "figures",
            "summary",
        )

    def _forget_fallback(self, _change: object) -> None:
        self._fallback = None

    def static_fallback(self) -> dict[str, str]:
        """Return the ``text/plain`` and ``text/html`` views of the current state.

        The HTML is self-contained (summary table, charts as inline PNG, or inline
        plotly.js where PNG export is unavailable) and is cached until a trait changes.

        Raises:
            Nothing: a chart that cannot be exported is left out with a note.
        """
        if self._fallback is None:
            from nsight_lab.fallback import static_bundle

            self._fallback = static_bundle(
                session_id=self.session_id,
                status=self.status,
                progress={
                    "configs_total": self.configs_total,
                    "config_index": self.config_index,
                    "runs_done": self.runs_done,
                    "runs_target": self.runs_target,
                    "elapsed_s": self.elapsed_s,
                },
                message=self.message,
                figures=self.figures,
                summary=self.summary,
            )
        return self._fallback

    def _repr_mimebundle_(
        self,
        **kwargs: Any,  # noqa: ANN401  (IPython's include/exclude)
    ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        return {**data, **self.static_fallback()}, metadata
