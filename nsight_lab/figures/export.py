"""Figures written to files: a self-contained HTML page or a PNG through kaleido.

:func:`write_png` needs kaleido and a Chrome/Chromium; every failure is one
:class:`StaticExportError` that says what to install or which figure was rejected.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import plotly.graph_objects as go

from nsight_lab.errors import NsightLabError

if TYPE_CHECKING:
    import os


class StaticExportError(NsightLabError, RuntimeError):
    """A figure could not be written as a static image; the message says what to do."""

    def __init__(self, message: str, *, unavailable: bool = True) -> None:
        """Say why; ``unavailable``: kaleido or a browser is missing or broken.

        False when this one figure was rejected (plotly.js or kaleido raised on
        it) while static export works otherwise.
        """
        super().__init__(message)
        self.unavailable = unavailable


def write_html(fig: go.Figure, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as a self-contained HTML page (plotly.js inline, no CDN).

    Raises:
        OSError: The file cannot be written.
    """
    out = Path(path)
    fig.write_html(out, include_plotlyjs=True, include_mathjax=False, full_html=True)
    return out


def _figure_rejected(exc: BaseException) -> bool:
    """Whether kaleido ran and plotly.js rejected the figure (a KaleidoError)."""
    return type(exc).__name__ == "KaleidoError"


def write_png(  # noqa: PLR0913  (the image options are keyword-only)
    fig: go.Figure,
    path: str | os.PathLike[str],
    *,
    width: int = 900,
    height: int = 500,
    scale: float = 2.0,
    background: str | None = "white",
) -> Path:
    """Write ``fig`` as a PNG (static export through kaleido and a headless Chrome).

    Args:
        fig: The figure.
        path: The file to write.
        width: Width in CSS pixels.
        height: Height in CSS pixels.
        scale: Pixel density.
        background: Paper and plot colour of the image (a PNG has no theme to
            inherit); None keeps the figure's transparent background.

    Returns:
        ``path``.

    Raises:
        StaticExportError: kaleido or a Chrome/Chromium browser is missing, or the
            export failed (for any reason: no other exception escapes).
    """
    out = Path(path)
    image = go.Figure(fig)
    if background is not None:
        image.update_layout(paper_bgcolor=background, plot_bgcolor=background)
    try:
        png = image.to_image(format="png", width=width, height=height, scale=scale)
    except Exception as exc:  # kaleido's own errors derive from Exception only
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        if _figure_rejected(exc):
            msg = f"cannot write {str(out)!r} as PNG: {type(exc).__name__}: {first}"
            raise StaticExportError(msg, unavailable=False) from exc
        if importlib.util.find_spec("kaleido") is None:
            hint = "install kaleido with: pip install 'kaleido>=1'"
        else:
            hint = (
                "kaleido needs Chrome or Chromium: install one (e.g. apt-get install "
                "chromium) or set BROWSER_PATH to its executable"
            )
        msg = f"cannot write {str(out)!r} as PNG: {first}; {hint}"
        raise StaticExportError(msg) from exc
    out.write_bytes(png)
    return out
