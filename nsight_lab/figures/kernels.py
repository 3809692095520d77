"""Each region's kernels, as the charts' hovers and the folded kernel tables show them.

Per-kernel backends (``cupti``, ``pm``, ``ncu``) store the names of the kernels each
run of a region launched (``RunRecord.kernels``); :func:`region_kernels` gathers
them per region, :func:`short_kernel_name` makes a C++ mangled name readable in a
hover (the whole name stays in the table), :func:`kernels_json` is the table the
sidebar folds under the summary.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from nsight_lab.figures.text import config_label

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from nsight_lab.contract.records import RunRecord
    from nsight_lab.figures.common import RegionKey

HOVER_KERNELS = 3
"""Kernels named in a hover; more are counted ("+ 4 more")."""
SHORT_CHARS = 60
"""Longest short name in a hover (longer ones end in an ellipsis)."""
_SOURCE_NAME = re.compile(r"(\d+)")


def region_kernels(records: Sequence[RunRecord]) -> dict[RegionKey, list[str]]:
    """The distinct kernels of each (region, config), in the order first launched.

    Regions whose backend sees no kernels (``events``, ``cpu``) are left out.

    Raises:
        Nothing.
    """
    out: dict[RegionKey, dict[str, None]] = {}
    for record in records:
        if record.kernels:
            names = out.setdefault((record.annotation, record.config_index), {})
            names.update(dict.fromkeys(record.kernels))
    return {key: list(names) for key, names in out.items()}


def _nested_names(mangled: str) -> list[str]:
    """The source names of an Itanium-mangled ``_ZN...E`` name, outermost first."""
    at = 3 if mangled.startswith("_ZN") else 2
    parts: list[str] = []
    while at < len(mangled):
        while at < len(mangled) and mangled[at] in "KVrL":  # cv-qualifiers
            at += 1
        match = _SOURCE_NAME.match(mangled, at)
        if match is None:
            break
        length = int(match.group(1))
        start = match.end()
        name = mangled[start : start + length]
        if len(name) < length:
            break
        parts.append(name)
        at = start + length
        if not mangled.startswith("_ZN"):
            break
    return parts


def short_kernel_name(name: str) -> str:
    """A kernel's name, readable: a mangled C++ name's innermost function name.

    ``_ZN2at6native29vectorized_elementwise_kernelILi8E...`` reads
    ``at::native::vectorized_elementwise_kernel``; an anonymous namespace and
    compiler-made names are dropped; unmangled names (``nvjet_sm90_...``) stay as
    they are, cut at :data:`SHORT_CHARS`.

    Raises:
        Nothing.
    """
    text = name
    if name.startswith("_Z"):
        parts = [
            p for p in _nested_names(name) if not p.startswith(("_GLOBAL__N", "__"))
        ]
        if parts:
            text = "::".join(parts[:2] + parts[-1:] if len(parts) > 3 else parts)  # noqa: PLR2004
    return text if len(text) <= SHORT_CHARS else text[: SHORT_CHARS - 1] + "\u2026"


def kernels_hover(names: Sequence[str]) -> str:
    """A hover's kernel line (plotly markup-free text), ``""`` without kernels."""
    if not names:
        return ""
    shown = [short_kernel_name(n) for n in names[:HOVER_KERNELS]]
    more = len(names) - len(shown)
    word = "kernel" if len(names) == 1 else "kernels"
    return f"{word}: " + ", ".join(shown) + (f" + {more} more" if more else "")


def kernels_json(
    records: Sequence[RunRecord],
    kernels: Mapping[RegionKey, Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """The kernel table: one row per region with kernels, in the order they ran.

    Each row ``{"region", "config", "kernels": [{"name", "short"}]}`` (``config``
    the config's parameters as text, ``""`` for a single config). Empty when the
    backend sees no kernels.

    Raises:
        Nothing.
    """
    found = region_kernels(records) if kernels is None else kernels
    configs = {(r.annotation, r.config_index): r.config for r in records}
    with_config = len({c for _, c in configs}) > 1
    rows: list[dict[str, Any]] = []
    for key, names in found.items():
        config = configs.get(key) or {}
        rows.append(
            {
                "region": key[0],
                "config": config_label(config) if with_config and config else "",
                "kernels": [{"name": n, "short": short_kernel_name(n)} for n in names],
            }
        )
    return rows
