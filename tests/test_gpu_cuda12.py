"""The collector's CUDA 12 capture on a real GPU (issue 32; docs/gpu-validation.md, "CUDA 12").

The GPU machines run torch built for CUDA 13 and have no network, so `scripts/gpu-check.sh
--pack` brings CUDA 12 along: for each packed release (12.0 and 12.9), libcudart.so.12 and
libcupti.so.12 from NVIDIA's pip wheels in pip's layout (RELEASE/nvidia/cuda_runtime/lib,
RELEASE/nvidia/cuda_cupti/lib), and cuda12_capture_app, a CUDA 12 program
(csrc/collect/testing/cuda12_capture_app.cpp) that launches one PTX kernel through the runtime and
the driver, copies, sets memory, synchronizes three ways and replays a captured CUDA graph, each
inside an NVTX range named for it. The driver (r580) runs CUDA 12 programs.

Each release runs under `pyprof profile` with LD_LIBRARY_PATH picking its runtime and no
PYPROF_CUPTI_LIBRARY: the collector must find that release's libcupti from the runtime the
program loaded, read its records in the CUDA 12 layout, and account for every kernel the program
launched. The database is read with sqlite3 only (tests/cuda_capture.py).

Skipped without a CUDA device or without the pack (PYPROF_CUDA12_PACK, set by gpu-check.sh).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess

import pytest

import testlib
from cuda_capture import api_name, kernel_name, launch_calls, read_capture

testlib.cuda_torch_or_skip("the CUDA 12 capture needs a GPU")
PACK = os.environ.get("PYPROF_CUDA12_PACK", "")
APP = os.path.join(PACK, "cuda12_capture_app")
if not os.path.isfile(APP):
    pytest.skip(f"no CUDA 12 pack (PYPROF_CUDA12_PACK={PACK!r}; scripts/gpu-check.sh --pack "
                "makes one)", allow_module_level=True)
RELEASES = sorted(d for d in os.listdir(PACK) if os.path.isdir(os.path.join(PACK, d, "nvidia")))

KERNEL = "pyprof_cuda12_add_one"
# The range each launch call lies in, by the call's name.
LAUNCH_RANGES = {"cudaLaunchKernel": "op:runtime-launch", "cuLaunchKernel": "op:driver-launch",
                 "cudaGraphLaunch": "op:graph-replay"}


def run_app(tmp_path, release: str, mode: str = "capture",
            timeout: float = 60) -> tuple[subprocess.CompletedProcess, dict, str]:
    root = os.path.join(PACK, release, "nvidia")
    env = testlib.pyprof_env()
    for name in ("PYPROF_CUPTI_LIBRARY", "CUDA_INJECTION64_PATH"):
        env.pop(name, None)
    library_path = [os.path.join(root, "cuda_runtime", "lib")]
    if mode == "client-first":  # it loads libcupti.so.12 itself, by its name
        library_path.append(os.path.join(root, "cuda_cupti", "lib"))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(library_path + [env.get("LD_LIBRARY_PATH", "")])
    out = tmp_path / f"cuda12-{release}-{mode}"
    cmd = [testlib.PY, "-m", "pyprof", "profile", "-o", str(out), "--force", "--", APP, mode]
    # Its own process group: a program that hangs is killed with the launcher, not left behind.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=testlib.ROOT, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        stderr += f"\n(killed after {timeout} s)"
    res = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    facts = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
    return res, facts, f"{out}.sqlite"


@pytest.fixture(scope="module", params=RELEASES)
def capture(request, tmp_path_factory):
    release = request.param
    res, facts, db = run_app(tmp_path_factory.mktemp(release), release)
    assert res.returncode == 0 and facts.get("result") == "ok", res.stdout + res.stderr[-3000:]
    return release, res, facts, read_capture(db)


def range_of(cap, api: dict) -> str | None:
    """The innermost NVTX push/pop range of the call's thread that holds the call."""
    holding = [r for r in cap.ranges if r.global_tid == api["globalTid"] and r.end is not None
               and r.start <= api["start"] and api["end"] <= r.end]
    return min(holding, key=lambda r: r.end - r.start).text if holding else None


def test_the_collector_found_the_releases_libcupti_and_read_cuda12_records(capture):
    release, res, facts, cap = capture
    status = cap.meta.get("PYPROF_CUDA_TRACE", "")
    cupti = os.path.join(PACK, release, "nvidia", "cuda_cupti", "lib", "libcupti.so.12")
    assert status.startswith("on: CUPTI API version "), status
    assert f"({cupti})" in status and status.endswith("CUDA 12 records"), status
    assert int(facts["cudart"]) // 1000 == 12, facts  # the program ran on the packed runtime
    assert cap.stats.get("cupti_records_dropped") == 0, cap.stats
    print(f"cuda12 {release}: {status}; cudart {facts['cudart']}, driver {facts['driver']}, "
          f"{facts['device']}")


def test_every_kernel_the_program_ran_was_recorded_with_its_launch_call(capture):
    release, res, facts, cap = capture
    launched = int(facts["runtime_launches"]) + int(facts["driver_launches"]) + \
        int(facts["graph_kernels"])
    assert {kernel_name(cap, k) for k in cap.kernels} == {KERNEL}
    assert len(cap.kernels) == launched, (len(cap.kernels), facts)
    calls = launch_calls(cap)
    inside = 0
    by_call = {}
    for k in cap.kernels:
        call = calls.get((k["globalPid"], k["correlationId"]))
        assert call is not None, f"kernel {k['correlationId']} has no launch call"
        name = api_name(cap, call)
        assert name in LAUNCH_RANGES, name
        by_call[name] = by_call.get(name, 0) + 1
        inside += range_of(cap, call) == LAUNCH_RANGES[name]
        assert k["start"] > call["start"] and k["end"] > k["start"]
        assert (k["gridX"], k["blockX"]) == ((1 << 20) // 256, 256)
    assert by_call == {name: n for name, n in (
        ("cudaLaunchKernel", int(facts["runtime_launches"])),
        ("cuLaunchKernel", int(facts["driver_launches"])),
        ("cudaGraphLaunch", int(facts["graph_kernels"]))) if n}, by_call
    assert inside == len(cap.kernels)
    graph_kernels = [k for k in cap.kernels if k.get("graphNodeId") is not None]
    assert len(graph_kernels) == int(facts["graph_kernels"])
    print(f"cuda12 {release}: kernels {len(cap.kernels)}/{launched} recorded with their launch "
          f"call ({', '.join(f'{n} {c}' for c, n in sorted(by_call.items()))}), "
          f"{inside}/{len(cap.kernels)} inside their range; graph replays with their node "
          f"{len(graph_kernels)}")


def test_copies_memsets_synchronizations_and_the_device(capture):
    release, res, facts, cap = capture
    con = sqlite3.connect(f"file:{cap.path}?mode=ro", uri=True)
    try:
        copies = dict(con.execute("SELECT copyKind, sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                                  "GROUP BY copyKind"))
        memsets = con.execute("SELECT bytes FROM CUPTI_ACTIVITY_KIND_MEMSET").fetchall()
        syncs = {t for (t,) in con.execute(
            "SELECT syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")}
        gpu = con.execute("SELECT name, smCount FROM TARGET_INFO_GPU").fetchall()
        nodes = con.execute("SELECT count(*) FROM PYPROF_CUDA_GRAPH_NODES").fetchone()[0]
    finally:
        con.close()
    size = (1 << 20) * 4
    assert copies == {1: 2 * size, 2: size}, copies  # HtoD twice, DtoH once (bytes by kind)
    assert memsets == [(size,)], memsets
    assert {1, 3, 4} <= syncs, syncs  # event, stream and context synchronization
    assert (facts["device"], int(facts["sms"])) in gpu, (gpu, facts)
    assert nodes >= 2, nodes  # the two captured kernels, created and cloned
    print(f"cuda12 {release}: copies {len(copies)}, memsets {len(memsets)}, sync types "
          f"{sorted(syncs)}, graph node rows {nodes}, device {gpu[0][0]}")


def test_parse_writes_one_record_per_kernel(capture, tmp_path):
    release, res, facts, cap = capture
    out = tmp_path / "cuda12.dict"
    parse = testlib.run_tool(testlib.PARSE, cap.path, "-o", out)
    assert parse.returncode == 0, parse.stderr[-3000:]
    kernels = sum(1 for line in open(out) if json.loads(line).get("kind") == "kernel")
    assert kernels == len(cap.kernels), (kernels, len(cap.kernels))


@pytest.mark.parametrize("release", RELEASES[-1:])
def test_torch_profiler_asking_after_pyprof_gets_no_cupti(tmp_path, release):
    """CUPTI 12's one subscriber with the real library: the collector holds it; a second
    subscription (Kineto's) fails with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, the
    collector says so in one line, and its own capture is complete."""
    res, facts, db = run_app(tmp_path, release, "second-client")
    assert res.returncode == 0 and facts.get("result") == "ok", res.stdout + res.stderr[-3000:]
    assert facts["cupti_request"] == "1", facts
    assert facts["second_subscribe"] == "39", facts
    assert sum("torch.profiler asked for CUDA activity" in line
               for line in res.stderr.splitlines()) == 1, res.stderr
    cap = read_capture(db)
    launched = int(facts["runtime_launches"]) + int(facts["driver_launches"]) + \
        int(facts["graph_kernels"])
    assert len(cap.kernels) == launched
    print(f"cuda12 {release}: a second CUPTI 12 subscriber got {facts['second_subscribe']}; "
          f"pyprof kept {len(cap.kernels)}/{launched} kernels")


@pytest.mark.parametrize("release", RELEASES[-1:])
def test_informational_a_subscriber_before_cuda_initialises(tmp_path, release):
    """What real CUPTI 12 does when another client subscribes before CUDA (and so the
    collector) initialises: printed, not judged, beyond the program finishing and the NVTX
    ranges being recorded."""
    res, facts, db = run_app(tmp_path, release, "client-first", timeout=30)
    lines = [line for line in res.stderr.splitlines() if "pyprof-collect" in line]
    print(f"cuda12 {release} client-first: subscribe {facts.get('client_first_subscribe')}, "
          f"exit {res.returncode}, result {facts.get('result')}; " + " | ".join(lines))
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert os.path.exists(db)
    cap = read_capture(db)
    assert any(r.text == "op:driver-launch" for r in cap.ranges)
    print(f"cuda12 {release} client-first: PYPROF_CUDA_TRACE {cap.meta.get('PYPROF_CUDA_TRACE')!r}"
          f", {len(cap.kernels)} kernels")

