"""A real training step under torch.autocast (CPU, bfloat16), profiled, parsed and costed.

tests/scripts/autocast_step.py: Conv2d(8, 12, 3, padding=1) on x [8, 8, 8, 8] (no gradient),
ReLU, Flatten, Linear(768, 12). Under autocast each of conv2d and linear is recorded twice: the
dispatcher's autocast wrapper (fp32 arguments) holds the casts of its inputs and a second call
of the same op on the bf16 copies, the one that really ran. Costs are checked by hand against
docs/ops.md with 2-byte elements.
"""

import json

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

BF16 = 2


@pytest.fixture(scope="module")
def autocast_dict(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("autocast")
    res = pyprof_db.profile(tmp, testlib.script("autocast_step.py"))
    assert res.returncode == 0, res.stderr
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    return tmp / "net.dict"


def test_backward_nodes_pair_with_the_ops_that_created_them(autocast_dict):
    """ConvolutionBackward0 shares its seq with the cast of the input (which needs no gradient,
    so its cast creates no node) and pairs with aten::convolution, not with aten::_to_copy."""
    _, records = testlib.read_dict(autocast_dict)
    creators = {"ConvolutionBackward0": "aten::convolution", "AddmmBackward0": "aten::addmm",
                "ToCopyBackward0": "aten::_to_copy", "TBackward0": "aten::t",
                "ReluBackward0": "aten::relu", "ViewBackward0": "aten::view",
                "SumBackward0": "aten::sum"}
    nodes = [r for r in records if r["name"] in creators]
    assert {r["name"] for r in nodes} == set(creators)
    for r in nodes:
        assert r["paired"] and r["op"] == creators[r["name"]], r
    conv = next(r for r in nodes if r["name"] == "ConvolutionBackward0")
    assert conv["args"]["input"]["dtype"] == "bfloat16" and conv["module"] == "Sequential.0"
    # prof: the convolution's weight and bias gradients (x needs none) under its bprop:
    # 2 * 8 * 12 * 8 * 8 * (8 * 3 * 3) = 884736; no FLOPs under the casts' bprop.
    out = testlib.prof("--report", "op", "--formats", "json", autocast_dict).stdout
    rows = testlib.report_rows(out)
    flops = {(row["Op"], row["Direction"]): row["FLOPs(FMA=2)"] for row in rows}
    assert flops[("aten::convolution", "bprop")] == 884736
    assert flops.get(("aten::_to_copy", "bprop"), 0) == 0


def test_autocast_ops_are_costed_in_the_dtype_they_ran_in(autocast_dict):
    out = testlib.prof("--json", "-c", "dir,kernel,family,dtype,flops,bytes,tc_eligible",
                       autocast_dict).stdout
    records = [json.loads(line) for line in out.splitlines()]
    gemms = [r for r in records if r["dir"] == "fprop" and r["family"] in ("conv", "matmul")
             and (r["flops"] or r["bytes"])]
    # conv: 2 * N * Cout * H * W * (Cin * 3 * 3) FLOPs; bytes x + W + bias + out, 2 bytes each:
    # (8*8*8*8 + 12*8*3*3 + 12 + 8*12*8*8) * 2 = (4096 + 864 + 12 + 6144) * 2 = 22232. Cout = 12
    # is no multiple of 8: no Tensor Cores in bf16 (in fp32, as TF32, it would be: 4 | 12, 4 | 8).
    # linear: 2 * M * N * K = 2 * 8 * 12 * 768; bytes (MK + NK + N + MN) * 2 =
    # (6144 + 9216 + 12 + 96) * 2 = 30936. A CPU capture's records are no Tensor Core question:
    # tc_eligible is null (issue 38).
    assert [(r["kernel"], r["dtype"], r["flops"], r["bytes"], r["tc_eligible"]) for r in gemms] == [
        ("aten::conv2d", "bfloat16", 2 * 8 * 12 * 8 * 8 * 72, 22232, None),
        ("aten::linear", "bfloat16", 2 * 8 * 12 * 768, 30936, None)]
    # The casts autocast made are counted as the copies they are: per element 4 bytes read and
    # 2 written (x, conv weight and bias, linear weight and bias), and the final .float() of the
    # [8, 12] output 2 read and 4 written.
    casts = sum(r["bytes"] for r in records if r["dir"] == "fprop" and r["kernel"] == "aten::to")
    assert casts == (4096 + 864 + 12 + 12 * 768 + 12) * (4 + BF16) + 8 * 12 * (BF16 + 4)


def test_op_report_says_where_autocast_costs_are_counted(autocast_dict):
    """The autocast wrapper of conv2d (fp32 arguments) is modelled but not counted: the bf16
    call it holds is ("in callee", not "in caller"); the wrapper's and the inner call's callees
    (aten::convolution) are counted by the inner call ("in caller"). The conv2d row's counted
    time is the inner call's inclusive time alone."""
    _, records = testlib.read_dict(autocast_dict)
    out = testlib.prof("--report", "op", "--formats", "json", autocast_dict).stdout
    rows = {(r["Op"], r["Direction"]): r for r in testlib.report_rows(out)}
    conv = rows[("aten::conv2d", "fprop")]
    assert conv["Modeled"] == "yes/in callee" and conv["Records"] == 2
    inner = [r for r in records if r["name"] == "aten::conv2d"
             and r["args"]["input"]["dtype"] == "bfloat16"]
    assert len(inner) == 1
    assert conv["Counted time(ns)"] == inner[0]["duration"]
    assert conv["FLOPs(FMA=2)"] == 2 * 8 * 12 * 8 * 8 * 72
    assert rows[("aten::convolution", "fprop")]["Modeled"] == "in caller"
    assert rows[("aten::linear", "fprop")]["Modeled"] == "yes/in callee"
