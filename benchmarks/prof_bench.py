"""Times `pyprof-prof` on the parse outputs of benchmarks/parse_bench.py and prints a markdown
table (median of N runs, peak RSS of the prof process).

    python benchmarks/parse_bench.py --sizes 10000,100000,1000000 --runs 1   # makes the dicts
    python benchmarks/prof_bench.py --runs 5
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROF = os.path.join(ROOT, "pyprof", "bin", "pyprof-prof")
MODES = {
    "table (default columns) to a file": ["-o", "{out}"],
    "all columns, CSV, to a file": ["--csv", "-c", "all", "-o", "{out}"],
    "reports summary,op,module,tc": ["--report", "summary,op,module,tc", "-o", "{out}"],
}


def run_once(args):
    start = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", PROF, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"pyprof-prof failed: {err}")
    return wall, int(err.strip().splitlines()[-1]) / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", default="/tmp/pyprof-bench")
    args = parser.parse_args()
    if not os.access(PROF, os.X_OK):
        raise SystemExit(f"pyprof-prof not built: {PROF}")
    rows = []
    for size in args.sizes.split(","):
        src = os.path.join(args.cache, f"out_{size}.dict")
        if not os.path.exists(src):
            raise SystemExit(f"{src} missing: run benchmarks/parse_bench.py first")
        records = sum(1 for _ in open(src)) - 1
        for mode, template in MODES.items():
            out = os.path.join(args.cache, f"prof_{size}.out")
            cmd = [a.format(out=out) for a in template] + [src]
            run_once(cmd)  # warm-up (page cache)
            runs = [run_once(cmd) for _ in range(args.runs)]
            walls = [w for w, _ in runs]
            rows.append((records, mode, statistics.median(walls), min(walls), max(walls),
                         max(r for _, r in runs), os.path.getsize(src) / 2**20))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor())
    print(f"Machine: {os.cpu_count()} CPUs, {cpu}; Python {platform.python_version()}.")
    print(f"{args.runs} timed runs after 1 warm-up; wall time and peak RSS (GNU time) of pyprof-prof.\n")
    print("| records | mode | input MB | median wall s | min-max s | peak RSS MB | records/s |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for records, mode, med, lo, hi, rss, mb in rows:
        print(f"| {records:,} | {mode} | {mb:.1f} | {med:.2f} | {lo:.2f}-{hi:.2f} | {rss:.0f} | "
              f"{records / med:,.0f} |")
    print(f"\nCommand: {sys.executable} benchmarks/prof_bench.py --sizes {args.sizes} --runs {args.runs}")


if __name__ == "__main__":
    main()
