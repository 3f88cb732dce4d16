"""Docs that must change when the code does, checked against what the code does rather than
against a copy of it.

1. Every op in the models registry (what `pyprof-prof --list-ops`, a hidden option, prints from
   the registry it was built with) is listed in docs/ops.md.
2. The record keys docs/formats.md §3 lists are the keys pyprof-parse writes: the union over
   all records of its output for every real trace in tests/data, and for two databases built
   with tests/nsys_synth.py for what none of those traces has (pyprof markers with modules, call
   sites and backward ops, a CUDA graph launch, a memset, a CPU-only profile).
3. Every report in prof's registry (`pyprof-prof --list-reports`) has its row in docs/prof.md
   §3, and the table ids of a report of several tables are named there.

docs/ops.md names ops in code spans, with this shorthand (what `ops_md_names` expands):
  `c10d::allreduce_`    allreduce_ (ATen's and c10d's ops are registered without the
                        namespace) and c10d::allreduce_ (a library's op is registered
                        under its qualified name: `_C::rms_norm`)
  `max_pool{1,2,3}d`    max_pool1d, max_pool2d, max_pool3d (any number of {...} groups)
  `_fused_adam(_)`      _fused_adam, _fused_adam_ (optional suffixes, each starting with "_")
  `conv1d/2d/3d`        conv1d, conv2d, conv3d (a part starting with a digit replaces as many
                        characters at the end of the name before it)
  `lstm/gru`            lstm, gru
"""

import collections
import itertools
import json
import os
import re

import pytest

import testlib
from nsys_synth import SynthDb, tensor

pytestmark = pytest.mark.needs_build

DOCS = os.path.join(testlib.ROOT, "docs")
GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_tn_align4>(Params)"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"


# ---- 1. docs/ops.md lists every modelled op ------------------------------------------------

def registry_ops():
    """{op: family} of the models registry, from the built pyprof-prof."""
    out = testlib.prof("--list-ops", timeout=60).stdout
    return dict(line.split() for line in out.splitlines())


def expand_braces(text):
    group = re.search(r"\{([^{}]*)\}", text)
    if not group:
        return [text]
    return [expanded for alternative in group.group(1).split(",")
            for expanded in expand_braces(text[:group.start()] + alternative.strip()
                                          + text[group.end():])]


NAME = re.compile(r"(?P<namespace>(?:[A-Za-z_]\w*::)*)(?P<name>[A-Za-z_]\w*)"
                  r"(?P<suffixes>\((?:\s*_\w*\s*,?)+\))?(?P<alternatives>(?:/\w+)*)")


def ops_md_names():
    """Every name docs/ops.md writes in a code span, its shorthand expanded."""
    with open(os.path.join(DOCS, "ops.md")) as f:
        spans = re.findall(r"`([^`]*)`", f.read())
    names = set()
    for span in spans:
        for text in expand_braces(span):
            for m in NAME.finditer(text):
                name = m.group("name")
                found = {name}
                if m.group("suffixes"):
                    found.update(name + s.strip() for s in m.group("suffixes")[1:-1].split(","))
                for part in filter(None, m.group("alternatives").split("/")):
                    found.add(name[:len(name) - len(part)] + part if part[0].isdigit() else part)
                names.update(found)
                # A library op's registry name is qualified ("_C::rms_norm"): the span's too.
                names.update(m.group("namespace") + f for f in found)
    return names


def test_every_registry_op_is_in_ops_md():
    documented = ops_md_names()
    missing = collections.defaultdict(list)
    for op, family in sorted(registry_ops().items()):
        if op not in documented:
            missing[family].append(op)
    assert not missing, (
        "ops the models registry has but docs/ops.md does not list, by the family (section "
        "\"### <family>\") they belong in:\n"
        + "\n".join(f"  {family}: {' '.join(ops)}" for family, ops in sorted(missing.items())))


# ---- 2. docs/formats.md §3 lists the keys parse writes ----------------------------------

def formats_md_record_keys():
    """The keys in the first column of the "Record keys" table of docs/formats.md §3."""
    with open(os.path.join(DOCS, "formats.md")) as f:
        text = f.read()
    section = text[text.index("\n## 3. "):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    lines = section[section.index("Record keys:"):].splitlines()[1:]
    while lines and not lines[0].startswith("|"):
        lines.pop(0)
    keys = set()
    for line in lines:
        if not line.startswith("|"):
            break
        keys.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return keys


def gpu_synth_db():
    """pyprof markers around a Linear forward and backward (module, call site, backward op and
    its arguments), a copy, a memset, a CUDA graph launch, a kernel ending before it starts, and
    a Triton kernel whose name two compiled graphs share (compiled-kernel marks with their
    graph, and Dynamo's region ranges), and one of a graph with symbolic sizes (a compiled-call
    mark); first, a kernel launched before the trace began (its launch call not recorded, its
    correlation id the process's lowest)."""
    db = SynthDb()
    main = db.thread(pid=100)
    main.launch(GEMM, record_api=False)
    x, w, b = tensor([8, 64]), tensor([32, 64]), tensor([32])
    with main.pyprof_module("Net.fc", "Linear"):
        with main.pyprof_op("aten::addmm", seq=3, args={"self": b, "mat1": x, "mat2": w},
                            stack="train.py:12"):
            main.launch(GEMM)
    with main.pyprof_op("aten::copy_"):
        main.memcpy(4096, "HtoD")
    with main.pyprof_op("aten::zero_"):
        main.memset(1024, 0)
    with main.range("cuda graph replay"):
        main.graph_launch([ELEMENTWISE])
    with main.pyprof_op("aten::relu"):
        main.launch(ELEMENTWISE, duration=-100)  # a row whose end precedes its start
    for graph, rows in (("0/0", 8), ("0/1", 4)):
        node = {"op": "aten::exp", "args": {"self": tensor([rows, 8])}}
        main.mark(json.dumps({"v": 1, "compiled_kernel": "triton_poi_fused_exp_0",
                              "graph": graph, "kernel": {"nodes": [node], "missing": 0,
                                                         "reads": [], "writes": []}}),
                  domain="pyprof")
        with main.pyprof_op(f"Torch-Compiled Region: {graph}"):
            with main.pyprof_op("CompiledFunction"):
                main.launch("triton_poi_fused_exp_0")
    # A graph compiled with symbolic sizes: its kernel's records carry their call's sizes.
    x_sym = {"shape": ["s0", 8], "dtype": "float32", "stride": [8, 1], "device": "cuda:0",
             "symbolic": True}
    main.mark(json.dumps({"v": 1, "compiled_kernel": "triton_poi_fused_sin_0", "graph": "1/0",
                          "kernel": {"nodes": [{"op": "aten::sin", "args": {"self": x_sym}}],
                                     "missing": 0, "reads": [x_sym], "writes": [x_sym]}}),
              domain="pyprof")
    with main.pyprof_op("Torch-Compiled Region: 1/0"):
        main.mark(json.dumps({"v": 1, "compiled_call": "1/0", "symbols": {"s0": 4}}),
                  domain="pyprof")
        with main.pyprof_op("CompiledFunction"):
            main.launch("triton_poi_fused_sin_0")
    engine = db.thread(pid=100, tid=101)
    engine.wait_until(main.now)
    with engine.pyprof_op("AddmmBackward0", scope="backward", seq=3, fwd_tid=main.rf_tid):
        with engine.pyprof_op("aten::mm", args={"self": tensor([8, 32]), "mat2": w}):
            engine.launch(GEMM.replace("_tn_", "_nn_"))
    return db


def cpu_synth_db():
    """A CPU-only profile: op records (ids, parents, self time) instead of GPU activities."""
    db = SynthDb()
    t = db.thread(pid=100)
    with t.pyprof_op("aten::linear", seq=1):
        t.advance(100)
        with t.pyprof_op("aten::addmm", seq=1):
            t.advance(300)
    return db


def test_formats_md_record_keys_are_the_keys_parse_writes(tmp_path):
    traces = sorted(os.path.join(testlib.DATA, name) for name in os.listdir(testlib.DATA)
                    if name.endswith((".sqlite", ".sql", ".json.gz")))
    assert traces, "no traces in tests/data"
    for name, db in (("synthetic_gpu.sqlite", gpu_synth_db()),
                     ("synthetic_cpu_only.sqlite", cpu_synth_db())):
        db.save(tmp_path / name)
        traces.append(str(tmp_path / name))
    written = collections.defaultdict(set)  # key -> the record kinds it was written on
    # Both forms: the compact one's `args` lines and references, the full one's `bwd_args`.
    for trace, form in itertools.product(traces, ([], ["--full-records"])):
        res = testlib.run_tool(testlib.PARSE, trace, "-q", *form)
        assert res.returncode == 0, f"{trace}: {res.stderr}"
        for line in res.stdout.splitlines()[1:]:
            record = json.loads(line)
            if record["kind"] == "compiled_kernel":  # no record: its keys are in §3's prose
                continue
            for key in record:
                written[key].add(record["kind"])
    documented = formats_md_record_keys()
    undocumented = {k: sorted(kinds) for k, kinds in written.items() if k not in documented}
    unwritten = sorted(documented - set(written))
    assert not undocumented and not unwritten, (
        "docs/formats.md §3 \"Record keys\" and pyprof-parse's output disagree:\n"
        f"  written by parse (on these kinds of record) but not documented: {undocumented}\n"
        f"  documented but written on no record of {len(traces)} traces "
        f"(tests/data and two synthetic ones): {unwritten}")


# ---- 3. docs/prof.md §3 describes every report and table id -------------------------------

def test_prof_md_lists_every_report_and_its_table_ids():
    """The report registry (`pyprof-prof --list-reports`, hidden) against docs/prof.md §3: each
    report has its row in the reports table, and each id of a report with several tables is
    named in "JSON describes itself"."""
    res = testlib.run_tool(testlib.PROF, "--list-reports")
    assert res.returncode == 0, res.stderr
    reports = [json.loads(line) for line in res.stdout.splitlines()]
    with open(os.path.join(DOCS, "prof.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## 3. Reports", 1)[1].split("\n## 4.", 1)[0]
    rows = set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE))
    assert [r["report"] for r in reports if r["report"] not in rows] == []
    json_part = section.split("**JSON describes itself.**", 1)[1]
    for r in reports:
        if len(r["tables"]) > 1:
            for table in r["tables"]:
                assert f"`{table}`" in json_part, (r["report"], table)
