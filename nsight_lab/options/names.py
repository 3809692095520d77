"""Names the magic must not bind in the notebook (builtins, IPython's, dunders).

:func:`reserved_name` says why a parameter or ``--out`` name would break later cells
whatever the namespace holds; :func:`check_bindings` refuses, with the kernel's
namespace, names that would replace a function, class or module the user defined.
"""

from __future__ import annotations

import builtins
import re
from types import ModuleType
from typing import TYPE_CHECKING

from nsight_lab.errors import OptionError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.options.profile import ProfileOptions

IPYTHON_NAMES = frozenset(
    {"get_ipython", "In", "Out", "exit", "quit", "_", "__", "___", "_i", "_ii", "_iii",
     "_ih", "_oh", "_dh"}
)  # fmt: skip
"""Names IPython keeps in the user namespace (plus ``_iN``/``_N``, matched apart)."""
_IPYTHON_NUMBERED = re.compile(r"_i?[0-9]+")


def reserved_name(name: str) -> str | None:
    """Say why binding ``name`` in the notebook would break it, or ``None``.

    Python builtins, IPython's own names (``get_ipython``, ``In``, ``Out``, ``_``,
    ``_i3``, ...) and dunder names are reserved whatever the namespace holds.
    """
    if name.startswith("__") and name.endswith("__") and len(name) > 4:  # noqa: PLR2004
        return "a Python special (dunder) name"
    if name in IPYTHON_NAMES or _IPYTHON_NUMBERED.fullmatch(name):
        return "a name IPython keeps in the notebook"
    if hasattr(builtins, name):
        return "a Python builtin"
    return None


def check_bindings(options: ProfileOptions, namespace: Mapping[str, object]) -> None:
    """Refuse parameter and ``--out`` names that would replace the notebook's callables.

    Run with the kernel's namespace before anything is stored: a parameter bound over
    a function, class or module the user defined would break later cells. Plain
    variables may be rebound (that is what a parameter does).

    Raises:
        OptionError: A name given would replace a callable or module in ``namespace``.
    """
    bound = [
        ("--configs" if name == "n" and "--configs" in options.given else
         f"--param {name}", name)
        for name in options.param_names
    ]  # fmt: skip
    if options.out:
        bound.append(("--out", options.out))
    for option, name in bound:
        value = namespace.get(name)
        if value is not None and (callable(value) or isinstance(value, ModuleType)):
            what = "module" if isinstance(value, ModuleType) else "callable"
            msg = (
                f"{option}: {name!r} is a {what} defined in the notebook and would be "
                f"replaced; choose another name (e.g. {name}_value)"
            )
            raise OptionError(msg)
