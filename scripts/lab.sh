#!/usr/bin/env bash
# The main job: JupyterLab with nsight-lab and the example notebook.
#   bash scripts/lab.sh              open JupyterLab on examples/quickstart.ipynb
#   bash scripts/lab.sh --headless   execute the notebook in a real kernel (nbclient) and
#                                    write it, with its outputs, to examples/executed/
# Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
source .venv/bin/activate
if [[ "${1:-}" == "--headless" ]]; then
    mkdir -p examples/executed
    jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=600 \
        --output-dir examples/executed examples/quickstart.ipynb
    echo "[lab] executed notebook: examples/executed/quickstart.ipynb"
    exit 0
fi
extra=()
[[ "$(id -u)" == 0 ]] && extra+=(--allow-root)
exec jupyter lab "${extra[@]}" examples/quickstart.ipynb
