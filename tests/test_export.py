"""pyprof export: a net.dict as a Chrome / Perfetto trace (docs/export.md).

The round trip is the oracle: a real profile is parsed with --ranges, exported, and the export
parsed again by pyprof's Kineto reader; the records must come back the same, key by key, with
instance numbers equal up to renumbering. The trace itself is checked as a Chrome trace with
Python's json module: events well formed, every X event with a non-negative duration, every
flow start with its finish, named processes and threads, and the op ranges' FLOPs against
`pyprof prof --json` on the same dict.
"""

import collections
import gzip
import json
import os
import subprocess

import pytest

from testlib import BIN, DATA, PARSE, PY, ROOT, pyprof_env, read_records, run_tool

pytestmark = pytest.mark.needs_build

EXPORT = os.path.join(BIN, "pyprof-export")

INPUTS = {
    "synthetic_mlp": "synthetic_mlp.nsys.sqlite",
    "emit_nvtx_lenet": "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite",
    "kineto_alexnet": "kineto_hta-alexnet-a100.json.gz",
}

# Keys whose values are numbers the reader assigns afresh: compared up to renumbering.
RENUMBERED = {"instance", "fwd_instance", "range"}


def read_lines(path):
    """A net.dict with range lines: (header, records, ranges)."""
    with open(path) as f:
        header, rest = read_records(f.read())
    records = [r for r in rest if r.get("kind") != "range"]
    ranges = [r for r in rest if r.get("kind") == "range"]
    return header, records, ranges


def parse_ranges(source, out):
    res = run_tool(PARSE, source, "--ranges", "-q", "-o", out, timeout=300)
    assert res.returncode == 0, res.stderr
    return read_lines(out)


def export(dict_path, out, *extra):
    res = run_tool(EXPORT, dict_path, "-o", out, *extra, timeout=300)
    assert res.returncode == 0, res.stderr
    return res


def load_trace(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def check_renumbering(original, again, key):
    """`key` values correspond one to one between the two record lists."""
    forward, backward = {}, {}
    for a, b in zip(original, again):
        x, y = a.get(key), b.get(key)
        assert (x is None) == (y is None), (key, a, b)
        if x is None:
            continue
        assert forward.setdefault(x, y) == y, f"{key} {x} split: {a['name']}"
        assert backward.setdefault(y, x) == x, f"{key} {y} merges two: {b['name']}"


def compare_records(original, again):
    assert len(original) == len(again)
    for i, (a, b) in enumerate(zip(original, again)):
        a_same = {k: v for k, v in a.items() if k not in RENUMBERED}
        b_same = {k: v for k, v in b.items() if k not in RENUMBERED}
        assert a_same == b_same, f"record {i}: " + ", ".join(
            f"{k}: {str(a_same.get(k))[:300]!r} != {str(b_same.get(k))[:300]!r}"
            for k in sorted(set(a_same) | set(b_same)) if a_same.get(k) != b_same.get(k))
    for key in RENUMBERED:
        check_renumbering(original, again, key)


def check_trace(trace, fmt="chrome"):
    """Well-formed Chrome trace: what Perfetto and chrome://tracing need to draw it."""
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    names = {(e["pid"], e.get("tid")) for e in events if e["ph"] == "M" and
             e["name"] in ("process_name", "thread_name")}
    starts, finishes = collections.Counter(), collections.Counter()
    binds = collections.defaultdict(lambda: [0, 0])
    for e in events:
        assert e["ph"] in ("X", "M", "s", "f", "C"), e
        if e["ph"] == "C":  # memory counters (a capture with memory lines)
            assert e["cat"] == "pyprof_memory" and (e["pid"], None) in names, e
            assert isinstance(e["ts"], (int, float)) and isinstance(e["args"]["bytes"], int), e
        elif e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0, e
            assert (e["pid"], None) in names and (e["pid"], e["tid"]) in names, e
            if "bind_id" in e:
                binds[(e["bind_id"])][0 if e.get("flow_out") else 1] += 1
        elif e["ph"] == "s":
            starts[(e["cat"], e["id"])] += 1
        elif e["ph"] == "f":
            assert e["bp"] == "e"
            finishes[(e["cat"], e["id"])] += 1
    assert starts == finishes
    assert all(c == 1 for c in starts.values())
    if fmt == "perfetto":
        assert not starts and binds
        assert all(out == 1 and inn == 1 for out, inn in binds.values()), binds
    return events


@pytest.fixture(scope="module")
def lenet_sqlite(tmp_path_factory):
    """A CPU capture of a real model (LeNet, 2 steps, with call sites)."""
    out = tmp_path_factory.mktemp("lenet") / "lenet"
    res = subprocess.run([PY, "-m", "pyprof", "profile", "-o", str(out), "--force", "--", PY,
                          os.path.join(ROOT, "examples", "train.py"), "--model", "lenet",
                          "--steps", "2", "--with-stack"],
                         capture_output=True, text=True, env=pyprof_env(), timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return str(out) + ".sqlite"


def inputs():
    return [pytest.param(os.path.join(DATA, f), id=k) for k, f in INPUTS.items()]


@pytest.mark.parametrize("source", inputs())
@pytest.mark.parametrize("fmt", ["chrome", "perfetto"])
def test_round_trip(source, fmt, tmp_path):
    header, records, ranges = parse_ranges(source, tmp_path / "net.dict")
    assert ranges, "parse --ranges wrote no range lines"
    out = tmp_path / "trace.json"
    export(tmp_path / "net.dict", out, "--format", fmt)
    check_trace(load_trace(out), fmt)
    header2, records2, ranges2 = parse_ranges(out, tmp_path / "again.dict")
    compare_records(records, records2)
    # Ranges too: the same spans in the same order (ids are ranks and come out the same).
    assert [(r["range"], r["name"], r["start"], r["duration"]) for r in ranges] == \
        [(r["range"], r["name"], r["start"], r["duration"]) for r in ranges2]
    for key in ("devices", "rank", "world_size", "backend", "base_time_ns"):
        assert header.get(key) == header2.get(key), key


def test_round_trip_cpu_lenet(lenet_sqlite, tmp_path):
    header, records, ranges = parse_ranges(lenet_sqlite, tmp_path / "net.dict")
    assert header["records"] == "op" and records
    assert {r["range"] for r in ranges} >= {"op", "node", "module"}
    out = tmp_path / "trace.json.gz"
    export(tmp_path / "net.dict", out)
    with open(out, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    events = check_trace(load_trace(out))
    # Module ranges are on the CPU track with their exact path.
    modules = {e["args"]["pyprof"]["name"] for e in events
               if e["ph"] == "X" and e["cat"] == "python_function"}
    assert "LeNet.conv1" in modules
    # Its allocations and frees as counter tracks (docs/export.md), one point per event.
    memory = sum(1 for _ in open(tmp_path / "net.dict") if '"kind":"memory"' in _)
    allocated = [e for e in events if e["ph"] == "C" and e["name"] == "memory allocated (cpu)"]
    assert memory > 100 and len(allocated) == memory
    header2, records2, _ = parse_ranges(out, tmp_path / "again.dict")
    compare_records(records, records2)


def test_op_range_costs_match_prof(tmp_path):
    """The FLOPs on the op ranges are prof's for the same op instance."""
    source = os.path.join(DATA, INPUTS["synthetic_mlp"])
    parse_ranges(source, tmp_path / "net.dict")
    export(tmp_path / "net.dict", tmp_path / "t.json")
    events = load_trace(tmp_path / "t.json")["traceEvents"]
    res = run_tool(os.path.join(BIN, "pyprof-prof"), "--json", "-c", "idx,flops,bytes",
                   tmp_path / "net.dict")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    assert len(kernels) == len(rows)
    kernels.sort(key=lambda e: (e["ts"], e["args"]["correlation"]))
    for row, e in zip(rows, kernels):  # prof's rows are in record (GPU start) order
        assert e["args"].get("FLOPs", 0) == pytest.approx(row["flops"] or 0, abs=0.5)  # prof prints integers
        assert e["args"].get("model bytes", 0) == pytest.approx(row["bytes"] or 0, abs=0.5)
    assert sum(row["flops"] or 0 for row in rows) > 0
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "cpu_op" and "FLOPs" in e["args"]]
    assert ops and all("shapes" in e["args"] for e in ops)


def test_dict_without_ranges_notes_what_is_missing(tmp_path):
    source = os.path.join(DATA, INPUTS["synthetic_mlp"])
    res = run_tool(PARSE, source, "-q", "-o", tmp_path / "plain.dict")
    assert res.returncode == 0
    res = export(tmp_path / "plain.dict", tmp_path / "t.json")
    assert "--ranges" in res.stderr
    events = check_trace(load_trace(tmp_path / "t.json"))
    assert {e["cat"] for e in events if e["ph"] == "X"} >= {"kernel", "cuda_runtime"}


def test_prof_skips_range_lines(tmp_path):
    source = os.path.join(DATA, INPUTS["synthetic_mlp"])
    parse_ranges(source, tmp_path / "ranges.dict")
    run_tool(PARSE, source, "-q", "-o", tmp_path / "plain.dict")
    prof = os.path.join(BIN, "pyprof-prof")
    with_ranges = run_tool(prof, "--csv", tmp_path / "ranges.dict")
    plain = run_tool(prof, "--csv", tmp_path / "plain.dict")
    assert with_ranges.returncode == plain.returncode == 0
    assert with_ranges.stdout == plain.stdout
    assert "not a JSON object" not in with_ranges.stderr


def test_cli_exports_a_database_directly(tmp_path):
    source = os.path.join(DATA, INPUTS["synthetic_mlp"])
    out = tmp_path / "t.json"
    res = subprocess.run([PY, "-m", "pyprof", "export", source, "-o", str(out), "--format",
                          "perfetto"], capture_output=True, text=True, env=pyprof_env(),
                         timeout=300)
    assert res.returncode == 0, res.stderr
    events = check_trace(load_trace(out), "perfetto")
    assert any(e["ph"] == "X" and e["cat"] == "cpu_op" for e in events)


@pytest.mark.parametrize("case", ["missing", "not_a_dict", "truncated", "empty"])
def test_bad_input(case, tmp_path):
    bad = tmp_path / "bad.dict"
    if case == "not_a_dict":
        bad.write_text('{"traceEvents": []}\n')
    elif case == "truncated":
        parse_ranges(os.path.join(DATA, INPUTS["synthetic_mlp"]), tmp_path / "net.dict")
        text = (tmp_path / "net.dict").read_text()
        bad.write_text(text[: len(text) // 2])
    elif case == "empty":
        bad.write_text("")
    out = tmp_path / "t.json"
    res = run_tool(EXPORT, bad, "-o", out)
    assert res.returncode == 1, res.stderr
    assert res.stderr.startswith("pyprof export: error:"), res.stderr
    assert not out.exists()
    assert os.listdir(tmp_path) == [p for p in os.listdir(tmp_path) if not p.startswith(".")]


def strict_json(text: str):
    """json.loads without Python's extensions (NaN, Infinity): what any JSON parser accepts."""
    def refuse(token):
        raise ValueError(f"{token} is not JSON")
    return json.loads(text, parse_constant=refuse)


def first_line(lines, kind, key="kind"):
    return next(i for i, line in enumerate(lines) if f'"{key}":"{kind}"' in line)


# One flipped bit or hand edit of a real dict each (issue 31): a missing name, a range without
# its kind, tokens prof's reader lets pass unread (a leading zero, nan, hex) in the header, which
# the trace copies, and in a record's field prof never reads. (line, text, replacement)
MUTATIONS = {
    "kernel without name": ("kernel", '"name"', '"naee"'),
    "range without name": ("range", '"name"', '"naee"'),
    "range without kind": ("range", '"range":"', '"rangx":"'),
    "header rank 00012": ("header", "}", ',"rank":00012}'),
    "header nan": ("header", "}", ',"base_time_ns":nan}'),
    "header hex": ("header", "}", ',"world_size":0x10}'),
    "record field nan": ("kernel", "}", ',"unread":nan}'),
}


def mutate(lines: list[str], mutation: str) -> int:
    """Applies one of MUTATIONS to the dict's lines; returns the line's number (from 1)."""
    where, text, replacement = MUTATIONS[mutation]
    i = 0 if where == "header" else first_line(lines, where)
    if text == "}":
        lines[i] = lines[i][:-1] + replacement
    else:
        lines[i] = lines[i].replace(text, replacement, 1)
    return i + 1


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_every_export_is_strict_json_or_a_clear_error(mutation, tmp_path):
    """The trace is either valid JSON for any parser, what was left out said, or no trace and
    an error naming the line."""
    parse_ranges(os.path.join(DATA, INPUTS["synthetic_mlp"]), tmp_path / "net.dict")
    lines = (tmp_path / "net.dict").read_text().splitlines()
    line = mutate(lines, mutation)
    bad = tmp_path / "bad.dict"
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "t.json"
    res = run_tool(EXPORT, bad, "-o", out)
    if "without" in mutation:
        assert res.returncode == 0, res.stderr
        assert "1 lines left out: a record or range line without its name" in res.stderr
        events = strict_json(out.read_text())["traceEvents"]
        assert all(isinstance(e.get("name"), str) for e in events)
    else:
        assert res.returncode == 1, res.stderr
        assert res.stderr.startswith(f"pyprof export: error: {bad}: line {line}: not valid JSON"), \
            res.stderr
        assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == sorted(["net.dict", "bad.dict"] +
                                                  (["t.json"] if out.exists() else []))


def test_microsecond_text_is_exact(tmp_path):
    """Times survive to the nanosecond: ts/dur written with three decimals."""
    source = os.path.join(DATA, INPUTS["synthetic_mlp"])
    _, records, _ = parse_ranges(source, tmp_path / "net.dict")
    export(tmp_path / "net.dict", tmp_path / "t.json")
    text = (tmp_path / "t.json").read_text()
    r = records[0]
    assert f'"ts":{r["start"] // 1000}.{r["start"] % 1000:03d}' in text


def test_help():
    res = run_tool(EXPORT, "--help")
    assert res.returncode == 0 and "--format" in res.stdout
