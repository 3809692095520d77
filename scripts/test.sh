#!/usr/bin/env bash
# Run every check: ruff, mypy, pytest (GPU tests skip with their reason where no GPU
# is), the server auth check, jest and the Galata ui-tests. Runs them all, then exits
# non-zero if any failed.
#
# The ui-tests' JupyterLab servers get free ports (NSIGHT_LAB_UI_PORT,
# NSIGHT_LAB_UI_COLAB_PORT, NSIGHT_LAB_UI_PG_PORT, NSIGHT_LAB_UI_FIXTURE_PORT and
# NSIGHT_LAB_UI_QUICKSTART_PORT, unless set), so another Jupyter
# on 8888 or a second run does not break them. Their screenshots and JSON go to ui-tests/test-output/ (ignored);
# NSIGHT_LAB_UPDATE_RESULTS=1 writes them into ui-tests/results/ (the committed
# evidence). A run leaves the git tree as it found it: when the tree was clean before,
# anything new in `git status` fails the run.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
# shellcheck disable=SC1091
source .venv/bin/activate

# The tree before the run (empty when clean, or when this is no git checkout).
has_git=0
git rev-parse --is-inside-work-tree >/dev/null 2>&1 && has_git=1
tree_before=""
((has_git)) && tree_before="$(git status --porcelain)"

failed=()

step() {
    local name="$1"
    shift
    printf '\n=== %s: %s\n' "$name" "$*"
    if "$@"; then
        printf '=== %s: ok\n' "$name"
    else
        printf '=== %s: FAILED (exit %s)\n' "$name" "$?"
        failed+=("$name")
    fi
}

step ruff ruff check nsight_lab tests
step mypy mypy nsight_lab
step pytest python -m pytest
step check_auth python .github/scripts/check_auth.py
step jest jlpm test
# Galata ui-tests against a real JupyterLab in Debian's chromium (scripts/setup.sh
# installs both); skipped with a reason where chromium or Galata is missing.
if [[ -x /usr/bin/chromium && -d ui-tests/node_modules/@jupyterlab/galata ]]; then
    if [[ -z "${NSIGHT_LAB_UI_PORT:-}" || -z "${NSIGHT_LAB_UI_COLAB_PORT:-}" || -z "${NSIGHT_LAB_UI_PG_PORT:-}" || -z "${NSIGHT_LAB_UI_FIXTURE_PORT:-}" || -z "${NSIGHT_LAB_UI_QUICKSTART_PORT:-}" ]]; then
        # Five ports the OS says are free now (held together, so they differ): the
        # lab, the Colab-like lab, the lab on a PostgreSQL store, the lab on a
        # copy of the H200 fixture store and the lab on the recorded quickstart.
        read -r NSIGHT_LAB_UI_PORT NSIGHT_LAB_UI_COLAB_PORT NSIGHT_LAB_UI_PG_PORT NSIGHT_LAB_UI_FIXTURE_PORT NSIGHT_LAB_UI_QUICKSTART_PORT < <(python -c '
import socket
held = [socket.socket() for _ in range(5)]
for s in held:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in held))
')
    fi
    export NSIGHT_LAB_UI_PORT NSIGHT_LAB_UI_COLAB_PORT NSIGHT_LAB_UI_PG_PORT NSIGHT_LAB_UI_FIXTURE_PORT NSIGHT_LAB_UI_QUICKSTART_PORT
    echo "=== ui-tests: JupyterLab on ports ${NSIGHT_LAB_UI_PORT}, ${NSIGHT_LAB_UI_COLAB_PORT}, ${NSIGHT_LAB_UI_PG_PORT}, ${NSIGHT_LAB_UI_FIXTURE_PORT} and ${NSIGHT_LAB_UI_QUICKSTART_PORT}"
    step ui-tests bash -c 'cd ui-tests && CI=1 jlpm playwright test --reporter=line'
else
    echo "=== ui-tests: skipped (needs /usr/bin/chromium and ui-tests/node_modules; run scripts/setup.sh)"
fi

# The run leaves the tree as it found it (test output goes to ignored folders).
check_clean_tree() {
    local after
    after="$(git status --porcelain)"
    if [[ -n "$tree_before" ]]; then
        echo "warning: the git tree was not clean before the run, so what the run changed"
        echo "cannot be told apart from edits; commit or stash first to check it. New since:"
        grep -Fxv -f <(printf '%s\n' "$tree_before") <<<"$after" || echo "(nothing)"
        return 0
    fi
    if [[ -n "$after" ]]; then
        echo "the test run changed the git tree:"
        echo "$after"
        return 1
    fi
}
if ((has_git)); then
    step clean-tree check_clean_tree
fi

echo
if ((${#failed[@]})); then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all checks passed"
