#!/usr/bin/env python3
"""Writes a database with one legacy PyProf traceMarker range of N frames (the repr() of a
Python dict holding the call stack as a list) around a legacy op marker and one kernel, to time
`pyprof parse` on long marker lists (docs/benchmarks.md §4.1).

    python benchmarks/make_trace_marker_db.py --frames 800000 -o /tmp/trace_800k.sqlite
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from nsys_synth import SynthDb  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    frames = [f"/home/user/project/train_{i}.py:{i}" for i in range(args.frames)]
    db = SynthDb()
    t = db.thread(pid=100, tid=100)
    with t.range(repr({"traceMarker": frames})):
        with t.range(repr({"mod": "torch.nn.functional", "op": "linear", "args": []})):
            t.launch("void k<float>(float*)")
    db.save(args.output)


if __name__ == "__main__":
    main()
