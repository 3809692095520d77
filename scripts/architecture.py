"""nsight-lab's structure, read from its own source: layers, imports, sizes.

An AST pass over ``nsight_lab/`` (nothing is imported, so it runs without the GPU
stack): which module imports which (at the top, inside functions, or for types only;
``importlib.import_module``/``__import__`` of a string the source spells out counted
as an import, and ``from package import name`` as an import of the package's
``__init__``), the runtime import cycles (function-local imports counted), the arrows
that point up
the layer order, the modules at the package root, module and function sizes, imports
of another module's ``_private`` names, library code that prints, and module-level
mutable state that functions change (process-wide singletons).

``tests/test_architecture.py`` holds CI to the limits; ``python scripts/architecture.py
--json F --png F`` writes the figures the issue asks for (before/after).

A module or function over its size limit passes when its docstring has a line that
starts with ``Size:`` giving the reason (the issue's "one-line reason").
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "nsight_lab"
MODULE_LINES = 400
FUNCTION_LINES = 60
ROOT_MODULES = 16
SIZE_REASON = "Size:"

# The layer order, bottom first: a module may import its own layer and those below.
# A module's layer is that of its longest matching prefix.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "contract",
        (
            "nsight_lab._version",
            "nsight_lab.errors",
            "nsight_lab.paths",
            "nsight_lab.gc_freeze",
            "nsight_lab.contract",
            "nsight_lab.text",
            "nsight_lab.stats",
            "nsight_lab.nsight_modules",
            # The same modules' names before issue 23 moved them (for the "before" figures).
            "nsight_lab.records",
            "nsight_lab.safetext",
            "nsight_lab.frametext",
            "nsight_lab.units",
        ),
    ),
    (
        "domain",
        (
            "nsight_lab.options",
            "nsight_lab.regions",
            "nsight_lab.kernels",
            "nsight_lab.roofline",
            "nsight_lab.gpu",
            "nsight_lab.host_speed",
            "nsight_lab.store",
        ),
    ),
    (
        "measure",
        (
            "nsight_lab.plan",
            "nsight_lab.backends",
            "nsight_lab.runner",
            "nsight_lab.distributed",
        ),
    ),
    (
        "analysis",
        (
            "nsight_lab.results",
            "nsight_lab.analysis",
            "nsight_lab.figures",
            "nsight_lab.viewmodel",
            "nsight_lab.compare",
            "nsight_lab.baselines",
            "nsight_lab.mpl_figure",
        ),
    ),
    ("views", ("nsight_lab.views", "nsight_lab.session")),
    (
        "entry",
        (
            "nsight_lab.api",
            "nsight_lab.magic",
            "nsight_lab.cli",
            "nsight_lab.doctor",
            "nsight_lab.history",
            "nsight_lab.server",
            "nsight_lab.nsight_shim",
            "nsight_lab.__init__",
        ),
    ),
)

# Modules whose job is to write to the terminal or a notebook's output.
PRINTERS = ("nsight_lab.cli", "nsight_lab.magic", "nsight_lab.options.__main__")

# Heavy or optional bindings that load only when a path needs them (PLC0415's
# named exceptions): importing them inside a function is the point.
LAZY_OK = (
    "torch",
    "cupti",
    "ncu_report",
    "pynvml",
    "plotly",
    "matplotlib",
    "kaleido",
    "psycopg",
    "IPython",
    "ipywidgets",
    "anywidget",
    "pandas",
    "numpy",
    "triton",
    "nsight",
)

# Calls that import the module their first argument names (``importlib.import_module``,
# ``import_module`` imported by name, the builtin ``__import__``).
IMPORT_CALLS = frozenset({"import_module", "__import__"})


@dataclass
class Import:
    """One import of a ``nsight_lab`` module by another."""

    source: str
    target: str
    names: tuple[str, ...]
    lineno: int
    kind: str  # "top", "local" (inside a function) or "types" (TYPE_CHECKING)
    by_string: bool = False  # importlib.import_module / __import__ of a string
    package: str = ""  # the ``__init__`` a ``from package import ...`` reads


@dataclass
class Module:
    """What the pass reads from one file."""

    name: str
    path: Path
    lines: int
    docstring: str
    imports: list[Import] = field(default_factory=list)
    long_functions: list[tuple[str, int, int]] = field(default_factory=list)
    prints: list[int] = field(default_factory=list)
    singletons: list[str] = field(default_factory=list)
    unresolved: list[int] = field(default_factory=list)
    """Lines of string imports whose target the source does not spell out."""


def module_name(path: Path, root: Path = ROOT) -> str:
    """``nsight_lab/a/b.py`` -> ``nsight_lab.a.b`` (a package is its ``__init__``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts)


def layer_of(name: str) -> int:
    """The index of ``name``'s layer in :data:`LAYERS` (-1 when it has none)."""
    best, best_len = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(
                prefix
            ) > best_len:
                best, best_len = index, len(prefix)
    return best


def _resolve(
    module: str, node: ast.ImportFrom | ast.Import, known: set[str]
) -> list[tuple[str, tuple[str, ...]]]:
    """The ``nsight_lab`` modules one import statement loads, with the names taken."""
    out: list[tuple[str, tuple[str, ...]]] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] == PACKAGE:
                out.append((_known(alias.name, known), ()))
        return out
    base = _from_base(module, node)
    if base.split(".")[0] != PACKAGE:
        return out
    plain: list[str] = []
    for alias in node.names:
        candidate = f"{base}.{alias.name}"
        if _known(candidate, known) in known and candidate in known | {
            k.removesuffix(".__init__") for k in known
        }:
            out.append((_known(candidate, known), ()))
        else:
            plain.append(alias.name)
    if plain:
        out.append((_known(base, known), tuple(plain)))
    return out


def _from_base(module: str, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` statement of ``module`` imports from."""
    base = node.module or ""
    if node.level:
        package = module.split(".")[:-1]  # a package's __init__ too
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base]) if base else ".".join(package)
    return base


def _from_package(
    module: str, node: ast.ImportFrom | ast.Import, known: set[str]
) -> str:
    """The ``__init__`` a ``from package import ...`` reads (else ``""``)."""
    if isinstance(node, ast.Import):
        return ""
    init = f"{_from_base(module, node)}.__init__"
    return init if init in known else ""


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """The module's top-level names bound once to a string literal."""
    values: dict[str, str] = {}
    seen: set[str] = set()
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if target.id in seen:
                values.pop(target.id, None)
                continue
            seen.add(target.id)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                values[target.id] = value.value
    return values


def _text(node: ast.expr, names: dict[str, str]) -> str | None:
    """The string ``node`` always evaluates to, where the source spells it out.

    A literal, a name in ``names`` (the module's string constants and ``__name__``),
    an f-string or a ``+`` of those; None for anything else.
    """
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.conversion not in {-1, ord("s")} or value.format_spec:
                    return None
                value = value.value  # noqa: PLW2901
            part = _text(value, names)
            if part is None:
                return None
            parts.append(part)
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, names), _text(node.right, names)
        return None if left is None or right is None else left + right
    return None


def _is_import_call(func: ast.expr) -> bool:
    """``importlib.import_module``, ``import_module`` or ``__import__``."""
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in IMPORT_CALLS


def _string_import(node: ast.Call) -> ast.expr | None:
    """The argument naming the module ``node`` imports, if it imports one.

    ``import_module(name)`` and ``__import__(name)``, and a call handing
    ``import_module`` on with its arguments (``Thread(target=import_module,
    args=(name,))``).
    """
    if _is_import_call(node.func):
        return node.args[0] if node.args else None
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    target, args = keywords.get("target"), keywords.get("args")
    if target is not None and _is_import_call(target) and isinstance(args, ast.Tuple):
        return args.elts[0] if args.elts else None
    return None


def _known(name: str, known: set[str]) -> str:
    if name in known:
        return name
    if f"{name}.__init__" in known:
        return f"{name}.__init__"
    return name


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Walker(ast.NodeVisitor):
    def __init__(
        self, module: Module, known: set[str], constants: dict[str, str]
    ) -> None:
        self.module = module
        self.known = known
        package = module.name.removesuffix(".__init__")
        self.names = {**constants, "__name__": package}
        self.depth = 0
        self.types = 0
        self.mutable: set[str] = set()
        self.changed: set[str] = set()
        self.classes: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self.types += 1
            for child in node.body:
                self.visit(child)
            self.types -= 1
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        doc = ast.get_docstring(node) or ""
        if length > FUNCTION_LINES and not _has_reason(doc):
            self.module.long_functions.append((node.name, node.lineno, length))
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = _function  # noqa: N815
    visit_AsyncFunctionDef = _function  # noqa: N815

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        kind = "types" if self.types else ("local" if self.depth else "top")
        package = _from_package(self.module.name, node, self.known)
        for target, names in _resolve(self.module.name, node, self.known):
            if target == self.module.name:
                continue
            self.module.imports.append(
                Import(self.module.name, target, names, node.lineno, kind, package=package)
            )

    visit_Import = _import  # noqa: N815
    visit_ImportFrom = _import  # noqa: N815

    def _import_by_string(self, node: ast.Call) -> None:
        argument = _string_import(node)
        if argument is None:
            return
        target = _text(argument, self.names)
        if target is None:
            self.module.unresolved.append(node.lineno)
            return
        if target.split(".")[0] != PACKAGE:
            return
        target = _known(target, self.known)
        if target == self.module.name:
            return
        kind = "types" if self.types else ("local" if self.depth else "top")
        self.module.imports.append(
            Import(self.module.name, target, (), node.lineno, kind, by_string=True)
        )

    def visit_Call(self, node: ast.Call) -> None:
        self._import_by_string(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print":
            self.module.prints.append(node.lineno)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "write"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr in {"stderr", "stdout"}
        ):
            self.module.prints.append(node.lineno)
        if (
            self.depth
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.attr
            in {"append", "update", "setdefault", "clear", "pop", "add", "extend"}
        ):
            self.changed.add(func.value.id)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        # A function that rebinds a module name keeps process-wide state in it.
        self.mutable.update(node.names)
        self.changed.update(node.names)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if self.depth == 0 and not _frozen(node):
            self.classes.add(node.name)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.depth == 0 and isinstance(
            node.value, ast.Dict | ast.List | ast.Set | ast.Call
        ):
            value = node.value
            mutable = not isinstance(value, ast.Call) or (
                isinstance(value.func, ast.Name)
                and value.func.id in {"dict", "list", "set", "defaultdict", "OrderedDict"}
            )
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in self.classes
            ):
                # One instance of a changeable class of this module, shared by all.
                self.changed.update(
                    t.id for t in node.targets if isinstance(t, ast.Name)
                )
                mutable = True
            if mutable:
                self.mutable.update(
                    t.id for t in node.targets if isinstance(t, ast.Name)
                )
        if self.depth:
            for target in node.targets:
                if isinstance(target, ast.Subscript) and isinstance(
                    target.value, ast.Name
                ):
                    self.changed.add(target.value.id)
        self.generic_visit(node)


def _frozen(node: ast.ClassDef) -> bool:
    """A frozen dataclass, a NamedTuple, an Enum or a Protocol: nothing to change."""
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call) and any(
            k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value
            for k in deco.keywords
        ):
            return True
    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
    return bool(bases & {"NamedTuple", "Enum", "IntEnum", "StrEnum", "Protocol", "Exception"})


def _has_reason(doc: str) -> bool:
    return any(line.strip().startswith(SIZE_REASON) for line in doc.splitlines())


def read_modules(root: Path = ROOT) -> dict[str, Module]:
    """Every module of the package, read by the AST pass."""
    files = sorted((root / PACKAGE).rglob("*.py"))
    files = [f for f in files if "labextension" not in f.parts]
    known = {module_name(f, root) for f in files}
    modules: dict[str, Module] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        module = Module(
            name=module_name(path, root),
            path=path,
            lines=len(text.splitlines()),
            docstring=ast.get_docstring(tree) or "",
        )
        walker = _Walker(module, known, _string_constants(tree))
        walker.visit(tree)
        module.singletons = sorted(walker.mutable & walker.changed)
        modules[module.name] = module
    return modules


def loads(
    imp: Import, modules: dict[str, Module], *, packages: bool = True
) -> set[str]:
    """The modules an import names: its target, and the package it reads from.

    ``from a.b import x`` reads ``a.b``'s namespace, so it depends on
    ``a/b/__init__.py``, also from inside ``a.b`` and where ``x`` is a submodule.
    With ``packages``, also the packages the import runs: importing ``a.b.c`` runs
    ``a/b/__init__.py`` first, unless the importer is in ``a.b`` itself (then that
    ``__init__`` is already running).
    """
    out = {imp.target} if imp.target in modules else set()
    if imp.package:
        out.add(imp.package)
    parts = imp.target.removesuffix(".__init__").split(".")
    for end in range(2, len(parts) if packages else 0):
        package = ".".join(parts[:end])
        init = f"{package}.__init__"
        if init in modules and not imp.source.startswith(f"{package}."):
            out.add(init)
    out.discard(imp.source)
    return out


def runtime_edges(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the modules it runs when it runs (top and function-local imports).

    String imports count, and so do the package ``__init__`` files an import runs.
    """
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        for imp in module.imports:
            if imp.kind != "types":
                edges[module.name] |= loads(imp, modules)
    return edges


def named_edges(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the modules it names in any import, type-only ones included.

    The packages an import merely runs on the way are left out: a package whose
    ``__init__`` re-exports its modules for the type checker only (a lazy
    ``__getattr__``) is not a cycle with every module that imports one of them.
    """
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        for imp in module.imports:
            edges[module.name] |= loads(imp, modules, packages=False)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def upward(modules: dict[str, Module]) -> list[Import]:
    """Imports (any kind) from a lower layer to a higher one."""
    out = []
    for module in modules.values():
        for imp in module.imports:
            if imp.target in modules and layer_of(imp.target) > layer_of(imp.source):
                out.append(imp)
    return out


def private_imports(modules: dict[str, Module]) -> list[Import]:
    """``from a import _b`` where ``a`` is another module."""
    return [
        imp
        for module in modules.values()
        for imp in module.imports
        if any(n.startswith("_") and not n.startswith("__") for n in imp.names)
    ]


def root_modules(modules: dict[str, Module]) -> list[str]:
    """The modules directly under ``nsight_lab/`` (packages not counted)."""
    return sorted(
        name
        for name in modules
        if name.count(".") == 1 and not name.endswith("__init__")
    )


def long_modules(modules: dict[str, Module]) -> list[tuple[str, int]]:
    """Modules over :data:`MODULE_LINES` without a ``Size:`` reason."""
    return sorted(
        (
            (m.name, m.lines)
            for m in modules.values()
            if m.lines > MODULE_LINES and not _has_reason(m.docstring)
        ),
        key=lambda item: -item[1],
    )


def report(modules: dict[str, Module]) -> dict[str, object]:
    """Every figure of the pass, as JSON-ready data."""
    runtime_cycles = cycles(runtime_edges(modules))
    type_cycles = cycles(named_edges(modules))
    up = upward(modules)
    private = private_imports(modules)
    functions = [
        (m.name, f, line, n) for m in modules.values() for f, line, n in m.long_functions
    ]
    unlayered = sorted(n for n in modules if layer_of(n) < 0)
    local = [
        imp for m in modules.values() for imp in m.imports if imp.kind == "local"
    ]
    return {
        "modules": len(modules),
        "lines": sum(m.lines for m in modules.values()),
        "root_modules": root_modules(modules),
        "runtime_cycles": runtime_cycles,
        "cycles_with_type_imports": type_cycles,
        "largest_cycle_with_type_imports": max((len(c) for c in type_cycles), default=0),
        "upward_imports": sorted(
            f"{i.source} -> {i.target} ({i.kind}, line {i.lineno})" for i in up
        ),
        "function_local_imports_of_nsight_lab": len(local),
        "string_imports": sorted(
            f"{i.source} -> {i.target} ({i.kind}, line {i.lineno})"
            for m in modules.values()
            for i in m.imports
            if i.by_string
        ),
        "unresolved_string_imports": sorted(
            f"{m.name} (line {line})" for m in modules.values() for line in m.unresolved
        ),
        "private_imports": sorted(
            f"{i.source} -> {i.target}: {', '.join(i.names)}" for i in private
        ),
        "modules_over_limit": [f"{n} ({lines})" for n, lines in long_modules(modules)],
        "functions_over_limit": sorted(
            (f"{m}.{f} (line {line}, {n} lines)" for m, f, line, n in functions),
            key=lambda s: -int(s.rsplit(", ", 1)[1].split()[0]),
        ),
        "printing_modules": sorted(
            f"{m.name}: {len(m.prints)}"
            for m in modules.values()
            if m.prints and not m.name.startswith(PRINTERS)
        ),
        "singletons": sorted(
            f"{m.name}: {', '.join(m.singletons)}"
            for m in modules.values()
            if m.singletons
        ),
        "unlayered_modules": unlayered,
        "longest_modules": [
            f"{m.name} ({m.lines})"
            for m in sorted(modules.values(), key=lambda m: -m.lines)[:10]
        ],
    }


def summary(data: dict[str, object]) -> dict[str, int]:
    """The counts the issue's before/after figure compares."""
    return {
        key: len(value) if isinstance(value, list) else int(value)  # type: ignore[arg-type]
        for key, value in data.items()
        if key
        in {
            "root_modules",
            "runtime_cycles",
            "largest_cycle_with_type_imports",
            "upward_imports",
            "function_local_imports_of_nsight_lab",
            "private_imports",
            "modules_over_limit",
            "functions_over_limit",
            "printing_modules",
            "singletons",
        }
    }


def draw(
    before: dict[str, int],
    after: dict[str, int],
    path: Path,
    title: str = "nsight-lab structure: before and after issue 23",
) -> None:
    """A bar chart of the counts before and after (matplotlib, PNG)."""
    import matplotlib as mpl  # noqa: PLC0415 - only the figure needs it

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    keys = list(before)
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(keys) + 1.2))
    y = range(len(keys))
    ax.barh([i + 0.2 for i in y], [before[k] for k in keys], 0.4, label="before")
    ax.barh([i - 0.2 for i in y], [after.get(k, 0) for k in keys], 0.4, label="after")
    for i, k in enumerate(keys):
        ax.text(before[k], i + 0.2, f" {before[k]}", va="center", fontsize=8)
        ax.text(after.get(k, 0), i - 0.2, f" {after.get(k, 0)}", va="center", fontsize=8)
    ax.set_yticks(list(y), [k.replace("_", " ") for k in keys])
    ax.invert_yaxis()
    ax.set_xscale("symlog")
    ax.set_xlabel("count (symlog)")
    ax.legend(loc="lower right")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _group(name: str) -> str:
    """A module's box in the graph: its top-level package (or root module)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def draw_graph(modules: dict[str, Module], path: Path, title: str) -> None:
    """The import graph by package, one row per layer, upward arrows in red (PNG).

    Every import counts (top, function-local and type-only); an arrow's width grows
    with the number of module-to-module imports it stands for.
    """
    import matplotlib as mpl  # noqa: PLC0415 - only the figure needs it

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    groups: dict[str, int] = {}
    for name in modules:
        group = _group(name)
        if group in {"__init__", "_version"}:
            continue
        layer = layer_of(name if not name.endswith("__init__") else name[:-9])
        groups[group] = max(groups.get(group, -1), layer)
    edges: dict[tuple[str, str], list[int]] = {}
    for module in modules.values():
        for imp in module.imports:
            a, b = _group(imp.source), _group(imp.target)
            if a == b or a not in groups or b not in groups:
                continue
            up = layer_of(imp.target) > layer_of(imp.source)
            counts = edges.setdefault((a, b), [0, 0])
            counts[1 if up else 0] += 1
    rows: dict[int, list[str]] = {}
    for group, layer in sorted(groups.items()):
        rows.setdefault(layer, []).append(group)
    pos: dict[str, tuple[float, float]] = {}
    for layer, names in rows.items():
        for i, group in enumerate(names):
            pos[group] = ((i + 1) / (len(names) + 1), float(layer))
    fig, ax = plt.subplots(figsize=(13, 8.5))
    for (a, b), (down, up) in edges.items():
        (x0, y0), (x1, y1) = pos[a], pos[b]
        colour = "#d62728" if up else "#9aa4b1"
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={
                "arrowstyle": "-|>",
                "color": colour,
                "lw": 0.4 + 0.25 * min(down + up, 12),
                "alpha": 0.9 if up else 0.45,
                "connectionstyle": "arc3,rad=0.12",
                "shrinkA": 14,
                "shrinkB": 14,
            },
            zorder=3 if up else 1,
        )
    for group, (x, y) in pos.items():
        ax.text(
            x,
            y,
            group,
            ha="center",
            va="center",
            fontsize=8,
            bbox={"boxstyle": "round", "fc": "white", "ec": "#333333"},
            zorder=4,
        )
    names = [name for name, _ in LAYERS]
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlim(0, 1)
    ax.set_xticks([])
    data = report(modules)
    ax.set_title(
        f"{title}: {len(data['upward_imports'])} upward imports (red), "
        f"{sum(len(c) for c in data['runtime_cycles'])} modules in runtime import "
        f"cycles ({data['largest_cycle_with_type_imports']} with type imports), "
        f"{len(data['root_modules'])} root modules",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    """Print the report; write it as JSON and/or draw it against an earlier one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to read")
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument("--before", type=Path, help="an earlier --json, to compare")
    parser.add_argument("--png", type=Path, help="draw before/after here")
    parser.add_argument("--graph", type=Path, help="draw the package graph here")
    parser.add_argument("--title", help="the figures' title")
    args = parser.parse_args(argv)
    modules = read_modules(args.root)
    data = report(modules)
    counts = summary(data)
    if args.graph:
        draw_graph(modules, args.graph, args.title or "nsight-lab")
    data["summary"] = counts
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    if args.before and args.png:
        before = json.loads(args.before.read_text(encoding="utf-8"))["summary"]
        draw(before, counts, args.png, *([args.title] if args.title else []))
    for key, value in counts.items():
        print(f"{key:40s} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
