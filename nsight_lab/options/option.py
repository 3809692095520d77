"""One ``%%nsight`` option as declared: :class:`Option`, and what declarations use.

The declarations themselves are :data:`nsight_lab.options.table.OPTIONS`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, get_args

from nsight_lab.contract.registry import backend_choices as registry_choices
from nsight_lab.options.profile import ProfileOptions
from nsight_lab.options.values import choice

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["FIELD_DEFAULTS", "Option", "backend_choices", "literal_choices"]


def backend_choices() -> tuple[str, ...]:
    """The ``--backend`` values: ``auto``, then every id of the backend registry.

    Read from :func:`nsight_lab.contract.registry.backend_choices` when asked (not at
    import: another package may register a backend), so a backend added to the
    registry is accepted, listed in the help and in the README with no change here.
    """
    return registry_choices()


def literal_choices(alias: object) -> Callable[[], tuple[str, ...]]:
    """The choices of a ``Literal[...]`` alias, as :attr:`Option.choices` wants them."""
    values = tuple(str(value) for value in get_args(alias))
    return lambda: values


@dataclass(frozen=True)
class Option:
    """One ``%%nsight`` option, declared once: the parser, help and README read it.

    Its default is that of the :class:`ProfileOptions` field it sets, shown in the help
    and the README when it is a number or a word.
    """

    flag: str
    """``--name`` as the user types it."""
    metavar: str
    """What the value looks like (``N``, ``V1,V2,...``); empty for a switch."""
    field: str
    """The :class:`ProfileOptions` field it sets (``params`` for the grid options)."""
    help: str
    """One short line for ``%nsight help`` (choices and default are added)."""
    meaning: str
    """The README's fuller text, Markdown (choices in the syntax, default added)."""
    read: Callable[[str, str], object] | None = None
    """``read(flag, raw)`` -> the field's value; raises a one-line OptionError.

    ``None`` for a switch (sets ``True``) and for an option with :attr:`choices`.
    """
    choices: Callable[[], tuple[str, ...]] | None = None
    """The accepted words, asked for when needed (the backend registry may grow)."""
    repeatable: bool = False
    """May be given more than once (each adds to the field)."""

    @property
    def takes_value(self) -> bool:
        """Whether the option needs a value (a switch does not take one)."""
        return bool(self.metavar)

    def parse(self, raw: str) -> object:
        """Read ``raw`` (already checked for unsafe characters) into the field's value.

        Raises:
            OptionError: ``raw`` is not accepted; one line naming :attr:`flag`.
        """
        if self.choices is not None:
            return choice(self.flag, raw, self.choices())
        assert self.read is not None  # noqa: S101  (declared with a reader)
        return self.read(self.flag, raw)

    def default(self) -> str | None:
        """The field's default as shown to the user, or ``None`` when not shown."""
        value = FIELD_DEFAULTS.get(self.field)
        if isinstance(value, bool) or not isinstance(value, int | str):
            return None
        return f"{value:,}" if isinstance(value, int) else value


FIELD_DEFAULTS: dict[str, object] = {
    spec.name: spec.default for spec in fields(ProfileOptions)
}
