#!/usr/bin/env bash
# Every test: sets up the machine, builds with the GoogleTest suites, then runs ctest and pytest.
# Fails if any test fails or if no test ran. `--fast` leaves out the pytest tests marked slow;
# other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

PYPROF_BUILD_TESTS=1 bash scripts/setup.sh

echo "== GoogleTest (ctest) =="
ctest --test-dir build --output-on-failure --no-tests=error -j2

echo "== pytest =="
# Exit code 5 means no test was collected: that is a failure too.
marks=()
if [ "${1:-}" = "--fast" ]; then
  shift
  marks=(-m "not slow")
fi
$PYTHON -m pytest tests -q -p no:cacheprovider "${marks[@]}" "$@"
