"""Capture window: records "lc-early" at once, "lc-late" at session time argv[1] s and
"lc-after" at session time argv[2] s (session time: since the launcher started the command).
Prints, per range, the session times just before and just after recording it."""

import json
import os
import sys
import time

START = int(os.environ["PYPROF_SESSION_START_MONO_NS"])


def session_time():
    return (time.monotonic_ns() - START) / 1e9


import lifecycle_common  # noqa: E402,F401  (sys.path)

import pyprof  # noqa: E402

pyprof.range  # the package loads torch and _C lazily: load them now, not inside "lc-early"
out = {}


def record(name, at=None):
    if at is not None:
        time.sleep(max(0.0, at - session_time()))
    before = session_time()
    with pyprof.range(name):
        pass
    out[name] = [before, session_time()]


record("lc-early")
record("lc-late", float(sys.argv[1]))
record("lc-after", float(sys.argv[2]))
print(json.dumps(out), flush=True)
