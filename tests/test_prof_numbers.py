"""prof's numbers stay honest on inputs that break naive arithmetic (issue 11, items 5, 14, 16):
costs that overflow 64-bit counts and tensors with negative dimensions are "na" and counted;
records faster than their device can run are flagged and kept out of the totals; the op
report's row of unattributed records says what it holds."""

import csv
import io
import json
import os

import pytest

import testlib
from testlib import DATA, parse_to, prof

pytestmark = pytest.mark.needs_build

GPU_HEADER = {"pyprof_dict": 1, "source": "hand.sqlite", "format": "nsys", "records": "gpu"}
# 3037000500^2 is the first square past 2^63: numel of [H, H] does not fit int64.
H = 3037000500


def t(shape, dtype="float32"):
    """A tensor argument as parse writes pyprof markers' args (docs/formats.md §1.1)."""
    stride, s = [], 1
    for d in reversed(shape):
        stride.insert(0, s)
        s *= max(d, 1)
    return {"shape": shape, "dtype": dtype, "stride": stride, "device": "cuda:0"}


def kernel(instance, op, args, name="k", duration=1000):
    return {"kind": "kernel", "name": name, "long_name": name, "device": 0, "context": 1,
            "stream": 7, "grid": [1, 1, 1], "block": [128, 1, 1], "start": instance * 10000,
            "duration": duration, "correlation": instance, "pid": 1, "tid": 1,
            "op": op, "dir": "fprop", "op_id": instance, "dialect": "pyprof", "seq": -1,
            "sub": 0, "instance": instance, "args": args}


def dict_text(records, header=GPU_HEADER):
    return "".join(json.dumps(r) + "\n" for r in [header, *records])


def summary_of(text):
    """The summary's metrics as CSV writes them (raw text: "4000", "na")."""
    rows = csv.reader(prof("--report", "summary", "--formats", "csv", "-",
                           stdin=text).stdout.splitlines())
    next(rows)  # Metric,Value
    return dict(rows)


# One op of each family whose costs multiply element counts, with a shape past int64.
HUGE = [
    ("aten::mm", {"self": t([H, H]), "mat2": t([H, H])}),
    # numel fits int64 (2^62), but the FLOPs (2*2^93) and bytes (3*2^64) do not.
    ("aten::mm", {"self": t([2**31, 2**31]), "mat2": t([2**31, 2**31])}),
    ("aten::addmm", {"self": t([H]), "mat1": t([H, 64]), "mat2": t([64, H]), "beta": 1,
                     "alpha": 1}),
    ("aten::bmm", {"self": t([H, H, 2]), "mat2": t([H, 2, 2])}),
    ("aten::convolution", {"input": t([1, 1, H, H]), "weight": t([1, 1, 3, 3]), "bias": None,
                           "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
                           "transposed": False, "output_padding": [0, 0], "groups": 1}),
    ("aten::add", {"self": t([H, H]), "other": t([H, H]), "alpha": 1}),
    ("aten::relu", {"self": t([H, H])}),
    ("aten::mul", {"self": t([H, 1]), "other": t([1, H])}),  # broadcast output [H, H]
    ("aten::sum", {"self": t([H, H]), "dim": [1], "keepdim": False, "dtype": None}),
    ("aten::_softmax", {"self": t([H, H]), "dim": 1, "half_to_float": False}),
    ("aten::native_layer_norm", {"input": t([H, H]), "normalized_shape": [H],
                                 "weight": t([H]), "bias": t([H]), "eps": 1e-5}),
    ("aten::copy_", {"self": t([H, H]), "src": t([H, H]), "non_blocking": False}),
    ("aten::native_dropout", {"input": t([H, H]), "p": 0.5, "train": True}),
    ("aten::mse_loss", {"self": t([H, H]), "target": t([H, H]), "reduction": 1}),
    ("aten::max_pool2d_with_indices", {"self": t([1, 1, H, H]), "kernel_size": [2, 2],
                                       "stride": [2, 2], "padding": [0, 0],
                                       "dilation": [1, 1], "ceil_mode": False}),
]
# A small GEMM whose cost is known by hand: 2*32*64*128 FLOPs; (32*64 + 64*128 + 32*128) * 4 B.
SMALL = ("aten::mm", {"self": t([32, 64]), "mat2": t([64, 128])})
SMALL_FLOPS, SMALL_BYTES = 524288, 57344


def shrunk(value):
    """`value` with every size past 2^31 made 8."""
    if isinstance(value, dict):
        return {k: shrunk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shrunk(v) for v in value]
    return 8 if type(value) is int and value >= 2**31 else value


def test_the_huge_ops_have_models():
    """Each op of HUGE is modelled at an ordinary size: its "na" below is the overflow's."""
    records = [kernel(i + 1, op, shrunk(args)) for i, (op, args) in enumerate(HUGE)]
    rows = [json.loads(line) for line in prof("--json", "-c", "op,flops,bytes", "-",
                                              stdin=dict_text(records)).stdout.splitlines()]
    assert all(r["flops"] is not None and r["bytes"] > 0 for r in rows), rows


def test_overflowing_costs_are_na_counted_and_out_of_totals():
    records = [kernel(1, *SMALL)] + [kernel(i + 2, op, args) for i, (op, args) in enumerate(HUGE)]
    text = dict_text(records)
    res = prof("--json", "-c", "op,flops,bytes,op_flops,op_bytes,params", "-", stdin=text)
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(rows) == 1 + len(HUGE)
    assert (rows[0]["flops"], rows[0]["bytes"]) == (SMALL_FLOPS, SMALL_BYTES)
    for row, (op, _) in zip(rows[1:], HUGE):
        assert row["op"] == op
        for key in ("flops", "bytes", "op_flops", "op_bytes"):
            assert row[key] is None, f"{op}: {key} = {row[key]} (expected na)"
    # Warned once, with the count.
    warnings = [line for line in res.stderr.splitlines() if "overflow" in line]
    assert len(warnings) == 1, res.stderr
    assert f"{len(HUGE)} records" in warnings[0], warnings[0]
    assert "first: line 3, aten::mm, overflow: M=3037000500,N=3037000500" in warnings[0]
    summary = summary_of(text)
    assert summary["FLOPs (FMA=2)"] == str(SMALL_FLOPS)
    assert summary["bytes (ideal DRAM)"] == str(SMALL_BYTES)


def test_negative_dimensions_are_rejected_not_multiplied():
    records = [kernel(1, *SMALL),
               kernel(2, "aten::mm", {"self": t([-32, 64]), "mat2": t([64, -128])}),
               kernel(3, "aten::relu", {"self": t([-5, 3])}),
               kernel(4, "aten::add", {"self": t([4, -1]), "other": t([4, -1]), "alpha": 1})]
    text = dict_text(records)
    res = prof("--json", "-c", "op,flops,bytes,params", "-", stdin=text)
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    for row in rows[1:]:
        assert (row["flops"], row["bytes"]) == (None, None), row
    warnings = [line for line in res.stderr.splitlines() if "negative dimension" in line]
    assert len(warnings) == 1 and "3 records" in warnings[0], res.stderr
    assert "negative dimension -32 in shape [-32,64]" in warnings[0]
    summary = summary_of(text)
    assert summary["FLOPs (FMA=2)"] == str(SMALL_FLOPS)
    assert summary["bytes (ideal DRAM)"] == str(SMALL_BYTES)


LENET = os.path.join(DATA, "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite")
NVFUSER = os.path.join(DATA, "nsys-2024.6.2_nvfuser-nvtx_report1.sqlite")


@pytest.fixture(scope="module")
def lenet_dict(tmp_path_factory):
    path = tmp_path_factory.mktemp("lenet") / "net.dict"
    parse_to(LENET, path)
    return path


def test_real_traces_have_no_record_above_peak(lenet_dict, tmp_path):
    """The real traces' devices (RTX 2070 SUPER, 448 GB/s; H200, 4.9 TB/s) run every record
    below peak: nothing is flagged, and the summary says the check ran."""
    nvfuser = tmp_path / "nvfuser.dict"
    parse_to(NVFUSER, nvfuser)
    for path in (lenet_dict, nvfuser):
        res = prof("--csv", "-c", "kernel,flag", path)
        rows = list(csv.DictReader(io.StringIO(res.stdout)))
        assert rows and all(r["Flag"] == "-" for r in rows), path
        assert "peak" not in res.stderr
        summary = summary_of(open(path).read())
        assert summary["records above device peak (out of totals)"] == "0"


def test_memset_faster_than_the_device_is_flagged_and_out_of_totals(lenet_dict):
    """A CUPTI artefact seen in a real nsys export: a memset of 4,000,000,000 bytes in 1,120 ns
    (3,571,428 GB/s). Here it is one of the real LeNet trace's memsets with those numbers, on its
    RTX 2070 SUPER (448 GB/s)."""
    lines = open(lenet_dict).read().splitlines()
    before = summary_of("\n".join(lines) + "\n")
    index = next(i for i, line in enumerate(lines) if json.loads(line).get("kind") == "memset")
    memset = json.loads(lines[index])
    original_bytes = memset["bytes"]
    memset["bytes"], memset["duration"] = 4_000_000_000, 1120
    lines[index] = json.dumps(memset)
    text = "\n".join(lines) + "\n"
    res = prof("--csv", "-c", "kernel,bytes,gbps,flag", "-", stdin=text)
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    flagged = [r for r in rows if r["Flag"] != "-"]
    assert len(flagged) == 1 and flagged[0]["Kernel"] == "[CUDA memset]", flagged
    assert flagged[0]["Flag"] == "above-peak"
    assert flagged[0]["GB/s"] == "3571428.6" and flagged[0]["Bytes(ideal DRAM)"] == "4000000000"
    warnings = [line for line in res.stderr.splitlines() if "peak" in line]
    assert len(warnings) == 1 and "1 record" in warnings[0], res.stderr
    after = summary_of(text)
    assert after["records above device peak (out of totals)"] == "1"
    # Out of the totals: the bytes are the real trace's, less the original memset's.
    assert int(after["bytes (ideal DRAM)"]) == int(before["bytes (ideal DRAM)"]) - original_bytes
    assert after["FLOPs (FMA=2)"] == before["FLOPs (FMA=2)"]


NVPROF_LM = os.path.join(DATA, "nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql")


def test_nvprof_lm_memset_faster_than_its_v100_is_flagged(tmp_path):
    """The real nvprof LM trace (CUDA 10.1) holds a memset of 93,178,400 B in 1,376 ns: 67,717
    GB/s, 75x its Tesla V100-SXM2-16GB's 898 GB/s (read from nvprof's DEVICE table). It is
    flagged and left out of the totals; every other record stays below peak."""
    path = tmp_path / "lm.dict"
    parse_to(NVPROF_LM, path)
    lines = open(path).read().splitlines()
    header = json.loads(lines[0])
    assert [(d["name"], d["memory_bandwidth"]) for d in header["devices"]] == [
        ("Tesla V100-SXM2-16GB", 898_048_000_000)]
    assert 93_178_400 / 1376 > 10 * 898.048  # GB/s: over the 10x margin, by hand
    res = prof("--csv", "-c", "kernel,op,bytes,gbps,flag", path)
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert len(rows) == 189
    flagged = [r for r in rows if r["Flag"] != "-"]
    assert flagged == [{"Kernel": "[CUDA memset]", "Op": "cross_entropy",
                        "Bytes(ideal DRAM)": "93178400", "GB/s": "67716.9",
                        "Flag": "above-peak"}], flagged
    warnings = [line for line in res.stderr.splitlines() if "peak" in line]
    assert len(warnings) == 1 and "1 record" in warnings[0], res.stderr
    # The oracle for the totals: the same records without the header's devices (no peak known,
    # nothing checked), less the memset's bytes.
    unchecked = dict(header)
    del unchecked["devices"]
    before = summary_of("\n".join([json.dumps(unchecked), *lines[1:]]) + "\n")
    after = summary_of("\n".join(lines) + "\n")
    assert "records above device peak (out of totals)" not in before
    assert after["records above device peak (out of totals)"] == "1"
    assert int(after["bytes (ideal DRAM)"]) == int(before["bytes (ideal DRAM)"]) - 93_178_400
    assert after["FLOPs (FMA=2)"] == before["FLOPs (FMA=2)"]


def test_unattributed_row_of_the_op_report(tmp_path):
    """nvFuser's trace: 17 of its 19 kernels, its memcpy and its memset run outside any op. The
    op report's (unattributed) row counts each record as its own instance, and its Modeled
    column says that only the copies have a cost."""
    path = tmp_path / "nvfuser.dict"
    parse_to(NVFUSER, path)
    records = [json.loads(line) for line in open(path).read().splitlines()[1:]]
    records = [r for r in records if r["kind"] != "sync"]  # not records of prof's reports
    loose = [r for r in records if r["op"] is None]
    ops = list(csv.DictReader(io.StringIO(prof("--report", "op", "--formats", "csv",
                                               path).stdout)))
    row = next(r for r in ops if r["Op"] == "(unattributed)")
    durations = [r["duration"] for r in loose]
    assert row["Records"] == row["Instances"] == str(len(loose))
    assert row["Total(ns)"] == str(sum(durations))
    assert row["Avg/instance(ns)"] == str(sum(durations) // len(loose))
    assert (row["Min/instance(ns)"], row["Max/instance(ns)"]) == (str(min(durations)),
                                                                  str(max(durations)))
    kinds = {r["kind"] for r in loose}
    assert "kernel" in kinds and kinds & {"memcpy", "memset"}
    assert row["Modeled"] == "partly"
    # A row of kernels only, none modelled: "no".
    only_kernels = dict_text([kernel(1, None, None, duration=100),
                              kernel(2, None, None, duration=300)])
    ops = list(csv.DictReader(io.StringIO(prof("--report", "op", "--formats", "csv", "-",
                                               stdin=only_kernels).stdout)))
    assert ops == [{**ops[0], "Op": "(unattributed)", "Instances": "2", "Records": "2",
                    "Avg/instance(ns)": "200", "Min/instance(ns)": "100",
                    "Max/instance(ns)": "300", "Modeled": "no"}]


def test_flop_rate_above_peak_compute_is_flagged():
    """The H200 of the real nvFuser trace's header: its datasheet fp16 Tensor Core peak is 989.5
    TFLOP/s dense (prof/gpu_peaks.txt). An fp16 GEMM of 2*4096^3 FLOPs in 150 us (916 TFLOP/s)
    is plausible and counted; in 100 us (1374 TFLOP/s, 1.39x the fp16 peak) or 100 ns it is
    impossible: flagged and left out of the totals. (The check before issue 30 compared every
    record with 10x the densest mode, FP8's 2141 TFLOP/s by SMs x clock, and let 1374 pass.)"""
    header = {**GPU_HEADER, "devices": [{"id": 0, "name": "NVIDIA H200", "sm_count": 132,
                                         "clock_hz": 1980000000,
                                         "memory_bandwidth": 4916736000000,
                                         "total_memory": 150137864192,
                                         "compute_capability": [9, 0]}]}
    gemm = ("aten::mm", {"self": t([4096, 4096], "float16"), "mat2": t([4096, 4096], "float16")})
    flops = 2 * 4096 ** 3
    text = dict_text([kernel(1, *gemm, duration=150_000), kernel(2, *gemm, duration=100_000),
                      kernel(3, *gemm, duration=100)], header)
    res = prof("--csv", "-c", "op,flops,tflops,flag", "-", stdin=text)
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [r["Flag"] for r in rows] == ["-", "above-peak", "above-peak"]
    assert [r["TFLOP/s"] for r in rows] == ["916.260", "1374.390", "1374389.535"]
    summary = summary_of(text)
    assert summary["FLOPs (FMA=2)"] == str(flops)
    assert summary["records above device peak (out of totals)"] == "2"
    warnings = [line for line in res.stderr.splitlines() if "faster than" in line]
    assert len(warnings) == 1 and "2 records" in warnings[0] and "(float16)" in warnings[0]
    assert "peak 4916.7 GB/s, 989.5 TFLOP/s" in warnings[0], warnings


def test_flop_rate_alone_is_checked():
    """A GEMM with few bytes per FLOP: [8192, 8192] x [8192, 8192] fp16 (1.1e12 FLOPs, 402 MB)
    in 20 us: 20,133 GB/s is 4.1x the H200's bandwidth (under the 10x margin), but 54,976
    TFLOP/s is 25.7x its 2141 TFLOP/s: flagged by its FLOP rate alone."""
    header = {**GPU_HEADER, "devices": [{"id": 0, "name": "NVIDIA H200", "sm_count": 132,
                                         "clock_hz": 1980000000,
                                         "memory_bandwidth": 4916736000000,
                                         "compute_capability": [9, 0]}]}
    gemm = ("aten::mm", {"self": t([8192, 8192], "float16"), "mat2": t([8192, 8192], "float16")})
    text = dict_text([kernel(1, *gemm, duration=20_000)], header)
    rows = list(csv.DictReader(io.StringIO(prof("--csv", "-c", "gbps,tflops,flag", "-",
                                                stdin=text).stdout)))
    assert rows == [{"GB/s": "20132.7", "TFLOP/s": "54975.581", "Flag": "above-peak"}]


V100 = {**GPU_HEADER, "devices": [{"id": 0, "name": "Tesla V100-SXM2-16GB", "sm_count": 80,
                                   "clock_hz": 1530000000, "memory_bandwidth": 898048000000,
                                   "total_memory": 16945512448, "compute_capability": [7, 0]}]}


def test_a_rate_above_its_math_modes_peak_is_flagged():
    """A V100 SXM2 (datasheet: fp32 15.7 TFLOP/s, fp16 Tensor Cores 125, no TF32): an fp32 GEMM
    of 2*4096^3 FLOPs in 2.75 ms (50 TFLOP/s) runs 3.2x what its fp32 units can: flagged. At 14
    TFLOP/s it is counted, and so is the same GEMM in fp16 at 50 TFLOP/s (Tensor Cores). The
    check before issue 30 (10x the densest mode, fp16's 125 TFLOP/s) let all three pass."""
    def gemm(dtype):
        return ("aten::mm", {"self": t([4096, 4096], dtype), "mat2": t([4096, 4096], dtype)})
    text = dict_text([kernel(1, *gemm("float32"), duration=2_748_779),
                      kernel(2, *gemm("float32"), duration=9_817_068),
                      kernel(3, *gemm("float16"), duration=2_748_779)], V100)
    res = prof("--csv", "-c", "params,tflops,flag", "-", stdin=text)
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["TFLOP/s"], r["Flag"]) for r in rows] == [
        ("50.000", "above-peak"), ("14.000", "-"), ("50.000", "-")], rows
    assert "peak 898.0 GB/s, 15.7 TFLOP/s" in res.stderr, res.stderr


def test_a_short_records_rate_is_judged_with_the_timer_step():
    """Real traces' durations come in steps of the GPU timer, 32 ns (86-87% of the durations of
    the nvprof V100, nsys RTX 2070 SUPER and H200 traces in tests/data are multiples of 32 ns),
    and a record's start and end may each be late by a step: its FLOP rate is judged over its
    duration plus 64 ns. An fp32 GEMM [64, 64] x [64, 704] (5,767,168 FLOPs) in 300 ns reads
    19.2 TFLOP/s on the V100, over its 15.7 fp32 peak, but in 364 ns it would be 15.8: not
    flagged. In 200 ns (28.8 TFLOP/s; 21.8 in 264 ns, over 1.25x the peak) it is."""
    gemm = ("aten::mm", {"self": t([64, 64]), "mat2": t([64, 704])})
    text = dict_text([kernel(1, *gemm, duration=300), kernel(2, *gemm, duration=200)], V100)
    rows = list(csv.DictReader(io.StringIO(prof("--csv", "-c", "flops,tflops,flag", "-",
                                                stdin=text).stdout)))
    assert [(r["FLOPs(FMA=2)"], r["TFLOP/s"], r["Flag"]) for r in rows] == [
        ("5767168", "19.224", "-"), ("5767168", "28.836", "above-peak")], rows


def test_a_causal_attention_kernels_rate_is_over_what_it_executed():
    """TraceLens's Qwen1.5 H100 example: causal flash attention on [16, 16, 559, 64] bf16. The
    kernel skips the score blocks the mask hides: it executes the 559*560/2 query-key pairs the
    mask keeps, 10,257,694,720 FLOPs (TraceLens: 10.24 GFLOP, half the dense count), where
    FlopCounterMode counts all 559*559, 20,478,754,816. In 12 us that is 854.8 TFLOP/s, 86% of
    the H100's 989.4 TFLOP/s bf16 peak; over the dense count it read 1706.6, a rate past the
    peak that no kernel runs at. `flops` (and every rate and total) is what ran; `flops_dense`
    and `op_flops_dense` keep FlopCounterMode's count, and the summary gives both."""
    header = {**GPU_HEADER, "devices": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
                                         "sm_count": 132, "clock_hz": 1980000000,
                                         "memory_bandwidth": 3352320000000,
                                         "compute_capability": [9, 0]}]}
    qkv = t([16, 16, 559, 64], "bfloat16")
    flash = ("aten::_scaled_dot_product_flash_attention",
             {"query": qkv, "key": qkv, "value": qkv, "dropout_p": 0.0, "is_causal": True,
              "return_debug_mask": False, "scale": None})
    text = dict_text([kernel(1, *flash, name="flash_fwd_kernel", duration=12_000)], header)
    res = prof("--json", "-c", "params,flops,flops_dense,op_flops_dense,tflops,flag", "-",
               stdin=text)
    (row,) = [json.loads(line) for line in res.stdout.splitlines()]
    assert row == {"params": "B=16,H=16,Sq=559,Sk=559,D=64,bf16,causal",
                   "flops": 10_257_694_720, "flops_dense": 20_478_754_816,
                   "op_flops_dense": 20_478_754_816, "tflops": 854.808, "flag": None}, row
    summary = summary_of(text)
    assert summary["FLOPs (FMA=2)"] == "10257694720"
    assert summary["FLOPs as FlopCounterMode counts them (causal attention dense)"] == \
        "20478754816"
    # Without the mask both counts are the dense one, and the summary has one row.
    plain = dict_text([kernel(1, flash[0], {**flash[1], "is_causal": False},
                              name="flash_fwd_kernel", duration=24_000)], header)
    summary = summary_of(plain)
    assert summary["FLOPs (FMA=2)"] == "20478754816"
    assert "FLOPs as FlopCounterMode counts them (causal attention dense)" not in summary


# A name written by a hostile or broken program: ESC [2J clears a terminal, U+009B is the C1
# CSI, NUL ends C strings. json.dumps writes them as \u001b, \u009b, \u0000 and parse's JSON
# reader gives prof the raw bytes.
HOSTILE = "evil\x1b[2J\x9b\x00name"


def raw_control_bytes(text):
    """The C0/C1 control characters (and DEL) of `text` other than line ends."""
    return [c for c in text if c != "\n" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)]


def test_warnings_escape_trace_text():
    """Issue 11 item 9 for prof: every warning that quotes the trace (an overflowing cost's
    params, which name the dtype the trace wrote; an above-peak kernel and device; a record with
    a bad time) shows control characters as \\xNN / \\uNNNN, never raw; standard output keeps
    them as they are."""
    header = {**GPU_HEADER, "devices": [{"id": 0, "name": "GPU" + HOSTILE, "sm_count": 132,
                                         "clock_hz": 1980000000,
                                         "memory_bandwidth": 4916736000000,
                                         "compute_capability": [9, 0]}]}
    gemm = ("aten::mm", {"self": t([4096, 4096], "float16"), "mat2": t([4096, 4096], "float16")})
    records = [kernel(1, "aten::mm", {"self": t([H, H], HOSTILE), "mat2": t([H, H], HOSTILE)}),
               kernel(2, *gemm, name="k" + HOSTILE, duration=100),
               kernel(3, *SMALL, name="t" + HOSTILE, duration=-5)]
    res = prof("--csv", "-c", "kernel,params", "-", stdin=dict_text(records, header))
    warnings = [line for line in res.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 3, res.stderr
    assert raw_control_bytes(res.stderr) == [], repr(res.stderr)
    escaped = "evil\\x1b[2J\\u009b\\x00name"
    assert f"K=3037000500,{escaped}" in next(w for w in warnings if "64 bits" in w)
    above_peak = next(w for w in warnings if "peak" in w)
    assert f"k{escaped}" in above_peak and f"GPU{escaped}" in above_peak, above_peak
    assert f"t{escaped}" in next(w for w in warnings if "time" in w)
    # The table is data, not a message: its names are the trace's, byte for byte.
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [r["Kernel"] for r in rows] == ["k", "k" + HOSTILE, "t" + HOSTILE]
    assert rows[2]["Params"] == "M=32,N=128,K=64,fp32"


def test_records_with_impossible_times_are_flagged_and_out_of_totals():
    """A net.dict from elsewhere (hand-edited, an older pyprof, a fuzzer) with a negative
    duration, a duration past 2^50 ns (13 days), a start past 2^62, a negative start and a
    duration past int64: each record's time is unknown (duration 0, flag bad-time, out of every
    time sum and of the totals), warned once with the count and the first line; the summary is
    the good records' alone."""
    good = [kernel(1, *SMALL, duration=1000), kernel(2, *SMALL, duration=3000)]
    good[1]["start"] = 20000  # records 1 and 2: [10000, 11000) and [20000, 23000)
    bad = [kernel(3, *SMALL, duration=-7),
           kernel(4, *SMALL, duration=2**62),
           {**kernel(5, *SMALL, duration=1000), "start": 2**63 - 10},
           {**kernel(6, *SMALL, duration=1000), "start": -2**63},
           kernel(7, *SMALL, duration=2**64)]  # past int64: not a number prof can hold
    records = good[:1] + bad + good[1:]
    text = dict_text(records)
    res = prof("--csv", "-c", "idx,duration,flag", "-", stdin=text)
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [(r["Idx"], r["Duration(ns)"], r["Flag"]) for r in rows] == [
        ("1", "1000", "-"), ("2", "0", "bad-time"), ("3", "0", "bad-time"),
        ("4", "0", "bad-time"), ("5", "0", "bad-time"), ("6", "0", "bad-time"),
        ("7", "3000", "-")]
    warnings = [line for line in res.stderr.splitlines() if "time" in line]
    assert len(warnings) == 1, res.stderr
    assert "5 records" in warnings[0] and "first: line 3" in warnings[0], warnings[0]
    summary = summary_of(text)
    # By hand: the two good kernels, 1000 + 3000 ns, from 10000 to 23000, and their two GEMMs
    # (a record without a credible time is out of the FLOP totals too, as above-peak ones are:
    # the achieved rate divides the counted FLOPs by the time they took).
    assert summary["records"] == "7"
    assert summary["records with an impossible time (out of totals)"] == "5"
    assert summary["wall time (ns)"] == "13000"
    assert summary["GPU busy (ns)"] == "4000"
    assert summary["kernel time (ns)"] == "4000"
    assert summary["FLOPs (FMA=2)"] == str(2 * SMALL_FLOPS)
    assert summary["bytes (ideal DRAM)"] == str(2 * SMALL_BYTES)
    assert summary["counted time (ns)"] == "4000"
    assert summary["achieved TFLOP/s (over counted time)"] == f"{2 * SMALL_FLOPS / 4000 / 1e3:.3f}"
    ops = testlib.report_rows(prof("--report", "op", "--formats", "json", "-",
                                   stdin=text).stdout)
    assert [(o["Op"], o["Instances"], o["Total(ns)"]) for o in ops] == [("aten::mm", 7, 4000)]


def test_time_sums_cannot_overflow():
    """8200 records of 2^50 ns (13 days) each, every one within the per-record bound: their sum,
    2^62.9, would wrap int64's 2^63 in the reports. The reader keeps the file's durations within
    2^62 ns: the first 4096 records (exactly 2^62) keep their times, the other 4104 are bad-time;
    the totals are 2^62, not a wrapped negative number."""
    records = [{"kind": "kernel", "name": "k", "long_name": "k", "device": 0, "stream": 7,
                "start": i * 10, "duration": 2**50} for i in range(8200)]
    text = dict_text(records)
    summary = summary_of(text)
    assert summary["kernel time (ns)"] == str(2**62)
    assert summary["records with an impossible time (out of totals)"] == "4104"
    res = prof("--report", "kernel", "--formats", "json", "-", stdin=text)
    [kernels] = testlib.report_rows(res.stdout)
    assert (kernels["Count"], kernels["Total(ns)"]) == (8200, 2**62)
    warnings = [line for line in res.stderr.splitlines() if "time" in line]
    assert len(warnings) == 1 and "4104 records" in warnings[0], res.stderr
    assert "first: line 4098, k: the durations of the records up to it add up past 2^62 ns" \
        in warnings[0], warnings[0]
