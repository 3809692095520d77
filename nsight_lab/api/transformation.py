"""``nsight.transformation``: nsight-python's aggregation of its raw frame.

nsight-lab aggregates per-run records, not nsight-python's raw extraction frame
(:mod:`nsight_lab.results`: the same columns, per region, metric and config), so
``aggregate_data`` is not served; ``ProfileResults.to_dataframe()`` is its output.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute, unserved

__all__: list[str] = []

_MODULE = "nsight.transformation"
aggregate_data = unserved(
    _MODULE,
    "aggregate_data",
    "ProfileResults.to_dataframe() is the aggregated frame (nsight-lab aggregates "
    "its per-run records)",
)


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
