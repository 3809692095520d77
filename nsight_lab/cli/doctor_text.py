"""How `nsight-lab doctor` reads: one :class:`Check` per topic, as a table or JSON.

:mod:`nsight_lab.cli.doctor` finds what works; this module only says it: an aligned
table, what works first, each backend listed once (:func:`fold_backend_topics`).
"""

from __future__ import annotations

import dataclasses
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "BACKEND_PREFIX", "BACKEND_TOPICS", "MISSING_HEADING", "WORKS_HEADING", "Check",
    "CheckStatus", "checks_to_json", "fold_backend_topics", "format_checks",
]  # fmt: skip

CheckStatus = Literal["ok", "warn", "missing", "error"]

_STATUS_LABELS: dict[CheckStatus, str] = {
    "ok": "ok",
    "warn": "WARN",
    "missing": "MISSING",
    "error": "ERROR",
}
BACKEND_PREFIX = "backend "
"""The name of a backend's check is this prefix and the backend's id."""
WORKS_HEADING = "Works here:"
MISSING_HEADING = "Missing or not working here, and what to do:"


@dataclass(frozen=True)
class Check:
    """The outcome of one doctor check.

    Attributes:
        name: the topic, e.g. ``"ncu"``.
        status: ``"ok"``, ``"warn"`` (works with a caveat), ``"missing"`` (not
            installed or not present) or ``"error"`` (present but broken or refused).
        detail: what was found.
        hint: what to do; empty when nothing needs doing.
    """

    name: str
    status: CheckStatus
    detail: str
    hint: str = ""


def format_checks(checks: Sequence[Check], width: int | None = None) -> str:
    """Write checks as an aligned plain-text table.

    One line per check (status, name, detail), followed by an indented ``-> hint``
    line when the check has a hint; a hint given already (GPU, driver, NVML and
    counter permission share one without a driver) reads "as for NAME above". When
    some checks are ``"ok"`` and others are not, a heading line (not indented)
    precedes each group: :data:`WORKS_HEADING` before the first ``"ok"`` one,
    :data:`MISSING_HEADING` before the first other one.

    Args:
        checks: the checks to show, e.g. from :func:`run_checks`.
        width: wrap longer lines at word boundaries to this many columns (the
            terminal's), continuing under the detail column; ``None``: no wrapping.

    Returns:
        The table, lines joined by newlines, without a trailing newline.
    """
    checks = fold_backend_topics(checks)
    if not checks:
        return ""
    status_width = max(len(_STATUS_LABELS[c.status]) for c in checks)
    name_width = max(len(c.name) for c in checks)
    indent = " " * (status_width + 2 + name_width + 2)
    headed = len({check.status == "ok" for check in checks}) > 1
    lines: list[str] = []
    previous: bool | None = None
    first_said: dict[str, str] = {}
    for check in checks:
        works = check.status == "ok"
        if headed and works != previous:
            lines.append(WORKS_HEADING if works else MISSING_HEADING)
            previous = works
        label = _STATUS_LABELS[check.status]
        line = f"{label:<{status_width}}  {check.name:<{name_width}}  {check.detail}"
        lines += _wrapped(line.rstrip(), width, indent)
        if check.hint:
            first = first_said.setdefault(check.hint, check.name)
            hint = check.hint if first == check.name else f"as for {first} above"
            lines += _wrapped(f"{indent}-> {hint}", width, indent + "   ")
    return "\n".join(lines)


def _wrapped(line: str, width: int | None, indent: str) -> list[str]:
    """``line`` as is, or wrapped at words to ``width`` under ``indent``."""
    if width is None or len(line) <= width or width <= len(indent) + 20:
        return [line]
    return textwrap.wrap(
        line,
        width,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


BACKEND_TOPICS = {"ncu": "ncu", "CUPTI": "cupti", "PM sampling": "pm"}
"""Topics that say what a backend's own check says (topic -> backend id)."""


def fold_backend_topics(checks: Sequence[Check]) -> list[Check]:
    """The checks with each backend listed once, for a person to read.

    A topic of :data:`BACKEND_TOPICS` whose status is its backend's is folded into
    the backend's line: its detail added where it says more, its hint used where
    the backend has none. A topic that says otherwise than its backend stays.

    Raises:
        Nothing.
    """
    by_name = {check.name: check for check in checks}
    folded: dict[str, Check] = {}
    dropped: set[str] = set()
    for topic, backend_id in BACKEND_TOPICS.items():
        found = by_name.get(topic)
        backend = folded.get(f"{BACKEND_PREFIX}{backend_id}") or by_name.get(
            f"{BACKEND_PREFIX}{backend_id}"
        )
        if found is None or backend is None or found.status != backend.status:
            continue
        detail = backend.detail
        if found.detail and found.detail not in detail:
            detail = f"{detail}; {topic}: {found.detail}"
        folded[backend.name] = dataclasses.replace(
            backend, detail=detail, hint=backend.hint or found.hint
        )
        dropped.add(topic)
    return [
        folded.get(check.name, check) for check in checks if check.name not in dropped
    ]


def checks_to_json(checks: Sequence[Check]) -> list[dict[str, str]]:
    """Turn checks into JSON-ready dicts.

    Args:
        checks: the checks to convert.

    Returns:
        One ``{"name", "status", "detail", "hint"}`` dict per check, in order.
    """
    return [dataclasses.asdict(check) for check in checks]
