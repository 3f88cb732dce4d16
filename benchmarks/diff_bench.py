#!/usr/bin/env python3
"""Times `pyprof diff` (pyprof-diff) on large net.dicts: wall time and peak RSS.

    python benchmarks/diff_bench.py [--kernels 1000000] [--runs 5] [--cache DIR]

BASE and NEW are two parses of benchmarks/make_parse_db.py databases of --kernels kernels (the
same generator, so every row matches: the cost is the reading and the matching, not the
output): make_parse_db writes the database (cached as parse_bench.py caches it), pyprof-parse
writes BASE.dict once, and NEW.dict is a copy whose kernel durations are all scaled by 1.1 (a
uniform change, as a second run on a slower machine: every row compared, none flagged). Each run
is `pyprof-diff BASE NEW --formats json -o OUT`; the median and range over --runs runs are
printed, with the machine, as a markdown row for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import parse_bench  # noqa: E402  (its database cache and RSS measurement)

DIFF = os.path.join(ROOT, "pyprof", "bin", "pyprof-diff")
PARSE = os.path.join(ROOT, "pyprof", "bin", "pyprof-parse")


def scaled_copy(src: str, dst: str, factor: float) -> None:
    """NEW: BASE with every GPU record's duration times `factor` (header and order kept)."""
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        out.write(f.readline())
        for line in f:
            r = json.loads(line)
            if isinstance(r.get("duration"), int) and r.get("kind") != "sync":
                r["duration"] = round(r["duration"] * factor)
            out.write(json.dumps(r, separators=(",", ":")) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cache", default=os.path.join("/tmp", "pyprof-bench"))
    args = ap.parse_args(argv)
    for tool in (DIFF, PARSE):
        if not os.access(tool, os.X_OK):
            sys.exit(f"diff_bench: {tool} is missing: build pyprof first (scripts/setup.sh)")
    db = parse_bench.database(args.cache, args.kernels, False, False)
    base = os.path.join(args.cache, f"diff_base_{args.kernels}.dict")
    new = os.path.join(args.cache, f"diff_new_{args.kernels}.dict")
    if not os.path.exists(base) or os.path.getmtime(base) < os.path.getmtime(db["path"]):
        subprocess.run([PARSE, "-q", db["path"], "-o", base], check=True)
        scaled_copy(base, new, 1.1)
    out = os.path.join(args.cache, "diff_out.json")
    rss_file = os.path.join(args.cache, "diff_rss.txt")
    how, prefix = parse_bench.rss_prefix(rss_file)
    walls, rss = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        subprocess.run(prefix + [DIFF, base, new, "--formats", "json", "-o", out], check=True)
        wall = time.perf_counter() - t0
        kib, helper_wall = parse_bench.read_measurement(rss_file)
        walls.append(helper_wall or wall)
        rss.append(kib / 1024)
    with open(out, encoding="utf-8") as f:
        rows = sum(1 for _ in f)
    m = parse_bench.machine()
    print(f"machine: {m}")
    print(f"command: pyprof-diff BASE NEW --formats json -o OUT ({args.kernels:,} kernels a "
          f"side, {os.path.getsize(base) / 1e6:.0f} MB dicts; RSS by {how})")
    print("| kernels | runs | wall s, median (min-max) | peak RSS MB, median | JSON rows |")
    print("| ---: | ---: | --- | ---: | ---: |")
    print(f"| {args.kernels:,} | {args.runs} | {statistics.median(walls):.2f} "
          f"({min(walls):.2f}-{max(walls):.2f}) | {statistics.median(rss):.0f} | {rows:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
