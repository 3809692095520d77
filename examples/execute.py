"""Execute a notebook headlessly in a real kernel (nbclient), widget state saved.

``python examples/execute.py examples/quickstart.ipynb OUT.ipynb``: runs every cell
with the ``python3`` kernel and writes the executed notebook, outputs and the
``application/vnd.jupyter.widget-state+json`` metadata included.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def main(source: str, target: str) -> None:
    """Execute ``source`` and write it to ``target``."""
    notebook = nbformat.read(source, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=900,
        store_widget_state=True,
        resources={"metadata": {"path": str(Path(source).parent)}},
    )
    client.execute()
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
