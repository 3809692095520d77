"""The structure issue 23 set: layers point down, no cycles, sizes kept, nothing shared.

Read from the source by ``scripts/architecture.py`` (an AST pass, nothing imported).
Each assertion names the offenders, so a failure says what to move or split.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "architecture", ROOT / "scripts" / "architecture.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["architecture"] = module
    spec.loader.exec_module(module)
    return module


arch = _load()


@pytest.fixture(scope="module")
def report() -> dict[str, object]:
    return arch.report(arch.read_modules(ROOT))


def test_every_module_has_a_layer(report) -> None:
    assert report["unlayered_modules"] == []


def test_no_import_points_up_the_layers(report) -> None:
    assert report["upward_imports"] == []


def test_no_import_cycle_counting_function_local_imports(report) -> None:
    assert report["runtime_cycles"] == []


def test_no_import_cycle_counting_type_only_imports(report) -> None:
    assert report["cycles_with_type_imports"] == []


def test_at_most_sixteen_modules_at_the_package_root(report) -> None:
    assert len(report["root_modules"]) <= arch.ROOT_MODULES, report["root_modules"]


def test_no_module_over_400_lines_without_a_reason(report) -> None:
    assert report["modules_over_limit"] == []


def test_no_function_over_60_lines_without_a_reason(report) -> None:
    assert report["functions_over_limit"] == []


def test_no_module_imports_anothers_private_names(report) -> None:
    assert report["private_imports"] == []


def test_library_code_does_not_print(report) -> None:
    assert report["printing_modules"] == []


def test_no_process_wide_mutable_singletons(report) -> None:
    assert report["singletons"] == []


# The pass itself, on small sources: each check can fail.


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, object]:
    for name, text in files.items():
        path = tmp_path / "nsight_lab" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return arch.report(arch.read_modules(tmp_path))


def test_the_pass_sees_a_cycle_through_a_function_local_import(tmp_path) -> None:
    report = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "stats.py": "def f():\n    from nsight_lab.errors import E\n",
            "errors.py": "from nsight_lab.stats import f\n",
        },
    )
    assert report["runtime_cycles"] == [["nsight_lab.errors", "nsight_lab.stats"]]


def test_the_pass_sees_an_upward_import_a_private_name_and_a_singleton(
    tmp_path,
) -> None:
    report = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "magic.py": "_x = 1\n",
            "stats.py": (
                "from nsight_lab.magic import _x\n"
                "class C:\n    pass\n"
                "ONE = C()\n"
                "CACHE = {}\n"
                "def f(k):\n    CACHE[k] = 1\n"
                "def g():\n    print('x')\n"
            ),
        },
    )
    assert report["upward_imports"] == [
        "nsight_lab.stats -> nsight_lab.magic (top, line 1)"
    ]
    assert report["private_imports"] == ["nsight_lab.stats -> nsight_lab.magic: _x"]
    assert report["singletons"] == ["nsight_lab.stats: CACHE, ONE"]
    assert report["printing_modules"] == ["nsight_lab.stats: 1"]


def test_a_size_reason_in_the_docstring_lets_a_long_function_pass(tmp_path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(70))
    report = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "stats.py": (
                f"def long():\n{body}"
                'def reasoned():\n    """Do it.\n\n    Size: one table.\n    """\n'
                f"{body}"
            ),
        },
    )
    assert [f.split(" ")[0] for f in report["functions_over_limit"]] == [
        "nsight_lab.stats.long"
    ]


def test_the_pass_reads_string_imports_as_imports(tmp_path) -> None:
    report = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "regions.py": (
                "import importlib\n"
                "API = 'nsight_lab.api'\n"
                "def f():\n    return importlib.import_module(API)\n"
            ),
            "api/__init__.py": (
                "from importlib import import_module\n"
                "def g(name):\n"
                "    import_module(f'{__name__}.kernel')\n"
                "    return import_module(name)\n"
            ),
            "api/kernel.py": "def h():\n    return __import__('nsight_lab.regions')\n",
        },
    )
    assert report["string_imports"] == [
        "nsight_lab.api.__init__ -> nsight_lab.api.kernel (local, line 3)",
        "nsight_lab.api.kernel -> nsight_lab.regions (local, line 2)",
        "nsight_lab.regions -> nsight_lab.api.__init__ (local, line 4)",
    ]
    assert report["unresolved_string_imports"] == ["nsight_lab.api.__init__ (line 4)"]
    assert report["upward_imports"] == [
        "nsight_lab.regions -> nsight_lab.api.__init__ (local, line 4)"
    ]
    assert report["runtime_cycles"] == [
        ["nsight_lab.api.__init__", "nsight_lab.api.kernel", "nsight_lab.regions"]
    ]


def test_the_pass_sees_a_package_init_cycle(tmp_path) -> None:
    # ``from package import submodule`` reads the package: a cycle with its __init__.
    files = {
        "__init__.py": "",
        "cli/__init__.py": "from nsight_lab.cli.main import main\n",
        "cli/output.py": "",
        "cli/main.py": "from nsight_lab.cli import output\ndef main(): ...\n",
    }
    report = _tree(tmp_path, files)
    assert report["runtime_cycles"] == [
        ["nsight_lab.cli.__init__", "nsight_lab.cli.main"]
    ]
    # Its module by its full name: no cycle.
    files["cli/main.py"] = "from nsight_lab.cli.output import x\ndef main(): ...\n"
    assert _tree(tmp_path, files)["runtime_cycles"] == []


def test_the_pass_sees_the_package_an_import_runs(tmp_path) -> None:
    # Importing dist.metrics from outside dist runs dist/__init__.py first.
    report = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "dist/__init__.py": "def f():\n    from nsight_lab.dist.worker import w\n",
            "dist/metrics.py": "",
            "dist/worker.py": "from nsight_lab.results import r\ndef w(): ...\n",
            "results.py": "from nsight_lab.dist.metrics import m\nr = 1\n",
        },
    )
    assert report["runtime_cycles"] == [
        ["nsight_lab.dist.__init__", "nsight_lab.dist.worker", "nsight_lab.results"]
    ]
    # The type-only graph names modules, not the packages an import runs on the way.
    assert report["cycles_with_type_imports"] == []
