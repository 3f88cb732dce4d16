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
import re
import subprocess

import pytest

import pyprof_db
import testlib
from graph_checks import (check_step_matmul_flops, compiled_kernel_lines, prof_records,
                          replayed_node_costs)

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
    """prof's summary: how many records are Inductor kernels, how many carry their ATen nodes,
    their time (CPU: self time) and its share without a FLOP model (none: every node of this
    model has one)."""
    _, _, records, dict_path = compiled
    kernels = [r for r in records if r.get("kind") == "op" and KERNEL.match(r["name"])]
    assert kernels
    res = testlib.prof("--report", "summary", "--formats", "json", "--iterations", "all",
                       str(dict_path))
    rows = {r["Metric"]: r["Value"] for r in testlib.report_rows(res.stdout)}
    assert int(rows["Inductor kernels (torch.compile)"]) == len(kernels)
    assert int(rows["Inductor kernel time (ns)"]) == sum(r["self_duration"] for r in kernels)
    assert int(rows["Inductor kernels attributed to their ATen nodes"]) == len(kernels)
    assert int(rows["Inductor kernels opaque (no compile metadata)"]) == 0
    assert float(rows["Inductor kernel time without a FLOP model %"]) == 0.0


def wrapped_scalar_bytes(node: dict) -> int:
    """Eager PyTorch wraps a Python number given for a Tensor parameter (`mul.Tensor(x, 0.5)`)
    into a 0-dim float64 or int64 tensor, which the op then reads: 8 bytes that a fused kernel,
    holding the constant in its code, never reads."""
    import torch

    namespace, name = node["op"].split("::")
    op = getattr(getattr(getattr(torch.ops, namespace), name), node.get("overload") or "default")
    return sum(8 for a in op._schema.arguments
               if str(a.type) == "Tensor" and isinstance(node["args"].get(a.name), (int, float)))


def test_fused_kernels_carry_their_aten_nodes_and_exact_costs(compiled, tmp_path):
    """Each Inductor kernel's record is joined to the ATen nodes Inductor's own provenance says
    it computes (a `compiled_kernel` line). Its FLOPs are the sum of its nodes' and its bytes
    the buffers it reads and writes. Oracle: the same nodes run one by one in eager mode under
    pyprof (graph_checks.replayed_node_costs): the FLOPs are equal and the eager bytes are what
    the kernel would move unfused, more than it does."""
    out, _, records, dict_path = compiled
    kernels = compiled_kernel_lines(dict_path)
    names = {r["name"] for r in records if KERNEL.match(r["name"])}
    assert names and names == set(kernels), (names, set(kernels))  # every kernel attributed
    assert out["pyprof"]["compiled_graphs"] == 2  # forward and backward
    assert out["pyprof"]["compiled_kernels"] == len(kernels)
    assert out["pyprof"]["compiled_nodes_missing"] == 0
    assert out["pyprof"]["compiled_graphs_unreadable"] == 0

    fused = {r["kernel"]: r for r in prof_records(dict_path) if r["kernel"] in kernels}
    # By hand, the forward kernel (GELU, LayerNorm and ReLU of the [16,128] fc1 output; E =
    # 2048 elements, 16 rows; docs/ops.md conventions):
    #   var_mean 4E + 2*16 = 8224; GELU as mul, mul, erf, add, mul: 5E = 10240;
    #   var + eps and rsqrt per row: 16 + 16; x - mean, * rstd, * weight, + bias, relu: 5E
    # = 28736 FLOPs. Bytes: reads fc1's output (8192), weight and bias (512 + 512); writes
    # mean and rstd (64 + 64, saved for backward) and the ReLU output (8192) = 17536.
    forward = next(r for r in fused.values() if r["dir"] == "fprop")
    assert (forward["flops"], forward["bytes"]) == (28736, 17536)
    assert forward["family"] == "compiled" and forward["module"] == "MLP"
    assert forward["params"].startswith("nodes=13,fp32,")

    eager_flops, eager_bytes = replayed_node_costs(dict_path, tmp_path / "replay", ENV)
    assert set(eager_flops) == set(kernels)
    for name, kernel in kernels.items():
        r = fused[name]
        assert r["flops"] == eager_flops[name], name
        unfused = int(re.search(r"unfused_bytes=(\d+)", r["params"]).group(1))
        assert unfused + sum(map(wrapped_scalar_bytes, kernel["nodes"])) == eager_bytes[name]
        if len(kernel["nodes"]) > 1:  # fused: it moves less than its nodes would one by one
            assert r["bytes"] < unfused / 2, (name, r["bytes"], unfused)
        else:
            assert r["bytes"] == unfused


def test_compiled_report_lists_each_kernel_with_its_fusion_saving(compiled):
    """`pyprof prof --report compiled`: one row per Inductor kernel, from prof's own records
    (the oracle: its per-record JSON summed by kernel, and the nodes of the kernel's
    compiled_kernel line): how it was attributed, its calls, time and share of the profile's,
    its node count, FLOPs and bytes, the bytes its nodes would move one by one and the share of
    them fusion saved."""
    _, _, _, dict_path = compiled
    kernels = compiled_kernel_lines(dict_path)
    records = prof_records(dict_path)
    res = testlib.prof("--report", "compiled", "--formats", "json", "--iterations", "all",
                       str(dict_path))
    rows = {r["Kernel"]: r for r in testlib.report_rows(res.stdout)}
    assert set(rows) == set(kernels), (set(rows), set(kernels))
    all_time = sum(r["sil"] for r in records)
    for name, kernel in kernels.items():
        mine = [r for r in records if r["kernel"] == name]
        row = rows[name]
        assert row["Attributed"] == "nodes" and row["Count"] == len(mine), row
        assert row["Dir"] == "/".join(sorted({r["dir"] for r in mine}, key="fprop bprop".find))
        assert row["Self(ns)"] == sum(r["sil"] for r in mine)
        assert row["Time %"] == pytest.approx(100 * row["Self(ns)"] / all_time, abs=0.05)
        assert row["Nodes"] == len(kernel["nodes"])
        assert row["FLOPs(FMA=2)"] == sum(r["flops"] for r in mine)
        assert row["Bytes(ideal DRAM)"] == sum(r["bytes"] for r in mine)
        unfused = sum(int(re.search(r"unfused_bytes=(\d+)", r["params"]).group(1))
                      for r in mine)
        assert row["Unfused bytes"] == unfused
        saved = 100 * (unfused - row["Bytes(ideal DRAM)"]) / unfused
        assert row["Fusion saved %"] == pytest.approx(saved, abs=0.05)
        if len(kernel["nodes"]) > 1:
            assert row["Fusion saved %"] > 50, row
    text = testlib.prof("--report", "compiled", "--iterations", "all", str(dict_path)).stdout
    assert text.startswith("compiled kernels by self time\n") and "Fusion saved %" in text


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
    # each with the nodes of its own graph (graph 1 is fc2 and ReLU: its forward kernel is the
    # ReLU alone)
    kernels = compiled_kernel_lines(tmp_path / "net.dict")
    assert {r["name"] for r in step if KERNEL.match(r["name"])} == set(kernels)
    forward = {r["name"] for r in step if KERNEL.match(r["name"]) and r["dir"] == "fprop"}
    assert [[n["op"] for n in kernels[name]["nodes"]] for name in sorted(forward)
            if name.startswith("graph_1_")] == [["aten::relu"]], kernels


def eager_matmul_flops() -> dict:
    """FlopCounterMode's counts for one eager training step of compiled_train.py's model (it
    counts only matmuls)."""
    import importlib.util

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    spec = importlib.util.spec_from_file_location("compiled_train", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    model = script.MLP(graph_break=False)
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.mse_loss(model(torch.randn(16, 64)), torch.randn(16, 10)).backward()
    oracle = {str(op): int(n) for op, n in counter.get_flop_counts()["Global"].items()}
    assert set(oracle) == {"aten.addmm", "aten.mm"}, oracle
    return oracle


def test_compiled_step_matmul_flops_equal_flop_counter_mode(compiled):
    """The GEMMs of a compiled step are Inductor's extern calls (aten::addmm, aten::mm), op
    records with their own FLOP models; FlopCounterMode on the same model run eagerly is the
    oracle: a step's matmul FLOPs are equal."""
    _, header, _, dict_path = compiled
    check_step_matmul_flops(header, dict_path, eager_matmul_flops())


@pytest.mark.slow
def test_cpp_wrapper_kernels_cost_as_under_the_python_wrapper(compiled, tmp_path):
    """`config.cpp_wrapper` (TORCHINDUCTOR_CPP_WRAPPER=1): the graph's wrapper is C++. Its fused
    C++ kernels are the same records, joined to the same nodes, with the costs the Python
    wrapper's run gives (the same graphs). Its extern ATen calls go through shims named for the
    op (`aoti_torch_cpu_addmm_out`), whose RecordFunction has no inputs and which one graph runs
    at several places: each record is joined to its own place by its position among the shims
    of its name in its graph's run (docs/compile.md), so that each costs what the Python
    wrapper's aten::addmm or aten::mm record at that place costs, and the step's matmul FLOPs
    equal FlopCounterMode's on the eager model."""
    _, _, records, dict_path = profiled_run(tmp_path, env={"TORCHINDUCTOR_CPP_WRAPPER": "1"})
    kernels = set(compiled_kernel_lines(dict_path))
    names = {r["name"] for r in records if KERNEL.match(r["name"])}
    fused = {k for k in kernels if KERNEL.match(k)}
    assert names and names == fused, (names, kernels)
    assert kernels - fused == {"aoti_torch_cpu_addmm_out", "aoti_torch_cpu_mm_out"}, kernels

    def fused_costs(path):
        return {r["kernel"]: (r["dir"], r["module"], r["flops"], r["bytes"], r["params"])
                for r in prof_records(path) if KERNEL.match(r["kernel"])}
    mine, python_wrapper = fused_costs(dict_path), fused_costs(compiled[3])
    assert mine == python_wrapper and len(mine) == 3, (mine, python_wrapper)

    step = by_step(records, 2)
    shims = collections.Counter((r["name"], r["dir"]) for r in step
                                if r["name"].startswith("aoti_torch_cpu_"))
    # fc1 and fc2 forward; backward: fc2's input and weight gradients, fc1's weight gradient.
    assert shims == {("aoti_torch_cpu_addmm_out", "fprop"): 2,
                     ("aoti_torch_cpu_mm_out", "bprop"): 3}, shims
    places = collections.Counter(r.get("compiled_graph") for r in step
                                 if r["name"].startswith("aoti_torch_cpu_"))
    assert places == {"0/0#f0": 1, "0/0#f1": 1, "0/0#b0": 1, "0/0#b1": 1, "0/0#b2": 1}, places
    res = testlib.run_tool(testlib.PARSE, tmp_path / "net.sqlite", "-o", tmp_path / "again.dict")
    assert res.returncode == 0, res.stderr
    assert "several places" not in res.stderr, res.stderr

    def gemms(path, names):
        rows = testlib.prof("--json", "-c", "dir,kernel,flops,bytes", "--iterations", "2",
                            str(path)).stdout.splitlines()
        return collections.Counter((r["dir"], r["flops"]) for r in map(json.loads, rows)
                                   if r["kernel"] in names)
    shim_costs = gemms(dict_path, ("aoti_torch_cpu_addmm_out", "aoti_torch_cpu_mm_out"))
    assert shim_costs == gemms(compiled[3], ("aten::addmm", "aten::mm")), shim_costs
    oracle = eager_matmul_flops()
    assert sum(f * n for (_, f), n in shim_costs.items()) == sum(oracle.values()), oracle

@pytest.mark.slow
@pytest.mark.parametrize("shapes", ["static", "dynamic"])
def test_recompiled_graph_kernels_carry_their_own_nodes(tmp_path, shapes):
    """Three steps at batch 16, then three at batch 8: Dynamo recompiles (graph 1, forward and
    backward). Its kernels are records of their own (`graph_1_*`), each joined to the nodes of
    the graph it was compiled in. With static shapes (torch.compile(dynamic=False)) their costs
    are exact: the forward kernel's FLOPs and bytes are the hand count of the first graph's
    (test_fused_kernels_carry_their_aten_nodes_and_exact_costs) at 8 rows. With Dynamo's
    automatic dynamic shapes the recompiled graph's sizes are symbols (s77), and three more
    steps at batch 4 run the same graph: each call of the graph says its sizes
    (`compiled_call` marks), every record carries them (`compiled_symbols`), and prof costs
    each kernel with them: the batch-8 steps cost the static graph's hand count, the batch-4
    steps the hand count at 4 rows."""
    extra = ("--then-batch", "4") if shapes == "dynamic" else ()
    out, _, records, dict_path = profiled_run(tmp_path, "--recompile", shapes, *extra)
    plain = plain_run("--recompile", shapes, *extra)
    assert out["graph_breaks"] == 0 and out["graphs"] == plain["graphs"]
    assert out["loss"] == pytest.approx(plain["loss"], rel=1e-6)
    assert out["pyprof"]["compiled_graphs"] == 4  # forward and backward, twice
    kernels = compiled_kernel_lines(dict_path)
    names = {r["name"] for r in records if KERNEL.match(r["name"])}
    assert names == set(kernels) and {n.split("_")[1] for n in names} == {"0", "1"}, names
    # Steps 3-5 run the recompiled graph only, steps 1-2 the first.
    for step, graph in ((2, "0"), (4, "1")):
        ran = {r["name"].split("_")[1] for r in by_step(records, step) if KERNEL.match(r["name"])}
        assert ran == {graph}, (step, ran)
    costs = {r["kernel"]: r for r in prof_records(dict_path) if r["kernel"] in kernels}
    first = costs["graph_0_cpp_fused_gelu_native_layer_norm_relu_0"]
    again = costs["graph_1_cpp_fused_gelu_native_layer_norm_relu_0"]
    assert (first["flops"], first["bytes"]) == (28736, 17536)
    if shapes == "static":
        # E = 8 x 128 = 1024 elements, 8 rows: 14E + 4 * 8 FLOPs; reads 4096 + 512 + 512,
        # writes 32 + 32 + 4096 bytes.
        assert (again["flops"], again["bytes"]) == (14368, 9280)
        assert all(r["flops"] is not None for r in costs.values())
    else:
        assert any(n.get("symbolic") for name, k in kernels.items() if name.startswith("graph_1_")
                   for n in k["reads"])
        # Each call of the symbolic graph said its sizes: forward and backward, steps 3-8.
        assert out["pyprof"]["compiled_calls"] == 12
        # Steps 6-8 (batch 4) run graph 1 again, not a third graph.
        ran = {r["name"].split("_")[1] for r in by_step(records, 7) if KERNEL.match(r["name"])}
        assert ran == {"1"}, ran
        for r in records:
            if KERNEL.match(r["name"]) and r["name"].startswith("graph_1_"):
                (symbol, size), = r["compiled_symbols"].items()
                assert size == (8 if r["step"] < 6 else 4), r
        forward = [r for r in prof_records(dict_path)
                   if r["kernel"] == "graph_1_cpp_fused_gelu_native_layer_norm_relu_0"]
        # At 4 rows (E = 512): 14E + 4 * 4 = 7184 FLOPs; reads 2048 + 512 + 512, writes
        # 16 + 16 + 2048 bytes.
        assert sorted({(r["flops"], r["bytes"]) for r in forward}) == [(7184, 5152),
                                                                      (14368, 9280)]
        assert len(forward) == 6
        res = testlib.prof("--report", "summary", "--formats", "json", "--iterations", "all",
                           str(dict_path))
        rows = {r["Metric"]: r["Value"] for r in testlib.report_rows(res.stdout)}
        assert int(rows["Inductor kernels opaque (no compile metadata)"]) == 0
        assert float(rows["Inductor kernel time without a FLOP model %"]) == 0.0


@pytest.mark.slow
def test_a_kernel_profile_setting_of_the_user_is_kept(tmp_path):
    out, _, records, _ = profiled_run(tmp_path,
                                      env={"TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE": "0"})
    assert out["graph_breaks"] == 0
    assert not [r for r in records if KERNEL.match(r["name"])]
    # the fused kernels' time is then inside CompiledFunction's own
    assert [r for r in by_step(records, 2) if r["name"] == "CompiledFunction"]


@pytest.mark.slow
def test_kernels_loaded_from_inductor_caches_keep_their_nodes(tmp_path):
    """Inductor's caches are on by default: a second run loads both graphs from the FX-graph
    and AOTAutograd caches without compiling. Inductor then emits the same artifacts from the
    cache (the post-grad graph, the wrapper code with the run-time names baked into it, the
    mapping), so every kernel is attributed and costed as in the run that compiled."""
    env = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "0",
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache")}
    costs = []
    for run in ("cold", "warm"):
        out_dir = tmp_path / run
        out_dir.mkdir()
        out, _, records, dict_path = profiled_run(out_dir, env=env)
        kernels = compiled_kernel_lines(dict_path)
        names = {r["name"] for r in records if KERNEL.match(r["name"])}
        assert names and names == set(kernels), (run, names, set(kernels))
        assert out["pyprof"]["compiled_graphs"] == 2, (run, out["pyprof"])
        hits = out["cache_hits"]
        assert (hits["fx_graph"] + hits["aot_autograd"] > 0) == (run == "warm"), (run, hits)
        costs.append({r["kernel"]: (r["flops"], r["bytes"], r["params"])
                      for r in prof_records(dict_path) if r["kernel"] in kernels})
    assert costs[0] == costs[1]
    assert all(flops for flops, _, _ in costs[1].values())


def test_triton_autotuning_is_left_out_of_the_reports(tmp_path):
    """Each launch configuration Triton's autotuner times runs inside a pyprof.autotune range
    (tests/scripts/autotune_stand_in.py stands in for Triton's bench on the CPU): parse keeps
    those records, with the range, and prof leaves them out of every report, saying how many."""
    res = pyprof_db.profile(tmp_path, testlib.script("autotune_stand_in.py"), env=ENV)
    assert res.returncode == 0, res.stderr[-3000:]
    out = last_json(res.stdout)
    assert out["wrapped"] is True
    assert out["pyprof"]["compiled_autotune_benchmarks"] == 2
    testlib.parse_to(tmp_path / "net.sqlite", tmp_path / "net.dict")
    _, records = testlib.read_dict(tmp_path / "net.dict")
    tuning = [r for r in records
              if any(u.startswith("pyprof.autotune:") for u in r.get("user_ranges", []))]
    configs = collections.Counter(r["user_ranges"][-1] for r in tuning if r["name"] == "aten::mul_")
    assert configs == {
        "pyprof.autotune:triton_poi_fused_add_0 XBLOCK: 128, num_warps: 4": 3,
        "pyprof.autotune:triton_poi_fused_add_0 XBLOCK: 1024, num_warps: 8": 3}
    assert {r["name"] for r in tuning} >= {"aten::clone", "aten::mul_"}
    # The program's own ops, before and after, are not in a range.
    program = {r["name"] for r in records if r not in tuning}
    assert {"aten::add", "aten::mul"} <= program
    res = testlib.prof("--json", "-c", "all", str(tmp_path / "net.dict"))
    kept = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    assert len(kept) == len(records) - len(tuning)
    assert not any(r["op"] == "aten::mul_" for r in kept)
    assert (f"{len(tuning)} records of Triton's autotuning (pyprof.autotune ranges) left out"
            in res.stderr), res.stderr
    summary = testlib.prof("--report", "summary", str(tmp_path / "net.dict")).stdout
    assert re.search(rf"Triton autotuning records \(left out\)\s+{len(tuning)}\b", summary), summary


# ---- a gpt2-style block: an extern call's node inside a fused kernel's provenance ----------

GPT2_BLOCK = testlib.script("compiled_gpt2_block.py")
FCM_OPS = ("aten::addmm", "aten::mm", "aten::_scaled_dot_product_flash_attention_for_cpu",
           "aten::_scaled_dot_product_flash_attention_for_cpu_backward")


def gpt2_flop_counter() -> dict:
    """FlopCounterMode's counts of one eager step of the block (the script's --flop-counter:
    torch's own formulas, the CPU flash ops given those of the CUDA flash ops), by op."""
    res = subprocess.run([testlib.PY, GPT2_BLOCK, "--flop-counter"], capture_output=True,
                         text=True, timeout=600, env=testlib.pyprof_env(ENV))
    assert res.returncode == 0, res.stderr[-3000:]
    counts = last_json(res.stdout)["flop_counter"]
    return {"aten::" + op.removeprefix("aten."): n for op, n in counts.items()}


@pytest.fixture(scope="module")
def gpt2_block(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpt2")
    res = pyprof_db.profile(tmp, GPT2_BLOCK, env=ENV, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    header, records = testlib.read_dict(tmp / "net.dict")
    return last_json(res.stdout), header, records, tmp / "net.dict"


def test_an_extern_calls_node_is_counted_once_at_the_call(gpt2_block):
    """Inductor's provenance lists the attention backward node among the nodes of the C++
    kernel that makes its gradient input contiguous (`cpp_fused__scaled_dot_product_flash_
    attention_for_cpu_backward_transpose_view_2`): the node was being lowered when Inductor
    made that copy. The node runs as its own extern call (aten::_scaled_dot_product_flash_
    attention_for_cpu_backward, a record with its own cost), so the fused kernel must not count
    it too. Oracle: FlopCounterMode over one eager step of the same block: each op it counts
    (the GEMMs and the attention) costs in a compiled step what it counts (the causal
    attention's dense count: `flops_dense`), and no fused kernel carries any of those ops."""
    out, header, _, dict_path = gpt2_block
    assert out["pyprof"]["compiled_nodes_missing"] == 0
    assert out["pyprof"]["compiled_graphs_unreadable"] == 0
    kernels = compiled_kernel_lines(dict_path)
    fused = {name: k for name, k in kernels.items() if KERNEL.match(name)}
    carried = {(name, n["op"]) for name, k in fused.items() for n in k["nodes"]
               if n["op"] in FCM_OPS}
    assert not carried, carried
    # The copy, by hand: it reads the gradient of the attention output (the [32, 64] fp32 mm
    # output, 8192 bytes) and writes it as [2, 4, 16, 16] in the layout the attention backward
    # wants (8192 bytes); no arithmetic.
    copy = [name for name in fused if "flash_attention_for_cpu_backward" in name]
    assert len(copy) == 1, sorted(fused)
    rows = prof_records(dict_path)
    costs = {(r["flops"], r["bytes"]) for r in rows if r["kernel"] == copy[0]}
    assert costs == {(0, 16384)}, costs

    oracle = gpt2_flop_counter()
    assert set(oracle) == set(FCM_OPS), oracle
    steps = header["iterations"]["count"]
    last = [json.loads(line) for line in testlib.prof(
        "--json", "-c", "kernel,flops,flops_dense", "--iterations", f"{steps - 1}:{steps}",
        str(dict_path)).stdout.splitlines() if line.strip()]
    # The attention is causal: FlopCounterMode's count is the dense one (`flops_dense`); what
    # the kernel executes, `flops`, is the 16*17/2 = 136 pairs its mask keeps of 256.
    ours, executed = collections.Counter(), collections.Counter()
    for r in last:
        if r["kernel"] in FCM_OPS:
            ours[r["kernel"]] += r["flops_dense"]
            executed[r["kernel"]] += r["flops"]
    assert dict(ours) == oracle
    for op, n in oracle.items():
        assert executed[op] == (n * 136 // 256 if "attention" in op else n), op


def test_init_after_the_first_compiled_call_is_said_and_recompile_recovers(gpt2_block, tmp_path):
    """A program that compiles and warms up its model before pyprof.init(): Inductor compiled
    the graphs without pyprof's settings, so their C++ kernels open no RecordFunction (their
    time is CompiledFunction's own) and carry no ATen nodes. init() says so once on standard
    error, with the fix, and the capture says it too (prof's summary). With
    init(recompile=True) Dynamo's caches are reset: the graphs compile again under pyprof on
    their next call, and every Inductor kernel is a record with its nodes, costing what it
    costs when init() comes first (the gpt2_block fixture's run)."""
    def run(name, *args):
        tmp = tmp_path / name
        tmp.mkdir()
        res = pyprof_db.profile(tmp, GPT2_BLOCK, "--init-after-compile", *args, env=ENV,
                                timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
        summary = {r["Metric"]: r["Value"] for r in testlib.report_rows(testlib.prof(
            "--report", "summary", "--formats", "json", "--iterations", "all",
            str(tmp / "net.dict")).stdout)}
        return res, last_json(res.stdout)["pyprof"], tmp / "net.dict", summary

    def fused_costs(dict_path):
        # By the kernel's name in its graph's code: Inductor numbers the graphs of a process
        # (graph_<g>_), and the recompiled ones come after those compiled before init().
        return {KERNEL.match(r["kernel"]).group(1): (r["dir"], r["flops"], r["bytes"],
                                                     r["params"])
                for r in prof_records(dict_path) if KERNEL.match(r["kernel"])}

    late, stats, dict_path, summary = run("late")
    warning = "torch.compile had compiled 1 graph(s) before pyprof.init()"
    assert late.stderr.count(warning) == 1, late.stderr
    assert "pyprof.init(recompile=True)" in late.stderr
    assert (stats["compiled_before_init"], stats["compiled_graphs"]) == (1, 0), stats
    assert not fused_costs(dict_path)  # the C++ kernels opened no RecordFunction
    row = summary["torch.compile graphs compiled before pyprof.init()"]
    assert row.startswith("1 (") and "pyprof.init(recompile=True)" in row, row

    again, stats, dict_path, summary = run("recompiled", "--recompile")
    assert "recompile=True reset Dynamo's caches" in again.stderr
    assert warning + ": their" not in again.stderr
    assert (stats["compiled_before_init"], stats["compiled_graphs"]) == (1, 2), stats
    assert stats["compiled_nodes_missing"] == 0
    assert "torch.compile graphs compiled before pyprof.init()" not in summary
    first = fused_costs(gpt2_block[3])
    assert first and fused_costs(dict_path) == first
