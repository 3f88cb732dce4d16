#!/usr/bin/env bash
# Installs what a fresh development machine (Debian bookworm, Python 3 with pip) lacks, then
# builds pyprof in place. Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
APT_PACKAGES=(cmake ninja-build g++ libsqlite3-dev sqlite3 zlib1g-dev libeigen3-dev libisal-dev libgtest-dev libgmock-dev
              libcli11-dev libfmt-dev libsimdjson-dev clang-format
              chromium chromium-driver)  # the last two: the HTML report's browser tests

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# torch: the one in the environment is kept when it is new enough (pyprof/_torch_support.py's
# MIN_TORCH; a user's CUDA build must never be swapped for another). Only when there is none is
# one installed: PYPROF_TORCH_SPEC, by default the 2.13.0 CPU wheel on the development machines
# (an exact pin: a looser spec would pull a CUDA build and gigabytes of dependencies).
MIN_TORCH=$($PYTHON -c "exec(open('pyprof/_torch_support.py').read()); print(MIN_TORCH)")
if $PYTHON -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)" 2>/dev/null; then
  if ! torch_version=$($PYTHON -c "import torch; print(torch.__version__)" 2>/tmp/pyprof-torch-import.$$); then
    echo "setup: error: torch is installed for $PYTHON but does not import:" >&2
    tail -n 3 /tmp/pyprof-torch-import.$$ >&2; rm -f /tmp/pyprof-torch-import.$$
    echo "setup: fix that torch (setup does not replace an installed torch)" >&2
    exit 1
  fi
  rm -f /tmp/pyprof-torch-import.$$
  if ! $PYTHON -c "exec(open('pyprof/_torch_support.py').read()); import sys; sys.exit(not is_supported(sys.argv[1]))" "$torch_version"; then
    echo "setup: error: torch $torch_version is older than $MIN_TORCH, the oldest release pyprof" \
         "builds against (docs/install.md). setup does not replace an installed torch: upgrade" \
         "it (the build that matches your CUDA) and run setup again." >&2
    exit 1
  fi
  echo "setup: using the installed torch $torch_version (pyprof needs >= $MIN_TORCH)"
else
  TORCH_SPEC=${PYPROF_TORCH_SPEC:-torch==2.13.0}
  echo "setup: no torch for $PYTHON: pip install $TORCH_SPEC"
  $PYTHON -m pip install -q --disable-pip-version-check --root-user-action=ignore "$TORCH_SPEC"
fi

# Import name:pip name (pandas and pyarrow: pyprof.read_dict/read_report and Parquet output,
# the `report` extra of pyproject.toml).
pip_missing=()
# plotly draws the HTML report's charts (its plotly.js is inlined in the page); selenium drives
# chromium in the report's tests; duckdb queries many ranks' Parquet (examples/query_ranks.py),
# and Dask's dataframe on a local cluster (distributed) reads the same dataset in
# tests/test_ranks_dask.py.
for mod in pytest numpy pandas pyarrow plotly selenium duckdb "dask.dataframe:dask[dataframe]" \
           distributed; do
  $PYTHON -c "import ${mod%%:*}" 2>/dev/null || pip_missing+=("${mod##*:}")
done
if ((${#pip_missing[@]})); then
  echo "setup: pip install ${pip_missing[*]}"
  $PYTHON -m pip install -q --disable-pip-version-check --root-user-action=ignore "${pip_missing[@]}"
fi

# NVTX3 headers: from the CUDA toolkit when there is one, else from pip's header package.
if ! ls /usr/local/cuda*/include/nvtx3/nvToolsExt.h >/dev/null 2>&1 \
   && [ -z "${CUDA_HOME:-}" ]; then
  $PYTHON -c "import nvidia, os, sys; sys.exit(not any(os.path.exists(os.path.join(p, 'cu13/include/nvtx3')) for p in nvidia.__path__))" 2>/dev/null \
    || $PYTHON -m pip install -q --disable-pip-version-check --root-user-action=ignore nvidia-nvtx
fi

# CUPTI headers (record layouts for the collector's CUDA trace; libcupti is only dlopen'ed at run
# time): from the CUDA toolkit, else from pip's header-carrying CUDA 13.0 wheels (cupti*.h; cuda.h
# and builtin_types.h; crt/host_defines.h, which builtin_types.h includes).
if ! { ls /usr/local/cuda*/include/cupti_activity.h || ls /usr/local/cuda*/extras/CUPTI/include/cupti_activity.h; } \
     >/dev/null 2>&1 && [ -z "${CUDA_HOME:-}" ]; then
  $PYTHON -c "import nvidia, os, sys; sys.exit(not any(os.path.exists(os.path.join(p, 'cu13/include/cupti_activity.h')) and os.path.exists(os.path.join(p, 'cu13/include/cuda.h')) for p in nvidia.__path__))" 2>/dev/null \
    || $PYTHON -m pip install -q --disable-pip-version-check --root-user-action=ignore \
         "nvidia-cuda-cupti==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-crt==13.0.*"
fi

# CUPTI 12 headers, for the tests of the collector's CUDA 12 record layout only (the collector
# defines those records itself, csrc/collect/cupti12_records.h, and builds without them): pip's
# nvidia-cuda-cupti-cu12, 12.8 or newer (its headers define every record version of 12.0-12.9).
# One already installed (a CUDA 12 torch depends on its own) is never replaced: when it is older,
# 12.9's headers go beside the build instead, in build/cupti12-headers.
if [ "${PYPROF_BUILD_TESTS:-0}" = 1 ] && [ -z "${PYPROF_CUPTI12_INCLUDE_DIR:-}" ]; then
  cupti12_api=$($PYTHON - <<'PYEOF' 2>/dev/null || echo 0
import os, re
try:
    import nvidia
    paths = list(nvidia.__path__)
except ImportError:
    paths = []
for p in paths:
    header = os.path.join(p, "cuda_cupti", "include", "cupti_version.h")
    if os.path.exists(header):
        print(re.search(r"#define CUPTI_API_VERSION (\d+)", open(header).read()).group(1))
        break
else:
    print(0)
PYEOF
)
  if [ "$cupti12_api" = 0 ]; then
    echo "setup: pip install nvidia-cuda-cupti-cu12 (CUPTI 12 headers for the collector's tests)"
    $PYTHON -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps \
      "nvidia-cuda-cupti-cu12==12.9.*"
  elif [ "$cupti12_api" -lt 26 ]; then
    echo "setup: the installed nvidia-cuda-cupti-cu12 is older than 12.8 (CUPTI API $cupti12_api);" \
         "12.9's headers go to build/cupti12-headers for the collector's tests"
    $PYTHON -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps \
      --upgrade --target build/cupti12-headers "nvidia-cuda-cupti-cu12==12.9.*"
    export PYPROF_CUPTI12_INCLUDE_DIR="$PWD/build/cupti12-headers/nvidia/cuda_cupti/include"
  fi
fi

echo "setup: building pyprof (build/, tests=${PYPROF_BUILD_TESTS:-0})"
PYPROF_BUILD_TESTS=${PYPROF_BUILD_TESTS:-0} $PYTHON -m pip install -q --disable-pip-version-check --root-user-action=ignore \
  --no-build-isolation --no-deps -e .
