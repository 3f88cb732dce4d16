"""`pyprof prof --report memory`, the summary's memory rows and the batch-size advice on
net.dicts with memory lines (docs/formats.md §3.2) written by hand: tests/data/memory_small.dict
(two steps on one CUDA device; its peaks computed by hand in the comments below), variants of it,
and a longer seeded one checked against a running total computed here from the lines."""

import json
import random

import pytest

import testlib
from testlib import DATA

pytestmark = pytest.mark.needs_build

SMALL = f"{DATA}/memory_small.dict"


def report(path, *args):
    res = testlib.prof("--report", "memory", "--formats", "json", *args, str(path))
    tables, rows = testlib.report_json(res.stdout)
    return {t["table"]: t for t in tables}, rows


def rows_of(rows, table):
    return [r for r in rows if r["table"] == table]


def summary(path, *args) -> dict:
    res = testlib.prof("--report", "summary", "--formats", "json", *args, str(path))
    return {r["Metric"]: r["Value"] for r in testlib.report_rows(res.stdout)}


def without_memory(tmp_path):
    lines = [l for l in open(SMALL, encoding="utf-8") if '"kind":"memory"' not in l]
    path = tmp_path / "no_memory.dict"
    path.write_text("".join(lines))
    return path


def test_steps_peak_and_the_op_at_it():
    tables, rows = report(SMALL, "--iterations", "all")
    assert list(tables) == ["steps", "ops", "modules"]
    units = {c["name"]: c["unit"] for c in tables["steps"]["columns"]}
    assert units["Peak allocated"] == "bytes" and units["Step"] == "id"
    steps = rows_of(rows, "steps")
    # Step 0: running total 1000, 1400 (relu's temporary), 1000, 1200, 200, 500.
    # Step 1 from 500: 1500 (addmm), 1300, 300, 250; a free of an address never allocated.
    assert [(s["Device"], s["Step"], s["Peak allocated"], s["Op at peak"]) for s in steps] == [
        ("cuda:0", 0, 1400, "aten::relu"), ("cuda:0", 1, 1500, "aten::addmm")]
    assert [(s["Allocated"], s["Freed"], s["Live at start"], s["Live at end"]) for s in steps] == [
        (1900, 1400, 0, 500), (1000, 1250, 500, 250)]
    assert [(s["Allocator peak allocated"], s["Allocator peak reserved"],
             s["Frees of earlier blocks"]) for s in steps] == [(6400, 10000, 0), (6500, 10000, 1)]


def test_activations_are_forward_allocations_freed_in_backward():
    _, rows = report(SMALL, "--iterations", "all")
    ops = {(r["Op"], r["Direction"]): r for r in rows_of(rows, "ops")}
    addmm = ops[("aten::addmm", "fprop")]
    assert (addmm["Allocated"], addmm["Freed"], addmm["Freed in backward"],
            addmm["Live at step end"]) == (2000, 0, 2000, 0)
    relu = ops[("aten::relu", "fprop")]  # a temporary, freed in forward
    assert (relu["Allocated"], relu["Freed"], relu["Freed in backward"]) == (400, 400, 0)
    mm = ops[("aten::mm", "bprop")]  # its step-0 gradient lives into step 1
    assert (mm["Allocated"], mm["Freed"], mm["Live at step end"]) == (200, 2200, 200)
    outside = ops[(None, None)]  # "op": null: JSON's null, not "-"
    assert (outside["Allocated"], outside["Live at step end"]) == (300, 300)
    modules = {(r["Module"], r["Direction"]): r for r in rows_of(rows, "modules")}
    assert modules[("Net.fc1", "fprop")]["Allocated"] == 2400
    assert modules[("Net.fc1", "fprop")]["Freed in backward"] == 2000


def test_iteration_selection_counts_from_the_selection():
    _, rows = report(SMALL, "--iterations", "1")
    steps = rows_of(rows, "steps")
    # Step 1 alone from 0: 1000, 800 (step 0's gradient: a block allocated before), -200, -250.
    assert [(s["Step"], s["Peak allocated"], s["Frees of earlier blocks"]) for s in steps] == [
        (1, 1000, 2)]
    assert summary(SMALL, "--iterations", "1")["memory allocated peak (bytes)"] == 1000
    assert summary(SMALL, "--iterations", "0")["memory allocated peak (bytes)"] == 1400


def test_summary_metric_and_allocator_totals(tmp_path):
    with_memory = summary(SMALL, "--iterations", "all")
    assert with_memory["memory allocated peak (bytes)"] == 1500
    assert with_memory["memory allocator's total allocated peak (bytes)"] == 6500
    assert with_memory["memory allocator's total reserved peak (bytes)"] == 10000
    # Without memory lines: the same summary less the memory rows.
    plain = summary(without_memory(tmp_path), "--iterations", "all")
    assert {k: v for k, v in with_memory.items() if not k.startswith("memory")} == plain


def test_profile_without_memory_lines(tmp_path):
    path = without_memory(tmp_path)
    res = testlib.prof("--report", "memory", str(path))
    assert res.stdout == ""
    assert "--report memory: the profile has no memory lines" in res.stderr
    res = testlib.prof("--report", "all", "--formats", "json", str(path))
    assert "memory" not in {t["report"] for t in testlib.report_json(res.stdout)[0]}
    assert "no memory lines" not in res.stderr
    # Beside other reports (the HTML page asks for every one) it writes nothing, quietly.
    res = testlib.prof("--report", "summary,memory", str(path))
    assert res.stdout.startswith("summary") and "no memory lines" not in res.stderr


def test_bad_memory_lines_are_counted_never_fatal(tmp_path):
    path = tmp_path / "bad.dict"
    path.write_text(open(SMALL, encoding="utf-8").read() +
                    '{"kind":"memory","start":250,"addr":7,"device":0,"step":1}\n'
                    '{"kind":"memory","start":251,"bytes":"8","addr":7,"device":0,"step":1}\n'
                    '{"kind":"memory","start":260,"bytes":8,"addr":8,"device":0,'
                    '"total_allocated":-1,"step":1}\n')
    res = testlib.prof("--report", "memory", "--formats", "json", "--iterations", "all", str(path))
    assert "2 memory lines skipped (first: line 14: no integer `bytes`)" in res.stderr
    assert "1 memory line with a negative allocator total (first: line 16)" in res.stderr
    steps = rows_of(testlib.report_rows(res.stdout), "steps")
    assert steps[1]["Allocated"] == 1008  # the line with a bad total still counts
    assert summary(path, "--iterations", "all")["memory lines skipped (unreadable)"] == 2


def test_batch_size_advice_with_its_evidence():
    res = testlib.prof("--report", "advice", "--formats", "json", "--iterations", "all", SMALL)
    advice = {r["Rule"]: r for r in testlib.report_rows(res.stdout)}
    a = advice["batch-size-headroom"]
    # Step 1: the allocator's total from 5500 to 6500 on a 20000-byte device:
    # F = (20000 - 5500) / (6500 - 5500) = 14.5.
    assert "about 14.5x" in a["Finding"] and "cuda:0" in a["Finding"]
    assert "= 14.50" in a["Evidence"] and "Assumed" in a["Evidence"]


def test_text_fits_the_width():
    res = testlib.prof("--report", "memory", "-w", "80", "--iterations", "all", SMALL)
    lines = res.stdout.splitlines()
    assert lines and max(len(l) for l in lines) <= 80
    assert "1.50 kB" in res.stdout or "1500 B" in res.stdout or "1.5 kB" in res.stdout


def test_peaks_match_a_running_total_computed_here(tmp_path):
    """A longer profile: 3 steps, two devices, 600 events with frees of random live blocks;
    prof's per-step peak and live bytes against the running total summed here."""
    rng = random.Random(35)
    header = {"pyprof_dict": 2, "records": "op", "iterations": {
        "rule": "step_range", "range": "step", "count": 3,
        "steps": [{"index": i, "name": f"step {i}", "start": 1000 * i, "end": 1000 * (i + 1)}
                  for i in range(3)]}}
    lines = [json.dumps(header)]
    lines += [json.dumps({"kind": "op", "name": "aten::mul", "op": "aten::mul", "dir": "fprop",
                          "start": 1000 * i + 1, "duration": 1, "id": i + 1, "step": i})
              for i in range(3)]
    live = {0: [], -1: []}
    events, addr = [], 0
    for t in range(600):
        device = rng.choice([0, -1])
        if live[device] and rng.random() < 0.45:
            a, size = live[device].pop(rng.randrange(len(live[device])))
            events.append((t * 5, -size, a, device))
        else:
            addr += 1
            size = rng.randint(1, 4096)
            live[device].append((addr, size))
            events.append((t * 5, size, addr, device))
    for start, size, a, device in events:
        lines.append(json.dumps({"kind": "memory", "start": start, "bytes": size, "addr": a,
                                 "device": device, "op": "aten::mul", "dir": "fprop",
                                 "step": start // 1000}))
    path = tmp_path / "long.dict"
    path.write_text("\n".join(lines) + "\n")
    want, running = {}, {0: 0, -1: 0}
    for start, size, _, device in events:
        running[device] += size
        key = ("cpu" if device < 0 else f"cuda:{device}", start // 1000)
        peak, _ = want.get(key, (running[device], 0))
        want[key] = (max(peak, running[device]), running[device])
    _, rows = report(path, "--iterations", "all")
    got = {(s["Device"], s["Step"]): (s["Peak allocated"], s["Live at end"])
           for s in rows_of(rows, "steps")}
    assert got == want
    overall = max(p for (d, _), (p, _) in want.items() if d == "cuda:0")
    peaks = summary(path, "--iterations", "all")
    assert peaks["memory allocated peak, cuda:0 (bytes)"] == overall


TRACE_SCRIPT = """
import sys, torch, torch.nn as nn
from torch.profiler import profile, ProfilerActivity
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
             with_modules=True) as p:
    for _ in range(3):
        nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
        opt.zero_grad()
p.export_chrome_trace(sys.argv[1])
"""


def test_step_peaks_equal_torch_profilers_total_allocated(tmp_path):
    """A real CPU training loop under torch.profiler(profile_memory=True), parsed: each step's
    peak equals the largest "Total Allocated" torch.profiler recorded inside the step's span."""
    pytest.importorskip("torch")
    from decimal import Decimal
    trace = tmp_path / "t.json"
    script = tmp_path / "trace.py"
    script.write_text(TRACE_SCRIPT)
    res = testlib.run_tool(testlib.PY, str(script), str(trace), timeout=300)
    assert res.returncode == 0, res.stderr
    testlib.parse_to(str(trace), tmp_path / "t.dict")
    header = json.loads(open(tmp_path / "t.dict", encoding="utf-8").readline())
    assert header["memory"]["source"] == "kineto", header.get("memory")
    _, rows = report(tmp_path / "t.dict", "--iterations", "all")
    got = {s["Step"]: s["Peak allocated"] for s in rows_of(rows, "steps")
           if s["Device"] == "cpu" and s["Step"] is not None}
    events = [e for e in json.load(open(trace, encoding="utf-8"))["traceEvents"]
              if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0]
    want = {}
    for i, step in enumerate(header["iterations"]["steps"]):
        inside = [e["args"]["Total Allocated"] for e in events
                  if step["start"] <= int(Decimal(str(e["ts"])) * 1000) < step["end"]]
        if inside:
            want[i] = max(inside)
    assert got == want and len(want) == 3
