"""`pyprof export`'s memory counter tracks (docs/export.md): a real CPU training loop under
torch.profiler(profile_memory=True), parsed and exported, its counters' peak against
torch.profiler's largest "Total Allocated" and prof's; a long hand-made series downsampled with
its peak kept (the running total computed here); counters valid for Perfetto and chrome://tracing
(checked as JSON: the viewers need the network, docs/export.md)."""

import json
import os

import pytest

import testlib
# traced: the module-scoped fixture, shared.
from test_memory_timeline import (SMALL, long_dict, peak_of, prof_tables,  # noqa: F401
                                  torch_peak, traced)

pytestmark = pytest.mark.needs_build

EXPORT = os.path.join(testlib.BIN, "pyprof-export")


def export(dict_path, out):
    res = testlib.run_tool(EXPORT, str(dict_path), "-o", str(out), timeout=300)
    assert res.returncode == 0, res.stderr
    return res, json.load(open(out, encoding="utf-8"))


def counters(trace) -> dict[str, list[dict]]:
    by_name: dict[str, list[dict]] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "C":
            by_name.setdefault(e["name"], []).append(e)
    return by_name


def check_counter_events(trace):
    """What Perfetto and chrome://tracing need of a counter: ph C, a name, a numeric ts, a pid
    that a process_name metadata event names, args of numbers only; each track in time order."""
    named = {e["pid"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    for name, events in counters(trace).items():
        ts = [e["ts"] for e in events]
        assert ts == sorted(ts), name
        for e in events:
            assert isinstance(e["ts"], (int, float)) and e["pid"] in named, e
            assert e["cat"] == "pyprof_memory" and "tid" not in e
            assert set(e["args"]) == {"bytes"} and isinstance(e["args"]["bytes"], int), e


def test_export_writes_memory_counters_whose_peak_is_the_reports(traced, tmp_path):
    trace_in, dict_path = traced
    res, trace = export(dict_path, tmp_path / "trace.json")
    check_counter_events(trace)
    tracks = counters(trace)
    assert set(tracks) == {"memory allocated (cpu)", "memory allocator allocated (cpu)"}
    header = json.loads(open(dict_path, encoding="utf-8").readline())
    assert len(tracks["memory allocated (cpu)"]) == header["memory"]["events"]
    # Every step: the memory report with --iterations all counts as the export does.
    summary = prof_tables(dict_path, "summary", "--iterations", "all")["summary/summary"]
    top = max(e["args"]["bytes"] for e in tracks["memory allocated (cpu)"])
    assert top == peak_of(summary) == torch_peak(trace_in)
    events = header["memory"]["events"]
    assert f"{events} memory events as {2 * events} counter points" in res.stderr
    # Parsed back, the counters are counted and left alone: the records come back the same.
    again = tmp_path / "again.dict"
    parsed = testlib.run_tool(testlib.PARSE, str(tmp_path / "trace.json"), "--ranges", "-o",
                              str(again))
    assert parsed.returncode == 0, parsed.stderr
    assert "ph C" in parsed.stderr, parsed.stderr
    assert len(testlib.read_dict(again)[1]) == len(testlib.read_dict(dict_path)[1])
    assert not [l for l in open(again, encoding="utf-8") if '"kind":"memory"' in l]


def test_export_downsamples_a_huge_series_keeping_the_peak(tmp_path):
    path = tmp_path / "long.dict"
    peak = long_dict(path, 120000)
    res, trace = export(path, tmp_path / "trace.json")
    check_counter_events(trace)
    tracks = counters(trace)
    for device, name in ((-1, "cpu"), (0, "cuda:0")):
        allocated = tracks[f"memory allocated ({name})"]
        assert 20000 <= len(allocated) <= 100000
        assert max(e["args"]["bytes"] for e in allocated) == peak[device]
    assert max(e["args"]["bytes"] for e in tracks["memory allocator allocated (cuda:0)"]) == \
        peak[0] + 4096
    assert "memory allocator reserved (cpu)" not in tracks
    assert "2 devices with more than 100000 events downsampled" in res.stderr, res.stderr


def test_export_without_memory_lines_has_no_counters(tmp_path):
    path = tmp_path / "no_memory.dict"
    path.write_text("".join(l for l in open(SMALL, encoding="utf-8")
                            if '"kind":"memory"' not in l))
    res, trace = export(path, tmp_path / "trace.json")
    assert not counters(trace) and "memory events" not in res.stderr
    assert "(2 records, 0 ranges, 0 marks, 5 trace events; chrome)" in res.stderr
