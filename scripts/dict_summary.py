"""Prints a per-op table of a `pyprof parse` output (net.dict): a stopgap view for the demo until
`pyprof prof` (issue #4) computes FLOPs and bytes. GPU records are summed by duration, CPU-only
records by self time."""

import collections
import json
import sys


def main(path: str, top: int = 15) -> int:
    with open(path) as f:
        header = json.loads(f.readline())
        records = [json.loads(line) for line in f]
    cpu = header["records"] == "op"
    time_key = "self_duration" if cpu else "duration"
    rows = collections.defaultdict(lambda: [0, 0])
    modules = collections.defaultdict(lambda: [0, 0])
    for r in records:
        t = r.get(time_key) or 0
        key = (r["op"] or r["name"], r["dir"] or "-")
        rows[key][0] += 1
        rows[key][1] += t
        if r.get("module"):
            modules[(r["module"], r["dir"])][1] += t
    total = sum(t for _, t in rows.values()) or 1
    unit = "self CPU time" if cpu else "GPU time"
    print(f"{path}: {len(records)} {'op instances' if cpu else 'GPU records'} "
          f"from {header['source']} ({header['format']}); top {top} by {unit}")
    print(f"{'op':<34} {'dir':<6} {'count':>6} {'total us':>10} {'%':>6}")
    for (op, d), (n, t) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"{op[:34]:<34} {d:<6} {n:>6} {t / 1e3:>10.1f} {100 * t / total:>6.1f}")
    print(f"\n{'module':<34} {'fprop us':>10} {'bprop us':>10}")
    for mod in sorted({m for m, _ in modules}):
        f_us, b_us = modules[(mod, "fprop")][1] / 1e3, modules[(mod, "bprop")][1] / 1e3
        print(f"{mod[:34]:<34} {f_us:>10.1f} {b_us:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
