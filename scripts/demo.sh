#!/usr/bin/env bash
# The main job, end to end: set up, profile the LeNet example (3 training steps) under
# `pyprof profile`, then print what the database holds. (parse and prof come in later issues.)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
MODEL=${MODEL:-lenet}

bash scripts/setup.sh
mkdir -p out
$PYTHON -m pyprof profile -o "out/$MODEL" --force -- \
  $PYTHON examples/train.py --model "$MODEL" --steps 3 --with-stack
echo
$PYTHON scripts/db_summary.py "out/$MODEL.sqlite"
