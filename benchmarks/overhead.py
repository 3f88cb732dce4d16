"""Per-op overhead of pyprof's annotations on the CPU (issue #2's benchmark).

A small-op-heavy training loop (a deep, narrow MLP: thousands of tiny ops per second, forward,
backward and optimizer step) runs in a fresh process per measurement, in these modes:

  none            no profiling at all
  init-no-tool    pyprof.init() with no NVTX tool attached
  collector       pyprof.init() under `pyprof profile` (our collector records every range)
  collector-text  the same with PYPROF_MARKERS=text (every op sends its full marker text
                  instead of a registered marker's handle: the pre-interning behaviour)
  collector-stack the same with pyprof.init(with_stack=True) (file:line of each op)
  collector-no-memory  the collector with PYPROF_MEMORY=0: ranges only, no allocation recorded
                  (`collector` records every allocation and free too, docs/memory.md)
  torch-profiler  torch.profiler.profile(record_shapes=True) around the loop
  torch-profiler-memory  the same with profile_memory=True (torch.profiler's allocation events)
  floor-rf        no pyprof: a global RecordFunction callback over pyprof's scopes that asks
                  for the inputs and does nothing (what any RecordFunction-based tool pays)
  floor-nvtx      the same under the collector, each op pushing and popping one NVTX range by
                  a registered string (the least an NVTX annotation of every op can cost)
The floor modes need the build's benchmark module (build/benchmarks/overhead_floor*.so, built
with the project); they are left out, with a note, when it is missing.

Numbers per mode, as ns added per op relative to `none` (medians over --runs runs):
  in-loop  time inside the training loop only;
  in-loop CPU  the training thread's CPU time in the loop (time.thread_time()): less
           sensitive to other load on the machine, but blind to the collector's writer thread;
  total    the whole process, start to exit, so it includes teardown: the collector's flush
           and database write, or the profiler's exit and post-processing (key_averages()).
Ops per iteration are counted by pyprof itself (ranges its callback pushed) in the collector
mode: forward ops, backward nodes and the ops inside them. The collector modes also say how
many allocations and frees the database holds per op (`mem events/op`).

    python benchmarks/overhead.py --runs 5 --iters 600

The last lines give pyprof's in-loop cost as a fraction of torch.profiler's in the same run.
`--modes` runs a subset (none and collector are always included).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("none", "init-no-tool", "collector", "collector-text", "collector-stack",
         "collector-no-memory", "torch-profiler", "torch-profiler-memory", "floor-rf",
         "floor-nvtx")
FLOOR_MODULE_DIR = os.path.join(ROOT, "build", "benchmarks")


def under_collector(mode: str) -> bool:
    return mode.startswith("collector") or mode == "floor-nvtx"


def floor_module_built() -> bool:
    return os.path.isdir(FLOOR_MODULE_DIR) and any(
        name.startswith("overhead_floor.") for name in os.listdir(FLOOR_MODULE_DIR))


def workload(mode: str, iters: int, result_path: str) -> None:
    """Runs in the measured child process."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(16, 16), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(4, 16), torch.randn(4, 16)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()

    if mode == "init-no-tool" or mode.startswith("collector"):
        import pyprof

        pyprof.init(model=model, with_stack=mode == "collector-stack")
    elif mode.startswith("floor-"):
        sys.path.insert(0, FLOOR_MODULE_DIR)
        import overhead_floor

        overhead_floor.install("nvtx" if mode == "floor-nvtx" else "record_function")
    for _ in range(20):  # warm-up: caches, allocator
        step()
    # Move everything alive now out of the collector's young generations: the cost of a GC pass
    # then no longer depends on how many objects the setup left behind, which otherwise makes
    # run-to-run noise (hundreds of ns per op on a 2-core VM) larger than what is measured.
    gc.collect()
    gc.freeze()
    ops_before = 0
    if mode.startswith("collector"):
        import pyprof

        ops_before = pyprof.stats()["ops_annotated"]
    teardown = 0.0
    if mode.startswith("torch-profiler"):
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      record_shapes=True,
                                      profile_memory=mode == "torch-profiler-memory")
        prof.__enter__()
    t0 = time.perf_counter()
    c0 = time.thread_time()
    for _ in range(iters):
        step()
    loop = time.perf_counter() - t0
    loop_cpu = time.thread_time() - c0
    if mode.startswith("torch-profiler"):
        t1 = time.perf_counter()
        prof.__exit__(None, None, None)
        prof.key_averages()
        teardown = time.perf_counter() - t1
    ops = ops_all = None
    if mode.startswith("collector"):
        import pyprof

        ops_all = pyprof.stats()["ops_annotated"]
        ops = ops_all - ops_before
    with open(result_path, "w") as f:
        json.dump({"loop_s": loop, "loop_cpu_s": loop_cpu, "teardown_s": teardown, "ops": ops,
                   "ops_all": ops_all}, f)


def run_once(mode: str, iters: int, tmp: str) -> dict:
    result = os.path.join(tmp, f"{mode}.json")
    child = [sys.executable, os.path.abspath(__file__), "--child", mode, "--iters", str(iters),
             "--result", result]
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("NVTX_INJECTION64_PATH", None)
    env["PYPROF_MARKERS"] = "text" if mode == "collector-text" else "interned"
    env["PYPROF_MEMORY"] = "0" if mode == "collector-no-memory" else "1"
    db = os.path.join(tmp, "bench")
    if under_collector(mode):
        child = [sys.executable, "-m", "pyprof", "profile", "-o", db, "--force", "--"] + child
    t0 = time.perf_counter()
    proc = subprocess.run(child, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed ({proc.returncode}):\n{proc.stderr}")
    with open(result) as f:
        out = json.load(f)
    out["wall_s"] = wall
    if under_collector(mode):
        out["db_bytes"] = os.path.getsize(db + ".sqlite")
        out["memory_events"] = memory_events_written(db + ".sqlite")
    return out


def memory_events_written(path: str) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT value FROM PYPROF_COLLECTOR_STATS "
                          "WHERE name = 'memory_events_written'").fetchone()
        return row[0] if row else 0
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--iters", type=int, default=600)
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--result")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated subset of: " + ", ".join(MODES))
    args = parser.parse_args()
    if args.child:
        workload(args.child, args.iters, args.result)
        return
    wanted = set(args.modes.split(",")) | {"none", "collector"}
    unknown = wanted - set(MODES)
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(sorted(unknown))}")
    if not floor_module_built() and wanted & {"floor-rf", "floor-nvtx"}:
        print(f"note: no benchmark module in {FLOOR_MODULE_DIR} (build the project): "
              "the floor modes are left out", file=sys.stderr)
        wanted -= {"floor-rf", "floor-nvtx"}
    modes = tuple(m for m in MODES if m in wanted)

    results: dict[str, list[dict]] = {m: [] for m in modes}
    order = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            # Interleave the modes, in a new order each round, so that drift and warm-up
            # effects of the machine hit them all alike.
            for mode in order.sample(modes, len(modes)):
                results[mode].append(run_once(mode, args.iters, tmp))
    ops = statistics.median(r["ops"] for r in results["collector"])
    ops_all = statistics.median(r["ops_all"] for r in results["collector"])  # with warm-up
    base_loop = statistics.median(r["loop_s"] for r in results["none"])
    base_wall = statistics.median(r["wall_s"] for r in results["none"])

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, torch {__import__('torch').__version__}")
    print(f"command: python benchmarks/overhead.py --runs {args.runs} --iters {args.iters}"
          + ("" if modes == MODES else f" --modes {','.join(modes)}"))
    print(f"workload: {args.iters} training steps, {ops:.0f} ops recorded "
          f"({ops / args.iters:.0f} per step); baseline {base_loop / ops * 1e9:.0f} ns/op in loop")
    for mode in modes:
        if under_collector(mode):
            events = statistics.median(r["memory_events"] for r in results[mode])
            print(f"{mode}: {events / ops_all:.2f} mem events/op ({events:.0f} allocations and "
                  "frees in the database)")
    print()
    base_cpu = statistics.median(r["loop_cpu_s"] for r in results["none"])
    print("| mode | in-loop ns/op added | in-loop CPU ns/op added | total ns/op added "
          "| loop s (min-max) | wall s (min-max) | DB bytes/op |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    added = {}
    for mode in modes:
        loop = statistics.median(r["loop_s"] for r in results[mode])
        added[mode] = (loop - base_loop) / ops * 1e9
        wall = statistics.median(r["wall_s"] for r in results[mode])
        db = (f"{statistics.median(r['db_bytes'] for r in results[mode]) / ops_all:.0f}"
              if under_collector(mode) else "-")
        loops = [r["loop_s"] for r in results[mode]]
        walls = [r["wall_s"] for r in results[mode]]
        cpu = statistics.median(r["loop_cpu_s"] for r in results[mode])
        print(f"| {mode} | {(loop - base_loop) / ops * 1e9:.0f} "
              f"| {(cpu - base_cpu) / ops * 1e9:.0f} "
              f"| {(wall - base_wall) / ops_all * 1e9:.0f} "
              f"| {loop:.3f} ({min(loops):.3f}-{max(loops):.3f}) "
              f"| {wall:.2f} ({min(walls):.2f}-{max(walls):.2f}) | {db} |")
    if "torch-profiler" in added and added["torch-profiler"] > 0:
        print()
        for mode in modes:
            if mode.startswith("collector"):
                print(f"{mode}: in-loop cost {added[mode] / added['torch-profiler']:.2f}x "
                      f"torch.profiler's in the same run")
    if "collector-no-memory" in added:
        events = statistics.median(r["memory_events"] for r in results["collector"])
        cost = added["collector"] - added["collector-no-memory"]
        print()
        print(f"memory capture (collector - collector-no-memory): {cost:.0f} ns/op in loop, "
              f"{cost * ops_all / events:.0f} ns per allocation or free" if events else
              f"memory capture (collector - collector-no-memory): {cost:.0f} ns/op in loop")
        if "torch-profiler-memory" in added:
            print(f"torch.profiler's profile_memory=True (torch-profiler-memory - torch-profiler): "
                  f"{added['torch-profiler-memory'] - added['torch-profiler']:.0f} ns/op in loop")
    if "floor-rf" in added and "floor-nvtx" in added:
        print()
        print(f"RecordFunction with a callback that needs inputs: {added['floor-rf']:.0f} ns/op; "
              f"one NVTX push and pop per op on top: {added['floor-nvtx'] - added['floor-rf']:.0f}"
              f"; pyprof's own (collector - floor-nvtx): "
              f"{added['collector'] - added['floor-nvtx']:.0f} ns/op")


if __name__ == "__main__":
    main()
