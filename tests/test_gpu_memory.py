"""Memory capture of the CUDA caching allocator (issue 35; docs/formats.md §2.2), on a GPU.

Skipped without CUDA (CI never has a GPU; docs/gpu-validation.md). The oracle is torch.cuda's own
accounting in the same process: the caching allocator's totals in PYPROF_MEMORY_EVENTS must end
at torch.cuda.memory_allocated() and peak at torch.cuda.max_memory_allocated(), and the two
4 MiB matrices the program makes must be allocated and freed with their sizes, the product's
inside aten::mm.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

torch = testlib.cuda_torch_or_skip("the CUDA caching allocator's memory capture needs one")

PROGRAM = testlib.script("memory_program.py")
CUDA = 1  # c10::DeviceType
MATRIX = 1024 * 1024 * 4  # one 1024 x 1024 float32 matrix, bytes (a multiple of 512: no rounding)


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cuda")
    result = pyprof_db.profile(tmp, PROGRAM, "cuda", timeout=300)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr}"
    facts = json.loads(result.stdout.splitlines()[-1])
    con = sqlite3.connect(f"file:{tmp / 'net.sqlite'}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        events = [dict(r) for r in con.execute(
            "SELECT start, globalTid, address, bytes, totalAllocated, totalReserved, deviceId "
            "FROM PYPROF_MEMORY_EVENTS WHERE deviceType = ? ORDER BY start", (CUDA,))]
        devices = [dict(r) for r in con.execute(
            "SELECT moment, deviceId, totalMemory, allocated, peakAllocated "
            "FROM PYPROF_MEMORY_DEVICES WHERE deviceType = ? ORDER BY start", (CUDA,))]
    finally:
        con.close()
    return tmp / "net.sqlite", facts, events, devices


def test_totals_match_torch_cuda(cuda_run):
    _, facts, events, _ = cuda_run
    assert events, "no CUDA allocation recorded"
    assert {e["deviceId"] for e in events} == {facts["device"]}
    assert events[-1]["totalAllocated"] == facts["allocated"]
    assert max(e["totalAllocated"] for e in events) == facts["peak_allocated"]
    assert all(e["totalReserved"] >= e["totalAllocated"] for e in events)
    # Every block was allocated after init (CUDA was first used there), so the sizes add up
    # to the total after each event.
    running = 0
    for event in events:
        running += event["bytes"]
        assert event["totalAllocated"] == running, event


def test_the_matrices_sized_and_the_product_inside_mm(cuda_run):
    db, _, events, _ = cuda_run
    matrices = [e for e in events if e["bytes"] == MATRIX]
    assert len(matrices) == 2
    for block in matrices:
        assert [e["bytes"] for e in events if e["address"] == block["address"]
                and e["start"] >= block["start"]][:2] == [MATRIX, -MATRIX]
    ranges = pyprof_db.read_ranges(str(db))
    mm = [r for r in pyprof_db.ops(ranges) if r.marker["op"] == "aten::mm"]
    assert len(mm) == 1
    inside = [e["bytes"] for e in events
              if e["globalTid"] == mm[0].global_tid and mm[0].start < e["start"] < mm[0].end]
    assert MATRIX in inside


def test_device_facts_at_exit(cuda_run):
    _, facts, _, devices = cuda_run
    exit_rows = [d for d in devices if d["moment"] == "exit"]
    assert [d["deviceId"] for d in exit_rows] == [facts["device"]]
    assert exit_rows[0]["allocated"] == facts["allocated"]
    assert exit_rows[0]["peakAllocated"] == facts["peak_allocated"]
    assert exit_rows[0]["totalMemory"] == torch.cuda.get_device_properties(
        facts["device"]).total_memory
