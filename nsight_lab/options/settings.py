"""The readers of the settings options: ``--thermal-settings`` and ``--baseline``.

Readers as in :mod:`~nsight_lab.options.values`: ``(option, raw)`` to the value, or
a one-line :class:`~nsight_lab.errors.OptionError`.
"""

from __future__ import annotations

import re

from nsight_lab.errors import OptionError
from nsight_lab.options.profile import ThermalSettings
from nsight_lab.options.values import int_value, positive_float, shown

__all__ = ["MAX_BASELINE_CHARS", "read_baseline", "read_thermal_settings"]

_THERMAL_KEYS = ("wait", "cont", "timeout", "device")


def read_thermal_settings(option: str, raw: str) -> ThermalSettings:
    """``--thermal-settings wait=W,cont=C,...``: the thresholds.

    Raises:
        OptionError: An unknown key or a bad value.
    """
    values: dict[str, float] = {}
    for item in raw.split(","):
        key, eq, text = (part.strip() for part in item.partition("="))
        if not eq or key not in _THERMAL_KEYS or key in values:
            msg = (
                f"{option}: expected wait=C,cont=C,timeout=S,device=N (each at most "
                f"once, any of them), got {shown(raw)}"
            )
            raise OptionError(msg)
        if key == "device":
            values[key] = int_value(0, 1_024)(f"{option} device", text)
        else:
            values[key] = positive_float()(f"{option} {key}", text)
    wait, cont = values.get("wait"), values.get("cont")
    if wait is not None and cont is not None and cont <= wait:
        msg = (
            f"{option}: cont ({cont:g} C) must be above wait ({wait:g} C): wait is the "
            "headroom that pauses the runs, cont the headroom they resume at"
        )
        raise OptionError(msg)
    return ThermalSettings(
        wait_c=values.get("wait"),
        cont_c=values.get("cont"),
        timeout_s=values.get("timeout"),
        device=int(values["device"]) if "device" in values else None,
    )


MAX_BASELINE_CHARS = 64
"""Longest baseline name."""
_BASELINE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def read_baseline(option: str, raw: str) -> str:
    """Read a baseline name; whether it exists is the store's to say.

    A letter or ``_`` first (so a name never reads as a session id), then letters,
    digits, ``_``, ``.`` and ``-``; the magic asks the store before it profiles.
    """
    if len(raw) > MAX_BASELINE_CHARS or not _BASELINE_RE.fullmatch(raw):
        msg = (
            f"{option}: {shown(raw)} is not a baseline name; give a letter or _ first, "
            f"then letters, digits, _ . - (at most {MAX_BASELINE_CHARS}); "
            "list them with %nsight baseline list"
        )
        raise OptionError(msg)
    return raw
