"""Advanced indexing with a None in the indices list (`x[:, i, j]`, `x[i, :, j]`), broadcasting
index tensors and boolean masks: prof's costs of index, _unsafe_index, index_put(_),
_index_put_impl_ and _unsafe_index_put, forward and backward, on pyprof's own capture and on a
torch.profiler trace of the same calls (tests/scripts/indexing_steps.py records both at once).

`W`, the elements an indexing op addresses (docs/ops.md), is hand-counted for each case below and
also checked against torch itself (the script writes the numel of x[indices] per case).
torch.profiler records no optional-tensor list (index's `indices` is `[]` in its Input Dims), so
on the Kineto side the forward `index` is not costed and index_put's `W` comes from its values;
pyprof's capture records the list with each None in its place.
"""

from __future__ import annotations

import json

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("indexing_steps.py")
FP32 = 4

# case -> (W: addressed elements, hand-counted; forward W with masks all true (the upper bound
# prof uses where the mask's true elements are unknown); bytes of the index tensors)
HAND = {
    # [8,4,4][:, iu0, iu1], iu [6] each: dims 1, 2 addressed by [6]; dim 0 whole: 8*6
    "leading_none": (48, 48, 2 * 6 * 8),
    # [2,3,4,5][i, :, j], i, j [7]: dims 0, 2 by [7]; dims 1, 3 whole: 7*3*5
    "none_between": (105, 105, 2 * 7 * 8),
    # [2,3,4] with [i, None], i [7]: dim 0 by [7]; dims 1, 2 whole: 7*3*4
    "trailing_none": (84, 84, 7 * 8),
    # [4,5,6,7][:, :, ij], ij [2,3]: dim 2 by [2,3]; dims 0, 1, 3 whole: 4*5*6*7
    "two_nones": (840, 840, 6 * 8),
    # [2,5,6][:, a, b], a [3,1], b [4] broadcast to [3,4]: 2*12
    "broadcast": (24, 24, (3 + 4) * 8),
    # [2,5,6,3][:, m], m bool [5,6] with 12 true (seeded): 2*12*3; all true: 2*30*3
    "mask_after_slice": (72, 180, 30),
    # _unsafe_index([3,4,5], [None, [2]]): 3*2*5
    "unsafe_index": (30, 30, 2 * 8),
}
FORWARD = {"aten::index", "aten::_unsafe_index"}
PUTS = {"aten::index_put", "aten::index_put_", "aten::_index_put_impl_",
        "aten::_unsafe_index_put"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """{"oracle": torch's counts, "pyprof": rows, "kineto": rows}; rows: prof's JSON rows of the
    records inside the cases' record_function ranges, each with its case and whether it is the
    .put part."""
    tmp = tmp_path_factory.mktemp("indexing")
    trace, oracle = tmp / "kineto.json", tmp / "oracle.json"
    res = pyprof_db.profile(tmp, SCRIPT, str(trace), str(oracle), name="pyprof")
    assert res.returncode == 0, res.stderr
    out = {"oracle": json.loads(oracle.read_text())}
    for side, source in (("pyprof", tmp / "pyprof.sqlite"), ("kineto", trace)):
        net = tmp / f"{side}.dict"
        testlib.parse_to(source, net)
        rows = []
        for line in testlib.prof("--json", "-c", "dir,kernel,layer,flops,bytes",
                                 net).stdout.splitlines():
            row = json.loads(line)
            scope = (row["layer"] or "").split(":")
            scope = [s for s in scope if s and s != "pyprof"]
            if scope and scope[0].split(".")[0] in HAND:
                row["case"], _, part = scope[0].partition(".")
                row["put"] = part == "put"
                rows.append(row)
        out[side] = rows
    return out


def rows_of(rows, case, kernels, put=False, costed=True):
    """The case's rows of those kernels; costed: only those that carry the cost (prof puts an
    op's cost on the outermost modelled call: index_put -> index_put_ -> _index_put_impl_)."""
    return [r for r in rows if r["case"] == case and r["put"] == put and r["kernel"] in kernels
            and (not costed or r["bytes"])]


def numel_of(recorded, case):
    numel = 1
    for d in recorded["oracle"][case]["shape"]:
        numel *= d
    return numel


def test_hand_counts_are_torchs(recorded):
    """The hand-counted W of each case is what torch's own result has."""
    for case, (w, upper, index_bytes) in HAND.items():
        o = recorded["oracle"][case]
        assert (o["addressed"], o["addressed_upper"], o["index_bytes"]) == (w, upper, index_bytes)


@pytest.mark.parametrize("case", list(HAND))
def test_forward_index_addresses_the_right_dims(recorded, case):
    """Capture: index reads the index tensors, reads and writes the W addressed elements
    (masks: all true, the bound). Kineto has no indices: not costed."""
    w, upper, index_bytes = HAND[case]
    (ours,) = rows_of(recorded["pyprof"], case, FORWARD)
    assert (ours["dir"], ours["flops"], ours["bytes"]) == \
        ("fprop", 0, index_bytes + 2 * upper * FP32), ours
    kineto = [r for r in recorded["kineto"] if r["case"] == case and not r["put"]
              and r["kernel"] in FORWARD]
    assert kineto and all(r["flops"] is None for r in kineto), kineto


@pytest.mark.parametrize("case", list(HAND))
def test_backward_accumulates_w_on_both_sides(recorded, case):
    """IndexBackward0 / UnsafeIndexBackward0: one accumulating index_put of the gradient, W adds
    on both sides (a mask's W from the gradient, which has the result's shape); the bytes differ
    exactly by the index tensors, which only the capture records."""
    w, _, index_bytes = HAND[case]
    (ours,) = [r for r in rows_of(recorded["pyprof"], case, PUTS) if r["dir"] == "bprop"]
    (kin,) = [r for r in rows_of(recorded["kineto"], case, PUTS) if r["dir"] == "bprop"]
    assert ours["flops"] == kin["flops"] == w, (ours, kin)
    # index bytes + gradient values (W) + W destinations read and written; the out-of-place
    # _unsafe_index_put (UnsafeIndexBackward0) first copies the zeros it adds into.
    copy = 2 * numel_of(recorded, case) * FP32 if ours["kernel"] == "aten::_unsafe_index_put" \
        else 0
    assert ours["bytes"] == index_bytes + w * FP32 + 2 * w * FP32 + copy, ours
    assert ours["bytes"] - kin["bytes"] == index_bytes, (ours, kin)


@pytest.mark.parametrize("case", list(HAND))
def test_index_put_after_a_slice(recorded, case):
    """index_put_(y, indices, values) then index_put(y, indices, values, accumulate=True), the
    values shaped like y[indices]: W writes, then a copy of y and W adds."""
    w, _, index_bytes = HAND[case]
    numel = numel_of(recorded, case)
    for side, idx in (("pyprof", index_bytes), ("kineto", 0)):
        put, acc = rows_of(recorded[side], case, PUTS, put=True)
        assert (put["kernel"], put["flops"], put["bytes"]) == \
            ("aten::index_put_", 0, idx + w * FP32 + w * FP32), (side, put)
        assert (acc["kernel"], acc["flops"], acc["bytes"]) == \
            ("aten::index_put", w, idx + w * FP32 + 2 * w * FP32 + 2 * numel * FP32), (side, acc)
