"""Memory over time: prof's `memory_timeline` report (the HTML page's plot, docs/report.md).

Oracles: a real CPU training loop under torch.profiler(profile_memory=True), whose largest
"Total Allocated" is the peak; the `memory` report's and the summary's peak on the same dict;
and, for the downsampling of a long series, a running total computed here from the lines."""

import json
import random

import pytest

import testlib
from test_memory_report import TRACE_SCRIPT

pytestmark = pytest.mark.needs_build

SMALL = f"{testlib.DATA}/memory_small.dict"


def prof_tables(path, reports, *args) -> dict[str, list[dict]]:
    res = testlib.prof("--report", reports, "--formats", "json", *args, str(path))
    tables, rows = testlib.report_json(res.stdout)
    out = {f"{t['report']}/{t['table']}": [] for t in tables}
    for r in rows:
        out[f"{r.pop('report')}/{r.pop('table')}"].append(r)
    out["_titles"] = {f"{t['report']}/{t['table']}": t for t in tables}
    return out


def peak_of(summary_rows, device=None) -> int:
    metric = ("memory allocated peak (bytes)" if device is None
              else f"memory allocated peak, {device} (bytes)")
    (value,) = [r["Value"] for r in summary_rows if r["Metric"] == metric]
    return value


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """A real CPU training loop (3 steps) under torch.profiler(profile_memory=True): the trace
    and its net.dict."""
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("memory_timeline")
    trace, script = tmp / "t.json", tmp / "trace.py"
    script.write_text(TRACE_SCRIPT)
    res = testlib.run_tool(testlib.PY, str(script), str(trace), timeout=300)
    assert res.returncode == 0, res.stderr
    testlib.parse_to(str(trace), tmp / "t.dict", "--ranges")
    return trace, tmp / "t.dict"


def torch_peak(trace) -> int:
    events = [e for e in json.load(open(trace, encoding="utf-8"))["traceEvents"]
              if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0]
    assert len(events) > 50
    return max(e["args"]["Total Allocated"] for e in events)


def test_timeline_peak_is_the_memory_reports_and_torch_profilers(traced):
    trace, dict_path = traced
    tables = prof_tables(dict_path, "memory_timeline,memory,summary", "--iterations", "all")
    units = {c["name"]: c["unit"] for c in tables["_titles"]["memory_timeline/points"]["columns"]}
    assert units == {"Device": "text", "Time(ns)": "ns", "Allocated": "bytes",
                     "Allocator allocated": "bytes", "Allocator reserved": "bytes", "Op": "text"}
    points = tables["memory_timeline/points"]
    assert {p["Device"] for p in points} == {"cpu"}
    times = [p["Time(ns)"] for p in points]
    assert times == sorted(times)
    # Every event of a short profile is a point: the peak is there.
    header = json.loads(open(dict_path, encoding="utf-8").readline())
    assert len(points) == header["memory"]["events"]
    top = max(points, key=lambda p: p["Allocated"])
    assert top["Allocated"] == peak_of(tables["summary/summary"]) == torch_peak(trace)
    steps = tables["memory/steps"]
    best = max(steps, key=lambda s: s["Peak allocated"])
    assert best["Peak allocated"] == top["Allocated"] and best["Op at peak"] == top["Op"]
    # The CPU allocator's own totals follow the running total (nothing freed from before).
    assert all(p["Allocator allocated"] == p["Allocated"] for p in points)
    assert all(p["Allocator reserved"] is None for p in points)
    # Top-level module spans: torch.profiler's module names (with_modules) path the lines. The
    # table is optional (written only with rows: --list-reports' optional_tables).
    spans = tables.get("memory_timeline/modules", [])
    assert all(s["Start(ns)"] <= s["End(ns)"] for s in spans)


def test_selection_counts_as_the_memory_report_does(traced):
    _, dict_path = traced
    everything = prof_tables(dict_path, "memory_timeline", "--iterations", "all")
    tables = prof_tables(dict_path, "memory_timeline,summary", "--iterations", "2")
    points = tables["memory_timeline/points"]
    assert 0 < len(points) < len(everything["memory_timeline/points"])
    assert max(p["Allocated"] for p in points) == peak_of(tables["summary/summary"])
    assert "since the selected iterations began" in \
        tables["_titles"]["memory_timeline/points"]["title"]


def test_no_tables_without_memory_lines(tmp_path):
    path = tmp_path / "no_memory.dict"
    path.write_text("".join(l for l in open(SMALL, encoding="utf-8")
                            if '"kind":"memory"' not in l))
    res = testlib.prof("--report", "memory_timeline,summary", "--formats", "json", str(path))
    assert {t["report"] for t in testlib.report_json(res.stdout)[0]} == {"summary"}
    listed = testlib.prof("--list-reports").stdout
    (entry,) = [json.loads(l) for l in listed.splitlines() if '"memory_timeline"' in l]
    assert entry["tables"] == ["points", "modules"] and entry["one_profile"]


def long_dict(path, events_per_device: int, seed: int = 35):
    """Two devices, one step, `events_per_device` allocations and frees on each (random live
    blocks freed), and one tall spike on each; the running totals and peaks computed here."""
    rng = random.Random(seed)
    header = {"pyprof_dict": 2, "records": "op", "iterations": {
        "rule": "step_range", "range": "step", "count": 1,
        "steps": [{"index": 0, "name": "step 0", "start": 0, "end": 10 ** 12}]}}
    lines = [json.dumps(header), json.dumps({
        "kind": "op", "name": "aten::mul", "op": "aten::mul", "dir": "fprop", "start": 1,
        "duration": 1, "id": 1, "pid": 7, "tid": 7, "step": 0})]
    live = {0: [], -1: []}
    running = {0: 0, -1: 0}
    peak = {0: 0, -1: 0}
    addr = 0
    spike_at = {d: rng.randrange(events_per_device // 4, events_per_device) for d in (0, -1)}
    count = {0: 0, -1: 0}
    t = 10
    while min(count.values()) < events_per_device:
        device = rng.choice([0, -1])
        if count[device] >= events_per_device:
            continue
        if count[device] == spike_at[device]:
            size = 10 ** 9
            addr += 1
            live[device].append((addr, size))
            a = addr
        elif live[device] and rng.random() < 0.5:
            a, size = live[device].pop(rng.randrange(len(live[device])))
            size = -size
        else:
            addr += 1
            size = rng.randint(1, 1 << 20)
            live[device].append((addr, size))
            a = addr
        running[device] += size
        peak[device] = max(peak[device], running[device])
        count[device] += 1
        t += rng.randint(1, 50)
        line = {"kind": "memory", "start": t, "bytes": size, "addr": a, "device": device,
                "pid": 7, "tid": 7, "op": "aten::mul", "dir": "fprop", "step": 0}
        if device >= 0:
            line["total_allocated"] = running[device] + 4096
            line["total_reserved"] = 1 << 34
        lines.append(json.dumps(line, separators=(",", ":")))
    path.write_text("\n".join(lines) + "\n")
    return peak


def test_long_series_downsampled_keeping_the_peak(tmp_path):
    path = tmp_path / "long.dict"
    peak = long_dict(path, 30000)
    tables = prof_tables(path, "memory_timeline,summary", "--iterations", "all")
    points = tables["memory_timeline/points"]
    for device, name in ((-1, "cpu"), (0, "cuda:0")):
        mine = [p for p in points if p["Device"] == name]
        assert 1000 <= len(mine) <= 5000
        assert max(p["Allocated"] for p in mine) == peak[device] == \
            peak_of(tables["summary/summary"], name)
    assert "downsampled to at most 5000 points a device" in \
        tables["_titles"]["memory_timeline/points"]["title"]
    # The CPU's lines give no reserved total; CUDA's give the allocator's.
    assert {p["Allocator reserved"] for p in points if p["Device"] == "cpu"} == {None}
    assert {p["Allocator reserved"] for p in points if p["Device"] == "cuda:0"} == {1 << 34}
