"""torch.compile under pyprof on the CPU (docs/compile.md): a compiled MLP trained for three
steps (tests/scripts/compiled_train.py).

Checked against independent oracles: Dynamo's own counters in a run without pyprof (the same
graphs, no graph break added), and torch.profiler's trace of the same compiled model (the same
Inductor kernels per step). Caches are off so that every run compiles (a cache hit skips the
compile these tests look at).
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("compiled_train.py")
ENV = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "OMP_NUM_THREADS": "1"}
KERNEL = re.compile(r"^graph_\d+_(cpp_\w+)$")  # Inductor's C++ kernels' RecordFunction names


def last_json(stdout: str) -> dict:
    return json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])


def plain_run(*args) -> dict:
    res = subprocess.run([testlib.PY, SCRIPT, "--no-pyprof", *args], capture_output=True,
                         text=True, timeout=600, env=testlib.pyprof_env(ENV))
    assert res.returncode == 0, res.stderr[-3000:]
    return last_json(res.stdout)


def profiled_run(tmp, *args, env=None) -> tuple[dict, dict, list[dict], object]:
    """(the script's JSON line, net.dict's header, its records, its path)"""
    res = pyprof_db.profile(tmp, SCRIPT, *args, env={**ENV, **(env or {})}, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    header, records = testlib.read_dict(tmp / "net.dict")
    return last_json(res.stdout), header, records, tmp / "net.dict"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    return profiled_run(tmp_path_factory.mktemp("compiled"))


def by_step(records, step):
    return [r for r in records if r.get("step") == step]


def test_no_graph_break_added_and_compile_time_ops_left_out(compiled):
    out, header, records, _ = compiled
    plain = plain_run()
    assert out["graph_breaks"] == 0, out["break_reasons"]  # pyprof's module hooks made some
    assert out["graphs"] == plain["graphs"] == 1
    assert out["loss"] == pytest.approx(plain["loss"], rel=1e-6)
    # The compile traced thousands of ops on fake tensors: none is a record, and pyprof counted
    # what it left out.
    assert out["pyprof"]["paused"] > 500, out["pyprof"]
    # (Hundreds of PythonDispatchMode scopes when the compile was recorded; the first real run
    # of the compiled graph has a few of its own.)
    assert sum(r.get("name") == "PythonDispatchMode" for r in records) < 10
    assert header["iterations"]["count"] == 3
    # Step 0 (which compiled) has the steady steps' records and the model's init, nothing else.
    steady = collections.Counter(r["name"] for r in by_step(records, 2))
    assert steady == collections.Counter(r["name"] for r in by_step(records, 1))
    first = collections.Counter(r["name"] for r in by_step(records, 0))
    extra = first - steady
    assert sum(extra.values()) < 60, extra  # parameter init (uniform_, randn, ...) only
    assert not {n for n in extra if n.startswith(("aten::detach", "aten::empty_strided"))
                and extra[n] > 10}, extra


def test_inductor_kernels_are_records_like_torch_profiler_sees_them(compiled, tmp_path):
    _, _, records, _ = compiled
    trace = tmp_path / "trace.json"
    res = subprocess.run([testlib.PY, SCRIPT, "--torch-profiler", str(trace)],
                         capture_output=True, text=True, timeout=600,
                         env=testlib.pyprof_env({**ENV,
                                                 "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "1"}))
    assert res.returncode == 0, res.stderr[-3000:]
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    oracle = collections.Counter(KERNEL.match(e["name"]).group(1) for e in events
                                 if e.get("ph") == "X" and KERNEL.match(e.get("name", "")))
    assert oracle, "torch.profiler saw no Inductor kernel"
    step = by_step(records, 2)
    mine = collections.Counter(KERNEL.match(r["name"]).group(1) for r in step
                               if KERNEL.match(r["name"]))
    assert mine == oracle
    for r in step:
        if not KERNEL.match(r["name"]):
            continue
        assert r["module"] == "MLP", r  # the compiled model by its name, not OptimizedModule
        assert r["duration"] > 0
        if r["dir"] == "bprop":
            assert r["op"] == "CompiledFunction" and r.get("paired"), r
        else:
            assert r["dir"] == "fprop" and r["op"] == r["name"], r
    assert {r["dir"] for r in step if KERNEL.match(r["name"])} == {"fprop", "bprop"}


def test_summary_counts_the_inductor_kernels_and_their_unmodelled_time(compiled):
    """prof's summary: how many records are Inductor kernels, their time (CPU: self time) and
    its share without a FLOP model (all of it until fused kernels get their ATen nodes)."""
    _, _, records, dict_path = compiled
    kernels = [r for r in records if r.get("kind") == "op" and KERNEL.match(r["name"])]
    assert kernels
    res = testlib.prof("--report", "summary", "--formats", "json", "--iterations", "all",
                       str(dict_path))
    rows = {r["Metric"]: r["Value"] for r in map(json.loads, res.stdout.splitlines())}
    assert int(rows["Inductor kernels (torch.compile)"]) == len(kernels)
    assert int(rows["Inductor kernel time (ns)"]) == sum(r["self_duration"] for r in kernels)
    assert float(rows["Inductor kernel time without a FLOP model %"]) == 100.0


@pytest.mark.slow
def test_graph_break_two_compiled_regions(tmp_path):
    out, _, records, _ = profiled_run(tmp_path, "--graph-break")
    plain = plain_run("--graph-break")
    assert (out["graphs"], out["graph_breaks"]) == (plain["graphs"], plain["graph_breaks"]) == (2, 1)
    step = by_step(records, 2)
    names = {r["name"] for r in step}
    assert {"Torch-Compiled Region: 0/0", "Torch-Compiled Region: 1/0"} <= names, names
    graphs = {(int(re.match(r"graph_(\d+)_", r["name"]).group(1)), r["dir"]) for r in step
              if KERNEL.match(r["name"])}
    # each region's forward and backward kernels
    assert graphs == {(0, "fprop"), (0, "bprop"), (1, "fprop"), (1, "bprop")}, graphs


@pytest.mark.slow
def test_a_kernel_profile_setting_of_the_user_is_kept(tmp_path):
    out, _, records, _ = profiled_run(tmp_path,
                                      env={"TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "0"})
    assert out["graph_breaks"] == 0
    assert not [r for r in records if KERNEL.match(r["name"])]
    # the fused kernels' time is then inside CompiledFunction's own
    assert [r for r in by_step(records, 2) if r["name"] == "CompiledFunction"]
