"""The point budget is defined once, read by Python and TypeScript (issue 33).

Its one definition is the default of ``maxPoints`` in ``schema/sidebar.json``. Python
reads it in ``nsight_lab/contract/points.py`` (``MAX_POINTS``), TypeScript imports the
schema in ``src/types.ts`` (``DEFAULT_SIDEBAR_SETTINGS``). It was once written in six
places (``views/live.py``, ``viewmodel/cache.py``, ``viewmodel/session.py``,
``server/handlers.py``, ``src/types.ts`` and the schema); these tests fail where a
second definition comes back:

- in Python, a ``MAX_..._POINTS`` name or a ``max_points`` parameter given a number,
  or the budget's number written in a module that speaks of the budget;
- in TypeScript, ``maxPoints``/``max_points``/``MAX_POINTS`` given a number, or the
  budget's number written in a file that speaks of it (tests aside);
- in ``schema/``, the number anywhere but ``maxPoints``'s default.

Nothing is imported from ``nsight_lab`` but the one module that reads the schema.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nsight_lab"
SCHEMA = ROOT / "schema" / "sidebar.json"
HOME = PACKAGE / "contract" / "points.py"
TYPES = ROOT / "src" / "types.ts"

# Names of the budget, Python's and TypeScript's.
BUDGET_WORD = re.compile(r"max_?\w*points", re.IGNORECASE)
BUDGET_NAME = re.compile(r"^MAX_(\w+_)?POINTS$")
# Other budgets that are not this one, each with its own name and number.
OTHER_BUDGETS = {
    # The pm sampler's series, averaged down to this many samples per run in the store.
    ("nsight_lab/backends/pm/series.py", "MAX_POINTS"),
}
# TypeScript: a budget name given a number; comments and strings left out first.
TS_ASSIGNED = re.compile(r"\b(?:maxPoints|max_points|MAX_\w*POINTS)\s*[:=]\s*[\d_]+\b")
TS_COMMENTS_STRINGS = re.compile(
    r"//[^\n]*|/\*.*?\*/|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"|`(?:\\.|[^`\\])*`",
    re.DOTALL,
)


def _budget() -> int:
    budget = json.loads(SCHEMA.read_text(encoding="utf-8"))["properties"]["maxPoints"][
        "default"
    ]
    assert isinstance(budget, int)
    return budget


def _number(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def _python_definitions(path: Path, budget: int) -> list[str]:
    """Where ``path`` defines the budget a second time (empty: it does not)."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    rel = path.relative_to(ROOT).as_posix()
    found: list[str] = []
    speaks = bool(BUDGET_WORD.search(text))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = target.id if isinstance(target, ast.Name) else ""
                if (
                    BUDGET_NAME.match(name)
                    and node.value is not None
                    and _number(node.value)
                    and (rel, name) not in OTHER_BUDGETS
                ):
                    found.append(f"{rel}:{node.lineno}: {name} = a number")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            defaulted = positional[len(positional) - len(args.defaults) :]
            pairs = list(zip(defaulted, args.defaults, strict=True))
            pairs += [
                (a, d)
                for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                if d
            ]
            found += [
                f"{rel}:{default.lineno}: max_points defaults to a number"
                for arg, default in pairs
                if arg.arg == "max_points" and _number(default)
            ]
        elif speaks and _number(node) and getattr(node, "value", None) == budget:
            found.append(f"{rel}:{node.lineno}: the budget's number {budget}")
    return found


def test_the_schema_holds_the_budget_once() -> None:
    budget = _budget()
    assert budget > 0
    schema_dir = ROOT / "schema"
    seen = []
    for path in sorted(schema_dir.glob("*.json")):

        def walk(value: object, where: str, path: Path = path) -> None:
            if isinstance(value, dict):
                for key, item in value.items():
                    walk(item, f"{where}/{key}", path)
            elif isinstance(value, list):
                for k, item in enumerate(value):
                    walk(item, f"{where}/{k}", path)
            elif value == budget and not isinstance(value, bool):
                seen.append(f"{path.name}:{where}")

        walk(json.loads(path.read_text(encoding="utf-8")), "")
    assert seen == ["sidebar.json:/properties/maxPoints/default"]


def test_python_reads_the_budget_from_the_schema() -> None:
    from nsight_lab.contract.points import MAX_POINTS, SIDEBAR_SCHEMA

    assert _budget() == MAX_POINTS
    assert SIDEBAR_SCHEMA.resolve() == SCHEMA.resolve()


def test_no_python_module_defines_the_budget_again() -> None:
    budget = _budget()
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        if "labextension" not in path.parts
        for line in _python_definitions(path, budget)
    ]
    assert found == [], "the point budget is nsight_lab.contract.points.MAX_POINTS"


def test_typescript_reads_the_budget_from_the_schema() -> None:
    text = TYPES.read_text(encoding="utf-8")
    assert re.search(r"import \w+ from '\.\./schema/sidebar\.json';", text)
    assert re.search(r"maxPoints: \w+\.maxPoints\.default,", text)


def test_no_typescript_file_defines_the_budget_again() -> None:
    budget = _budget()
    number = re.compile(rf"(?<![\w.]){str(budget)[0]}_?{str(budget)[1:]}(?![\w.])")
    found = []
    for path in sorted((ROOT / "src").rglob("*.ts*")):
        if "__tests__" in path.parts:
            continue
        code = TS_COMMENTS_STRINGS.sub("''", path.read_text(encoding="utf-8"))
        rel = path.relative_to(ROOT).as_posix()
        found += [f"{rel}: {m.group(0)}" for m in TS_ASSIGNED.finditer(code)]
        if BUDGET_WORD.search(code):
            found += [f"{rel}: {m.group(0)}" for m in number.finditer(code)]
    assert found == [], "the point budget is schema/sidebar.json's maxPoints default"
