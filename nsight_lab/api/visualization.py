"""``nsight.visualization``: nsight-python's plotting, behind ``analyze.plot``.

nsight-lab draws with :func:`nsight_lab.api.plot.plot_figure` (plotly; matplotlib
for a ``plot_callback`` written for it); nsight-python's ``visualize`` is not served:
use ``@nsight.analyze.plot``.
"""

from __future__ import annotations

from nsight_lab.api._unserved import no_attribute, unserved

__all__: list[str] = []

_MODULE = "nsight.visualization"
visualize = unserved(
    _MODULE,
    "visualize",
    "decorate with @nsight.analyze.plot(filename, ...), which draws the results",
)


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
