"""The compact net.dict (docs/formats.md §3, version 2: each distinct `args` value once, on an
`"kind":"args"` line, records referring to it) against the full one (`pyprof parse
--full-records`, version 1), on real traces and a real model's capture:

- expanding the compact dict's references gives the full dict byte for byte (header version
  aside);
- prof (default table, every column as CSV and JSON, the reports as JSON), diff and export give
  identical outputs on either;
- the compact dict is never larger, and on a training loop strictly smaller;
- a reference to an undefined id, an id defined twice, or a malformed reference is an error
  naming the line.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import testlib
from testlib import DATA, PARSE, PROF, ROOT, SHARED_TRACES, pyprof_env, run_tool

pytestmark = pytest.mark.needs_build

DIFF = os.path.join(testlib.BIN, "pyprof-diff")
EXPORT = os.path.join(testlib.BIN, "pyprof-export")

# Real traces of every reader: nsys (emit_nvtx, legacy PyProf, nvFuser ranges), nvprof, Kineto
# (with and without record_shapes, CPU-only), and a pyprof capture of a training loop on an H100.
TRACES = {
    "nsys_emit_nvtx_lenet": "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite",
    "nsys_nvfuser": "nsys-2024.6.2_nvfuser-nvtx_report1.sqlite",
    "nvprof_apex_pyprof": "nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql",
    "synthetic_mlp_nvprof": "synthetic_mlp.nvprof.sql",
    "kineto_cpu_only": "kineto_hta-cpu-only-gloo-rank34.json.gz",
    "kineto_mi250": "kineto_hta-mi250-rocm6.2-minitoy.json.gz",
    "kineto_h100_lstm": "h100/kineto-torch2.11-h100-lstm.json.gz",
    "pyprof_h100_resnet_block": "h100/pyprof-torch2.11-h100-resnet_block.sqlite.gz",
}
# Training loops: every step calls the same ops on the same arguments.
TRAINING_LOOPS = {"pyprof_h100_resnet_block", "kineto_h100_lstm", "nsys_emit_nvtx_lenet"}
RECORD_SHAPES = os.path.join(SHARED_TRACES, "real", "kineto_hta-a100-record-shapes-test.json.gz")


def trace_path(name: str, tmp_path) -> str:
    path = os.path.join(DATA, name)
    if not name.endswith(".sqlite.gz"):
        return path
    plain = tmp_path / os.path.basename(name)[:-len(".gz")]
    with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return str(plain)


def parse_both(trace: str, folder) -> tuple[str, str]:
    """The compact and the full dict of `trace` (with range lines, which carry args too), as
    folder/compact/net.dict and folder/full/net.dict: the same file name, so that outputs that
    quote it agree."""
    paths = []
    for form, extra in (("compact", []), ("full", ["--full-records"])):
        (folder / form).mkdir(parents=True)
        out = folder / form / "net.dict"
        testlib.parse_to(trace, out, "--ranges", *extra)
        paths.append(str(out))
    return paths[0], paths[1]


def expand_text(compact_text: str) -> str:
    """The compact dict's text with each `args_ref` / `bwd_args_ref` replaced by the text of the
    value its args line defines, those lines dropped, and the header's version set to 1."""
    defined: dict[int, str] = {}
    out = []
    for i, line in enumerate(compact_text.splitlines(keepends=True)):
        if i == 0:
            assert line.startswith('{"pyprof_dict":2,'), line[:80]
            out.append('{"pyprof_dict":1,' + line[len('{"pyprof_dict":2,'):])
            continue
        value = json.loads(line)
        if value.get("kind") == "args":
            prefix = '{"kind":"args","id":%d,"args":' % value["id"]
            assert line.startswith(prefix) and line.endswith("}\n"), line[:80]
            defined[value["id"]] = line[len(prefix):-2]
            continue
        for key in ("args", "bwd_args"):
            if f"{key}_ref" in value:
                assert key not in value, line[:200]
                ref = f',"{key}_ref":{value[key + "_ref"]}'
                assert line.count(ref) == 1, line[:200]
                line = line.replace(ref, f',"{key}":{defined[value[key + "_ref"]]}')
        out.append(line)
    return "".join(out)


def tool_outputs(folder: str) -> dict[str, str]:
    """What prof, diff and export write for folder/net.dict, run in `folder`."""
    outputs = {}
    prof_modes = {
        "table": [],
        "csv all": ["--csv", "-c", "all"],
        "json all": ["--json", "-c", "all"],
        "reports": ["--report", "summary,op,module,tc,kernel,instance,family,phase,iteration,"
                    "advice,roofline", "--formats", "json"],
    }
    for mode, args in prof_modes.items():
        res = run_tool(PROF, *args, "net.dict", cwd=folder)
        outputs["prof " + mode] = f"{res.returncode}\n{res.stdout}\n{res.stderr}"
    res = run_tool(DIFF, "net.dict", "net.dict", "--formats", "json", cwd=folder)
    outputs["diff"] = f"{res.returncode}\n{res.stdout}\n{res.stderr}"
    res = run_tool(EXPORT, "net.dict", "-o", "trace.json", cwd=folder)
    trace = ""
    if res.returncode == 0:
        with open(os.path.join(folder, "trace.json"), encoding="utf-8") as f:
            # The export keeps its dict's header verbatim (docs/export.md): only the version
            # differs.
            trace = re.sub(r'"dict_header":\{"pyprof_dict":[12],', '"dict_header":{"pyprof_dict":1,',
                           f.read())
    outputs["export"] = f"{res.returncode}\n{res.stdout}\n{res.stderr}\n{trace}"
    return outputs


def check_forms(trace: str, tmp_path, strictly_smaller: bool) -> None:
    compact, full = parse_both(trace, tmp_path)
    with open(compact, encoding="utf-8") as f:
        compact_text = f.read()
    with open(full, encoding="utf-8") as f:
        full_text = f.read()
    assert expand_text(compact_text) == full_text
    assert testlib.expand_args([json.loads(l) for l in compact_text.splitlines()])[1:] == \
        [json.loads(l) for l in full_text.splitlines()][1:]
    if strictly_smaller:
        assert len(compact_text) < len(full_text)
        assert '"kind":"args"' in compact_text
    else:
        assert len(compact_text) <= len(full_text)
    compact_out = tool_outputs(os.path.dirname(compact))
    full_out = tool_outputs(os.path.dirname(full))
    for name in compact_out:
        assert compact_out[name] == full_out[name], f"{name} differs between the two forms"


@pytest.mark.parametrize("name", TRACES)
def test_compact_and_full_dicts_agree(name, tmp_path):
    check_forms(trace_path(TRACES[name], tmp_path), tmp_path, name in TRAINING_LOOPS)


def test_compact_dict_of_record_shapes_trace(tmp_path):
    """A Kineto trace recorded with record_shapes (many distinct arguments, each repeated):
    the compact dict is a fraction of the full one."""
    if not os.path.exists(RECORD_SHAPES):
        pytest.skip(f"{RECORD_SHAPES} not found (../shared/traces beside the checkout)")
    check_forms(RECORD_SHAPES, tmp_path, strictly_smaller=True)


def test_compact_dict_of_a_real_model(tmp_path):
    """A pyprof CPU capture of examples/train.py (LeNet, 3 steps, with call sites)."""
    out = tmp_path / "lenet"
    res = subprocess.run([sys.executable, "-m", "pyprof", "profile", "-o", str(out), "--force",
                          "--", sys.executable, os.path.join(ROOT, "examples", "train.py"),
                          "--model", "lenet", "--steps", "3", "--with-stack"],
                         capture_output=True, text=True, env=pyprof_env(), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    check_forms(str(out) + ".sqlite", tmp_path, strictly_smaller=True)


HEADER = '{"pyprof_dict":2,"source":"x.sqlite","format":"pyprof","records":"op"}\n'
OP = '{"kind":"op","name":"aten::mm","start":0,"duration":10,"pid":1,"tid":1,"op":"aten::mm",' \
     '"dir":"fprop"'


@pytest.mark.parametrize("body, message", [
    (OP + ',"args_ref":3}\n', 'line 2: "args_ref": 3 names no "args" line before it'),
    (OP + ',"args_ref":0}\n{"kind":"args","id":0,"args":{}}\n',
     'line 2: "args_ref": 0 names no "args" line before it'),
    ('{"kind":"args","id":0,"args":{}}\n{"kind":"args","id":0,"args":{}}\n',
     "line 3: args id 0 is defined twice"),
    (OP + ',"args_ref":"0"}\n', 'line 2: "args_ref" is not a non-negative integer'),
    (OP + ',"bwd_args_ref":-1}\n', 'line 2: "bwd_args_ref" is not a non-negative integer'),
    ('{"kind":"args","id":0}\n', 'line 2: an "args" line needs an "id"'),
])
def test_bad_references_are_errors_naming_the_line(body, message, tmp_path):
    path = tmp_path / "bad.dict"
    path.write_text(HEADER + body)
    for tool, args in ((PROF, [path]), (DIFF, [path, path]), (EXPORT, [path, "-o", tmp_path / "t.json"])):
        res = run_tool(tool, *args)
        assert res.returncode == 1, (tool, res.stdout, res.stderr)
        assert message in res.stderr, (tool, res.stderr)
        assert "Traceback" not in res.stderr and "terminate" not in res.stderr


def test_compact_references_resolve_in_prof(tmp_path):
    """A hand-written compact dict costs its op as the full form does."""
    mm = ('{"self":{"shape":[8,16],"dtype":"float32","stride":[16,1]},'
          '"mat2":{"shape":[16,4],"dtype":"float32","stride":[4,1]}}')
    compact = tmp_path / "compact.dict"
    compact.write_text(HEADER + '{"kind":"args","id":7,"args":%s}\n' % mm
                       + OP + ',"args_ref":7}\n' + OP.replace('"start":0', '"start":20')
                       + ',"args_ref":7}\n')
    full = tmp_path / "full.dict"
    full.write_text(HEADER.replace(":2,", ":1,") + OP + ',"args":%s}\n' % mm
                    + OP.replace('"start":0', '"start":20') + ',"args":%s}\n' % mm)
    rows = [json.loads(l) for l in testlib.prof("--json", "-c", "all", compact).stdout.splitlines()]
    assert [r["flops"] for r in rows] == [2 * 8 * 16 * 4] * 2
    assert testlib.prof("--json", "-c", "all", full).stdout == \
        testlib.prof("--json", "-c", "all", compact).stdout


@pytest.mark.parametrize("name", ["generated", "lenet_cpu", "pyprof_h100_resnet_block"])
def test_records_written_in_chunks_by_several_threads_are_the_same(name, tmp_path):
    """parse formats its records in chunks on several threads; the args of each chunk are
    resolved (and new `"kind":"args"` lines numbered) in order beforehand
    (parse/record_writer.cpp). PYPROF_PARSE_WRITE_CHUNK_RECORDS forces small chunks and two
    threads or more on small files: GPU kernels (a generated profile and a real capture, with
    bprop records carrying `bwd_args`) and the op records of a CPU-only capture of LeNet's
    training must come out byte for byte as from one chunk, in both forms."""
    if name == "generated":
        sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
        import make_parse_db
        trace = str(tmp_path / "generated.sqlite")
        make_parse_db.generate(trace, 3000, processes=2, interned=True)
    elif name == "lenet_cpu":
        out = tmp_path / "lenet"
        res = subprocess.run([sys.executable, "-m", "pyprof", "profile", "-o", str(out), "--",
                              sys.executable, os.path.join(ROOT, "examples", "train.py"),
                              "--model", "lenet", "--steps", "2"],
                             capture_output=True, text=True, env=pyprof_env(), timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        trace = str(out) + ".sqlite"
    else:
        trace = trace_path(TRACES[name], tmp_path)

    def run(form_args, chunk):
        env = dict(os.environ)
        env.pop("PYPROF_PARSE_WRITE_CHUNK_RECORDS", None)
        if chunk:
            env["PYPROF_PARSE_WRITE_CHUNK_RECORDS"] = str(chunk)
        res = subprocess.run([PARSE, trace, "--ranges", *form_args], capture_output=True,
                             text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr
        return res.stdout, res.stderr

    for form_args in ([], ["--full-records"]):
        one_out, one_err = run(form_args, 1 << 30)
        default_out, default_err = run(form_args, None)
        assert (default_out, default_err) == (one_out, one_err)
        lines = one_out.splitlines()
        records = [i for i, line in enumerate(lines)
                   if re.match(r'\{"kind":"(kernel|memcpy|memset|op)"', line)]
        assert len(records) >= 100, len(records)
        if not form_args:
            # Args first defined in later chunks, not only in the first.
            definitions = [i for i, line in enumerate(lines) if line.startswith('{"kind":"args"')]
            assert any(i > records[len(records) // 3] for i in definitions), name
        for chunk in (1, 7, 333):
            assert run(form_args, chunk) == (one_out, one_err), (form_args, chunk)
