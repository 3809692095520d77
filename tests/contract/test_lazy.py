"""nsight_lab.contract.lazy: a package's names, imported from their modules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nsight_lab.contract.lazy import lazy_exports


def test_a_name_comes_from_its_module_and_an_unknown_one_is_an_attribute_error():
    attribute = lazy_exports("nsight_lab.contract", {"RunRecord": "records"})
    from nsight_lab.contract.records import RunRecord

    assert attribute("RunRecord") is RunRecord
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        attribute("Nothing")


def test_importing_results_or_viewmodel_loads_none_of_their_modules():
    code = (
        "import sys, nsight_lab.results, nsight_lab.viewmodel; "
        "print(sorted(m for m in sys.modules if m.startswith(("
        "'nsight_lab.results.', 'nsight_lab.viewmodel.'))))"
    )
    out = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"
