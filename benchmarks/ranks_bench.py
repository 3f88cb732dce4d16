#!/usr/bin/env python3
"""Times parse's parallel multi-input mode and prof's ranks report on many rank databases.

    python benchmarks/ranks_bench.py [--ranks 64] [--kernels 100000] [--runs 3]

Makes one benchmark database (benchmarks/make_parse_db.py, interned op markers: the form
`pyprof profile` records) of --kernels kernels, cached under /tmp/pyprof-bench, and links it
as --ranks files `job/net.rank<R>.sqlite` (parse reads each rank from its name). Then, per run,
measures wall time and peak RSS (GNU time) of:
  pyprof-parse -j 1 job -o out     all ranks one after another, in one process
  pyprof-parse -j N job -o out     N at a time (default: the number of cores)
  pyprof-prof --report ranks out   the cross-rank report over the --ranks net.dicts
  pyprof prof --parquet -o ds out  the Parquet dataset partitioned by rank (docs/dataframes.md
                                   §4.1), N ranks at a time
  query_ranks.py ds                examples/query_ranks.py's DuckDB queries over that dataset
                                   (time per op across ranks, stragglers, bus bandwidth)
and prints a markdown table of medians with min-max.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.join(ROOT, "pyprof", "bin")


def timed(cmd: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS MB) of cmd, measured by GNU time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as f:
        res = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", f.name, *cmd],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if res.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {res.stderr[-2000:]}")
        wall, rss_kb = f.read().split()[-2:]
    return float(wall), int(rss_kb) // 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--kernels", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--cache", default="/tmp/pyprof-bench")
    args = ap.parse_args()
    if not shutil.which("/usr/bin/time"):
        print("needs GNU time (/usr/bin/time)", file=sys.stderr)
        return 2
    sys.path.insert(0, HERE)
    import make_parse_db  # noqa: E402

    # `python -m pyprof` from this checkout
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))

    os.makedirs(args.cache, exist_ok=True)
    db = os.path.join(args.cache, f"ranks_{args.kernels}_interned.sqlite")
    if not os.path.exists(db):
        make_parse_db.generate(db, args.kernels, interned=True)
    work = tempfile.mkdtemp(prefix="ranks-bench-", dir=args.cache)
    try:
        job = os.path.join(work, "job")
        os.makedirs(job)
        for r in range(args.ranks):
            os.link(db, os.path.join(job, f"net.rank{r}.sqlite"))
        out = os.path.join(work, "out")
        parse, prof = os.path.join(BIN, "pyprof-parse"), os.path.join(BIN, "pyprof-prof")
        rows = {f"parse -j 1 ({args.ranks} ranks)": [parse, "-q", "-j", "1", job, "-o", out],
                f"parse -j {args.jobs} ({args.ranks} ranks)":
                    [parse, "-q", "-j", str(args.jobs), job, "-o", out],
                f"prof --report ranks ({args.ranks} net.dicts)":
                    [prof, "--report", "ranks", out, "-o", os.path.join(work, "ranks.txt")],
                f"prof --parquet -j {args.jobs} ({args.ranks} ranks)":
                    [sys.executable, "-m", "pyprof", "prof", "--parquet", "-j", str(args.jobs),
                     "-o", os.path.join(work, "ds"), out],
                "query_ranks.py (DuckDB)":
                    [sys.executable, os.path.join(ROOT, "examples", "query_ranks.py"),
                     os.path.join(work, "ds"), "--json", "--top", "0"]}
        results = {name: [] for name in rows}
        subprocess.run(rows[f"parse -j {args.jobs} ({args.ranks} ranks)"], check=True)  # warm
        for _ in range(args.runs):
            for name, cmd in rows.items():  # in order: each reads what the one before wrote
                results[name].append(timed(cmd))
        print(f"{args.ranks} rank databases of {args.kernels:,} kernels each "
              f"({os.path.getsize(db) / 2**20:.0f} MiB, interned markers), {os.cpu_count()} "
              f"cores; {args.runs} runs, median (min-max)\n")
        print("| command | wall s | peak RSS MB |")
        print("|---|---:|---:|")
        for name, rs in results.items():
            walls = [w for w, _ in rs]
            rss = [m for _, m in rs]
            print(f"| {name} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f})"
                  f" | {statistics.median(rss):.0f} |")
        print(f"\nBenchmark: `python benchmarks/ranks_bench.py --ranks {args.ranks} "
              f"--kernels {args.kernels} --runs {args.runs}`")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
