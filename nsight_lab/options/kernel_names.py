"""Kernel names as options give them: ``--ignore-kernels`` and its splitting.

Kernel names hold commas in their template and parameter lists, so a list of them is
split only at commas outside brackets.
"""

from __future__ import annotations

from nsight_lab.errors import OptionError
from nsight_lab.options.values import shown


def split_kernel_names(raw: str) -> list[str]:
    """``raw`` split at the commas outside ``<...>``, ``(...)`` and ``[...]``.

    Kernel names hold commas in their template and parameter lists
    (``void gemm<float, 128>(...)``); those stay inside the name.
    """
    names: list[str] = []
    depth = 0
    start = 0
    for i, char in enumerate(raw):
        if char in "<([":
            depth += 1
        elif char in ">)]":
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            names.append(raw[start:i].strip())
            start = i + 1
    names.append(raw[start:].strip())
    return names


def read_ignore_kernels(option: str, raw: str) -> tuple[str, ...]:
    """``--ignore-kernels A,B``: kernel names to leave out.

    Raises:
        OptionError: An empty name.
    """
    names = split_kernel_names(raw)
    if any(not name for name in names):
        msg = (
            f"{option}: empty kernel name in {shown(raw)}; give comma-separated "
            "kernel names (quote names with spaces)"
        )
        raise OptionError(msg)
    return tuple(names)
