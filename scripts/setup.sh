#!/usr/bin/env bash
# Installs what a fresh development machine (Debian bookworm, Python 3 with pip) lacks, then
# builds pyprof in place. Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
APT_PACKAGES=(cmake ninja-build g++ libsqlite3-dev sqlite3 libgtest-dev libgmock-dev
              libcli11-dev libfmt-dev libsimdjson-dev clang-format)

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

# torch 2.13.0 CPU comes from the local wheel: an exact pin, since a looser spec would pull
# the CUDA build and gigabytes of dependencies.
pip_missing=()
$PYTHON -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null \
  || pip_missing+=("torch==2.13.0")
for mod in pytest numpy; do
  $PYTHON -c "import $mod" 2>/dev/null || pip_missing+=("$mod")
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

echo "setup: building pyprof (build/, tests=${PYPROF_BUILD_TESTS:-0})"
PYPROF_BUILD_TESTS=${PYPROF_BUILD_TESTS:-0} $PYTHON -m pip install -q --disable-pip-version-check --root-user-action=ignore \
  --no-build-isolation --no-deps -e .
