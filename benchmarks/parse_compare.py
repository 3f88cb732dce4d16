"""Times two pyprof-parse binaries on one database, interleaved (1 warm-up each, then --runs
runs per binary), writing to a file beside --out-dir, and prints markdown rows: median and
min-max wall s, peak RSS MB (GNU time) and output MB. For before/after comparisons in
docs/benchmarks.md §4.

Usage: parse_compare.py DB BEFORE_BIN AFTER_BIN [--runs N] [--out-dir DIR]"""
import argparse
import os
import statistics
import subprocess
import time

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("db")
p.add_argument("before")
p.add_argument("after")
p.add_argument("--runs", type=int, default=3)
p.add_argument("--out-dir", default="/tmp")
a = p.parse_args()
out = os.path.join(a.out_dir, "parse_compare.dict")
rss_file = os.path.join(a.out_dir, "parse_compare.rss")
bins = {"before": a.before, "after": a.after}


def run(path):
    t = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file, path, "-q", a.db, "-o", out],
                   check=True)
    wall = time.perf_counter() - t
    with open(rss_file) as f:
        rss = int(f.read().split()[-1]) / 1024
    return wall, rss, os.path.getsize(out) / 1e6


res = {b: [] for b in bins}
for path in bins.values():
    run(path)  # warm-up: the database in the page cache
for i in range(a.runs):
    for b, path in bins.items():
        res[b].append(run(path))
for b, v in res.items():
    walls = [w for w, _, _ in v]
    print(f"| {b} | {statistics.median(walls):.2f} | {min(walls):.2f}–{max(walls):.2f} | "
          f"{max(r for _, r, _ in v):.0f} | {v[-1][2]:.1f} |")
for name in (out, rss_file):
    if os.path.exists(name):
        os.remove(name)
