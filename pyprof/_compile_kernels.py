"""What each Inductor kernel computes, taken from Inductor's own compile-time metadata and sent to
the capture as one `compiled_kernel` mark per kernel (docs/compile.md, docs/formats.md §1.5).

Inductor (with `config.trace.provenance_tracking_level` on) emits three structured-trace
artifacts per compiled graph, in this order, whether it compiled the graph or found it in its
cache:
  inductor_post_grad_graph   the post-grad FX graph, printed: every ATen node with its output's
                             dtype, shape, stride and device, and its arguments;
  inductor_output_code       the generated wrapper: which kernels this graph runs (its
                             `# [Provenance debug handles] <kernel>:<handle>` lines) and, for
                             C++ kernels with kernel profiling on, the run-time name
                             `graph_<g>_<kernel>` their RecordFunction opens;
  inductor_provenance_tracking_node_mappings
                             `cppCodeToPost` (C++ and Triton alike): `<kernel>:<handle>` -> the
                             post-grad nodes it computes.
A logging handler on `torch.__trace` collects them (nothing is parsed from kernel names). For each
generated kernel of the graph (extern kernels are ATen calls, records of their own) the mark
carries its nodes (op, overload, arguments in the marker value encoding, named by the op's
schema) and the buffers it reads and writes: the nodes' tensor arguments made outside the
kernel, and the nodes' outputs used outside it. prof costs the kernel as the sum of its nodes'
FLOPs and those buffers' bytes.

Nothing here may end the user's compile: a graph that cannot be read is counted in `stats` and
said once on standard error.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import sys
import threading
import weakref

import torch

from pyprof._dtypes import BY_INDUCTOR  # the one dtype table (csrc/common/dtypes.h)

MARK_VERSION = 1
# The collector keeps NVTX messages up to 64 KiB (csrc/collect/event_types.h); a longer mark
# would be cut into invalid JSON. Marks past this size are made smaller (fit_mark).
MAX_MARK_BYTES = 60_000

# What the handler did, for pyprof.stats() and the tests.
stats = {"graphs": 0, "kernels": 0, "nodes": 0, "nodes_missing": 0, "graphs_unreadable": 0,
         "kernels_cut": 0, "calls": 0, "autotune_benchmarks": 0}
_warned = False
_lock = threading.Lock()
_installed = False
# Dynamic-shape graphs by hash of their output code: (compile id, symbol_sources).
_call_bindings: dict[int, tuple[str, dict[str, list]]] = {}
# id(CompiledFxGraph) -> its entry of _call_bindings, or None: looked up once per graph object.
_binding_of_graph: dict[int, tuple[str, dict[str, list]] | None] = {}

# "f32[16, 128][128, 1]cpu", "b8[][]cuda:0", "f32[s0, 128][128, 1]cpu"
_ANNOTATION = re.compile(r"^(\w+)\[([^\]]*)\]\[([^\]]*)\](\S+)$")


def _extent(text: str) -> int | str:
    """A size or stride: an int, or under dynamic shapes the expression sympy prints ("s77",
    "128*s77"), which prof evaluates with the sizes each call of the graph ran with."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return text


def tensor_of(annotation: str) -> dict | None:
    """The marker value of a tensor from its FX annotation; None when it is not one tensor."""
    m = _ANNOTATION.match(annotation.strip())
    if not m:
        return None
    dtype = BY_INDUCTOR.get(m.group(1), m.group(1))
    shape = [_extent(d) for d in m.group(2).split(",") if d.strip()]
    stride = [_extent(d) for d in m.group(3).split(",") if d.strip()]
    tensor = {"shape": shape, "dtype": dtype, "stride": stride, "device": m.group(4)}
    if any(isinstance(d, str) for d in shape + stride):
        tensor["symbolic"] = True
    return tensor


_SYM = re.compile(r"^Sym\(([A-Za-z_]\w*)\)$")
_SYMBOL = re.compile(r"^[A-Za-z_]\w*$")


def symbol_sources(graph_text: str) -> dict[str, list]:
    """Where each size symbol of a dynamic-shape graph comes from among the graph's inputs (its
    placeholders, in order): ["int", i] for an input that is the symbol (`Sym(s77)`), ["dim",
    i, d] for dimension d of input i's shape when that is the bare symbol. Empty for a graph
    with static shapes."""
    try:
        placeholders = _placeholders(_forward_of(graph_text))
    except ValueError:
        return {}
    sources: dict[str, list] = {}
    for i, (_, ann) in enumerate(placeholders):
        m = _SYM.match(ann)
        if m:
            sources.setdefault(m.group(1), ["int", i])
            continue
        tensor = tensor_of(ann)
        for d, dim in enumerate(tensor["shape"] if tensor else ()):
            if isinstance(dim, str) and _SYMBOL.match(dim):
                sources.setdefault(dim, ["dim", i, d])
    return sources


def _forward_of(text: str) -> ast.FunctionDef:
    """The top-level forward of a printed post-grad graph. Raises ValueError when the text is
    no such graph."""
    try:
        module = ast.parse(text)
    except SyntaxError as e:
        raise ValueError(f"post-grad graph does not parse: {e}") from None
    for top in module.body:
        if isinstance(top, ast.ClassDef):
            forward = next((f for f in top.body
                            if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
            if forward is not None:
                return forward
    raise ValueError("post-grad graph without a forward")


def _placeholders(forward: ast.FunctionDef) -> list[tuple[str, str]]:
    """The graph's inputs in order (self left out), each with its annotation text."""
    return [(a.arg, str(a.annotation.value).strip() if isinstance(a.annotation, ast.Constant)
             else "") for a in forward.args.args[1:]]


class _Node:
    __slots__ = ("name", "target", "args", "kwargs", "tensor", "uses")

    def __init__(self, name, target, args, kwargs, tensor):
        self.name, self.target, self.args, self.kwargs, self.tensor = (name, target, args,
                                                                        kwargs, tensor)
        self.uses: list[str] = []  # names of the nodes (or "output") that read it


def _dotted(expr) -> str | None:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
        return ".".join(reversed(parts))
    return None


def _names_in(expr) -> list[str]:
    return [n.id for n in ast.walk(expr) if isinstance(n, ast.Name)]


def parse_graph(text: str) -> tuple[dict[str, _Node], list[str]]:
    """The nodes of a printed post-grad graph (its top-level forward) by name, and the names
    its output returns. Raises ValueError when the text is no such graph."""
    forward = _forward_of(text)
    nodes: dict[str, _Node] = {}
    for name, ann in _placeholders(forward):
        nodes[name] = _Node(name, "placeholder", [], {}, tensor_of(ann))
    outputs: list[str] = []
    for stmt in forward.body:
        if isinstance(stmt, ast.Return):
            outputs = _names_in(stmt.value) if stmt.value is not None else []
            continue
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            name, value = stmt.target.id, stmt.value
            ann = stmt.annotation.value if isinstance(stmt.annotation, ast.Constant) else ""
            tensor = tensor_of(str(ann))
        elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
              and isinstance(stmt.targets[0], ast.Name)):
            name, value, tensor = stmt.targets[0].id, stmt.value, None
        else:
            continue
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            continue  # `x = None`: the printer freeing a value, no node
        if isinstance(value, ast.Call):
            target = _dotted(value.func) or "?"
            node = _Node(name, target, value.args, {k.arg: k.value for k in value.keywords},
                         tensor)
        elif isinstance(value, ast.Subscript):  # getitem of a multi-output node
            node = _Node(name, "getitem", [value.value], {}, tensor)
        else:
            node = _Node(name, "?", [value], {}, tensor)
        nodes[name] = node
    for node in nodes.values():
        for arg in list(node.args) + list(node.kwargs.values()):
            for used in _names_in(arg):
                if used in nodes and used != node.name:
                    nodes[used].uses.append(node.name)
    for name in outputs:
        if name in nodes:
            nodes[name].uses.append("output")
    return nodes, outputs


def _value(expr, nodes: dict[str, _Node]):
    """An FX argument in the marker value encoding (docs/formats.md §1.1)."""
    if isinstance(expr, ast.Name):
        node = nodes.get(expr.id)
        if node is not None:
            return node.tensor if node.tensor is not None else "<unreadable>"
        return {"inf": "inf", "nan": "nan"}.get(expr.id, "<unreadable>")
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, (bool, int, float, str, type(None))) \
            else "<unreadable>"
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [_value(e, nodes) for e in expr.elts]
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        inner = _value(expr.operand, nodes)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
        return "-inf" if inner == "inf" else "<unreadable>"
    dotted = _dotted(expr)
    if dotted is not None and dotted.startswith("torch."):
        return dotted[len("torch."):]  # torch.float32 -> "float32", torch.strided -> "strided"
    if isinstance(expr, ast.Call) and _dotted(expr.func) == "device":
        kw = {k.arg: _value(k.value, nodes) for k in expr.keywords}
        return f"{kw.get('type')}:{kw['index']}" if kw.get("index") is not None \
            else str(kw.get("type"))
    return "<unreadable>"


def _plain(v):
    """A schema default as a marker value: non-finite floats as strings (§1.1), lists kept,
    anything else by its text."""
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, (bool, int, float, str, type(None))):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return str(v)


def fit_mark(mark: dict) -> str:
    """The mark's JSON, within MAX_MARK_BYTES: first as it is; then without what no cost needs
    (each node's `out`, the tensors' strides and devices); then with the nodes that do not fit
    left out and counted in `missing`, which makes prof leave the kernel unmodelled rather than
    sum part of it."""
    text = json.dumps(mark, separators=(",", ":"), allow_nan=False)
    if len(text) <= MAX_MARK_BYTES:
        return text

    def lean(v):
        if isinstance(v, dict):
            return {k: lean(x) for k, x in v.items() if k not in ("stride", "device", "out")}
        if isinstance(v, list):
            return [lean(x) for x in v]
        return v

    kernel = lean(mark["kernel"])
    nodes = kernel["nodes"]
    while True:
        text = json.dumps({**mark, "kernel": kernel}, separators=(",", ":"), allow_nan=False)
        if len(text) <= MAX_MARK_BYTES or not kernel["nodes"]:
            break
        keep = max(0, len(kernel["nodes"]) * MAX_MARK_BYTES // len(text) - 1)
        kernel = {**kernel, "nodes": nodes[:keep],
                  "missing": mark["kernel"]["missing"] + len(nodes) - keep}
    with _lock:
        stats["kernels_cut"] += 1
    return text


def _schema_of(target: str):
    if not target.startswith("torch.ops."):
        return None
    obj = torch.ops
    try:
        for part in target.split(".")[2:]:
            obj = getattr(obj, part)
        return obj._schema
    except (AttributeError, RuntimeError):
        return None


def node_marker(node: _Node, nodes: dict[str, _Node]) -> dict | None:
    """{"op","overload","args","out"} of an ATen node as its op marker would say it; None for
    what runs no op (getitem, placeholders)."""
    if not node.target.startswith("torch.ops."):
        return None
    parts = node.target.split(".")
    if len(parts) < 4:
        return None
    namespace, op = parts[2], parts[3]
    overload = parts[4] if len(parts) > 4 and parts[4] != "default" else ""
    schema = _schema_of(node.target)
    args: dict = {}
    if schema is not None:
        for i, a in enumerate(schema.arguments):  # positional arguments come first
            if a.name in node.kwargs:
                args[a.name] = _value(node.kwargs[a.name], nodes)
            elif not a.kwarg_only and i < len(node.args):
                args[a.name] = _value(node.args[i], nodes)
            elif a.has_default_value():
                args[a.name] = _plain(a.default_value)
    else:
        for i, a in enumerate(node.args):
            args[str(i)] = _value(a, nodes)
        for k, v in node.kwargs.items():
            args[k] = _value(v, nodes)
    out = {"op": f"{namespace}::{op}"}
    if overload:
        out["overload"] = overload
    out["args"] = args
    if node.tensor is not None:
        out["out"] = node.tensor
    return out


_HANDLE = re.compile(r"\[Provenance debug handles\] (\S+):(\d+)")
# Handles of calls that run an ATen op themselves rather than code Inductor generated: the Python
# wrapper's extern kernels (`extern_kernels.mm`) and fallbacks (`torch.ops.aten.X.default`), and
# the C++ wrapper's shims for both (`aoti_torch_cpu_mm_out`).
_EXTERN_CALL_PREFIXES = ("extern_kernels.", "torch.ops.", "aoti_torch_")


def _is_view(node: _Node) -> bool:
    """Whether an ATen node's output aliases its input (view, permute, reshape, split, ...):
    it computes nothing, so it may be listed under several kernels."""
    schema = _schema_of(node.target)
    return schema is not None and bool(schema.returns) and \
        schema.returns[0].alias_info is not None and not schema.returns[0].alias_info.is_write


def _extern_call_nodes(code_to_post: dict, handles: set, nodes: dict[str, _Node]) -> set[str]:
    """The nodes that this graph's extern calls compute: each runs as its own kernel (an ATen op
    record, or the C++ wrapper's shim with its own mark) and is counted there. Inductor's
    provenance can list such a node under a fused kernel too: a kernel made while the node was
    lowered (the layout copy of an input the extern call needs) inherits the node as its origin
    (docs/compile.md). The views an extern call folds into its arguments are left to the kernels
    that list them."""
    computed = set()
    for key, names in code_to_post.items():
        if key not in handles or not key.rsplit(":", 1)[0].startswith(_EXTERN_CALL_PREFIXES) \
                or not isinstance(names, list):
            continue
        for name in names:
            node = nodes.get(name) if isinstance(name, str) else None
            if node is not None and node.target.startswith("torch.ops.") and not _is_view(node):
                computed.add(name)
    return computed


def kernel_marks(graph_text: str, output_code: str, mapping: dict) -> list[dict]:
    """One mark object per generated kernel of one graph (extern kernels left out)."""
    nodes, _ = parse_graph(graph_text)
    code_to_post = mapping.get("cppCodeToPost") or {}
    # With backward lowered at once the mapping is cumulative (the forward's kernels are in the
    # backward graph's mapping too, under node names that also exist there): only the handles
    # this graph's code calls are its own.
    # Where each handle first appears: the wrapper runs its calls in code order.
    position: dict[str, int] = {}
    for m in _HANDLE.finditer(output_code):
        position.setdefault(f"{m.group(1)}:{m.group(2)}", m.start())
    handles = set(position)
    getitems: dict[str, list[str]] = {}  # multi-output node -> its getitem nodes
    source_of: dict[str, str] = {}  # getitem node -> its multi-output node
    for n in nodes.values():
        source = _names_in(n.args[0])[:1] if n.target == "getitem" and n.args else []
        if source:
            getitems.setdefault(source[0], []).append(n.name)
            source_of[n.name] = source[0]
    extern_computed = _extern_call_nodes(code_to_post, handles, nodes)
    kernels = []
    for key, names in code_to_post.items():
        if key not in handles:
            continue
        kernel = key.rsplit(":", 1)[0]
        # The Python wrapper's extern calls and fallbacks are ATen op records of their own.
        if kernel.startswith(("extern_kernels.", "torch.ops.")) or not isinstance(names, list):
            continue
        names = [n for n in names if isinstance(n, str)]
        if not kernel.startswith(_EXTERN_CALL_PREFIXES):
            # A fused kernel counts only what it computes: not a node an extern call runs, nor
            # that node's outputs (its getitems), which the kernel reads like any input.
            names = [n for n in names if n not in extern_computed
                     and source_of.get(n) not in extern_computed]
        # The mapping names a multi-output node (var_mean) and only some of its getitems: the
        # others are the same kernel's values too.
        listed = set(names)
        names += [g for n in names for g in getitems.get(n, ()) if g not in listed]
        kernels.append((kernel, names, position[key]))
    # A kernel's nodes may sit in several kernels (recomputed there): a value is written for
    # use outside only when a reader does not compute it itself. An extern call recomputes
    # nothing (the views it lists are its arguments, read from memory).
    kernels_of: dict[str, set[str]] = {}
    members_of = {kernel: set(names) for kernel, names, _ in kernels}
    for kernel, names, _ in kernels:
        if kernel.startswith(_EXTERN_CALL_PREFIXES):
            continue
        for n in names:
            kernels_of.setdefault(n, set()).add(kernel)
    marks = []
    for kernel, names, _ in kernels:
        members = set(names)
        entries, missing = [], 0
        reads, writes = {}, {}
        for name in names:
            node = nodes.get(name)
            if node is None:
                missing += 1
                continue
            marker = node_marker(node, nodes)
            if marker is not None:
                entries.append(marker)
            for arg in list(node.args) + list(node.kwargs.values()):
                for used in _names_in(arg):
                    src = nodes.get(used)
                    if used not in members and src is not None and src.tensor is not None:
                        reads.setdefault(used, src.tensor)
            if node.tensor is not None and any(
                    u not in members and not any(name in members_of[k] for k in
                                                 kernels_of.get(u, ()))
                    for u in node.uses):
                writes[name] = node.tensor
        # Runtime name: C++ kernels under kernel profiling open "graph_<g>_<kernel>"; Triton
        # kernels run under their own name.
        found = re.search(r'"(graph_\d+_' + re.escape(kernel) + r')"', output_code)
        marks.append({"v": MARK_VERSION, "compiled_kernel": found.group(1) if found else kernel,
                      "kernel": {"nodes": entries, "reads": list(reads.values()),
                                 "writes": list(writes.values()), "missing": missing}})
    _number_call_sites(marks, [at for _, _, at in kernels], graph_text)
    return marks


def _number_call_sites(marks: list[dict], positions: list[int], graph_text: str) -> None:
    """A run-time name the graph's code calls at several places (the C++ wrapper runs each
    extern ATen call through a shim named for the op, `aoti_torch_cpu_mm_out`): each of its
    marks gets `call_site`, its place among them in code order, which is the order one run of
    the graph calls them in, and `backward`, whether this is an AOTAutograd backward graph (its
    inputs include the incoming gradients, `tangents_*`), since a forward and a backward graph
    share their compile id."""
    places: dict[str, list[int]] = {}
    for i, m in enumerate(marks):
        places.setdefault(m["compiled_kernel"], []).append(i)
    repeated = [indices for indices in places.values() if len(indices) > 1]
    if not repeated:
        return
    try:
        backward = any(name.startswith("tangents")
                       for name, _ in _placeholders(_forward_of(graph_text)))
    except ValueError:
        return  # no graph to tell the pass by: the places stay unnumbered (ambiguous)
    for indices in repeated:
        for k, i in enumerate(sorted(indices, key=lambda i: positions[i])):
            marks[i]["call_site"] = k
            marks[i]["backward"] = backward


class _ArtifactHandler(logging.Handler):
    """Keeps the last post-grad graph and output code of this thread's compile; on the mapping
    that follows them, sends the graph's kernel marks."""

    def __init__(self, send):
        super().__init__(logging.DEBUG)
        self._send = send
        self._local = threading.local()

    def emit(self, record):
        try:
            self._emit(record)
        except Exception as e:  # never the user's compile's problem
            _note_unreadable(f"{type(e).__name__}: {e}")

    def _emit(self, record):
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        artifact = metadata.get("artifact")
        name = artifact.get("name") if isinstance(artifact, dict) else None
        if name is None:
            name = "inductor_post_grad_graph" if "inductor_post_grad_graph" in metadata else \
                "inductor_output_code" if "inductor_output_code" in metadata else None
        if name not in ("inductor_post_grad_graph", "inductor_output_code",
                        "inductor_provenance_tracking_node_mappings"):
            return
        payload = getattr(record, "payload", None)
        if name == "inductor_provenance_tracking_node_mappings":
            graph = getattr(self._local, "graph", None)
            code = getattr(self._local, "code", None)
            self._local.graph = self._local.code = None
            if graph is None or code is None or not payload:
                return
            mapping = json.loads(payload)
            marks = kernel_marks(graph, code, mapping if isinstance(mapping, dict) else {})
            # The compile id ("0/1": Dynamo's frame 0, its second compile), which names the
            # `Torch-Compiled Region: 0/1` range the graph's code runs in: Triton kernels of
            # two graphs can share a name (a recompile, a graph break), and parse tells them
            # apart by it.
            graph_id = compile_id_of(metadata)
            if graph_id:
                for m in marks:
                    m["graph"] = graph_id
            with _lock:
                stats["graphs"] += 1
                stats["kernels"] += len(marks)
                for m in marks:
                    stats["nodes"] += len(m["kernel"]["nodes"])
                    stats["nodes_missing"] += m["kernel"]["missing"]
            for m in marks:
                self._send(fit_mark(m))
            # Dynamic shapes: each call of this graph will say its sizes (_announce_call).
            sources = symbol_sources(graph)
            if sources and graph_id:
                with _lock:
                    _call_bindings[hash(code)] = (graph_id, sources)
        elif name == "inductor_post_grad_graph":
            self._local.graph = payload
        else:
            self._local.code = payload


def compile_id_of(metadata: dict) -> str | None:
    """The structured-trace record's compile id as Dynamo's region ranges spell it
    (`frame_id/frame_compile_id`); None without one (compiled autograd's graphs, a torch that
    does not say)."""
    frame, compile_ = metadata.get("frame_id"), metadata.get("frame_compile_id")
    if not isinstance(frame, int) or not isinstance(compile_, int) or \
            metadata.get("compiled_autograd_id") is not None:
        return None
    return f"{frame}/{compile_}"


def _note_unreadable(why: str) -> None:
    global _warned
    with _lock:
        stats["graphs_unreadable"] += 1
        first = not _warned
        _warned = True
    if first:
        print(f"pyprof: warning: a compiled graph's kernel metadata was not read ({why}); its "
              "fused kernels keep no FLOP model (pyprof.stats()['compiled_graphs_unreadable'])",
              file=sys.stderr)


def call_mark(binding: tuple[str, dict[str, list]], inputs) -> str | None:
    """The `compiled_call` mark of one call of a dynamic-shape graph: its compile id and the
    value of each size symbol, read from the call's inputs; None when none could be read."""
    graph_id, sources = binding
    symbols = {}
    for symbol, source in sources.items():
        try:
            value = inputs[source[1]] if source[0] == "int" else inputs[source[1]].shape[source[2]]
            symbols[symbol] = int(value)
        except (IndexError, TypeError, ValueError, AttributeError, RuntimeError):
            continue
    if not symbols:
        return None
    return json.dumps({"v": MARK_VERSION, "compiled_call": graph_id, "symbols": symbols},
                      separators=(",", ":"))


def _announce_calls(send) -> None:
    """Wraps the call of Inductor's compiled graphs: a graph compiled with symbolic sizes sends,
    before each call, the sizes it runs with (call_mark), so that its kernels cost what that
    call computed. Graphs with static shapes send nothing."""
    try:
        from torch._inductor.output_code import CompiledFxGraph
    except ImportError:
        return
    original = CompiledFxGraph.__call__
    if getattr(original, "_pyprof_wrapped", False):
        return

    def forget(key):
        with _lock:
            _binding_of_graph.pop(key, None)

    def __call__(self, inputs):
        key = id(self)
        binding = _binding_of_graph.get(key, False)
        if binding is False:
            code = getattr(self, "source_code", None)
            with _lock:
                binding = _call_bindings.get(hash(code)) if isinstance(code, str) else None
                _binding_of_graph[key] = binding
            try:
                weakref.finalize(self, forget, key)
            except TypeError:
                pass
        if binding is not None:
            try:
                mark = call_mark(binding, inputs)
                if mark is not None:
                    send(mark)
                    with _lock:
                        stats["calls"] += 1
            except Exception as e:  # never the user's run's problem
                _note_unreadable(f"{type(e).__name__}: {e}")
        return original(self, inputs)

    __call__._pyprof_wrapped = True
    CompiledFxGraph.__call__ = __call__


def autotune_range_text(autotuner, launcher) -> str:
    """The text of the range around one benchmarked launch configuration: the kernel's run-time
    name and the configuration ("triton_red_fused_0 XBLOCK: 1, R0_BLOCK: 2048, num_warps: 16,
    ...")."""
    meta = getattr(autotuner, "inductor_meta", None)
    name = meta.get("kernel_name") if isinstance(meta, dict) else None
    if not name:
        name = getattr(getattr(autotuner, "fn", None), "__name__", None) or "triton kernel"
    config = getattr(launcher, "config", None)
    return f"{name} {config}" if config is not None else str(name)


def separate_autotuning(push, pop) -> None:
    """Triton's autotuner times each launch configuration of a kernel with several, at the
    kernel's first call (and coordinate descent, when on, at more): dozens to hundreds of real
    launches of the kernel on copies of its arguments, plus the kernels that clear the L2 cache
    between them, all inside the op that first called it. Each configuration's timing
    (`CachingAutotuner.bench`, which every autotuning path goes through) runs inside a range of
    the `pyprof.autotune` domain, `push(text)` ... `pop()`, and prof leaves what ran in one out
    of the reports (docs/compile.md)."""
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:  # a torch without Inductor's Triton runtime
        return
    original = getattr(CachingAutotuner, "bench", None)
    if original is None or getattr(original, "_pyprof_wrapped", False):
        return

    def bench(self, launcher, *args, **kwargs):
        try:
            pushed = push(autotune_range_text(self, launcher))
        except Exception:  # never the user's run's problem
            pushed = False
        try:
            return original(self, launcher, *args, **kwargs)
        finally:
            if pushed:
                pop()
                with _lock:
                    stats["autotune_benchmarks"] += 1

    bench._pyprof_wrapped = True
    bench.__wrapped__ = original
    CachingAutotuner.bench = bench


def install(send, push_autotune=None, pop_autotune=None) -> bool:
    """Turns on Inductor's provenance tracking (a level the user set is kept) and lowering of
    the backward graph at compile time (lazily lowered, its kernels would have no mapping), and
    starts collecting; `send(message)` writes one mark. With `push_autotune(text)` (True when it
    opened a range) and `pop_autotune()`, Triton's autotuning runs inside ranges of its own
    (separate_autotuning). Imports Inductor's config: call it when a compile is about to. False
    when this torch lacks what it needs."""
    global _installed
    if _installed:
        return True
    try:
        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config
    except ImportError:
        return False
    if push_autotune is not None and pop_autotune is not None:
        separate_autotuning(push_autotune, pop_autotune)  # needs no provenance tracking
    trace = getattr(inductor_config, "trace", None)
    if trace is None or not hasattr(trace, "provenance_tracking_level") or \
            not hasattr(functorch_config, "force_non_lazy_backward_lowering"):
        return False
    if not trace.provenance_tracking_level:
        trace.provenance_tracking_level = 2  # basic: the node mappings
    functorch_config.force_non_lazy_backward_lowering = True
    logger = logging.getLogger("torch.__trace")
    logger.addHandler(_ArtifactHandler(send))
    _announce_calls(send)
    _installed = True
    return True
