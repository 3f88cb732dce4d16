"""`pyprof parse` writes the memory lines of docs/formats.md §3.2: one `"kind":"memory"` line per
allocation or free after the records, in time order, attributed as a record launched at that
time on that thread (op, dir, instance, module, step, user_ranges), and the header's `memory`.

Oracles: a real CPU model profiled with `pyprof profile` (tests/scripts/memory_program.py),
its PYPROF_MEMORY_EVENTS read with plain sqlite3 and the Linear's sizes worked out by hand; a
torch.profiler trace recorded here with profile_memory=True, whose `[memory]` events the lines
must equal and whose op ranges must hold them (torch.profiler's own per-op self memory for a
forward-only run); bad input made by hand (frees of blocks never allocated, negative totals, a
trace that starts mid-step), counted and reported, never fatal.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from decimal import Decimal

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

PROGRAM = testlib.script("memory_program.py")


def describe(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def parse_lines(path, *extra) -> tuple[dict, list[dict], list[dict], str]:
    """pyprof-parse PATH: (header, records, memory lines, stderr)."""
    res = testlib.run_tool(testlib.PARSE, path, *extra)
    assert res.returncode == 0, res.stderr
    lines = testlib.expand_args([json.loads(line) for line in res.stdout.splitlines()])
    memory = [line for line in lines if line.get("kind") == "memory"]
    header, records = testlib.read_records(res.stdout)
    return header, records, memory, res.stderr


def db_events(path) -> list[dict]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in con.execute(
            "SELECT start, globalTid, address, bytes, totalAllocated, totalReserved, deviceType, "
            "deviceId FROM PYPROF_MEMORY_EVENTS ORDER BY start, rowid")]
    finally:
        con.close()


def as_line_values(e: dict) -> tuple:
    """A PYPROF_MEMORY_EVENTS row as its memory line says it (device -1 for the CPU)."""
    return (e["start"], e["bytes"], e["address"], -1 if e["deviceType"] == 0 else e["deviceId"],
            e["totalAllocated"], e["totalReserved"], (e["globalTid"] >> 24) & 0xFFFFFF,
            e["globalTid"] & 0xFFFFFF)


def line_values(m: dict) -> tuple:
    return (m["start"], m["bytes"], m["addr"], m["device"], m.get("total_allocated"),
            m.get("total_reserved"), m["pid"], m["tid"])


def by_instance(records: list[dict]) -> dict[int, dict]:
    """A CPU-only profile's op records by `instance`: each op's own record, and for backward
    the node's (the ops inside a node share its instance)."""
    return {r["instance"]: r for r in records if "instance" in r and r["dir"] is not None
            and r["name"] == (r["op"] if r["dir"] == "fprop" else r.get("bwd_node"))}


# ---- (a) our own capture -------------------------------------------------------------------


@pytest.fixture(scope="module")
def linear_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("linear")
    result = pyprof_db.profile(tmp, PROGRAM, "linear", timeout=120)
    assert result.returncode == 0, describe(result)
    facts = json.loads(result.stdout.splitlines()[-1])
    return tmp / "net.sqlite", facts


def test_lines_equal_the_database_rows(linear_run):
    db, _ = linear_run
    header, _, memory, summary = parse_lines(db)
    rows = db_events(db)
    assert len(rows) == 10
    assert [line_values(m) for m in memory] == [as_line_values(e) for e in rows]
    assert header["memory"] == {"events": 10, "source": "pyprof", "frees_unknown": 0,
                                "negative_totals": 0, "outside_steps": 0}
    assert "  10 memory events (0 frees of blocks allocated before the capture)\n" in summary


def test_linear_output_inside_addmm_fprop_in_its_module(linear_run):
    db, facts = linear_run
    _, records, memory, _ = parse_lines(db)
    main = [m for m in memory if m["tid"] == facts["tid"]]
    # weight 8 x 16 floats, bias 8 floats, input 4 x 16 floats, output 4 x 8 floats; the output
    # freed by Python after the forward range, outside every op; the rest freed at exit.
    assert [m["bytes"] for m in main] == [512, 32, 256, 128, -128, -512, -32, -256]
    output, freed = main[3], main[4]
    # The parameters and the input are made by aten::empty (Linear's __init__, torch.randn).
    assert [(m["op"], m["dir"]) for m in main[:3]] == [("aten::empty", "fprop")] * 3
    assert (output["op"], output["dir"], output["user_ranges"]) == ("aten::addmm", "fprop",
                                                                   ["forward"])
    # Attributed as the op's own record: the same instance, module and op.
    addmm = [r for r in records if r["name"] == "aten::addmm"]
    assert len(addmm) == 1
    assert output["instance"] == addmm[0]["instance"]
    assert output["module"] == addmm[0]["module"]
    assert addmm[0].get("module_type") == "Linear"
    assert addmm[0]["start"] <= output["start"] <= addmm[0]["start"] + addmm[0]["duration"]
    assert freed["addr"] == output["addr"]
    assert (freed["op"], freed["dir"]) == (None, None)
    assert "instance" not in freed and "module" not in freed and "user_ranges" not in freed
    # The worker thread's torch.ones(32) inside its range, made and dropped there.
    worker = [m for m in memory if m["tid"] == facts["worker_tid"]]
    assert [m["bytes"] for m in worker] == [128, -128]
    assert all(m["user_ranges"] == ["thread-work"] for m in worker)
    assert worker[0]["op"] is not None and worker[0]["dir"] == "fprop"


def test_training_steps_attributed_as_their_records(tmp_path):
    result = pyprof_db.profile(tmp_path, PROGRAM, "steps-pyprof", timeout=120)
    assert result.returncode == 0, describe(result)
    db = tmp_path / "net.sqlite"
    header, records, memory, _ = parse_lines(db)
    assert [line_values(m) for m in memory] == [as_line_values(e) for e in db_events(db)]
    assert len(memory) > 50
    instances = by_instance(records)
    ranges = pyprof_db.read_ranges(str(db))
    # The op ranges parse makes records of (record_function scopes, such as the optimizer's,
    # are pyprof markers too, but user ranges to parse).
    record_names = {r["name"] for r in records}
    ops = [o for o in pyprof_db.ops(ranges) if o.marker["op"] in record_names]
    dirs = {m["dir"] for m in memory}
    assert {"fprop", "bprop"} <= dirs
    for m in memory:
        if m["dir"] is None:
            # No op of its thread holds it.
            assert not any(o.tid == m["tid"] and o.start <= m["start"] <= o.end for o in ops), m
            continue
        record = instances[m["instance"]]
        assert (m["op"], m["dir"], m.get("module")) == (record["op"], record["dir"],
                                                       record.get("module")), (m, record)
        # The instance's range holds the event (the op's own, or a backward node's), or, beside
        # a node, the autograd engine's step for that node does.
        engine_step = "autograd::engine::evaluate_function: " + record["name"]
        assert (record["start"] <= m["start"] <= record["start"] + record["duration"]
                or (m["dir"] == "bprop" and m["user_ranges"][-1].endswith(engine_step))), (m, record)
        if m["dir"] == "fprop":
            # ... and it is the innermost op of its thread there, as sqlite3 reads the ranges.
            around = [o for o in ops if o.tid == m["tid"] and o.start <= m["start"] <= o.end]
            innermost = max(around, key=lambda o: (o.start, -o.end))
            assert innermost.marker["op"] == m["op"]
    # Steps: the header's count of lines outside every step is the lines without a step.
    if "iterations" in header:
        assert header["memory"]["outside_steps"] == sum("step" not in m for m in memory)


def test_bad_rows_in_a_database_counted_never_fatal(linear_run, tmp_path):
    db, facts = linear_run
    bad = tmp_path / "bad.sqlite"
    shutil.copy(db, bad)
    con = sqlite3.connect(bad)
    try:
        # The output's allocation gone: its free then has no allocation before it.
        rows = db_events(db)
        output = [e for e in rows if e["bytes"] == 128 and e["globalTid"] & 0xFFFFFF
                  == facts["tid"]][0]
        con.execute("DELETE FROM PYPROF_MEMORY_EVENTS WHERE address = ? AND bytes > 0",
                    (output["address"],))
        con.execute("UPDATE PYPROF_MEMORY_EVENTS SET totalAllocated = -64 WHERE bytes = 512")
        con.commit()
    finally:
        con.close()
    header, _, memory, summary = parse_lines(bad)
    assert len(memory) == 9
    assert header["memory"] == {"events": 9, "source": "pyprof", "frees_unknown": 1,
                                "negative_totals": 1, "outside_steps": 0}
    assert [m["total_allocated"] for m in memory if m["bytes"] == 512] == [-64]  # as reported
    assert ("  9 memory events (1 frees of blocks allocated before the capture); 1 with a "
            "negative total, kept as reported\n") in summary
    assert "memory events with a negative total (kept as reported)" in summary


def test_capture_off_says_so_and_writes_no_memory(tmp_path):
    result = pyprof_db.profile(tmp_path, PROGRAM, "linear", env={"PYPROF_MEMORY": "0"},
                               timeout=120)
    assert result.returncode == 0, describe(result)
    header, _, memory, summary = parse_lines(tmp_path / "net.sqlite")
    assert "memory" not in header and memory == []
    assert "memory: not recorded (off: PYPROF_MEMORY=0)" in summary


# ---- (b) torch.profiler traces -------------------------------------------------------------

TORCH_MEMORY_PROGRAM = """
import json, sys, torch
from torch.profiler import profile, ProfilerActivity
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 16), torch.randn(8, 4)
def train():
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
train()  # warm-up
mode = sys.argv[1]
with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
             with_stack=True) as p:
    for _ in range(3):
        if mode == "train":
            train()
        else:
            with torch.no_grad():
                model(x)
        p.step()
p.export_chrome_trace(sys.argv[2])
self_memory = {e.key: e.self_cpu_memory_usage for e in p.key_averages()}
with open(sys.argv[3], "w") as f:
    json.dump(self_memory, f)
"""


def record_trace(tmp_path, mode: str):
    trace, averages = tmp_path / f"{mode}.pt.trace.json", tmp_path / f"{mode}.self.json"
    res = subprocess.run([testlib.PY, "-c", TORCH_MEMORY_PROGRAM, mode, trace, averages],
                         capture_output=True, text=True, timeout=120, env=testlib.pyprof_env())
    assert res.returncode == 0, res.stderr
    with open(trace) as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    with open(averages) as f:
        self_memory = json.load(f)
    return trace, events, self_memory


def ns(us) -> int:
    return int(Decimal(us) * 1000)


def trace_memory(events) -> list[dict]:
    return [e for e in events if e.get("ph") == "i" and e.get("name") == "[memory]"]


def innermost_op(events, pid, tid, t):
    """The innermost cpu_op of (pid, tid) whose span holds t, as the trace says; None if none."""
    around = [e for e in events if e.get("cat") == "cpu_op" and e["pid"] == pid and e["tid"] == tid
              and not e["name"].startswith(("autograd::engine::evaluate_function: ",
                                            "ProfilerStep#"))
              and ns(e["ts"]) <= t <= ns(e["ts"]) + ns(e["dur"])]
    return max(around, key=lambda e: (ns(e["ts"]), -ns(e["dur"])), default=None)


def test_trace_memory_events_become_the_lines(tmp_path):
    trace, events, _ = record_trace(tmp_path, "train")
    header, records, memory, summary = parse_lines(trace)
    theirs = trace_memory(events)
    assert len(theirs) > 50
    assert len(memory) == len(theirs)
    assert [m["start"] for m in memory] == sorted(m["start"] for m in memory)
    assert sorted(line_values(m) for m in memory) == sorted(
        (ns(e["ts"]), e["args"]["Bytes"], e["args"]["Addr"],
         -1 if e["args"]["Device Type"] == 0 else e["args"]["Device Id"],
         e["args"]["Total Allocated"], e["args"]["Total Reserved"], e["pid"], e["tid"])
        for e in theirs)
    # Each line in the step whose span holds it (the steps parse found: here the optimizer's).
    steps = header["iterations"]["steps"]
    assert len(steps) == 3
    for m in memory:
        holding = [s["index"] for s in steps if s["start"] <= m["start"] < s["end"]]
        assert holding == ([m["step"]] if "step" in m else []), m
    outside = sum("step" not in m for m in memory)
    assert outside > 0  # the forward of the first step ran before its optimizer scope began
    assert header["memory"] == {"events": len(theirs), "source": "kineto", "frees_unknown": 0,
                                "negative_totals": 0, "outside_steps": outside}
    assert (f"  {len(theirs)} memory events (0 frees of blocks allocated before the capture)"
            in summary)
    instances = by_instance(records)
    assert {"fprop", "bprop"} <= {m["dir"] for m in memory}
    for m in memory:
        op = innermost_op(events, m["pid"], m["tid"], m["start"])
        if m["dir"] is None:
            assert op is None, m
            continue
        record = instances[m["instance"]]
        assert (m["op"], m.get("module")) == (record["op"], record.get("module"))
        if m["dir"] == "fprop":
            # The op torch.profiler says holds it: the innermost of its thread there.
            assert (m["op"], record["start"]) == (op["name"], ns(op["ts"])), m
        else:
            # Backward: the instance is the backward node the event ran in (or beside, in the
            # engine's step for that node).
            assert record["name"].endswith(("Backward0", "Backward1", "AccumulateGrad")), record
            steps_of_node = [e for e in events if e.get("cat") == "cpu_op" and e["name"] ==
                             "autograd::engine::evaluate_function: " + record["name"]
                             and ns(e["ts"]) <= m["start"] <= ns(e["ts"]) + ns(e["dur"])]
            assert (record["start"] <= m["start"] <= record["start"] + record["duration"]
                    or steps_of_node), (m, record)


def test_forward_memory_per_op_equals_torch_profilers_self_memory(tmp_path):
    trace, events, self_memory = record_trace(tmp_path, "infer")
    _, _, memory, _ = parse_lines(trace)
    assert len(memory) == len(trace_memory(events)) > 0
    assert all(m["dir"] in ("fprop", None) for m in memory)
    ours: dict[str, int] = {}
    for m in memory:
        if m["op"] is not None:
            ours[m["op"]] = ours.get(m["op"], 0) + m["bytes"]
    theirs = {k: v for k, v in self_memory.items() if k.startswith("aten::") and v != 0}
    assert {k: v for k, v in ours.items() if v != 0} == theirs
    # Linear(16, 32) on 8 rows: the addmm's output, 8 x 32 floats, allocated three times.
    assert sum(m["bytes"] for m in memory if m["op"] == "aten::addmm" and m["bytes"] == 1024) \
        == 3 * 1024


REAL = os.path.join(testlib.ROOT, "..", "shared", "traces", "real")


def test_real_h100_trace_cuda_memory_events():
    path = os.path.join(REAL, "kineto_tracelens-h100-timesformer.json.gz")
    if not os.path.exists(path):
        pytest.skip("../shared/traces not here")
    import gzip
    with gzip.open(path, "rt") as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    theirs = trace_memory(events)
    header, _, memory, _ = parse_lines(path)
    assert len(memory) == len(theirs) > 1000
    assert sorted((m["start"], m["bytes"], m["device"], m["total_allocated"],
                   m["total_reserved"]) for m in memory) == sorted(
        (ns(e["ts"]), e["args"]["Bytes"],
         -1 if e["args"]["Device Type"] == 0 else e["args"]["Device Id"],
         e["args"]["Total Allocated"], e["args"]["Total Reserved"]) for e in theirs)
    assert header["memory"]["source"] == "kineto"
    assert {m["device"] for m in memory} >= {0}  # the caching allocator's, on CUDA device 0


# ---- (c) bad input made by hand --------------------------------------------------------------


def test_trace_starting_mid_step_with_bad_memory_events(tmp_path):
    def memory_event(ts, bytes_, addr, total, **extra):
        args = {"Total Reserved": 0, "Total Allocated": total, "Bytes": bytes_, "Device Id": -1,
                "Device Type": 0, "Addr": addr, **extra}
        return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1,
                "tid": 1, "ts": ts, "args": args}
    events = [
        # The trace began inside step 0: a block made before it is freed before step 1 begins.
        memory_event(5, -64, 4096, 0),
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 10, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 20, "dur": 10,
         "args": {"External id": 1}},
        memory_event(25, 32, 8192, 32),
        memory_event(40, -32, 8192, -8),  # a negative total
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 50,
         "args": {"Addr": 1}},  # no Bytes
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1,
         "ts": 110, "dur": 100},
    ]
    path = tmp_path / "mid.json"
    path.write_text(json.dumps({"traceEvents": events}))
    header, _, memory, summary = parse_lines(path)
    assert header["memory"] == {"events": 3, "source": "kineto", "frees_unknown": 1,
                                "negative_totals": 1, "outside_steps": 1}
    assert [(m["bytes"], m["op"], m.get("step")) for m in memory] == [
        (-64, None, None), (32, "aten::add", 0), (-32, None, 0)]
    assert ("  3 memory events (1 frees of blocks allocated before the capture); 1 outside every "
            "step; 1 with a negative total, kept as reported\n") in summary
    assert 'a [memory] event without an integer \\"Bytes\\"' in summary or \
        'without an integer "Bytes"' in summary
