"""Times two pyprof-prof binaries, interleaved (1 warm-up, then --runs runs of each mode per
binary), and prints markdown rows (median, min-max wall s, peak RSS MB from GNU time): for
before/after comparisons in docs/benchmarks.md.

Usage: prof_compare.py DICT BEFORE_BIN AFTER_BIN [AFTER_DICT] [--runs N] [--modes a,b]
AFTER_DICT: what the after binary reads (default DICT), e.g. the compact net.dict of the same
trace when BEFORE_BIN only reads the full form."""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

MODES = {"table": ("table (default columns) to a file", []),
         "csv": ("all 31 columns, CSV", ["--csv", "-c", "all"]),
         "reports": ("reports summary,op,module,tc", ["--report", "summary,op,module,tc"])}

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("dict")
p.add_argument("before")
p.add_argument("after")
p.add_argument("after_dict", nargs="?")
p.add_argument("--runs", type=int, default=5)
p.add_argument("--modes", default="table,reports", help=f"of {','.join(MODES)}")
a = p.parse_args()
work = tempfile.mkdtemp(prefix="prof_compare.")
out, rss_file = os.path.join(work, "out"), os.path.join(work, "rss")
bins = {"before": (a.before, a.dict), "after": (a.after, a.after_dict or a.dict)}
modes = {MODES[m][0]: MODES[m][1] for m in a.modes.split(",")}


def run(path, args, dict_path):
    t = time.perf_counter()
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file, path, *args, "-o", out,
                    dict_path], stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    with open(rss_file) as f:
        return wall, int(f.read().split()[-1]) / 1024


res = {(b, m): [] for b in bins for m in modes}
for b, (path, d) in bins.items():
    for m, args in modes.items():
        run(path, args, d)  # warm-up
for i in range(a.runs):
    for m, args in modes.items():
        for b, (path, d) in bins.items():
            res[(b, m)].append(run(path, args, d))
for (b, m), v in sorted(res.items(), key=lambda kv: (list(modes).index(kv[0][1]), kv[0][0] != "before")):
    walls = [w for w, _ in v]
    print(f"| {m} | {b} | {statistics.median(walls):.2f} | {min(walls):.2f}–{max(walls):.2f} | "
          f"{max(r for _, r in v):.0f} |")
for name in (out, rss_file):
    if os.path.exists(name):
        os.remove(name)
os.rmdir(work)
