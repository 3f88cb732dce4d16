"""Checks of CUDA graph replays and compiled kernels shared by the GPU tests
(tests/test_gpu_compile.py) and the CI tests of the databases a real GPU wrote
(tests/test_h200_graphs.py)."""

from __future__ import annotations

import collections
import json
import re
import sqlite3

import pytest

import pyprof_db
import testlib

GRAPH_SUMMARY = re.compile(r"CUDA graphs: graph-launched: (\d+), (\d+) attributed to their capture")


def compiled_kernel_lines(dict_path) -> dict[str, dict]:
    with open(dict_path) as f:
        lines = [json.loads(line) for line in f]
    return {d["name"]: d["kernel"] for d in lines if d.get("kind") == "compiled_kernel"}


def prof_records(dict_path, *extra) -> list[dict]:
    res = testlib.prof("--json", "-c", "all", "--iterations", "all", *extra, str(dict_path))
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


def graph_summary(stderr: str) -> tuple[int, int]:
    m = GRAPH_SUMMARY.search(stderr)
    assert m, f"parse's summary has no CUDA graphs line:\n{stderr}"
    return int(m.group(1)), int(m.group(2))


def graph_node_rows(db) -> int:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM PYPROF_CUDA_GRAPH_NODES").fetchone()[0]


def replayed_and_eager(db, records) -> tuple[list[dict], list[dict]]:
    """tests/scripts/gpu_graphs_compile.py's `graph` mode: the graph-launched kernel records, and
    the oracle's, those of the eager step launched inside the `eager` range (its backward on the
    autograd engine's thread, so found by time)."""
    kernels = [r for r in records if r["kind"] == "kernel"]
    eager_range = next(r for r in pyprof_db.read_ranges(str(db)) if r.text == "eager")
    eager = [r for r in kernels if "graph_node" not in r
             and eager_range.start <= r["launch"]["start"] <= eager_range.end]
    return [r for r in kernels if "graph_node" in r], eager


def check_graph_replays(stderr, replayed, eager, replays):
    """The replays' kernels are `replays` times the eager step's, op by op and direction by
    direction, each with the capture's ranges and the replay's launch call."""
    print(f"replayed kernels {len(replayed)}, eager step {len(eager)}")
    launched, attributed = graph_summary(stderr)
    assert launched == len(replayed) > 0 and attributed == launched, (launched, attributed)
    assert all(r["launch"]["api"].startswith("cudaGraphLaunch") for r in replayed), \
        {r["launch"]["api"] for r in replayed}
    assert all(r["op"] for r in replayed), [r for r in replayed if not r["op"]][:2]
    forward = [r for r in replayed if r["dir"] == "fprop"]
    assert forward and all("capture" in (r.get("user_ranges") or []) for r in forward)
    by_op = lambda rs: collections.Counter((r["op"], r["dir"]) for r in rs)  # noqa: E731
    print("eager step, by (op, dir):", dict(by_op(eager)))
    assert eager and {d for _, d in by_op(eager)} == {"fprop", "bprop"}
    assert by_op(replayed) == collections.Counter(
        {key: n * replays for key, n in by_op(eager).items()})
    modules = {r.get("module") for r in replayed}
    assert {"MLP.fc1", "MLP.fc2", "MLP.ln"} <= modules, modules
    # The same kernels too (informational: capture may pick other cuBLAS kernels).
    names = lambda rs: collections.Counter(r["name"] for r in rs)  # noqa: E731
    if names(replayed) != collections.Counter({k: n * replays for k, n in names(eager).items()}):
        print("kernel names differ between replays and the eager step:",
              dict(names(replayed)), dict(names(eager)))


def check_replay_costs(dict_path, replayed, eager, replays):
    """prof costs every replay: the replayed kernels' FLOPs, op by op and direction by direction,
    are `replays` times the eager step's (each replay is an op instance of its own; when they
    shared the capture's, the op's cost was spread over all replays: one step's FLOPs for
    three)."""
    records = [r for r in testlib.read_dict(dict_path)[1]
               if r["kind"] in ("kernel", "memcpy", "memset")]
    rows = prof_records(dict_path)
    assert [r["name"] for r in records] == [row["kernel"] for row in rows]
    flops_of = {id(r): row["flops"] or 0 for r, row in zip(records, rows)}

    def by_op(rs):
        out = collections.Counter()
        for r in rs:
            out[(r["op"], r["dir"])] += flops_of[id(r)]
        return out

    # The same record objects: read the dict once more so ids match.
    replayed_ids = {(r["name"], r["start"]) for r in replayed}
    eager_ids = {(r["name"], r["start"]) for r in eager}
    replay_rs = [r for r in records if (r["name"], r["start"]) in replayed_ids]
    eager_rs = [r for r in records if (r["name"], r["start"]) in eager_ids]
    assert len(replay_rs) == len(replayed) and len(eager_rs) == len(eager)
    expected = {key: f * replays for key, f in by_op(eager_rs).items() if f}
    got = {key: f for key, f in by_op(replay_rs).items() if f}
    print("replayed FLOPs by (op, dir):", got, "eager step:", dict(by_op(eager_rs)))
    assert expected and got == pytest.approx(expected), (got, expected)
    # One instance per op and replay.
    instances = collections.defaultdict(set)
    for r in replay_rs:
        instances[(r["op"], r["dir"])].add(r["instance"])
    eager_instances = collections.defaultdict(set)
    for r in eager_rs:
        eager_instances[(r["op"], r["dir"])].add(r["instance"])
    assert {k: len(v) for k, v in instances.items()} == \
        {k: len(v) * replays for k, v in eager_instances.items()}


def check_reduce_overhead(stderr, records, kernels, rows, dict_path):
    """cudagraph trees run step 0 without a graph (the warm-up), record in step 1 and replay
    from then on: each step's replayed kernels are those of step 0's compiled code, with the
    same ops and directions (the extern GEMMs' aten::addmm, the Triton kernels'
    CompiledFunction), and the replayed Triton kernels keep their nodes' FLOPs."""
    kernel_rows = [r for r in records if r["kind"] == "kernel"]
    replayed = [r for r in kernel_rows if "graph_node" in r]
    launched, attributed = graph_summary(stderr)
    print(f"replayed kernels: {len(replayed)}; names "
          f"{collections.Counter(r['name'] for r in replayed)}")
    assert launched == len(replayed) > 0 and attributed == launched, (launched, attributed)
    check_graph_summary(dict_path, len(replayed))
    names = {r["name"] for r in replayed}
    steps = {r["step"] for r in replayed}
    # Step 0's kernels of those names that ran inside an op (the script's FlopCounterMode step
    # runs the same GEMMs before pyprof.init(), outside every op).
    warm_up = [r for r in kernel_rows if r.get("step") == 0 and "graph_node" not in r
               and r["name"] in names and r["op"]]
    key = lambda r: (r["name"], r["op"], r["dir"])  # noqa: E731
    per_step = collections.Counter(map(key, warm_up))
    print("step 0 (warm-up), by (kernel, op, dir):", dict(per_step))
    assert collections.Counter(map(key, replayed)) == collections.Counter(
        {k: n * len(steps) for k, n in per_step.items()})
    assert {r["op"] for r in replayed} >= {"aten::addmm", "CompiledFunction"}
    # Replayed Triton kernels join their compile metadata by name and keep exact FLOPs.
    triton = {n for n in names if n.startswith("triton_")}
    assert triton and triton <= set(kernels), triton - set(kernels)
    costed = [r for r in rows if r["kernel"] in triton]
    assert costed and all(r["flops"] is not None and r["family"] == "compiled"
                          for r in costed), [r for r in costed if r["flops"] is None][:3]


def compiled_kernel_variants(dict_path) -> dict[tuple[str, str | None], dict]:
    """net.dict's `compiled_kernel` lines by (name, graph): graph None unless two compiled
    graphs share the name (docs/formats.md §3)."""
    with open(dict_path) as f:
        lines = [json.loads(line) for line in f]
    return {(d["name"], d.get("graph")): d["kernel"] for d in lines
            if d.get("kind") == "compiled_kernel"}


def replayed_node_costs(dict_path, replay_dir, env, *replay_args
                        ) -> tuple[collections.Counter, collections.Counter]:
    """The oracle of a compiled kernel's cost: its ATen nodes (net.dict's `compiled_kernel`
    lines) run one by one in eager mode under pyprof (tests/scripts/replay_nodes.py), whose
    records go through the C++ annotation, not the compile-time metadata. Profiled without a
    CUDA trace, so that the records are the ops themselves, as in a CPU profile. (FLOPs, bytes)
    of each kernel's replay, by its range's name: `NAME`, or `NAME@GRAPH` for a name two graphs
    share."""
    replay_dir.mkdir()
    res = pyprof_db.profile(replay_dir, testlib.script("replay_nodes.py"), str(dict_path),
                            *replay_args, env={**env, "OMP_NUM_THREADS": "1"}, timeout=600,
                            extra_profile_args=("--no-cuda-trace",))
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(replay_dir / "net.sqlite", replay_dir / "net.dict")
    flops, bytes_ = collections.Counter(), collections.Counter()
    for r in prof_records(replay_dir / "net.dict"):
        m = re.search(r"kernel (\S+)", r.get("layer") or "")
        if m and r["flops"] is not None:
            flops[m.group(1)] += r["flops"]
            bytes_[m.group(1)] += r["bytes"]
    return flops, bytes_


def check_triton_kernels(dict_path, replay_dir, env, *replay_args) -> list[dict]:
    """Every Triton kernel record joins its `compiled_kernel` line (by name, and by its
    `compiled_graph` where two graphs share the name), is costed (family `compiled`), moves
    less than its nodes would unfused, and has exactly the FLOPs of its nodes run one by one in
    eager mode under pyprof (replayed_node_costs). Returns the Triton kernels'
    prof rows, each with the record's `compiled_graph` under `graph`."""
    kernels = compiled_kernel_variants(dict_path)
    _, records = testlib.read_dict(dict_path)
    rows = prof_records(dict_path)
    assert len(records) == len(rows)  # prof writes one row per record, in record order
    triton = []
    for record, row in zip(records, rows):
        assert record["name"] == row["kernel"], (record["name"], row["kernel"])
        if record["name"].startswith("triton_"):
            triton.append({**row, "graph": record.get("compiled_graph")})
    print(f"compiled_kernel lines: {sorted(kernels, key=str)}")
    print("Triton kernel records:",
          collections.Counter((r["kernel"], r["graph"], r["dir"]) for r in triton))
    assert triton and {(r["kernel"], r["graph"]) for r in triton} <= set(kernels), (
        {(r["kernel"], r["graph"]) for r in triton} - set(kernels))
    assert all(r["flops"] is not None and r["family"] == "compiled" for r in triton), \
        [r for r in triton if r["flops"] is None][:3]
    assert {r["dir"] for r in triton} == {"fprop", "bprop"}
    assert {r["module"] for r in triton} == {"MLP"}
    for r in triton:
        unfused = int(re.search(r"unfused_bytes=(\d+)", r["params"]).group(1))
        if len(kernels[(r["kernel"], r["graph"])]["nodes"]) > 1:
            assert r["bytes"] < unfused, r

    eager_flops, _ = replayed_node_costs(dict_path, replay_dir, env, *replay_args)
    for r in triton:
        key = r["kernel"] + (f"@{r['graph']}" if r["graph"] else "")
        assert r["flops"] == eager_flops[key], (key, r["flops"], eager_flops[key])
    return triton


def check_step_matmul_flops(header, dict_path, oracle: dict) -> None:
    """The matmul-family FLOPs of the last step (the extern GEMMs Inductor calls) equal
    FlopCounterMode's addmm and mm FLOPs for one eager step of the same model."""
    gemm = sum(n for op, n in oracle.items() if op in ("aten.addmm", "aten.mm"))
    steps = (header.get("iterations") or {}).get("count")
    print(f"iterations: {header.get('iterations', {}).get('rule')}, {steps}; oracle {oracle}")
    assert steps and steps >= 2
    last = f"{steps - 1}:{steps}"
    rows = [json.loads(line) for line in testlib.prof(
        "--json", "-c", "dir,family,op,kernel,flops", "--iterations", last,
        str(dict_path)).stdout.splitlines() if line.strip()]
    matmul = sum(r["flops"] or 0 for r in rows if r["family"] == "matmul")
    print(f"matmul FLOPs in step {steps - 1}: {matmul}; FlopCounterMode {gemm}")
    assert gemm and matmul == gemm


def check_graph_summary(dict_path, replayed: int) -> None:
    """prof's summary counts the replayed activities and says that none is without an op."""
    out = testlib.prof("--report", "summary", "--iterations", "all", "--formats", "json",
                       str(dict_path)).stdout
    rows = {r["Metric"]: r["Value"] for r in testlib.report_rows(out)}
    assert int(rows["CUDA graph activities (replayed)"]) == replayed, rows
    assert int(rows["CUDA graph activities attributed to an op"]) == replayed
    assert int(rows["CUDA graph activities without an op"]) == 0
