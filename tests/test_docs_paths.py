"""The docs name only what exists, so they cannot rot silently (issues 23 and 33).

Checked in ``docs/architecture.md``, ``README.md`` and every docstring of
``nsight_lab/`` (a module's, a class's, a function's, an attribute's):

- every ``nsight_lab/...`` path is a file or folder of the checkout;
- every dotted ``nsight_lab.x.y`` name is a module, or a module and a name it binds at
  its top level (``nsight_lab.store.writer.StoreWriter``, ``nsight_lab.__version__``);
- every other path in code (a word with a ``/`` or a file extension, such as
  ``backends/pm/sampler.py``, ``plan.py`` or ``src/model/``) is found from the
  checkout's root or from ``nsight_lab/`` (in the README, those with a ``/``; in a
  docstring, also from its module's folder);
- every document named, a ``*.md`` file or ``NAME part N``/``NAME section N``, is one
  of the checkout's (``DESIGN part 6.7`` named one it does not have);
- in a docstring, every relative reference (``:mod:`.derive```,
  ``:func:`~.group_ranks.follow```) names a module of its package, and a name it
  binds.

And ``docs/architecture.md``'s layer table is :data:`LAYERS` of
``scripts/architecture.py``, the order CI enforces (``tests/test_architecture.py``).
After changing ``LAYERS``, ``python tests/test_docs_paths.py --write`` rewrites that
table (aligned as prettier aligns it).

Nothing is imported from ``nsight_lab``: modules are found as files and their names
read with :mod:`ast`, so the check runs without the GPU stack.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nsight_lab"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DOCS = (ARCHITECTURE, ROOT / "README.md")
BEGIN = "<!-- layers: begin (generated from LAYERS in scripts/architecture.py) -->"
END = "<!-- layers: end -->"

# ``nsight_lab/a/b.py`` and ``nsight_lab.a.b`` wherever they appear (prose or code).
PACKAGE_PATH = re.compile(r"(?<![\w./-])nsight_lab/[\w./-]*")
DOTTED = re.compile(r"(?<![\w./-])nsight_lab(?:\.\w+)+")
# A word of a code span or block that names a file or folder.
PATH_WORD = re.compile(r"^[\w.-]+(?:/[\w.-]+)*/?$")
EXTENSIONS = (
    ".py",
    ".ts",
    ".tsx",
    ".json",
    ".md",
    ".sqlite",
    ".png",
    ".sh",
    ".toml",
    ".ipynb",
    ".css",
)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A document by file name (``benchmarks/README.md``, ``../shared/FACTS.md``) or by its
# parts (``DESIGN part 6.7``, ``STYLE section 2``).
MARKDOWN = re.compile(r"(?<![\w/.-])(?:\.\./)*[\w./-]*\w\.md\b")
DOCUMENT_PART = re.compile(r"\b([A-Z][A-Z_]{2,})(?:\.md)? (?:part|section) \d")
# A Sphinx role's relative target: :mod:`.derive`, :func:`~.group_ranks.follow`.
RELATIVE_ROLE = re.compile(r":\w+:`~?(\.+[\w.]*\w)`")
# Made by the build or a run, git-ignored: named by the docs, absent from a checkout.
GENERATED = ("nsight_lab/_version.py", "nsight_lab/static", "ui-tests/test-output")
# Files of a user's or another project's, named as such (not the checkout's).
ELSEWHERE = ("jupyter_server_config.py",)


def _load_architecture() -> ModuleType:
    """``scripts/architecture.py``, the module object the architecture test uses too."""
    if "architecture" in sys.modules:
        return sys.modules["architecture"]
    spec = importlib.util.spec_from_file_location(
        "architecture", ROOT / "scripts" / "architecture.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["architecture"] = module
    spec.loader.exec_module(module)
    return module


# -- paths and modules --------------------------------------------------------------


def module_file(dotted: str, root: Path = ROOT) -> Path | None:
    """The file of module ``a.b.c`` under ``root`` (a package's ``__init__.py``)."""
    base = root.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    if dotted.endswith(".__init__"):
        init = base.with_suffix(".py")
        return init if init.is_file() else None
    return None


@cache
def bound_names(path: Path) -> frozenset[str]:
    """The names a module binds at its top level, or makes on demand.

    Definitions, assignments and imports (``if``/``try`` bodies included), its
    ``__all__``, and, where it has a module ``__getattr__``, every string it holds.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    lazy = False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            lazy = lazy or node.name == "__getattr__"
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    strings = {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    if lazy:
        names.update(strings)
    return frozenset(names)


def dotted_problem(dotted: str, root: Path = ROOT) -> str | None:
    """Why ``dotted`` names nothing in the checkout, or None when it does.

    Its longest prefix that is a module must exist, and the next part (if any) must be
    a name that module binds; deeper parts (a class's method) are not followed.
    """
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:end]), root)
        if path is None:
            continue
        if end == len(parts) or parts[end] in bound_names(path):
            return None
        return f"{'.'.join(parts[:end])} has no {parts[end]!r}"
    return "no such module"


def path_exists(word: str, root: Path = ROOT) -> bool:
    """``word`` is a file or folder from the checkout's root or from ``nsight_lab/``."""
    name = word.rstrip("/")
    if name in ELSEWHERE or any(
        path == g or path.startswith(f"{g}/")
        for path in (name, f"nsight_lab/{name}")
        for g in GENERATED
    ):
        return True
    return any((base / name).exists() for base in (root, root / "nsight_lab"))


def code_words(text: str) -> list[str]:
    """The words of every code span and fenced block, punctuation around them cut."""
    words: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        chunks = [line] if fenced else CODE_SPAN.findall(line)
        for chunk in chunks:
            words.extend(w.strip(",;:()[]'\"*").rstrip(".") for w in chunk.split())
    return [w for w in words if w]


def is_path_word(word: str) -> bool:
    """A word that names a file or folder: ``a/b/``, ``a/b.py``, ``plan.py``."""
    if not PATH_WORD.match(word) or word.startswith((".", "/")) or "//" in word:
        return False
    return word.endswith(("/", *EXTENSIONS))


def in_checkout(word: str, bases: tuple[Path, ...], root: Path = ROOT) -> bool:
    """``word`` is a file or folder of the checkout, found from one of ``bases``."""
    for base in bases:
        path = (base / word.rstrip("/")).resolve()
        if path.is_relative_to(root.resolve()) and path.exists():
            return True
    return False


def missing_documents(
    text: str, root: Path = ROOT, here: Path | None = None
) -> list[str]:
    """The documents ``text`` names that the checkout does not have.

    A ``*.md`` file is looked for from the root, ``nsight_lab/`` and ``here``, inside
    the checkout only; ``NAME part N`` needs ``NAME.md`` at the root or in ``docs/``.
    """
    bases = (root, root / "nsight_lab", *(() if here is None else (here,)))
    missing = [
        f"{word}: no such document in the checkout"
        for word in MARKDOWN.findall(text)
        if not in_checkout(word, bases, root)
    ]
    missing.extend(
        f"{name}: no such document in the checkout ({name}.md)"
        for name in DOCUMENT_PART.findall(text)
        if not any((base / f"{name}.md").is_file() for base in (root, root / "docs"))
    )
    return missing


def missing_names(
    text: str, root: Path = ROOT, *, bare: bool = True, here: Path | None = None
) -> list[str]:
    """Every path, module or document ``text`` names that the checkout does not have.

    With ``bare=False`` a file name without a folder (``ui_scale.json``, named after
    its folder in the README's prose) is not looked for; ``here`` is one more folder
    to find paths from (a docstring's module's).
    """
    missing: list[str] = missing_documents(text, root, here)
    for match in PACKAGE_PATH.findall(text):
        path = match.rstrip(".")
        if not (root / path).exists() and path.rstrip("/") not in GENERATED:
            missing.append(f"{path}: no such file or folder")
    for dotted in DOTTED.findall(text):
        problem = dotted_problem(dotted, root)
        if problem:
            missing.append(f"{dotted}: {problem}")
    for word in code_words(text):
        if word.startswith("nsight_lab"):
            continue  # checked above
        if not bare and "/" not in word:
            continue
        if word.endswith(".md"):
            continue  # checked above, as a document
        if is_path_word(word) and not (
            path_exists(word, root) or (here is not None and (here / word).exists())
        ):
            missing.append(f"{word}: neither under the root nor under nsight_lab/")
    return sorted(set(missing))


# -- docstrings ---------------------------------------------------------------------


def docstrings(path: Path) -> list[tuple[int, str]]:
    """Every docstring of a module (its own, its classes', functions', attributes').

    Attribute docstrings are the string statements after an assignment.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]


def relative_problem(target: str, module: str, root: Path = ROOT) -> str | None:
    """Why a relative reference of ``module`` names nothing (None when it does)."""
    dots = len(target) - len(target.lstrip("."))
    package = module.split(".")[:-1]  # a package's __init__: the package itself
    base = package[: len(package) - (dots - 1)] if dots > 1 else package
    rest = target.lstrip(".")
    dotted = ".".join([*base, rest]) if rest else ".".join(base)
    problem = dotted_problem(dotted, root)
    return None if problem is None else f"{target} ({dotted}): {problem}"


def docstring_problems(root: Path = ROOT) -> list[str]:
    """Every path, module or document a docstring of ``nsight_lab/`` names wrongly."""
    problems: list[str] = []
    for path in sorted((root / "nsight_lab").rglob("*.py")):
        if "labextension" in path.parts:
            continue
        relative = path.relative_to(root)
        module = ".".join(relative.with_suffix("").parts)
        for line, text in docstrings(path):
            where = f"{relative}:{line}"
            problems.extend(
                f"{where}: {m}" for m in missing_names(text, root, here=path.parent)
            )
            for target in RELATIVE_ROLE.findall(text):
                problem = relative_problem(target, module, root)
                if problem:
                    problems.append(f"{where}: {problem}")
    return problems


# -- the layer table ----------------------------------------------------------------


def _generated(prefix: str) -> bool:
    """``nsight_lab._version``: a module the build writes (see :data:`GENERATED`)."""
    return prefix.replace(".", "/") + ".py" in GENERATED


def _shown(prefix: str) -> str:
    """A prefix as the doc shows it: ``text/`` (a package) or ``plan.py``."""
    rest = prefix.removeprefix("nsight_lab.")
    path = PACKAGE.joinpath(*rest.split("."))
    return f"`{rest.replace('.', '/')}/`" if path.is_dir() else f"`{rest}.py`"


def layer_rows(layers: tuple[tuple[str, tuple[str, ...]], ...]) -> list[list[str]]:
    """One row per layer, bottom first: its number and name, what it holds, its imports.

    A layer lists only the prefixes the checkout has (``LAYERS`` also keeps the names
    modules had before issue 23 moved them, for the "before" figures).
    """
    rows = [["layer", "packages and root modules", "may import"]]
    for index, (name, prefixes) in enumerate(layers):
        present = [p for p in prefixes if module_file(p) is not None or _generated(p)]
        below = [n for n, _ in layers[:index]]
        may = ", ".join([name, *reversed(below)])
        rows.append(
            [f"{index + 1}. {name}", ", ".join(_shown(p) for p in present), may]
        )
    return rows


def render_table(rows: list[list[str]]) -> str:
    """A markdown table aligned as prettier aligns it (``jlpm prettier`` keeps it)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "| "
        + " | ".join(c.ljust(w) for c, w in zip(rows[0], widths, strict=True))
        + " |"
    ]
    lines.append("| " + " | ".join("-" * w for w in widths) + " |")
    lines.extend(
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows[1:]
    )
    return "\n".join(lines)


def table_cells(block: str) -> list[list[str]]:
    """A markdown table's cells, stripped, without its separator line."""
    rows = []
    for line in block.strip().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(set(c) <= {"-", ":"} for c in cells):
            continue
        rows.append(cells)
    return rows


def doc_layer_block(text: str) -> str:
    """What ``docs/architecture.md`` holds between the layer table's markers."""
    if BEGIN not in text or END not in text:
        message = (
            f"docs/architecture.md lost its layer table's markers ({BEGIN!r} ... "
            f"{END!r}): put them back and run python tests/test_docs_paths.py --write"
        )
        raise AssertionError(message)
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def write_layer_table() -> None:
    """Rewrite the layer table of ``docs/architecture.md`` from ``LAYERS``."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    old = doc_layer_block(text)
    table = render_table(layer_rows(_load_architecture().LAYERS))
    ARCHITECTURE.write_text(
        text.replace(BEGIN + old + END, f"{BEGIN}\n\n{table}\n\n{END}"),
        encoding="utf-8",
    )


# -- the tests ----------------------------------------------------------------------


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_path_and_module_the_doc_names_exists(doc: Path) -> None:
    # docs/architecture.md writes every file with its folder; the README names some
    # by their file name after naming the folder.
    missing = missing_names(doc.read_text(encoding="utf-8"), bare=doc == ARCHITECTURE)
    assert missing == [], f"{doc.relative_to(ROOT)} names what is not there: {missing}"


def test_every_path_module_and_document_a_docstring_names_exists() -> None:
    problems = docstring_problems()
    assert problems == [], "docstrings name what is not there:\n" + "\n".join(problems)


def test_the_layer_table_is_layers_of_the_architecture_check() -> None:
    block = doc_layer_block(ARCHITECTURE.read_text(encoding="utf-8"))
    expected = layer_rows(_load_architecture().LAYERS)
    assert table_cells(block) == expected, (
        "docs/architecture.md's layer table differs from LAYERS in "
        "scripts/architecture.py: run python tests/test_docs_paths.py --write"
    )


def test_every_layer_in_the_table_holds_something() -> None:
    # A layer whose every prefix moved away would render empty: LAYERS needs updating.
    rows = layer_rows(_load_architecture().LAYERS)[1:]
    assert [row[0] for row in rows if not row[1]] == []


def test_every_package_and_root_module_has_its_line() -> None:
    # Section 3 of docs/architecture.md: one line per package (and root module).
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## 3.", 1)[1].split("\n## 4.", 1)[0]
    assert unnamed(section) == [], "add a line to docs/architecture.md's section 3"


def unnamed(section: str) -> list[str]:
    """The packages and root modules of ``nsight_lab/`` that ``section`` never names."""
    names = [
        f"{p.name}/" if p.is_dir() else p.name
        for p in sorted(PACKAGE.iterdir())
        if (p.is_dir() and (p / "__init__.py").is_file())
        or (p.suffix == ".py" and p.name not in {"__init__.py", "_version.py"})
    ]
    return [name for name in names if f"`{name}`" not in section]


# The check itself, on small texts: each part can fail.


def test_a_missing_package_path_is_named() -> None:
    text = "See `nsight_lab/options/table.py` and nsight_lab/no_such/module.py."
    assert missing_names(text) == [
        "nsight_lab/no_such/module.py: no such file or folder"
    ]


def test_a_missing_module_or_name_is_named() -> None:
    text = (
        "nsight_lab.store.writer.StoreWriter, nsight_lab.__version__, "
        "nsight_lab.contract.records, nsight_lab.store.nowhere, "
        "nsight_lab.store.writer.NoSuchWriter."
    )
    assert missing_names(text) == [
        "nsight_lab.store.nowhere: nsight_lab.store has no 'nowhere'",
        (
            "nsight_lab.store.writer.NoSuchWriter: nsight_lab.store.writer has no "
            "'NoSuchWriter'"
        ),
    ]


def test_relative_paths_in_code_are_found_from_the_root_or_the_package() -> None:
    text = (
        "`backends/pm/sampler.py`, `src/model/`, `tests/test_wire.py`, `text/html`, "
        "`application/vnd.nsight-lab.session+json`, `GET sessions/<id>`\n"
        "```\noptions/ --> plan.py --> backends/gone.py\n```\n"
        "`store/oldname.py` and `magic.py`"
    )
    assert missing_names(text) == [
        "backends/gone.py: neither under the root nor under nsight_lab/",
        "magic.py: neither under the root nor under nsight_lab/",
        "store/oldname.py: neither under the root nor under nsight_lab/",
    ]
    # The README's way: a bare file name after its folder is not looked for.
    assert missing_names(text, bare=False) == [
        "backends/gone.py: neither under the root nor under nsight_lab/",
        "store/oldname.py: neither under the root nor under nsight_lab/",
    ]


def test_a_document_the_checkout_lacks_is_named() -> None:
    text = (
        "(DESIGN part 6.7), ``benchmarks/README.md``, docs/architecture.md, "
        "(``../shared/device/FACTS.md``), STYLE section 2, FACTS.md"
    )
    assert missing_names(text) == [
        "../shared/device/FACTS.md: no such document in the checkout",
        "DESIGN: no such document in the checkout (DESIGN.md)",
        "FACTS.md: no such document in the checkout",
        "STYLE: no such document in the checkout (STYLE.md)",
    ]


def test_a_docstring_names_paths_from_its_folder_and_relative_modules() -> None:
    here = PACKAGE / "results"
    assert missing_names("``frame.py`` and ``gone.py``", here=here) == [
        "gone.py: neither under the root nor under nsight_lab/"
    ]
    module = "nsight_lab.results.__init__"
    assert relative_problem(".frame", module) is None
    assert relative_problem(".frame.to_dataframe", module) is None
    assert relative_problem("..stats.summarize", "nsight_lab.results.frame") is None
    assert relative_problem(".nowhere", module) == (
        ".nowhere (nsight_lab.results.nowhere): nsight_lab.results has no 'nowhere'"
    )


def test_a_package_without_its_line_is_named() -> None:
    missing = unnamed("`plan.py` and `store/`")
    assert "options/" in missing
    assert "regions.py" in missing
    assert "plan.py" not in missing
    assert "store/" not in missing


def test_a_changed_layer_order_fails_the_table() -> None:
    layers = _load_architecture().LAYERS
    swapped = (layers[1], layers[0], *layers[2:])
    assert layer_rows(swapped) != layer_rows(layers)
    block = render_table(layer_rows(swapped))
    assert table_cells(block) == layer_rows(swapped)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_docs_paths.py --write  (rewrites the table)")
    write_layer_table()
