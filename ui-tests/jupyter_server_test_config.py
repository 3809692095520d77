"""Server configuration for integration tests.

!! Never use this configuration in production because it
opens the server to the world and provide access to JupyterLab
JavaScript objects through the global window variable.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821  (c is the config object jupyter injects)

# CI and the development machines run as root.
c.ServerApp.allow_root = True  # noqa: F821

# A fresh run store per server (its kernels inherit it), unless the caller chose one
# (benchmarks/ui_scale.py points it at a large prepared store).
if not os.environ.get("NSIGHT_LAB_HOME"):
    os.environ["NSIGHT_LAB_HOME"] = tempfile.mkdtemp(prefix="nsight-lab-ui-tests-")
    # `jlpm start:fixture`: the store is a copy of a real GPU store (the fixture
    # itself is never written to).
    if os.environ.get("NSIGHT_LAB_UI_FIXTURE_STORE"):
        shutil.copyfile(
            os.environ["NSIGHT_LAB_UI_FIXTURE_STORE"],
            Path(os.environ["NSIGHT_LAB_HOME"]) / "store.sqlite",
        )

# `jlpm start:quickstart`: the README's quickstart, recorded now by the cpu backend
# (record_quickstart.py: real kernels, real measurements) into this server's store,
# its executed notebooks in the root folder (tests/quickstart.spec.ts opens them).
if os.environ.get("NSIGHT_LAB_UI_QUICKSTART"):
    subprocess.run(  # noqa: S603  (our own script, with this Python)
        [
            sys.executable,
            str(Path(__file__).parent / "record_quickstart.py"),
            c.ServerApp.root_dir,  # noqa: F821
        ],
        check=True,
    )

# Uncomment to set server log level to debug level
# c.ServerApp.log_level = "DEBUG"
