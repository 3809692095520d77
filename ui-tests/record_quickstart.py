"""Record the README's quickstart into a real store, for tests/quickstart.spec.ts.

``python record_quickstart.py ROOT_DIR``: with the store of ``$NSIGHT_LAB_HOME`` (the
JupyterLab under test reads it), execute in a real ``python3`` kernel (nbclient) and
save into ``ROOT_DIR`` (the server's root):

- ``quickstart.ipynb``: ``examples/quickstart.ipynb`` unchanged (the sweep, then the
  fused/unfused pair; sessions 1 and 2);
- ``quickstart-next.ipynb``: what a new user profiles next (session 3): a data
  loader that reads from disk every 4th batch (its runs disagree: a flagged region
  on any host), a transformer encoder layer (an op the work model has no FLOP
  formula for: TFLOP/s not shown, the op named) and a matmul.

Every number is measured by the ``cpu`` backend (CUDA hidden from the kernel), so
the store holds what a new user without a GPU sees; whether the quickstart's own
regions are flagged depends on how busy the host is. Each cell's final output is
the saved bundle the extension draws when the notebook is reopened. Prints one line
per notebook written; a failing cell ends it with the kernel's error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "examples" / "quickstart.ipynb"

LOADER = """\
import time


def next_batch(n, calls=[0]):
    # A loader that reads from disk every 4th batch (5 ms), else from its buffer.
    calls[0] += 1
    if calls[0] % 4 == 0:
        time.sleep(0.005)
    return torch.randn(8, n, 256, device=device)"""

NEXT = """\
%%nsight --configs 64,128 --runs 12 --derive tflops --name quickstart-next
import torch, nsight
layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, batch_first=True).eval()
w = torch.randn(256, 256, device=device)
with nsight.annotate("load"):
    x = next_batch(n)
with torch.no_grad():
    with nsight.annotate("encoder"):
        layer(x)
    with nsight.annotate("matmul"):
        x @ w"""

NEXT_CELLS = [
    "%load_ext nsight_lab",
    'import torch\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"',
    LOADER,
    NEXT,
]


def _execute(notebook: nbformat.NotebookNode, target: Path) -> None:
    """Run every cell of ``notebook`` in a fresh kernel and save it at ``target``."""
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=600,
        resources={"metadata": {"path": str(target.parent)}},
    )
    client.execute()
    nbformat.write(notebook, target)
    sys.stdout.write(f"recorded {target}\n")


def main(argv: list[str]) -> None:
    """Record both notebooks into ``argv[0]`` (see the module docstring)."""
    if len(argv) != 1:
        sys.exit("usage: record_quickstart.py ROOT_DIR")
    root = Path(argv[0])
    # The cpu backend, as on a laptop, also where a GPU is visible.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    quickstart = nbformat.read(QUICKSTART, as_version=4)
    following = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in NEXT_CELLS],
        metadata=dict(quickstart.metadata),
    )
    _execute(quickstart, root / "quickstart.ipynb")
    _execute(following, root / "quickstart-next.ipynb")


if __name__ == "__main__":
    main(sys.argv[1:])
