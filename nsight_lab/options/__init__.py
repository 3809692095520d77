"""Parse the ``%%nsight`` option line into a frozen :class:`ProfileOptions`.

The options are declared once, in :data:`OPTIONS`: each entry's flag, value syntax,
reader, choices and texts. The parser (:func:`parse_options`), the ``%nsight help`` text
(:func:`help_text`) and the README's options table (:func:`options_markdown`, checked
against README.md by a test) are all produced from it; the defaults are those of
:class:`ProfileOptions`' fields. ``python -m nsight_lab.options --markdown`` prints the
README table.

All validation of user input happens here: every malformed option raises
:class:`~nsight_lab.errors.OptionError` with one line that names the option, quotes the
bad value (at most :data:`ECHO_CHARS` characters) and says what is accepted. Nothing
downstream re-checks the syntax.

One module per job: :mod:`~nsight_lab.options.profile` (:class:`ProfileOptions`, the
defaults), :mod:`~nsight_lab.options.values` (the value readers and limits),
:mod:`~nsight_lab.options.names` (reserved names), :mod:`~nsight_lab.options.table`
(:data:`OPTIONS`), :mod:`~nsight_lab.options.parse` (the line parser) and
:mod:`~nsight_lab.options.help` (the help and the README table). This package
re-exports their public names.
"""

from __future__ import annotations

from nsight_lab.errors import OptionError
from nsight_lab.options.help import help_text, options_markdown
from nsight_lab.options.kernel_names import split_kernel_names
from nsight_lab.options.names import check_bindings, reserved_name
from nsight_lab.options.option import Option
from nsight_lab.options.parse import parse_options
from nsight_lab.options.profile import (
    DEFAULT_WARMUP,
    CombineMode,
    ProfileOptions,
    ThermalSettings,
)
from nsight_lab.options.table import KNOWN_OPTIONS, OPTIONS, read_option
from nsight_lab.options.values import (
    BUILTIN_DERIVED,
    parse_value,
    shown,
)
from nsight_lab.text.numbers import whole_number

__all__ = [
    "BUILTIN_DERIVED",
    "DEFAULT_WARMUP",
    "KNOWN_OPTIONS",
    "OPTIONS",
    "CombineMode",
    "Option",
    "OptionError",
    "ProfileOptions",
    "ThermalSettings",
    "check_bindings",
    "help_text",
    "options_markdown",
    "parse_options",
    "parse_value",
    "read_option",
    "reserved_name",
    "shown",
    "split_kernel_names",
    "whole_number",
]
