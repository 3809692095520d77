"""``nsight.info_collector``: nsight-python's info-collector types and checks.

``CollectionScope``, ``InfoCollector``, ``RESERVED_COLUMN_NAMES``,
``validate_collectors`` and ``bind_args_to_signature`` are
:mod:`nsight_lab.api.collect`'s, with nsight-python's behaviour. Its per-annotation
state machine (``set_annotation_collectors``, ``collect_for_annotation``, ...) is
nsight-lab's :class:`~nsight_lab.api.collect.Collectors`, run by the profile itself,
and is not served.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nsight_lab.api import collect
from nsight_lab.api._unserved import no_attribute, unserved
from nsight_lab.api.collect import (
    RESERVED_COLUMN_NAMES,
    CollectionScope,
    InfoCollector,
)
from nsight_lab.api.configs import parameters

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "RESERVED_COLUMN_NAMES",
    "CollectionScope",
    "InfoCollector",
    "bind_args_to_signature",
    "validate_collectors",
]

_MODULE = "nsight.info_collector"
_INSTEAD = (
    "give the collectors to nsight.analyze.kernel(info_collectors=[...]); the "
    "profile calls them"
)
clear_annotation_data = unserved(_MODULE, "clear_annotation_data", _INSTEAD)
collect_for_annotation = unserved(_MODULE, "collect_for_annotation", _INSTEAD)
get_collected_annotation_data = unserved(
    _MODULE, "get_collected_annotation_data", _INSTEAD
)
reset_collector_failure_warnings = unserved(
    _MODULE, "reset_collector_failure_warnings", _INSTEAD
)
set_annotation_collectors = unserved(_MODULE, "set_annotation_collectors", _INSTEAD)
warn_collector_failure = unserved(_MODULE, "warn_collector_failure", _INSTEAD)


def validate_collectors(
    collectors: Sequence[tuple[str, Callable[..., Any], str]],
    func: Callable[..., Any] | None = None,
) -> None:
    """Refuse collector names that would shadow a column or ``func``'s parameter.

    Raises:
        ProfilerException: A name is repeated, reserved, or a parameter's.
    """
    names = [p.name for p in parameters(func)] if func is not None else []
    collect.validate_collectors(collectors, names)


def bind_args_to_signature(
    callback: Callable[..., Any], leading: Sequence[Any], config: Sequence[Any]
) -> list[Any]:
    """The positional arguments ``callback`` gets: all, or as many as it takes."""
    return collect._arguments(callback, leading, config)  # noqa: SLF001  (its rule)


def __getattr__(name: str) -> object:
    raise no_attribute(_MODULE, name, __all__)
