import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)

BUILT = all(os.path.exists(os.path.join(ROOT, "pyprof", p))
            for p in ("bin/pyprof-profile", "bin/pyprof-parse", "lib/libpyprof_collect.so"))


def pytest_collection_modifyitems(config, items):
    if BUILT:
        return
    if os.environ.get("CI"):
        raise pytest.UsageError("pyprof's C++ parts are not built; CI must build them first")
    skip = pytest.mark.skip(reason="pyprof's C++ parts are not built (run scripts/setup.sh)")
    for item in items:
        if "needs_build" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_build: needs the collector and launcher built")
