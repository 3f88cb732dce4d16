"""The libraries' ops (vLLM, SGLang, aiter, flash-attn, symm_mem, ...) costed end to end
(docs/ops.md "Library and serving ops").

1. Custom ops registered with torch.library on the CPU under the names and schemas vLLM and
   flash-attn register (tests/scripts/library_ops.py), run under `pyprof profile` (arguments by
   schema name) and under torch.profiler (arguments by position): parse and prof give each op
   the hand-counted cost, the same in both dialects; flash-attn's dense count is
   FlopCounterMode's for torch's own flash kernel on the same shapes.
2. A synthetic Kineto GPU trace whose ops carry the real ops' names and argument lists as
   torch.profiler records them: copied from the vLLM MI300X trace in ../shared/traces/real, and
   for ops no trace here has, written from the libraries' schemas.
3. The real SGLang MI300X serving trace (tests/data): every custom op is modelled, each distinct
   call's cost as counted by hand, and the share of GPU time with a model is all of it (86.0%
   before these models).
4. The ops no model knows on real traces (SGLang's, and legacy PyProf's apex LM on a V100): the
   summary's ranking and `unmodelled` table against the net.dict's kernel times summed by hand.
"""

from __future__ import annotations

import json
import os

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("library_ops.py")
SGLANG = os.path.join(testlib.DATA, "kineto_tracelens-mi300x-sglang-qwen3-8b-prefilldecode.json.gz")


def prof_records(dict_path) -> list[dict]:
    res = testlib.prof("--json", "-c", "all", "--iterations", "all", str(dict_path))
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


def costs_by_op(records) -> dict:
    """{op: {(op_flops, op_bytes, op_flops_dense, params, family)}} of the library ops."""
    out: dict = {}
    for r in records:
        op = r.get("op") or ""
        if ("::" in op and not op.startswith("aten::")) or op in LAYER:
            out.setdefault(op, set()).add((r["op_flops"], r["op_bytes"], r["op_flops_dense"],
                                           r["params"], r["family"]))
    return out


# ---- 1. torch.library ops on the CPU -------------------------------------------------------------
# tests/scripts/library_ops.py: T 16 tokens, hidden 64, Hq 4 and Hkv 2 heads of 16, bf16.
LAYER = {
    # _C::rms_norm(result [16,64], input [16,64], weight [64], epsilon): E 1024, R 16:
    # 4*1024 + 3*16 = 4144; input 2048 + result 2048 + weight 128 = 4224 (ATen's rms_norm model,
    # which costed this op before, counts an rstd too: 4288).
    "_C::rms_norm": (4144, 4224, 4144, "[16,64]bf16,D=64", "norm"),
    # _C::fused_add_rms_norm(input!, residual!, weight, epsilon): 5*1024 + 48 = 5168; input and
    # residual read and written 4*2048 + weight 128 = 8320.
    "_C::fused_add_rms_norm": (5168, 8320, 5168, "+residual", "norm"),
    # _C::rotary_embedding(positions [16] int64, query [16,64], key [16,32], head_size 16,
    # cos_sin_cache [32,16], is_neox): 16*(4 + 2)*16 = 1536 rotated elements, 3 FLOPs each: 4608;
    # positions 128 + rotated parts read and written 4*1536 + 16 cache rows of 16: 512 = 6784.
    "_C::rotary_embedding": (4608, 6784, 4608, "T=16,Hq=4,Hkv=2,D=16,bf16", "pointwise"),
    # flash_attn::_flash_attn_forward(q [1,16,4,16], k, v [1,16,2,16], ..., causal): BH 4, dense
    # 16*16 pairs * 2*(16+16) = 65536, causal 16*17/2 = 136 pairs: 34816; q 2048 + k 1024 + v
    # 1024 + out 2048 + logsumexp 64*4 = 6400.
    "flash_attn::_flash_attn_forward": (34816, 6400, 65536,
                                        "B=1,H=4,Hkv=2,Sq=16,Sk=16,D=16,bf16,causal", "attention"),
    # _C::silu_and_mul(result [16,64], input [16,128]): 1024*(4+1+1) = 6144; 4096 + 2048 = 6144.
    "_C::silu_and_mul": (6144, 6144, 6144, "d=64", "pointwise"),
    # apex's FusedRMSNormAffineFunction(input [16,64], weight [64], normalized_shape, eps,
    # memory_efficient), recorded under its class name: aten::rms_norm's formula: 4144 FLOPs;
    # 2*2048 + 128 + rstd 16*4 = 4288.
    "FusedRMSNormAffineFunction": (4144, 4288, 4144, "[16,64]bf16,D=64", "norm"),
}


@pytest.fixture(scope="module")
def pyprof_capture(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("library_ops")
    res = pyprof_db.profile(tmp, SCRIPT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    oracle = json.loads([line for line in res.stdout.splitlines() if line.startswith("{")][-1])
    return tmp / "net.dict", oracle


@pytest.fixture(scope="module")
def torch_profiler_trace(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("library_ops_kineto")
    trace = tmp / "trace.json"
    res = testlib.run_tool(testlib.PY, SCRIPT, "--torch-profiler", trace, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(trace, tmp / "net.dict")
    return tmp / "net.dict"


def check_layer(dict_path):
    costs = costs_by_op(prof_records(dict_path))
    assert set(costs) == set(LAYER), costs
    for op, (flops, byts, dense, params, family) in LAYER.items():
        assert len(costs[op]) == 1, (op, costs[op])  # both steps cost the same
        got = next(iter(costs[op]))
        assert got[:3] == (flops, byts, dense), (op, got)
        assert params in got[3] and got[4] == family, (op, got)


def test_pyprof_capture_costs_each_library_op_by_its_schema(pyprof_capture):
    dict_path, _ = pyprof_capture
    check_layer(dict_path)
    # The arguments came by the schema's names.
    _, records = testlib.read_dict(dict_path)
    rms = next(r for r in records if r["name"] == "_C::rms_norm")
    assert list(rms["args"]) == ["result", "input", "weight", "epsilon"], rms["args"]


def test_torch_profiler_trace_costs_them_the_same_by_position(torch_profiler_trace):
    check_layer(torch_profiler_trace)
    _, records = testlib.read_dict(torch_profiler_trace)
    rms = next(r for r in records if r["name"] == "_C::rms_norm")
    assert list(rms["args"]) == ["0", "1", "2", "3"], rms["args"]


def test_flash_attn_dense_count_is_flop_counter_modes(pyprof_capture):
    _, oracle = pyprof_capture
    assert oracle["sdpa_dense_flops"] == LAYER["flash_attn::_flash_attn_forward"][2] == 65536


# ---- 2. a Kineto GPU trace with the real ops' argument lists ----------------------------------
BF16, I64, I32, F32, SCALAR = "c10::BFloat16", "long int", "int", "float", "Scalar"


def arg(kind="", dims=(), concrete=""):
    return kind, list(dims), concrete


# (op, arguments as torch.profiler records them: (Input type, Input Dims, Concrete Inputs),
#  op_flops, op_bytes, family). Costs worked out in models/library_ops_test.cpp, whose tables
# hold the same calls.
OPS = [
    # Copied from the vLLM MI300X capture trace (kineto_tracelens-mi300x-vllm-piecewise-graph-
    # capture.json.gz), event by event.
    ("_C::rotary_embedding",
     [arg(I64, [8192]), arg(BF16, [8192, 4096]), arg(BF16, [8192, 512]), arg(SCALAR, [], "64"),
      arg(BF16, [131072, 64]), arg(SCALAR, [], "True")], 113246208, 152109056, "pointwise"),
    ("_C_cache_ops::reshape_and_cache_flash",
     [arg(BF16, [8192, 8, 64]), arg(BF16, [8192, 8, 64]), arg(BF16, [224304, 32, 8, 64]),
      arg(BF16, [224304, 32, 8, 64]), arg(I64, [8192]), arg(), arg(F32), arg(F32)],
     0, 33619976, "movement"),
    ("aiter::rms_norm",
     [arg(BF16, [8192, 2880]), arg(BF16, [2880]), arg(SCALAR, [], "1.0000000000000001e-05"),
      arg(SCALAR, [], "0")], 94396416, 94377600, "norm"),
    ("aiter::rmsnorm2d_fwd_with_add_ck",
     [arg(BF16, [8192, 2880])] * 4 + [arg(BF16, [2880]),
                                      arg(SCALAR, [], "1.0000000000000001e-05"),
                                      arg(SCALAR, [], "0")], 117989376, 188749440, "norm"),
    ("vllm::rocm_unquantized_gemm",
     [arg(BF16, [8192, 2880]), arg(BF16, [5120, 2880]), arg(BF16, [5120])], 241591910400,
     160573440, "matmul"),
    # As vLLM and PyTorch register them (no trace here has them).
    ("vllm::outplace_fused_experts",
     [arg(BF16, [4, 16]), arg(BF16, [8, 64, 16]), arg(BF16, [8, 16, 32]), arg(F32, [4, 2]),
      arg(I32, [4, 2]), arg(), arg(SCALAR, [], "False")], 26304, 24896, "moe"),
    ("_C::static_scaled_fp8_quant",
     [arg("c10::Float8_e4m3fn", [4, 8]), arg(BF16, [4, 8]), arg(F32, [1]), arg()], 96, 100,
     "pointwise"),
    ("symm_mem::multimem_all_reduce_", [arg(BF16, [1024, 4096]), arg(), arg()], 0, 8388608,
     "collectives"),
    ("_vllm_fa2_C::varlen_fwd",
     [arg(BF16, [4, 32, 128]), arg(BF16, [1000, 16, 8, 128]), arg(BF16, [1000, 16, 8, 128]),
      arg(BF16, [4, 32, 128]), arg(I32, [5]), arg(), arg(I32, [4]), arg(), arg(I32, [4, 64]),
      arg(), arg(SCALAR, [], "1"), arg(SCALAR, [], "1000"), arg(SCALAR, [], "0."),
      arg(SCALAR, [], "0.088"), arg(SCALAR, [], "False"), arg(SCALAR, [], "True"),
      arg(SCALAR, [], "-1"), arg(SCALAR, [], "-1"), arg(SCALAR, [], "0."),
      arg(SCALAR, [], "False"), arg()], 65536000, 16451108, "attention"),
    ("flash_attn::_flash_attn_varlen_forward",
     [arg("c10::Half", [256, 8, 64])] * 3 + [
         arg(I32, [3]), arg(I32, [3]), arg(SCALAR, [], "128"), arg(SCALAR, [], "128"),
         arg(SCALAR, [], "0."), arg(SCALAR, [], "0.125"), arg(SCALAR, [], "True"),
         arg(SCALAR, [], "-1"), arg(SCALAR, [], "-1"), arg(SCALAR, [], "0."), arg(),
         arg(SCALAR, [], "False"), arg(), arg(), arg()], 33816576, 1056792, "attention"),
]


def kineto_trace(ops) -> dict:
    """Each op one cpu_op launching one kernel, as torch.profiler writes them."""
    events = []
    for i, (name, args, *_) in enumerate(ops):
        ts, corr = 100 + 100 * i, 1000 + i
        kinds, dims, concrete = zip(*args)
        events += [
            {"ph": "X", "cat": "cpu_op", "name": name, "pid": 10, "tid": 10, "ts": ts, "dur": 50,
             "args": {"External id": i + 1, "Input type": list(kinds), "Input Dims": list(dims),
                      "Concrete Inputs": list(concrete)}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
             "ts": ts + 10, "dur": 5, "args": {"correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": f"kernel_{i}", "pid": 0, "tid": 7, "ts": ts + 20,
             "dur": 10, "args": {"device": 0, "stream": 7, "correlation": corr,
                                 "grid": [1, 1, 1], "block": [128, 1, 1]}},
        ]
    return {"traceEvents": events}


def test_kineto_trace_with_the_real_ops_argument_lists(tmp_path):
    trace = tmp_path / "serving.json"
    trace.write_text(json.dumps(kineto_trace(OPS)))
    testlib.parse_to(trace, tmp_path / "net.dict")
    records = prof_records(tmp_path / "net.dict")
    by_op = {r["op"]: r for r in records}
    for name, _, flops, byts, family in OPS:
        r = by_op[name]
        assert (r["op_flops"], r["op_bytes"], r["family"]) == (flops, byts, family), r
        # The kernel is the op's only one: it carries the whole cost.
        assert (r["flops"], r["bytes"]) == (flops, byts), r


def test_kineto_trace_summary_counts_all_their_time(tmp_path):
    trace = tmp_path / "serving.json"
    trace.write_text(json.dumps(kineto_trace(OPS)))
    testlib.parse_to(trace, tmp_path / "net.dict")
    summary = summary_values(tmp_path / "net.dict")
    assert summary["time covered by a FLOP model %"] == 100.0


def summary_values(dict_path) -> dict:
    res = testlib.prof("--report", "summary", "--formats", "json", str(dict_path))
    return {row["Metric"]: row["Value"] for row in testlib.report_rows(res.stdout)}


# ---- 3. the real SGLang trace --------------------------------------------------------------------
# Qwen3-8B prefill on MI300X, 15 sequences of 1024 tokens (T 15360), bf16. Each distinct call:
# (op, its shapes) -> (op_flops, op_bytes, op_flops_dense).
SGLANG_CALLS = {
    # E = 15360*4096 = 62914560, R 15360: 4E + 3R = 251704320; 2*2E + 4096*2 = 251666432.
    ("aiter::rmsnorm", "[15360,4096],[15360,4096],[4096]"): (251704320, 251666432, 251704320),
    # q/k norms over heads: E 62914560, R 491520 (32 heads): 4E + 3R = 253132800; 4E + 256 =
    # 251658496.
    ("aiter::rmsnorm", "[491520,128],[491520,128],[128]"): (253132800, 251658496, 253132800),
    # k norm, 8 heads: E 15728640, R 122880: 62914560 + 368640 = 63283200; 4E + 256 = 62914816.
    ("aiter::rmsnorm", "[122880,128],[122880,128],[128]"): (63283200, 62914816, 63283200),
    # 5E + 3R = 314618880; four [15360,4096] tensors 8E + 8192 = 503324672.
    ("aiter::add_rmsnorm", "[15360,4096],[15360,4096],[15360,4096],[15360,4096],[4096]"):
        (314618880, 503324672, 314618880),
    # 15360*40*128 rotated elements * 3 = 235929600; 122880 + 4*78643200 + 15360*128*2 =
    # 318627840.
    ("sgl_kernel::rotary_embedding", "[15360],[15360,4096],[15360,1024],[41216,128]"):
        (235929600, 318627840, 235929600),
    # O = 15360*12288: 6·O = 1132462080 FLOPs and bytes (input 4·O + out 2·O).
    ("sgl_kernel::silu_and_mul", "[15360,12288],[15360,24576]"): (1132462080, 1132462080,
                                                                  1132462080),
    # 2 streams of 15360*1024 elements read and written at 2 bytes + indices 122880 = 125952000.
    ("sglang::store_cache", "[15360,1024],[15360,1024],[835874,1024],[835874,1024],[15360]"):
        (0, 125952000, 0),
    # 15 causal sequences of 1024 over 15616 paged keys: 7872000 pairs (dense bound 15728640) *
    # 32 heads * 2*(128+128): 128974848000 (dense 257698037760); q 125829120 + offsets 128 +
    # page indices 62464 + keys and values read 15616*8*512 = 63963136 + out 125829120 =
    # 315683968.
    ("aiter::mha_batch_prefill", "[15360,32,128],[835874,8,128],[835874,8,128],[16],[16],[15616]"):
        (128974848000, 315683968, 257698037760),
}


@pytest.fixture(scope="module")
def sglang(tmp_path_factory):
    if not os.path.exists(SGLANG):
        pytest.skip(f"{SGLANG} is missing")
    tmp = tmp_path_factory.mktemp("sglang")
    testlib.parse_to(SGLANG, tmp / "net.dict")
    return tmp / "net.dict"


def test_sglang_trace_every_custom_op_costed_by_hand(sglang):
    calls = {}
    for r in prof_records(sglang):
        op = r.get("op") or ""
        if "::" in op and not op.startswith(("aten::", "sglang_profiler::")):
            calls.setdefault((op, r["shapes"]), set()).add(
                (r["op_flops"], r["op_bytes"], r["op_flops_dense"]))
    assert set(calls) == set(SGLANG_CALLS)
    for key, cost in SGLANG_CALLS.items():
        assert calls[key] == {cost}, key


def test_sglang_trace_gpu_time_is_all_modelled(sglang):
    summary = summary_values(sglang)
    # 86.0% before these models: the custom ops' 68.8 ms of 492.8 ms had none.
    assert summary["time covered by a FLOP model %"] == 100.0
    # Nothing faster than the MI300X can run.
    assert summary["records above device peak (out of totals)"] == 0


# ---- 4. what a model is missing for, on real traces (docs/prof.md §3, the `unmodelled` report)
# Per trace: its file, the GPU time of its kernels, copies and memsets, and each op no model knows
# with (records, kernel time): the op's own fprop kernels, summed from the net.dict below by hand.
# SGLang: a record_function scope torch.profiler records as an op and aten::arange, 5728 and
# 3485 ns of 492.8 ms (0.0% each), beside 11696 ns of kernels outside every op. The legacy PyProf
# apex LM on a V100 (nvprof): F.multi_head_attention_forward, recorded as one op whose 21 forward
# kernels take 170846 of 7347329 ns, 2.3% (its backward ran aten ops, modelled), and `backward`.
APEX = os.path.join(testlib.DATA, "nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql")
UNMODELLED = {
    "sglang": (SGLANG, 492811563, {
        "sglang_profiler::forward_batch_info_compute_position_triton_340": (1, 5728),
        "aten::arange": (1, 3485)}),
    "apex": (APEX, 7347329, {"multi_head_attention_forward": (21, 170846),
                             "backward": (1, 2464)}),
}


@pytest.mark.parametrize("trace", sorted(UNMODELLED))
def test_real_traces_rank_the_ops_without_a_model_by_hand(trace, tmp_path):
    path, total, ops = UNMODELLED[trace]
    testlib.parse_to(path, tmp_path / "net.dict")
    _, records = testlib.read_dict(tmp_path / "net.dict")
    assert sum(r["duration"] for r in records
               if r["kind"] in ("kernel", "memcpy", "memset")) == total
    for op, (count, time) in ops.items():
        own = [r for r in records if r["kind"] == "kernel" and r.get("op") == op
               and r.get("dir") != "bprop"]
        assert (len(own), sum(r["duration"] for r in own)) == (count, time), op
    res = testlib.prof("--report", "summary,unmodelled,advice", "--iterations", "all", "--formats",
                       "json",
                       str(tmp_path / "net.dict"))
    tables, rows = testlib.report_json(res.stdout)
    table = [r for r in rows if r["table"] == "unmodelled"]
    assert [(r["Rank"], r["Op"], r["Records"], r["Time(ns)"], r["% of time"]) for r in table] == [
        (rank, op, count, time, round(100 * time / total, 1))
        for rank, (op, (count, time)) in enumerate(ops.items(), 1)]
    summary = {r["Metric"]: r["Value"] for r in rows if r["table"] == "summary"}
    op, (count, time) = next(iter(ops.items()))
    assert summary["unmodelled op 1"] == (
        f"{op} {100 * time / total:.1f}% ({time} ns, {count} record{'s' if count > 1 else ''})")
    assert summary["ops without a FLOP model"] == len(ops)
    # Under 5% of the time: the advice stays silent.
    unmodelled = sum(time for _, time in ops.values())
    assert unmodelled / total < 0.05
    assert [r for r in rows if r.get("Rule") == "unmodelled-ops"] == []
