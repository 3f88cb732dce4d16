"""prof's FLOPs on real models run on the CPU, against torch.utils.flop_counter.FlopCounterMode.

tests/scripts/flops_oracle.py runs one training step (forward + backward) under FlopCounterMode,
then the same step under pyprof annotation inside the user range "measured". Here: parse, then
prof --json, and for every op FlopCounterMode counts, the FLOPs of our records of that op (each
op's own model, `op_flops`) must equal FlopCounterMode's; and the FLOPs prof counts for the
families FlopCounterMode models (matmul, conv, attention; each call tree once) must equal its
total.
"""

import collections
import json

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("flops_oracle.py")
ORACLE_FAMILIES = {"matmul", "conv", "attention"}


# ~3 s a model: `-m "not slow"` runs transformer only (matmul and attention).
@pytest.fixture(scope="module", params=testlib.all_but_one_slow(
    ["lenet", "resnet_block", "transformer", "lstm", "mlp"], "transformer"))
def measured(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    oracle = tmp / "oracle.json"
    res = pyprof_db.profile(tmp, SCRIPT, request.param, str(oracle))
    assert res.returncode == 0, res.stderr
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict", timeout=120)
    out = testlib.prof("--json", "-c", "kernel,dir,layer,family,op_flops,flops,flops_dense",
                       tmp / "net.dict").stdout
    records = [json.loads(line) for line in out.splitlines()]
    records = [r for r in records if "measured" in (r["layer"] or "")]
    with open(oracle) as f:
        return request.param, json.load(f), records


def test_each_op_matches_flop_counter(measured):
    model, oracle, records = measured
    ours = collections.Counter()
    for r in records:
        ours[r["kernel"]] += r["op_flops"] or 0
    assert oracle["ops"], f"{model}: FlopCounterMode counted nothing"
    for op, flops in oracle["ops"].items():
        name = "aten::" + op.removeprefix("aten.")
        assert ours[name] == flops, f"{model}: {name}: ours {ours[name]} vs FlopCounterMode {flops}"


def test_call_trees_counted_once(measured):
    """conv2d -> convolution -> _convolution -> mkldnn_convolution all have models; prof counts
    each call tree once, so the total equals FlopCounterMode's (which counts at one level).

    FlopCounterMode (torch 2.13, CPU) has no formula for the CPU flash attention ops, so the
    attention family is checked by hand instead (transformer: batch 4, 4 heads, 16 tokens,
    head dim 16, causal): as FlopCounterMode counts them (`flops_dense`), forward QK^T and PV
    = 2 * 2*B*H*S*S*D = 262144, backward 2.5x that (the five GEMMs of the flash backward, as
    FlopCounterMode's sdpa_backward_flop_count) = 655360; what the causal kernel executes
    (`flops`, docs/ops.md "attention"): the 16*17/2 = 136 query-key pairs its mask keeps of
    256, 139264 forward and 348160 backward."""
    model, oracle, records = measured
    families = set(ORACLE_FAMILIES)
    if not any("attention" in op for op in oracle["ops"]):
        families.discard("attention")
    counted = sum(r["flops"] or 0 for r in records if r["family"] in families)
    assert counted == oracle["total"], f"{model}: ours {counted} vs {oracle['total']}"
    attention, dense = collections.Counter(), collections.Counter()
    for r in records:
        if r["family"] == "attention" and r["flops"]:
            attention[r["dir"]] += r["flops"]
            dense[r["dir"]] += r["flops_dense"]
    if model == "transformer":
        b, h, s, d = 4, 4, 16, 16
        assert dense["fprop"] == 2 * 2 * b * h * s * s * d == 262144
        assert dense["bprop"] == 655360
        pairs = s * (s + 1) // 2
        assert attention["fprop"] == 2 * 2 * b * h * pairs * d == 139264
        assert attention["bprop"] == 2 * b * h * pairs * 5 * d == 348160
    else:
        assert not attention
