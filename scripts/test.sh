#!/usr/bin/env bash
# Run every check: ruff, mypy, pytest (GPU tests skip with their reason where no GPU
# is), the server auth check and jest. Runs them all, then exits non-zero if any failed.
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

echo
if ((${#failed[@]})); then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all checks passed"
