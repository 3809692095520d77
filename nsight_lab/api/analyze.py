"""``nsight.analyze``: the ``kernel`` and ``plot`` decorators and ``ignore_failures``.

The module nsight-python code reaches as ``nsight.analyze``; see
:mod:`nsight_lab.api.kernel` and :mod:`nsight_lab.api.plot`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from nsight_lab.api.kernel import kernel
from nsight_lab.api.plot import plot

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["ignore_failures", "kernel", "plot"]


@contextlib.contextmanager
def ignore_failures() -> Iterator[None]:
    """Swallow any ``Exception`` raised in the block (nsight-python's helper).

    For work outside the regions, such as a warm-up that may fail; inside a region use
    ``annotate(name, ignore_failures=True)``, which also leaves the run's value out.
    """
    with contextlib.suppress(Exception):
        yield
