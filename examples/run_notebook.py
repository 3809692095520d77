"""Execute a notebook's code cells in one IPython shell, top to bottom.

Stops at the first error.

For machines without a Jupyter kernel (the GPU host): ``python examples/run_notebook.py
examples/quickstart.ipynb``. Prints each cell's text output. Exit status 1 on an error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> int:
    """Run the notebook at ``path``; return a process exit status."""
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    notebook = json.loads(Path(path).read_text())
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        print(
            f"--- cell {index}: {source.splitlines()[0] if source else ''}", flush=True
        )
        result = shell.run_cell(source)  # the shell's display hook prints each Out[]
        if not result.success:
            print(
                f"cell {index} failed: "
                f"{result.error_in_exec or result.error_before_exec!r}"
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
