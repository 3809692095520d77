"""The options of a cell that name notebook objects, resolved in its namespace.

A ``%%nsight`` line names objects of the notebook: ``--derive F`` (functions),
``--combine F`` (a binary function) and ``--configs-from [NAMES=]VAR`` (the config
list), and every ``--param`` name binds a notebook variable. The magic parses the
line (:func:`~nsight_lab.options.parse_options`) and hands the options here, the one
place they meet the namespace, before anything is planned or stored. Each check is
an :mod:`nsight_lab.options` function, so a name that cannot be profiled is refused
in one line (:class:`~nsight_lab.errors.OptionError`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nsight_lab.options import check_bindings
from nsight_lab.options.namespace import configs_from, derive_functions, resolve_combine
from nsight_lab.plan import ConfigList

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nsight_lab.options import ProfileOptions
    from nsight_lab.results import UserDerive

__all__ = ["Resolved", "notebook_path", "read_configs_from", "resolve_in_notebook"]


@dataclass(frozen=True)
class Resolved:
    """A cell's options with the notebook objects they name.

    Attributes:
        options: The options, ``--combine``'s notebook function in them.
        config_list: ``--configs-from``'s configs (``None`` without it).
        derive_functions: ``--derive``'s notebook functions, by name.
        notes: What the session says about them (a notebook function used in place
            of a built-in one).
    """

    options: ProfileOptions
    config_list: ConfigList | None
    derive_functions: dict[str, UserDerive]
    notes: list[str]


def resolve_in_notebook(options: ProfileOptions, namespace: dict[str, Any]) -> Resolved:
    """Resolve the names ``options`` give in ``namespace``, the notebook's.

    Raises:
        OptionError: A name would replace a notebook function or module, or names
            nothing the option can use (see :mod:`nsight_lab.options.namespace`).
    """
    check_bindings(options, namespace)
    functions, notes = derive_functions(options.derive, namespace)
    options = resolve_combine(options, namespace)
    config_list = read_configs_from(
        options.configs_from, namespace, options.config_limit
    )
    return Resolved(options, config_list, functions, notes)


def read_configs_from(
    spec: str | None, namespace: dict[str, Any], limit: int
) -> ConfigList | None:
    """``--configs-from [NAMES=]VAR``: the explicit config list in the notebook.

    Raises:
        OptionError: See :func:`nsight_lab.options.namespace.configs_from`.
    """
    found = configs_from(spec, namespace, limit)
    return None if found is None else ConfigList(names=found[0], values=found[1])


def notebook_path(namespace: Mapping[str, Any]) -> str | None:
    """The notebook's path, stored with its sessions (``None`` outside one).

    Jupyter's kernel binds ``__session__``; a kernel started otherwise may only have
    the ``JPY_SESSION_NAME`` its server set.
    """
    found = namespace.get("__session__") or os.environ.get("JPY_SESSION_NAME")
    return str(found) if found else None
