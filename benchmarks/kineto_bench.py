#!/usr/bin/env python3
"""Times `pyprof parse` on a torch.profiler (Kineto) trace, and Holistic Trace Analysis (HTA) on
the same file, and prints a markdown table.

    python benchmarks/kineto_bench.py [--trace T.json | --events N] [--runs 5] [--hta-runs 3]

The trace: --trace PATH (its PATH.gz is used too, and written when missing; PATH.counts.json
from benchmarks/make_kineto_trace.py gives the event count, else the file is counted), or a new
one written by make_kineto_trace.py into a temporary folder (default size: >= 2M events and
>= 400 MB; --events N for a quick run) and deleted afterwards unless --keep.

pyprof: `PARSER TRACE -o OUT -q` for the .json and the .json.gz, each run a fresh process, one
untimed warm-up (page cache) then --runs timed runs; PARSER is --parser (a command line), by
default this checkout's pyprof/bin/pyprof-parse, else `pyprof parse` from PATH. Wall time and
peak RSS come from GNU time (or a fork/exec helper), as in parse_bench.py.

HTA: HolisticTraceAnalysis 0.5.0 in a venv (--hta-venv, default /tmp/hta-venv, made with
--system-site-packages so it uses the installed torch, numpy and networkx; HTA is installed with
--no-deps plus the packages it imports, so pip can never replace torch). Each run is a fresh
process that times `TraceAnalysis(trace_dir=DIR)` on a folder holding only a link to the trace
(rank-0.json); --hta-runs runs, median. When HTA cannot be installed or fails on the trace the
reason is printed and the rest of the benchmark still runs. Ratio = HTA wall ÷ pyprof wall (both
whole processes on the .json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from parse_bench import BenchError, has_gnu_time, run_child  # noqa: E402

HTA_VERSION = "0.5.0"
# What HTA 0.5.0 imports that a torch install lacks. Its declared requirements also name
# jupyterlab and pytest (not needed to load a trace); they are left out on purpose.
HTA_DEPENDENCIES = ["pandas>=1.5.2", "plotly>=5.11.0", "narwhals", "pydot>=1.3.0", "psutil",
                    "networkx>=3.1", "pyyaml"]

HTA_LOAD = r"""
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
analysis = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
frame = analysis.t.get_trace(0)
with open(sys.argv[2], "w") as f:
    json.dump({"import_s": t1 - t0, "load_s": t2 - t1, "rows": int(len(frame))}, f)
"""


def default_parser() -> list[str]:
    local = os.path.join(ROOT, "pyprof", "bin", "pyprof-parse")
    if os.access(local, os.X_OK):
        return [local]
    installed = shutil.which("pyprof")
    if installed:
        return [installed, "parse"]
    raise BenchError("no pyprof-parse: build this checkout (pyprof/bin/pyprof-parse) or give "
                     "--parser")


# -- the trace ------------------------------------------------------------------------------------
def trace_facts(path: str) -> dict:
    """Event count and sizes of a trace (its .counts.json when make_kineto_trace.py wrote one)."""
    counts_path = path + ".counts.json"
    if os.path.exists(counts_path):
        with open(counts_path) as f:
            counts = json.load(f)
        if counts.get("json_bytes") == os.path.getsize(path):
            events = counts["traceEvents"]
        else:
            counts = None
    else:
        counts = None
    if counts is None:
        with open(path, "rb") as f:
            events = len(json.load(f)["traceEvents"])
    facts = {"json": path, "events": events, "json_bytes": os.path.getsize(path)}
    if counts:
        facts["by_cat_ph"] = counts["by_cat_ph"]
    return facts


def make_trace(folder: str, events: int | None, seed: int) -> str:
    import make_kineto_trace  # noqa: E402  (only needed when a trace is made)

    path = os.path.join(folder, f"kineto_seed{seed}.json")
    print(f"writing {path} ...", file=sys.stderr, flush=True)
    min_bytes = 0 if events is not None else 400_000_000
    counts = make_kineto_trace.generate(path, events or 2_000_000, min_bytes, seed,
                                        log=lambda s: print(s, file=sys.stderr, flush=True))
    with open(path + ".counts.json", "w") as f:
        json.dump(counts, f)
    return path


def ensure_gzip(path: str) -> str:
    gz = path + ".gz"
    if not os.path.exists(gz):
        import make_kineto_trace  # noqa: E402

        print(f"writing {gz} ...", file=sys.stderr, flush=True)
        make_kineto_trace.gzip_file(path, gz)
    return gz


# -- timing ---------------------------------------------------------------------------------------
def summarize(label: str, file_label: str, facts: dict, input_bytes: int, walls: list[float],
              rss: list[int], extra: dict | None = None) -> dict:
    med = statistics.median(walls)
    peak = max(rss)
    row = {"tool": label, "file": file_label, "events": facts["events"],
           "input_mb": input_bytes / 1e6, "median_s": med, "min_s": min(walls),
           "max_s": max(walls), "runs": len(walls), "events_per_s": facts["events"] / med,
           "peak_rss_mb": peak / 1e6, "rss_over_json": peak / facts["json_bytes"]}
    row.update(extra or {})
    return row


def bench_pyprof(parser: list[str], trace: str, facts: dict, work: str, runs: int,
                 warmup: int) -> dict:
    out = os.path.join(work, "net.dict")
    log = os.path.join(work, "parse.log")
    walls, rss = [], []
    for i in range(warmup + runs):
        if os.path.exists(out):
            os.remove(out)
        wall, peak = run_child(parser + [trace, "-o", out, "-q"], stdout_path=None,
                               log_path=log)
        if not os.path.exists(out):
            raise BenchError(f"{shlex.join(parser)} wrote no {out}")
        out_bytes = os.path.getsize(out)
        os.remove(out)  # the output is large; keep the disk's write-back out of the next run
        label = "warm-up" if i < warmup else f"run {i + 1 - warmup}"
        print(f"  pyprof parse {os.path.basename(trace)}: {label} {wall:.2f} s, "
              f"{peak / 1e6:.0f} MB", file=sys.stderr, flush=True)
        if i >= warmup:
            walls.append(wall)
            rss.append(peak)
    return summarize("pyprof parse", os.path.basename(trace), facts, os.path.getsize(trace),
                     walls, rss, {"output_mb": out_bytes / 1e6})


def ensure_hta(venv: str) -> tuple[str | None, str]:
    """(python of a venv that imports HTA, how it was found) or (None, why not)."""
    python = os.path.join(venv, "bin", "python")
    check = [python, "-c", "import hta, hta.trace_analysis; print(hta.__file__)"]
    if os.path.exists(python) and subprocess.run(check, capture_output=True).returncode == 0:
        return python, f"HTA from {venv}"
    steps = [
        [sys.executable, "-m", "venv", "--system-site-packages", venv],
        [python, "-m", "pip", "install", "-q", "--no-deps", f"HolisticTraceAnalysis=={HTA_VERSION}"]
        + HTA_DEPENDENCIES,
    ]
    for step in steps:
        print(f"  {shlex.join(step)}", file=sys.stderr, flush=True)
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            return None, (f"`{shlex.join(step)}` failed: "
                          f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    # torch must still be the system's: --no-deps keeps pip from touching it
    local_torch = os.path.join(venv, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                               "site-packages", "torch")
    if os.path.exists(local_torch):
        return None, f"a torch was installed into {venv}; not using it"
    done = subprocess.run(check, capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"HTA does not import: {done.stderr.strip().splitlines()[-1:]}"
    return python, f"HTA {HTA_VERSION} installed into {venv}"


def bench_hta(python: str, trace: str, facts: dict, work: str, runs: int) -> dict:
    trace_dir = os.path.join(work, "hta_trace")
    shutil.rmtree(trace_dir, ignore_errors=True)
    os.makedirs(trace_dir)
    suffix = ".json.gz" if trace.endswith(".gz") else ".json"
    os.symlink(os.path.abspath(trace), os.path.join(trace_dir, "rank-0" + suffix))
    result = os.path.join(work, "hta.json")
    log = os.path.join(work, "hta.log")
    walls, rss, loads, rows = [], [], [], 0
    for i in range(runs):
        if os.path.exists(result):
            os.remove(result)
        wall, peak = run_child([python, "-c", HTA_LOAD, trace_dir, result], stdout_path=None,
                               log_path=log)
        with open(result) as f:
            inner = json.load(f)
        rows = inner["rows"]
        walls.append(wall)
        rss.append(peak)
        loads.append(inner["load_s"])
        print(f"  HTA {os.path.basename(trace)}: run {i + 1} {wall:.1f} s "
              f"(TraceAnalysis {inner['load_s']:.1f} s), {peak / 1e6:.0f} MB, {rows} rows",
              file=sys.stderr, flush=True)
    return summarize(f"HTA {HTA_VERSION} TraceAnalysis", os.path.basename(trace), facts,
                     os.path.getsize(trace), walls, rss,
                     {"load_median_s": statistics.median(loads), "rows": rows})


# -- report ---------------------------------------------------------------------------------------
def table(rows: list[dict]) -> str:
    lines = ["| tool | file | events | file MB | median wall s | min–max s | events/s | "
             "peak RSS MB | RSS ÷ JSON size |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['tool']} | {r['file']} | {r['events']:,} | {r['input_mb']:.1f} | "
                     f"{r['median_s']:.2f} | {r['min_s']:.2f}–{r['max_s']:.2f} | "
                     f"{r['events_per_s']:,.0f} | {r['peak_rss_mb']:,.0f} | "
                     f"{r['rss_over_json']:.2f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", help="a Kineto trace .json (default: write one)")
    ap.add_argument("--events", type=int, help="size of the written trace (default >= 2M "
                                               "events and >= 400 MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the written trace")
    ap.add_argument("--parser", help="command line of the parser (default pyprof/bin/pyprof-"
                                     "parse, else `pyprof parse`)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--skip-pyprof", action="store_true")
    ap.add_argument("--hta-runs", type=int, default=3)
    ap.add_argument("--hta-gz", action="store_true", help="also time HTA on the .json.gz")
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument("--hta-venv", default="/tmp/hta-venv")
    ap.add_argument("--json-out", help="also write the rows as JSON to this file")
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="kineto-bench-", dir="/tmp")
    made = None
    try:
        if a.trace:
            trace = a.trace
        else:
            made = trace = make_trace(work, a.events, a.seed)
        gz = ensure_gzip(trace)
        facts = trace_facts(trace)
        gz_bytes = os.path.getsize(gz)
        print(f"trace: {trace}: {facts['events']:,} events, {facts['json_bytes'] / 1e6:.1f} MB "
              f"JSON, {gz_bytes / 1e6:.1f} MB gzip", file=sys.stderr, flush=True)
        rows, notes = [], []
        if not a.skip_pyprof:
            parser = shlex.split(a.parser) if a.parser else default_parser()
            for path in (trace, gz):
                rows.append(bench_pyprof(parser, path, facts, work, a.runs, a.warmup))
        if not a.skip_hta:
            python, how = ensure_hta(a.hta_venv)
            if python is None:
                notes.append(f"HTA skipped: {how}")
            else:
                for path in ([trace, gz] if a.hta_gz else [trace]):
                    try:
                        rows.append(bench_hta(python, path, facts, work, a.hta_runs))
                    except BenchError as e:
                        notes.append(f"HTA failed on {os.path.basename(path)}: "
                                     f"{str(e).strip().splitlines()[-1]}")
        print(f"\nmachine: {platform.node()}, {os.cpu_count()} CPUs, Python "
              f"{platform.python_version()}; peak RSS by "
              f"{'GNU time' if has_gnu_time() else 'a fork/exec helper'}")
        print(f"trace: {facts['events']:,} events, {facts['json_bytes'] / 1e6:.1f} MB JSON, "
              f"{gz_bytes / 1e6:.1f} MB .gz\n")
        print(table(rows))
        by = {(r["tool"].split()[0], r["file"]): r for r in rows}
        name = os.path.basename(trace)
        if ("pyprof", name) in by and ("HTA", name) in by:
            ratio = by[("HTA", name)]["median_s"] / by[("pyprof", name)]["median_s"]
            print(f"\nHTA ÷ pyprof (wall, .json): {ratio:.1f}×")
        for n in notes:
            print(n)
        if a.json_out:
            with open(a.json_out, "w") as f:
                json.dump({"facts": facts, "gz_bytes": gz_bytes, "rows": rows, "notes": notes},
                          f, indent=1)
        return 0
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if made and a.keep:
            print(f"kept {made} and {made}.gz", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
