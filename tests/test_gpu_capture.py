"""CUDA capture end to end (issue #5): real models trained on the GPU under `pyprof profile`.

Skipped without CUDA (CI never has a GPU). docs/gpu-validation.md says how to run it and why.

Each run trains examples/train.py on `--device cuda` under `pyprof profile`; the database is read
here with plain sqlite3 (tests/pyprof_db.py for NVTX), independently of pyprof's own C++ code:

  (a) every CUPTI_ACTIVITY_KIND_KERNEL row has a CUPTI_ACTIVITY_KIND_RUNTIME row (the launch call)
      with the same correlationId in the same process (kernel.globalPid == runtime.globalTid with
      the tid bits cleared), as NVIDIA's own reports join them;
  (b) every launch call lies inside an op range (NVTX push/pop, domain "pyprof", JSON text with an
      "op" key, docs/formats.md §1.1) of its own thread. Required for 100% of the kernels, on the
      main thread and on every other thread. On CUDA the autograd engine runs backward on its own
      device thread; its launches sit inside the backward node's range (and the engine's
      "autograd::engine::evaluate_function: X" scope around it, which also covers the gradient
      accumulation of InputBuffer), and pyprof's RecordFunction callback is global, so it sees that
      thread too. Nothing else in examples/train.py launches a kernel outside an op (the copies to
      the GPU are memcpys, not kernels, and are recorded after pyprof.init() anyway), so there is
      no allowance; a failure lists the kernels it found outside every op range;
  (c) TARGET_INFO_GPU describes the GPU torch sees (name, SMs, compute capability, memory), and
      TARGET_INFO_CUDA_DEVICE maps the process' CUDA device 0 to it;
  (d) `pyprof parse` attributes at least 99% of the kernel records to an op;
  (e) kernels and launch calls lie within the session, and every kernel starts after its launch
      call started (one clock for CUPTI and NVTX).
Then `--capture-range cudaProfilerApi` (train.py --profiler-range), and torch.profiler inside the
profiled program (informational).

Run with -rP (or -s) to see the fractions each test prints.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import subprocess
import time

import pytest

import pyprof_db
import testlib
from cuda_capture import (Capture, OpRanges, api_name, kernel_name, launch_calls, percent,
                          pid_tid, read_capture, rows)
from pyprof_db import PUSH_POP

torch = testlib.cuda_torch_or_skip("the GPU capture tests need one")

pytestmark = pytest.mark.needs_build

ROOT = testlib.ROOT
TRAIN = os.path.join(ROOT, "examples", "train.py")
MODELS = ("resnet_block", "transformer")  # the CNN and the Transformer layer (small sizes)
STEPS = 3


@dataclasses.dataclass
class Run:
    model: str
    db: str
    result: subprocess.CompletedProcess
    wall_ns: int  # the whole `pyprof profile` run, an upper bound of every session-relative time
    cap: Capture


def describe(res: subprocess.CompletedProcess) -> str:
    return (f"exit {res.returncode}\n--- stdout (tail) ---\n{res.stdout[-3000:]}"
            f"\n--- stderr (tail) ---\n{res.stderr[-6000:]}")


def profile_train(tmp, name, *train_args, profile_args=()) -> Run:
    t0 = time.monotonic_ns()
    res = pyprof_db.profile(tmp, TRAIN, *train_args, name=name,
                            extra_profile_args=("--force", *profile_args))
    wall = time.monotonic_ns() - t0
    assert res.returncode == 0, f"pyprof profile ... {' '.join(train_args)} failed: {describe(res)}"
    db = tmp / f"{name}.sqlite"
    assert db.exists(), f"{db} was not written: {describe(res)}"
    model = train_args[train_args.index("--model") + 1] if "--model" in train_args else "?"
    return Run(model, str(db), res, wall, read_capture(db))


def require_cuda_trace(run: Run) -> None:
    """Every check below needs kernels: say plainly why there are none."""
    cap = run.cap
    trace = cap.meta.get("PYPROF_CUDA_TRACE")
    # docs/formats.md: "on: <CUPTI version and library>" when kernels were recorded, else a
    # sentence saying why not.
    assert trace is not None and trace.split(":", 1)[0] == "on", (
        f"{run.db}: META_DATA_CAPTURE PYPROF_CUDA_TRACE is {trace!r}, expected 'on: ...'\n"
        f"{describe(run.result)}")
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in cap.tables and cap.kernels, (
        f"{run.db}: CUDA trace is on but no CUPTI_ACTIVITY_KIND_KERNEL rows were written "
        f"(tables: {sorted(cap.tables)})\n{describe(run.result)}")



# ---------------------------------------------------------------------------------------------
# One profiled training run per model.


@pytest.fixture(scope="module", params=MODELS)
def gpu_run(request, tmp_path_factory) -> Run:
    tmp = tmp_path_factory.mktemp(request.param)
    return profile_train(tmp, "net", "--model", request.param, "--device", "cuda",
                         "--steps", str(STEPS))


def test_cuda_trace_is_on_and_nothing_dropped(gpu_run):
    require_cuda_trace(gpu_run)
    stats = gpu_run.cap.stats
    print(f"{gpu_run.model}: {len(gpu_run.cap.kernels)} kernels, {len(gpu_run.cap.runtime)} API "
          f"calls; collector stats {stats}")
    assert "cupti_records_dropped" in stats, (
        f"PYPROF_COLLECTOR_STATS has no cupti_records_dropped: {stats}")
    assert stats["cupti_records_dropped"] == 0, f"CUPTI dropped records: {stats}"
    assert stats.get("events_dropped", 0) == 0, f"NVTX events dropped: {stats}"
    assert pyprof_db.ops(gpu_run.cap.ranges), "no op ranges were recorded"


def test_a_every_kernel_has_its_launch_call(gpu_run):
    require_cuda_trace(gpu_run)
    cap = gpu_run.cap
    calls = launch_calls(cap)
    pids = {k["globalPid"] for k in cap.kernels}
    assert all(p & 0xFFFFFF == 0 and p >> 48 == 1 for p in pids), (
        f"kernel globalPid must be (1<<48)|(pid<<24): {sorted(hex(p) for p in pids)}")
    assert len(pids) == 1, f"kernels of more than one process: {sorted(hex(p) for p in pids)}"
    missing = [k for k in cap.kernels if (k["globalPid"], k["correlationId"]) not in calls]
    by_api = {}
    for k in cap.kernels:
        call = calls.get((k["globalPid"], k["correlationId"]))
        if call is not None:
            by_api[api_name(cap, call)] = by_api.get(api_name(cap, call), 0) + 1
    print(f"{gpu_run.model}: kernels with a launch call: "
          f"{percent(len(cap.kernels) - len(missing), len(cap.kernels))}; launched by {by_api}")
    examples = [(kernel_name(cap, k), k["correlationId"]) for k in missing[:10]]
    assert not missing, (f"{len(missing)} of {len(cap.kernels)} kernels have no "
                         f"CUPTI_ACTIVITY_KIND_RUNTIME row with their correlationId in their "
                         f"process; e.g. (name, correlationId): {examples}")


def test_b_every_launch_is_inside_an_op_range(gpu_run):
    require_cuda_trace(gpu_run)
    cap = gpu_run.cap
    calls = launch_calls(cap)
    index = OpRanges(cap.ranges)
    counts = {}  # "main" / "other" -> [inside an op, total]
    backward = 0  # launches inside a backward node (scope "backward")
    aten = 0  # launches whose innermost op range is an aten:: op
    outside = []
    for k in cap.kernels:
        call = calls.get((k["globalPid"], k["correlationId"]))
        if call is None:
            continue  # test (a) reports these
        pid, tid = pid_tid(call["globalTid"])
        thread = "main" if pid == tid else "other"
        c = counts.setdefault(thread, [0, 0])
        c[1] += 1
        ops = index.enclosing(call["globalTid"], call["start"], call["end"])
        if ops:
            c[0] += 1
            backward += any(r.marker.get("scope") == "backward" for r in ops)
            aten += ops[0].marker["op"].startswith("aten::")
        else:
            outside.append((kernel_name(cap, k), api_name(cap, call), thread, tid, call["start"]))
    total = sum(c[1] for c in counts.values())
    print(f"{gpu_run.model}: launch calls inside an op range: "
          + "; ".join(f"{t} thread(s) {percent(*c)}" for t, c in sorted(counts.items()))
          + f"; inside a backward node: {backward}; innermost op is aten::*: "
          + percent(aten, total))
    assert total > 0, "no kernel has a launch call (see test a)"
    assert counts.get("main", [0, 0])[1] > 0, "no kernel was launched from the main thread"
    assert backward > 0, "no kernel was launched inside a backward node (loss.backward() on CUDA)"
    assert not outside, (f"{len(outside)} of {total} launch calls lie outside every op range of "
                         f"their thread; e.g. (kernel, api, thread, tid, start): {outside[:10]}")


def test_c_gpu_and_device_tables_describe_the_gpu(gpu_run):
    require_cuda_trace(gpu_run)
    cap = gpu_run.cap
    for t in ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_DEVICE"):
        assert t in cap.tables, f"{t} is missing (tables: {sorted(cap.tables)})"
    con = sqlite3.connect(f"file:{cap.path}?mode=ro", uri=True)
    try:
        gpus = rows(con, "TARGET_INFO_GPU")
        devices = rows(con, "TARGET_INFO_CUDA_DEVICE")
    finally:
        con.close()
    pid = (cap.kernels[0]["globalPid"] >> 24) & 0xFFFFFF
    mine = [d for d in devices if d.get("pid") == pid]
    dev0 = [d for d in mine if d.get("cudaId") == 0]
    assert len(dev0) == 1, f"TARGET_INFO_CUDA_DEVICE must map cudaId 0 of pid {pid} once: {devices}"
    used = {k["deviceId"] for k in cap.kernels}
    assert used <= {d.get("cudaId") for d in mine}, (
        f"kernels ran on CUDA devices {used}, TARGET_INFO_CUDA_DEVICE of pid {pid} has {mine}")
    gpu = [g for g in gpus if g.get("id") == dev0[0].get("gpuId")]
    assert len(gpu) == 1, f"no TARGET_INFO_GPU row with id {dev0[0].get('gpuId')}: {gpus}"
    g = gpu[0]
    props = torch.cuda.get_device_properties(0)
    shown = ("id", "name", "busLocation", "smCount", "computeMajor", "computeMinor",
             "totalMemory", "memoryBandwidth", "clockRate", "l2CacheSize", "uuid")
    print(f"{gpu_run.model}: TARGET_INFO_GPU {({k: g.get(k) for k in shown})}\n"
          f"TARGET_INFO_CUDA_DEVICE {dev0[0]}\ntorch: {props}")
    assert g.get("name") == props.name, f"name {g.get('name')!r}, torch says {props.name!r}"
    assert g.get("smCount") == props.multi_processor_count, (
        f"smCount {g.get('smCount')}, torch multi_processor_count {props.multi_processor_count}")
    assert (g.get("computeMajor"), g.get("computeMinor")) == (props.major, props.minor), (
        f"compute capability {g.get('computeMajor')}.{g.get('computeMinor')}, torch says "
        f"{props.major}.{props.minor}")
    total = g.get("totalMemory") or 0
    assert abs(total - props.total_memory) <= 0.02 * props.total_memory, (
        f"totalMemory {total}, torch total_memory {props.total_memory} (bytes)")
    # Units: Hz and bytes/s, as nsys writes them (an H100 reads ~2e9 Hz and ~3e12 B/s).
    assert (g.get("clockRate") or 0) >= 1e8, f"clockRate {g.get('clockRate')} is not in Hz (> 0)"
    assert (g.get("memoryBandwidth") or 0) >= 1e10, (
        f"memoryBandwidth {g.get('memoryBandwidth')} is not in bytes/s (> 0)")
    if g.get("l2CacheSize") is not None and getattr(props, "L2_cache_size", None):
        assert g["l2CacheSize"] == props.L2_cache_size, (
            f"l2CacheSize {g['l2CacheSize']}, torch L2_cache_size {props.L2_cache_size}")
    if g.get("threadsPerWarp") is not None and getattr(props, "warp_size", None):
        assert g["threadsPerWarp"] == props.warp_size
    if dev0[0].get("numMultiprocessors") is not None:
        assert dev0[0]["numMultiprocessors"] == props.multi_processor_count


def test_d_parse_attributes_kernels_to_ops(gpu_run, tmp_path):
    require_cuda_trace(gpu_run)
    out = tmp_path / "net.dict"
    res = subprocess.run([testlib.PY, "-m", "pyprof", "parse", gpu_run.db, "-o", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, describe(res)
    print(f"{gpu_run.model}: pyprof parse says:\n{res.stderr}")
    assert "attributed to an op:" in res.stderr, "parse printed no GPU attribution summary"
    with open(out) as f:
        header = json.loads(f.readline())
        records = [json.loads(line) for line in f]
    assert header.get("records") == "gpu", f"header {header}: expected GPU records"
    kernels = [r for r in records if r["kind"] == "kernel"]
    assert len(kernels) == len(gpu_run.cap.kernels), (
        f"parse wrote {len(kernels)} kernel records, the database has {len(gpu_run.cap.kernels)}")
    attributed = [r for r in kernels if r["op"] is not None]
    bprop = [r for r in kernels if r["dir"] == "bprop"]
    print(f"{gpu_run.model}: kernel records attributed to an op: "
          f"{percent(len(attributed), len(kernels))}; bprop {len(bprop)}, paired "
          f"{sum(1 for r in bprop if r.get('paired'))}")
    unattributed = [(r["name"], r.get("tid"), r.get("launch", {}).get("api")) for r in kernels
                    if r["op"] is None]
    assert len(attributed) >= 0.99 * len(kernels), (
        f"only {percent(len(attributed), len(kernels))} kernel records have an op; "
        f"e.g. (name, tid, launch api): {unattributed[:10]}")
    assert bprop, "no kernel record is bprop"


def test_e_times_are_on_one_clock_within_the_session(gpu_run):
    require_cuda_trace(gpu_run)
    cap = gpu_run.cap
    calls = launch_calls(cap)
    wall = gpu_run.wall_ns
    bad_span, before_launch = [], []
    for k in cap.kernels:
        if not (0 < k["start"] <= k["end"] <= wall):
            bad_span.append((kernel_name(cap, k), k["start"], k["end"]))
        call = calls.get((k["globalPid"], k["correlationId"]))
        if call is not None and k["start"] < call["start"]:
            before_launch.append((kernel_name(cap, k), call["start"], k["start"]))
    calls_bad = [(api_name(cap, r), r["start"], r["end"]) for r in calls.values()
                 if not (0 <= r["start"] <= r["end"] <= wall)]
    gaps = sorted(k["start"] - calls[(k["globalPid"], k["correlationId"])]["start"]
                  for k in cap.kernels if (k["globalPid"], k["correlationId"]) in calls)
    if gaps:
        print(f"{gpu_run.model}: launch start -> kernel start: min {gaps[0]} ns, median "
              f"{gaps[len(gaps) // 2]} ns; session bound {wall} ns")
    assert not bad_span, (f"{len(bad_span)} kernels are not within the session [0, {wall}] ns; "
                          f"e.g. (name, start, end): {bad_span[:10]}")
    assert not calls_bad, f"launch calls not within the session [0, {wall}] ns: {calls_bad[:10]}"
    assert not before_launch, (f"{len(before_launch)} kernels start before their launch call "
                               f"(two clocks?); e.g. (name, launch start, kernel start): "
                               f"{before_launch[:10]}")


# ---------------------------------------------------------------------------------------------
# --capture-range cudaProfilerApi


def step_ranges(ranges) -> dict:
    """pyprof.range("step N") of train.py: N -> Range."""
    out = {}
    for r in ranges:
        m = re.fullmatch(r"step (\d+)", r.text or "")
        if m and r.domain == "" and r.event_type == PUSH_POP and r.end is not None:
            out[int(m.group(1))] = r
    return out


def launches_by_step(cap: Capture, steps: dict) -> tuple[dict, list]:
    """Kernels per step whose launch call (on any thread: backward runs on the autograd
    thread while the main thread waits inside the step) started inside that step's range."""
    calls = launch_calls(cap)
    per_step, outside = {n: 0 for n in steps}, []
    for k in cap.kernels:
        call = calls.get((k["globalPid"], k["correlationId"]))
        t = call["start"] if call is not None else k["start"]
        hit = [n for n, r in steps.items() if r.start <= t <= r.end]
        if hit:
            per_step[hit[0]] += 1
        else:
            outside.append((kernel_name(cap, k), t))
    return per_step, outside


def test_capture_range_cuda_profiler_api(tmp_path):
    steps = 4  # step 0 is the warm-up, steps 1..3 run between cudaProfilerStart and Stop
    args = ("--model", "resnet_block", "--device", "cuda", "--steps", str(steps),
            "--profiler-range")
    full = profile_train(tmp_path, "full", *args)
    window = profile_train(tmp_path, "window", *args,
                           profile_args=("--capture-range", "cudaProfilerApi"))
    require_cuda_trace(full)
    require_cuda_trace(window)
    full_ops = len(pyprof_db.ops(full.cap.ranges))
    window_ops = len(pyprof_db.ops(window.cap.ranges))
    full_steps, window_steps = step_ranges(full.cap.ranges), step_ranges(window.cap.ranges)
    full_per_step, _ = launches_by_step(full.cap, full_steps)
    per_step, outside = launches_by_step(window.cap, window_steps)
    print(f"full run: {len(full.cap.kernels)} kernels, {full_ops} op ranges, kernels per step "
          f"{full_per_step}\nwindow run: {len(window.cap.kernels)} kernels, {window_ops} op "
          f"ranges, kernels per step {per_step}, outside the steps {len(outside)}")
    assert set(full_steps) == set(range(steps)), f"full run: step ranges {sorted(full_steps)}"
    assert full_per_step.get(0, 0) > 0, "the warm-up step launched no kernel in the full run"
    assert set(window_steps) == set(range(1, steps)), (
        f"window run: step ranges {sorted(window_steps)}, expected 1..{steps - 1} "
        f"(NVTX recorded only between cudaProfilerStart and cudaProfilerStop)")
    assert window_ops < full_ops, f"window run has {window_ops} op ranges, full run {full_ops}"
    assert len(window.cap.kernels) < len(full.cap.kernels)
    assert not outside, (f"{len(outside)} kernels of the window run were launched outside steps "
                         f"1..{steps - 1}; e.g. (name, launch start): {outside[:10]}")
    assert all(per_step[n] > 0 for n in range(1, steps)), f"kernels per window step: {per_step}"


# ---------------------------------------------------------------------------------------------
# torch.profiler (Kineto, also a CUPTI client) inside the profiled program: informational.

TORCH_PROFILER_SCRIPT = """
import os, sys
sys.path.insert(0, os.path.join({root!r}, "examples"))
sys.path.insert(0, {root!r})
import torch
from torch.profiler import ProfilerActivity, profile
import models
import pyprof

torch.manual_seed(0)
model, x, target = models.make("resnet_block", 8)
pyprof.init(model=model)
model.to("cuda")
x, target = x.cuda(), target.cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
models.train_step(model, opt, x, target)  # CUDA is initialised: pyprof's CUPTI client is attached
torch.cuda.synchronize()
try:
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            models.train_step(model, opt, x, target)
        torch.cuda.synchronize()
    events = prof.events()
    cuda = sum(1 for e in events if str(getattr(e, "device_type", "")).endswith("CUDA"))
    print(f"TORCH_PROFILER: ran; {{len(events)}} events, {{cuda}} on the GPU")
except Exception as e:
    print(f"TORCH_PROFILER: failed: {{type(e).__name__}}: {{e}}")
models.train_step(model, opt, x, target)
torch.cuda.synchronize()
print("TORCH_PROFILER: program done")
"""


def test_torch_profiler_inside_the_profiled_program(tmp_path):
    """CUPTI serves one client per process and pyprof takes it first, at cuInit
    (docs/install.md, "Beside other CUDA tools"): torch.profiler with ProfilerActivity.CUDA gets
    no GPU events, one line from pyprof says why and what to do, and pyprof's capture is
    complete, its status noting the refusal. Also prints what both sides said."""
    script = tmp_path / "torch_profiler_inside.py"
    script.write_text(TORCH_PROFILER_SCRIPT.format(root=ROOT))
    res = pyprof_db.profile(tmp_path, str(script), name="tp", extra_profile_args=("--force",))
    cupti_lines = [line for line in res.stderr.splitlines()
                   if any(w in line.lower() for w in ("cupti", "pyprof", "kernels are not"))]
    ours = [line for line in res.stdout.splitlines() if line.startswith("TORCH_PROFILER")]
    db = tmp_path / "tp.sqlite"
    info = ""
    if db.exists():
        cap = read_capture(db)
        info = (f"PYPROF_CUDA_TRACE {cap.meta.get('PYPROF_CUDA_TRACE')!r}, {len(cap.kernels)} "
                f"kernels, {len(pyprof_db.ops(cap.ranges))} op ranges, stats {cap.stats}")
    print("torch.profiler inside `pyprof profile`:\n  program: " + "\n  program: ".join(ours)
          + "\n  stderr lines naming CUPTI or pyprof: "
          + (" | ".join(cupti_lines) or "none")
          + f"\n  database: {info or 'missing'}")
    assert res.returncode == 0, describe(res)
    assert "TORCH_PROFILER: program done" in res.stdout, describe(res)
    assert db.exists(), f"{db} was not written: {describe(res)}"
    assert pyprof_db.ops(cap.ranges), f"{db} has no op ranges"
    # torch.profiler ran, on the CPU only.
    assert any(line.startswith("TORCH_PROFILER: ran;") and line.endswith(" 0 on the GPU")
               for line in ours), ours
    said = [line for line in res.stderr.splitlines()
            if "torch.profiler asked for CUDA activity, but pyprof profile holds CUPTI" in line]
    assert len(said) == 1 and "pyprof profile --no-cuda-trace" in said[0], res.stderr[-3000:]
    status = cap.meta.get("PYPROF_CUDA_TRACE", "")
    assert status.split(":")[0] == "on", status
    assert status.endswith("; CUPTI refused to torch.profiler, which asked for it later"), status
    assert cap.kernels and cap.stats.get("cupti_records_dropped") == 0, cap.stats
