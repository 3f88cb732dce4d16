"""torch.profiler in a program that `pyprof profile` records: CUPTI serves one client per
process and the first keeps it (docs/install.md, "Beside other CUDA tools").

No GPU: the program plays the CUDA driver's part, loading the collector as cuInit does
(CUDA_INJECTION64_PATH) and calling its InitializeInjection, with PYPROF_CUPTI_LIBRARY naming the
fake libcupti of the C++ tests (csrc/collect/testing/fake_cupti), which plays a CUDA 12.9 or a
CUDA 13.0 release. torch.profiler is the real one; on this CPU torch it asks Kineto for CUDA
activity only when torch says it is a CUDA build, so the program says so for the cases that ask
(torch.cuda.is_available and the supported activities; torch.profiler then prepares Kineto with
ProfilerActivity.CUDA exactly as on a GPU, and Kineto, built without CUPTI, records CPU ops).
The C++ tests (cupti_library_test) check the same lines against the fake's refused subscription.
"""

from __future__ import annotations

import os
import sqlite3

import pytest

import testlib
import pyprof_db

FAKE_CUPTI = os.path.join(os.environ.get("PYPROF_BUILD_DIR", os.path.join(testlib.ROOT, "build")),
                          "csrc", "collect", "testing", "libfake_cupti.so")

PROGRAM = """
import ctypes, os, sys
import torch
from torch.profiler import ProfilerActivity, profile
import pyprof

pyprof.init()
# cuInit under `pyprof profile`: the driver loads CUDA_INJECTION64_PATH (unset with
# --no-cuda-trace) and calls InitializeInjection.
if os.environ.get("CUDA_INJECTION64_PATH"):
    ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection()
activities = [ProfilerActivity.CPU]
if sys.argv[1] == "cuda":
    # What a CUDA build of torch answers (and a synchronize that has nothing to wait for).
    torch.cuda.is_available = lambda: True
    torch.autograd.profiler._supported_activities = lambda: {{ProfilerActivity.CPU,
                                                             ProfilerActivity.CUDA}}
    torch.cuda.synchronize = lambda *args, **kwargs: None
    activities.append(ProfilerActivity.CUDA)
for window in range(2):
    with profile(activities=activities) as prof:
        x = torch.randn(64, 64)
        (x @ x).relu().sum()
    ops = sum(1 for e in prof.events() if e.name == "aten::mm")
    print(f"TORCH_PROFILER window {{window}}: {{ops}} aten::mm")
"""

LINE = ("torch.profiler asked for CUDA activity, but pyprof profile holds CUPTI, which serves "
        "one client per process")


def run(tmp_path, mode: str, version: str, *profile_args: str):
    if not os.path.exists(FAKE_CUPTI):
        pytest.skip(f"{FAKE_CUPTI} is built only with PYPROF_BUILD_TESTS=1")
    script = tmp_path / "program.py"
    script.write_text(PROGRAM.format())
    res = pyprof_db.profile(tmp_path, str(script), mode, name="run",
                            env={"PYPROF_CUPTI_LIBRARY": FAKE_CUPTI, "FAKE_CUPTI_VERSION": version},
                            extra_profile_args=profile_args)
    assert res.returncode == 0, res.stderr[-3000:]
    # torch.profiler keeps recording what it can: the CPU ops of each window.
    assert [line for line in res.stdout.splitlines() if line.startswith("TORCH_PROFILER")] == [
        "TORCH_PROFILER window 0: 1 aten::mm", "TORCH_PROFILER window 1: 1 aten::mm"], res.stdout
    con = sqlite3.connect(tmp_path / "run.sqlite")
    try:
        status = con.execute("SELECT value FROM META_DATA_CAPTURE WHERE name = "
                             "'PYPROF_CUDA_TRACE'").fetchone()[0]
    finally:
        con.close()
    return res, status


@pytest.mark.parametrize("version", ["28", "130001"], ids=["cuda12.9", "cuda13.0"])
def test_torch_profiler_asking_for_cuda_under_pyprof_gets_one_line(tmp_path, version):
    res, status = run(tmp_path, "cuda", version)
    lines = [line for line in res.stderr.splitlines() if LINE in line]
    assert len(lines) == 1, res.stderr  # two profiler windows, one line
    assert "`pyprof profile --no-cuda-trace`" in lines[0]
    # pyprof kept CUPTI, and its database says that torch.profiler was refused it.
    assert status.startswith("on: CUPTI API version " + version), status
    assert status.endswith("; CUPTI refused to torch.profiler, which asked for it later"), status


def test_torch_profiler_without_cuda_activity_hears_nothing(tmp_path):
    res, status = run(tmp_path, "cpu", "28")
    assert "torch.profiler asked" not in res.stderr, res.stderr
    assert status.startswith("on: "), status
    assert "refused" not in status, status


def test_no_cuda_trace_leaves_cupti_to_torch_profiler(tmp_path):
    """The remedy the line names: pyprof does not load CUPTI at all, so torch.profiler's
    subscription is the only one, and nothing is said."""
    res, status = run(tmp_path, "cuda", "28", "--no-cuda-trace")
    assert "torch.profiler asked" not in res.stderr, res.stderr
    assert "CUDA kernels are not recorded" not in res.stderr, res.stderr
    assert status.startswith("off: ") and "PYPROF_CUDA_TRACE" in status, status
