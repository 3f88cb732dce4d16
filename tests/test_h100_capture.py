"""pyprof's own CUPTI capture from a real H100, checked in CI (which has no GPU).

tests/data/h100/pyprof-torch2.11-h100-resnet_block.sqlite.gz is the database `pyprof profile`
wrote on an NVIDIA H100 80GB HBM3 (torch 2.11.0+cu130, CUDA 13.0) for three training steps of
examples/train.py --model resnet_block --device cuda (docs/gpu-validation.md, 2026-11-27). The
GPU tests (tests/test_gpu_capture.py) only run where a GPU is; this keeps the same database
checks, and parse's and prof's results on it, running everywhere:

* read with sqlite3 alone (tests/cuda_capture.py): every kernel has its launch call in its
  process, every launch lies inside an op range of its thread, the GPU tables hold the H100's
  published facts;
* parse attributes each kernel to the op range the oracle finds innermost around its launch
  (fprop), or to the backward node around it and the forward op that node's sequence number
  names (bprop), and to the step range around the launch;
* prof's FLOPs for the matmul and conv families of one step equal FlopCounterMode's for the
  same step of the same model run here on the CPU; the device peaks come from the H100 SXM5
  datasheet row; cuDNN's and cuBLAS's FFMA kernels are not Tensor Core kernels.
"""

from __future__ import annotations

import collections
import gzip
import json
import os
import re
import shutil
import sys

import pytest

import testlib
from cuda_capture import OpRanges, kernel_name, launch_calls, read_capture, rows

pytestmark = pytest.mark.needs_build

DB_GZ = os.path.join(testlib.DATA, "h100", "pyprof-torch2.11-h100-resnet_block.sqlite.gz")
# NVIDIA's H100 SXM5 facts (H100 datasheet; docs/peaks.md): 132 SMs, compute capability 9.0,
# 80 GB HBM3 at 3.35 TB/s, dense FP16/BF16 Tensor Core 989.4 TFLOP/s.
H100 = {"name": "NVIDIA H100 80GB HBM3", "smCount": 132, "computeMajor": 9, "computeMinor": 0}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("h100") / "net.sqlite"
    with gzip.open(DB_GZ, "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return str(path)


@pytest.fixture(scope="module")
def cap(db):
    return read_capture(db)


@pytest.fixture(scope="module")
def parsed(db, tmp_path_factory):
    out = tmp_path_factory.mktemp("h100dict") / "net.dict"
    header, records, summary = testlib.parse(db, with_syncs=True)
    with open(out, "w") as f:
        f.write("\n".join(json.dumps(x) for x in [header, *records]) + "\n")
    return header, records, summary, str(out)


def test_capture_is_complete(cap):
    assert cap.meta["PYPROF_CUDA_TRACE"].startswith("on: CUPTI API version 130001 ")
    assert cap.stats["cupti_records_dropped"] == 0 and cap.stats["events_dropped"] == 0
    assert len(cap.kernels) == 103 and len(cap.runtime) == 6421


def test_every_kernel_has_its_launch_call_inside_an_op_range_of_its_thread(cap):
    calls = launch_calls(cap)
    index = OpRanges(cap.ranges)
    threads = collections.Counter()
    for k in cap.kernels:
        call = calls[(k["globalPid"], k["correlationId"])]
        assert call["start"] <= k["start"], kernel_name(cap, k)
        assert index.enclosing(call["globalTid"], call["start"], call["end"]), kernel_name(cap, k)
        threads[call["globalTid"]] += 1
    # The main thread (forward, optimizer) and the autograd engine's device thread (backward).
    assert len(threads) == 2 and min(threads.values()) > 0


def test_gpu_tables_hold_the_h100(cap, db):
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (gpu,) = rows(con, "TARGET_INFO_GPU")
    finally:
        con.close()
    assert {k: gpu[k] for k in H100} == H100
    assert 80e9 <= gpu["totalMemory"] <= 86e9  # 80 GB of HBM3, as the driver reports it
    assert abs(gpu["memoryBandwidth"] - 3.35e12) < 0.01 * 3.35e12  # bytes/s


EVALUATE = "autograd::engine::evaluate_function: "


def test_parse_attributes_each_kernel_as_the_oracle_does(cap, parsed):
    """docs/formats.md §3's rules, applied to the raw ranges: the op is the innermost op range
    around the launch (the engine's evaluate_function wrappers are user ranges, not ops); a
    launch inside a backward node, or beside it in the engine's evaluate_function step for it,
    is bprop of that node, paired with the forward op of the node's fwd_tid and seq that
    started last before it."""
    header, records, summary, _ = parsed
    assert header["devices"][0]["name"] == H100["name"]
    assert header["devices"][0]["sm_count"] == 132
    kernels = [r for r in records if r["kind"] == "kernel"]
    assert len(kernels) == len(cap.kernels)
    assert "attributed to an op: 134 of 134 (100.0%)" in summary
    calls = launch_calls(cap)
    index = OpRanges(cap.ranges)
    pid = cap.kernels[0]["globalPid"]
    forward = collections.defaultdict(list)  # (pyprof tid, seq) -> forward op ranges by start
    nodes = []  # backward node ranges
    for r in sorted(cap.ranges, key=lambda r: r.start):
        m = r.marker
        if not m or "op" not in m or m["op"].startswith(EVALUATE):
            continue
        if m.get("scope") == "backward":
            nodes.append(r)
        elif m.get("seq", -1) >= 0:
            forward[(m["tid"], m["seq"])].append(r)
    steps = {int(m.group(1)): r for r in cap.ranges
             if (m := re.fullmatch(r"step (\d+)", r.text or ""))}
    checked = collections.Counter()
    for r in kernels:
        call = calls[(pid, r["correlation"])]
        around = index.enclosing(call["globalTid"], call["start"], call["end"])
        ops = [o for o in around if not o.marker["op"].startswith(EVALUATE)]
        innermost = ops[0]
        node = next((o for o in ops if o.marker.get("scope") == "backward"), None)
        engine_step = next((o for o in around if o.marker["op"].startswith(EVALUATE)), None)
        if node is None and engine_step is not None:
            name = engine_step.marker["op"].removeprefix(EVALUATE)
            (node,) = [n for n in nodes if n.global_tid == engine_step.global_tid
                       and engine_step.start <= n.start and n.end <= engine_step.end
                       and n.marker["op"] == name]
        step = [n for n, s in steps.items() if s.start <= call["start"] <= s.end]
        assert r["step"] == (step[0] if step else None), r
        if node is None:
            assert (r["dir"], r["op"], r["op_id"]) == (
                "fprop", innermost.marker["op"], innermost.marker["id"]), r
            checked["fprop"] += 1
            continue
        assert (r["dir"], r["bwd_node"], r["bwd_node_id"]) == (
            "bprop", node.marker["op"], node.marker["id"]), r
        if innermost is not node:
            assert (r["bwd_op"], r["bwd_op_id"]) == (
                innermost.marker["op"], innermost.marker["id"]), r
        before = [f for f in forward[(node.marker["fwd_tid"], node.marker["seq"])]
                  if f.start <= node.start]
        if before:
            fwd = before[-1].marker
            assert r["paired"] and (r["op"], r["fwd_op_id"]) == (fwd["op"], fwd["id"]), r
            checked["paired"] += 1
        else:
            assert not r["paired"], r
        checked["bprop"] += 1
    assert checked == {"fprop": 52, "bprop": 51, "paired": 51}, checked


def flop_counter_step() -> dict:
    """FlopCounterMode's FLOPs for one training step of the captured model, run on the CPU."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode
    sys.path.insert(0, os.path.join(testlib.ROOT, "examples"))
    import models
    model, x, target = models.make("resnet_block", batch=8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    with FlopCounterMode(display=False) as counter:
        models.train_step(model, optimizer, x, target)
    return {str(op): int(n) for op, n in counter.get_flop_counts()["Global"].items()}


def test_step_flops_equal_flop_counter_mode(parsed):
    _, _, _, dict_path = parsed
    oracle = flop_counter_step()
    # Step 1 alone (step 0 is the warm-up; every step runs the same ops).
    out = testlib.prof("--json", "-c", "dir,family,op,flops", "--iterations", "1:2",
                       dict_path).stdout
    records = [json.loads(line) for line in out.splitlines()]
    by_family = collections.Counter()
    for r in records:
        by_family[(r["family"], r["dir"])] += r["flops"] or 0
    conv = oracle["aten.convolution"] + oracle["aten.convolution_backward"]
    gemm = sum(n for op, n in oracle.items() if op in ("aten.addmm", "aten.mm"))
    assert by_family[("conv", "fprop")] + by_family[("conv", "bprop")] == conv
    assert by_family[("conv", "fprop")] == oracle["aten.convolution"]
    assert by_family[("matmul", "fprop")] + by_family[("matmul", "bprop")] == gemm


def test_peaks_are_the_h100_sxm_datasheet_and_ffma_kernels_are_not_tensor_core(parsed):
    _, _, _, dict_path = parsed
    out = testlib.prof("--report", "peaks", "--formats", "json", dict_path).stdout
    peaks = {r["Mode"]: r for r in testlib.report_rows(out)}
    assert {r["Kind"] for r in peaks.values()} == {"datasheet"}
    assert peaks["bf16_tc"]["Peak FLOP/s"] == pytest.approx(989.4e12, rel=1e-3)
    assert peaks["fp16_tc"]["Memory B/s"] == pytest.approx(3.35e12, rel=1e-3)
    out = testlib.prof("--report", "kernel", "--formats", "json", dict_path).stdout
    kernels = testlib.report_rows(out)
    ffma = [k for k in kernels if "_ffma_" in k["Kernel"]]
    assert ffma and all(k["TC"] == "0" for k in ffma)


def test_synchronizing_calls_are_sync_lines_with_their_op(cap, parsed):
    """Every cudaStreamSynchronize / cudaDeviceSynchronize of the capture (here the blocking
    copies of model.cuda()) is a `sync` line with the call's times and the innermost op range
    around it (docs/formats.md §3)."""
    _, records, _, _ = parsed
    syncs = [r for r in records if r["kind"] == "sync"]
    calls = sorted((c for c in cap.runtime
                    if re.sub(r"_v\d+$", "", cap.strings.get(c["nameId"], "")).endswith(
                        "Synchronize")), key=lambda c: c["start"])
    assert len(syncs) == len(calls) == 19
    index = OpRanges(cap.ranges)
    for r, c in zip(syncs, calls):
        assert (r["start"], r["duration"]) == (c["start"], c["end"] - c["start"])
        ops = [o for o in index.enclosing(c["globalTid"], c["start"], c["end"])
               if not o.marker["op"].startswith(EVALUATE)]
        assert r["op"] == (ops[0].marker["op"] if ops else None), r
    # The GPU records come first, in GPU start order; the sync lines after them.
    assert records[-len(syncs):] == syncs
