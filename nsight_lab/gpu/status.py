"""The answer to one question about the GPU stack: :class:`StackStatus`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StackStatus:
    """The answer to one question about the GPU stack.

    Attributes:
        ok: ``True`` when the component is usable, ``False`` when it is not, ``None``
            when this machine cannot tell.
        detail: what was found, in words (versions, paths, the error text).
        hint: what to do about it; empty when there is nothing to do.
    """

    ok: bool | None
    detail: str
    hint: str = ""

    @property
    def message(self) -> str:
        """The detail and the hint as one line, e.g. for ``Availability.reason``."""
        return f"{self.detail}; {self.hint}" if self.hint else self.detail
