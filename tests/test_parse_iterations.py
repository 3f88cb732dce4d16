"""Iteration detection in parse (docs/formats.md §3, "Iterations"): the header's `iterations` and
each record's `step`, on real traces and on CPU captures of example models, checked against
oracles that read the inputs themselves (gzip + json for torch.profiler traces, sqlite3 for
pyprof databases) rather than parse's own ranges.
"""
import bisect
import collections
import decimal
import gzip
import json
import os
import re

import pytest

import testlib
from pyprof_db import modules, profile, read_ranges

SHARED_REAL = os.path.join(testlib.SHARED_TRACES, "real")
MINITOY = os.path.join(testlib.DATA, "kineto_hta-mi250-rocm6.2-minitoy.json.gz")
ALEXNET = os.path.join(testlib.DATA, "kineto_hta-alexnet-a100.json.gz")
PROFILER_STEP = re.compile(r"ProfilerStep#\d+$")

pytestmark = pytest.mark.needs_build


def shared(name):
    path = os.path.join(SHARED_REAL, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} not present (../shared/traces is beside the checkout)")
    return path


def ns(us) -> int:
    """A Kineto time (microseconds, read as decimal text: a double cannot hold these absolute
    times to the nanosecond) in nanoseconds."""
    return int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_HALF_UP))


def step_of(spans, t):
    """Index of the [start, end) span holding t, or None: the oracle's own search."""
    for i, (start, end) in enumerate(spans):
        if start <= t < end:
            return i
    return None


def kineto_oracle(path):
    """From the raw trace: the ProfilerStep#N user_annotation spans (ns, in time order, nested
    ones dropped) and how many GPU activities each one launched (by the launching runtime call's
    start, found through the correlation id; the activity's own start when none)."""
    with gzip.open(path) as f:
        events = [e for e in json.load(f, parse_float=decimal.Decimal)["traceEvents"]
                  if e.get("ph") == "X"]
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]) for e in events
                   if e.get("cat") == "user_annotation" and PROFILER_STEP.match(e.get("name", "")))
    outer = []
    for s in steps:
        if outer and s[1] <= outer[-1][1]:
            continue
        outer.append(s)
    spans = [(s, e) for s, e, _ in outer]
    launches = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver", "hip_runtime"):
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                launches[corr] = ns(e["ts"])
    per_step = collections.Counter()
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            corr = (e.get("args") or {}).get("correlation")
            per_step[step_of(spans, launches.get(corr, ns(e["ts"])))] += 1
    return [name for _, _, name in outer], spans, per_step


def check_steps_contract(header, records):
    """What every detected `iterations` must satisfy (docs/formats.md §3)."""
    it = header["iterations"]
    steps = it["steps"]
    assert it["count"] == len(steps) > 0
    assert [s["index"] for s in steps] == list(range(len(steps)))
    for s in steps:
        assert s["start"] < s["end"]
    for a, b in zip(steps, steps[1:]):
        assert a["end"] <= b["start"], "spans overlap"
    starts = [s["start"] for s in steps]
    for r in records:
        t = r["launch"]["start"] if "launch" in r else r["start"]
        i = bisect.bisect_right(starts, t) - 1
        expected = i if i >= 0 and t < steps[i]["end"] else None
        if r.get("before_trace"):  # launched before the trace: no launch time, no step
            expected = None
        assert r.get("step") == expected, (r, expected)


def per_step_counts(records):
    return collections.Counter(r.get("step") for r in records)


@pytest.mark.parametrize("name, count", [("kineto_hta-a100-record-shapes-control.json.gz", 6),
                                         ("kineto_hta-a100-nccl-fwdbwd.json.gz", 3)])
def test_hta_traces_profiler_steps(name, count):
    path = shared(name)
    header, records, stderr = testlib.parse(path)
    names, spans, per_step = kineto_oracle(path)
    assert len(names) == count
    it = header["iterations"]
    assert it["rule"] == "profiler_step" and it["range"] == "ProfilerStep#N"
    assert it["count"] == count
    assert [s["name"] for s in it["steps"]] == names
    # parse's times are relative to baseTimeNanoseconds when the trace has one.
    base = header.get("base_time_ns", 0)
    assert [(s["start"] + base, s["end"] + base) for s in it["steps"]] == spans or \
        [(s["start"], s["end"]) for s in it["steps"]] == spans
    check_steps_contract(header, records)
    assert per_step_counts(records) == per_step
    assert f"iterations: {count} (ProfilerStep#N ranges)" in stderr


def test_minitoy_rocm_two_profiler_steps():
    header, records, stderr = testlib.parse(MINITOY)
    names, spans, per_step = kineto_oracle(MINITOY)
    assert names == ["ProfilerStep#1", "ProfilerStep#2"]
    it = header["iterations"]
    assert (it["rule"], it["count"]) == ("profiler_step", 2)
    assert [s["name"] for s in it["steps"]] == names
    check_steps_contract(header, records)
    assert per_step_counts(records) == per_step
    assert sum(1 for r in records if "step" in r) > 0
    assert "iterations: 2 (ProfilerStep#N ranges)" in stderr


def test_alexnet_inference_invents_no_steps():
    """Benchmark forward passes (warm-up and measure, ~360 CPU ops, 98 GPU activities) with no
    ProfilerStep, optimizer or module ranges, and user ranges ("[param|...|forward]", twice
    each) that are not step names: no iterations, no `step`."""
    header, records, stderr = testlib.parse(ALEXNET)
    names, spans, per_step = kineto_oracle(ALEXNET)
    assert names == [] and per_step == {None: len(records)} and len(records) == 98
    assert "iterations" not in header
    assert not any("step" in r for r in records)
    assert "iterations: none detected (no step, ProfilerStep, optimizer or repeating module " \
           "ranges)" in stderr


def test_step_range_option_on_a_kineto_trace():
    """--step-range picks ranges by name over ProfilerStep: SGD's one step scope in minitoy."""
    header, records, stderr = testlib.parse(MINITOY, "--step-range", "Optimizer.step#SGD.step")
    it = header["iterations"]
    assert (it["rule"], it["range"], it["count"]) == ("step_range", "Optimizer.step#SGD.step", 1)
    check_steps_contract(header, records)
    header, records, stderr = testlib.parse(MINITOY, "--step-range", "no such range")
    assert "iterations" not in header and not any("step" in r for r in records)
    assert 'iterations: none detected (no range named "no such range"' in stderr


def test_empty_step_range_is_a_usage_error():
    res = testlib.run_tool(testlib.PARSE, MINITOY, "--step-range", "")
    assert res.returncode == 2 and "--step-range needs a range name" in res.stderr


# --- CPU captures of example models -------------------------------------------------------


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    """Captures made once for the tests below: name -> database path."""
    tmp = tmp_path_factory.mktemp("iterations")
    made = {}

    def capture(name, script, *args):
        if name not in made:
            result = profile(tmp, script, *args, name=name)
            assert result.returncode == 0, result.stderr[-3000:]
            made[name] = str(tmp / f"{name}.sqlite")
        return made[name]

    return capture


def loop_capture(captures, loop, steps=3):
    return captures(f"loop_{loop}", testlib.script("iteration_loops.py"), "--loop", loop,
                    "--steps", str(steps))


def oracle_counts(records, spans):
    return collections.Counter(step_of(spans, r["start"]) for r in records)


def test_train_py_numbered_step_ranges(captures):
    db = captures("train_lenet", os.path.join(testlib.ROOT, "examples", "train.py"), "--model",
                  "lenet", "--steps", "4")
    header, records, stderr = testlib.parse(db)
    steps = [r for r in read_ranges(db) if r.domain == "" and re.fullmatch(r"step \d+", r.text)]
    assert len(steps) == 4
    it = header["iterations"]
    assert (it["rule"], it["range"], it["count"]) == ("user_range", "step N", 4)
    assert [(s["name"], s["start"], s["end"]) for s in it["steps"]] == \
        [(r.text, r.start, r.end) for r in steps]
    check_steps_contract(header, records)
    spans = [(r.start, r.end) for r in steps]
    assert per_step_counts(records) == oracle_counts(records, spans)
    # Every op runs inside a step but the final loss.item() that train.py prints after the loop.
    outside = [r["name"] for r in records if "step" not in r]
    assert outside == ["aten::item", "aten::_local_scalar_dense"]
    # The same ops every step after the first (whose SGD step creates the momentum buffers
    # instead of updating them).
    counts = per_step_counts(records)
    assert len({counts[i] for i in range(1, 4)}) == 1 and counts[0] > 0
    assert 'iterations: 4 (user ranges "step N")' in stderr


def test_unnumbered_step_range(captures):
    db = loop_capture(captures, "step")
    header, records, stderr = testlib.parse(db)
    steps = [r for r in read_ranges(db) if r.domain == "" and r.text == "step"]
    assert len(steps) == 3
    it = header["iterations"]
    assert (it["rule"], it["range"], it["count"]) == ("user_range", "step", 3)
    assert [(s["start"], s["end"]) for s in it["steps"]] == [(r.start, r.end) for r in steps]
    check_steps_contract(header, records)
    assert per_step_counts(records) == oracle_counts(records, [(r.start, r.end) for r in steps])
    assert 'iterations: 3 (user ranges "step")' in stderr


def test_step_range_option_on_a_capture(captures):
    db = loop_capture(captures, "batch")
    header, records, stderr = testlib.parse(db)
    # "batch_N" is no default step name; SGD's step scopes are what is found without the option.
    assert header["iterations"]["rule"] == "optimizer_step"
    header, records, stderr = testlib.parse(db, "--step-range", "batch")
    steps = [r for r in read_ranges(db) if r.domain == "" and re.fullmatch(r"batch_\d", r.text)]
    it = header["iterations"]
    assert (it["rule"], it["range"], it["count"]) == ("step_range", "batch", 3)
    assert [s["name"] for s in it["steps"]] == ["batch_0", "batch_1", "batch_2"]
    assert per_step_counts(records) == oracle_counts(records, [(r.start, r.end) for r in steps])
    check_steps_contract(header, records)
    assert 'iterations: 3 (--step-range ranges "batch")' in stderr


def test_optimizer_steps_end_iterations(captures):
    db = loop_capture(captures, "optimizer")
    header, records, stderr = testlib.parse(db)
    opt = [r for r in read_ranges(db)
           if r.marker is not None and r.marker.get("op") == "Optimizer.step#SGD.step"]
    assert len(opt) == 3
    it = header["iterations"]
    assert (it["rule"], it["range"], it["count"]) == ("optimizer_step", "Optimizer.step#SGD.step",
                                                      3)
    first = min(r["start"] for r in records)
    bounds = [first] + [r.end for r in opt]
    spans = list(zip(bounds, bounds[1:]))
    assert [(s["start"], s["end"]) for s in it["steps"]] == spans
    check_steps_contract(header, records)
    assert per_step_counts(records) == oracle_counts(records, spans)
    assert all("step" in r for r in records)  # nothing runs after the last optimizer step
    assert "iterations: 3 (optimizer steps" in stderr


def test_forward_only_loop_uses_the_module_forward(captures):
    db = loop_capture(captures, "forward", steps=4)
    header, records, stderr = testlib.parse(db)
    top = [r for r in modules(read_ranges(db)) if r.marker["module"] == "MLP"]
    assert len(top) == 4
    it = header["iterations"]
    assert (it["rule"], it["range"], it["count"]) == ("module_forward", "MLP", 4)
    starts = [r.start for r in top]
    assert [s["start"] for s in it["steps"]] == starts
    assert [s["end"] for s in it["steps"]][:3] == starts[1:]
    check_steps_contract(header, records)
    spans = list(zip(starts, starts[1:] + [it["steps"][-1]["end"]]))
    assert per_step_counts(records) == oracle_counts(records, spans)
    counts = per_step_counts(records)
    assert len({counts[i] for i in range(4)}) == 1
    assert 'iterations: 4 (repeating outermost module forward "MLP"' in stderr


def test_profiler_steps_in_a_pyprof_capture(captures):
    """torch.profiler running under pyprof: its ProfilerStep#N RecordFunction scopes are in the
    database as pyprof markers, and win over the optimizer's scopes."""
    db = loop_capture(captures, "profiler")
    header, records, stderr = testlib.parse(db)
    steps = [r for r in read_ranges(db)
             if r.marker is not None and PROFILER_STEP.match(r.marker.get("op", ""))]
    # prof.step() after the last step opens one more, closed when the profiler exits.
    assert [r.marker["op"] for r in steps] == [f"ProfilerStep#{i}" for i in range(4)]
    it = header["iterations"]
    assert (it["rule"], it["count"]) == ("profiler_step", 4)
    assert [(s["name"], s["start"], s["end"]) for s in it["steps"]] == \
        [(r.marker["op"], r.start, r.end) for r in steps]
    check_steps_contract(header, records)
    assert per_step_counts(records) == oracle_counts(records, [(r.start, r.end) for r in steps])
    assert "iterations: 4 (ProfilerStep#N ranges)" in stderr


def test_one_forward_is_no_loop(captures):
    db = loop_capture(captures, "once")
    header, records, stderr = testlib.parse(db)
    assert records and "iterations" not in header
    assert not any("step" in r for r in records)
    assert "iterations: none detected" in stderr


def test_help_names_the_option_and_the_rules():
    res = testlib.run_tool(testlib.PARSE, "--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "--step-range NAME" in text
    assert "ProfilerStep#N" in text and "Optimizer.step#" in text


def launched_before(path):
    """From the raw trace: the GPU activities whose launch the trace does not hold and whose
    correlation id is below every runtime call's (launched before the trace began, still running
    when it started), by category, and their summed durations in ns."""
    with gzip.open(path) as f:
        events = [e for e in json.load(f, parse_float=decimal.Decimal)["traceEvents"]
                  if e.get("ph") == "X"]
    calls = {(e.get("args") or {}).get("correlation") for e in events
             if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    calls.discard(None)
    first = min(calls)
    before = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
              and e["args"].get("correlation") not in calls
              and e["args"].get("correlation", first) < first]
    return collections.Counter(e["cat"] for e in before), sum(ns(e["dur"]) for e in before)


@pytest.mark.parametrize("name", ["kineto_hta-a100-record-shapes-test.json.gz",
                                  "kineto_tracelens-mi300x-resnet-act-checkpoint-ddp.json.gz"])
def test_work_launched_before_the_trace_is_in_no_step(name, tmp_path):
    """Real torch.profiler traces that start while the previous iteration's kernels still run:
    hundreds of kernels, copies and memsets whose launch the trace does not hold (no launch
    call; on ROCm no External id either, only the end of their flow). Placed by their GPU start
    they fell into the first ProfilerStep, inflating it; they belong to no step, and are
    counted and reported apart, by parse and by prof (issue 30, item 5)."""
    path = shared(name)
    by_cat, before_ns = launched_before(path)
    assert sum(by_cat.values()) > 100
    header, records, stderr = testlib.parse(path)
    before = [r for r in records if r.get("before_trace")]
    assert collections.Counter(r["kind"] for r in before) == {
        "kernel": by_cat["kernel"], "memcpy": by_cat["gpu_memcpy"],
        "memset": by_cat["gpu_memset"]}
    assert all("step" not in r and "launch" not in r for r in before)
    assert (f"launched before the trace began: {len(before)} ({by_cat['kernel']} kernels, "
            f"{by_cat['gpu_memcpy']} memcpy, {by_cat['gpu_memset']} memset;") in stderr
    check_steps_contract(header, records)
    net = tmp_path / "net.dict"
    testlib.parse_to(path, net, timeout=120)
    summary = {r["Metric"]: r["Value"] for r in testlib.report_rows(testlib.prof(
        "--report", "summary", "--formats", "json", "--iterations", "all", str(net)).stdout)}
    assert summary["records launched before the trace began (in no step)"] == len(before)
    assert summary["GPU time launched before the trace began (ns)"] == before_ns
