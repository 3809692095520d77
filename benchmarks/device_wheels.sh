#!/usr/bin/env bash
# Fill .whl/ (git-ignored) with the wheels benchmarks/device_h200.sh installs on the H200.
#
# The GPU machine reaches no package registry and already has (KINDS.md, FACTS.md) torch,
# numpy, pandas, scipy, pyarrow, matplotlib, cloudpickle, hypothesis, pytest(-timeout),
# pygments, psutil, typing-extensions, narwhals, packaging, cuda-bindings, cuda-pathfinder,
# nvidia-ml-py and nvidia-cuda-cupti 13.0. Carried here, with no dependency followed:
#   - the pm and cupti backends: cupti-python 13.4.0 (PM sampling), nvidia-cuda-cupti 13.4.92
#     (its libcupti; LD_LIBRARY_PATH points at it), pyelftools (cupti-python needs it);
#   - the ncu backend and the plain ncu reference: ncu-report, nvtx;
#   - nsight-lab's own needs: plotly, platformdirs, anywidget (ipywidgets, psygnal, comm);
#   - the magic and the tests' shell: ipython (traitlets, decorator, ipython-pygments-lexers,
#     matplotlib-inline, pexpect, ptyprocess, prompt_toolkit, wcwidth, stack_data, executing,
#     asttokens, pure_eval).
# Left out on purpose: jedi/parso (IPython completes without them), widgetsnbextension and
# jupyterlab_widgets (front-end assets only), kaleido (needs a Chrome the machine lacks; the
# PNG is drawn with matplotlib), jupyter_server/tornado/nbformat (device_h200.sh runs only the
# test files that hold GPU tests, none of which needs them).
#
# Usage: benchmarks/device_wheels.sh [DEST]    (DEST defaults to .whl in the repository root)
# NO_NCU_REPORT=1 leaves ncu-report out (17 MB) when the carried tree would pass 64 MiB.
# WHEELS_SH names the downloader (default ../shared/device/wheels.sh, else pip download here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/.whl}
wheels_sh=${WHEELS_SH:-/work/shared/device/wheels.sh}
specs=(
  cupti-python==13.4.0 nvidia-cuda-cupti==13.4.92 pyelftools==0.33
  ncu-report==2026.3.1 nvtx==0.2.17
  plotly==7.1.0 platformdirs==4.14.9 orjson==3.13.0
  anywidget==0.11.0 ipywidgets==8.1.9 psygnal==0.16.1 comm==0.2.3
  ipython==9.18.1 traitlets==5.16.1 decorator==5.3.1 ipython-pygments-lexers==1.1.1
  matplotlib-inline==0.2.2 pexpect==4.9.0 ptyprocess==0.7.0 prompt_toolkit==3.0.53
  wcwidth==0.9.4 stack_data==0.6.3 executing==2.3.0 asttokens==3.0.2 pure_eval==0.2.4
)
if [[ ${NO_NCU_REPORT:-0} == 1 ]]; then  # 17 MB less: device_h200.sh then reads ncu's own
  specs=("${specs[@]/ncu-report==2026.3.1}")  # extras/python/ncu_report (documented there)
  read -ra specs <<<"${specs[*]}"
fi
mkdir -p "$dest"
rm -f "$dest"/*.whl  # one version of each: two stop the whole install there
if [[ -f $wheels_sh ]]; then
  bash "$wheels_sh" "$dest" "${specs[@]}" >/dev/null
else
  for spec in "${specs[@]}"; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_25_x86_64 \
      --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform any -d "$dest" "$spec"
  done
fi
# Front-end bundles the GPU machine never serves (the carry limit is 64 MiB in all).
for w in "$dest"/plotly-*.whl; do
  python3 "$root/benchmarks/slim_wheel.py" "$w" plotly/labextension/ plotly/package_data/widgetbundle.js \
    "$(basename "$w" | sed 's/-py3-none-any.whl//').data/"
done
# CUPTI's checkpoint and PC-sampling libraries and its C headers: nsight-lab loads none.
for w in "$dest"/nvidia_cuda_cupti-*.whl; do
  python3 "$root/benchmarks/slim_wheel.py" "$w" nvidia/cu13/lib/libcheckpoint.so \
    nvidia/cu13/lib/libpcsamplingutil.so nvidia/cu13/include/
done
found=$(ls "$dest"/*.whl | wc -l)
echo "device_wheels: $found wheels for ${#specs[@]} specs in $dest, $(du -sh "$dest" | cut -f1)"
if (( found != ${#specs[@]} )); then
  echo "device_wheels: expected ${#specs[@]} wheels; see the pip messages above" >&2
  exit 1
fi
# PACK=1: the wheels installed for the device's Python 3.12 and packed with xz into
# .site.tar.xz (28 MB against 48 MB of wheels): carry it instead of .whl when the
# tree is near the 64 MiB limit; device_realwork.sh unpacks it into /tmp/site.
if [[ ${PACK:-0} == 1 ]]; then
  build=$(mktemp -d)
  python3 -m pip install -q --no-deps --no-compile --no-index --target "$build" \
    --python-version 3.12 --implementation cp --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_25_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 "$dest"/*.whl
  tar -C "$build" -cf - . | xz -T0 -6 >"$root/.site.tar.xz"
  rm -rf "$build"
  echo "device_wheels: $(du -h "$root/.site.tar.xz" | cut -f1) in .site.tar.xz"
fi
