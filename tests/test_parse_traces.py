"""parse on real profiler databases, compared with what legacy PyProf and DLProf made of them.

Inputs are copies in tests/data (see its README); every database under ../shared/traces is
parsed too when that folder is there.
"""

import ast
import collections
import csv
import glob
import os
import shutil
import sqlite3

import pytest

from testlib import DATA, parse
from testlib import SHARED_TRACES as SHARED

pytestmark = pytest.mark.needs_build

NVPROF_LM = "nvprof-cuda10.1_pytorch-lm_apex-pyprof"
DLPROF_LENET = "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet"


def kernels(records):
    return [r for r in records if r["kind"] == "kernel"]


def test_nvprof_lm_agrees_with_legacy_pyprof_parse():
    """Real nvprof run (CUDA 10.1, V100, word LM + apex.pyprof markers + emit_nvtx) against
    apex.pyprof's own parse output for it: kernel by kernel, op / direction / seq."""
    _, records, summary = parse(os.path.join(DATA, f"{NVPROF_LM}.sql"))
    with open(os.path.join(DATA, f"{NVPROF_LM}.parse-output.dict")) as f:
        gold = [ast.literal_eval(line) for line in f]
    ours = kernels(records)
    assert len(ours) == len(gold) == 160
    assert "attributed to an op: 189 of 189" in summary  # 160 kernels + 21 memcpy + 8 memset
    explained = collections.Counter()
    for i, (g, o) in enumerate(zip(gold, ours)):
        # Same kernel in the same place (PyProf's table order is GPU start order here).
        assert (g["kDuration"], g["stream"], g["grid"], g["block"]) == (
            o["duration"], o["stream"], tuple(o["grid"]), tuple(o["block"])), i
        gseq = g["seqId"][0] if g["seqId"] else -1
        gop = g["op"][0] if g["op"] else None
        if g["dir"] == "fprop" and o["dir"] == "bprop":
            # Gradient accumulation runs inside the torch::autograd::AccumulateGrad node, so it
            # is backward work; PyProf only looked for "Backward" in seq markers.
            assert o["bwd_node"] == "torch::autograd::AccumulateGrad" and o["op"] == gop == "add_"
            explained["AccumulateGrad is bprop"] += 1
            continue
        assert o["dir"] == g["dir"], i
        if o["dir"] == "fprop":
            assert o["op"] == gop, i
            # PyProf writes mod "na" for ops named only by an emit_nvtx string.
            assert o.get("legacy_mod", "na") == g["mod"][0], i
        if o["seq"] != gseq:
            if gseq in (-1,) and g["altSeqId"] == [o["seq"]]:
                # PyProf keeps only a seq greater than the previous kernel's and moves the rest
                # to altSeqId; ours is the seq of the innermost op that has one.
                explained["seq moved to altSeqId"] += 1
            elif g["altSeqId"] == [o["seq"]] and o["seq"] == gseq + 1:
                # matmul (seq N) calls mm (seq N+1): the backward node MmBackward has N+1, so
                # the innermost op's seq is the one that pairs; PyProf took the outer one.
                explained["composite op: innermost seq"] += 1
            else:
                pytest.fail(f"kernel {i}: seq {o['seq']} vs PyProf {g['seqId']}/{g['altSeqId']}")
    assert explained == {"AccumulateGrad is bprop": 16, "seq moved to altSeqId": 8,
                         "composite op: innermost seq": 5}


def test_nvprof_lm_backward_pairs_with_forward_op():
    """PyProf's prof gave a bprop kernel the op of the last fprop *kernel* with its seq; we pair
    by ranges, so a forward op that launched no kernel (split) still pairs."""
    _, records, _ = parse(os.path.join(DATA, f"{NVPROF_LM}.sql"))
    with open(os.path.join(DATA, f"{NVPROF_LM}.parse-output.dict")) as f:
        gold = [ast.literal_eval(line) for line in f]
    ours = kernels(records)
    unpaired_by_pyprof = 0
    for i, (g, o) in enumerate(zip(gold, ours)):
        if g["dir"] != "bprop":
            continue
        seq = g["seqId"][0]
        fwd = next((h for h in reversed(gold[:i]) if h["dir"] == "fprop"
                    and (seq in h["seqId"] or seq in h["altSeqId"])), None)
        assert o["paired"], i
        if fwd is None:
            assert o["bwd_node"] == "SplitBackward" and o["op"] == "multi_head_attention_forward"
            unpaired_by_pyprof += 1
            continue
        assert (o["op"], o["legacy_mod"]) == (fwd["op"][0], fwd["mod"][0]), i
    assert unpaired_by_pyprof == 3


def test_dlprof_lenet_matches_dlprof_kernel_report():
    """Real nsys 2022.1.3 export of a DLProf run (emit_nvtx + DLProf dict markers): every kernel
    attributed, and GPU time per (kernel, op, direction) equal to DLProf's kernel report."""
    _, records, summary = parse(os.path.join(DATA, f"{DLPROF_LENET}.sqlite"))
    ours = kernels(records)
    assert len(ours) == 59
    assert all(k["op"] for k in ours), "every kernel must be attributed"
    assert "attributed to an op: 76 of 76 (100.0%)" in summary
    with open(os.path.join(DATA, f"{DLPROF_LENET}.dlprof_kernel.csv")) as f:
        rows = list(csv.reader(f))[2:]
    dlprof = collections.Counter()
    for name, _op_id, op_path, direction, _tc, total_ns, *_ in rows:
        op = op_path.rsplit("/", 1)[-1].split("[")[0]  # ".../Conv2d::forward/conv2d[2]"
        dlprof[(name, op, direction)] += int(total_ns)
    mine = collections.Counter()
    for k in ours:
        mine[(k["name"], k["op"], k["dir"])] += k["duration"]
    assert mine == dlprof


def test_reordered_rows_give_the_same_records():
    """Kernel rows out of launch order made legacy PyProf lose the linear kernel's markers
    (synthetic_mlp_reordered.pyprof.txt); the sweep does not depend on row order."""
    _, ordered, _ = parse(os.path.join(DATA, "synthetic_mlp.nsys.sqlite"))
    _, reordered, _ = parse(os.path.join(DATA, "synthetic_mlp_reordered.nsys.sqlite"))
    assert reordered == ordered
    assert ordered[0]["op"] == "linear" and ordered[0]["args"][0]["shape"] == [32, 128]


def test_modern_emit_nvtx_strings():
    """`aten::addmm, seq = 10, op_id = 7` crashed legacy PyProf's parse."""
    _, old, _ = parse(os.path.join(DATA, "synthetic_mlp.nsys.sqlite"))
    _, new, _ = parse(os.path.join(DATA, "synthetic_mlp_opid.nsys.sqlite"))
    key = ("name", "op", "dir", "seq", "sub", "bwd_node", "paired")
    assert [[r.get(k) for k in key] for r in new] == [[r.get(k) for k in key] for r in old]


def test_nvprof_and_nsys_layouts_agree():
    """The same synthetic MLP in nvprof and nsys layout, and PyProf's parse of each."""
    _, nsys, _ = parse(os.path.join(DATA, "synthetic_mlp.nsys.sqlite"))
    _, nvprof, _ = parse(os.path.join(DATA, "synthetic_mlp.nvprof.sql"))
    # (The two files were built with different names for the relu-backward kernel, so kernel
    # names are not compared.)
    key = ("op", "dir", "seq", "sub", "bwd_node", "bwd_op", "paired", "duration", "grid",
           "block", "user_ranges")
    assert [[r.get(k) for k in key] for r in nvprof] == [[r.get(k) for k in key] for r in nsys]
    with open(os.path.join(DATA, "synthetic_mlp.nsys.pyprof.dict")) as f:
        gold = [ast.literal_eval(line) for line in f]
    assert [(r["name"], r["dir"], r["seq"]) for r in nsys] == [
        (g["kShortName"], g["dir"], g["seqId"][0]) for g in gold]
    # PyProf names bprop kernels after their markers (aten::mm, AddmmBackward0); we give the
    # forward op, as PyProf's prof did later by searching for the fprop kernel.
    assert [r["op"] for r in nsys] == ["linear", "relu", "sum", "relu", "linear", "linear",
                                       "linear"]
    assert [r["sub"] for r in nsys] == [0, 0, 0, 0, 0, 1, 2]  # dgrad, wgrad, bias
    assert all(r["user_ranges"] == ["layer:MLP"] for r in nsys)


def test_oldest_nsys_driver_api_launches():
    """nsys 2020.3: no NVTX, launches through the driver API (cuLaunchKernel)."""
    header, records, summary = parse(os.path.join(DATA, "nsys-2020.3.4_beast-stream_report2.sqlite"),
                                     with_syncs=True)
    assert header["format"] == "nsys"
    ks = kernels(records)
    assert len(ks) == 2419
    assert all(k["launch"]["api"] == "cuLaunchKernel" for k in ks)
    assert all(k["op"] is None and k["dir"] is None for k in ks)
    assert sum(r["kind"] == "memcpy" for r in records) == 18
    assert "2419 launched outside every range" in summary.replace("2437 launched", "2419 launched") or \
        "2437 launched outside every range" in summary
    # GPU records in GPU start order; the synchronizing calls after them (docs/formats.md §3).
    starts = [r["start"] for r in records if r["kind"] != "sync"]
    assert starts == sorted(starts)
    syncs = [r for r in records if r["kind"] == "sync"]
    assert syncs and records[len(records) - len(syncs):] == syncs
    assert {r["name"] for r in syncs} <= {"cuCtxSynchronize", "cuStreamSynchronize",
                                          "cuEventSynchronize"}  # a driver-API program


def test_nvfuser_ranges_are_user_ranges():
    """nsys 2024.6: nvFuser's host ranges are not ops; the 2 kernels launched inside ranges keep
    them as user ranges, the other 17 are unattributed, none dropped."""
    header, records, summary = parse(os.path.join(DATA, "nsys-2024.6.2_nvfuser-nvtx_report1.sqlite"))
    assert header["version"] == "2024.6.2.25"
    ks = kernels(records)
    assert len(ks) == 19
    assert all(k["op"] is None for k in ks)
    in_ranges = [k for k in ks if k.get("user_ranges")]
    assert len(in_ranges) == 2
    assert sum(r["kind"] in ("memcpy", "memset") for r in records) == 2
    # "executor_utils::bindInputs" and its kind are nvFuser's, not emit_nvtx ops.
    assert "emit_nvtx 0, legacy PyProf 0, other (user) 652" in summary


SHARED_COUNTS = {  # database -> kernels (from ../shared/traces READMEs)
    "real/nsys-2020.3.4_beast-stream_report2.sqlite": 2419,
    "real/nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite": 59,
    "real/nsys-2024.6.2_nvfuser-nvtx_report1.sqlite": 19,
    "real/nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql": 160,
    "pyprof-legacy/synthetic_mlp.nsys.sqlite": 7,
    "pyprof-legacy/synthetic_mlp.nvprof.sql": 7,
    "pyprof-legacy/synthetic_mlp_opid.nsys.sqlite": 7,
    "pyprof-legacy/synthetic_mlp_reordered.nsys.sqlite": 7,
    "pyprof-legacy/synthetic_mlp_x1000.nsys.sqlite": 7000,
    "pyprof-legacy/synthetic_mlp_x1000.nvprof.sql": 7000,
}


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/traces is not there")
def test_every_shared_database_parses():
    found = sorted(os.path.relpath(p, SHARED) for p in glob.glob(os.path.join(SHARED, "*", "*"))
                   if p.endswith((".sqlite", ".sql")))
    assert set(found) == set(SHARED_COUNTS), "a new database in ../shared/traces: add its count"
    for rel, n_kernels in SHARED_COUNTS.items():
        _, records, summary = parse(os.path.join(SHARED, rel))
        assert len(kernels(records)) == n_kernels, rel
        assert "malformed 0" in summary, rel
        if "synthetic_mlp" in rel:
            assert f"attributed to an op: {n_kernels} of {n_kernels} (100.0%)" in summary, rel
            assert f"{n_kernels * 4 // 7} paired with their forward op, 0 unpaired" in summary, rel


def test_header_describes_the_gpus():
    # TARGET_INFO_GPU rows reach the header (for peak rates); values as the exports hold them.
    header, records, _ = parse(os.path.join(DATA, DLPROF_LENET + ".sqlite"))
    assert header["devices"] == [{
        "id": 0, "name": "NVIDIA GeForce RTX 2070 SUPER", "sm_count": 40,
        "clock_hz": 1785000000, "memory_bandwidth": 448064000000, "total_memory": 8368816128,
        "compute_capability": [7, 5]}]
    assert {r["device"] for r in kernels(records)} == {0}
    header, _, _ = parse(os.path.join(DATA, "nsys-2024.6.2_nvfuser-nvtx_report1.sqlite"))
    assert [(d["name"], d["sm_count"], d["compute_capability"]) for d in header["devices"]] == [
        ("NVIDIA H200", 132, [9, 0])]
    # nsys 2020.x keeps the GPU facts in TARGET_INFO_CUDA_GPU, in CUPTI's units as nsys stored
    # them (clock kHz, memory MiB: 32510 MiB is the 32 GB V100; bandwidth 0 = not recorded).
    header, records, _ = parse(os.path.join(DATA, "nsys-2020.3.4_beast-stream_report2.sqlite"))
    v100 = {"name": "Tesla V100-PCIE-32GB", "sm_count": 80, "clock_hz": 1_380_000_000,
            "memory_bandwidth": 0, "total_memory": 32510 << 20, "compute_capability": [7, 0]}
    assert header["devices"] == [{"id": 0, **v100}, {"id": 1, **v100}]
    assert {r["device"] for r in kernels(records)} <= {0, 1}


def test_nvprof_header_describes_the_gpu():
    """nvprof's CUPTI_ACTIVITY_KIND_DEVICE row reaches the header in bytes/s, Hz and bytes.
    nvprof stores CUPTI's device record: coreClockRate in kHz, globalMemoryBandwidth in KB/s,
    globalMemorySize in bytes, the name as a StringTable id."""
    header, records, stderr = parse(os.path.join(DATA, f"{NVPROF_LM}.sql"))
    # Checked by hand against the V100 SXM2's published specs: 80 SMs, 1530 MHz boost clock,
    # 16 GB of HBM2 on a 4096-bit bus at 877 MHz, double data rate: 877e6 * 2 * 4096 / 8 =
    # 898,048,000,000 B/s (NVIDIA rounds it to "900 GB/s").
    assert 877_000_000 * 2 * 4096 // 8 == 898_048_000_000
    assert header["devices"] == [{
        "id": 0, "name": "Tesla V100-SXM2-16GB", "sm_count": 80, "clock_hz": 1_530_000_000,
        "memory_bandwidth": 898_048_000_000, "total_memory": 16_914_055_168,
        "compute_capability": [7, 0]}]
    # The device id is the one the GPU rows carry.
    assert {r["device"] for r in records if r["kind"] != "sync"} == {0}
    assert "warning" not in stderr
    # nvprof files without the table (the synthetic MLP, hand-built): no devices, no warning.
    header, _, stderr = parse(os.path.join(DATA, "synthetic_mlp.nvprof.sql"))
    assert "devices" not in header and "warning" not in stderr


def lm_with_device_table(tmp_path, columns, edit=None):
    """A copy of the real nvprof LM database whose DEVICE table keeps only `columns` (the real
    row's values), then `edit` (SQL) applied."""
    path = tmp_path / "lm.sql"
    shutil.copy(os.path.join(DATA, f"{NVPROF_LM}.sql"), path)
    os.chmod(path, 0o644)
    db = sqlite3.connect(path)
    table = "CUPTI_ACTIVITY_KIND_DEVICE"
    kept = ", ".join(columns)
    db.executescript(f"CREATE TABLE kept AS SELECT {kept} FROM {table}; DROP TABLE {table};"
                     f"ALTER TABLE kept RENAME TO {table};" + (edit or ""))
    db.commit()
    db.close()
    return str(path)


def test_nvprof_device_table_of_other_layouts(tmp_path):
    """Whatever the DEVICE table lacks, parse reads the kernels as before: a missing fact is 0
    (unknown), a table without the device id or name describes no GPU and says so, a value that
    does not fit in bytes/s or Hz is 0 and named."""
    _, gold, _ = parse(os.path.join(DATA, f"{NVPROF_LM}.sql"))
    # Only id, name and SM count: the rest is unknown.
    header, records, stderr = parse(lm_with_device_table(tmp_path, ["id", "name",
                                                                    "numMultiprocessors"]))
    assert header["devices"] == [{
        "id": 0, "name": "Tesla V100-SXM2-16GB", "sm_count": 80, "clock_hz": 0,
        "memory_bandwidth": 0, "total_memory": 0, "compute_capability": [0, 0]}]
    assert records == gold and "warning" not in stderr
    # No id: which GPU the row is cannot be told.
    header, records, stderr = parse(lm_with_device_table(
        tmp_path, ["name", "numMultiprocessors", "globalMemoryBandwidth"]))
    assert "devices" not in header and records == gold
    assert "GPU table of an unknown layout" in stderr
    assert "CUPTI_ACTIVITY_KIND_DEVICE has no column 'id'" in stderr
    # NULLs (nvprof declares every column NOT NULL, so a hand-made file) and a bandwidth past
    # what bytes/s can hold in 64 bits.
    header, records, stderr = parse(lm_with_device_table(
        tmp_path, ["id", "name", "numMultiprocessors", "coreClockRate", "globalMemoryBandwidth",
                   "globalMemorySize", "computeCapabilityMajor", "computeCapabilityMinor"],
        "UPDATE CUPTI_ACTIVITY_KIND_DEVICE SET numMultiprocessors = NULL,"
        " globalMemoryBandwidth = 1 << 62;"))
    assert header["devices"] == [{
        "id": 0, "name": "Tesla V100-SXM2-16GB", "sm_count": 0, "clock_hz": 1_530_000_000,
        "memory_bandwidth": 0, "total_memory": 16_914_055_168, "compute_capability": [7, 0]}]
    assert records == gold
    assert "GPU fact out of range" in stderr and "globalMemoryBandwidth" in stderr
    # A second row for device 0 and a row without id: the first row is kept, both are named.
    header, records, stderr = parse(lm_with_device_table(
        tmp_path, ["id", "name", "numMultiprocessors"],
        "INSERT INTO CUPTI_ACTIVITY_KIND_DEVICE VALUES (0, 1, 40), (NULL, 2, 80);"))
    assert [(d["id"], d["name"], d["sm_count"]) for d in header["devices"]] == [
        (0, "Tesla V100-SXM2-16GB", 80)]
    assert records == gold
    assert "GPU described twice" in stderr and "GPU without id" in stderr
