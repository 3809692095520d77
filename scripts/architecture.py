"""nsight-lab's structure, read from its own source: layers, imports, sizes.

An AST pass over ``nsight_lab/`` (nothing is imported, so it runs without the GPU
stack): which module imports which (at the top, inside functions, or for types only),
the runtime import cycles (function-local imports counted), the arrows that point up
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


@dataclass
class Import:
    """One import of a ``nsight_lab`` module by another."""

    source: str
    target: str
    names: tuple[str, ...]
    lineno: int
    kind: str  # "top", "local" (inside a function) or "types" (TYPE_CHECKING)


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
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if not module.endswith("__init__"):
            package = package[:-1]
        else:
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base]) if base else ".".join(package)
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
    def __init__(self, module: Module, known: set[str]) -> None:
        self.module = module
        self.known = known
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
        for target, names in _resolve(self.module.name, node, self.known):
            if target == self.module.name:
                continue
            self.module.imports.append(
                Import(self.module.name, target, names, node.lineno, kind)
            )

    visit_Import = _import  # noqa: N815
    visit_ImportFrom = _import  # noqa: N815

    def visit_Call(self, node: ast.Call) -> None:
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
        walker = _Walker(module, known)
        walker.visit(tree)
        module.singletons = sorted(walker.mutable & walker.changed)
        modules[module.name] = module
    return modules


def runtime_edges(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the modules it loads when it runs (top and function-local)."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        for imp in module.imports:
            if imp.kind != "types" and imp.target in modules:
                edges[module.name].add(imp.target)
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
    edges = runtime_edges(modules)
    with_types: dict[str, set[str]] = {name: set() for name in modules}
    for module in modules.values():
        for imp in module.imports:
            if imp.target in modules:
                with_types[module.name].add(imp.target)
    runtime_cycles = cycles(edges)
    type_cycles = cycles(with_types)
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


def draw(before: dict[str, int], after: dict[str, int], path: Path) -> None:
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
    ax.set_title("nsight-lab structure: before and after issue 23")
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
    parser.add_argument("--title", default="nsight-lab", help="the graph's title")
    args = parser.parse_args(argv)
    modules = read_modules(args.root)
    data = report(modules)
    counts = summary(data)
    if args.graph:
        draw_graph(modules, args.graph, args.title)
    data["summary"] = counts
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    if args.before and args.png:
        before = json.loads(args.before.read_text(encoding="utf-8"))["summary"]
        draw(before, counts, args.png)
    for key, value in counts.items():
        print(f"{key:40s} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
