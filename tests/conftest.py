import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)

import testlib  # noqa: E402  (found through the sys.path entry above)

BUILT = all(os.path.exists(p) for p in (testlib.LAUNCHER, testlib.PARSE, testlib.COLLECTOR))


def pytest_collection_modifyitems(config, items):
    if BUILT:
        return
    if os.environ.get("CI"):
        raise pytest.UsageError("pyprof's C++ parts are not built; CI must build them first")
    skip = pytest.mark.skip(reason="pyprof's C++ parts are not built (run scripts/setup.sh)")
    for item in items:
        if "needs_build" in item.keywords:
            item.add_marker(skip)

