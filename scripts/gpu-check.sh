#!/usr/bin/env bash
# The GPU validation in one command (docs/gpu-validation.md), for a GPU machine with no network.
#
#   bash scripts/gpu-check.sh --pack DIR      # beforehand, on a networked Debian machine: put what a
#                                             # bare GPU machine lacks into DIR (about 20 MB)
#   bash scripts/gpu-check.sh --deps DIR      # on the GPU machine: build, smoke-test, check report,
#                                             # export and peaks on the smoke capture, run
#                                             # tests/test_gpu_capture.py, test_gpu_compile.py and the overhead benchmark,
#                                             # capture a CUDA 12 program (tests/test_gpu_cuda12.py),
#                                             # print the rows for docs/gpu-validation.md
#
# The GPU machines have Python, torch, CMake, ninja, nvcc, pytest and the nvidia-* wheels, but no
# apt, SQLite headers, simdjson, CLI11, fmt or zlib headers, and no plotly. --pack fetches Debian's
# packages of those and unpacks them into DIR/prefix (plus the Python headers of a local
# python3.12, in case the machine's interpreter has none), and the pure-Python wheels `pyprof
# report` needs into DIR/wheels; --deps points the build at them and installs the wheels whose
# packages the machine lacks into OUT/wheels-site. Their torch is built for CUDA 13, so --pack
# also brings CUDA 12 along (DIR/cuda12, about 17 MB): libcudart.so.12 and libcupti.so.12 of
# CUDA 12.0 and 12.9 from NVIDIA's pip wheels, in pip's layout, and cuda12_capture_app, a CUDA 12
# program compiled here with g++ (csrc/collect/testing/cuda12_capture_app.cpp; PYPROF_PACK_CUDA12=0
# leaves all that out). Nothing is fetched at run time. Each phase has
# a time cap inside --budget, writes its output under --out as it goes, and a phase that fails or
# runs out of time is reported while the later phases still run.
#
# Options (run mode):
#   --deps DIR     the folder --pack made (omit if the machine has the libraries itself)
#   --out DIR      where logs, databases and results go (default ./gpu-check-out); when $OUT is
#                  set (the device tool's folder that comes back), the eight files worth
#                  reading are copied there after every phase: gpu-check.log (every phase's
#                  log and the facts), rows.md, the build, smoke, tests and overhead logs,
#                  smoke.html (pyprof report of the smoke capture) and peaks.json (pyprof peak)
#   --budget S     seconds for everything (default 540: one device call is at most 600)
#   --runs N       overhead benchmark runs per mode (default 3)
#   --skip LIST    comma-separated phases to skip: build,smoke,report,tests,cuda12,overhead
#   --cpu-ok       exit 0 when no CUDA device is visible (the offline dry run on a CPU machine)
# Exit status: 0 when every phase that ran passed, 1 otherwise, 2 for usage errors.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}

PACK_DEBS=(libsqlite3-dev libsqlite3-0 libsimdjson-dev libsimdjson14 libfmt-dev libfmt9
           libcli11-dev zlib1g-dev libisal-dev libisal2)
# plotly 7 (pyprof report) and its runtime needs, all pure Python (py3-none-any): narwhals and
# packaging. Its optional dataframe back ends (pandas, pyarrow) are far too big to carry and not
# needed for the report.
PACK_WHEELS=(plotly narwhals packaging)
PACK_LIMIT_BYTES=$((60 * 1024 * 1024))  # the device tool carries at most 64 MiB in all
# The CUDA 12 releases the cuda12 phase captures: the first (CUPTI API 18: Memcpy5,
# Synchronization, Device4 and Context records) and the last (API 28: Memcpy6,
# Synchronization2, Device5, Context3). The program is built against the first's headers.
CUDA12_RELEASES=(12.0.146 12.9.79)

# The usage is this file's opening comment block.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-2}"; }

# ---- --pack: on a networked machine --------------------------------------------------------
pack() {
  local dir=$1
  mkdir -p "$dir/debs" "$dir/prefix" || exit 1
  dir=$(cd "$dir" && pwd)
  echo "gpu-check --pack: Debian packages into $dir/prefix"
  if ! (cd "$dir/debs" && apt-get download "${PACK_DEBS[@]}" 2>"$dir/debs/apt.log"); then
    echo "gpu-check --pack: apt-get download failed (see $dir/debs/apt.log); once, as root:" \
         "apt-get update" >&2
    exit 1
  fi
  local deb
  for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dir/prefix" || exit 1; done
  # Docs and changelogs only make the folder heavier.
  rm -rf "$dir/prefix/usr/share/doc" "$dir/prefix/usr/share/lintian"

  # One version of each wheel: an earlier pack's older ones would make pip refuse the install.
  # PYPROF_PACK_PIP_ARGS adds pip options (a local mirror: --no-index --find-links DIR).
  rm -rf "$dir/wheels"
  echo "gpu-check --pack: wheels ${PACK_WHEELS[*]} into $dir/wheels"
  # shellcheck disable=SC2086  # the options are meant to split
  if ! "$PYTHON" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
         --disable-pip-version-check ${PYPROF_PACK_PIP_ARGS:-} -d "$dir/wheels" "${PACK_WHEELS[@]}" \
         >"$dir/pip.log" 2>&1; then
    tail -n 5 "$dir/pip.log" >&2
    echo "gpu-check --pack: pip download failed (see $dir/pip.log)" >&2
    exit 1
  fi
  rm -f "$dir/pip.log"

  # The GPU machines run Python 3.12; if their interpreter lacks Python.h, these headers stand in
  # (same minor version, same ABI). Any local 3.12 will do: PYPROF_PACK_PYTHON names one.
  local py312="" candidate
  for candidate in ${PYPROF_PACK_PYTHON:-} $(command -v python3.12) /root/.pyenv/versions/3.12*/bin/python3.12 \
                   /usr/bin/python3.12; do
    if [ -x "$candidate" ] && "$candidate" -c "import sys; assert sys.version_info[:2] == (3, 12)" 2>/dev/null; then
      py312=$candidate; break
    fi
  done
  if [ -n "$py312" ]; then
    local inc
    inc=$("$py312" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
    if [ -f "$inc/Python.h" ]; then
      rm -rf "$dir/python3.12-include"
      cp -r "$inc" "$dir/python3.12-include"
      echo "gpu-check --pack: Python 3.12 headers from $py312"
    fi
  else
    echo "gpu-check --pack: no local python3.12: Python headers not packed (set PYPROF_PACK_PYTHON)"
  fi

  if [ "${PYPROF_PACK_CUDA12:-1}" != 0 ]; then pack_cuda12 "$dir" || exit 1; fi

  {
    echo "# made by: bash scripts/gpu-check.sh --pack $dir  ($(date -u +%FT%TZ), $(uname -m))"
    for deb in "$dir"/debs/*.deb; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb"; done
    local whl
    for whl in "$dir"/wheels/*.whl; do echo "wheel $(basename "$whl")"; done
    [ -d "$dir/python3.12-include" ] && echo "python3.12-include from $py312"
    [ -f "$dir/cuda12/MANIFEST" ] && cat "$dir/cuda12/MANIFEST"
  } >"$dir/MANIFEST"
  rm -rf "$dir/debs"
  local bytes
  bytes=$(du -sb "$dir" | cut -f1)
  if [ "$bytes" -gt "$PACK_LIMIT_BYTES" ]; then
    echo "gpu-check --pack: $dir is $((bytes / 1048576)) MiB, over the $((PACK_LIMIT_BYTES / 1048576)) MiB a device call carries" >&2
    exit 1
  fi
  cat "$dir/MANIFEST"
  echo "gpu-check --pack: $dir: $((bytes / 1024)) KiB. On the GPU machine:" \
       "bash scripts/gpu-check.sh --deps $(basename "$dir")"
}

# A folder with crt/host_defines.h (which CUDA 12's runtime headers include but its wheel lacks)
# and nvtx3/: a CUDA toolkit's include, or the one of pip's CUDA 13 header wheels pyprof builds
# with.
cuda_support_include() {
  local candidate
  for candidate in ${CUDA_HOME:+"$CUDA_HOME/include"} /usr/local/cuda/include /usr/local/cuda-1*/include \
                   $("$PYTHON" -c "import nvidia, os; print(' '.join(os.path.join(p, 'cu13', 'include') for p in nvidia.__path__))" 2>/dev/null); do
    if [ -f "$candidate/crt/host_defines.h" ] && [ -f "$candidate/nvtx3/nvToolsExt.h" ]; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

# DIR/cuda12: each release's libcudart.so.12 and libcupti.so.12 where pip puts them
# (RELEASE/nvidia/cuda_runtime/lib, RELEASE/nvidia/cuda_cupti/lib), and the CUDA 12 program.
pack_cuda12() {
  local dir=$1/cuda12 tmp release support
  rm -rf "$dir"
  mkdir -p "$dir" || return 1
  tmp=$(mktemp -d) || return 1
  echo "gpu-check --pack: CUDA ${CUDA12_RELEASES[*]} libraries into $dir"
  for release in "${CUDA12_RELEASES[@]}"; do
    # shellcheck disable=SC2086  # the options are meant to split
    if ! "$PYTHON" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
           --platform manylinux1_x86_64 --platform manylinux2014_x86_64 \
           --platform manylinux_2_17_x86_64 --platform manylinux_2_25_x86_64 \
           --disable-pip-version-check ${PYPROF_PACK_PIP_ARGS:-} -d "$tmp/$release" \
           "nvidia-cuda-cupti-cu12==$release" "nvidia-cuda-runtime-cu12==$release" \
           >"$tmp/pip.log" 2>&1; then
      tail -n 5 "$tmp/pip.log" >&2
      echo "gpu-check --pack: pip download of the CUDA $release wheels failed" >&2
      rm -rf "$tmp"; return 1
    fi
    # The two libraries (and the 12.0 runtime's headers, to build with) out of the wheels.
    "$PYTHON" - "$tmp/$release" "$dir/$release" "$tmp/include-$release" <<'PYEOF' || { rm -rf "$tmp"; return 1; }
import glob, os, shutil, sys, zipfile
wheels, out, include = sys.argv[1:]
wanted = {"nvidia/cuda_cupti/lib/libcupti.so.12", "nvidia/cuda_runtime/lib/libcudart.so.12"}
found = set()
for path in glob.glob(os.path.join(wheels, "*.whl")):
    with zipfile.ZipFile(path) as whl:
        for member in whl.namelist():
            if member in wanted:
                os.makedirs(os.path.join(out, os.path.dirname(member)), exist_ok=True)
                with whl.open(member) as src, open(os.path.join(out, member), "wb") as dst:
                    shutil.copyfileobj(src, dst)
                found.add(member)
            elif member.startswith("nvidia/cuda_runtime/include/"):
                target = os.path.join(include, member[len("nvidia/cuda_runtime/include/"):])
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with whl.open(member) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
missing = wanted - found
if missing:
    sys.exit(f"gpu-check --pack: not in the wheels of {wheels}: {', '.join(sorted(missing))}")
PYEOF
  done
  if ! support=$(cuda_support_include); then
    echo "gpu-check --pack: no include folder with crt/host_defines.h and nvtx3/ (a CUDA toolkit," \
         "or pip's nvidia-cuda-crt and nvidia-nvtx): cannot build the CUDA 12 program" >&2
    rm -rf "$tmp"; return 1
  fi
  local first=${CUDA12_RELEASES[0]}
  if ! ${CXX:-g++} -std=c++17 -O2 -Wall -Wextra -o "$dir/cuda12_capture_app" \
         csrc/collect/testing/cuda12_capture_app.cpp -I "$tmp/include-$first" -I "$support" \
         -L "$dir/$first/nvidia/cuda_runtime/lib" -l:libcudart.so.12 -ldl \
         -static-libstdc++ -static-libgcc; then
    echo "gpu-check --pack: building cuda12_capture_app failed" >&2
    rm -rf "$tmp"; return 1
  fi
  {
    for release in "${CUDA12_RELEASES[@]}"; do
      echo "cuda12 $release: $(cd "$dir/$release" && find . -name 'lib*.so.12' | sort | paste -sd' ')"
    done
    echo "cuda12 cuda12_capture_app: g++ against CUDA $first's runtime headers (+ $support)"
  } >"$dir/MANIFEST"
  rm -rf "$tmp"
}

# ---- run mode ------------------------------------------------------------------------------
DEPS=""; OUT_DIR=$ROOT/gpu-check-out; BUDGET=540; RUNS=3; SKIP=""; CPU_OK=0
while (($#)); do
  case $1 in
    --pack) [ $# -ge 2 ] || usage; pack "$2"; exit 0 ;;
    --deps) [ $# -ge 2 ] || usage; DEPS=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; OUT_DIR=$2; shift 2 ;;
    --budget) [ $# -ge 2 ] || usage; BUDGET=$2; shift 2 ;;
    --runs) [ $# -ge 2 ] || usage; RUNS=$2; shift 2 ;;
    --skip) [ $# -ge 2 ] || usage; SKIP=$2; shift 2 ;;
    --cpu-ok) CPU_OK=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "gpu-check: unknown option $1" >&2; usage ;;
  esac
done
[[ $BUDGET =~ ^[0-9]+$ && $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "gpu-check: --budget and --runs take whole numbers" >&2; exit 2; }
mkdir -p "$OUT_DIR" || exit 2
OUT_DIR=$(cd "$OUT_DIR" && pwd)
LOG=$OUT_DIR/gpu-check.log
# A skipped phase must not leave an earlier run's output to be reported or published as this one's.
rm -f "$OUT_DIR"/{build,smoke,report,tests,cuda12,overhead}.log \
      "$OUT_DIR"/{rows.md,facts.json,tests.xml,cuda12.xml} \
      "$OUT_DIR"/nvidia-smi.txt "$OUT_DIR"/smoke.{sqlite,dict} "$OUT_DIR"/smoke-prof.txt \
      "$OUT_DIR"/smoke.{html,trace.json.gz,ranges.dict,reparsed.dict} \
      "$OUT_DIR"/smoke-{roofline.txt,peaks.jsonl} "$OUT_DIR"/peaks.json
rm -rf "$OUT_DIR/wheels-site"
: >"$LOG"
START=$SECONDS
FAILED=()
say() { echo "$*" | tee -a "$LOG"; }
# The device tool brings back at most 8 files from $OUT: the results, not the databases. Each
# phase's log is also in gpu-check.log (and the facts in its "facts:" line, tests.xml's verdicts in
# tests.log and rows.md), so the report phase's log, facts.json and tests.xml stay behind to make
# room for the report page and the measured peaks.
RESULT_FILES=(gpu-check.log rows.md build.log smoke.log tests.log overhead.log smoke.html peaks.json)
publish() {
  [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ "$(cd "$OUT" && pwd)" != "$OUT_DIR" ] || return 0
  local f
  for f in "${RESULT_FILES[@]}"; do [ -f "$OUT_DIR/$f" ] && cp "$OUT_DIR/$f" "$OUT/"; done
  return 0
}
trap publish EXIT  # also when a phase or the script itself ends it early
skipped() { [[ ",$SKIP," == *",$1,"* ]]; }
# Seconds a phase may take: its cap, or what is left of the budget if that is less.
allow() { local left=$((BUDGET - (SECONDS - START))); ((left < $1)) && echo $((left > 10 ? left : 10)) || echo "$1"; }
# run_phase NAME CAP CMD...: runs CMD under its time cap, output to OUT/NAME.log and the log.
run_phase() {
  local name=$1 cap; cap=$(allow "$2"); shift 2
  say ""; say "== $name (up to ${cap}s)"
  local t0=$SECONDS rc
  echo "\$ $*" >"$OUT_DIR/$name.log"
  timeout --kill-after=10 "$cap" "$@" >>"$OUT_DIR/$name.log" 2>&1
  rc=$?
  cat "$OUT_DIR/$name.log" >>"$LOG"
  tail -n 25 "$OUT_DIR/$name.log"
  publish
  if ((rc == 124 || rc == 137)); then
    say "== $name: ran out of time after $((SECONDS - t0))s"; FAILED+=("$name(time)")
  elif ((rc != 0)); then
    # The tail of a failed pip build is a Python traceback: show the compiler's or CMake's words.
    grep -m 8 -A 6 -E "CMake Error|error:|Error [0-9]+|FAILED:" "$OUT_DIR/$name.log" | head -n 60
    say "== $name: FAILED (exit $rc) after $((SECONDS - t0))s"; FAILED+=("$name")
  else
    say "== $name: ok ($((SECONDS - t0))s)"
  fi
  return $rc
}

if [ -n "$DEPS" ]; then
  [ -d "$DEPS/prefix/usr" ] || { echo "gpu-check: $DEPS has no prefix/usr: make it with --pack" >&2; exit 2; }
  DEPS=$(cd "$DEPS" && pwd)
  export CMAKE_PREFIX_PATH="$DEPS/prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  cmake_args="-DCMAKE_PREFIX_PATH=$DEPS/prefix/usr"
  pyinc=$($PYTHON -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  pyver=$($PYTHON -c "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')")
  if [ ! -f "$pyinc/Python.h" ] && [ -f "$DEPS/python$pyver-include/Python.h" ]; then
    cmake_args+=" -DPython3_INCLUDE_DIR=$DEPS/python$pyver-include"
    say "gpu-check: $PYTHON has no Python.h: using the packed Python $pyver headers"
  fi
  export PYPROF_CMAKE_ARGS="$cmake_args${PYPROF_CMAKE_ARGS:+ $PYPROF_CMAKE_ARGS}"

  # The packed wheels whose packages this Python lacks (plotly, on the GPU machines), installed
  # offline into a folder of this run's output that leads PYTHONPATH from here on. A package the
  # machine has is left alone: a second copy on PYTHONPATH would shadow it for every phase.
  if compgen -G "$DEPS/wheels/*.whl" >/dev/null; then
    mapfile -t missing_wheels < <($PYTHON - "$DEPS/wheels" <<'EOF'
import glob, os, sys
from importlib import metadata
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.whl"))):
    try:
        metadata.version(os.path.basename(path).split("-")[0])
    except metadata.PackageNotFoundError:
        print(path)
EOF
    )
    if ((${#missing_wheels[@]})); then
      names=$(for w in "${missing_wheels[@]}"; do basename "$w" | cut -d- -f1,2; done | paste -sd' ')
      if $PYTHON -m pip install --no-index --no-deps --no-compile --disable-pip-version-check -q \
           --target "$OUT_DIR/wheels-site" "${missing_wheels[@]}" >>"$LOG" 2>&1; then
        export PYTHONPATH="$OUT_DIR/wheels-site${PYTHONPATH:+:$PYTHONPATH}"
        say "gpu-check: packed wheels installed into $OUT_DIR/wheels-site (on PYTHONPATH): $names"
      else
        say "gpu-check: installing the packed wheels failed (see the log): $names"
      fi
    else
      say "gpu-check: the packed wheels' packages are all installed here: none used"
    fi
  fi
fi

# ---- facts ---------------------------------------------------------------------------------
say "gpu-check: $(date -u +%FT%TZ) on $(hostname) ($(uname -sr), $(nproc) CPUs)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  >"$OUT_DIR/nvidia-smi.txt" 2>&1 || echo "nvidia-smi: not available" >"$OUT_DIR/nvidia-smi.txt"
say "nvidia-smi: $(head -n1 "$OUT_DIR/nvidia-smi.txt")"
# The report's Python packages and the packed wheels' ones, as the phases will see them.
GPU_CHECK_PACKAGES="${PACK_WHEELS[*]}"
for whl in ${DEPS:+"$DEPS"/wheels/*.whl}; do
  [ -f "$whl" ] && GPU_CHECK_PACKAGES+=" $(basename "$whl" | cut -d- -f1)"
done
export GPU_CHECK_PACKAGES
$PYTHON - >"$OUT_DIR/facts.json" 2>>"$LOG" <<'EOF'
import json, os, platform, shutil, subprocess
from importlib import metadata
facts = {"python": platform.python_version()}
packages = {}
for name in os.environ["GPU_CHECK_PACKAGES"].split():
    try:
        packages[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        packages[name] = None
facts["python_packages"] = packages
try:
    import torch
    facts.update(torch=torch.__version__, cuda=torch.version.cuda,
                 cuda_available=torch.cuda.is_available())
    if facts["cuda_available"]:
        p = torch.cuda.get_device_properties(0)
        facts.update(gpu=p.name, sm=f"{p.major}.{p.minor}", sms=p.multi_processor_count,
                     memory_gib=round(p.total_memory / 2**30, 1))
except Exception as exc:  # the report says what went wrong instead of stopping here
    facts["torch_error"] = f"{type(exc).__name__}: {exc}"
for tool in ("cmake", "ninja", "nvcc"):
    path = shutil.which(tool)
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout if path else ""
    facts[tool] = (out.strip().splitlines() or ["not found"])[0 if tool != "nvcc" else -1]
print(json.dumps(facts))
EOF
say "facts: $(cat "$OUT_DIR/facts.json")"
publish
HAVE_GPU=$($PYTHON -c "import json,sys; print(int(bool(json.load(open(sys.argv[1])).get('cuda_available'))))" "$OUT_DIR/facts.json" 2>/dev/null || echo 0)

# ---- build: the way a user installs (pip, editable, against this torch, offline) -----------
if ! skipped build; then
  export PYPROF_BUILD_DIR="$ROOT/build-gpu" PYPROF_BUILD_TESTS=0 PYPROF_JOBS=$(nproc)
  run_phase build 300 $PYTHON -m pip install --no-build-isolation --no-deps --no-index \
      --disable-pip-version-check -e "$ROOT"
  if (($? == 0)); then
    $PYTHON -m pyprof --version 2>&1 | tee -a "$LOG"
  else
    say "gpu-check: the build failed: nothing else can run"
    skipped smoke || SKIP+=",smoke"; skipped report || SKIP+=",report"
    skipped tests || SKIP+=",tests"; skipped overhead || SKIP+=",overhead"
    skipped cuda12 || SKIP+=",cuda12"
  fi
fi

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
if ((HAVE_GPU)); then DEVICE=cuda; else DEVICE=cpu; fi

# ---- smoke: profile a real model, parse it, print prof's summary ---------------------------
if ! skipped smoke; then
  export PYTHON OUT_DIR DEVICE
  run_phase smoke 120 bash -ec '
    $PYTHON -m pyprof profile -o "$OUT_DIR/smoke" --force -- \
      $PYTHON examples/train.py --model resnet_block --device "$DEVICE" --steps 3
    $PYTHON -m pyprof parse "$OUT_DIR/smoke.sqlite" -o "$OUT_DIR/smoke.dict"
    $PYTHON -m pyprof prof --report summary,op --depth 1 "$OUT_DIR/smoke.dict" >"$OUT_DIR/smoke-prof.txt"
    # The summary whole (it grew: memory, ops without a model), then the first ops.
    awk "/^ops by /{n=1} !n || n++ <= 15" "$OUT_DIR/smoke-prof.txt"'
fi

# ---- report: pyprof report, export and peaks on the smoke capture (issue 13) ----------------
# Runs as one timed phase (bash -c report_phase). Each step prints a line
# "check NAME: ok|skipped|FAILED: ..." that scripts/gpu_check_report.py turns into rows; a failed
# step fails the phase and the later steps still run.
report_phase() {
  local db=$OUT_DIR/smoke.sqlite dict=$OUT_DIR/smoke.dict failed=0 rc plotly_error=""
  local -a peak_args peaks_args=()
  step_failed() { echo "check $1: FAILED: $2"; failed=1; }
  bytes() { stat -c %s "$1"; }

  # The datasheet peaks matched to the captured device and the roofline over them.
  echo "\$ pyprof prof --report peaks,roofline smoke.dict (the first 30 lines)"
  $PYTHON -m pyprof prof --report peaks,roofline "$dict" >"$OUT_DIR/smoke-roofline.txt"; rc=$?
  head -n 30 "$OUT_DIR/smoke-roofline.txt"
  ((rc == 0)) && echo "check roofline: ok: $(grep -c . "$OUT_DIR/smoke-roofline.txt") lines" \
    || step_failed roofline "pyprof prof --report peaks,roofline exit $rc"

  # Export the database, read the trace back: the same records, kind by kind.
  echo; echo "\$ pyprof export smoke.sqlite -o smoke.trace.json.gz; pyprof parse --ranges of both"
  local trace=$OUT_DIR/smoke.trace.json.gz failed_step="" status=0
  $PYTHON -m pyprof export "$db" -o "$trace" || { status=$?; failed_step="pyprof export"; }
  [ -n "$failed_step" ] || $PYTHON -m pyprof parse --ranges "$db" -o "$OUT_DIR/smoke.ranges.dict" \
    || { status=$?; failed_step="pyprof parse --ranges smoke.sqlite"; }
  [ -n "$failed_step" ] || $PYTHON -m pyprof parse --ranges "$trace" -o "$OUT_DIR/smoke.reparsed.dict" \
    || { status=$?; failed_step="pyprof parse --ranges smoke.trace.json.gz"; }
  if [ -n "$failed_step" ]; then
    step_failed export "$failed_step exit $status"
  else
    local counts
    counts=$($PYTHON scripts/gpu_check_report.py records "$OUT_DIR/smoke.ranges.dict" \
             "$OUT_DIR/smoke.reparsed.dict" 2>&1); rc=$?
    ((rc == 0)) && echo "check export: ok: smoke.trace.json.gz $(bytes "$OUT_DIR/smoke.trace.json.gz") bytes; $counts" \
      || step_failed export "smoke.trace.json.gz $(bytes "$OUT_DIR/smoke.trace.json.gz") bytes; $counts"
  fi

  # The report page (plotly: the machine's, or the packed wheel installed above).
  echo; echo "\$ pyprof report smoke.sqlite -o smoke.html"
  # What pyprof/report.py imports: a plotly too new for the machine's narwhals fails here.
  local plotly_import="import plotly.graph_objects, plotly.offline"
  if ! $PYTHON -c "$plotly_import" 2>/dev/null; then
    plotly_error=$($PYTHON -c "$plotly_import" 2>&1 | tail -n 1)
    echo "check report: skipped: plotly does not import here ($plotly_error); --pack packs its" \
         "wheels and --deps installs them"
  elif $PYTHON -m pyprof report "$db" -o "$OUT_DIR/smoke.html"; then
    echo "check report: ok: smoke.html $(bytes "$OUT_DIR/smoke.html") bytes (datasheet roofs)"
  else
    step_failed report "pyprof report exit $?"
  fi

  # Measured roofs: a modest run on the GPU, a tiny one on the CPU (the dry run's path).
  if [ "$DEVICE" = cuda ]; then peak_args=(--device cuda --repeat 3)
  else peak_args=(--device cpu --size 256 --repeat 2 --warmup 1 --copy-mb 16); fi
  echo; echo "\$ pyprof peak ${peak_args[*]} -o peaks.json"
  if $PYTHON -m pyprof peak "${peak_args[@]}" -o "$OUT_DIR/peaks.json"; then
    echo "check peak: ok: peaks.json (pyprof peak ${peak_args[*]})"
    peaks_args=(--peaks "$OUT_DIR/peaks.json")
  else
    step_failed peak "pyprof peak ${peak_args[*]} exit $?"
  fi

  # Which device the datasheet peaks were matched to, and measured / datasheet per mode.
  echo; echo "\$ pyprof prof --report peaks ${peaks_args[*]:+--peaks peaks.json} --formats json smoke.dict"
  if $PYTHON -m pyprof prof --report peaks "${peaks_args[@]}" --formats json "$dict" \
       >"$OUT_DIR/smoke-peaks.jsonl"; then
    $PYTHON scripts/gpu_check_report.py peaks "$OUT_DIR/smoke-peaks.jsonl" \
      ${peaks_args[1]:+"${peaks_args[1]}"} || failed=1
  else
    step_failed peaks "pyprof prof --report peaks exit $?"
  fi

  if ((${#peaks_args[@]})) && [ -z "$plotly_error" ] && [ -f "$OUT_DIR/smoke.html" ]; then
    echo; echo "\$ pyprof report smoke.sqlite --peaks peaks.json -o smoke.html"
    if $PYTHON -m pyprof report "$db" --peaks "$OUT_DIR/peaks.json" -o "$OUT_DIR/smoke.html"; then
      echo "check report-measured: ok: smoke.html rewritten with the measured roofs beside the" \
           "datasheet ones, $(bytes "$OUT_DIR/smoke.html") bytes"
    else
      step_failed report-measured "pyprof report --peaks peaks.json exit $?"
    fi
  fi
  return $failed
}

if ! skipped report; then
  if [ -s "$OUT_DIR/smoke.sqlite" ] && [ -s "$OUT_DIR/smoke.dict" ]; then
    export PYTHON OUT_DIR DEVICE
    export -f report_phase  # the phase's bash runs it (timeout runs programs, not functions)
    run_phase report 120 bash -c report_phase
  else
    # Not a failure of its own: a failed smoke phase is one already, a skipped one was asked for.
    say ""; say "== report: skipped: the smoke phase left no smoke.sqlite and smoke.dict"
  fi
fi

# ---- the GPU tests and the overhead benchmark ----------------------------------------------
if ((HAVE_GPU)); then
  if ! skipped tests; then
    # The capture tests, then CUDA graphs and torch.compile (Triton) end to end (issue 17), and
    # the CUDA caching allocator's memory capture (issue 35).
    run_phase tests 450 $PYTHON -m pytest tests/test_gpu_capture.py tests/test_gpu_compile.py \
      tests/test_gpu_memory.py -v -rP -p no:cacheprovider --junitxml="$OUT_DIR/tests.xml"
  fi
  # A CUDA 12 program under pyprof profile, with the packed CUDA 12 releases (issue 32).
  if ! skipped cuda12; then
    if [ -x "${DEPS:-}/cuda12/cuda12_capture_app" ]; then
      export PYPROF_CUDA12_PACK="$DEPS/cuda12"
      run_phase cuda12 180 $PYTHON -m pytest \
        tests/test_gpu_cuda12.py -v -rP -p no:cacheprovider --junitxml="$OUT_DIR/cuda12.xml"
    else
      say ""; say "== cuda12: skipped: no ${DEPS:-<--deps>}/cuda12/cuda12_capture_app (--pack makes it)"
    fi
  fi
  if ! skipped overhead; then
    run_phase overhead 240 $PYTHON benchmarks/gpu_overhead.py --runs "$RUNS" --steps 20
  fi
else
  say ""; say "== no CUDA device visible: tests/test_gpu_capture.py, the CUDA 12 capture and the overhead benchmark skipped"
  ((CPU_OK)) || FAILED+=("no-gpu")
fi

# ---- the rows for docs/gpu-validation.md ---------------------------------------------------
say ""
$PYTHON scripts/gpu_check_report.py "$OUT_DIR" 2>&1 | tee "$OUT_DIR/rows.md" | tee -a "$LOG"
say ""
if ((${#FAILED[@]})); then
  say "gpu-check: FAILED: ${FAILED[*]} ($((SECONDS - START))s; logs in $OUT_DIR)"
  exit 1
fi
say "gpu-check: passed ($((SECONDS - START))s; logs in $OUT_DIR)"
