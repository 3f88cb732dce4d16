"""Times `pyprof report` (the HTML page) and `pyprof export` (the Chrome trace) on a big net.dict
and prints a markdown table: median wall time of N runs, peak RSS (the largest process of the
run: Python or the C++ tool it starts), output size.

    python benchmarks/parse_bench.py --sizes 1000000 --runs 1     # makes /tmp/pyprof-bench/out_1000000.dict
    python benchmarks/report_bench.py --dict /tmp/pyprof-bench/out_1000000.dict --runs 3
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(argv: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True,
                          cwd=ROOT)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")
    rss_kib = int(proc.stderr.strip().splitlines()[-1])
    return wall, rss_kib


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dict", required=True, help="the net.dict to report on")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    size = os.path.getsize(args.dict)
    with open(args.dict, "rb") as f:
        records = sum(1 for _ in f) - 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = {
            "pyprof report (HTML page)": [sys.executable, "-m", "pyprof", "report", args.dict,
                                          "-o", os.path.join(tmp, "r.html")],
            "pyprof export --format chrome (.json.gz)": [
                sys.executable, "-m", "pyprof", "export", "--format", "chrome", args.dict, "-o",
                os.path.join(tmp, "t.json.gz")],
        }
        for label, argv in cases.items():
            run_once(argv)  # warm the page cache
            results = [run_once(argv) for _ in range(args.runs)]
            out = argv[argv.index("-o") + 1]
            rows.append((label, statistics.median(r[0] for r in results),
                         max(r[1] for r in results) / 1024, os.path.getsize(out) / 1e6))
    print(f"net.dict: {records:,} records, {size / 1e9:.2f} GB; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}; median of {args.runs} runs")
    print()
    print("| command | wall (s) | peak RSS (MiB) | output (MB) |")
    print("| --- | ---: | ---: | ---: |")
    for label, wall, rss, out in rows:
        print(f"| {label} | {wall:.1f} | {rss:.0f} | {out:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
