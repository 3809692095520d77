#!/usr/bin/env bash
# Issue 31's labelled check in ONE device call (H100 or H200), from the repository root:
#
#   device run: command "bash benchmarks/device_findings.sh", carry [".whl"]
#
# Installs the carried wheels into /tmp/site (libcupti 13.4 first on LD_LIBRARY_PATH, as
# benchmarks/device_realwork.sh does), then runs
#   PYTHONPATH=$PWD:/tmp/site python3 benchmarks/findings_labelled.py --out $OUT
# which writes $OUT/findings_labelled.json, findings_labelled.log and findings_<gpu>.sqlite
# (the CI fixture: copy it to tests/fixtures/). About 2-4 minutes on an H100.
# FINDINGS_ARGS adds options (--runs N, --backends events,cupti,pm, --no-peaks).
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-$root/device-out}
mkdir -p "$OUT"
SITE=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$SITE" .whl/*.whl >"$OUT/install.log" 2>&1 || echo "wheel install failed (see install.log)"
export PYTHONPATH=$root:$SITE
cupti_so=$(find "$SITE"/nvidia -name 'libcupti.so*' 2>/dev/null | sort | head -1)
[[ -n $cupti_so ]] && export LD_LIBRARY_PATH=$(dirname "$cupti_so")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MPLBACKEND=Agg
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$OUT/install.log" 2>&1
timeout -k 10 "${FINDINGS_S:-420}" python3 benchmarks/findings_labelled.py --out "$OUT" ${FINDINGS_ARGS:-}
echo "findings_labelled rc=$?"
rm -rf "$OUT/home"  # the live store: findings_<gpu>.sqlite is its copy
ls -la "$OUT"
