"""What nsight-lab's stand-ins of nsight-python's submodules say about the rest.

nsight-python's submodules hold its public names and its pipeline's internals (the
ncu injection, the report extraction, the aggregation of its raw frame, ...).
nsight-lab serves the public names; for an internal that nsight-python 1.1.0 has,
:func:`unserved` gives a callable that raises nsight-python's own
:class:`~nsight_lab.api.exceptions.ProfilerException` saying what to use instead, and
for any other name :func:`no_attribute` gives Python's ``AttributeError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from nsight_lab.api.exceptions import ProfilerException

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["no_attribute", "unserved"]


def unserved(module: str, name: str, instead: str) -> Callable[..., NoReturn]:
    """nsight-python's internal ``module.name``: a callable that says it is not served.

    Args:
        module: nsight-python's module (``nsight.extraction``).
        name: the internal's name there.
        instead: what nsight-lab offers for it, as the message's end.
    """

    def refuse(*_args: Any, **_kwargs: Any) -> NoReturn:  # noqa: ANN401
        msg = (
            f"{module}.{name} is an internal of nsight-python's own pipeline, which "
            f"nsight-lab does not run: {instead}"
        )
        raise ProfilerException(msg)

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Not served by nsight-lab (nsight-python's internal): {instead}"
    return refuse


def no_attribute(module: str, name: str, served: Iterable[str]) -> AttributeError:
    """The ``AttributeError`` for a name nsight-lab's ``module`` does not have."""
    listed = ", ".join(sorted(served)) or "nothing"
    msg = (
        f"module {module!r} (nsight-lab's stand-in for nsight-python) has no "
        f"attribute {name!r}; it serves {listed}"
    )
    return AttributeError(msg)
