"""parse on databases built by tests/nsys_synth.py, for what no real file covers: marks,
start/end ranges, registered strings, domains, several threads, processes and GPUs, rows out of
launch order, unclosed ranges, graph launches, copies, hostile markers and old layouts."""

import json
import os
import sqlite3
import subprocess

import pytest

import testlib
from nsys_synth import SynthDb, tensor

pytestmark = pytest.mark.needs_build

GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_tn_align4>(Params)"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"


def parse(db, tmp_path, name="x.sqlite", *extra):
    """Saves db as tmp_path/name and parses it: (header, records, stderr)."""
    path = tmp_path / name
    db.save(path)
    return testlib.parse(path, *extra, timeout=60)


def linear_step(t, module="Net.fc", seq=3, batch=8):
    """pyprof markers of a Linear forward (linear -> addmm) and its backward on thread t."""
    x, w, b = tensor([batch, 64]), tensor([32, 64]), tensor([32])
    with t.pyprof_module(module, "Linear"):
        with t.pyprof_op("aten::linear", seq=seq, args={"input": x, "weight": w, "bias": b}):
            with t.pyprof_op("aten::t", seq=seq):
                pass
            with t.pyprof_op("aten::addmm", seq=seq + 1,
                             args={"self": b, "mat1": x, "mat2": tensor([64, 32])}) :
                t.launch(GEMM, grid=(4, 1, 1))
    return t


def backward_linear(t, fwd_tid, seq=4):
    with t.pyprof_op("AddmmBackward0", scope="backward", seq=seq, fwd_tid=fwd_tid,
                     args={"0": tensor([8, 32])}):
        with t.pyprof_op("aten::mm", args={"self": tensor([8, 32]), "mat2": tensor([32, 64])}):
            t.launch(GEMM.replace("_tn_", "_nn_"))
        with t.pyprof_op("aten::mm", args={"self": tensor([32, 8]), "mat2": tensor([8, 64])}):
            t.launch(GEMM.replace("_tn_", "_nt_"))
        with t.pyprof_op("aten::sum", args={"self": tensor([8, 32])}):
            t.launch("void at::native::reduce_kernel<512, 1>(ReduceOp)")


def test_pyprof_forward_backward(tmp_path):
    db = SynthDb()
    main = db.thread(pid=100)
    linear_step(main)
    engine = db.thread(pid=100, tid=101)  # the autograd engine's thread
    engine.wait_until(main.now)
    with engine.range("## backward ##"):
        backward_linear(engine, fwd_tid=main.rf_tid)
    header, recs, summary = parse(db, tmp_path)
    assert header["format"] == "nsys" and header["records"] == "gpu"
    fwd, dgrad, wgrad, bias = recs
    assert (fwd["op"], fwd["dir"], fwd["seq"], fwd["module"], fwd["module_type"]) == (
        "aten::addmm", "fprop", 4, "Net.fc", "Linear")
    assert fwd["args"]["mat1"]["shape"] == [8, 64]
    assert fwd["name"] == "Kernel2" and fwd["launch"]["api"] == "cudaLaunchKernel"
    for sub, rec in enumerate((dgrad, wgrad, bias)):
        assert rec["dir"] == "bprop" and rec["sub"] == sub and rec["paired"] is True
        assert rec["op"] == "aten::addmm" and rec["fwd_op_id"] == fwd["op_id"]
        assert rec["module"] == "Net.fc"  # backward time lands on the forward module
        assert rec["args"] == fwd["args"]
        assert rec["bwd_node"] == "AddmmBackward0"
        assert rec["tid"] == 101 and rec["user_ranges"] == ["## backward ##"]
    assert (dgrad["bwd_op"], wgrad["bwd_op"], bias["bwd_op"]) == ("aten::mm", "aten::mm",
                                                                  "aten::sum")
    assert wgrad["bwd_args"]["self"]["shape"] == [32, 8]
    assert "backward: 3 records, 3 paired with their forward op, 0 unpaired" in summary


@pytest.mark.parametrize("depth", [3, 150])
def test_deep_range_chains(tmp_path, depth):
    """A kernel under `depth` user ranges, modules and ops, forward and backward: parse rebuilds
    each range's context from its parent chain when asked (correlate.h: context_of), also past the
    64 ranges it keeps without allocating; the answers must be those of the innermost of each."""
    import contextlib
    db = SynthDb()
    main = db.thread(pid=100)
    with contextlib.ExitStack() as stack:
        for level in range(depth):
            stack.enter_context(main.range(f"user{level}"))
            if level % 10 == 5:
                stack.enter_context(main.pyprof_module(f"Net.block{level}", "Block"))
        linear_step(main, module="Net.deep.fc")
    engine = db.thread(pid=100, tid=101)
    engine.wait_until(main.now)
    with contextlib.ExitStack() as stack:
        for level in range(depth):
            stack.enter_context(engine.range(f"bwd{level}"))
        backward_linear(engine, fwd_tid=main.rf_tid)
    _, recs, summary = parse(db, tmp_path)
    fwd, *bwd = recs
    assert (fwd["op"], fwd["dir"], fwd["module"]) == ("aten::addmm", "fprop", "Net.deep.fc")
    assert fwd["user_ranges"] == [f"user{level}" for level in range(depth)]
    assert len(bwd) == 3 and all(r["paired"] and r["fwd_op_id"] == fwd["op_id"] for r in bwd)
    assert {(r["op"], r["module"], r["bwd_node"]) for r in bwd} == {
        ("aten::addmm", "Net.deep.fc", "AddmmBackward0")}
    assert [r["bwd_op"] for r in bwd] == ["aten::mm", "aten::mm", "aten::sum"]
    assert bwd[0]["user_ranges"] == [f"bwd{level}" for level in range(depth)]
    assert "backward: 3 records, 3 paired with their forward op, 0 unpaired" in summary


@pytest.mark.parametrize("shift", [1 << 40, 1 << 60, -(1 << 62)])
def test_sparse_and_far_rowids_read_alike(tmp_path, shift):
    """NVTX_EVENTS is read in chunks of its rowid span, and a range's text is read again by rowid
    when its record is written, from the 56 bits of it a range keeps (parse/trace.h: TextRef).
    A table with a gap of 2^40 rowids, or rowids past 2^55 or below 0 (hand-made or edited
    files), must give the records the plain table gives: no chunk per missing row, no reserve
    for them (both ran out of memory), texts past a TextRef's reach kept by parse itself."""
    db = SynthDb()
    main = db.thread(pid=100)
    linear_step(main, module="Net.fc")
    engine = db.thread(pid=100, tid=101)
    engine.wait_until(main.now)
    backward_linear(engine, fwd_tid=main.rf_tid)
    plain = tmp_path / "plain.sqlite"
    db.save(plain)
    _, expected, _ = testlib.parse(plain, timeout=60)
    path = tmp_path / "far.sqlite"
    path.write_bytes(plain.read_bytes())
    with sqlite3.connect(path) as con:
        moved = con.execute("UPDATE NVTX_EVENTS SET rowid = rowid + ? WHERE text IS NOT NULL",
                            (shift,)).rowcount
    assert moved >= 4
    _, recs, _ = testlib.parse(path, timeout=60)
    assert len(recs) == len(expected) == 4
    for got, want in zip(recs, expected):
        assert (got["op"], got["args"], got.get("bwd_args"), got["module"]) == (
            want["op"], want["args"], want.get("bwd_args"), want["module"])
        assert got["args"]["mat1"]["shape"] == [8, 64]

@pytest.mark.parametrize("depth", [3, 150])
def test_outermost_legacy_op_of_a_deep_chain(tmp_path, depth):
    """Of legacy PyProf's op markers the outermost names the op (PyProf reported op[0]): past the
    64 ranges context_of keeps without allocating, the outermost must still be seen."""
    import contextlib
    db = SynthDb()
    t = db.thread(pid=100)
    with contextlib.ExitStack() as stack:
        for level in range(depth):
            op = "linear" if level == 0 else f"inner{level}" if level % 7 == 0 else None
            text = repr({"mod": "torch.nn.functional", "op": op, "args": []}) if op \
                else f"user{level}"
            stack.enter_context(t.range(text))
        t.launch(GEMM)
    _, (rec,), _ = parse(db, tmp_path)
    assert (rec["op"], rec["dialect"]) == ("linear", "legacy_pyprof")

@pytest.mark.parametrize("interned", [False, True])
def test_interned_markers_read_like_text_ones(tmp_path, interned):
    """An Nsight Systems export of interned markers (registered v2 strings, the op id as the
    uint64 payload, seq + 1 as the category; docs/formats.md §1.1) gives the same records as
    the text form, backward pairing included."""
    db = SynthDb()
    main, engine = db.thread(pid=100), db.thread(pid=100, tid=101)
    for step in range(2):  # the same markers twice: one registered string each
        x = tensor([8, 64])
        with main.pyprof_op("aten::addmm", seq=4 + step, interned=interned, id=10 + step,
                            args={"self": tensor([32]), "mat1": x, "mat2": tensor([64, 32])}):
            main.launch(GEMM)
        with main.pyprof_op("aten::relu", interned=interned, id=20 + step, args={"self": x}):
            main.launch(ELEMENTWISE)
        engine.wait_until(main.now)
        with engine.pyprof_op("AddmmBackward0", scope="backward", seq=4 + step,
                              fwd_tid=main.rf_tid, interned=interned, id=30 + step,
                              args={"0": tensor([8, 32])}):
            engine.launch(GEMM.replace("_tn_", "_nn_"))
        main.wait_until(engine.now)
    _, recs, summary = parse(db, tmp_path)
    fwd = [r for r in recs if r["dir"] == "fprop" and r["op"] == "aten::addmm"]
    relu = [r for r in recs if r["op"] == "aten::relu"]
    bwd = [r for r in recs if r["dir"] == "bprop"]
    assert [(r["op_id"], r["seq"]) for r in fwd] == [(10, 4), (11, 5)]
    assert [(r["op_id"], r["seq"]) for r in relu] == [(20, -1), (21, -1)]
    assert [(r["bwd_node_id"], r["fwd_op_id"], r["paired"]) for r in bwd] == [
        (30, 10, True), (31, 11, True)]
    assert bwd[0]["args"] == fwd[0]["args"] and fwd[0]["args"]["mat1"]["shape"] == [8, 64]
    assert "backward: 2 records, 2 paired with their forward op, 0 unpaired" in summary
    assert "interned marker" not in summary


def test_interned_marker_without_payload_is_reported(tmp_path):
    db = SynthDb()
    t = db.thread(pid=100)
    text = SynthDb.op_marker("aten::relu", args={"self": tensor([4])}, interned=True)
    with t.range(text, domain="pyprof", registered=True, category=3):
        t.launch(ELEMENTWISE)
    _, recs, summary = parse(db, tmp_path)
    assert recs[0]["op"] == "aten::relu" and recs[0]["seq"] == 2 and "op_id" not in recs[0]
    assert "interned marker without its op id" in summary


def test_pairing_uses_forward_thread(tmp_path):
    """Two forward threads reuse seq numbers (each thread has its own counter): the node's
    fwd_tid picks the right one."""
    db = SynthDb()
    a, b = db.thread(pid=100, tid=100), db.thread(pid=100, tid=102)
    linear_step(a, module="A.fc", seq=3)
    b.wait_until(a.now)
    linear_step(b, module="B.fc", seq=3)
    engine = db.thread(pid=100, tid=101)
    engine.wait_until(b.now)
    backward_linear(engine, fwd_tid=b.rf_tid, seq=4)
    backward_linear(engine, fwd_tid=a.rf_tid, seq=4)
    _, recs, _ = parse(db, tmp_path)
    bwd = [r for r in recs if r["dir"] == "bprop"]
    assert [r["module"] for r in bwd] == ["B.fc"] * 3 + ["A.fc"] * 3


def test_pairing_takes_the_creator_not_deeper_gradless_ops_sharing_its_seq(tmp_path):
    """Ops on tensors that need no gradient go through autograd without creating a node, so they
    carry the number of the next node (seen on torch 2.7: a run of such ops nested deeper than
    the creator, before the model ran). The node pairs with the op that started last before it."""
    db = SynthDb()
    main = db.thread(pid=100)
    with main.pyprof_op("aten::is_nonzero", seq=4):
        with main.pyprof_op("aten::item", seq=4):
            with main.pyprof_op("aten::_local_scalar_dense", seq=4):
                with main.pyprof_op("aten::copy_", seq=4):
                    pass
    linear_step(main)  # aten::addmm (seq 4) creates AddmmBackward0
    engine = db.thread(pid=100, tid=101)
    engine.wait_until(main.now)
    backward_linear(engine, fwd_tid=main.rf_tid)
    _, recs, summary = parse(db, tmp_path)
    fwd = next(r for r in recs if r["dir"] == "fprop")
    bwd = [r for r in recs if r["dir"] == "bprop"]
    assert len(bwd) == 3 and all(r["paired"] for r in bwd)
    assert {(r["op"], r["fwd_op_id"], r["module"]) for r in bwd} == {
        ("aten::addmm", fwd["op_id"], "Net.fc")}


def test_pairing_looks_before_the_node_when_numbers_repeat(tmp_path):
    """A trace whose sequence numbers restart (one synthetic step copied again and again): each
    backward pass pairs with the forward pass just before it, not with another step's."""
    db = SynthDb()
    main = db.thread(pid=100)
    engine = db.thread(pid=100, tid=101)
    for step in range(3):
        main.wait_until(engine.now)
        linear_step(main, module=f"Step{step}.fc")
        engine.wait_until(main.now)
        backward_linear(engine, fwd_tid=main.rf_tid)
    _, recs, _ = parse(db, tmp_path)
    fwd_ids = [r["op_id"] for r in recs if r["dir"] == "fprop"]
    bwd = [r for r in recs if r["dir"] == "bprop"]
    assert len(fwd_ids) == 3 and len(bwd) == 9
    assert [r["fwd_op_id"] for r in bwd] == [i for i in fwd_ids for _ in range(3)]
    assert [r["module"] for r in bwd] == [f"Step{s}.fc" for s in range(3) for _ in range(3)]


def test_marks_start_end_ranges_domains_registered_strings(tmp_path):
    db = SynthDb()
    t = db.thread(pid=100)
    other = db.thread(pid=100, tid=105)
    epoch = t.start_range("epoch 0", domain="trainer", registered=True)
    with t.range("layer:block1", color=0xFF00FF00):
        t.mark("checkpoint")  # a mark is not a range: it encloses nothing
        with t.pyprof_op("aten::add", seq=1):
            t.mark("inside op", domain="trainer")
            t.launch(ELEMENTWISE)
    other.wait_until(t.now)
    epoch.end(on_thread=other)  # ended on another thread: still a range of t
    t.advance(1000)
    t.launch(ELEMENTWISE)  # after every range
    _, recs, summary = parse(db, tmp_path)
    inside, outside = recs
    assert inside["op"] == "aten::add" and inside["dir"] == "fprop"
    assert inside["user_ranges"] == ["trainer:epoch 0", "layer:block1"]
    assert outside["op"] is None and outside["dir"] is None and "user_ranges" not in outside
    assert "3 ranges, 2 marks" in summary
    assert "attributed to an op: 1 of 2 (50.0%)" in summary
    assert "1 launched outside every range" in summary


def test_threads_do_not_share_ranges(tmp_path):
    """A range on thread A covers the time of B's launch, but not B's launch."""
    db = SynthDb()
    a, b = db.thread(pid=100, tid=100), db.thread(pid=100, tid=101)
    with a.pyprof_op("aten::mul", seq=1):
        b.wait_until(a.now)
        b.launch(ELEMENTWISE)
        a.wait_until(b.now)
        a.launch(ELEMENTWISE)
    _, recs, _ = parse(db, tmp_path)
    assert sorted((r["tid"], r["op"]) for r in recs) == [(100, "aten::mul"), (101, None)]


def test_processes_with_colliding_correlation_ids_and_gpus(tmp_path):
    """Correlation ids restart in every process (NVIDIA/PyProf#79): each kernel must find the
    launch of its own process."""
    db = SynthDb()
    for rank, pid in enumerate((200, 300)):
        t = db.thread(pid=pid)
        with t.pyprof_op(f"aten::op_of_rank{rank}", seq=1):
            t.launch(ELEMENTWISE, device=rank)
    _, recs, _ = parse(db, tmp_path)
    assert len({r["correlation"] for r in recs}) == 1  # the same id in both processes
    assert sorted((r["pid"], r["device"], r["op"]) for r in recs) == [
        (200, 0, "aten::op_of_rank0"), (300, 1, "aten::op_of_rank1")]


def test_rows_out_of_launch_order(tmp_path):
    """Kernel rows shuffled (several streams write them out of order): same records, in GPU
    start order."""
    def build(shuffle):
        db = SynthDb()
        t = db.thread(pid=100)
        for i in range(30):
            with t.pyprof_op(f"aten::op{i}", seq=i):
                t.launch(ELEMENTWISE, stream=7 + i % 3, duration=1000 + 97 * i)
        if shuffle:
            db.shuffle_kernel_rows(seed=5)
            db.shuffle_rows("CUPTI_ACTIVITY_KIND_RUNTIME", seed=6)
            db.shuffle_rows("NVTX_EVENTS", seed=7)
        return db
    _, plain, _ = parse(build(False), tmp_path, "a.sqlite")
    _, shuffled, _ = parse(build(True), tmp_path, "b.sqlite")
    assert shuffled == plain
    assert [r["start"] for r in plain] == sorted(r["start"] for r in plain)
    assert {r["op"] for r in plain} == {f"aten::op{i}" for i in range(30)}


def test_unclosed_and_backwards_ranges(tmp_path):
    """A range never closed (end NULL) encloses nothing: its extent is unknown, and a leaked
    push would claim everything its thread did afterwards (issue 30, item 3). It is counted and
    said; the kernel launched after its start belongs to no op."""
    db = SynthDb()
    t = db.thread(pid=100)
    t.range_at('{"v":1,"op":"aten::never_closed","id":9,"seq":2,"tid":1,"scope":"function",'
               '"args":{}}', start=t.now, end=None, domain="pyprof")
    t.advance(100)
    t.launch(ELEMENTWISE)
    t.range_at("backwards", start=t.now + 500, end=t.now, domain=None)
    t.advance(1000)
    _, recs, summary = parse(db, tmp_path)
    assert recs[0]["op"] is None and recs[0]["dir"] is None
    assert "unclosed 1" in summary and "note: 1 ranges were never closed:" in summary
    assert "range ends before it starts (1x)" in summary


def test_kernel_without_launch_row_is_kept(tmp_path):
    db = SynthDb()
    t = db.thread(pid=100)
    with t.pyprof_op("aten::add", seq=1):
        t.launch(ELEMENTWISE, record_api=False)
        t.launch(ELEMENTWISE)
    _, recs, summary = parse(db, tmp_path)
    assert [r["op"] for r in recs] == [None, "aten::add"]
    assert recs[0]["tid"] is None and "launch" not in recs[0]
    assert "1 without a launch call" in summary


def test_graph_launch_and_copies(tmp_path):
    db = SynthDb()
    t = db.thread(pid=100)
    with t.pyprof_op("aten::copy_", seq=-1):
        t.memcpy(4096, "HtoD")
    with t.pyprof_op("aten::zero_", seq=-1):
        t.memset(1024, 0)
    with t.range("cuda graph replay"):
        t.graph_launch([ELEMENTWISE, GEMM, ELEMENTWISE])
    _, recs, _ = parse(db, tmp_path)
    copy, memset, *graph = recs
    assert (copy["kind"], copy["bytes"], copy["copy_kind"], copy["src_kind"],
            copy["dst_kind"], copy["op"]) == ("memcpy", 4096, "HtoD", "pageable", "device",
                                              "aten::copy_")
    assert (memset["kind"], memset["bytes"], memset["value"], memset["op"]) == (
        "memset", 1024, 0, "aten::zero_")
    assert [g["graph_node"] for g in graph] == [1, 2, 3]
    assert all(g["user_ranges"] == ["cuda graph replay"] for g in graph)


def test_hostile_markers(tmp_path):
    """Malformed pyprof JSON, a megabyte message, NUL bytes, absurd numbers: counted and kept as
    user ranges; kernels under them are still written."""
    db = SynthDb()
    t = db.thread(pid=100)
    hostile = [
        '{"v":1,"op":"aten::add","id":1,"seq":3,"tid":1,"scope":"function","args":{',
        '{"v":1,"op":"aten::big","id":2,"seq":1,"tid":1,"scope":"function","args":{"s":"'
        + "x" * (1 << 20) + '"}}',
        '{"v":1,"op":"aten::nul\x00","id":3,"seq":99999999999999999999999,"tid":1,'
        '"scope":"function","args":{}}',
        "\x00\x01\x02 binary \xff garbage",
    ]
    for i, text in enumerate(hostile):
        with t.range(text, domain="pyprof"):
            t.launch(ELEMENTWISE)
    with t.range("aten::mm, seq = 18446744073709551616, op_id = -5"):
        t.launch(ELEMENTWISE)
    header, recs, summary = parse(db, tmp_path)
    assert len(recs) == 5
    # (user ranges of a named domain read "domain:message")
    assert recs[0]["op"] is None
    assert recs[0]["user_ranges"][0].startswith('pyprof:{"v":1,"op":"aten::add"')
    assert recs[1]["op"] == "aten::big" and len(recs[1]["args"]["s"]) == 1 << 20
    assert "malformed marker" in summary
    for rec in recs:
        json.dumps(rec)  # everything round-trips


@pytest.mark.parametrize("layout", ["2020.3", "2021.2", "2022.1", "2023.3", "2024.6"])
def test_plain_emit_nvtx_under_every_layout(tmp_path, layout):
    """A trace recorded with plain emit_nvtx (no pyprof): ops, shapes, directions and
    forward/backward pairs, with every nsys schema version's columns."""
    db = SynthDb(layout=layout)
    t = db.thread(pid=100)
    with t.range("aten::linear, seq = 2, op_id = 5, sizes = [[5, 64], [3, 64], [3]]"):
        with t.range("aten::t, seq = 2, op_id = 6, sizes = [[3, 64]]"):
            pass
        with t.range("aten::addmm, seq = 3, op_id = 7, sizes = [[3], [5, 64], [64, 3], [], []], "
                     "input_op_ids = [(0,-1), (4,0), (6,0), (0,-1), (0,-1)]"):
            t.launch(GEMM, api="cuLaunchKernel" if layout == "2020.3" else
                     "cudaLaunchKernel_v7000")
    with t.range("autograd::engine::evaluate_function: AddmmBackward0, op_id = 12"):
        with t.range("AddmmBackward0, seq = 3, op_id = 13, sizes = [[5, 3]]"):
            with t.range("aten::mm, op_id = 14, sizes = [[5, 3], [3, 64]]"):
                t.launch(GEMM)
    _, (fwd, bwd), summary = parse(db, tmp_path)
    assert (fwd["op"], fwd["dir"], fwd["seq"], fwd["op_id"], fwd["dialect"]) == (
        "aten::addmm", "fprop", 3, 7, "emit_nvtx")
    assert fwd["args"]["1"] == {"shape": [5, 64]} and fwd["args"]["3"] == {"shape": []}
    assert (bwd["op"], bwd["dir"], bwd["paired"], bwd["fwd_op_id"], bwd["bwd_node"],
            bwd["bwd_op"]) == ("aten::addmm", "bprop", True, 7, "AddmmBackward0", "aten::mm")
    assert bwd["bwd_args"] == {"0": {"shape": [5, 3]}, "1": {"shape": [3, 64]}}
    assert bwd["user_ranges"] == ["autograd::engine::evaluate_function: AddmmBackward0"]


def test_cpu_only_profile_op_instances(tmp_path):
    db = SynthDb()
    t = db.thread(pid=100)
    with t.range("step 0"):
        with t.pyprof_op("aten::linear", seq=1):
            t.advance(100)
            with t.pyprof_op("aten::addmm", seq=1):
                t.advance(300)
            t.advance(50)
    header, recs, summary = parse(db, tmp_path)
    assert header["records"] == "op"
    linear, addmm = recs
    assert (linear["name"], addmm["name"]) == ("aten::linear", "aten::addmm")
    assert addmm["self_duration"] == addmm["duration"]
    assert linear["self_duration"] == linear["duration"] - addmm["duration"]
    assert linear["user_ranges"] == ["step 0"]
    assert "CPU-only profile" in summary


def test_other_libraries_ranges_are_not_emit_nvtx_ops(tmp_path):
    """Ranges shaped like `namespace::name` from libraries other than PyTorch are user ranges:
    nvFuser's host ranges in the default domain (`python_frontend::define_vector_fn`,
    `executor_utils::bindInputs`) and TensorRT's layer ranges in its own domain
    (`onnx::Conv_239`, domain "TensorRT"; emit_nvtx writes only to the default domain, not even
    an `aten::` name with fields counts there). A kernel launched inside one has no op; bare
    names in PyTorch's namespaces (`aten::relu`, TorchScript's `prim::`) and custom ops with
    emit_nvtx's fields stay ops."""
    db = SynthDb()
    t = db.thread(pid=100)
    with t.range("python_frontend::define_vector_fn"):
        t.launch(ELEMENTWISE)
    with t.range("executor_utils::bindInputs"):
        t.launch(ELEMENTWISE)
    with t.range("onnx::Conv_239", domain="TensorRT"):
        t.launch(GEMM)
    with t.range("aten::addmm, seq = 3, op_id = 7, sizes = [[3], [5, 64], [64, 3], [], []]",
                 domain="TensorRT"):
        t.launch(GEMM)
    with t.range("aten::relu"):
        t.launch(ELEMENTWISE)
    with t.range("prim::DifferentiableGraph"):
        t.launch(ELEMENTWISE)
    with t.range("mylib::fused_op, seq = 5, op_id = 9"):
        t.launch(ELEMENTWISE)
    _, recs, summary = parse(db, tmp_path)
    assert [r["op"] for r in recs] == [None, None, None, None, "aten::relu",
                                        "prim::DifferentiableGraph", "mylib::fused_op"]
    assert [r.get("user_ranges") for r in recs[:4]] == [
        ["python_frontend::define_vector_fn"], ["executor_utils::bindInputs"],
        ["TensorRT:onnx::Conv_239"],
        ["TensorRT:aten::addmm, seq = 3, op_id = 7, sizes = [[3], [5, 64], [64, 3], [], []]"]]
    assert "emit_nvtx 3," in summary and "other (user) 4" in summary
    assert "attributed to an op: 3 of 7" in summary

def test_gpu_rows_ending_before_they_start_are_flagged_and_left_out_of_sums(tmp_path):
    """A kernel, copy, memset or launch call whose end precedes its start (clock trouble in the
    tracer) is counted and flagged: `duration` null, the raw end - start in
    `negative_duration`, and prof's time sums leave it out (they showed -48063 ns before)."""
    db = SynthDb()
    t = db.thread(pid=100)
    with t.pyprof_op("aten::add", seq=1):
        t.launch(ELEMENTWISE, duration=5000)
        t.launch(ELEMENTWISE, duration=-48063)
        t.launch(ELEMENTWISE, duration=3000, api_duration=-700)
        t.advance(2000)  # the reversed call moved this thread's clock back: end the op later
    with t.pyprof_op("aten::copy_", seq=-1):
        t.memcpy(4096, "HtoD", duration=-10)
    with t.pyprof_op("aten::zero_", seq=-1):
        t.memset(1024, 0, duration=-7)
    path = tmp_path / "x.sqlite"
    db.save(path)
    _, recs, summary = testlib.parse(path)
    good, bad_kernel, bad_launch, bad_copy, bad_memset = recs
    assert good["duration"] == 5000 and "negative_duration" not in good
    assert bad_kernel["duration"] is None and bad_kernel["negative_duration"] == -48063
    assert bad_copy["duration"] is None and bad_copy["negative_duration"] == -10
    assert bad_memset["duration"] is None and bad_memset["negative_duration"] == -7
    assert bad_launch["duration"] == 3000
    assert bad_launch["launch"]["duration"] is None
    assert bad_launch["launch"]["negative_duration"] == -700
    # Still attributed: the start is right, only the length is unknown.
    assert [r["op"] for r in recs] == ["aten::add"] * 3 + ["aten::copy_", "aten::zero_"]
    assert "GPU rows that end before they start (3x)" in summary
    assert "API calls that end before they start (1x)" in summary
    dict_path = tmp_path / "x.dict"
    dict_path.write_text(testlib.run_tool(testlib.PARSE, path, "-q").stdout)
    metrics = {r["Metric"]: r["Value"] for r in testlib.report_rows(testlib.prof(
        "--report", "summary", "--formats", "json", dict_path).stdout)}
    assert metrics["kernel time (ns)"] == 8000  # 5000 + 3000; the -48063 ns kernel is out


def test_long_legacy_trace_marker_list(tmp_path):
    """A legacy PyProf traceMarker with 200k frames decodes (in linear time: the converter
    appended each frame with scratch as large as everything before it; see
    JsonWriter.ScratchIsBoundedByWhatTheWriterWrites and docs/benchmarks.md)."""
    frames = [f"/home/user/project/train_{i}.py:{i}" for i in range(200_000)]
    db = SynthDb()
    t = db.thread(pid=100)
    with t.range(repr({"traceMarker": frames})):
        with t.range(repr({"mod": "torch.nn.functional", "op": "linear", "args": []})):
            t.launch(ELEMENTWISE)
    _, recs, summary = parse(db, tmp_path)
    (rec,) = recs
    assert rec["op"] == "linear" and rec["dialect"] == "legacy_pyprof"
    assert rec["trace"][:3] == frames[:3]
    assert "malformed 0" in summary


def test_trace_text_reaches_the_terminal_escaped(tmp_path):
    """Invalid UTF-8 and control characters in markers (a terminal would run ESC sequences)
    are escaped in the summary; the records stay valid UTF-8 JSON."""
    db = SynthDb()
    t = db.thread(pid=100)
    with t.range(b'{"v":1,"op":"aten::add\xff\xfe\x1b[2J\x07', domain="pyprof"):
        t.launch(ELEMENTWISE)
    t.range_at(b"back\xc3(\x1b]0;owned\x07\xc2\x9b", start=t.now + 500, end=t.now)
    t.advance(1000)
    path = tmp_path / "x.sqlite"
    db.save(path)
    res = subprocess.run([testlib.PARSE, str(path)], capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    err = res.stderr.decode("utf-8")  # strict: raises on invalid UTF-8
    assert "\x1b" not in err and "\x07" not in err and "\x9b" not in err
    assert "malformed marker" in err and "aten::add\\xff\\xfe\\x1b[2J\\x07" in err
    assert "back\\xc3(\\x1b]0;owned\\x07\\u009b" in err
    header, recs = testlib.read_records(res.stdout.decode("utf-8"))
    assert recs[0]["user_ranges"][0].startswith('pyprof:{"v":1,"op":"aten::add\ufffd')


def test_devices_read_alike_from_every_gpu_table_layout(tmp_path):
    """TARGET_INFO_CUDA_GPU (2020.3; 2020.5 beside a names-only TARGET_INFO_GPU) and the full
    TARGET_INFO_GPU (2021.2 on) describe the same GPU the same way in the header."""
    devices = {}
    for layout in ("2020.3", "2020.5", "2021.2"):
        db = SynthDb(layout=layout)
        db.thread(pid=100).launch(ELEMENTWISE)
        header, _, _ = parse(db, tmp_path, f"{layout}.sqlite")
        devices[layout] = header["devices"]
    assert devices["2020.3"] == devices["2020.5"] == devices["2021.2"]
    (gpu,) = devices["2021.2"]
    assert gpu["sm_count"] > 0 and gpu["clock_hz"] > 0 and gpu["total_memory"] > 0


def test_damaged_gpu_facts_read_as_unknown(tmp_path):
    """nsys 2020.x stores clock (kHz), bandwidth (KB/s) and memory (MiB) in smaller units than
    the header's: a negative value, or one whose conversion passes 64 bits, is unknown (0), never
    wrapped into a wrong peak."""
    db = SynthDb(layout="2020.3")
    db.thread(pid=100).launch(ELEMENTWISE)
    path = db.save(tmp_path / "damaged.sqlite")
    con = sqlite3.connect(path)
    con.execute("UPDATE TARGET_INFO_CUDA_GPU SET coreClockRate = ?, globalMemoryBandwidth = -5, "
                "globalMemorySize = ?", (2**62, 2**60))
    con.commit()
    con.close()
    header, _, _ = testlib.parse(path)
    (gpu,) = header["devices"]
    assert (gpu["clock_hz"], gpu["memory_bandwidth"], gpu["total_memory"]) == (0, 0, 0), gpu
    assert gpu["sm_count"] > 0  # the undamaged facts stay


@pytest.mark.parametrize("interned", [False, True])
def test_nested_ops_with_identical_spans_nest_by_push_order(tmp_path, interned):
    """A clock coarser than two nested pushes gives an op and the op it calls the same start and
    end. The database holds ranges in pop order (the inner first); the outer is the op pushed
    first, which has the smaller op id: it is the parent and comes first."""
    db = SynthDb()
    db.push_cost = db.pop_cost = 0  # no time passes between the pushes and pops
    t = db.thread(pid=100)
    with t.range("step 0"):
        t.advance(10)
        with t.pyprof_op("aten::linear", seq=1, interned=interned):
            with t.pyprof_op("aten::addmm", seq=1, interned=interned):
                with t.pyprof_op("aten::copy_", interned=interned):
                    pass
        t.advance(10)
    header, recs, _ = parse(db, tmp_path)
    assert [r["name"] for r in recs] == ["aten::linear", "aten::addmm", "aten::copy_"]
    linear, addmm, copy = recs
    assert linear["start"] == addmm["start"] == copy["start"]
    assert linear["duration"] == addmm["duration"] == copy["duration"]
    assert "parent_id" not in linear
    assert addmm["parent_id"] == linear["id"] and copy["parent_id"] == addmm["id"]


def mul_exp_kernel(x: dict, out: bool = False) -> dict:
    """A compiled-kernel object (docs/formats.md §1.5) of `(x * 2).exp()` fused over tensor `x`,
    reading x and writing its result; with `out`, each node names its output (x's shape)."""
    nodes = [{"op": "aten::mul", "overload": "Tensor", "args": {"self": x, "other": 2.0}},
             {"op": "aten::exp", "args": {"self": x}}]
    if out:
        nodes = [dict(n, out=x) for n in nodes]
    return {"nodes": nodes, "reads": [x], "writes": [x], "missing": 0}


def mark_call_sites(t, name: str) -> None:
    """Marks a compiled graph 0/0 that runs `name` at three places (docs/formats.md §1.5
    `call_site`): forward places 1 and 0 over [2, 8] and [4, 8] (32 and 64 FLOPs), backward
    place 0 over [8, 8] (128 FLOPs), each the fused mul/exp (16 FLOPs per row)."""
    for site, rows, backward in ((1, 2, False), (0, 4, False), (0, 8, True)):
        t.mark(json.dumps({"v": 1, "compiled_kernel": name,
                           "kernel": mul_exp_kernel(tensor([rows, 8])), "call_site": site,
                           "backward": backward, "graph": "0/0"}), domain="pyprof")


def test_compiled_kernel_marks_join_their_kernels_and_cost_them(tmp_path):
    """torch.compile's kernel metadata (docs/formats.md §1.5): each compiled_kernel mark
    becomes one `compiled_kernel` line of net.dict, and prof costs the records of that name
    from it. By hand: mul by a constant and exp over [4, 8] fp32 (32 elements): 32 + 32 FLOPs;
    the kernel reads x and writes y once: 128 + 128 bytes; one by one the nodes would read and
    write 2 x 256 bytes. A name marked twice with different nodes (Triton's names carry no
    graph) is ambiguous: no line, a warning, its record not costed. A kernel whose metadata
    lacks a node is not costed either (no partial sums)."""
    x = tensor([4, 8], device="cpu")
    fused = mul_exp_kernel(x, out=True)
    partial = dict(fused, missing=1)

    def mark(t, name, kernel):
        t.mark(json.dumps({"v": 1, "compiled_kernel": name, "kernel": kernel}), domain="pyprof")

    db = SynthDb()
    t = db.thread(pid=100)
    mark(t, "graph_0_cpp_fused_exp_mul_0", fused)
    mark(t, "graph_0_cpp_fused_exp_mul_0", fused)  # marked again alike (a recompile): one line
    mark(t, "graph_0_cpp_fused_exp_mul_1", partial)
    mark(t, "triton_poi_fused_exp_mul_0", fused)
    mark(t, "triton_poi_fused_exp_mul_0", dict(fused, nodes=fused["nodes"][:1]))
    mark(t, "graph_0_cpp_fused_bad_2", None)  # no kernel object: a malformed marker
    for step in range(2):
        with t.range(f"step {step}"):
            for name in ("graph_0_cpp_fused_exp_mul_0", "graph_0_cpp_fused_exp_mul_1",
                         "triton_poi_fused_exp_mul_0"):
                with t.pyprof_op(name, args={}):
                    t.advance(500)
    path = tmp_path / "c.sqlite"
    db.save(path)
    res = testlib.run_tool(testlib.PARSE, path, "-o", tmp_path / "c.dict")
    assert res.returncode == 0, res.stderr
    assert "ambiguous compiled kernel" in res.stderr and "triton_poi_fused_exp_mul_0" in res.stderr
    assert "compiled_kernel mark without a \"kernel\" object" in res.stderr
    with open(tmp_path / "c.dict") as f:
        lines = [json.loads(line) for line in f]
    defined = [d for d in lines if d.get("kind") == "compiled_kernel"]
    assert [d["name"] for d in defined] == ["graph_0_cpp_fused_exp_mul_0",
                                            "graph_0_cpp_fused_exp_mul_1"]
    assert defined[0]["kernel"] == fused  # byte for byte what the mark said
    assert lines.index(defined[-1]) < min(i for i, d in enumerate(lines) if d.get("kind") == "op")

    res = testlib.prof("--json", "-c", "kernel,flops,bytes,params,family", "--iterations", "all",
                       str(tmp_path / "c.dict"))
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    by_name = {r["kernel"]: r for r in rows}
    assert len(rows) == 6
    full = by_name["graph_0_cpp_fused_exp_mul_0"]
    assert (full["flops"], full["bytes"], full["family"]) == (64, 256, "compiled")
    assert full["params"] == "nodes=2,fp32,unfused_bytes=512"
    for name in ("graph_0_cpp_fused_exp_mul_1", "triton_poi_fused_exp_mul_0"):
        assert by_name[name]["flops"] is None, by_name[name]  # "na"
    res = testlib.prof("--report", "summary", "--formats", "json", "--iterations", "all",
                       str(tmp_path / "c.dict"))
    summary = {r["Metric"]: r["Value"] for r in testlib.report_rows(res.stdout)}
    assert int(summary["Inductor kernels (torch.compile)"]) == 6
    assert int(summary["Inductor kernels attributed to their ATen nodes"]) == 4
    assert int(summary["Inductor kernels opaque (no compile metadata)"]) == 2


def test_cuda_graph_replays_take_the_ops_of_their_capture(tmp_path):
    """pyprof's PYPROF_CUDA_GRAPH_NODES (docs/formats.md §2.1): a replayed kernel's node is a
    clone of the node created at capture, inside the op that launched it (a real libcupti also
    announces it as created, at instantiation); parse attributes the kernel to the capture,
    keeps the replay's launch call, and leaves a node it cannot trace back (no
    row; a damaged clone cycle) to the replay's ranges."""
    from nsys_synth import global_tid

    db = SynthDb()
    t = db.thread(pid=100)
    captured = {}
    with t.pyprof_op("aten::addmm", seq=-1):
        t.advance(100)
        captured[11] = t.now
        t.advance(100)
    with t.pyprof_op("aten::relu", seq=-1):
        t.advance(100)
        captured[12] = t.now
        t.advance(100)
    t.advance(1000)
    with t.range("cuda graph replay"):
        t.graph_launch([GEMM, ELEMENTWISE, ELEMENTWISE, ELEMENTWISE])  # nodes 1..4
    path = tmp_path / "g.sqlite"
    db.save(path)
    gtid = global_tid(100, t.tid)
    # As a real libcupti announces them (an H200, docs/gpu-validation.md): nodes 1 and 2 of the
    # executable graph are created during instantiation (here inside the replay's range), then
    # announced as clones of the captured 11 and 12. The clone row is the one that counts.
    rows = [(11, None, 7, captured[11], gtid), (12, None, 7, captured[12], gtid),
            (1, None, 8, t.now, gtid), (1, 11, 8, t.now, gtid),
            (2, None, 8, t.now, gtid), (2, 12, 8, t.now, gtid),
            (3, 5, 8, t.now, gtid), (5, 3, 8, t.now, gtid)]  # 3 and 5 clone each other
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE PYPROF_CUDA_GRAPH_NODES (nodeId INTEGER NOT NULL, "
                    "originalNodeId INTEGER, graphId INTEGER NOT NULL, start INTEGER NOT NULL, "
                    "globalTid INTEGER NOT NULL)")
        con.executemany("INSERT INTO PYPROF_CUDA_GRAPH_NODES VALUES (?, ?, ?, ?, ?)", rows)
    _, recs, summary = testlib.parse(path, timeout=60)
    gemm, relu, cycle, unknown = recs
    assert [r["graph_node"] for r in recs] == [1, 2, 3, 4]
    assert (gemm["op"], relu["op"]) == ("aten::addmm", "aten::relu")
    assert "user_ranges" not in gemm  # the capture's ranges, not the replay's
    assert gemm["launch"]["api"] == "cudaGraphLaunch"  # the replay's call
    for r in (cycle, unknown):
        assert r["op"] is None and r["user_ranges"] == ["cuda graph replay"], r
    assert "CUDA graphs: graph-launched: 4, 2 attributed to their capture" in summary


def test_triton_names_two_graphs_share_join_by_their_region(tmp_path):
    """Triton names carry no graph: a recompile (or a graph break) gives two graphs a kernel of
    one name computing different nodes. pyprof's marks say their graph's compile id
    (docs/formats.md §1.5), and the graph's code runs inside Dynamo's `Torch-Compiled Region:
    <id>` range: parse writes one compiled_kernel line per graph and gives each record the
    compile id of the innermost region around its op (a graph break's region 1/0 runs inside
    0/0), or, for a backward kernel, around the forward op it is paired with; prof joins by
    both. A graph marking a name with two objects, or a mark that names no graph beside one that
    does, leaves the name ambiguous. By hand: mul and exp over [n, 8] fp32 cost 16n FLOPs and
    move 64n bytes; graph 1/0's kernel is the exp alone over [8, 8]: 64 FLOPs, 512 bytes."""
    def fused(rows):
        return mul_exp_kernel(tensor([rows, 8]))

    def mark(t, name, kernel, graph=None):
        body = {"v": 1, "compiled_kernel": name, "kernel": kernel}
        if graph:
            body["graph"] = graph
        t.mark(json.dumps(body), domain="pyprof")

    name = "triton_poi_fused_exp_mul_0"
    db = SynthDb()
    t = db.thread(pid=100)
    engine = db.thread(pid=100, tid=101)
    exp_only = dict(fused(8), nodes=fused(8)["nodes"][1:])  # graph 1/0's kernel: exp alone
    for graph, kernel in (("0/0", fused(4)), ("0/1", fused(2)), ("1/0", exp_only)):
        mark(t, name, kernel, graph)
        mark(t, name, kernel, graph)  # the same again (loaded from a cache): one line
    mark(t, "triton_poi_fused_twice_0", fused(4), "0/0")
    mark(t, "triton_poi_fused_twice_0", fused(2), "0/0")  # one graph, two objects
    mark(t, "triton_poi_fused_unsaid_0", fused(4), "0/0")
    mark(t, "triton_poi_fused_unsaid_0", fused(2))  # no graph said
    with t.range("step 0"):
        with t.pyprof_op("Torch-Compiled Region: 0/1", seq=-1):
            with t.pyprof_op("CompiledFunction", seq=7):
                t.launch(name, duration=1000)
                t.launch("triton_poi_fused_twice_0", duration=1000)
                t.launch("triton_poi_fused_unsaid_0", duration=1000)
        with t.pyprof_op("Torch-Compiled Region: 0/0", seq=-1):
            with t.pyprof_op("CompiledFunction", seq=8):
                t.launch(name, duration=1000)
            with t.pyprof_op("Torch-Compiled Region: 1/0", seq=-1):  # after a graph break
                with t.pyprof_op("CompiledFunction", seq=9):
                    t.launch(name, duration=1000)
        t.advance(1000)
        engine.wait_until(t.now)
        # Backward of the 0/1 graph: paired by sequence number with its CompiledFunction.
        with engine.pyprof_op("CompiledFunctionBackward", scope="backward", seq=7,
                              fwd_tid=t.rf_tid):
            engine.launch(name, duration=1000)
    path = tmp_path / "g.sqlite"
    db.save(path)
    res = testlib.run_tool(testlib.PARSE, path, "-o", tmp_path / "g.dict")
    assert res.returncode == 0, res.stderr
    warned = res.stderr[res.stderr.find("ambiguous compiled kernel"):]
    assert "triton_poi_fused_twice_0" in warned and "triton_poi_fused_unsaid_0" in warned
    # Each says its own reason: the graph that runs one name at two places, or the marks'
    # missing graph.
    assert 'compiled graph 0/0 runs a kernel named "triton_poi_fused_twice_0" at several places' \
        in warned
    assert ('have a kernel named "triton_poi_fused_unsaid_0" that computes different nodes, and '
            'their marks do not say which graph is which') in warned
    assert f'"{name}"' not in warned
    with open(tmp_path / "g.dict") as f:
        lines = [json.loads(line) for line in f]
    defined = [(d["name"], d.get("graph")) for d in lines if d.get("kind") == "compiled_kernel"]
    assert defined == [(name, "0/0"), (name, "0/1"), (name, "1/0")]
    records = [d for d in lines if d.get("kind") == "kernel"]
    assert [(r["name"], r["dir"], r.get("compiled_graph")) for r in records] == [
        (name, "fprop", "0/1"), ("triton_poi_fused_twice_0", "fprop", None),
        ("triton_poi_fused_unsaid_0", "fprop", None), (name, "fprop", "0/0"),
        (name, "fprop", "1/0"), (name, "bprop", "0/1")]
    res = testlib.prof("--json", "-c", "kernel,dir,flops,bytes", "--iterations", "all",
                       str(tmp_path / "g.dict"))
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(r["kernel"], r["flops"], r["bytes"]) for r in rows] == [
        (name, 32, 128), ("triton_poi_fused_twice_0", None, None),
        ("triton_poi_fused_unsaid_0", None, None), (name, 64, 256), (name, 64, 512),
        (name, 32, 128)]
    # `--report compiled` names the kernels that stayed opaque. By hand: the fused kernel's
    # nodes one by one read and write [n, 8] fp32 twice, 128n bytes against its 64n, over
    # 2 + 4 + 2 rows (graphs 0/1, 0/0, 0/1's backward): 1,024 B against 512; the exp alone
    # over 8 rows (graph 1/0) moves 512 B either way. 1,536 B unfused, 1,024 moved.
    report = testlib.prof("--report", "compiled", "--formats", "json", "--iterations", "all",
                          str(tmp_path / "g.dict"))
    compiled = {r["Kernel"]: r for r in testlib.report_rows(report.stdout)}
    assert {k: (r["Attributed"], r["Count"], r["FLOPs(FMA=2)"], r["Nodes"])
            for k, r in compiled.items()} == {
        name: ("nodes", 4, 192, 2), "triton_poi_fused_twice_0": ("opaque", 1, None, None),
        "triton_poi_fused_unsaid_0": ("opaque", 1, None, None)}
    fused = compiled[name]
    assert (fused["Bytes(ideal DRAM)"], fused["Unfused bytes"]) == (1024, 1536)
    assert fused["Fusion saved %"] == pytest.approx(100 / 3, abs=0.05)
    # `pyprof export` gives each slice its own graph's nodes.
    trace = tmp_path / "g.json"
    res = testlib.run_tool(os.path.join(testlib.BIN, "pyprof-export"), tmp_path / "g.dict",
                           "-o", trace)
    assert res.returncode == 0, res.stderr
    with open(trace) as f:
        slices = [e for e in json.load(f)["traceEvents"]
                  if e.get("cat") == "kernel" and e["name"] == name]
    assert [s["args"]["ATen nodes"] for s in slices] == [["aten::mul", "aten::exp"]] * 2 + [
        ["aten::exp"], ["aten::mul", "aten::exp"]]


def test_compiled_call_sites_join_each_record_to_its_place(tmp_path):
    """Inductor's C++ wrapper runs each extern ATen call through a shim named for the op, at
    several places of one graph: the marks number the places (`call_site`, in code order, and
    `backward`, docs/formats.md §1.5), and each record of the name is joined to the place of its
    own range among the ranges of its name directly inside the same range (one run of the graph
    calls them in code order), in the forward or the backward graph. By hand: mul and exp over
    [n, 8] fp32 cost 16n FLOPs; forward places 0 and 1 cost 64 and 32, backward place 0 128."""
    def kernel(rows):
        return mul_exp_kernel(tensor([rows, 8]))

    shim = "aoti_torch_cpu_mm_out"
    db = SynthDb()
    t = db.thread(pid=100)
    engine = db.thread(pid=100, tid=101)
    mark_call_sites(t, shim)
    # A place without its pass: not a key (an error, counted as a malformed marker).
    t.mark(json.dumps({"v": 1, "compiled_kernel": "aoti_torch_cpu_bmm_out", "kernel": kernel(1),
                       "call_site": 0, "graph": "0/0"}), domain="pyprof")
    seq = 7
    for step in range(2):
        with t.range(f"step {step}"):
            with t.pyprof_op("Torch-Compiled Region: 0/0", seq=-1):
                with t.pyprof_op("CompiledFunction", seq=seq):
                    for _ in range(2):
                        with t.pyprof_op(shim):
                            t.advance(1000)
            t.advance(1000)
            engine.wait_until(t.now)
            with engine.pyprof_op("CompiledFunctionBackward", scope="backward", seq=seq,
                                  fwd_tid=t.rf_tid):
                with engine.pyprof_op(shim):
                    engine.advance(1000)
            t.wait_until(engine.now)
        seq += 1
    with t.pyprof_op(shim):  # outside every graph run
        t.advance(1000)
    path = tmp_path / "s.sqlite"
    db.save(path)
    res = testlib.run_tool(testlib.PARSE, path, "-o", tmp_path / "s.dict")
    assert res.returncode == 0, res.stderr
    assert "several places" not in res.stderr
    assert "compiled_kernel mark with a call_site but no backward flag" in res.stderr
    with open(tmp_path / "s.dict") as f:
        lines = [json.loads(line) for line in f]
    defined = sorted(d.get("graph") for d in lines
                     if d.get("kind") == "compiled_kernel" and d["name"] == shim)
    assert defined == ["0/0#b0", "0/0#f0", "0/0#f1"]
    shims = [(r["dir"], r.get("compiled_graph")) for r in lines
             if r.get("kind") == "op" and r["name"] == shim]
    assert shims == [("fprop", "0/0#f0"), ("fprop", "0/0#f1"), ("bprop", "0/0#b0")] * 2 + [
        ("fprop", None)]
    res = testlib.prof("--json", "-c", "kernel,dir,flops", "--iterations", "all",
                       str(tmp_path / "s.dict"))
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(r["dir"], r["flops"]) for r in rows if r["kernel"] == shim] == [
        ("fprop", 64), ("fprop", 32), ("bprop", 128)] * 2 + [("fprop", None)]


def test_compiled_call_kernels_on_a_gpu_join_their_calls_place(tmp_path):
    """On a GPU, the C++ wrapper's extern call (`aoti_torch_cuda_mm_out`, a RecordFunction with
    the kernels it launched inside) runs cuBLAS kernels, named for neither the shim nor a mark:
    each kernel takes the graph key of the call it ran in, the op's place for a forward kernel,
    the op inside the backward node for a backward one, and prof costs the call's marks once per
    call, shared by its kernels by duration as an eager op's cost is. A call of one place (a
    name without call_site, `aoti_torch_cuda_bmm_out`) joins by its name alone. A kernel under
    no marked call keeps its own op's cost; a kernel that is marked itself keeps its own.
    By hand: mul and exp over [n, 8] fp32 cost 16n FLOPs; places f0 64, f1 32, b0 128; the bmm
    call 16; forward place 0's gemm (3000 ns) and its split-K reduction (1000 ns) share 64 as
    48 and 16."""
    def kernel(rows):
        return mul_exp_kernel(tensor([rows, 8]))

    shim, single, triton = "aoti_torch_cuda_mm_out", "aoti_torch_cuda_bmm_out", \
        "triton_poi_fused_exp_mul_0"
    gemm, splitk = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", \
        "splitKreduce_kernel"
    db = SynthDb()
    t = db.thread(pid=100)
    engine = db.thread(pid=100, tid=101)
    mark_call_sites(t, shim)
    t.mark(json.dumps({"v": 1, "compiled_kernel": single, "kernel": kernel(1), "graph": "0/0"}),
           domain="pyprof")
    t.mark(json.dumps({"v": 1, "compiled_kernel": triton, "kernel": kernel(4), "graph": "0/0"}),
           domain="pyprof")
    with t.range("step 0"):
        with t.pyprof_op("Torch-Compiled Region: 0/0", seq=-1):
            with t.pyprof_op("CompiledFunction", seq=7):
                with t.pyprof_op(shim):
                    t.launch(gemm, duration=3000)
                    t.launch(splitk, duration=1000)
                with t.pyprof_op(shim):
                    t.launch(gemm, duration=1000)
                with t.pyprof_op(single):
                    t.launch(gemm, duration=1000)
                with t.pyprof_op(triton):  # a marked kernel under a range of its own name
                    t.launch(triton, duration=1000)
        t.advance(1000)
        engine.wait_until(t.now)
        with engine.pyprof_op("CompiledFunctionBackward", scope="backward", seq=7,
                              fwd_tid=t.rf_tid):
            with engine.pyprof_op(shim):
                engine.launch(gemm, duration=2000)
        t.wait_until(engine.now)
    with t.pyprof_op("aten::mm", args={"self": tensor([4, 8]), "mat2": tensor([8, 8])}):
        t.launch(gemm, duration=1000)  # eager: under no marked call
    path = tmp_path / "g.sqlite"
    db.save(path)
    res = testlib.run_tool(testlib.PARSE, path, "-o", tmp_path / "g.dict")
    assert res.returncode == 0, res.stderr
    assert "several places" not in res.stderr and "ambiguous" not in res.stderr, res.stderr
    with open(tmp_path / "g.dict") as f:
        records = [d for d in (json.loads(line) for line in f) if d.get("kind") == "kernel"]
    assert [(r["name"], r["dir"], r.get("compiled_graph")) for r in records] == [
        (gemm, "fprop", "0/0#f0"), (splitk, "fprop", "0/0#f0"), (gemm, "fprop", "0/0#f1"),
        (gemm, "fprop", None), (triton, "fprop", None), (gemm, "bprop", "0/0#b0"),
        (gemm, "fprop", None)]
    res = testlib.prof("--json", "-c", "kernel,op,dir,flops", "--iterations", "all",
                       str(tmp_path / "g.dict"))
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(r["kernel"], r["dir"], r["flops"]) for r in rows] == [
        (gemm, "fprop", 48), (splitk, "fprop", 16), (gemm, "fprop", 32), (gemm, "fprop", 16),
        (triton, "fprop", 64), (gemm, "bprop", 128), (gemm, "fprop", 2 * 4 * 8 * 8)]
    summary = testlib.prof("--report", "summary", "--formats", "json", "--iterations", "all",
                           str(tmp_path / "g.dict"))
    metrics = {r["Metric"]: r["Value"] for r in testlib.report_rows(summary.stdout)}
    assert int(metrics["C++ wrapper extern-call kernels costed from the call's marks"]) == 5
    # `--report compiled`: one row per kernel name, with how it was attributed.
    report = testlib.prof("--report", "compiled", "--formats", "json", "--iterations", "all",
                          str(tmp_path / "g.dict"))
    rows = {r["Kernel"]: r for r in testlib.report_rows(report.stdout)}
    assert {k: (r["Dir"], r["Attributed"], r["Count"], r["FLOPs(FMA=2)"])
            for k, r in rows.items()} == {
        gemm: ("fprop/bprop", "extern call", 4, 48 + 32 + 16 + 128),
        splitk: ("fprop", "extern call", 1, 16), triton: ("fprop", "nodes", 1, 64)}


def test_compiled_triton_kernels_on_a_gpu_profile(tmp_path):
    """The GPU side of compiled-kernel marks: a Triton kernel launched inside an op (here
    CompiledFunction, as Inductor's launcher runs under it) joins its compiled_kernel line by
    name; prof gives it the kernel's own cost, not a share of the op instance it launched in
    (the aten::mm launched in the same op keeps its own cost too); `pyprof export` puts the
    kernel's ATen nodes on its GPU slice."""
    fused = mul_exp_kernel(tensor([4, 8]))
    db = SynthDb()
    t = db.thread(pid=100)
    t.mark(json.dumps({"v": 1, "compiled_kernel": "triton_poi_fused_exp_mul_0",
                       "kernel": fused}), domain="pyprof")
    with t.range("step 0"):
        with t.pyprof_op("CompiledFunction", seq=-1):
            with t.pyprof_op("aten::mm", seq=-1, args={"self": tensor([64, 32]),
                                                      "mat2": tensor([32, 16])}):
                t.launch(GEMM, duration=8000)
            t.launch("triton_poi_fused_exp_mul_0", duration=2000)
            t.launch("triton_poi_fused_exp_mul_0", duration=6000)  # run twice: each its own cost
    path = tmp_path / "t.sqlite"
    db.save(path)
    dict_path = tmp_path / "t.dict"
    testlib.parse_to(path, dict_path)
    res = testlib.prof("--json", "-c", "kernel,op,flops,bytes,family", "--iterations", "all",
                       str(dict_path))
    rows = list(map(json.loads, res.stdout.splitlines()))
    tritons = [r for r in rows if r["kernel"] == "triton_poi_fused_exp_mul_0"]
    assert len(tritons) == 2
    for triton in tritons:
        assert (triton["op"], triton["flops"], triton["bytes"], triton["family"]) == (
            "CompiledFunction", 64, 256, "compiled")
    gemm, = (r for r in rows if r["kernel"] != "triton_poi_fused_exp_mul_0")
    assert gemm["flops"] == 2 * 64 * 32 * 16
    trace = tmp_path / "t.json"
    res = testlib.run_tool(os.path.join(testlib.BIN, "pyprof-export"), dict_path, "-o", trace)
    assert res.returncode == 0, res.stderr
    with open(trace) as f:
        events = json.load(f)["traceEvents"]
    slices = [e for e in events if e.get("cat") == "kernel"
              and e["name"] == "triton_poi_fused_exp_mul_0"]
    assert len(slices) == 2
    for s in slices:
        assert s["args"]["ATen nodes"] == ["aten::mul", "aten::exp"]
        assert s["args"]["FLOPs"] == 64


def test_dynamic_shape_kernels_take_the_sizes_of_their_graph_call(tmp_path):
    """A graph compiled with symbolic sizes (dynamic shapes): its marks give sizes as
    expressions ("s0", "8*s0"), and each call of the graph sends a `compiled_call` mark with the
    sizes it ran with (docs/formats.md §1.5), on the thread that runs it. Each record gets the
    sizes of the last call of its region's graph on its launch thread before its launch
    (`compiled_symbols`), and prof costs it with them. By hand: mul and exp over [n, 8] fp32:
    16n FLOPs, 64n bytes. A call of another graph in between, a call on another thread, or none
    at all leave the record without sizes: `na`."""
    x = {"shape": ["s0", 8], "dtype": "float32", "stride": [8, 1], "device": "cuda:0",
         "symbolic": True}
    kernel = mul_exp_kernel(x)
    name = "triton_poi_fused_exp_mul_0"
    db = SynthDb()
    t = db.thread(pid=100)
    engine = db.thread(pid=100, tid=101)

    def call(thread, graph, **symbols):
        thread.mark(json.dumps({"v": 1, "compiled_call": graph, "symbols": symbols}),
                    domain="pyprof")

    t.mark(json.dumps({"v": 1, "compiled_kernel": name, "kernel": kernel, "graph": "0/1"}),
           domain="pyprof")
    t.mark(json.dumps({"v": 1, "compiled_call": "0/1"}), domain="pyprof")  # no sizes: malformed
    for seq, rows in ((7, 4), (8, 2)):
        with t.pyprof_op("Torch-Compiled Region: 0/1", seq=-1):
            call(t, "0/1", s0=rows)
            with t.pyprof_op("CompiledFunction", seq=seq):
                t.launch(name, duration=1000)
    with t.pyprof_op("Torch-Compiled Region: 0/1", seq=-1):
        call(t, "0/1", s0=4)
        call(t, "1/0", s0=16)  # another graph's call last: not this kernel's sizes
        with t.pyprof_op("CompiledFunction", seq=9):
            t.launch(name, duration=1000)
    t.advance(1000)
    engine.wait_until(t.now)
    call(t, "0/1", s0=32)  # the forward thread's: not the backward's
    with engine.pyprof_op("CompiledFunctionBackward", scope="backward", seq=8, fwd_tid=t.rf_tid):
        call(engine, "0/1", s0=2)
        engine.launch(name, duration=1000)
    with engine.pyprof_op("CompiledFunctionBackward", scope="backward", seq=7, fwd_tid=t.rf_tid):
        engine.launch(name, duration=1000)  # the engine's last call said 2, no newer one
    engine2 = db.thread(pid=100, tid=102)
    engine2.wait_until(engine.now)
    with engine2.pyprof_op("CompiledFunctionBackward", scope="backward", seq=9, fwd_tid=t.rf_tid):
        engine2.launch(name, duration=1000)  # no call on this thread
    path = tmp_path / "d.sqlite"
    db.save(path)
    res = testlib.run_tool(testlib.PARSE, path, "-o", tmp_path / "d.dict")
    assert res.returncode == 0, res.stderr
    assert "compiled_call mark without a \"symbols\" object" in res.stderr
    with open(tmp_path / "d.dict") as f:
        lines = [json.loads(line) for line in f]
    records = [d for d in lines if d.get("kind") == "kernel"]
    assert [(r["dir"], r.get("compiled_symbols")) for r in records] == [
        ("fprop", {"s0": 4}), ("fprop", {"s0": 2}), ("fprop", None), ("bprop", {"s0": 2}),
        ("bprop", {"s0": 2}), ("bprop", None)]
    res = testlib.prof("--json", "-c", "kernel,dir,flops,bytes", "--iterations", "all",
                       str(tmp_path / "d.dict"))
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(r["flops"], r["bytes"]) for r in rows] == [
        (64, 256), (32, 128), (None, None), (32, 128), (32, 128), (None, None)]


def leaked_legacy_ranges(db, t, leaked, session_end_gap=2_000_000):
    """A legacy PyProf (pyprof.nvtx) capture shaped like a real nsys 2024.2 export of a video
    model: `leaked` trace/argument markers of `torch.__getattr__('extra_repr')` are pushed and
    never popped (the wrapper has no try/finally, and the call raised), then the model's own
    calls run, each with its kernel. Returns the ops the kernels ran in."""
    frames = repr({"traceMarker": ["train.py:40", "model.py:88"]})
    getattr_marker = repr({"mod": "torch", "op": "__getattr__",
                           "args": [{"name": "", "type": "str", "value": "extra_repr"}]})
    for _ in range(leaked):
        t.push(frames)
        t.push(getattr_marker)
    ops = []
    for i in range(4):
        op = ("conv3d", "linear", "gelu", "softmax")[i]
        with t.range(frames):
            with t.range(repr({"mod": "torch.nn.functional", "op": op, "args": [
                    {"name": "", "type": "tensor", "shape": (8, 64), "dtype": "float32"}]})):
                t.launch(GEMM if op in ("conv3d", "linear") else ELEMENTWISE)
        ops.append(op)
    db.end_session(t.now + session_end_gap)
    return ops


@pytest.mark.parametrize("analysis_details", [True, False])
def test_ranges_closed_by_the_session_end_enclose_nothing(tmp_path, analysis_details):
    """Nsight Systems writes a push never popped with the session's end as its end. Read as a
    real range, the outermost leaked legacy `__getattr__` marker named the op of every kernel
    after it. Such ranges are unclosed: counted, said, and kept out of attribution, whether the
    file has the session's stop time (ANALYSIS_DETAILS, nsys >= 2022.1) or not (then the shared
    last end of several ranges of one thread gives them away)."""
    db = SynthDb()
    t = db.thread(pid=100)
    ops = leaked_legacy_ranges(db, t, leaked=351)
    path = tmp_path / "x.sqlite"
    db.save(path)
    if not analysis_details:
        with sqlite3.connect(path) as con:
            con.execute("DROP TABLE ANALYSIS_DETAILS")
    _, recs, summary = testlib.parse(path, timeout=60)
    assert [r["op"] for r in recs] == ops
    assert all(r["dialect"] == "legacy_pyprof" for r in recs)
    assert "unclosed 702" in summary
    assert ("note: 702 ranges were never closed (702 of them ended only by the session's end): "
            "they enclose nothing") in summary
    assert "range never closed (ended by the session's end) (702x)" in summary


def test_a_last_pop_is_not_taken_for_the_session_end(tmp_path):
    """A range popped last of all, on its own (a `main` range around the program), and ranges
    that end before the session's stop time are real ranges: nothing is reopened."""
    db = SynthDb()
    t = db.thread(pid=100)
    with t.range(repr({"mod": "torch.nn.functional", "op": "linear", "args": []})):
        t.launch(GEMM)
        t.advance(50_000)  # the pop comes well after the kernel ended
    db.end_session(t.now + 1_000_000)
    _, (rec,), summary = parse(db, tmp_path)
    assert rec["op"] == "linear"
    assert "unclosed 0" in summary and "never closed" not in summary
    path = tmp_path / "no_details.sqlite"
    (tmp_path / "x.sqlite").rename(path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE ANALYSIS_DETAILS")
    _, (rec,), summary = testlib.parse(path, timeout=60)
    assert rec["op"] == "linear" and "unclosed 0" in summary
