"""Each kind of user input raises its own error; OptionError only from options/.

Read from the source (an AST pass): a ``raise OptionError`` outside
``nsight_lab/options/`` would be an option check living elsewhere (issue 23).
"""

from __future__ import annotations

import ast
from pathlib import Path

from nsight_lab import errors

PACKAGE = Path(__file__).resolve().parent.parent / "nsight_lab"


def _raised_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name):
                names.add(exc.id)
    return names


def test_option_error_is_raised_only_by_the_options() -> None:
    raisers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "OptionError" in _raised_names(path)
    )
    assert raisers, "the options raise it"
    assert all(path.startswith("options/") for path in raisers), raisers


def test_every_input_error_is_one_the_magic_cli_and_server_catch() -> None:
    kinds = (
        errors.OptionError,
        errors.CommandError,
        errors.RequestError,
        errors.ArgumentError,
        errors.PlanError,
        errors.CellError,
        errors.OutputError,
        errors.QueryError,
        errors.BaselineError,
    )
    for kind in kinds:
        assert issubclass(kind, errors.InputError), kind
        assert issubclass(kind, errors.NsightLabError), kind
        assert issubclass(kind, ValueError), kind  # as OptionError was
    assert not issubclass(errors.PlanError, errors.OptionError)
