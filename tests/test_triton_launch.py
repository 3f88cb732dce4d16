"""Inductor's Triton kernels in torch.profiler traces, which carry no compile metadata
(docs/ops.md "Triton launches without compile metadata"): their bytes are estimated from the
tensors their launcher op records, flagged `bytes-est`, with no FLOPs, and kept out of the
FLOP-covered time and the totals; the summary says how much time and how many bytes they hold.

1. A synthetic Kineto trace whose launcher ops carry the argument lists of the vLLM MI300X
   trace's Triton launches (copied event by event), a launch whose index space Inductor
   specialised (no estimate), a user's Triton kernel without a launcher op, and an exact op.
2. The real pair: `pyprof parse REPLAY --graph-capture CAPTURE` (skipped without ../shared).
"""

from __future__ import annotations

import decimal
import gzip
import json
import os

import pytest

import testlib

pytestmark = pytest.mark.needs_build

REAL = os.path.join(testlib.SHARED_TRACES, "real")
CAPTURE = os.path.join(REAL, "kineto_tracelens-mi300x-vllm-piecewise-graph-capture.json.gz")
REPLAY = os.path.join(REAL, "kineto_tracelens-mi300x-vllm-piecewise-graph-replay.json.gz")
BF16, F32, I32, SCALAR = "c10::BFloat16", "float", "int", "Scalar"

# (name, [(Input type, Input Dims, Concrete Inputs)], hand-counted bytes or None)
LAUNCHES = [
    # [8192,2880] bf16 read 47185920 + [8192,3072] bf16 written 50331648 (xnumel 25165824).
    ("triton_poi_fused_constant_pad_nd_moe_forward_0",
     [(BF16, [8192, 2880], ""), (BF16, [8192, 3072], ""), (SCALAR, [], "25165824")], 97517568),
    # [131072,64] float32 33554432 + bf16 16777216 (xnumel 8388608).
    ("triton_poi_fused__to_copy_1",
     [(F32, [131072, 64], ""), (BF16, [131072, 64], ""), (SCALAR, [], "8388608")], 50331648),
    # The embedding gather with the cast: no numel recorded, so no bound on the 1.16 GB table.
    ("triton_poi_fused_0",
     [(I32, [8192], ""), (BF16, [201088, 2880], ""), (F32, [131072, 64], ""),
      (BF16, [8192, 2880], ""), (BF16, [131072, 64], "")], None),
    # An exact op beside them: mm [64,64]x[64,64] fp32: 2*64^3 FLOPs, 3*64*64*4 bytes.
    ("aten::mm", [(F32, [64, 64], ""), (F32, [64, 64], "")], None),
]
MM_FLOPS, MM_BYTES = 2 * 64 ** 3, 3 * 64 * 64 * 4


def synthetic_trace() -> dict:
    """Each launch a cpu_op (with Inductor's launcher args) around a runtime call and its 10 µs
    kernel; then a user's Triton kernel launched outside any op, as SGLang's."""
    events = []
    for i, (name, args, _) in enumerate(LAUNCHES):
        ts, corr = 100 + 100 * i, 1000 + i
        kinds, dims, concrete = zip(*args)
        extra = {"kernel_backend": "triton", "kernel_name": name,
                 "kernel_kwargs": "XBLOCK=1024", "num_warps": 4,
                 "num_stages": 1} if name.startswith("triton_") else {}
        events += [
            {"ph": "X", "cat": "cpu_op", "name": name, "pid": 10, "tid": 10, "ts": ts, "dur": 50,
             "args": {"External id": i + 1, "Input type": list(kinds), "Input Dims": list(dims),
                      "Concrete Inputs": list(concrete), **extra}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
             "ts": ts + 10, "dur": 5, "args": {"correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": name if name.startswith("triton_") else "gemm",
             "pid": 0, "tid": 7, "ts": ts + 20, "dur": 10,
             "args": {"device": 0, "stream": 7, "correlation": corr, "grid": [1, 1, 1],
                      "block": [128, 1, 1]}},
        ]
    events += [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
         "ts": 600, "dur": 5, "args": {"correlation": 2000}},
        {"ph": "X", "cat": "kernel", "name": "create_flashinfer_kv_indices_triton", "pid": 0,
         "tid": 7, "ts": 610, "dur": 10,
         "args": {"device": 0, "stream": 7, "correlation": 2000, "grid": [15, 1, 1],
                  "block": [256, 1, 1]}},
    ]
    return {"traceEvents": events}


def records_of(dict_path) -> list[dict]:
    res = testlib.prof("--json", "-c", "all", "--iterations", "all", str(dict_path))
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


def summary_of(dict_path) -> dict:
    res = testlib.prof("--report", "summary", "--formats", "json", str(dict_path))
    return {row["Metric"]: row["Value"] for row in testlib.report_rows(res.stdout)}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    d = tmp_path_factory.mktemp("triton")
    (d / "trace.json").write_text(json.dumps(synthetic_trace()))
    testlib.parse_to(d / "trace.json", d / "net.dict")
    return d / "net.dict"


def test_launches_get_their_hand_counted_bytes_flagged_estimated(synthetic):
    by_kernel = {r["kernel"]: r for r in records_of(synthetic)}
    for name, _, byts in LAUNCHES[:2]:
        r = by_kernel[name]
        assert (r["bytes"], r["op_bytes"], r["flag"], r["family"]) == (
            byts, byts, "bytes-est", "triton"), r
        # No FLOP count: never a 0 that reads as exact.
        assert r["flops"] is None and r["op_flops"] is None and r["tflops"] is None, r
        assert r["params"].endswith(",flops=na,bytes=est"), r
        # Bytes over the kernel's own 10 µs.
        assert r["gbps"] == pytest.approx(byts / 10000, abs=0.05), r
        assert r["counted_ns"] is None, r
    assert by_kernel[LAUNCHES[0][0]]["params"] == (
        "triton=poi,N=25165824,tensors=2,flops=na,bytes=est")
    # No numel recorded, and a user's kernel without a launcher: left as they were.
    for name in ("triton_poi_fused_0", "create_flashinfer_kv_indices_triton"):
        r = by_kernel[name]
        assert (r["bytes"], r["flag"], r["params"]) == (None, None, None), r  # JSON: "-" is null
    gemm = by_kernel["gemm"]
    assert (gemm["flops"], gemm["bytes"], gemm["flag"]) == (MM_FLOPS, MM_BYTES, None), gemm


def test_summary_keeps_estimates_out_of_the_flop_covered_share(synthetic):
    s = summary_of(synthetic)
    # 5 kernels of 10 µs: only the mm has a FLOP model.
    assert s["time covered by a FLOP model %"] == 20.0
    assert s["counted time (ns)"] == 10000
    assert (s["FLOPs (FMA=2)"], s["bytes (ideal DRAM)"]) == (MM_FLOPS, MM_BYTES)
    assert s["Triton launches with estimated bytes (no FLOP model)"] == 2
    assert s["Triton launch time with estimated bytes %"] == 40.0
    assert s["Triton launches' estimated bytes (out of the totals)"] == (
        97517568 + 50331648)
    assert s["Triton launches' estimated GB/s (over their time)"] == pytest.approx(
        (97517568 + 50331648) / 20000, abs=0.05)
    # They still have no FLOP model: ranked among the ops without one.
    ranked = [v for k, v in s.items() if k.startswith("unmodelled op ")]
    assert any(v.startswith("triton_poi_fused_constant_pad_nd_moe_forward_0 ") for v in ranked)


def ns(us) -> int:
    return int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_HALF_UP))


def test_real_vllm_replay_joined_to_its_capture(tmp_path):
    if not (os.path.exists(CAPTURE) and os.path.exists(REPLAY)):
        pytest.skip("../shared/traces/real is beside the checkout")
    testlib.parse_to(REPLAY, tmp_path / "net.dict", "--graph-capture", CAPTURE)
    # Oracle: the replay's Triton kernels read with gzip + json; bytes per name by hand (above).
    with gzip.open(REPLAY) as f:
        events = json.load(f, parse_float=decimal.Decimal)["traceEvents"]
    hand = {name: byts for name, _, byts in LAUNCHES[:2]}
    kernels = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("triton_")]
    estimated = [e for e in kernels if e["name"] in hand]
    assert (len(kernels), len(estimated)) == (48, 47)
    records = [r for r in records_of(tmp_path / "net.dict") if r["kernel"].startswith("triton_")]
    assert len(records) == 48
    for r in records:
        if r["kernel"] in hand:
            assert (r["bytes"], r["flag"], r["flops"]) == (hand[r["kernel"]], "bytes-est",
                                                           None), r
        else:  # triton_poi_fused_0: its index space is not recorded
            assert (r["bytes"], r["flag"]) == (None, None), r
    s = summary_of(tmp_path / "net.dict")
    total_bytes = sum(hand[e["name"]] for e in estimated)
    assert total_bytes == 24 * 97517568 + 23 * 50331648
    assert s["Triton launches with estimated bytes (no FLOP model)"] == 47
    assert s["Triton launches' estimated bytes (out of the totals)"] == total_bytes
    time = sum(ns(e["dur"]) for e in estimated)
    assert s["Triton launches' estimated GB/s (over their time)"] == pytest.approx(
        total_bytes / time, abs=0.05)
    # What was right stays: the FLOP-covered share and the totals are those before (docs/ops.md).
    assert s["time covered by a FLOP model %"] == 15.0
    assert s["Inductor kernel time without a FLOP model %"] == 100.0
