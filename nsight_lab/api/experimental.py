"""``nsight.experimental``: nsight-python's ``collect`` for info collectors."""

from __future__ import annotations

from nsight_lab.api.collect import collect

__all__ = ["collect"]
