#!/usr/bin/env bash
# Run every check: ruff, mypy, pytest (GPU tests skip with their reason where no GPU
# is), the server auth check, jest and the Galata ui-tests. Runs them all, then exits non-zero if any failed.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
source .venv/bin/activate

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
    step ui-tests bash -c 'cd ui-tests && CI=1 jlpm playwright test --reporter=line'
else
    echo "=== ui-tests: skipped (needs /usr/bin/chromium and ui-tests/node_modules; run scripts/setup.sh)"
fi

echo
if ((${#failed[@]})); then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all checks passed"
