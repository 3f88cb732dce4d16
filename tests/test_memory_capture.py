"""Memory capture under `pyprof profile` (docs/formats.md §2.2): every allocation and free of
torch's allocators in PYPROF_MEMORY_EVENTS, on the clock and thread of the NVTX ranges.

Oracles: sizes computed by hand for a Linear layer, and torch.profiler(profile_memory=True) in an
equal process, whose `[memory]` events (Bytes, Total Allocated) must be the same, event for
event, as pyprof's for the same training steps. Databases are read with plain sqlite3
(tests/pyprof_db.py); the helper program is tests/scripts/memory_program.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

PROGRAM = testlib.script("memory_program.py")
CPU = 0  # c10::DeviceType


def describe(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def profile(tmp_path, *args, env=None, name="net") -> subprocess.CompletedProcess:
    result = pyprof_db.profile(tmp_path, PROGRAM, *args, env=env, name=name, timeout=120)
    assert result.returncode == 0, describe(result)
    return result


def memory_events(path) -> list[dict]:
    """PYPROF_MEMORY_EVENTS rows in the order they happened."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in con.execute(
            "SELECT start, globalTid, address, bytes, totalAllocated, totalReserved, deviceType, "
            "deviceId FROM PYPROF_MEMORY_EVENTS ORDER BY start")]
    finally:
        con.close()


def capture_row(path, name) -> str | None:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT value FROM META_DATA_CAPTURE WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None
    finally:
        con.close()


def inside(event: dict, r: pyprof_db.Range) -> bool:
    return event["globalTid"] == r.global_tid and r.start < event["start"] < r.end


def torch_memory_events(trace_path) -> list[dict]:
    """The `[memory]` instant events of torch.profiler's Chrome trace, in the order recorded."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    memory = [e for e in events if e.get("name") == "[memory]"]
    return [e["args"] for e in sorted(memory, key=lambda e: (e["ts"], e["args"]["Ev Idx"]))]


@pytest.fixture(scope="module")
def linear_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("linear")
    result = profile(tmp, "linear")
    facts = json.loads(result.stdout.splitlines()[-1])
    return tmp / "net.sqlite", facts, result


def test_linear_forward_allocates_its_output_inside_addmm(linear_run):
    db, facts, _ = linear_run
    ranges = pyprof_db.read_ranges(str(db))
    events = memory_events(db)
    forward = [r for r in ranges if r.text == "forward"]
    assert len(forward) == 1
    addmm = [r for r in pyprof_db.ops(ranges)
             if r.marker["op"] == "aten::addmm" and forward[0].encloses(r)]
    assert len(addmm) == 1
    in_addmm = [e for e in events if inside(e, addmm[0])]
    # The output: 4 x 8 float32 = 128 bytes, on the CPU, by the thread that ran the op.
    assert [(e["bytes"], e["deviceType"], e["deviceId"]) for e in in_addmm] == [(128, CPU, -1)]
    assert addmm[0].tid == facts["tid"]
    # Dropped by Python after the forward range: the same block freed outside any op.
    output = in_addmm[0]
    freed = [e for e in events if e["address"] == output["address"] and e["bytes"] < 0]
    assert [e["bytes"] for e in freed] == [-128]
    assert freed[0]["start"] > forward[0].end
    assert not any(op.start < freed[0]["start"] < op.end for op in pyprof_db.ops(ranges)
                   if op.global_tid == freed[0]["globalTid"])


def test_linear_parameters_and_input_sized_by_hand(linear_run):
    db, facts, _ = linear_run
    main = [e for e in memory_events(db) if e["globalTid"] & 0xFFFFFF == facts["tid"]]
    allocations = [e["bytes"] for e in main if e["bytes"] > 0]
    # weight 8 x 16 floats, bias 8 floats, input 4 x 16 floats, output 4 x 8 floats.
    assert allocations == [512, 32, 256, 128]
    # torch's CPU allocator counts from the first block it saw (at init) on: the running total
    # after each event is the sum of the sizes so far, the CPU keeping no reserve.
    running = 0
    for event in sorted(memory_events(db), key=lambda e: e["start"]):
        running += event["bytes"]
        assert event["totalAllocated"] == running, event
        assert event["totalReserved"] == 0
    assert running == 0  # every block allocated since init was freed by the end


def test_a_python_threads_allocations_are_its_own(linear_run):
    db, facts, _ = linear_run
    ranges = pyprof_db.read_ranges(str(db))
    work = [r for r in ranges if r.text == "thread-work"]
    assert len(work) == 1 and work[0].tid == facts["worker_tid"]
    on_worker = [e for e in memory_events(db) if e["globalTid"] == work[0].global_tid]
    assert [e["bytes"] for e in on_worker] == [128, -128]  # torch.ones(32), dropped at once
    assert all(inside(e, work[0]) for e in on_worker)


def test_capture_status_counts_and_device_facts(linear_run):
    db, _, result = linear_run
    assert capture_row(db, "PYPROF_MEMORY_CAPTURE") == "on"
    stats = pyprof_db.stats(str(db))
    events = memory_events(db)
    assert stats["memory_events"] == stats["memory_events_written"] == len(events) == 10
    assert stats["memory_events_dropped"] == 0
    assert stats["memory_ops_unseen"] == 0
    assert "memory (pid " in result.stderr
    assert "10 allocations and frees, 0 dropped" in result.stderr
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT moment, deviceType, deviceId, totalMemory, freeMemory "
                           "FROM PYPROF_MEMORY_DEVICES ORDER BY start").fetchall()
    finally:
        con.close()
    # No CUDA here: the host's memory at init and at exit, from /proc/meminfo.
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [("init", CPU, -1, total),
                                                         ("exit", CPU, -1, total)]
    assert all(0 < r[4] <= total for r in rows)


def test_same_events_as_torch_profiler_in_an_equal_process(tmp_path):
    profile(tmp_path, "steps-pyprof")
    trace = tmp_path / "torch.json"
    result = subprocess.run([testlib.PY, PROGRAM, "steps-torch", str(trace)],
                            capture_output=True, text=True, timeout=120, env=testlib.pyprof_env())
    assert result.returncode == 0, describe(result)
    theirs = torch_memory_events(trace)
    ours = memory_events(tmp_path / "net.sqlite")
    # The devices' memory at init() and at stop(), not again at exit: the capture had ended.
    con = sqlite3.connect(f"file:{tmp_path / 'net.sqlite'}?mode=ro", uri=True)
    try:
        moments = [r[0] for r in con.execute("SELECT moment FROM PYPROF_MEMORY_DEVICES "
                                             "ORDER BY start")]
    finally:
        con.close()
    assert moments == ["init", "stop"]
    assert len(theirs) > 50  # three steps of an MLP's forward, backward and SGD step
    assert ([(e["bytes"], e["totalAllocated"], e["totalReserved"], e["deviceType"], e["deviceId"])
             for e in ours]
            == [(e["Bytes"], e["Total Allocated"], e["Total Reserved"], e["Device Type"],
                 e["Device Id"]) for e in theirs])
    assert sum(e["bytes"] for e in ours if e["bytes"] > 0) == sum(
        e["Bytes"] for e in theirs if e["Bytes"] > 0)


def test_torch_profiler_in_the_same_program(tmp_path):
    trace = tmp_path / "torch.json"
    result = profile(tmp_path, "beside-torch", str(trace))
    notes = [line for line in result.stderr.splitlines() if "torch.profiler starts" in line]
    assert len(notes) == 1, result.stderr
    db = tmp_path / "net.sqlite"
    ranges = pyprof_db.read_ranges(str(db))
    steps = {r.text: r for r in ranges if r.text in ("step 1", "step 2", "step 3")}
    events = memory_events(db)
    by_step = {name: [e["bytes"] for e in events if inside(e, r)] for name, r in steps.items()}
    theirs = [e["Bytes"] for e in torch_memory_events(trace)]
    # While torch.profiler runs, this thread's allocations go to it; before and after, to
    # pyprof; the steps are equal, so each side has the same events for its steps.
    assert by_step["step 2"] == []
    assert len(theirs) > 20
    assert by_step["step 1"] == by_step["step 3"] == theirs
    # The ops of step 2 are the ones counted as unseen.
    step2_ops = [o for o in pyprof_db.ops(ranges) if steps["step 2"].encloses(o)]
    stats = pyprof_db.stats(str(db))
    assert stats["memory_ops_unseen"] == len(step2_ops) > 0
    assert json.loads(result.stdout.splitlines()[-1])["memory_step_asides"] == 1


def test_dataloader_workers_record_their_own_allocations(tmp_path):
    result = pyprof_db.profile(tmp_path, testlib.script("lifecycle_dataloader.py"), timeout=120)
    assert result.returncode == 0, describe(result)
    facts = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))
    assert len(facts["workers"]) == 2
    for worker in facts["workers"]:
        db = tmp_path / f"net.pid{worker}.sqlite"
        assert capture_row(db, "PYPROF_MEMORY_CAPTURE") == "on"
        events = memory_events(db)
        assert {e["globalTid"] >> 24 & 0xFFFFFF for e in events} == {worker}
        # __getitem__'s torch.randn(4, 4) @ torch.randn(4, 4): 16 floats each, the product's
        # inside aten::mm.
        mm = [r for r in pyprof_db.ops(pyprof_db.read_ranges(str(db)))
              if r.marker["op"] == "aten::mm"]
        assert mm
        for op in mm:
            assert [e["bytes"] for e in events if inside(e, op)] == [64]
        assert pyprof_db.stats(str(db))["memory_events_dropped"] == 0


def test_free_of_a_block_allocated_before_init_is_not_fatal(tmp_path):
    result = profile(tmp_path, "before-init")
    events = memory_events(tmp_path / "net.sqlite")
    # torch's CPU allocator knows the size of a block only when a profiler listened as it was
    # allocated: the early tensor's free reaches no profiler (torch says so in its own warning).
    assert [e["bytes"] for e in events] == [40, -40]
    # Nor does it change the CPU allocator's total, which counts the blocks it saw allocated.
    assert [e["totalAllocated"] for e in events] == [40, 0]
    assert "allocated before the profiling started" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("how", ["env", "argument"])
def test_off(tmp_path, how):
    env = {"PYPROF_MEMORY": "0"} if how == "env" else None
    program = PROGRAM
    if how == "argument":
        program = tmp_path / "off.py"
        program.write_text(
            "import sys; sys.path.insert(0, %r)\n"
            "import torch, pyprof\n"
            "assert pyprof.init(memory=False)\n"
            "torch.ones(32)\n" % testlib.ROOT)
        result = pyprof_db.profile(tmp_path, str(program), timeout=120)
    else:
        result = pyprof_db.profile(tmp_path, str(program), "linear", env=env, timeout=120)
    assert result.returncode == 0, describe(result)
    db = tmp_path / "net.sqlite"
    assert memory_events(db) == []
    expected = "PYPROF_MEMORY=0" if how == "env" else "pyprof.init(memory=False)"
    assert capture_row(db, "PYPROF_MEMORY_CAPTURE") == f"off: {expected}"
    assert "allocations and frees" not in result.stderr


def test_buffer_limit_drops_are_counted(tmp_path):
    # A 1-byte buffer limit refuses every event: each allocation and free of the run is counted
    # as dropped, none is lost without a count, and the launcher's warning includes them.
    result = profile(tmp_path, "linear", env={"PYPROF_BUFFER_BYTES": "1"})
    db = tmp_path / "net.sqlite"
    stats = pyprof_db.stats(str(db))
    assert memory_events(db) == []
    assert stats["memory_events"] == stats["memory_events_dropped"] == 10
    assert stats["memory_events_written"] == 0
    assert "10 allocations and frees" not in result.stderr
    assert "0 allocations and frees, 10 dropped" in result.stderr
    assert "events dropped" in result.stderr


@pytest.mark.parametrize("value, expected", [("", True), ("1", True), ("on", True),
                                             ("0", False), ("off", False), ("No", False)])
def test_switch_values(monkeypatch, value, expected):
    from pyprof import _memory

    monkeypatch.setenv("PYPROF_MEMORY", value)
    assert _memory.enabled_by_default() is expected


def test_switch_refuses_other_values(monkeypatch):
    from pyprof import _memory

    monkeypatch.setenv("PYPROF_MEMORY", "sometimes")
    with pytest.raises(ValueError, match="PYPROF_MEMORY='sometimes'"):
        _memory.enabled_by_default()
