"""torch.profiler (Kineto) traces against pyprof's own capture of the same CPU steps.

One process records both (tests/scripts/kineto_and_pyprof_steps.py): under `pyprof profile`, a
warm-up step, then training steps inside torch.profiler.profile(record_shapes=True,
with_modules=True) and inside the pyprof.range "compared steps". Both tools see the ops through
RecordFunction callbacks, so each op call is one record in each. `pyprof parse` turns both into
net.dict and `pyprof prof` costs both; op by op, in CPU start order per thread, everything both
sides know must be equal: op, direction, seq, positional arguments, parent, backward pairing,
module, user ranges, and prof's FLOPs, bytes and parameters.

What Kineto does not record is named in KINETO_LACKS (and the code that uses it): those fields
are compared as far as Kineto has them (an enum argument's int against the name's code), never
skipped silently. A mismatch prints the first differences, op by op.
"""

from __future__ import annotations

import collections
import difflib
import json

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("kineto_and_pyprof_steps.py")
COMPARED = "compared steps"  # the script's pyprof.range around the compared steps
MODELS = ["lenet", "transformer", "lstm", "resnet_block"]

# Values Kineto does not record, so the Kineto trace cannot carry them (torch 2.x,
# torch/csrc/profiler/collection.cpp and util.cpp): the comparison is restricted there, and only
# there, as each entry says. Everything else must be equal.
KINETO_LACKS = {
    "tensor device": "Input Dims/Input type/Input Strides have no device; pyprof's tensors do",
    "tensor list dtype": "a TensorList is typed \"TensorList\": shapes and strides per element, "
                         "no dtype (nor device)",
    "tensor list dtype (prof dtype, params)": "so prof cannot name the dtype of an op on a list",
    "enum as int": "ScalarType, Layout and MemoryFormat arguments are Concrete Inputs of type "
                   "Scalar holding the enum's int (\"6\" for float32): compared as that code",
    "string argument": "a Device or string argument (device='cpu', approximate='none') has type "
                       "\"\" and an empty Concrete Input, as None has",
}

# c10's enum numbering (c10/core/ScalarType.h, Layout.h, MemoryFormat.h): what Kineto writes for
# an enum argument (dtype, input_dtype, layout, memory_format) that pyprof names. The three
# tables share no name, so the name pyprof wrote tells which enum it is.
ENUM_CODES = {
    # ScalarType
    "uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
    "float64": 7, "complex32": 8, "complex64": 9, "complex128": 10, "bool": 11, "bfloat16": 15,
    # Layout
    "strided": 0, "sparse_coo": 1, "sparse_csr": 2, "mkldnn": 3,
    # MemoryFormat
    "contiguous_format": 0, "preserve_format": 1, "channels_last": 2, "channels_last_3d": 3,
}

# prof's per-record columns (docs/prof.md §2) that must agree; the times and the module path
# text (Kineto's paths are "LeNet_0.Conv2d_0") are not among them.
PROF_COLUMNS = ("seq", "dir", "mod", "op", "kernel", "params", "flops", "bytes", "op_flops",
                "op_bytes", "tc_eligible", "dtype", "shapes", "family", "flag")


def canonical(value) -> str:
    """Exact equality for JSON values, where numbers are compared by value (pyprof writes the
    double 0.0 as 0; a reader may write 0.0) and true is not 1."""
    def norm(v):
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            return v
        if isinstance(v, float):
            return int(v) if v.is_integer() else v
        if isinstance(v, (list, tuple)):
            return [norm(e) for e in v]
        return {key: norm(e) for key, e in v.items()}
    return json.dumps(norm(value), sort_keys=True)


@pytest.fixture(scope="module", params=testlib.all_but_one_slow(MODELS, "lenet"))
def runs(request, tmp_path_factory):
    """Both recordings of one model, parsed and costed: {"pyprof": ..., "kineto": ...}, each
    the compared records (net.dict) and prof's rows for them, in net.dict order."""
    model = request.param
    tmp = tmp_path_factory.mktemp(model)
    trace = tmp / "kineto.json"
    res = pyprof_db.profile(tmp, SCRIPT, "--model", model, "--trace", str(trace), name="pyprof")
    assert res.returncode == 0, res.stderr
    out = {}
    for side, source in (("pyprof", tmp / "pyprof.sqlite"), ("kineto", trace)):
        net = tmp / f"{side}.dict"
        testlib.parse_to(source, net)
        _, records = testlib.read_dict(net)
        rows = [json.loads(line) for line in
                testlib.prof("--json", "-c", "all", net).stdout.splitlines()]
        assert len(rows) == len(records)
        if side == "pyprof":
            # The warm-up step is pyprof's alone: keep the records of the compared steps.
            keep = [COMPARED in r.get("user_ranges", []) for r in records]
        else:
            keep = [True] * len(records)  # the torch.profiler window held the compared steps
        out[side] = Side([r for r, k in zip(records, keep) if k],
                         [r for r, k in zip(rows, keep) if k])
    assert out["pyprof"].records, "no pyprof records inside the compared steps"
    return model, out["pyprof"], out["kineto"]


class Side:
    """One side's compared records: per thread in CPU start order, and where each op instance
    sits (so that parents and forward ops are compared by position, not by id)."""

    def __init__(self, records, rows):
        self.records = records
        self.rows = rows
        self.threads = collections.defaultdict(list)  # tid -> [index into records]
        for i, r in enumerate(records):
            self.threads[r["tid"]].append(i)
        self.position = {}  # op id / instance -> (tid, index within the thread)
        self.instance_position = {}
        for tid, idx in self.threads.items():
            for pos, i in enumerate(idx):
                self.position[records[i]["id"]] = (tid, pos)
                if "instance" in records[i]:
                    self.instance_position[records[i]["instance"]] = (tid, pos)

    def where(self, op_id):
        """Position of an op id among the compared records ("outside" when not there)."""
        if op_id is None:
            return None
        return self.position.get(op_id, "outside")

    def where_instance(self, instance):
        """Position of an op instance (parse's `instance`) among the compared records."""
        if instance is None:
            return None
        return self.instance_position.get(instance, "outside")


def module_depth(path):
    return None if path is None else len(path.split("."))


def matched_pairs(pyp: Side, kin: Side):
    """(tid, position, pyprof index, kineto index) of the records both sides have, aligned per
    thread by op name; and the unmatched stretches as readable lines."""
    pairs, unmatched = [], []
    for tid in sorted(set(pyp.threads) | set(kin.threads)):
        a, b = pyp.threads.get(tid, []), kin.threads.get(tid, [])
        names_a = [pyp.records[i]["name"] for i in a]
        names_b = [kin.records[i]["name"] for i in b]
        sm = difflib.SequenceMatcher(a=names_a, b=names_b, autojunk=False)
        for tag, a0, a1, b0, b1 in sm.get_opcodes():
            if tag == "equal":
                pairs += [(tid, a0 + k, a[a0 + k], b[b0 + k]) for k in range(a1 - a0)]
            else:
                unmatched.append(f"thread {tid}: pyprof #{a0}..{a1} {names_a[a0:a1][:6]} vs "
                                 f"kineto #{b0}..{b1} {names_b[b0:b1][:6]}")
    return pairs, unmatched


def compare_args(pyprof_args, kineto_args, where, diffs, restricted):
    """pyprof's named arguments (schema order) against Kineto's positional ones ("0", "1", ...).
    Appends (where, field, pyprof value, kineto value) to diffs; restricted counts the values
    compared only as far as Kineto records them (KINETO_LACKS)."""
    pyprof_args = pyprof_args or {}
    kineto_args = kineto_args or {}
    names = list(pyprof_args)
    if sorted(kineto_args, key=int) != [str(i) for i in range(len(kineto_args))]:
        diffs.append((where, "arg positions", names, list(kineto_args)))
        return
    if len(names) != len(kineto_args):
        diffs.append((where, "arg count", len(names), len(kineto_args)))
    for pos, name in enumerate(names[:len(kineto_args)]):
        p, k = pyprof_args[name], kineto_args[str(pos)]
        field = f"arg {pos} ({name})"
        if isinstance(p, dict):  # a tensor
            if "device" in p and isinstance(k, dict) and "device" not in k:
                restricted["tensor device"] += 1
                p = {key: v for key, v in p.items() if key != "device"}
            if canonical(p) != canonical(k):
                diffs.append((where, field, p, k))
        elif isinstance(p, list) and p and all(isinstance(e, dict) for e in p):  # tensor list
            if not isinstance(k, list) or len(k) != len(p):
                diffs.append((where, field, p, k))
                continue
            for j, (pe, ke) in enumerate(zip(p, k)):
                if not isinstance(ke, dict):
                    diffs.append((where, f"{field}[{j}]", pe, ke))
                    continue
                lacks = {key for key in ("dtype", "device") if key in pe and key not in ke}
                if lacks:
                    restricted["tensor list dtype"] += 1
                pe = {key: v for key, v in pe.items() if key not in lacks}
                if canonical(pe) != canonical(ke):
                    diffs.append((where, f"{field}[{j}]", pe, ke))
        elif isinstance(p, str) and p in ENUM_CODES and canonical(k) != canonical(p):
            restricted["enum as int"] += 1
            if canonical(k) != canonical(ENUM_CODES[p]):
                diffs.append((where, field, f"{p} (code {ENUM_CODES[p]})", k))
        elif isinstance(p, str) and k in (None, ""):
            restricted["string argument"] += 1
        elif canonical(p) != canonical(k):
            diffs.append((where, field, p, k))


def compare(pyp: Side, kin: Side):
    """Every difference between the two sides' matched records: (where, field, pyprof value,
    kineto value); and the restricted comparisons by KINETO_LACKS key."""
    pairs, _ = matched_pairs(pyp, kin)
    diffs, restricted = [], collections.Counter()
    for tid, pos, i, j in pairs:
        a, b = pyp.records[i], kin.records[j]
        where = f"thread {tid} #{pos} {a['name']}"

        def check(field, va, vb):
            if canonical(va) != canonical(vb):
                diffs.append((where, field, va, vb))

        for key in ("name", "op", "dir", "seq", "bwd_node", "bwd_op", "paired"):
            check(key, a.get(key), b.get(key))
        check("parent", pyp.where(a.get("parent_id")), kin.where(b.get("parent_id")))
        # A bprop record's forward op, by position among the compared records.
        check("forward op", pyp.where_instance(a.get("fwd_instance")),
              kin.where_instance(b.get("fwd_instance")))
        check("module_type", a.get("module_type"), b.get("module_type"))
        check("module depth", module_depth(a.get("module")), module_depth(b.get("module")))
        # pyprof writes record_function scopes in its own domain ("pyprof:Optimizer.step#...");
        # the compared-steps range is pyprof's alone.
        check("user_ranges",
              [u.removeprefix("pyprof:") for u in a.get("user_ranges", []) if u != COMPARED],
              b.get("user_ranges", []))
        lists_before = restricted["tensor list dtype"]
        compare_args(a.get("args"), b.get("args"), where, diffs, restricted)
        if "bwd_args" in a or "bwd_args" in b:
            bwd = []
            compare_args(a.get("bwd_args"), b.get("bwd_args"), where, bwd, restricted)
            diffs += [(w, "bwd_args " + f, va, vb) for w, f, va, vb in bwd]
        columns = PROF_COLUMNS
        if restricted["tensor list dtype"] > lists_before:
            # prof names an op's dtype and writes it into params from its tensors; a list's
            # tensors have none in Kineto's record (aten::cat, aten::stack: "[4,48],[4,48]"
            # for pyprof's "[4,48]fp32,[4,48]fp32"). Its FLOPs and bytes are still compared.
            columns = [col for col in PROF_COLUMNS if col not in ("dtype", "params")]
            restricted["tensor list dtype (prof dtype, params)"] += 1
        for col in columns:
            check("prof " + col, pyp.rows[i].get(col), kin.rows[j].get(col))
    return diffs, restricted


def report(model, diffs, limit=25):
    """The first differences, one per line, and how many there are of each field."""
    by_field = collections.Counter(field.split(" (")[0] if field.startswith("arg ") else field
                                   for _, field, _, _ in diffs)
    lines = [f"{model}: {len(diffs)} differences (pyprof | kineto); by field: "
             + ", ".join(f"{f} {n}" for f, n in by_field.most_common())]
    for where, field, va, vb in diffs[:limit]:
        lines.append(f"  {where}: {field}: {canonical(va)[:300]} | {canonical(vb)[:300]}")
    return "\n".join(lines)


def test_same_op_instances(runs):
    """The same op calls, in the same order on the same threads."""
    model, pyp, kin = runs
    assert set(kin.threads) == set(pyp.threads), (sorted(pyp.threads), sorted(kin.threads))
    _, unmatched = matched_pairs(pyp, kin)
    assert not unmatched, f"{model}: op sequences differ:\n" + "\n".join(unmatched[:20])
    assert len(kin.records) == len(pyp.records)
    # Both recordings hold the backward pass and the optimizer's updates, not only forward ops.
    dirs = collections.Counter(r["dir"] for r in pyp.records)
    assert dirs["fprop"] > 0 and dirs["bprop"] > 0, dirs


def test_same_content_and_costs(runs):
    """Record by record: arguments, parent, pairing, module, user ranges, and prof's costs."""
    model, pyp, kin = runs
    diffs, restricted = compare(pyp, kin)
    print(f"{model}: compared only as far as Kineto records them: {dict(restricted)}")
    assert set(restricted) <= set(KINETO_LACKS), restricted
    assert not diffs, report(model, diffs)
    # The comparison had something to compare: modelled ops with FLOPs, backward records
    # paired with their forward ops, and ops inside modules.
    assert sum(row["flops"] or 0 for row in kin.rows) > 0
    assert any(r.get("paired") for r in kin.records)
    assert any(r.get("module_type") for r in kin.records)
