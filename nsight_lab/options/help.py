"""The options' texts for people: ``%nsight help`` and the README's options table.

Both are generated from :data:`~nsight_lab.options.table.OPTIONS` (choices asked
for when shown, defaults from the fields), so they cannot drift from the parser;
``python -m nsight_lab.options --markdown`` prints the table a test keeps equal to
README.md.
"""

from __future__ import annotations

from nsight_lab.options.option import FIELD_DEFAULTS
from nsight_lab.options.table import OPTIONS

_HELP_COLUMN = 24
"""Width of the syntax column of :func:`help_text`."""


def help_text() -> str:
    """The ``%%nsight --help`` text: one line per option of :data:`OPTIONS`.

    Each line is the flag and its value's syntax, then the choices, the help and the
    default (``%nsight help`` adds the line magic's commands after it).
    """
    usage = "%%nsight [options]".ljust(_HELP_COLUMN + 2)
    lines = [f"{usage}profile the annotated regions of this cell"]
    for option in OPTIONS:
        syntax = f"{option.flag} {option.metavar}".rstrip()
        text = option.help
        if option.choices is not None:
            text = f"{'|'.join(option.choices())}: {text}"
        default = option.default()
        if default is not None:
            text = f"{text} (default {default})"
        lines.append(f"  {syntax.ljust(_HELP_COLUMN)} {text}")
    return "\n".join(lines)


def _markdown_row(cells: tuple[str, str], widths: tuple[int, int]) -> str:
    return (
        "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
    )


def options_markdown() -> str:
    r"""The README's options table (Markdown, padded as prettier formats it).

    One row per option of :data:`OPTIONS`: the syntax (choices joined by ``\|``)
    and the meaning, with the default added where :meth:`Option.default` shows one.
    """
    rows: list[tuple[str, str]] = []
    for option in OPTIONS:
        value = (
            "\\|".join(option.choices())
            if option.choices is not None
            else option.metavar
        )
        syntax = f"`{option.flag} {value}`" if value else f"`{option.flag}`"
        meaning = option.meaning
        default = option.default()
        if default is not None:
            word = isinstance(FIELD_DEFAULTS[option.field], str)
            shown_default = f"`{default}`" if word else default
            meaning = f"{meaning} (default {shown_default})"
        rows.append((syntax, meaning))
    header = ("option", "meaning")
    widths = (
        max(len(header[0]), *(len(r[0]) for r in rows)),
        max(len(header[1]), *(len(r[1]) for r in rows)),
    )
    rule = ("-" * widths[0], "-" * widths[1])
    return "\n".join(_markdown_row(r, widths) for r in (header, rule, *rows))
