"""nsight-python's ``nsight.annotate`` routed to nsight-lab's while a profile runs.

Issue 32: the routing imported nsight-python whenever it was installed, and its
import (matplotlib, pandas) was 1.1 s of a first ``%%nsight`` cell that never used
it (measured on an H100). Now an ``nsight`` already imported is routed at once, one
the cell imports is routed as its import finishes, and none is imported otherwise.
A fresh Python per case: ``sys.modules`` and ``sys.meta_path`` are the subject.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

FAKE_NSIGHT = "def annotate(name):\n    return ('nsight-python', name)\n"


def _run(tmp_path: Path, body: str) -> dict[str, object]:
    """``body`` in a fresh Python with a stand-in nsight-python on its path."""
    package = tmp_path / "site" / "nsight"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(FAKE_NSIGHT)
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(tmp_path / 'site')!r})\n"
        "from nsight_lab.regions import annotate, nsight_python_routed\n"
        "out = {}\n" + body + "print(json.dumps(out))\n"
    )
    done = subprocess.run(  # noqa: S603  (this interpreter, our code)
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_profile_does_not_import_nsight_python(tmp_path: Path) -> None:
    out = _run(
        tmp_path,
        "with nsight_python_routed():\n"
        "    out['imported'] = 'nsight' in sys.modules\n"
        "out['after'] = 'nsight' in sys.modules\n"
        "out['finders_left'] = sum(type(f).__name__ == '_RouteOnImport'"
        " for f in sys.meta_path)\n",
    )
    assert out == {"imported": False, "after": False, "finders_left": 0}


def test_nsight_imported_in_the_cell_is_routed_then_given_back(tmp_path: Path) -> None:
    out = _run(
        tmp_path,
        "with nsight_python_routed():\n"
        "    import nsight\n"
        "    out['during'] = nsight.annotate is annotate\n"
        "out['after'] = nsight.annotate('x')\n",
    )
    assert out == {"during": True, "after": ["nsight-python", "x"]}


@pytest.mark.parametrize("twice", [False, True])
def test_nsight_imported_before_is_routed_at_once(tmp_path: Path, twice: bool) -> None:  # noqa: FBT001
    out = _run(
        tmp_path,
        "import nsight\n"
        "with nsight_python_routed():\n"
        "    out['during'] = nsight.annotate is annotate\n"
        + ("    with nsight_python_routed():\n        pass\n" if twice else "")
        + "    out['still'] = nsight.annotate is annotate\n"
        "out['after'] = nsight.annotate('y')\n",
    )
    assert out == {"during": True, "still": True, "after": ["nsight-python", "y"]}
