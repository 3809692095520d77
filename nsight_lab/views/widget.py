"""The inline widget: one profile session's progress, charts and summary in a cell.

:class:`NsightWidget` is declarations only: the bundled front end
(``static/widget.js``, built from ``src/widget/index.ts`` by ``jlpm build:widget``)
plus the synced traits it draws. State lives in the traits, so a re-rendered output
shows the same view. :class:`nsight_lab.views.live.WidgetView` drives the traits from
a running profile; the widget is the in-flight view only: when the session ends, the
cell's output is replaced by the final bundle (:mod:`nsight_lab.views.bundle`) and
the widget is closed.

Hosts that render no widgets (nbconvert, GitHub) get the static fallback of
:mod:`nsight_lab.views.fallback` (the progress line and the summary so far) as
``text/html`` in the same MIME bundle.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from nsight_lab.contract.records import SESSION_STATUSES
from nsight_lab.figures import CHART_ORDER
from nsight_lab.views.fallback import failure_bundle, static_bundle, static_text

__all__ = ["STATIC_DIR", "NsightWidget"]

logger = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent.parent / "static"
"""Where ``jlpm build:widget`` writes ``static/widget.js`` and ``static/widget.css``."""

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
    progress = traitlets.Dict().tag(sync=True)
    """Where the profile stands:
    :meth:`nsight_lab.contract.progress.Progress.to_json`
    (counts per config and in total, ``fraction``, ``text``); empty before the first
    update. The front end renders ``text`` and ``fraction`` as they are."""
    message = traitlets.Unicode("").tag(sync=True)
    figures = traitlets.Dict().tag(sync=True)
    """Chart name -> plotly figure JSON (``figures.figures_to_json``)."""
    chart_order = traitlets.List(
        traitlets.Unicode(), default_value=list(CHART_ORDER)
    ).tag(sync=True)
    """The order to draw the charts in (:data:`nsight_lab.figures.CHART_ORDER`)."""
    figures_seq = traitlets.Int(0).tag(sync=True)
    """How many of the live appends ``figures`` already holds."""
    append = traitlets.Dict().tag(sync=True)
    """The latest live append: ``{"seq": n, "charts": name -> appends}``.

    Appends are :meth:`nsight_lab.figures.LiveFigures.add`'s: new traces and points
    the front end adds with ``Plotly.addTraces`` / ``Plotly.extendTraces`` to the
    figures it has (those of ``figures``, then appends ``figures_seq + 1``, ...).
    """
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
            "progress",
            "message",
            "summary",
        )

    def _forget_fallback(self, _change: object) -> None:
        self._fallback = None

    def static_fallback(self) -> dict[str, str]:
        """Return the ``text/plain`` and ``text/html`` views of the current state.

        The HTML is self-contained (progress line, message, summary table; the
        charts are the final bundle's) and is cached until a trait changes.

        Raises:
            Nothing: a failure gives a short note instead of the page.
        """
        if self._fallback is None:
            try:
                self._fallback = static_bundle(
                    session_id=self.session_id,
                    status=self.status,
                    progress=self.progress,
                    message=self.message,
                    summary=self.summary,
                )
            except Exception as exc:  # noqa: BLE001  (a display must never raise)
                logger.warning("[nsight-lab] static fallback failed: %r", exc)
                self._fallback = failure_bundle(self.session_id, self.status, exc)
        return self._fallback

    def _repr_mimebundle_(
        self,
        **kwargs: Any,  # noqa: ANN401  (IPython's include/exclude)
    ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        include = kwargs.get("include") or _active_types()
        exclude = kwargs.get("exclude") or ()
        wanted = [
            mime
            for mime in ("text/plain", "text/html")
            if (include is None or mime in include) and mime not in exclude
        ]
        if "text/html" in wanted:
            return {**data, **self.static_fallback()}, metadata
        if wanted:  # a terminal: the text only
            return {**data, "text/plain": self.static_text()}, metadata
        return data, metadata

    def static_text(self) -> str:
        """Return the ``text/plain`` view of the current state.

        Raises:
            Nothing.
        """
        if self._fallback is not None:
            return str(self._fallback["text/plain"])
        return static_text(
            session_id=self.session_id,
            status=self.status,
            progress=self.progress,
            message=self.message,
            summary=self.summary,
        )


def _active_types() -> list[str] | None:
    """The MIME types the running IPython computes (None outside IPython).

    A terminal IPython shows ``text/plain`` only (its formatters for other types are
    off); a Jupyter kernel computes ``text/html`` as well.
    """
    try:
        from IPython import get_ipython  # noqa: PLC0415  (IPython: optional here)
    except ImportError:
        return None
    shell = get_ipython()
    formatter = getattr(shell, "display_formatter", None)
    types = getattr(formatter, "active_types", None)
    return list(types) if isinstance(types, list) else None
