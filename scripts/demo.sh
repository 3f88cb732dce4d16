#!/usr/bin/env bash
# The main job, end to end: set up, profile the LeNet example (3 training steps) under
# `pyprof profile`, attribute every op with `pyprof parse`, and print a per-op and per-module
# table. (FLOPs and bytes come with `pyprof prof`, issue #4.)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
MODEL=${MODEL:-lenet}

bash scripts/setup.sh
mkdir -p out
$PYTHON -m pyprof profile -o "out/$MODEL" --force -- \
  $PYTHON examples/train.py --model "$MODEL" --steps 3 --with-stack
echo
$PYTHON -m pyprof parse "out/$MODEL.sqlite" -o "out/$MODEL.dict"
echo
$PYTHON scripts/dict_summary.py "out/$MODEL.dict"
