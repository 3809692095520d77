"""Strict JSON of a payload: NaN and infinities written as ``null``."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps"]


def dumps(payload: dict[str, Any]) -> str:
    """Return strict JSON of ``payload`` with NaN and infinities written as ``null``.

    Encoded at once when every float is finite (the view model's payloads are);
    only a payload with a NaN or an infinity is walked to replace them.

    Raises:
        TypeError: A value is not JSON-able.
    """
    try:
        return json.dumps(payload, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(payload), allow_nan=False)


def _finite(value: Any) -> Any:  # noqa: ANN401  (any JSON value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
