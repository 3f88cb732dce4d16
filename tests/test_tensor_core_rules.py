"""Tensor Core (matrix core) evidence on real AMD traces, end to end: prof's `TC` column and the
advice rules that read it (prof/tensor_core_kernels.txt, issue 30 item 6). The C++ tests
(prof/tensor_cores_test.cpp) check every kernel name of these traces against a hand-checked
list; here the reports a user reads are checked."""

import json
import os

import pytest

import testlib

pytestmark = pytest.mark.needs_build

REAL = os.path.join(testlib.SHARED_TRACES, "real")
RESNET = os.path.join(REAL, "kineto_tracelens-mi300x-resnet-act-checkpoint-ddp.json.gz")


@pytest.fixture(scope="module")
def resnet_dict(tmp_path_factory):
    if not os.path.exists(RESNET):
        pytest.skip("../shared/traces/real is beside the checkout")
    path = tmp_path_factory.mktemp("resnet") / "net.dict"
    testlib.parse_to(RESNET, path, timeout=300)
    return path


def report(path, name, *extra):
    return testlib.report_rows(testlib.prof(
        "--report", name, "--formats", "json", *extra, str(path)).stdout)


def test_mi300x_matrix_core_kernels_read_as_tensor_cores(resnet_dict):
    """A bf16 ResNet on an MI300X: its GEMMs (hipBLASLt `Cijk_..._MI16x16x16x1`) and
    convolutions (MIOpen's XDLOPS igemm `gtcx3`, composable_kernel `xdl`) run on the matrix
    cores; its transposes, batch norms and elementwise kernels do not."""
    kernels = report(resnet_dict, "kernel", "--iterations", "all")
    tc = {r["Kernel"]: r["TC"] for r in kernels}
    gemms = [k for k in tc if k.startswith("Cijk_")]
    convs = [k for k in tc if k.startswith("igemm_") or "_xdl_" in k or "xdlops" in k]
    assert len(gemms) == 7 and len(convs) == 17
    assert {tc[k] for k in gemms + convs} == {"1"}
    others = [k for k in tc if k not in gemms + convs and tc[k] is not None]  # null: copies
    assert others and {tc[k] for k in others} == {"0"}
    assert any(k.startswith("batched_transpose_") for k in others)
    summary = {r["Metric"]: r["Value"] for r in report(resnet_dict, "summary", "--iterations",
                                                       "all")}
    total = sum(float(r["Total(ns)"]) for r in kernels if r["TC"] is not None)
    on_tc = sum(float(r["Total(ns)"]) for r in kernels if r["Kernel"] in gemms + convs)
    assert on_tc > 0
    assert float(summary["Tensor Core kernel time %"]) == pytest.approx(100 * on_tc / total,
                                                                         abs=0.05)


def test_advice_does_not_blame_matrix_core_kernels(resnet_dict):
    """The bf16 GEMMs and convolutions are Tensor Core eligible and ran on the matrix cores:
    `tc-not-used` (half-precision kernels that did not use Tensor Cores) must stay silent."""
    rules = {r["Rule"] for r in report(resnet_dict, "advice", "--iterations", "all")}
    assert "tc-not-used" not in rules
    assert "shapes-not-aligned" not in rules
