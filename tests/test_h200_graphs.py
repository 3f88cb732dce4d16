"""CUDA graphs and torch.compile as a real GPU recorded them, checked in CI (which has no GPU).

tests/data/h200/ holds the databases `pyprof profile` wrote on an NVIDIA H200 (torch
2.11.0+cu130, CUDA 13.0, CUPTI 13.0.1) for tests/scripts/gpu_graphs_compile.py, an MLP trained
on the GPU (docs/gpu-validation.md, 2026-11-28):

* `cuda-graph`: one step's forward and backward captured with torch.cuda.graphs, replayed three
  times, then one eager step. A real libcupti announces every node of the instantiated graph
  twice, created and cloned from the captured node: the first GPU run found parse following
  the creation (every replayed kernel then had no op); each replay's kernels must now be the
  eager step's, op by op and direction by direction;
* `reduce-overhead`: torch.compile(mode="reduce-overhead"), six steps: cudagraph trees replay the
  compiled forward and backward; each step's replayed kernels are step 0's, and the replayed
  Triton kernels keep their nodes' FLOPs;
* `compile`: torch.compile (Triton kernels), three steps: each Triton kernel's FLOPs equal its
  ATen nodes run one by one on this machine's CPU (tests/scripts/replay_nodes.py --cpu), and the
  step's matmul FLOPs equal FlopCounterMode's for the same MLP;
* `recompile`: the same, then three steps at batch 32 (`--recompile static`): Dynamo recompiles
  (graph 0/1), whose five Triton kernels have the names of graph 0/0's. The marks say their
  graph, and every record joins its own graph's nodes (before they did, the first GPU run found
  all 1,196 Triton records `na`, their names ambiguous).

tests/test_gpu_compile.py runs the same checks on fresh captures where a GPU is.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import shutil

import pytest

import testlib
from graph_checks import (check_graph_replays, check_replay_costs, check_graph_summary, check_reduce_overhead,
                          check_step_matmul_flops, check_triton_kernels, compiled_kernel_lines,
                          compiled_kernel_variants, prof_records, replayed_and_eager)

pytestmark = pytest.mark.needs_build

DATA = os.path.join(testlib.DATA, "h200")


def parsed(tmp_path, name):
    """(database, parse's stderr, header, records, net.dict) of tests/data/h200's NAME."""
    db = tmp_path / f"{name}.sqlite"
    with gzip.open(os.path.join(DATA, f"pyprof-torch2.11-h200-{name}.sqlite.gz")) as src, \
            open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    dict_path = tmp_path / f"{name}.dict"
    res = testlib.run_tool(testlib.PARSE, db, "-o", dict_path, timeout=120)
    assert res.returncode == 0, res.stderr
    header, records = testlib.read_dict(dict_path)
    return db, res.stderr, header, records, dict_path


def test_cuda_graph_replays_take_their_capture_ops(tmp_path):
    db, stderr, header, records, dict_path = parsed(tmp_path, "cuda-graph")
    assert header["devices"][0]["name"] == "NVIDIA H200"
    replayed, eager = replayed_and_eager(db, records)
    assert (len(replayed), len(eager)) == (63, 21)
    check_graph_replays(stderr, replayed, eager, 3)
    check_replay_costs(dict_path, replayed, eager, 3)
    check_graph_summary(dict_path, 63)


def test_reduce_overhead_replays_keep_ops_and_costs(tmp_path):
    _, stderr, _, records, dict_path = parsed(tmp_path, "reduce-overhead")
    check_reduce_overhead(stderr, records, compiled_kernel_lines(dict_path),
                          prof_records(dict_path), dict_path)


def test_triton_kernels_cost_their_nodes(tmp_path):
    _, _, header, _, dict_path = parsed(tmp_path, "compile")
    check_triton_kernels(dict_path, tmp_path / "replay",
                         {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}, "--cpu")
    # The oracle's FLOPs: one eager step of the same MLP, batch 64, on the CPU.
    torch = pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("gpu_graphs_compile",
                                                  testlib.script("gpu_graphs_compile.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    torch.manual_seed(0)
    oracle = script.eager_flops(script.MLP(), torch.randn(64, 256), torch.randn(64, 64))
    check_step_matmul_flops(header, dict_path, oracle)


def test_recompiled_triton_kernels_join_their_own_graph(tmp_path):
    _, stderr, _, records, dict_path = parsed(tmp_path, "recompile")
    assert "ambiguous compiled kernel" not in stderr, stderr
    kernels = compiled_kernel_variants(dict_path)
    names = {name for name, _ in kernels}
    assert len(names) == 5 and set(kernels) == {(n, g) for n in names for g in ("0/0", "0/1")}
    # Steps 0-2 ran batch 64 (graph 0/0), steps 3-5 batch 32 (graph 0/1; step 3 also holds
    # Triton's autotuning runs of the recompiled kernels).
    triton = [r for r in records if r["name"].startswith("triton_")]
    assert {(r["step"] >= 3, r["compiled_graph"]) for r in triton} == {(False, "0/0"),
                                                                        (True, "0/1")}
    rows = check_triton_kernels(dict_path, tmp_path / "replay",
                                {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}, "--cpu")
    # Every node here is linear in the batch: half the rows, half the FLOPs.
    flops = {(r["kernel"], r["graph"]): r["flops"] for r in rows}
    for name in names:
        assert flops[(name, "0/1")] * 2 == flops[(name, "0/0")], name
