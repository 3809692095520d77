#!/usr/bin/env bash
# Every GPU check of issue 19 (and, on request, issue 21's harness) in ONE device call.
#
# Run from the repository root on the H200, with .whl/ filled by benchmarks/device_wheels.sh
# and the nsight-python checkout in .nsight-python/ (both git-ignored, so both carried):
#
#   device run: command "bash benchmarks/device_h200.sh", carry [".whl", ".nsight-python"],
#               timeout_s 600
#
# Steps, each under its own `timeout`, all within DEADLINE_S (530 s) of the start:
#   1. install the carried wheels into /tmp/site; LD_LIBRARY_PATH to the wheel's libcupti
#      (13.4, for PM sampling; the machine's own is 13.0); ncu_report from the wheel, else
#      from ncu's own extras/python; the stack as Python sees it -> device.log
#   2. pytest -m gpu over the test files that hold GPU tests -> pytest_gpu.log
#   3. benchmarks/pm_h200.py -> pm/pm_h200.json, pm_h200.log, pm_h200_timeline.png/.json
#   4. NVIDIA's nsight-python examples 01 and 10 -> examples.tar.gz
#   5. (RUN_COMPAT_TESTS=1 / RUN_COMPAT_EXAMPLES=1) benchmarks/nsight_python_compat.py
#      -> compat.tar.gz
# At most 8 files come back from $OUT: device.log, pytest_gpu.log, the four under pm/,
# examples.tar.gz, compat.tar.gz.
#
# Flags (environment): RUN_PYTEST, RUN_PM, RUN_EXAMPLES (1: on, the default),
# RUN_COMPAT_TESTS, RUN_COMPAT_EXAMPLES (0: off), DEADLINE_S (530), PYTEST_S (210),
# PM_BUDGET_S (240: the benchmark's own budget; its timeout is 60 s more), EXAMPLES_S (150),
# NSPY_SRC (.nsight-python), PYTEST_ARGS (extra pytest arguments, e.g. "-k events"),
# PM_ARGS (extra pm_h200.py arguments), SITE (/tmp/site: where the wheels go).
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-$root/device-out}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/device-h200.XXXXXX)
DEADLINE_S=${DEADLINE_S:-530}
NSPY_SRC=${NSPY_SRC:-.nsight-python}
SITE=${SITE:-/tmp/site}
t0=$SECONDS

log() { echo "[device_h200 +$((SECONDS - t0))s] $*" | tee -a "$OUT/device.log"; }
left() { echo $((DEADLINE_S - (SECONDS - t0))); }
# limit WANT: the step's timeout, WANT or what is left before the deadline, whichever is less
limit() { local l; l=$(left); echo $((l < $1 ? l : $1)); }
# step NAME WANT_S LOGFILE CMD...: run CMD under timeout, its output into LOGFILE
step() {
  local name=$1 want=$2 out=$3 s rc
  shift 3
  s=$(limit "$want")
  if ((s < 20)); then
    log "$name: skipped, $(left) s left before the ${DEADLINE_S} s deadline"
    return 0
  fi
  log "$name: start (timeout ${s} s): $*"
  local t=$SECONDS
  timeout -k 10 "$s" "$@" >"$out" 2>&1
  rc=$?
  log "$name: rc=$rc in $((SECONDS - t)) s$( ((rc == 124 || rc == 137)) && echo ' (TIMED OUT)')"
  return 0
}

log "start: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?' \
  ) (the device's copy of the tree may have no .git), OUT=$OUT"

# ---------------------------------------------------------------- 1. install, environment
if compgen -G ".whl/*.whl" >/dev/null; then
  if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" .whl/*.whl >>"$OUT/device.log" 2>&1; then
    log "installed $(ls .whl/*.whl | wc -l) wheels into $SITE"
  else
    log "pip install into $SITE failed (its message is above)"
  fi
else
  log "no .whl/*.whl: run benchmarks/device_wheels.sh here and carry .whl"
fi
export PYTHONPATH=$root:$SITE${PYTHONPATH:+:$PYTHONPATH}
cupti_so=$(find "$SITE"/nvidia -name 'libcupti.so*' 2>/dev/null | sort | head -1)
if [[ -n $cupti_so ]]; then
  export LD_LIBRARY_PATH=$(dirname "$cupti_so")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if ! python3 -c "import ncu_report" 2>/dev/null; then
  for d in /opt/nvidia/nsight-compute/*/extras/python /usr/local/cuda/nsight-compute*/extras/python \
    "$(dirname "$(readlink -f "$(command -v ncu)")" 2>/dev/null)/extras/python"; do
    if [[ -f $d/ncu_report.py ]]; then
      export PYTHONPATH=$PYTHONPATH:$d
      break
    fi
  done
fi
export MPLBACKEND=Agg
log "PYTHONPATH=$PYTHONPATH LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu \
    --format=csv,noheader 2>&1
  command -v ncu && ncu --version 2>&1 | tail -1
  timeout 120 python3 - <<'EOF' 2>&1
import importlib, importlib.metadata as md, sys
print("python", sys.version.split()[0], sys.executable)
for name in ("torch", "cupti", "cupti.pm_sampling", "ncu_report", "nvtx", "IPython", "plotly",
             "anywidget", "platformdirs", "matplotlib", "pytest_timeout", "nsight_lab"):
    try:
        mod = importlib.import_module(name)
        print(f"  {name}: {getattr(mod, '__version__', '')} {getattr(mod, '__file__', '')}")
    except Exception as exc:
        print(f"  {name}: NOT IMPORTABLE {type(exc).__name__}: {exc}")
for dist in ("cupti-python", "nvidia-cuda-cupti", "ncu-report"):
    try:
        print(f"  dist {dist} {md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"  dist {dist} missing")
import torch
print("  cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
EOF
} >>"$OUT/device.log" 2>&1
log "environment checked"

# ---------------------------------------------------------------- 2. pytest -m gpu
if [[ ${RUN_PYTEST:-1} == 1 ]]; then
  # Only the files that hold GPU tests: -m gpu deselects every other test anyway, and the
  # rest import what this machine lacks (jupyter_server, nbformat for tests/server).
  mapfile -t files < <(grep -rlE 'pytest\.mark\.gpu' tests --include='test_*.py' | sort)
  extra=()
  python3 -c "import pytest_timeout" 2>/dev/null && extra+=(--timeout 150)
  # -o addopts: pyproject's addopts load pytest-jupyter's plugin, not installed here.
  step pytest "${PYTEST_S:-210}" "$OUT/pytest_gpu.log" \
    python3 -m pytest -p no:cacheprovider -o "addopts=--import-mode=importlib --strict-markers" \
    -rA -m gpu -q "${extra[@]}" ${PYTEST_ARGS:-} "${files[@]}"
  log "pytest: $(tail -1 "$OUT/pytest_gpu.log")"
fi

# ---------------------------------------------------------------- 3. the pm benchmark
if [[ ${RUN_PM:-1} == 1 ]]; then
  budget=${PM_BUDGET_S:-240}
  room=$(($(left) - 60 - (${RUN_EXAMPLES:-1} == 1 ? 60 : 0)))  # leave the examples a minute
  ((room < budget)) && budget=$room
  mkdir -p "$OUT/pm"
  step pm_h200 $((budget + 60)) "$work/pm_stdout.log" \
    python3 benchmarks/pm_h200.py --out "$OUT/pm" --budget "$budget" ${PM_ARGS:-}
  tail -25 "$work/pm_stdout.log" >>"$OUT/device.log"
fi

# ---------------------------------------------------------------- 4. nsight-python examples
if [[ ${RUN_EXAMPLES:-1} == 1 ]]; then
  if [[ -d $NSPY_SRC/examples ]]; then
    step examples "${EXAMPLES_S:-150}" "$work/examples_stdout.log" \
      python3 benchmarks/nsight_python_examples.py "$NSPY_SRC" "$work/examples" \
      --backend auto --only 01,10 --timeout 120
    cp "$work/examples_stdout.log" "$work/examples/" 2>/dev/null
    tar -czf "$OUT/examples.tar.gz" -C "$work" examples 2>>"$OUT/device.log"
    log "examples: $(grep -E '^[0-9]{2}_' "$work/examples/summary.log" 2>/dev/null \
      | awk '{print $1, $2, $3, $4}' | paste -sd';')"
  else
    log "examples: skipped, no $NSPY_SRC/examples (carry the nsight-python checkout)"
  fi
fi

# ---------------------------------------------------------------- 5. issue 21's harness
if [[ ${RUN_COMPAT_TESTS:-0} == 1 || ${RUN_COMPAT_EXAMPLES:-0} == 1 ]]; then
  mkdir -p "$work/compat"
  if [[ ${RUN_COMPAT_TESTS:-0} == 1 ]]; then
    s=$(($(left) - 15))
    [[ ${RUN_COMPAT_EXAMPLES:-0} == 1 ]] && s=$((s / 2))  # half for the examples
    step compat_tests $s "$work/compat/tests_stdout.log" \
      python3 benchmarks/nsight_python_compat.py --nsight-python-src "$NSPY_SRC" --device gpu \
      --tests --budget $((s - 20)) --out "$work/compat/tests" \
      --results "$work/compat/nsight_python_compat_h200"
  fi
  if [[ ${RUN_COMPAT_EXAMPLES:-0} == 1 ]]; then
    s=$(($(left) - 15))
    step compat_examples $s "$work/compat/examples_stdout.log" \
      python3 benchmarks/nsight_python_compat.py --nsight-python-src "$NSPY_SRC" --device gpu \
      --examples --budget $((s - 20)) --out "$work/compat/examples" \
      --results "$work/compat/nsight_python_examples_compat_h200"
  fi
  tar -czf "$OUT/compat.tar.gz" -C "$work" compat 2>>"$OUT/device.log"
fi

log "done in $((SECONDS - t0)) s; files back: $(cd "$OUT" && find . -type f | sort | paste -sd' ')"
