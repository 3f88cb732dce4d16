"""What one nn.Module call costs with pyprof's module ranges (docs/benchmarks.md §1.3).

A Sequential of 10 nn.Identity modules (no ATen op at all: only module calls) is called 2,000
times per round, 5 rounds per process; the middle round's ns per module call (11 calls per
forward) is the process's figure. Modes, each a fresh process, alternated --runs times:

  none       plain python, no pyprof
  collector  pyprof.init() under `pyprof profile` (module ranges recorded)

    python benchmarks/module_call_bench.py --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(mode: str) -> None:
    import torch

    model = torch.nn.Sequential(*[torch.nn.Identity() for _ in range(10)])
    x = torch.ones(2)
    if mode == "collector":
        import pyprof

        pyprof.init(model=model)
    for _ in range(200):
        model(x)
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(2000):
            model(x)
        rounds.append((time.perf_counter() - t0) / (2000 * 11) * 1e9)
    print(json.dumps({"ns_per_module_call": sorted(rounds)[2]}))


def run(mode: str, tmp: str) -> float:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", mode]
    if mode == "collector":
        cmd = [sys.executable, "-m", "pyprof", "profile", "-o", os.path.join(tmp, "calls"),
               "--force", "--"] + cmd
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed ({proc.returncode}):\n{proc.stderr}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)["ns_per_module_call"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", choices=("none", "collector"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    times: dict[str, list[float]] = {"none": [], "collector": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for mode in times:
                times[mode].append(run(mode, tmp))
    print("| mode | ns per module call (median) | min-max |")
    print("| --- | ---: | ---: |")
    for mode, values in times.items():
        print(f"| {mode} | {statistics.median(values):.0f} | "
              f"{min(values):.0f}-{max(values):.0f} |")
    added = statistics.median(times["collector"]) - statistics.median(times["none"])
    print(f"\nmodule range: +{added:.0f} ns per module call")


if __name__ == "__main__":
    main()
