"""What reading torch.compile's kernel metadata costs the compile (docs/compile.md, issue 17).

    python benchmarks/compile_bench.py [--runs 5] [--blocks 8]

Times the first training step of a compiled MLP (`--blocks` × Linear → LayerNorm → GELU,
width 256, batch 32; forward and backward compile in it) in fresh processes with Inductor's
caches off, alternating:
  plain      torch.compile alone;
  metadata   with pyprof's artifact handler installed (pyprof._compile_kernels.install: provenance
             tracking on, backward lowered at compile time, torch computing every structured-trace
             artifact), marks sent nowhere.
Prints each run and the medians. Steady steps are not measured: provenance only adds comments to
the generated code.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
import torch
if sys.argv[1] == "metadata":
    sys.path.insert(0, sys.argv[3])
    from pyprof import _compile_kernels
    _compile_kernels.install(lambda message: None)
torch.set_num_threads(1)
blocks = int(sys.argv[2])
model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256),
                                                  torch.nn.LayerNorm(256), torch.nn.GELU())
                              for _ in range(blocks)])
compiled = torch.compile(model)
x = torch.randn(32, 256)
start = time.perf_counter()
compiled(x).sum().backward()
first = time.perf_counter() - start
out = {"first_step_s": first}
if sys.argv[1] == "metadata":
    out["kernels"] = _compile_kernels.stats["kernels"]
print(json.dumps(out))
"""


def run(mode: str, blocks: int) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", CHILD, mode, str(blocks), ROOT],
                         capture_output=True, text=True, env=env, timeout=900)
    if res.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=8)
    args = ap.parse_args()
    times: dict[str, list[float]] = {"plain": [], "metadata": []}
    for i in range(args.runs):
        for mode in times:
            r = run(mode, args.blocks)
            times[mode].append(r["first_step_s"])
            print(f"run {i} {mode:8s} first step {r['first_step_s']:.2f} s"
                  + (f" ({r['kernels']} kernels marked)" if "kernels" in r else ""), flush=True)
    plain, meta = (statistics.median(times[m]) for m in ("plain", "metadata"))
    print(f"median first step: plain {plain:.2f} s, with kernel metadata {meta:.2f} s "
          f"({(meta / plain - 1) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
