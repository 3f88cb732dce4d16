"""CUDA graphs and torch.compile on a real GPU (issue 17; docs/compile.md).

Skipped without CUDA (CI never has a GPU): scripts/gpu-check.sh runs it in its tests phase.
tests/scripts/gpu_graphs_compile.py trains an MLP on the GPU under `pyprof profile` three ways,
and each test checks pyprof's attribution against an independent oracle:

* torch.cuda.graphs: one step's forward and backward captured into a CUDAGraph and replayed;
  every replayed kernel is attributed to the op that launched it at capture time (the
  database's PYPROF_CUDA_GRAPH_NODES, read through a real libcupti's resource callbacks), so the
  replays' kernels are, op by op and direction by direction, N times those of one eager step of
  the same model in the same process;
* torch.compile (Triton kernels): every Triton kernel record carries its ATen nodes and exact
  FLOPs, which equal those of the same nodes run one by one eagerly under pyprof
  (tests/scripts/replay_nodes.py, as tests/test_compile.py does on the CPU); the matmul FLOPs of
  a step equal FlopCounterMode's on the eager model;
* torch.compile(mode="reduce-overhead"): the compiled graphs replayed through cudagraph trees
  keep both: graph-launched Triton kernels with their nodes' FLOPs, attributed to their capture.

Then recompiles (static and dynamic shapes, with Triton's autotuning set apart) and the C++
wrapper, whose extern GEMMs' cuBLAS kernels are costed from their shim calls' marks.

Run with -rP to see what each test prints.
"""

from __future__ import annotations

import collections
import json

import pytest

import pyprof_db
import testlib
from graph_checks import (check_graph_replays, check_replay_costs, check_graph_summary, check_reduce_overhead,
                          check_step_matmul_flops, check_triton_kernels, compiled_kernel_lines,
                          graph_node_rows, prof_records, replayed_and_eager)

torch = testlib.cuda_torch_or_skip("these tests need one")

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("gpu_graphs_compile.py")
ENV = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}


def profiled(tmp, mode, *args, env=None):
    """(the script's JSON line, parse's stderr, header, records, net.dict path)"""
    res = pyprof_db.profile(tmp, SCRIPT, mode, *args, env={**ENV, **(env or {})}, timeout=600,
                            extra_profile_args=("--force",))
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-6000:]}"
    out = json.loads([line for line in res.stdout.splitlines() if line.startswith("{")][-1])
    dict_path = tmp / "net.dict"
    parsed = testlib.run_tool(testlib.PARSE, tmp / "net.sqlite", "-o", dict_path, timeout=300)
    assert parsed.returncode == 0, parsed.stderr
    print(f"--- {mode}: pyprof.stats() {out['pyprof']}\n--- parse's summary\n{parsed.stderr}")
    header, records = testlib.read_dict(dict_path)
    return out, parsed.stderr, header, records, dict_path


def test_cuda_graph_replays_are_attributed_to_their_capture(tmp_path):
    replays = 3
    _, stderr, _, records, dict_path = profiled(tmp_path, "graph", "--steps", str(replays))
    db = tmp_path / "net.sqlite"
    print(f"graph nodes recorded: {graph_node_rows(db)}")
    assert graph_node_rows(db) > 0
    replayed, eager = replayed_and_eager(db, records)
    check_graph_replays(stderr, replayed, eager, replays)
    check_replay_costs(dict_path, replayed, eager, replays)
    check_graph_summary(dict_path, len(replayed))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compile")
    return profiled(tmp, "compile") + (tmp,)


def test_triton_kernels_carry_their_nodes_and_exact_flops(compiled):
    out, _, _, _, dict_path, tmp = compiled
    stats = out["pyprof"]
    assert out["graph_breaks"] == 0
    assert stats["compiled_graphs"] == 2  # forward and backward
    assert stats["compiled_nodes_missing"] == 0 and stats["compiled_graphs_unreadable"] == 0
    check_triton_kernels(dict_path, tmp / "replay", ENV)


def test_compiled_step_matmul_flops_equal_flop_counter_mode(compiled):
    out, _, header, _, dict_path, _ = compiled
    oracle = out["oracle_flops"]
    check_step_matmul_flops(header, dict_path, oracle)


def test_reduce_overhead_replays_keep_nodes_and_capture(tmp_path):
    _, stderr, _, records, dict_path = profiled(tmp_path, "reduce-overhead", "--steps", "6")
    check_reduce_overhead(stderr, records, compiled_kernel_lines(dict_path),
                          prof_records(dict_path), dict_path)


def test_recompiled_triton_kernels_join_their_own_graph(tmp_path):
    """Three steps at batch 64, three at batch 32 with dynamic=False: the recompiled graph's
    Triton kernels have the first graph's names; each record joins its own graph's nodes
    (tests/test_h200_graphs.py checks the H200's capture of this run in CI)."""
    out, stderr, _, records, dict_path = profiled(tmp_path, "compile", "--recompile", "static")
    assert out["pyprof"]["compiled_graphs"] == 4
    assert "ambiguous compiled kernel" not in stderr
    triton = [r for r in records if r["name"].startswith("triton_")]
    assert {(r["step"] >= 3, r.get("compiled_graph")) for r in triton} == {(False, "0/0"),
                                                                            (True, "0/1")}
    rows = check_triton_kernels(dict_path, tmp_path / "replay", ENV)
    flops = {(r["kernel"], r["graph"]): r["flops"] for r in rows}
    for name in {r["kernel"] for r in rows}:
        assert flops[(name, "0/1")] * 2 == flops[(name, "0/0")], name
    check_autotuning_left_out(out, records, dict_path)


def autotuning(record) -> bool:
    return any(u.startswith("pyprof.autotune:") for u in record.get("user_ranges", ()))


def check_autotuning_left_out(out, records, dict_path):
    """Triton's autotuning (docs/compile.md): the H200 ran hundreds of extra launches in the
    first backward of this recompile. Each configuration's timing is a pyprof.autotune range
    named for its kernel; once its records are set apart, the first step after the recompile
    launches each Triton kernel as often as the next step does, and prof leaves them out."""
    tuning = [r for r in records if autotuning(r)]
    print(f"autotuning: {out['pyprof']['compiled_autotune_benchmarks']} configurations timed, "
          f"{len(tuning)} records")
    assert out["pyprof"]["compiled_autotune_benchmarks"] > 0 and tuning
    assert {r["user_ranges"][-1].split(":", 1)[1].split(" ", 1)[0] for r in tuning} <= {
        r["name"] for r in records if r["name"].startswith("triton_")}

    def launches(step):
        return collections.Counter(r["name"] for r in records if r.get("step") == step
                                   and r["name"].startswith("triton_") and not autotuning(r))
    assert launches(3) == launches(4), (launches(3), launches(4))
    res = testlib.prof("--iterations", "all", str(dict_path))
    assert f"{len(tuning)} records of Triton's autotuning" in res.stderr, res.stderr


def test_dynamic_recompile_binds_each_calls_sizes(tmp_path):
    """Batch 64, then 32 with automatic dynamic shapes: Dynamo recompiles with symbolic sizes.
    Each call of the symbolic graph sends its sizes (pyprof.stats()['compiled_calls']), each of
    its Triton kernel records carries them (`compiled_symbols`), and prof costs every one."""
    out, stderr, _, records, dict_path = profiled(tmp_path, "compile", "--recompile", "dynamic")
    print(f"compiled_calls: {out['pyprof']['compiled_calls']}")
    assert out["pyprof"]["compiled_calls"] > 0
    symbolic = [r for r in records if r["name"].startswith("triton_") and "compiled_symbols" in r]
    assert symbolic and all(r["step"] >= 3 for r in symbolic)
    rows = prof_records(dict_path)
    assert all(r["flops"] is not None for r in rows if r["kernel"].startswith("triton_")), [
        r["kernel"] for r in rows if r["kernel"].startswith("triton_") and r["flops"] is None]


def test_cpp_wrapper_extern_kernels_cost_their_shims_marks(tmp_path):
    """`config.cpp_wrapper` on a GPU (docs/compile.md "The C++ wrapper"): the Linears' GEMMs run
    through shims (`aoti_torch_cuda_addmm_out`, `aoti_torch_cuda_mm_out`) that launch cuBLAS
    kernels named for neither the shim nor any mark. With Inductor's kernel profiling on, each
    shim call is a RecordFunction around its kernels: each kernel joins its call's marks (its
    place in the graph), and a step's cuBLAS FLOPs, shared among each call's kernels, add up
    to FlopCounterMode's addmm and mm FLOPs on the eager model."""
    out, stderr, header, records, dict_path = profiled(
        tmp_path, "compile", env={"TORCHINDUCTOR_CPP_WRAPPER": "1"})
    assert "ambiguous compiled kernel" not in stderr, stderr

    def call_of(r):
        return r.get("bwd_op") if r["dir"] == "bprop" else r.get("op")
    extern = [r for r in records if r.get("kind") == "kernel"
              and not r["name"].startswith("triton_")
              and (call_of(r) or "").startswith("aoti_torch_cuda_")]
    print(f"extern-call kernels: {collections.Counter((call_of(r), r['name']) for r in extern)}")
    assert extern, "no kernel ran inside an aoti_torch_cuda_* range"
    summary = {r["Metric"]: r["Value"] for r in testlib.report_rows(testlib.prof(
        "--report", "summary", "--iterations", "all", "--formats", "json",
        str(dict_path)).stdout)}
    assert int(summary["C++ wrapper extern-call kernels costed from the call's marks"]) == \
        len(extern), summary
    steps = header["iterations"]["count"]
    rows = [json.loads(line) for line in testlib.prof(
        "--json", "-c", "dir,family,kernel,flops", "--iterations", f"{steps - 1}:{steps}",
        str(dict_path)).stdout.splitlines() if line.strip()]
    cublas = sum(r["flops"] or 0 for r in rows
                 if r["family"] == "compiled" and not r["kernel"].startswith("triton_"))
    gemm = sum(n for op, n in out["oracle_flops"].items() if op in ("aten.addmm", "aten.mm"))
    print(f"extern-call FLOPs in step {steps - 1}: {cublas}; FlopCounterMode {gemm}")
    assert gemm and cublas == pytest.approx(gemm, rel=1e-9)
