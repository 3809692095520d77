"""nsight-python 1.1.0's module tree and version: ``import nsight`` and nsight_lab.

The module list is nsight-python 1.1.0's (its wheel's ``nsight/`` package): code
written for it imports ``nsight.collection.ncu``, ``nsight.utils``, ... and reads
``nsight.__version__``; each is a module of :mod:`nsight_lab.api`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

import nsight_lab
from nsight_lab.api import tools
from nsight_lab.api.exceptions import NCUNotAvailableError, ProfilerException
from nsight_lab.nsight_modules import NSIGHT_MODULES
from nsight_lab.nsight_shim import install_nsight_shim

if TYPE_CHECKING:
    from pathlib import Path

NSIGHT_PYTHON_1_1_0_MODULES = [
    "nsight.analyze", "nsight.annotation", "nsight.collection",
    "nsight.collection.core", "nsight.collection.cupti", "nsight.collection.ncu",
    "nsight.exceptions", "nsight.experimental", "nsight.extraction",
    "nsight.info_collector", "nsight.thermovision", "nsight.tools_manager",
    "nsight.transformation", "nsight.utils", "nsight.visualization",
]  # fmt: skip


def _in_a_fresh_python(code: str) -> object:
    """Run ``code`` after installing the stand-in; what it prints, as JSON."""
    prelude = (
        "import json, sys\n"
        "from nsight_lab.nsight_shim import install_nsight_shim\n"
        "install_nsight_shim(replace=True)\n"
    )
    out = subprocess.run(  # noqa: S603  (this Python, our code)
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_module_list_is_nsight_pythons() -> None:
    assert sorted(NSIGHT_MODULES) == NSIGHT_PYTHON_1_1_0_MODULES


def test_import_nsight_gives_every_submodule_as_nsight_labs_own() -> None:
    code = (
        "import importlib\n"
        "from nsight.collection import ncu, cupti, core\n"
        "from nsight import exceptions, utils\n"
        "import nsight.collection.ncu\n"
        f"names = {NSIGHT_PYTHON_1_1_0_MODULES!r}\n"
        "mods = {n: importlib.import_module(n) for n in names}\n"
        "print(json.dumps({\n"
        "  'same': all(sys.modules[n] is m for n, m in mods.items()),\n"
        "  'own': {n: m.__name__ for n, m in mods.items()},\n"
        "  'spec': nsight.collection.ncu.__spec__.name,\n"
        "  'attr': nsight.collection.ncu is ncu and nsight.utils is utils,\n"
        "}))\n"
    )
    found = _in_a_fresh_python(code)
    assert isinstance(found, dict)
    assert found["same"] is True
    assert found["own"] == {n: f"nsight_lab.api{n[6:]}" for n in NSIGHT_MODULES}
    # The module keeps its own spec: nsight_lab.api.collection.ncu, not a copy.
    assert found["spec"] == "nsight_lab.api.collection.ncu"
    assert found["attr"] is True


def test_nsight_lab_serves_the_same_modules_as_attributes() -> None:
    assert nsight_lab.collection.ncu is sys.modules["nsight_lab.api.collection.ncu"]
    assert nsight_lab.utils.VerbosityLevel is nsight_lab.VerbosityLevel
    assert nsight_lab.annotation.annotate is nsight_lab.annotate
    assert nsight_lab.tools_manager.Tool is nsight_lab.Tool
    assert nsight_lab.collection.core.ProfileResults is nsight_lab.ProfileResults
    assert nsight_lab.info_collector.CollectionScope is nsight_lab.CollectionScope


def test_versions_say_which_api_and_which_nsight_lab() -> None:
    found = _in_a_fresh_python(
        "import nsight, nsight_lab\n"
        "print(json.dumps([nsight.__version__, nsight.__nsight_lab_version__,\n"
        "  nsight_lab.__version__, nsight_lab.NSIGHT_PYTHON_VERSION]))\n"
    )
    assert found == ["1.1.0", nsight_lab.__version__, nsight_lab.__version__, "1.1.0"]
    assert nsight_lab.__version__ != "1.1.0"  # nsight-lab's own, not the API's


def test_a_stand_in_outside_sys_modules_serves_the_submodules() -> None:
    from nsight_lab.nsight_shim import nsight_shim

    shim = nsight_shim()
    assert shim.collection.ncu is sys.modules["nsight_lab.api.collection.ncu"]
    assert shim.__version__ == "1.1.0"


def test_injection_load_error_is_the_reason_where_ncu_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ncu = nsight_lab.collection.ncu
    monkeypatch.setenv("NSIGHT_LAB_NCU", str(tmp_path / "none"))  # no ncu there
    error = ncu.injection_load_error
    assert isinstance(error, NCUNotAvailableError)
    assert "no ncu (Nsight Compute CLI) was found" in str(error)
    assert "durations on another backend" in str(error)
    with pytest.raises(NCUNotAvailableError, match="no ncu"):
        ncu.init_injection()
    # Where NCU is not the active tool, nsight-python tries no injection: None.
    monkeypatch.setenv("NSPY_NCU_INIT_AT_IMPORT", "0")
    tools.reset()
    try:
        assert ncu.injection_load_error is None
    finally:
        monkeypatch.delenv("NSPY_NCU_INIT_AT_IMPORT")
        tools.reset()


@pytest.mark.usefixtures("fake_ncu")
def test_injection_load_error_is_none_where_the_ncu_path_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "nsight", None)  # restored after the test
    install_nsight_shim(replace=True)
    from nsight.collection import ncu  # type: ignore[import-not-found]

    assert ncu.injection_load_error is None
    ncu.init_injection()  # nothing to load: it only checks


def test_internals_raise_nsight_pythons_error_and_typos_python_s() -> None:
    with pytest.raises(ProfilerException, match=r"aggregate_data is an internal"):
        nsight_lab.transformation.aggregate_data(None, None, None, 0)
    with pytest.raises(ProfilerException, match=r"launch_ncu is an internal"):
        nsight_lab.collection.ncu.launch_ncu("r.ncu-rep")
    with pytest.raises(AttributeError, match=r"'nsight.utils' .* no attribute 'nope'"):
        nsight_lab.utils.nope  # noqa: B018
    assert isinstance(nsight_lab.utils.CUDA_CORE_AVAILABLE, bool)
    assert nsight_lab.thermovision.DEFAULT_THERMAL_WAIT == 10  # nsight-python's
    assert nsight_lab.thermovision.DEFAULT_THERMAL_CONT == 20


def test_info_collector_checks_are_nsight_pythons() -> None:
    info = nsight_lab.info_collector

    def bench(n: int) -> None:
        del n

    with pytest.raises(ProfilerException, match="Duplicate"):
        info.validate_collectors([("a", len, "once"), ("a", len, "run")])
    with pytest.raises(ProfilerException, match="parameter"):
        info.validate_collectors([("n", len, "run")], bench)
    info.validate_collectors([("m", len, "run")], bench)
    assert info.bind_args_to_signature(lambda n: n, (), (1, 2, 3)) == [1]
    assert info.bind_args_to_signature(lambda *a: a, ("r",), (1, 2)) == ["r", 1, 2]


def test_cupti_init_says_why_the_cupti_backend_cannot_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nsight_lab.contract.collector import Availability
    from nsight_lab.contract.registry import get_collector

    collector = get_collector("cupti")
    monkeypatch.setattr(
        type(collector),
        "probe",
        lambda _self: Availability(ok=False, reason="cupti-python is not installed"),
    )
    with pytest.raises(ProfilerException, match=r"(?s)cupti-python is required.*not"):
        nsight_lab.collection.cupti.init()
    nsight_lab.collection.cupti.finalize()  # nothing held: nothing raised
