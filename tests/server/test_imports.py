from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import nsight_lab.server
print(json.dumps(sorted(sys.modules)))
"""


def test_server_imports_no_backend_magic_or_torch():
    # When: a fresh interpreter imports only the server package
    result = subprocess.run(  # noqa: S603  (our own interpreter, fixed code)
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = json.loads(result.stdout)

    # Then
    forbidden = [
        name
        for name in loaded
        if name.startswith(("nsight_lab.backends", "nsight_lab.magic", "torch"))
        or name in {"nsight_lab.backends", "nsight_lab.magic", "torch"}
    ]
    assert forbidden == []
