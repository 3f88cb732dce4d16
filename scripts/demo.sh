#!/usr/bin/env bash
# The main job, end to end: set up, profile the LeNet example (3 training steps) under
# `pyprof profile`, attribute every op with `pyprof parse`, then print FLOPs, bytes and time per
# op and per module with `pyprof prof`, and write the HTML report (out/MODEL.html).
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
$PYTHON -m pyprof prof --report summary,op,module --depth 2 "out/$MODEL.dict"
echo
$PYTHON -m pyprof report "out/$MODEL.dict" -o "out/$MODEL.html"
echo "open out/$MODEL.html in a browser: roofline, time breakdowns, sortable tables (works offline)"
