"""Times two pyprof-prof binaries on the same net.dict, interleaved (1 warm-up, then 5 runs of
each mode per binary), and prints markdown rows: for before/after comparisons in
docs/benchmarks.md. Usage: prof_compare.py DICT BEFORE_BIN AFTER_BIN"""
import statistics
import subprocess
import sys
import time

D = sys.argv[1]
OUT = "/tmp/prof_compare.out"
bins = {"before": sys.argv[2], "after": sys.argv[3]}
modes = {"table (default columns) to a file": ["-o", OUT],
         "reports summary,op,module,tc": ["--report", "summary,op,module,tc", "-o", OUT]}
res = {(b, m): [] for b in bins for m in modes}
for b, path in bins.items():
    for m, a in modes.items():
        subprocess.run([path, *a, D], stderr=subprocess.DEVNULL, check=True)  # warm-up
for i in range(5):
    for b, path in bins.items():
        for m, a in modes.items():
            t = time.perf_counter(); subprocess.run([path, *a, D], stderr=subprocess.DEVNULL, check=True)
            res[(b, m)].append(time.perf_counter() - t)
for (b, m), v in res.items():
    print(f"| {m} | {b} | {statistics.median(v):.2f} | {min(v):.2f}–{max(v):.2f} |")
