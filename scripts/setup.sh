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
#
# Run again, it must neither fail nor write into the source tree. The step below links
# .venv's labextension to nsight_lab/labextension, so a second `pip install -e` would
# install the wheel's shared data *through that link*: install.json lands in
# nsight_lab/labextension, and the next wheel build holds it twice (the directory's
# copy and the "install.json" shared-data entry): "A second file is being added to the
# wheel archive". So the link is removed before pip runs (the step below makes it
# again), a stray install.json left by an older set-up is removed, and pip is skipped
# altogether while what it installs from is unchanged (the stamp: a hash of the
# install's inputs, kept in .venv).
labext_link=.venv/share/jupyter/labextensions/nsight-lab
stamp=.venv/.nsight-lab-setup
inputs="$(cat pyproject.toml package.json | python -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
rm -f nsight_lab/labextension/install.json
if [[ -z "${NSIGHT_LAB_SETUP_FORCE:-}" && -f "$stamp" && "$(cat "$stamp")" == "$inputs" ]] \
    && [[ "$(cd / && python -c 'import nsight_lab; print(nsight_lab.__file__)' 2>/dev/null)" == "$PWD/nsight_lab/__init__.py" ]]; then
    log "nsight-lab already installed (editable) from this checkout; pyproject.toml and package.json unchanged"
else
    if [[ -L "$labext_link" ]]; then
        rm "$labext_link"  # the link only, never what it points to
    fi
    log "installing nsight-lab (editable, [test,dev]) and building the lab extension"
    rm -f "$stamp"
    python -m pip install --quiet -e ".[test,dev]"
    rm -f nsight_lab/labextension/install.json
    printf '%s\n' "$inputs" >"$stamp"
fi

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
# The inline widget's bundle (nsight_lab/static/, loaded by NsightWidget) is built by
# `jlpm build` too; rebuild it alone when it is missing or its sources are newer.
if [[ ! -f nsight_lab/static/widget.js ]] \
    || [[ -n "$(find src/widget src/charts style/widget.css package.json -newer nsight_lab/static/widget.js -print -quit)" ]]; then
    log "building the inline widget"
    jlpm build:widget
fi
# An editable install does not install the labextension; link it into .venv.
if [[ ! -L .venv/share/jupyter/labextensions/nsight-lab ]]; then
    log "linking the lab extension into .venv"
    jupyter-builder develop --overwrite .
fi

# Debian's chromium and only what it depends on (no recommended packages), with no
# service started by the install: a policy-rc.d that forbids it, while apt runs.
install_chromium() {
    local policy=/usr/sbin/policy-rc.d added=0 rc=0
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
    fi
    apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
        || rc=$?
    if ((added)); then
        rm -f "$policy"
    fi
    return "$rc"
}

# UI tests (Galata): Debian's chromium (Playwright's own browser downloads are not
# used) and the ui-tests JavaScript dependencies. Skip with NSIGHT_LAB_NO_UI_TESTS=1.
if [[ -z "${NSIGHT_LAB_NO_UI_TESTS:-}" ]]; then
    if ! command -v chromium >/dev/null; then
        if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
            log "installing chromium (Debian) for the ui-tests"
            install_chromium
        else
            log "chromium is missing: install it (apt-get install --no-install-recommends chromium) to run the ui-tests"
        fi
    fi
    if [[ ! -d ui-tests/node_modules/@jupyterlab/galata ]]; then
        log "installing the ui-tests dependencies (Galata)"
        [[ -f ui-tests/yarn.lock ]] || touch ui-tests/yarn.lock
        (cd ui-tests && jlpm install)
    fi
fi

# PostgreSQL server binaries (Debian's postgresql package; no cluster is created or
# started by the install): the store suite starts a throwaway cluster of its own with
# initdb/pg_ctl (tests/_postgres.py). Skip with NSIGHT_LAB_NO_POSTGRES=1.
install_postgresql() {
    local policy=/usr/sbin/policy-rc.d added=0 rc=0
    if [[ ! -e "$policy" ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
    fi
    { apt-get update -qq \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; } \
        || rc=$?
    if ((added)); then
        rm -f "$policy"
    fi
    return "$rc"
}
if [[ -z "${NSIGHT_LAB_NO_POSTGRES:-}" ]] \
    && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null \
    && ! command -v initdb >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        log "installing postgresql (Debian) for the store tests"
        install_postgresql
    else
        log "PostgreSQL is missing: install it (apt-get install --no-install-recommends postgresql) to run the store suite on PostgreSQL"
    fi
fi

# Never a CUDA torch: no nvidia-* wheels may have come in.
if python -m pip list --format=freeze 2>/dev/null | grep -qiE '^nvidia-(cu|cuda|nccl|cudnn|cublas)'; then
    echo "[setup] a CUDA build of torch or its nvidia-* wheels got installed; remove .venv and rerun" >&2
    exit 1
fi

log "torch: $(python -c 'import torch; print(torch.__version__)')"
log "nsight-lab: $(python -c 'from importlib.metadata import version; print(version("nsight-lab"))')"
log "done; activate with: source .venv/bin/activate"
