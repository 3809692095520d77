"""A DataFrame whose text form cannot drive a terminal: :class:`ShownFrame`.

The frames the magic hands back hold region names, labels and notebook paths as the
user wrote them; IPython shows a returned frame by its ``repr`` (a terminal, ``print``,
``text/plain``) and its HTML. Those two forms go through
:func:`~nsight_lab.text.safe.frame_for_terminal`, so an ``ESC[2J`` or a bidi override
in a name is shown as its escape; the data itself is unchanged, and anything derived
from the frame (a slice, a copy, a merge) is a plain :class:`pandas.DataFrame`.
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from nsight_lab.text.safe import frame_for_terminal

__all__ = ["ShownFrame", "shown_frame"]


class ShownFrame(pd.DataFrame):
    """A :class:`pandas.DataFrame` whose ``repr`` and HTML escape control characters."""

    @property
    def _constructor(self) -> Any:  # noqa: ANN401  (pandas' own hook)
        return pd.DataFrame  # what is derived from it is a plain frame

    def _shown(self) -> pd.DataFrame:
        return frame_for_terminal(pd.DataFrame(self))

    def __repr__(self) -> str:
        """The frame's text, its text cells and column names escaped."""
        return repr(self._shown())

    def _repr_html_(self) -> str | None:
        shown: Any = self._shown()  # pandas' stubs lack its display hook
        return cast("str | None", shown._repr_html_())


def shown_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (its data shared, its attrs kept) as a :class:`ShownFrame`."""
    shown: pd.DataFrame = ShownFrame(frame)
    shown.attrs = dict(frame.attrs)
    return shown
