"""``ProfileResults``: what an ``analyze.kernel`` function returns.

As nsight-python's: :meth:`ProfileResults.to_dataframe` gives the results DataFrame
(nsight-python's columns, then nsight-lab's; see :mod:`nsight_lab.results`). nsight-lab
adds the session the profile is stored as (:attr:`ProfileResults.session_id`: the
sidebar, ``%nsight show ID``) and the figure ``analyze.plot`` drew
(:attr:`ProfileResults.figure`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ProfileResults"]


class ProfileResults:
    """The results of one profile (nsight-python's ``ProfileResults``)."""

    def __init__(self, results: pd.DataFrame, session_id: int | None = None) -> None:
        """Hold ``results`` (the DataFrame) of store session ``session_id``."""
        self._results = results
        self.session_id = session_id
        """The store's session of this profile (``%nsight show ID``)."""
        self.figure: Any = None
        """The plotly figure ``analyze.plot`` drew from these results, if any."""

    def to_dataframe(self) -> pd.DataFrame:
        """The results DataFrame: one row per region, metric and config.

        nsight-python 1.1.0's columns with their meanings and dtypes (``Annotation``,
        ``Metric``, the parameters, ``AvgValue`` ... ``Geomean``), then nsight-lab's
        (medians, measured clocks, telemetry, roofline); see :mod:`nsight_lab.results`.
        """
        return self._results

    def __repr__(self) -> str:
        """Say which session and how many rows."""
        return (
            f"ProfileResults(session_id={self.session_id}, rows={len(self._results)})"
        )
