"""pyprof/_compile_kernels.py on hand-written Inductor artifacts (docs/compile.md): the
post-grad graph's printed form, the wrapper's provenance handles and the node mapping. What a
real compile produces is checked end to end by tests/test_compile.py."""

from __future__ import annotations

import json
import logging

from pyprof import _compile_kernels as ck

GRAPH = '''
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 8][8, 1]cpu", w: "f32[8][1]cpu"):
        # File: model.py:3 in forward, code: return (x * 2).exp() + w, -(x * 2).exp()
        mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(x, 2.0);  x = None
        exp: "f32[4, 8][8, 1]cpu" = torch.ops.aten.exp.default(mul);  mul = None
        add: "f32[4, 8][8, 1]cpu" = torch.ops.aten.add.Tensor(exp, w);  w = None
        neg: "f32[4, 8][8, 1]cpu" = torch.ops.aten.neg.default(exp);  exp = None
        var_mean = torch.ops.aten.var_mean.correction(add, [1], correction = 0, keepdim = True)
        getitem: "f32[4, 1][1, 1]cpu" = var_mean[0]
        getitem_1: "f32[4, 1][1, 1]cpu" = var_mean[1];  var_mean = None
        full: "f32[][]cpu" = torch.ops.aten.full.default([], -inf, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)
        return (add, neg, getitem, getitem_1, full)
'''

CODE = '''
cpp_fused_add_exp_mul_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r\'\'\'
    torch::aot_inductor::RAIIAtenRecordFunctionHandle record_graph_5_cpp_fused_add_exp_mul_0_("graph_5_cpp_fused_add_exp_mul_0", nullptr);
\'\'\')
def call(args):
        # [Provenance debug handles] cpp_fused_add_exp_mul_0:1
        cpp_fused_add_exp_mul_0(x, w, buf0)
        # [Provenance debug handles] triton_poi_fused_exp_mul_neg_1:2
        triton_poi_fused_exp_mul_neg_1.run(x, buf1)
        # [Provenance debug handles] extern_kernels.mm:3
        # [Provenance debug handles] cpp_fused_var_mean_2:4
'''

T48 = {"shape": [4, 8], "dtype": "float32", "stride": [8, 1], "device": "cpu"}
T41 = {"shape": [4, 1], "dtype": "float32", "stride": [1, 1], "device": "cpu"}
W = {"shape": [8], "dtype": "float32", "stride": [1], "device": "cpu"}


def mapping(**extra) -> dict:
    return {"version": 2.0, "cppCodeToPost": {
        "cpp_fused_add_exp_mul_0:1": ["mul", "exp", "add"],
        # exp recomputed here rather than read: the first kernel need not write it
        "triton_poi_fused_exp_mul_neg_1:2": ["mul", "exp", "neg", "no_such_node"],
        "extern_kernels.mm:3": ["mm"],
        # the mapping names the multi-output node and one getitem: the other is its value too
        "cpp_fused_var_mean_2:4": ["var_mean", "getitem", "full"],
        # another graph's kernel (a cumulative mapping): not this graph's code
        "cpp_fused_relu_0:7": ["mul"], **extra}}


def test_tensor_annotations():
    assert ck.tensor_of("f32[16, 128][128, 1]cpu") == {
        "shape": [16, 128], "dtype": "float32", "stride": [128, 1], "device": "cpu"}
    assert ck.tensor_of("b8[][]cuda:0") == {"shape": [], "dtype": "bool", "stride": [],
                                            "device": "cuda:0"}
    # Dynamic shapes: sizes as sympy prints them, for prof to evaluate with each call's sizes.
    assert ck.tensor_of("bf16[s0, 64*s0][64*s0, 1]cuda:1") == {
        "shape": ["s0", "64*s0"], "dtype": "bfloat16", "stride": ["64*s0", 1],
        "device": "cuda:1", "symbolic": True}
    assert ck.tensor_of("Sym(s0)") is None


def test_symbol_sources_and_call_marks():
    """Where each size symbol of a dynamic-shape graph is read from among its inputs, and the
    mark one call sends (docs/formats.md §1.5)."""
    import torch
    graph = ('class GraphModule(torch.nn.Module):\n'
             '    def forward(self, primals_1: "f32[128, 64][64, 1]cpu", primals_2: "Sym(s77)", '
             'primals_3: "f32[s77, 64][64, 1]cpu", primals_4: "f32[s1, 2*s77][1, 1]cpu"):\n'
             '        return (primals_1,)\n')
    sources = ck.symbol_sources(graph)
    assert sources == {"s77": ["int", 1], "s1": ["dim", 3, 0]}
    assert ck.symbol_sources(graph.replace("s77", "8").replace("s1", "3")) == {}
    inputs = [torch.zeros(128, 64), 5, torch.zeros(5, 64), torch.zeros(7, 10)]
    assert json.loads(ck.call_mark(("0/1", sources), inputs)) == {
        "v": 1, "compiled_call": "0/1", "symbols": {"s77": 5, "s1": 7}}
    assert ck.call_mark(("0/1", sources), []) is None  # nothing readable: no mark


def test_kernel_marks_nodes_buffers_and_runtime_names():
    marks = {m["compiled_kernel"]: m["kernel"] for m in ck.kernel_marks(GRAPH, CODE, mapping())}
    # the C++ kernel by its run-time RecordFunction name; Triton by its own; no extern kernel
    # and no kernel of another graph
    assert set(marks) == {"graph_5_cpp_fused_add_exp_mul_0", "triton_poi_fused_exp_mul_neg_1",
                          "cpp_fused_var_mean_2"}
    first = marks["graph_5_cpp_fused_add_exp_mul_0"]
    assert first["nodes"] == [
        {"op": "aten::mul", "overload": "Tensor", "args": {"self": T48, "other": 2.0},
         "out": T48},
        {"op": "aten::exp", "args": {"self": T48}, "out": T48},
        {"op": "aten::add", "overload": "Tensor", "args": {"self": T48, "other": W, "alpha": 1},
         "out": T48},
    ]
    assert first["reads"] == [T48, W]  # x and w
    assert first["writes"] == [T48]  # add (returned); exp is recomputed by its other reader
    assert first["missing"] == 0
    second = marks["triton_poi_fused_exp_mul_neg_1"]
    assert [n["op"] for n in second["nodes"]] == ["aten::mul", "aten::exp", "aten::neg"]
    assert (second["reads"], second["writes"], second["missing"]) == ([T48], [T48], 1)
    third = marks["cpp_fused_var_mean_2"]
    var_mean, full = third["nodes"]
    assert var_mean["args"] == {"self": T48, "dim": [1], "correction": 0, "keepdim": True}
    assert full["args"] == {"size": [], "fill_value": "-inf", "dtype": "float32",
                            "layout": "strided", "device": "cpu", "pin_memory": False}
    assert third["reads"] == [T48]  # add, from the first kernel
    # both statistics (returned; getitem_1 though the mapping did not name it) and full
    assert third["writes"] == [T41, {"shape": [], "dtype": "float32", "stride": [],
                                     "device": "cpu"}, T41]
    json.dumps(marks, allow_nan=False)  # a mark is plain JSON


def test_shims_called_at_several_places_are_numbered_in_code_order():
    """The C++ wrapper calls each extern op through a shim named for it, once per place: the
    marks of a name the code calls more than once get `call_site` in code order (not the
    mapping's order) and `backward` (the graph's inputs include `tangents_*`)."""
    graph = ('class GraphModule(torch.nn.Module):\n'
             '    def forward(self, primals_1: "f32[2, 8][8, 1]cpu", '
             'tangents_1: "f32[8, 8][8, 1]cpu"):\n'
             '        mm: "f32[2, 8][8, 1]cpu" = torch.ops.aten.mm.default(primals_1, '
             'tangents_1)\n'
             '        mm_1: "f32[8, 8][8, 1]cpu" = torch.ops.aten.mm.default(tangents_1, '
             'tangents_1)\n'
             '        exp: "f32[8, 8][8, 1]cpu" = torch.ops.aten.exp.default(mm_1)\n'
             '        return (mm, exp)\n')
    code = ('    // [Provenance debug handles] aoti_torch_cpu_mm_out:9\n'
            '    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mm_out(buf0, primals_1, tangents_1));\n'
            '    // [Provenance debug handles] aoti_torch_cpu_mm_out:4\n'
            '    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_mm_out(buf1, tangents_1, '
            'tangents_1));\n'
            '    // [Provenance debug handles] cpp_fused_exp_0:5\n')
    mapping = {"cppCodeToPost": {"aoti_torch_cpu_mm_out:4": ["mm_1"],
                                 "aoti_torch_cpu_mm_out:9": ["mm"], "cpp_fused_exp_0:5": ["exp"]}}
    marks = ck.kernel_marks(graph, code, mapping)
    rows = {(m["compiled_kernel"], m.get("call_site"), m.get("backward")):
            m["kernel"]["writes"][0]["shape"] for m in marks}
    # Place 0 is the call first in the code (handle 9: mm, [2, 8]), whatever the mapping's order.
    assert rows == {("aoti_torch_cpu_mm_out", 0, True): [2, 8],
                    ("aoti_torch_cpu_mm_out", 1, True): [8, 8],
                    ("cpp_fused_exp_0", None, None): [8, 8]}
    # A forward graph (no tangents): backward false.
    fwd = ck.kernel_marks(graph.replace("tangents_1", "primals_2"),
                          code.replace("tangents_1", "primals_2"), mapping)
    assert sorted((m["call_site"], m["backward"]) for m in fwd if "call_site" in m) == [
        (0, False), (1, False)]


# The gpt2 block's attention backward as Inductor 2.13 wrote it (tests/test_compile.py): the
# extern call's gradient input is made contiguous by a fused copy kernel, and the provenance
# lists the attention node under that kernel too (the kernel was made while the node was lowered).
ATTENTION_BWD = (
    'class GraphModule(torch.nn.Module):\n'
    '    def forward(self, mm_4: "f32[32, 64][64, 1]cpu", q: "f32[2, 4, 16, 16][1024, 16, 64, 1]cpu",'
    ' out: "f32[2, 4, 16, 16][1024, 16, 64, 1]cpu", lse: "f32[2, 4, 16][64, 1, 4]cpu",'
    ' tangents_1: "f32[2, 16, 64][1024, 64, 1]cpu"):\n'
    '        view_20: "f32[2, 16, 64][1024, 64, 1]cpu" = torch.ops.aten.reshape.default(mm_4, [2, 16, 64])\n'
    '        view_21: "f32[2, 16, 4, 16][1024, 64, 16, 1]cpu" = torch.ops.aten.reshape.default(view_20, [2, 16, 4, 16])\n'
    '        permute_20: "f32[2, 4, 16, 16][1024, 16, 64, 1]cpu" = torch.ops.aten.permute.default(view_21, [0, 2, 1, 3])\n'
    '        bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(permute_20, q, q, q, out, lse, 0.0, True)\n'
    '        getitem_9: "f32[2, 4, 16, 16][1024, 16, 64, 1]cpu" = bwd[0]\n'
    '        getitem_10: "f32[2, 4, 16, 16][1024, 16, 64, 1]cpu" = bwd[1]\n'
    '        getitem_11: "f32[2, 4, 16, 16][1024, 16, 64, 1]cpu" = bwd[2]\n'
    '        cat: "f32[2, 4, 16, 48][3072, 768, 48, 1]cpu" = torch.ops.aten.cat.default([getitem_9, getitem_10, getitem_11], 3)\n'
    '        return (cat,)\n')
ATTENTION_NODES = ["bwd", "permute_20", "view_21", "view_20"]


def test_an_extern_calls_node_is_left_out_of_fused_kernels():
    """A node that an extern call computes (here a fallback, `torch.ops.aten.X.default` under
    the Python wrapper, `aoti_torch_cpu_X` under the C++ wrapper) is counted at that call: a
    fused kernel that the provenance also gives it keeps only what it computes (the copy: the
    views, reading mm_4 and writing permute_20), and a kernel reading the call's outputs reads
    them as inputs. The Python wrapper's fallback gets no mark (it is an ATen record of its
    own); the C++ wrapper's shim keeps its node."""
    copy = "cpp_fused__scaled_dot_product_flash_attention_for_cpu_backward_transpose_view_2"
    for call in ("torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
                 "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu_backward"):
        code = (f"        # [Provenance debug handles] {copy}:17\n"
                f"        # [Provenance debug handles] {call}:18\n"
                "        # [Provenance debug handles] cpp_fused_cat_3:19\n")
        mapping = {"cppCodeToPost": {f"{copy}:17": ATTENTION_NODES, f"{call}:18": ATTENTION_NODES,
                                     "cpp_fused_cat_3:19": ["cat", "getitem_9", "getitem_10",
                                                            "getitem_11"]}}
        marks = {m["compiled_kernel"]: m["kernel"]
                 for m in ck.kernel_marks(ATTENTION_BWD, code, mapping)}
        shim = call.startswith("aoti_")
        assert set(marks) == {copy, "cpp_fused_cat_3"} | ({call} if shim else set()), marks
        assert [n["op"] for n in marks[copy]["nodes"]] == [
            "aten::permute", "aten::reshape", "aten::reshape"]
        assert [t["shape"] for t in marks[copy]["reads"]] == [[32, 64]]
        assert [t["shape"] for t in marks[copy]["writes"]] == [[2, 4, 16, 16]]
        # The cat kernel reads the three gradients the call wrote.
        assert [n["op"] for n in marks["cpp_fused_cat_3"]["nodes"]] == ["aten::cat"]
        assert [t["shape"] for t in marks["cpp_fused_cat_3"]["reads"]] == [[2, 4, 16, 16]] * 3
        if shim:
            assert [n["op"] for n in marks[call]["nodes"]][:1] == [
                "aten::_scaled_dot_product_flash_attention_for_cpu_backward"]


def test_unreadable_artifacts_are_counted_not_raised(capsys):
    sent = []
    handler = ck._ArtifactHandler(sent.append)
    before = dict(ck.stats)

    def emit(name, payload, artifact=True):
        record = logging.LogRecord("torch.__trace", logging.DEBUG, __file__, 1, "", (), None)
        record.metadata = ({"artifact": {"name": name, "encoding": "json"}} if artifact
                           else {name: {}})
        record.payload = payload
        handler.emit(record)

    emit("inductor_post_grad_graph", "class GraphModule(: not python", artifact=False)
    emit("inductor_output_code", CODE, artifact=False)
    emit("inductor_provenance_tracking_node_mappings", json.dumps(mapping()))
    assert sent == []
    assert ck.stats["graphs_unreadable"] == before["graphs_unreadable"] + 1
    # the next graph is read again
    emit("inductor_post_grad_graph", GRAPH)
    emit("inductor_output_code", CODE)
    emit("inductor_provenance_tracking_node_mappings", json.dumps(mapping()))
    assert len(sent) == 3
    assert ck.stats["graphs"] == before["graphs"] + 1
    assert ck.stats["nodes_missing"] == before["nodes_missing"] + 1
    # a mapping with no graph before it (the handler attached mid-compile) sends nothing
    emit("inductor_provenance_tracking_node_mappings", json.dumps(mapping()))
    assert len(sent) == 3


def test_marks_too_long_for_the_collector_are_made_smaller():
    """A mark longer than the collector keeps (64 KiB) would be cut into invalid JSON: it first
    loses what no cost needs, then the nodes that do not fit, counted as missing so that prof
    leaves the kernel unmodelled instead of summing part of it."""
    node = {"op": "aten::mul", "overload": "Tensor", "args": {"self": T48, "other": T48},
            "out": T48}
    mark = {"v": 1, "compiled_kernel": "k", "kernel": {"nodes": [node] * 20, "reads": [T48],
                                                       "writes": [T48], "missing": 0}}
    assert json.loads(ck.fit_mark(mark)) == mark  # small: as it is
    lean_node = {"op": "aten::mul", "overload": "Tensor",
                 "args": {"self": {"shape": [4, 8], "dtype": "float32"},
                          "other": {"shape": [4, 8], "dtype": "float32"}}}
    big = {**mark, "kernel": {**mark["kernel"], "nodes": [node] * 400}}
    leaner = json.loads(ck.fit_mark(big))
    assert len(ck.fit_mark(big)) <= ck.MAX_MARK_BYTES
    assert leaner["kernel"]["nodes"] == [lean_node] * 400 and leaner["kernel"]["missing"] == 0
    huge = {**mark, "kernel": {**mark["kernel"], "nodes": [node] * 2000}}
    before = ck.stats["kernels_cut"]
    cut = json.loads(ck.fit_mark(huge))
    assert 0 < len(cut["kernel"]["nodes"]) < 2000
    assert cut["kernel"]["missing"] == 2000 - len(cut["kernel"]["nodes"])
    assert len(ck.fit_mark(huge)) <= ck.MAX_MARK_BYTES
    assert ck.stats["kernels_cut"] == before + 2


def test_schema_defaults_are_plain_marker_values():
    assert ck._plain(float("inf")) == "inf" and ck._plain(float("-inf")) == "-inf"
    assert ck._plain(float("nan")) == "nan"
    assert ck._plain((1, 2.5, None)) == [1, 2.5, None]
