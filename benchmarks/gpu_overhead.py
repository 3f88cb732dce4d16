"""Training-step time on the GPU with no profiling vs under `pyprof profile` (NVTX annotations
+ CUPTI kernel capture), for the CNN (resnet_block) and Transformer examples (issue #5).

Each measurement is a fresh process running

    python examples/train.py --model M --device cuda --size large --batch B \\
        --steps WARMUP+STEPS --warmup WARMUP --time-steps

either as is ("none") or under `python -m pyprof profile -o TMP/x --force -- ...` ("pyprof").
train.py synchronizes the GPU before and after every step and prints the step times after the
warm-up steps as one JSON line; a run's figure is its median step. The table gives, per model,
the median over --runs runs of each mode (the modes alternate run by run), and the overhead
pyprof - none in percent. Target (issue #15): at most 5% for a step of 20 ms or more.

Before measuring, one unprofiled run checks the step time; if it is below --min-step-ms, the
batch is scaled up once (at most 4x) so that the step is long enough, and the table says which
batch was used. --no-calibrate keeps the batch as given.

    python benchmarks/gpu_overhead.py                 # resnet_block and transformer, 5 runs
    python benchmarks/gpu_overhead.py --runs 9 --steps 30 --models transformer
    python benchmarks/gpu_overhead.py --device cpu --size small --runs 2 --min-step-ms 0  # smoke
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(ROOT, "examples", "train.py")
sys.path.insert(0, os.path.join(ROOT, "examples"))
MODES = ("none", "pyprof")
TARGET_PCT = 5.0


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("NVTX_INJECTION64_PATH", None)
    return e


def train_cmd(args, model: str, batch: int) -> list[str]:
    return [sys.executable, TRAIN, "--model", model, "--device", args.device, "--size", args.size,
            "--batch", str(batch), "--steps", str(args.warmup + args.steps),
            "--warmup", str(args.warmup), "--time-steps"]


def db_facts(path: str) -> dict:
    """What the collector recorded: is CUPTI on, how many kernels, anything dropped."""
    facts = {"db_bytes": os.path.getsize(path)}
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "META_DATA_CAPTURE" in tables:
            row = con.execute("SELECT value FROM META_DATA_CAPTURE WHERE name = "
                              "'PYPROF_CUDA_TRACE'").fetchone()
            facts["cuda_trace"] = row[0] if row else None
            # docs/formats.md: "on: <CUPTI version and library>", else why kernels are absent.
            facts["cuda_trace_on"] = bool(row) and str(row[0]).split(":", 1)[0] == "on"
        facts["kernels"] = (con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
                            .fetchone()[0] if "CUPTI_ACTIVITY_KIND_KERNEL" in tables else 0)
        if "PYPROF_COLLECTOR_STATS" in tables:
            stats = dict(con.execute("SELECT name, value FROM PYPROF_COLLECTOR_STATS"))
            facts["cupti_records_dropped"] = stats.get("cupti_records_dropped")
            facts["events_dropped"] = stats.get("events_dropped")
            facts["events_recorded"] = stats.get("events_recorded")
    finally:
        con.close()
    return facts


def run_once(args, model: str, batch: int, mode: str, tmp: str) -> dict:
    cmd = train_cmd(args, model, batch)
    db = os.path.join(tmp, f"{model}_{mode}")
    if mode == "pyprof":
        cmd = [sys.executable, "-m", "pyprof", "profile", "-o", db, "--force", "--", *cmd]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env(), cwd=ROOT, capture_output=True, text=True,
                          timeout=args.timeout)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run of {model} failed (exit {proc.returncode}): "
                         f"{shlex.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"step_ms"')]
    if len(lines) != 1:
        raise SystemExit(f"{mode} run of {model}: expected one step-time JSON line in\n"
                         f"{proc.stdout[-2000:]}")
    out = json.loads(lines[0])
    out["wall_s"] = wall
    if mode == "pyprof":
        path = db + ".sqlite"
        if not os.path.exists(path):
            raise SystemExit(f"pyprof run of {model} wrote no {path}:\n{proc.stderr[-4000:]}")
        out.update(db_facts(path))
        os.remove(path)
    return out


def calibrate(args, model: str, batch: int, tmp: str) -> tuple[int, float]:
    """The batch to measure with and the unprofiled step time at that batch (ms)."""
    step = run_once(args, model, batch, "none", tmp)["median_ms"]
    print(f"  {model}: batch {batch}: {step:.2f} ms per step (unprofiled)", file=sys.stderr)
    if args.no_calibrate or step >= args.min_step_ms:
        return batch, step
    grow = min(4.0, 1.2 * args.min_step_ms / max(step, 1e-3))
    batch = max(batch + 1, int(math.ceil(batch * grow / 8.0)) * 8)
    step = run_once(args, model, batch, "none", tmp)["median_ms"]
    print(f"  {model}: batch {batch}: {step:.2f} ms per step (unprofiled)", file=sys.stderr)
    return batch, step


def machine() -> str:
    code = ("import json, torch\n"
            "d = {'torch': torch.__version__, 'cuda': torch.version.cuda,\n"
            "     'cudnn': torch.backends.cudnn.version() if torch.cuda.is_available() else None,\n"
            "     'gpu': torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}\n"
            "print(json.dumps(d))\n")
    info = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                     check=True).stdout)
    driver = None
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                 "--format=csv,noheader"], capture_output=True, text=True,
                                timeout=30).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{info['gpu'] or 'no GPU'}{f', driver {driver}' if driver else ''}; "
            f"torch {info['torch']} (CUDA {info['cuda']}, cuDNN {info['cudnn']}); "
            f"Python {platform.python_version()}; {cpu}, {os.cpu_count()} CPUs")


def main() -> None:
    import models  # examples/models.py

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet_block,transformer",
                        help="comma-separated examples/models.py names (default %(default)s)")
    parser.add_argument("--runs", type=int, default=5, help="runs per mode (default 5)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per run (default 20)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed steps before them (default 3)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--size", choices=("small", "large"), default="large")
    parser.add_argument("--batch", action="append", default=[], metavar="MODEL=N",
                        help="batch of one model (default: models.LARGE's, or 8 for small)")
    parser.add_argument("--min-step-ms", type=float, default=20.0,
                        help="grow the batch once if the unprofiled step is shorter "
                             "(default 20)")
    parser.add_argument("--no-calibrate", action="store_true", help="keep the batch as given")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    args = parser.parse_args()
    names = [m for m in args.models.split(",") if m]
    for m in names:
        if m not in models.MODELS or (args.size == "large" and m not in models.LARGE):
            parser.error(f"--models: {m!r} is not one of "
                         f"{', '.join(models.LARGE if args.size == 'large' else models.MODELS)}")
    batches = {}
    for item in args.batch:
        name, _, value = item.partition("=")
        if name not in names or not value.isdigit() or int(value) < 1:
            parser.error(f"--batch {item!r}: expected MODEL=N with MODEL in --models")
        batches[name] = int(value)
    if args.runs < 1 or args.steps < 1 or args.warmup < 0:
        parser.error("--runs and --steps must be >= 1, --warmup >= 0")
    if args.device == "cuda":
        probe = subprocess.run([sys.executable, "-c", "import torch; "
                                "raise SystemExit(0 if torch.cuda.is_available() else 1)"])
        if probe.returncode != 0:
            raise SystemExit("gpu_overhead: no CUDA device (torch.cuda.is_available() is False); "
                             "--device cpu runs a CPU smoke test instead")

    command = shlex.join(["python", "benchmarks/gpu_overhead.py", *sys.argv[1:]])
    results = {}
    with tempfile.TemporaryDirectory(prefix="pyprof_gpu_overhead_") as tmp:
        for model in names:
            default = models.large_batch(model) if args.size == "large" else 8
            batch, probe_ms = calibrate(args, model, batches.get(model, default), tmp)
            runs = {mode: [] for mode in MODES}
            for i in range(args.runs):
                # Alternate which mode goes first, so that drift (clocks, temperature) hits both.
                for mode in (MODES if i % 2 == 0 else MODES[::-1]):
                    r = run_once(args, model, batch, mode, tmp)
                    runs[mode].append(r)
                    print(f"  {model} run {i + 1}/{args.runs} {mode}: {r['median_ms']:.2f} ms "
                          f"per step", file=sys.stderr)
            results[model] = (batch, probe_ms, runs)

    print(f"machine: {machine()}")
    print(f"command: {command}")
    print(f"each run: python examples/train.py --model M --device {args.device} --size {args.size} "
          f"--batch B --steps {args.warmup + args.steps} --warmup {args.warmup} --time-steps; "
          "pyprof runs: python -m pyprof profile -o TMP/M_pyprof --force -- <the same>")
    print(f"figures: median over {args.runs} runs of each run's median step "
          f"({args.steps} steps after {args.warmup} warm-up steps); overhead = pyprof / none - 1")
    print()
    print("| model | batch | step, no profiling (ms) | step, pyprof profile (ms) | overhead "
          "| kernels/step | CUDA trace | verdict |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    notes = []
    for model, (batch, probe_ms, runs) in results.items():
        none = statistics.median(r["median_ms"] for r in runs["none"])
        prof = statistics.median(r["median_ms"] for r in runs["pyprof"])
        pct = 100.0 * (prof / none - 1.0)
        p = runs["pyprof"]
        trace_on = all(r.get("cuda_trace_on") for r in p)
        # The status's detail (CUPTI version, library path) is long: "on" says it in the table.
        traces = ["on"] if trace_on else sorted({str(r.get("cuda_trace")) for r in p})
        kernels = statistics.median(r.get("kernels", 0) for r in p) / (args.warmup + args.steps)
        dropped = sum((r.get("cupti_records_dropped") or 0) + (r.get("events_dropped") or 0)
                      for r in p)
        if not trace_on:
            verdict = "CUDA trace off: not a target point"
        elif none < args.min_step_ms:
            verdict = f"step < {args.min_step_ms:g} ms: not a target point"
        else:
            verdict = f"{'ok' if pct <= TARGET_PCT else 'OVER'} (target <= {TARGET_PCT:g}%)"
        print(f"| {model} | {batch} | {none:.2f} ({min(r['median_ms'] for r in runs['none']):.2f}"
              f"-{max(r['median_ms'] for r in runs['none']):.2f}) "
              f"| {prof:.2f} ({min(r['median_ms'] for r in p):.2f}"
              f"-{max(r['median_ms'] for r in p):.2f}) "
              f"| {pct:+.1f}% | {kernels:.0f} | {', '.join(traces)} | {verdict} |")
        if not trace_on:
            notes.append(f"{model}: PYPROF_CUDA_TRACE was {traces}: kernels were not captured, "
                         "so this measures the NVTX annotations only")
        if dropped:
            notes.append(f"{model}: {dropped} records or events were dropped over the pyprof runs")
    print()
    print("(ms: median, min-max over the runs in parentheses; kernels/step: kernels in the "
          "database over all steps of a run, warm-up included)")
    for note in notes:
        print(f"note: {note}")


if __name__ == "__main__":
    main()
