#!/usr/bin/env bash
# Set up a development environment in .venv: the Python package (editable, with the
# test and dev extras) and the JupyterLab extension built from src/.
#
# Idempotent; needs python3 >= 3.10 and node >= 20 on PATH, and reaches only PyPI
# and the npm registry. torch is installed first, as the CPU wheel, so that nothing
# later can pull a CUDA build (nsight-lab itself does not depend on torch).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

TORCH_VERSION="${NSIGHT_LAB_TORCH_VERSION:-2.13.0}"
PYTHON="${PYTHON:-python3}"

log() { printf '[setup] %s\n' "$*"; }

command -v node >/dev/null || { echo "[setup] node is required (>= 20)" >&2; exit 1; }
log "python: $("$PYTHON" --version 2>&1), node: $(node --version)"

if [[ ! -x .venv/bin/python ]]; then
    log "creating .venv"
    "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
source .venv/bin/activate

python -m pip install --quiet --upgrade pip

# torch first, CPU only. A CPU wheel of it lies in pip's find-links; "==" matches
# "+cpu". It is skipped when the wanted version is already there.
if python -c "import sys, importlib.metadata as m; sys.exit(m.version('torch').split('+')[0] != '${TORCH_VERSION}')" 2>/dev/null; then
    log "torch ${TORCH_VERSION} already installed"
else
    log "installing torch==${TORCH_VERSION} (CPU)"
    python -m pip install --quiet "torch==${TORCH_VERSION}"
fi

# The editable install runs `jlpm install` and builds the lab extension through the
# hatch jupyter-builder hook (jlpm comes with jupyter-builder, a build requirement).
log "installing nsight-lab (editable, [test,dev]) and building the lab extension"
python -m pip install --quiet -e ".[test,dev]"

# The hook skips `jlpm install` when node_modules looks current; make sure it exists
# for jest and eslint, and that the labextension was built.
if [[ ! -d node_modules ]]; then
    log "installing JavaScript dependencies"
    jlpm install
fi
# pip skips the build when a labextension exists; rebuild it when the sources are newer.
if [[ ! -f nsight_lab/labextension/package.json ]] \
    || [[ -n "$(find src style schema package.json -newer nsight_lab/labextension/package.json -print -quit)" ]]; then
    log "building the lab extension"
    jlpm build
fi
# An editable install does not install the labextension; link it into .venv.
if [[ ! -L .venv/share/jupyter/labextensions/nsight-lab ]]; then
    log "linking the lab extension into .venv"
    jupyter-builder develop --overwrite .
fi

# Never a CUDA torch: no nvidia-* wheels may have come in.
if python -m pip list --format=freeze 2>/dev/null | grep -qiE '^nvidia-(cu|cuda|nccl|cudnn|cublas)'; then
    echo "[setup] a CUDA build of torch or its nvidia-* wheels got installed; remove .venv and rerun" >&2
    exit 1
fi

log "torch: $(python -c 'import torch; print(torch.__version__)')"
log "nsight-lab: $(python -c 'from importlib.metadata import version; print(version("nsight-lab"))')"
log "done; activate with: source .venv/bin/activate"
