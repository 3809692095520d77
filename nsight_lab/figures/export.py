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


_ATTEMPTS = 2
"""Calls of kaleido per PNG when its browser fails (not when the figure is rejected)."""
_BROWSER_HINT = (
    "kaleido needs Chrome or Chromium: install one (e.g. apt-get install chromium) "
    "or set BROWSER_PATH to its executable"
)


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
    png = _to_png(image, out, width=width, height=height, scale=scale)
    out.write_bytes(png)
    return out


def _to_png(
    image: go.Figure, out: Path, *, width: int, height: int, scale: float
) -> bytes:
    """The PNG bytes of ``image``; a failure of the browser is tried once more.

    kaleido drives a headless Chrome: on a loaded machine its page was seen to be
    called before its scripts had loaded ("ReferenceError: kaleido_scopes is not
    defined", two test commands side by side on 2 cores), which a second call in a
    fresh browser does not meet. A figure plotly.js rejects is not tried again.

    Raises:
        StaticExportError: kaleido or a browser is missing, the browser failed
            twice, or the figure was rejected.
    """
    where = f"cannot write {str(out)!r} as PNG"
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            png: bytes = image.to_image(
                format="png", width=width, height=height, scale=scale
            )
        except Exception as exc:  # noqa: PERF203  (kaleido's errors derive from Exception only)
            text = str(exc).strip()
            first = text.splitlines()[0] if text else repr(exc)
            if _figure_rejected(exc):
                msg = f"{where}: {type(exc).__name__}: {first}"
                raise StaticExportError(msg, unavailable=False) from exc
            if importlib.util.find_spec("kaleido") is None:
                msg = (
                    f"{where}: {first}; install kaleido with: pip install 'kaleido>=1'"
                )
                raise StaticExportError(msg) from exc
            if attempt == _ATTEMPTS:
                msg = f"{where} (tried {attempt} times): {first}; {_BROWSER_HINT}"
                raise StaticExportError(msg) from exc
        else:
            return png
    raise AssertionError  # unreachable: the last attempt returns or raises
