"""A package's names, each imported from its module on first use.

``results/`` and ``viewmodel/`` re-export their modules' public names, but importing
the package must load none of those modules (no pandas, no plotly until a name is
used). Each gives its table of homes, name -> module, to :func:`lazy_exports`::

    __getattr__ = lazy_exports(__name__, {"to_dataframe": "frame", ...})

and names the same modules under ``if TYPE_CHECKING:`` for the type checker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` whose names live in ``homes``.

    Args:
        package: The package's ``__name__``.
        homes: Each name -> the module of ``package`` that defines it.
    """

    def attribute(name: str) -> Any:  # noqa: ANN401  (whatever the name is)
        """``name`` from its module, imported now if it was not yet.

        Raises:
            AttributeError: ``name`` is none of the package's names.
        """
        home = homes.get(name)
        if home is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    return attribute
