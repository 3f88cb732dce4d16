"""What one recorded allocation or free costs (issue 35, docs/memory.md §4).

overhead.py's training loop makes about one allocation or free per four ops, so memory
capture's share of its per-op cost is small and within that benchmark's run-to-run noise on a
loaded machine. This isolates it: a loop of `torch.empty(16)` calls (one op, one 64-byte
allocation and its free per call) runs in a fresh process per measurement under `pyprof
profile`, with memory capture on (`PYPROF_MEMORY=1`) and off (`PYPROF_MEMORY=0`), the modes
interleaved. The difference, per call, halved, is the cost of one recorded event on the
calling thread (its CPU time, time.thread_time(), and its wall time); the medians over --runs
runs.

    python benchmarks/memory_event_bench.py --runs 7 --calls 200000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("memory-off", "memory-on")


def workload(calls: int, result_path: str) -> None:
    """Runs in the measured child process."""
    import torch

    import pyprof

    torch.set_num_threads(1)
    assert pyprof.init()
    for _ in range(1000):  # warm-up: the thread's buffer, the allocator's size table
        torch.empty(16)
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(calls):
        torch.empty(16)
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    with open(result_path, "w") as f:
        json.dump({"wall_s": wall, "cpu_s": cpu}, f)


def run_once(mode: str, calls: int, tmp: str) -> dict:
    result = os.path.join(tmp, f"{mode}.json")
    env = dict(os.environ, PYTHONPATH=ROOT, PYPROF_MEMORY="1" if mode == "memory-on" else "0")
    env.pop("NVTX_INJECTION64_PATH", None)
    child = [sys.executable, "-m", "pyprof", "profile", "-o", os.path.join(tmp, "bench"),
             "--force", "--", sys.executable, os.path.abspath(__file__), "--child",
             "--calls", str(calls), "--result", result]
    proc = subprocess.run(child, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed ({proc.returncode}):\n{proc.stderr}")
    with open(result) as f:
        return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200000)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--result")
    args = parser.parse_args()
    if args.child:
        workload(args.calls, args.result)
        return
    results: dict[str, list[dict]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for mode in (MODES if run % 2 == 0 else MODES[::-1]):
                results[mode].append(run_once(mode, args.calls, tmp))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, torch {__import__('torch').__version__}")
    print(f"command: python benchmarks/memory_event_bench.py --runs {args.runs} "
          f"--calls {args.calls}")
    print()
    print("| mode | ns per torch.empty(16) call (min-max) | CPU ns per call (min-max) |")
    print("| --- | ---: | ---: |")
    per_call = {}
    for mode in MODES:
        walls = [r["wall_s"] / args.calls * 1e9 for r in results[mode]]
        cpus = [r["cpu_s"] / args.calls * 1e9 for r in results[mode]]
        per_call[mode] = (statistics.median(walls), statistics.median(cpus))
        print(f"| {mode} | {per_call[mode][0]:.0f} ({min(walls):.0f}-{max(walls):.0f}) "
              f"| {per_call[mode][1]:.0f} ({min(cpus):.0f}-{max(cpus):.0f}) |")
    wall = (per_call["memory-on"][0] - per_call["memory-off"][0]) / 2
    cpu = (per_call["memory-on"][1] - per_call["memory-off"][1]) / 2
    print()
    print(f"one recorded allocation or free: {wall:.0f} ns ({cpu:.0f} ns of the thread's CPU)")


if __name__ == "__main__":
    main()
