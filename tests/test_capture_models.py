"""End-to-end capture of real models (CPU, forward + backward + optimizer step) under `pyprof
profile`, checked against torch.profiler (Kineto) as an oracle.

tests/scripts/models_oracle.py trains one model for two steps with pyprof.init(model,
with_stack=True); step 1 runs inside torch.profiler.profile(record_shapes=True) and, inside that,
the pyprof user range "oracle-window". Both observers hang off the same RecordFunction calls, so
every op Kineto saw in step 1 must appear once among our op markers inside "oracle-window", with
the same name, overload, scope, sequence number, thread ids, input shapes, dtypes and the scalar
values Kineto records.

How the two views are compared (see `_kineto_args` / `_our_args`):
  * Kineto's CPU events of this window are all RecordFunctions we hook too: ATen ops and the
    `autograd::engine::evaluate_function: X` wrappers (FUNCTION scope), backward nodes
    (BACKWARD_FUNCTION) and record_function blocks such as "my_scope" or
    "Optimizer.step#SGD.step" (USER_SCOPE). There is no `ProfilerStep*` (no schedule is used) and
    the `profiler::_record_function_*` ops are unobserved operators, invisible to both.
    Kineto's overload names need capture_overload_names=True (the helper sets it).
  * Kineto post-processes two fields that RecordFunction itself does not carry, so they are not
    compared: it copies each backward node's sequence number onto its enclosing
    `autograd::engine::evaluate_function:` event (ours: -1, the RecordFunction's own number), and
    reports fwd_thread_id 0 for backward nodes without a sequence number (AccumulateGrad; ours:
    the thread that created the node).
  * Per input: a tensor is (shape, dtype); Kineto's dtype is the C++ type name ("float",
    "long int"), ours the Python-style name ("float32", "int64"), mapped by KINETO_DTYPE. A None or
    undefined tensor is ((), ""). Scalars (int, float, bool, and dtype/layout/memory_format enums,
    which Kineto records as ints) are ((), "Scalar", value); int lists ((), "ScalarList", values).
    A tensor list is (list of shapes, "TensorList"), from Kineto's structured_input_shapes().
    Strings and devices are ((), "") as Kineto records no value for them.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import os
import sys

import pytest

import pyprof_db
import testlib
from pyprof_db import PUSH_POP, Range

pytestmark = pytest.mark.needs_build

MODELS = ("lenet", "mlp", "transformer", "lstm")
FAST_MODEL = "transformer"  # the one `-m "not slow"` runs (~3 s a model)

KINETO_SCOPE = {0: "function", 1: "backward", 2: "torchscript", 7: "user"}
KINETO_DTYPE = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
    "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}
# c10 enum values (ABI-stable) -> the names pyprof writes.
ENUM_NAMES = {
    "ScalarType": ["uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                   "complex32", "complex64", "complex128", "bool", "qint8", "quint8", "qint32",
                   "bfloat16"],
    "Layout": ["strided", "sparse_coo", "sparse_csr", "_mkldnn", "sparse_csc", "sparse_bsr",
               "sparse_bsc", "jagged"],
    "MemoryFormat": ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"],
}
NON_FINITE = ("inf", "-inf", "nan")
EVALUATE_FUNCTION = "autograd::engine::evaluate_function: "

# Backward node -> the forward op that created it (the innermost op with its sequence number).
KNOWN_CREATORS = {
    "ConvolutionBackward0": {"aten::convolution", "aten::_convolution"},
    "AddmmBackward0": {"aten::addmm"}, "MmBackward0": {"aten::mm"},
    "ReluBackward0": {"aten::relu"}, "GeluBackward0": {"aten::gelu"},
    "TBackward0": {"aten::t"}, "ViewBackward0": {"aten::view"},
    "LogSoftmaxBackward0": {"aten::_log_softmax"},
    "NllLossBackward0": {"aten::nll_loss_forward"},
    "MaxPool2DWithIndicesBackward0": {"aten::max_pool2d_with_indices"},
    "NativeLayerNormBackward0": {"aten::native_layer_norm"},
    "EmbeddingBackward0": {"aten::embedding"}, "MeanBackward1": {"aten::mean"},
    "AddBackward0": {"aten::add"}, "PermuteBackward0": {"aten::permute"},
    "TransposeBackward0": {"aten::transpose"}, "SelectBackward0": {"aten::select"},
    "CloneBackward0": {"aten::clone"}, "UnbindBackward0": {"aten::unbind"},
    "MkldnnRnnLayerBackward0": {"aten::mkldnn_rnn_layer"},
    "ScaledDotProductFlashAttentionForCpuBackward0": {
        "aten::_scaled_dot_product_flash_attention_for_cpu"},
}

# Module type -> (op it must enclose, how to read that op's weight shape(s)).
MODULE_OPS = {
    "Conv2d": ("aten::conv2d", lambda args: args["weight"]["shape"]),
    "Linear": ("aten::linear", lambda args: args["weight"]["shape"]),
    "LayerNorm": ("aten::layer_norm", lambda args: args["weight"]["shape"]),
    "Embedding": ("aten::embedding", lambda args: args["weight"]["shape"]),
    "LSTM": ("aten::lstm", lambda args: [p["shape"] for p in args["params"]]),
}

# (op, path of the module range it is directly in, label of its call site in the oracle).
MODEL_SITES = {
    "lenet": [("aten::conv2d", "LeNet.conv1", "conv1"), ("aten::conv2d", "LeNet.conv2", "conv2"),
              ("aten::flatten", "LeNet", "flatten"), ("aten::linear", "LeNet.fc1", "fc1"),
              ("aten::linear", "LeNet.fc3", "fc3")],
    "mlp": [("aten::linear", "MLP.body.0", "forward"), ("aten::gelu", "MLP.body.1", "forward"),
            ("aten::linear", "MLP.head", "forward")],
    "transformer": [
        ("aten::layer_norm", "TransformerEncoderLayer.norm1", "norm1"),
        ("aten::layer_norm", "TransformerEncoderLayer.norm2", "norm2"),
        ("aten::linear", "TransformerEncoderLayer.attn.qkv", "qkv"),
        ("aten::scaled_dot_product_attention", "TransformerEncoderLayer.attn", "sdpa"),
        ("aten::mean", "TransformerEncoderLayer", "mean")],
    "lstm": [("aten::embedding", "LSTMClassifier.embed", "lstm"),
             ("aten::lstm", "LSTMClassifier.lstm", "lstm"),
             ("aten::select", "LSTMClassifier", "head"),
             ("aten::linear", "LSTMClassifier.head", "head")],
}


# --- the run -------------------------------------------------------------------------------

@dataclasses.dataclass
class Run:
    model: str
    db: str
    oracle: dict
    ranges: list[Range]
    parent: dict[int, Range | None]  # id(range) -> innermost push/pop range enclosing it
    window: Range
    step0: Range
    step1: Range
    ops: list[Range]  # op markers inside the window
    modules: list[Range]  # module ranges inside the window

    def op_ancestors(self, r: Range) -> list[Range]:
        """The op markers enclosing r, innermost first."""
        return [a for a in self.ancestors(r) if a.marker is not None and "op" in a.marker]

    def ancestors(self, r: Range) -> list[Range]:
        out, p = [], self.parent.get(id(r))
        while p is not None:
            out.append(p)
            p = self.parent.get(id(p))
        return out

    def module_of(self, r: Range) -> str | None:
        """Path of the innermost module range enclosing r."""
        for a in self.ancestors(r):
            if a.marker is not None and "module" in a.marker:
                return a.marker["module"]
        return None

    def inside(self, outer: Range, kind=None) -> list[Range]:
        return [r for r in self.ranges if r is not outer and outer.encloses(r)
                and (kind is None or (r.marker is not None and kind in r.marker))]


def nest(ranges: list[Range]) -> dict[int, Range | None]:
    """Innermost enclosing push/pop range of each push/pop range, per thread; asserts that the
    ranges of each thread nest properly (NVTX push/pop is a stack)."""
    parent: dict[int, Range | None] = {}
    by_thread = collections.defaultdict(list)
    for i, r in enumerate(ranges):
        if r.event_type == PUSH_POP:
            assert r.end is not None and r.end >= r.start, f"push/pop range not closed: {r}"
            by_thread[r.global_tid].append((r.start, -r.end, i, r))
    for rows in by_thread.values():
        stack: list[Range] = []
        for _, _, _, r in sorted(rows, key=lambda t: t[:3]):
            while stack and stack[-1].end <= r.start and not (
                    stack[-1].end == r.start == r.end and stack[-1].start < r.start):
                stack.pop()
            if stack:
                assert r.end <= stack[-1].end, (
                    f"ranges overlap without nesting on thread {r.tid}:\n  {_fmt(stack[-1])}\n"
                    f"  {_fmt(r)}")
            parent[id(r)] = stack[-1] if stack else None
            stack.append(r)
    return parent


def _fmt(r: Range) -> str:
    return f"[{r.start}, {r.end}] {r.domain or '<default>'}: {r.text[:200]}"


@pytest.fixture(scope="module", params=testlib.all_but_one_slow(MODELS, FAST_MODEL))
def run(request, tmp_path_factory) -> Run:
    model = request.param
    tmp = tmp_path_factory.mktemp(model)
    oracle_path = tmp / "oracle.json"
    result = pyprof_db.profile(tmp, testlib.script("models_oracle.py"), model,
                               str(oracle_path), name=model)
    assert result.returncode == 0, (
        f"pyprof profile failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    db = str(tmp / f"{model}.sqlite")
    assert os.path.exists(db), f"no {db}; stderr:\n{result.stderr}"
    with open(oracle_path) as f:
        oracle = json.load(f)
    ranges = pyprof_db.read_ranges(db)
    parent = nest(ranges)

    def user_range(text):
        found = [r for r in ranges if r.domain == "" and r.text == text]
        assert len(found) == 1, f"expected one user range {text!r}, found {len(found)}"
        return found[0]

    window = user_range("oracle-window")
    ops_in = [r for r in pyprof_db.ops(ranges) if window.encloses(r)]
    mods_in = [r for r in pyprof_db.modules(ranges) if window.encloses(r)]
    return Run(model, db, oracle, ranges, parent, window, user_range("step 0"),
               user_range("step 1"), ops_in, mods_in)


# --- canonical forms of op inputs ------------------------------------------------------------

def _is_tensor(v) -> bool:
    return isinstance(v, dict) and "dtype" in v


def _enum_kind(real_type: str | None) -> str | None:
    if real_type is None:
        return None
    t = real_type.removeprefix("Optional[").removesuffix("]")
    return t if t in ENUM_NAMES else None


def _canon(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return "nan" if v != v else ("inf" if v > 0 else "-inf")
        return float(v)
    if isinstance(v, (list, tuple)):
        return tuple(_canon(x) for x in v)
    return v


def _tuplify(v):
    return tuple(_tuplify(x) for x in v) if isinstance(v, list) else v


def _schema(oracle, name, overload) -> list | None:
    return oracle["schemas"].get(f"{name}.{overload}")


def _kineto_args(oracle, e) -> tuple:
    schema = _schema(oracle, e["name"], e["overload"])
    out = []
    for i, dtype in enumerate(e["dtypes"]):
        shape = e["shapes"][i]
        if dtype == "TensorList":
            # Older torch's Kineto events (2.11, say) carry no shapes of a list's tensors: tensor
            # lists are then compared by type alone (see _our_args).
            shape = e["structured_shapes"][i] if e["structured_shapes"] is not None else None
        value = e["concrete"][i] if i < len(e["concrete"]) else None
        kind = _enum_kind(schema[i][1]) if schema and i < len(schema) else None
        if kind and isinstance(value, int) and not isinstance(value, bool):
            value = ENUM_NAMES[kind][value] if value < len(ENUM_NAMES[kind]) else value
        else:
            value = _canon(value)
        out.append((_tuplify(shape), dtype, value))
    return tuple(out)


def _our_arg(v, real_type: str | None):
    if _is_tensor(v):
        return (_tuplify(v.get("shape", [])), KINETO_DTYPE.get(v["dtype"], v["dtype"]), None)
    if v is None:
        return ((), "", None)
    if isinstance(v, (bool, int, float)):
        return ((), "Scalar", _canon(v))
    if isinstance(v, str):
        if _enum_kind(real_type):
            return ((), "Scalar", v)
        if v in NON_FINITE and real_type and any(t in real_type for t in ("float", "Scalar")):
            return ((), "Scalar", v)
        return ((), "", None)
    if isinstance(v, list):
        is_tensor_list = (real_type is not None and "Tensor" in real_type) or (
            bool(v) and all(_is_tensor(x) or x is None for x in v))
        if is_tensor_list:
            return (tuple(_tuplify(x["shape"]) if _is_tensor(x) else () for x in v),
                    "TensorList", None)
        return ((), "ScalarList", _canon(v))
    return ((), "", None)


def _our_args(oracle, m) -> tuple:
    schema = _schema(oracle, m["op"], m.get("overload", "")) if m["scope"] == "function" else None
    types = [t for _, t in schema] if schema else []
    args = tuple(_our_arg(v, types[i] if i < len(types) else None)
                 for i, v in enumerate(m["args"].values()))
    if not oracle.get("tensor_list_shapes", True):
        args = tuple((None, dtype, value) if dtype == "TensorList" else (shape, dtype, value)
                     for shape, dtype, value in args)
    return args


def _kineto_key(oracle, e) -> tuple:
    scope = KINETO_SCOPE.get(e["scope"], f"scope{e['scope']}")
    seq = e["seq"]
    if e["name"].startswith(EVALUATE_FUNCTION):
        seq = -1  # Kineto copies the backward node's number onto its wrapper afterwards
    return (e["name"], e["overload"], scope, seq, e["tid"],
            e["fwd_tid"] if scope == "backward" and seq >= 0 else None, _kineto_args(oracle, e))


def _our_key(oracle, m) -> tuple:
    return (m["op"], m.get("overload", ""), m["scope"], m["seq"], m["tid"],
            m.get("fwd_tid") if m["seq"] >= 0 else None, _our_args(oracle, m))


def _fmt_key(key, count) -> str:
    name, overload, scope, seq, tid, fwd_tid, args = key
    arg_text = ", ".join(
        (f"{shape if shape else ''}{dtype}{'=' + str(value) if value is not None else ''}"
         or "-") for shape, dtype, value in args)
    extra = f" fwd_tid={fwd_tid}" if fwd_tid is not None else ""
    return (f"  {count}x {name}{'.' + overload if overload else ''} [{scope} seq={seq} "
            f"tid={tid}{extra}] ({arg_text})")


def _diff(ours: collections.Counter, theirs: collections.Counter, limit: int = 40) -> str:
    lines = []
    for title, a, b in (("only in pyprof's DB", ours, theirs), ("only in Kineto", theirs, ours)):
        extra = a - b
        if extra:
            lines.append(f"{title} ({sum(extra.values())}):")
            for key, count in sorted(extra.items(), key=lambda kv: repr(kv[0]))[:limit]:
                lines.append(_fmt_key(key, count))
    return "\n".join(lines)


def _oracle_events(run: Run) -> list[dict]:
    return [e for e in run.oracle["events"] if not e["hidden"]]


# --- 1. every op the oracle saw, once per call ------------------------------------------------

def test_ops_match_oracle(run):
    oracle = run.oracle
    theirs = collections.Counter(_kineto_key(oracle, e) for e in _oracle_events(run))
    assert not any(e["name"].startswith("ProfilerStep") for e in oracle["events"])
    ours = collections.Counter(_our_key(oracle, r.marker) for r in run.ops)
    assert sum(theirs.values()) > 100, "the oracle saw too few events to be a real train step"
    assert ours == theirs, (
        f"{run.model}: the op markers inside 'oracle-window' differ from torch.profiler's "
        f"events ({sum(ours.values())} vs {sum(theirs.values())}):\n{_diff(ours, theirs)}")


def test_args_keyed_by_schema(run):
    """Ops with a schema name their args after it, in schema order; others are positional."""
    bad = []
    for r in run.ops:
        m = r.marker
        assert "args_dropped" not in m, f"small op lost args: {r.text[:300]}"
        schema = _schema(run.oracle, m["op"], m.get("overload", ""))
        if m["scope"] == "function" and schema is not None:
            expected = [name for name, _ in schema]
        else:
            expected = [str(i) for i in range(len(m["args"]))]
        if list(m["args"]) != expected:
            bad.append(f"  {m['op']}: {list(m['args'])} != {expected}")
    assert not bad, "args not keyed by schema argument names:\n" + "\n".join(sorted(set(bad)))


# --- 2. backward nodes pair with the forward op that created them ------------------------------

def _creator(candidates: list, start, end, what: str):
    """The op that created a backward node: the last one to start among the forward ops with its
    (thread, sequence number). Every other candidate either encloses it or ended before it began
    (ops that created no node, like a no-op aten::to inside log_softmax, share the number)."""
    assert candidates, f"{what}: no forward op with its (fwd_tid, seq)"
    last = max(candidates, key=start)
    for c in candidates:
        assert (start(c) <= start(last) and end(last) <= end(c)) or end(c) <= start(last), (
            f"{what}: forward ops with its seq neither nest nor precede each other")
    return last


def test_backward_nodes_pair_with_forward_ops(run):
    all_ops = pyprof_db.ops(run.ranges)
    by_key = collections.defaultdict(list)
    for r in all_ops:
        if r.marker["scope"] != "backward" and r.marker["seq"] >= 0:
            by_key[(r.marker["tid"], r.marker["seq"])].append(r)
    ours = {}
    backward = [r for r in run.ops if r.marker["scope"] == "backward"]
    for b in backward:
        m = b.marker
        assert "fwd_tid" in m, f"backward node without fwd_tid: {b.text}"
        if m["seq"] < 0:
            continue  # AccumulateGrad has no forward op
        what = f"{run.model}: {m['op']} (seq {m['seq']}, fwd_tid {m['fwd_tid']})"
        cands = [r for r in by_key[(m["fwd_tid"], m["seq"])] if r.end <= b.start]
        creator = _creator(cands, lambda r: r.start, lambda r: r.end, what)
        ours[m["seq"]] = (m["op"], creator.marker["op"])
        if m["op"] in KNOWN_CREATORS:
            assert creator.marker["op"] in KNOWN_CREATORS[m["op"]], (
                f"{what}: created by {creator.marker['op']}, expected one of "
                f"{sorted(KNOWN_CREATORS[m['op']])}")
    assert ours, f"{run.model}: no backward node with a sequence number"

    events = _oracle_events(run)
    theirs = {}
    for b in events:
        if b["scope"] != 1 or b["seq"] < 0:
            continue
        cands = [e for e in events if e["scope"] != 1 and e["tid"] == b["fwd_tid"]
                 and e["seq"] == b["seq"] and e["start_ns"] + e["duration_ns"] <= b["start_ns"]]
        creator = _creator(cands, lambda e: e["start_ns"],
                           lambda e: e["start_ns"] + e["duration_ns"],
                           f"oracle {b['name']} seq {b['seq']}")
        theirs[b["seq"]] = (b["name"], creator["name"])
    assert ours == theirs, (
        f"{run.model}: backward node -> creating forward op differs from the oracle:\n"
        + "\n".join(f"  seq {s}: ours {ours.get(s)} oracle {theirs.get(s)}"
                    for s in sorted(set(ours) | set(theirs)) if ours.get(s) != theirs.get(s)))

    ours_count = collections.Counter(r.marker["op"] for r in backward)
    theirs_count = collections.Counter(e["name"] for e in events if e["scope"] == 1)
    assert ours_count == theirs_count, (
        f"backward nodes per name: ours {dict(ours_count)} vs oracle {dict(theirs_count)}")


# --- 3. module ranges ------------------------------------------------------------------------

def test_module_ranges(run):
    oracle, modules = run.oracle, run.oracle["modules"]
    paths = [r.marker["module"] for r in run.modules]
    assert paths == oracle["module_calls"], (
        f"module ranges in the window:\n  {paths}\nexpected (module calls, in order):\n"
        f"  {oracle['module_calls']}")
    for r in run.modules:
        m = r.marker
        assert m.get("v") == 1 and m["type"] == modules[m["module"]]["type"], r.text
        path = m["module"]
        parent = run.module_of(r)
        expected = path.rsplit(".", 1)[0] if path != oracle["root"] else None
        assert parent == expected, f"module range {path} is inside {parent}, expected {expected}"

    checked = set()
    for r in run.modules:
        path, mtype = r.marker["module"], r.marker["type"]
        if mtype not in MODULE_OPS:
            continue
        op_name, weight_of = MODULE_OPS[mtype]
        info = modules[path]
        expected = info["flat_weights"] if mtype == "LSTM" else info["weight"]
        mine = [o for o in run.inside(r, "op")
                if o.marker["op"] == op_name and run.module_of(o) == path]
        assert any(weight_of(o.marker["args"]) == expected for o in mine), (
            f"{path} ({mtype}) encloses no {op_name} with weight {expected}; it has "
            f"{[weight_of(o.marker['args']) for o in mine]}")
        if mtype == "LayerNorm":
            assert all(o.marker["args"]["normalized_shape"] == info["normalized_shape"]
                       for o in mine)
        checked.add(mtype)
    assert checked, f"{run.model}: no module with a weight was checked"


# --- 4. user ranges and record_function scopes ------------------------------------------------

def test_user_ranges(run):
    o = run.oracle
    for r, color in ((run.window, o["window_color"]), (run.step0, o["step_color"]),
                     (run.step1, o["step_color"])):
        assert r.event_type == PUSH_POP and r.marker is None, _fmt(r)
        assert r.color == color, f"{r.text}: color {r.color!r}, expected {color:#010x} (ARGB)"
        assert r.pid == o["pid"], f"{r.text}: globalTid pid {r.pid}, expected {o['pid']}"
    assert run.window.encloses(run.step1) and run.step0.end <= run.window.start
    assert {id(r) for r in run.ops} == {id(r) for r in run.inside(run.step1, "op")}, (
        "the window and step 1 must hold the same ops")

    backward = collections.Counter(e["name"] for e in run.oracle["events"] if e["scope"] == 1)
    for step in (run.step0, run.step1):
        ops = run.inside(step, "op")
        names = collections.Counter(r.marker["op"] for r in ops)
        for name in ("Optimizer.zero_grad#SGD.zero_grad", "my_scope", "Optimizer.step#SGD.step"):
            assert names[name] == 1, f"{step.text}: {names[name]} x {name}"
        assert collections.Counter(r.marker["op"] for r in ops if r.marker["scope"] == "backward") \
            == backward, f"{step.text}: backward nodes differ from step 1's oracle"
        roots = [r for r in run.inside(step, "module") if r.marker["module"] == o["root"]]
        assert len(roots) == 1, f"{step.text}: {len(roots)} forward passes of {o['root']}"

    scopes = [r for r in run.ops if r.marker["op"] == "my_scope"]
    assert len(scopes) == 1
    scope = scopes[0].marker
    assert scope["scope"] == "user" and scope["args"] == {} and scope["seq"] == -1, scopes[0].text
    inner = [r for r in run.inside(scopes[0], "op")]
    loss = [r for r in inner if r.marker["op"] == "aten::cross_entropy_loss"]
    assert len(loss) == 1 and run.op_ancestors(loss[0])[0] is scopes[0], (
        "my_scope must directly enclose the aten::cross_entropy_loss of the step")
    assert not [r for r in inner if r.marker["scope"] == "backward"]


# --- 5. call sites ---------------------------------------------------------------------------

def test_call_sites(run):
    sites, model_file = run.oracle["sites"], run.oracle["model_file"]
    problems = []

    def expect(r, site, why):
        if r.marker.get("stack") != site:
            problems.append(f"  {r.marker['op']} ({why}): stack {r.marker.get('stack')!r}, "
                            f"expected {site!r}")

    for r in run.ops:
        # Ops nested in ops share the call site of the outermost of them; a record_function
        # scope (scope "user") does not count: the ops in its block have their own lines.
        outermost = r
        if r.marker["scope"] != "user":
            for a in run.op_ancestors(r):
                if a.marker["scope"] == "user":
                    break
                outermost = a
        if r is not outermost and r.marker.get("stack") != outermost.marker.get("stack"):
            problems.append(f"  {r.marker['op']} inside {outermost.marker['op']}: stack "
                            f"{r.marker.get('stack')!r} != {outermost.marker.get('stack')!r}")
        if r.marker["scope"] == "backward" and "stack" in r.marker:
            expect(r, sites["backward"], "backward node: no stack or the loss.backward() line")
        if r is outermost and run.module_of(r) is not None:
            if not r.marker.get("stack", "").startswith(model_file + ":"):
                problems.append(f"  {r.marker['op']} in module {run.module_of(r)}: stack "
                                f"{r.marker.get('stack')!r} is not in {model_file}")

    for op, path, label in MODEL_SITES[run.model]:
        found = [r for r in run.ops if r.marker["op"] == op and run.module_of(r) == path
                 and not run.op_ancestors(r)]
        assert found, f"no top-level {op} directly in module {path}"
        for r in found:
            expect(r, sites["model:" + label], f"called in {path}")
    for op, label in (("Optimizer.zero_grad#SGD.zero_grad", "zero_grad"),
                      ("my_scope", "my_scope"), ("Optimizer.step#SGD.step", "opt_step")):
        for r in run.ops:
            if r.marker["op"] == op:
                expect(r, sites[label], "record_function block in the script")
    assert not problems, f"{run.model}: wrong call sites:\n" + "\n".join(problems[:40])


def test_call_site_of_op_inside_record_function(run):
    """An op called on its own line inside a `with record_function(...)` block is attributed to
    that line, not to the `with` line of the enclosing user scope."""
    loss = [r for r in run.ops if r.marker["op"] == "aten::cross_entropy_loss"]
    assert len(loss) == 1
    assert loss[0].marker.get("stack") == run.oracle["sites"]["loss"], (
        f"aten::cross_entropy_loss: stack {loss[0].marker.get('stack')!r}, expected the "
        f"F.cross_entropy line {run.oracle['sites']['loss']!r}")


# --- 6. well-formed markers, nothing lost ------------------------------------------------------

def test_markers_and_stats(run):
    markers = [r for r in run.ranges if r.marker is not None]
    settings = [r for r in markers if "settings" in r.marker]
    # docs/formats.md §1.4: the torch settings at init() and at exit, NVTX marks.
    assert len(settings) == 2 and {r.event_type for r in settings} == {pyprof_db.MARK}
    for r in markers:
        # Op markers go interned (v2, id and seq in the row: docs/formats.md §1.1) unless their
        # seq does not fit a category; module and settings markers stay v1.
        assert r.marker.get("v") == (2 if r.interned else 1), r.text[:300]
        assert r.interned or "op" not in r.marker or r.marker["seq"] + 1 >= 2**32, r.text[:300]
        assert r.event_type == (pyprof_db.MARK if r in settings else PUSH_POP), r.text[:300]
    ops = pyprof_db.ops(run.ranges)
    ids = collections.Counter(r.marker["id"] for r in ops)
    dup = [i for i, n in ids.items() if n > 1]
    assert not dup, f"op ids used more than once: {dup[:10]}"
    for r in ops:
        m = r.marker
        assert isinstance(m["id"], int) and m["id"] > 0 and isinstance(m["seq"], int)
        assert m["scope"] in ("function", "backward", "user"), r.text[:300]
        assert ("fwd_tid" in m) == (m["scope"] == "backward"), r.text[:300]
    stats = pyprof_db.stats(run.db)
    assert stats.get("events_dropped") == 0, stats
    assert stats.get("unclosed_ranges") == 0, stats


# --- argument values of hand-picked calls ------------------------------------------------------

def _t(shape, dtype="float32", stride=None):
    """A tensor as pyprof writes it (stride checked only when given)."""
    return {"shape": shape, "dtype": dtype, **({"stride": stride} if stride else {})}


VALUE_CASES = {
    # label: (op, overload, {arg: expected}); a dict expectation checks only the keys it names.
    "conv": ("aten::conv2d", "", {
        "input": _t([2, 4, 6, 6], stride=[144, 36, 6, 1]), "weight": _t([4, 2, 3, 3]),
        "bias": _t([4]), "stride": [2, 2], "padding": [1, 1], "dilation": [2, 2], "groups": 2}),
    "to_bf16": ("aten::to", "dtype", {
        "self": _t([2, 4, 6, 6]), "dtype": "bfloat16", "non_blocking": False, "copy": False,
        "memory_format": None}),
    "sum_dims": ("aten::sum", "dim_IntList", {
        "self": _t([2, 4, 6, 6]), "dim": [0, 2], "keepdim": True, "dtype": None}),
    "gelu_tanh": ("aten::gelu", "", {"self": _t([2, 4, 6, 6]), "approximate": "tanh"}),
    "einsum": ("aten::einsum", "", {
        "equation": "ij,jk->ik", "tensors": [_t([3, 4]), _t([4, 5])], "path": None}),
    "channels_last": ("aten::contiguous", "", {
        "self": _t([2, 4, 6, 6]), "memory_format": "channels_last"}),
    # Python wraps the number into a 0-dim float64 tensor before dispatch: no value to record.
    "mul_python_float": ("aten::mul", "Tensor", {
        "self": _t([2, 4, 6, 6]), "other": _t([], "float64", None)}),
    "mul_scalar": ("aten::mul", "Scalar", {"self": _t([2, 4, 6, 6]), "other": 2.5}),
    "add_alpha": ("aten::add", "Tensor", {
        "self": _t([2, 4, 6, 6]), "other": _t([2, 4, 6, 6]), "alpha": 2.5}),
    "full_inf": ("aten::full", "", {"size": [2], "fill_value": "inf"}),
    "full_neg_inf": ("aten::full", "", {"size": [2], "fill_value": "-inf"}),
    "full_nan": ("aten::full", "", {"size": [2], "fill_value": "nan"}),
    "empty_dtype_layout": ("aten::empty", "memory_format", {
        "size": [3], "dtype": "float16", "layout": "strided", "device": "cpu",
        "pin_memory": False, "memory_format": None}),
    "transposed_input": ("aten::mm", "", {
        "self": _t([4, 3], stride=[1, 4]), "mat2": _t([3, 4], stride=[4, 1])}),
    "cat_300": ("aten::cat", "", {"tensors": [_t([4])] * 256 + ["...+44"], "dim": 0}),
    "empty_70_dims": ("aten::empty", "memory_format", {"size": [1] * 64 + ["...+6"]}),
}


def _matches(actual, expected) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _matches(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            _matches(a, e) for a, e in zip(actual, expected))
    if isinstance(expected, bool) or expected is None:
        return actual is expected
    return type(actual) is not bool and actual == expected


def test_argument_values(tmp_path):
    result = pyprof_db.profile(tmp_path, testlib.script("models_values.py"), name="values")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    db = str(tmp_path / "values.sqlite")
    ranges = pyprof_db.read_ranges(db)
    parent = nest(ranges)
    ops = pyprof_db.ops(ranges)
    problems = []
    for label, (op, overload, expected) in VALUE_CASES.items():
        case = [r for r in ranges if r.domain == "" and r.text == f"case:{label}"]
        assert len(case) == 1, f"user range case:{label} missing"
        top = [r for r in ops if case[0].encloses(r) and parent[id(r)] is case[0]]
        found = [r for r in top if r.marker["op"] == op]
        if len(found) != 1:
            problems.append(f"{label}: {len(found)} x {op} at top level; top-level ops: "
                            f"{[r.marker['op'] for r in top]}")
            continue
        m = found[0].marker
        if m.get("overload", "") != overload:
            problems.append(f"{label}: overload {m.get('overload')!r}, expected {overload!r}")
        for arg, want in expected.items():
            if arg not in m["args"] or not _matches(m["args"][arg], want):
                problems.append(f"{label}: {op} arg {arg!r} = "
                                f"{json.dumps(m['args'].get(arg, '<missing>'))[:300]}, "
                                f"expected {json.dumps(want)[:300]}")
    # the non-finite fill value also reaches the nested aten::fill_
    fills = [r for r in ops if r.marker["op"] == "aten::fill_"
             and parent[id(r)] is not None and parent[id(r)].marker is not None
             and parent[id(r)].marker["op"] == "aten::full"]
    assert sorted(json.dumps(r.marker["args"]["value"]) for r in fills) == \
        sorted(['"inf"', '"-inf"', '"nan"']), [r.text for r in fills]
    assert not problems, "argument values differ:\n  " + "\n  ".join(problems)
    stats = pyprof_db.stats(db)
    assert stats.get("events_dropped") == 0 and stats.get("unclosed_ranges") == 0, stats


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
