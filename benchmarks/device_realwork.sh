#!/usr/bin/env bash
# Issue 28's GPU checks in ONE device call (H100 or H200), from the repository root:
#
#   device run: command "bash benchmarks/device_realwork.sh", carry [".whl", ".nsight-python"]
#
# 1. the carried wheels into /tmp/site (benchmarks/device_wheels.sh: ncu-report from PyPI,
#    since ncu 2025.3.1's own extras/python ncu_report segfaulted in unit() on the H100),
#    libcupti 13.4 first;
# 2. benchmarks/pm_catalog.py -> $OUT/pm_catalog.json (the chip's PM-sampling catalog);
# 3. pytest -m gpu over the files with GPU tests -> $OUT/pytest_gpu.log;
# 4. benchmarks/realwork.py (events, cupti, pm; ncu and plain ncu with REALWORK_NCU=1)
#    -> $OUT/realwork.json, realwork.md, realwork.log, realwork_streams.json.gz;
# 5. NVIDIA's nsight-python examples 00-11 and 13 (auto) -> $OUT/examples.tar.gz.
# Flags: RUN_CATALOG RUN_PYTEST RUN_REALWORK RUN_EXAMPLES (1), REALWORK_NCU (1),
# REALWORK_ARGS, PYTEST_ARGS, DEADLINE_S (560); RUN_FIRST_CELL (0: issue 32, carry .before);
# EXTRA / EXTRA_LAST (a command before / after the rest, EXTRA_S / EXTRA_LAST_S).
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-$root/device-out}
mkdir -p "$OUT"
SITE=/tmp/site
DEADLINE_S=${DEADLINE_S:-560}
t0=$SECONDS
log() { echo "[device_realwork +$((SECONDS - t0))s] $*" | tee -a "$OUT/device.log"; }
left() { echo $((DEADLINE_S - (SECONDS - t0))); }
step() {
  local name=$1 want=$2 out=$3 s rc l
  shift 3
  l=$(left); s=$((l < want ? l : want))
  if ((s < 20)); then log "$name: skipped, $l s left"; return 0; fi
  log "$name: start (timeout $s s)"
  timeout -k 10 "$s" "$@" >"$out" 2>&1
  rc=$?
  log "$name: rc=$rc$( ((rc == 124 || rc == 137)) && echo ' (TIMED OUT)')"
}
if [[ -f .site.tar.xz ]]; then  # the wheels installed here and packed (20 MB less)
  mkdir -p "$SITE" && tar -xJf .site.tar.xz -C "$SITE" && log "site unpacked"
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" .whl/*.whl >>"$OUT/device.log" 2>&1 && log "wheels installed"
fi
export PYTHONPATH=$root:$SITE
cupti_so=$(find "$SITE"/nvidia -name 'libcupti.so*' 2>/dev/null | sort | head -1)
[[ -n $cupti_so ]] && export LD_LIBRARY_PATH=$(dirname "$cupti_so")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! python3 -c "import ncu_report" 2>/dev/null; then
  for d in /opt/nvidia/nsight-compute/*/extras/python /usr/local/cuda/nsight-compute*/extras/python; do
    [[ -f $d/ncu_report.py ]] && export PYTHONPATH=$PYTHONPATH:$d && break
  done
fi
export MPLBACKEND=Agg
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; ncu --version | tail -1
  python3 -c "import torch, cupti, ncu_report, nvtx; print(torch.__version__, torch.cuda.get_device_name(0))"; } >>"$OUT/device.log" 2>&1
log "stack: $(tail -1 "$OUT/device.log")"
if [[ -n ${EXTRA:-} ]]; then  # a one-off check of the work at hand, before the rest
  step extra "${EXTRA_S:-150}" "$OUT/extra.log" bash -c "$EXTRA"
fi
if [[ ${RUN_CATALOG:-1} == 1 ]]; then
  step pm_catalog 60 "$OUT/pm_catalog.log" python3 benchmarks/pm_catalog.py "$OUT/pm_catalog.json"
fi
if [[ ${RUN_PYTEST:-1} == 1 ]]; then
  # ncu's tests last: a report reader crash must not take the others down.
  [[ -n ${PYTEST_FILES:-} ]] && read -ra files <<<"$PYTEST_FILES" || mapfile -t files < <(grep -rlE 'pytest\.mark\.gpu' tests --include='test_*.py' | sort | grep -v /ncu/;
    grep -rlE 'pytest\.mark\.gpu' tests/backends/ncu --include='test_*.py' | sort)
  step pytest "${PYTEST_S:-200}" "$OUT/pytest_gpu.log" \
    python3 -m pytest -p no:cacheprovider -o "addopts=--import-mode=importlib --strict-markers" \
    -rA -m gpu -q ${PYTEST_ARGS:-} "${files[@]}"
  log "pytest: $(tail -1 "$OUT/pytest_gpu.log")"
fi
if [[ ${RUN_REALWORK:-1} == 1 ]]; then
  ncu_flag=(); [[ ${REALWORK_NCU:-1} == 1 ]] && ncu_flag=(--ncu)
  step realwork "${REALWORK_S:-330}" "$OUT/realwork_stdout.log" \
    python3 benchmarks/realwork.py --out "$OUT" "${ncu_flag[@]}" \
    --fixture "$OUT/realwork_streams.json.gz" ${REALWORK_ARGS:-}
  tail -30 "$OUT/realwork_stdout.log" >>"$OUT/device.log"
  rm -f "$OUT/realwork_stdout.log"  # in realwork.log and device.log: 8 files come back
fi
if [[ ${RUN_EXAMPLES:-1} == 1 && -d .nsight-python/examples ]]; then
  work=$(mktemp -d)
  step examples "${EXAMPLES_S:-200}" "$work/stdout.log" \
    python3 benchmarks/nsight_python_examples.py .nsight-python "$work/examples" \
    --backend auto --only ${EXAMPLES:-00,01,02,03,04,05,06,07,08,09,10,11,13} --timeout 100
  cp "$work/examples/summary.log" "$OUT/examples_summary.log" 2>/dev/null  # 16 MiB a file
  log "examples: $(grep -E '^[0-9]{2}_' "$work/examples/summary.log" 2>/dev/null | awk '{print $1, $2}' | paste -sd';')"
fi
# Issue 31's labelled regions (benchmarks/findings_labelled.py): findings_<gpu>.sqlite.
if [[ ${RUN_FINDINGS:-0} == 1 ]]; then
  step findings "${FINDINGS_S:-240}" "$OUT/findings_stdout.log" \
    python3 benchmarks/findings_labelled.py --out "$OUT" ${FINDINGS_ARGS:-}
  rm -rf "$OUT/home"  # the live store: findings_<gpu>.sqlite is its copy
fi
# Issue 32's first cell, before (.before/nsight_lab, carried: git archive 0ab1fce
# nsight_lab | tar -x -C .before, or packed as .before.tar.gz) and after, interleaved.
if [[ ${RUN_FIRST_CELL:-0} == 1 ]]; then
  # Carried packed (the 64 MiB limit): .before.tar.gz holds nsight_lab/.
  [[ -f .before.tar.gz && ! -d .before ]] && mkdir -p .before && tar -xzf .before.tar.gz -C .before
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oE 'H100|H200' | tr A-Z a-z)
  before=(); [[ -d .before/nsight_lab ]] && before=(--before-root .before --before-label "0ab1fce, before")
  step first_cell "${FIRST_CELL_S:-120}" "$OUT/first_cell.log" \
    python3 benchmarks/first_cell.py --out "$OUT" --backend events --repeats "${FIRST_CELL_REPEATS:-3}" \
    --pause 2 "${before[@]}" --label "${AFTER_LABEL:-after}" \
    --name "first_cell_${gpu:-gpu}_issue32"
  rm -f "$OUT"/first_cell_*_profile.txt
fi
if [[ -n ${EXTRA_LAST:-} ]]; then  # a one-off check after the rest
  step extra_last "${EXTRA_LAST_S:-150}" "$OUT/extra_last.log" bash -c "$EXTRA_LAST"
fi
# At most 8 files come back: every log but device.log, and the tables, in one archive.
(cd "$OUT" && logs=$(ls *.log *.md 2>/dev/null | grep -vx device.log) && [[ -n $logs ]] &&
  tar -czf logs.tar.gz $logs && rm -f $logs)
log "done; files: $(cd "$OUT" && ls | paste -sd' ')"
