"""parse end to end on CPU: real models trained under `pyprof profile`, then `pyprof parse`.

A CPU-only database has no kernels, so parse writes one record per op instance. The oracle is
an independent reading of the same database (tests/pyprof_db.py: sqlite3 + json), with the
nesting and the forward/backward pairing recomputed here in Python.
"""

import os

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

TRAIN = os.path.join(testlib.ROOT, "examples", "train.py")
# The autograd engine wraps each node in a scope named like this; parse keeps it as a user
# range (it is not an op: the node inside it is).
ENGINE_WRAPPER = "autograd::engine::evaluate_function: "


def op_markers(ranges):
    """Op and backward-node markers, the op instances parse must report."""
    return [r for r in pyprof_db.ops(ranges) if r.marker["scope"] in ("function", "backward")
            and not r.marker["op"].startswith(ENGINE_WRAPPER)]


def run_parse(db, out, *extra):
    """`python -m pyprof.parse DB -o OUT`: the Python entry point, not the executable."""
    return testlib.run_tool(testlib.PY, "-m", "pyprof.parse", db, "-o", out, *extra,
                            timeout=300, cwd=testlib.ROOT)


def nest(ranges):
    """Parent of every range: the tightest range of the same thread that contains it."""
    parent = {}
    by_thread = {}
    for r in ranges:
        by_thread.setdefault(r.global_tid, []).append(r)
    for rs in by_thread.values():
        rs.sort(key=lambda r: (r.start, -(r.end or 2**62)))
        stack = []
        for r in rs:
            end = r.end if r.end is not None else 2**62
            while stack and (stack[-1].end if stack[-1].end is not None else 2**62) < r.start:
                stack.pop()
            p = next((s for s in reversed(stack)
                      if (s.end if s.end is not None else 2**62) >= end), None)
            parent[id(r)] = p
            stack.append(r)
    return parent


def ancestors(r, parent):
    p = parent[id(r)]
    while p is not None:
        yield p
        p = parent[id(p)]


# ~3 s a model: `-m "not slow"` runs lenet only.
@pytest.fixture(scope="module",
                params=testlib.all_but_one_slow(["lenet", "mlp", "transformer", "lstm"], "lenet"))
def parsed(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    res = pyprof_db.profile(tmp, TRAIN, "--model", request.param, "--steps", "2", "--batch", "4")
    assert res.returncode == 0, res.stderr
    db = tmp / "net.sqlite"
    res = run_parse(db, tmp / "net.dict")
    assert res.returncode == 0, res.stderr
    header, records = testlib.read_dict(tmp / "net.dict")
    ranges = pyprof_db.read_ranges(str(db))
    return request.param, header, records, ranges, res.stderr


def test_header_and_summary(parsed):
    _, header, records, _, summary = parsed
    assert header["pyprof_dict"] == 2
    assert header["format"] == "pyprof"
    assert header["records"] == "op"  # CPU-only run: one record per op instance
    assert "no GPU activity (CPU-only profile)" in summary
    assert f"{len(records)} op instances" in summary


def test_every_op_instance_once(parsed):
    """Each op or backward-node marker in the database is exactly one record, same times."""
    _, _, records, ranges, _ = parsed
    expected = {r.marker["id"]: r for r in op_markers(ranges)}
    got = {}
    for rec in records:
        assert rec["kind"] == "op"
        assert rec["id"] not in got, f"op id {rec['id']} written twice"
        got[rec["id"]] = rec
    assert set(got) == set(expected)
    for op_id, r in expected.items():
        rec = got[op_id]
        assert rec["name"] == r.marker["op"]
        assert rec["start"] == r.start and rec["duration"] == r.end - r.start
        assert rec["tid"] == r.tid and rec["pid"] == r.pid
    starts = [rec["start"] for rec in records]
    assert starts == sorted(starts), "records must be in CPU start order"


def test_self_time(parsed):
    """self = duration minus the op/backward-node ranges directly inside (recomputed here)."""
    _, _, records, ranges, _ = parsed
    op_ranges = op_markers(ranges)
    parent = nest(op_ranges)
    child_time = {}
    for r in op_ranges:
        p = parent[id(r)]
        if p is not None:
            child_time[p.marker["id"]] = child_time.get(p.marker["id"], 0) + r.end - r.start
    by_id = {rec["id"]: rec for rec in records}
    for r in op_ranges:
        rec = by_id[r.marker["id"]]
        p = parent[id(r)]
        assert rec.get("parent_id") == (p.marker["id"] if p is not None else None)
        assert rec["self_duration"] == rec["duration"] - child_time.get(r.marker["id"], 0)
        assert 0 <= rec["self_duration"] <= rec["duration"]


def test_backward_paired_with_forward_op_and_module(parsed):
    """Every backward node with a seq pairs with the forward op that created it: of the forward
    ops of the same forward thread and seq, the one that started last before the node (the
    innermost of those starting then). It carries that op's name, arguments and module path.
    (Ops on tensors that need no gradient share the seq of the next node; on torch 2.7 a run of
    them can nest deeper than the creator, so "the innermost" alone picks the wrong one.)"""
    model, _, records, ranges, _ = parsed
    all_ops = op_markers(ranges)
    mods = pyprof_db.modules(ranges)
    parent = nest(all_ops + mods)
    in_backward = {id(r) for r in all_ops
                   if any(a.marker.get("scope") == "backward" for a in ancestors(r, parent))}
    candidates = {}
    for r in all_ops:
        m = r.marker
        if m["scope"] != "function" or m["seq"] < 0 or id(r) in in_backward:
            continue
        depth = sum(1 for _ in ancestors(r, parent))
        candidates.setdefault((r.pid, m["tid"], m["seq"]), []).append((r.start, depth, r))

    def creator(node):
        before = [c for c in candidates.get((node.pid, node.marker["fwd_tid"], node.marker["seq"]),
                                            []) if c[0] <= node.start]
        return max(before, key=lambda c: c[:2]) if before else None

    by_id = {rec["id"]: rec for rec in records}
    nodes = [r for r in all_ops if r.marker["scope"] == "backward" and r.marker["seq"] >= 0]
    assert nodes, "a training step must record backward nodes"
    paired = 0
    for node in nodes:
        rec = by_id[node.marker["id"]]
        assert rec["dir"] == "bprop"
        assert rec["bwd_node"] == node.marker["op"]
        hit = creator(node)
        if hit is None:
            assert rec["paired"] is False
            continue
        fwd = hit[2]
        paired += 1
        assert rec["paired"] is True
        assert rec["fwd_op_id"] == fwd.marker["id"]
        assert rec["op"] == fwd.marker["op"]
        assert rec["args"] == fwd.marker["args"]
        fwd_module = next((a for a in ancestors(fwd, parent) if "module" in a.marker), None)
        assert rec.get("module") == (fwd_module.marker["module"] if fwd_module else None)
    # Only nodes without a forward op in the profile (AccumulateGrad has seq -1 and is not
    # here) may stay unpaired: in these models every node's forward op was recorded.
    assert paired == len(nodes)


def test_backward_lands_on_forward_modules(parsed):
    """Hand-checked against the model definitions: where the weight gradients' time goes."""
    model, _, records, _, _ = parsed
    bwd = {}
    for rec in records:
        if rec["dir"] == "bprop" and rec.get("bwd_node", "").endswith("Backward0"):
            bwd.setdefault(rec["bwd_node"], set()).add(rec.get("module"))
    if model == "lenet":
        assert bwd["ConvolutionBackward0"] == {"LeNet.conv1", "LeNet.conv2"}
        assert bwd["AddmmBackward0"] == {"LeNet.fc1", "LeNet.fc2", "LeNet.fc3"}
    elif model == "mlp":
        assert bwd["AddmmBackward0"] == {"MLP.body.0", "MLP.body.2", "MLP.body.4", "MLP.head"}
    elif model == "lstm":
        assert any(m and m.endswith(".lstm") for m in set().union(*bwd.values()))
    elif model == "transformer":
        assert {"TransformerEncoderLayer.attn.qkv", "TransformerEncoderLayer.attn.proj",
                "TransformerEncoderLayer.mlp.0", "TransformerEncoderLayer.mlp.2",
                "TransformerEncoderLayer.head"} <= bwd["AddmmBackward0"]
        assert {"TransformerEncoderLayer.norm1",
                "TransformerEncoderLayer.norm2"} <= bwd["NativeLayerNormBackward0"]


def test_ops_inside_backward_are_bprop(parsed):
    _, _, records, ranges, _ = parsed
    by_id = {rec["id"]: rec for rec in records}
    all_ops = op_markers(ranges)
    parent = nest(all_ops)
    # With the autograd engine's per-node steps ("autograd::engine::evaluate_function: X"):
    # an op beside node X in its step (gradient accumulation, the reduction of a broadcast
    # gradient) is X's backward work.
    with_steps = [r for r in pyprof_db.ops(ranges) if r.marker["scope"] in ("function", "backward")]
    step_parent = nest(with_steps)
    for r in all_ops:
        if r.marker["scope"] != "function":
            continue
        node = next((a for a in ancestors(r, parent) if a.marker["scope"] == "backward"), None)
        rec = by_id[r.marker["id"]]
        step = next((a for a in ancestors(r, step_parent)
                     if a.marker["op"].startswith(ENGINE_WRAPPER)), None)
        if node is None and step is not None:
            assert rec["dir"] == "bprop", rec
            assert rec["bwd_node"] == step.marker["op"][len(ENGINE_WRAPPER):]
            assert rec["bwd_op"] == r.marker["op"]
            continue
        if node is None:
            assert rec["dir"] == "fprop"
            assert rec["op"] == r.marker["op"]
        else:
            assert rec["dir"] == "bprop"
            assert rec["bwd_node"] == node.marker["op"]
            assert rec["bwd_op"] == r.marker["op"]


def test_user_ranges(parsed):
    """examples/train.py wraps each step in pyprof.range("step N")."""
    _, _, records, _, _ = parsed
    steps = {rec["user_ranges"][0] for rec in records if rec.get("user_ranges")}
    assert {"step 0", "step 1"} <= steps
