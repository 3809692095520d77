"""session/ is the one place a profile is assembled and run (issue 33).

The magic and nsight-python's API hand it what they parsed; no other module plans,
resolves notebook names, checks a baseline before a profile, takes a collector over
ranks or opens the store for a profile. Read from the source (an AST pass), so a
second assembly path fails here by name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nsight_lab.errors import OptionError
from nsight_lab.options import parse_options
from nsight_lab.session.resolve import notebook_path, resolve_in_notebook

PACKAGE = Path(__file__).resolve().parents[2] / "nsight_lab"

# (module, name) -> the modules outside session/ that may import it ("*": any name).
ASSEMBLY = {
    ("nsight_lab.plan", "make_plan"): (),
    ("nsight_lab.options.namespace", "*"): (),
    ("nsight_lab.distributed", "rank_collector"): (),
    ("nsight_lab.distributed", "follows"): (),
    ("nsight_lab.session.profiling", "*"): (),
    ("nsight_lab.session", "profile"): (),
    ("nsight_lab.session", "plan_profile"): (),
    # The CLI's baseline and compare commands check the names they are given.
    ("nsight_lab.analysis.baselines", "require_baseline"): ("nsight_lab.cli.",),
}
ENTRIES = ("nsight_lab.magic", "nsight_lab.api.kernel")
"""The entries that profile: they open no store of their own."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    ]


def test_only_the_session_assembles_a_profile() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if module.startswith("nsight_lab.session"):
            continue
        for imported in _imports(path):
            for (source, name), allowed in ASSEMBLY.items():
                if imported[0] != source or name not in {"*", imported[1]}:
                    continue
                if not (allowed and module.startswith(allowed)):
                    offenders.append(f"{module} imports {imported[0]}.{imported[1]}")
            if imported == ("nsight_lab.store.run_store", "RunStore") and (
                module.startswith(ENTRIES)
            ):
                offenders.append(f"{module} opens the store for a profile itself")
    assert offenders == []


def test_a_cells_options_are_resolved_in_its_namespace() -> None:
    def speed(duration_ns: float, n: int) -> float:
        return n / duration_ns

    def add(x: float, y: float) -> float:
        return x + y

    namespace = {"speed": speed, "add": add, "sizes": [(1, "a"), (2, "b")]}
    options = parse_options("--derive speed --combine add --configs-from n,tag=sizes")
    resolved = resolve_in_notebook(options, namespace)
    assert resolved.derive_functions == {"speed": speed}
    assert resolved.options.combine_fn is add
    assert resolved.config_list is not None
    assert resolved.config_list.names == ("n", "tag")
    assert list(resolved.config_list.values) == [
        {"n": 1, "tag": "a"},
        {"n": 2, "tag": "b"},
    ]
    assert resolved.notes == []


def test_a_name_the_notebook_lacks_is_one_line() -> None:
    with pytest.raises(OptionError, match=r"^--derive nope: no function named"):
        resolve_in_notebook(parse_options("--derive nope"), {})


def test_the_notebook_path_is_the_kernels_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert notebook_path({}) is None
    assert notebook_path({"__session__": "a.ipynb"}) == "a.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", "b.ipynb")
    assert notebook_path({}) == "b.ipynb"
