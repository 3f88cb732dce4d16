"""FLOP formulas registered with PyTorch (docs/ops.md "Formulas registered with PyTorch"):
`pyprof prof --flop-registry MODULE`, `pyprof flop-table`, `pyprof-prof --unmodelled-calls` and
`--flop-table`, end to end on a tiny model on the CPU.

tests/flop_registry_ops.py registers custom ops with torch.library and, for two of them, FLOP
formulas with torch.utils.flop_counter.register_flop_formula; tests/scripts/flop_registry_model.py
calls them. The model is profiled with `pyprof profile` and with torch.profiler (record_shapes,
export_chrome_trace); prof's FLOPs for each op must equal FlopCounterMode's for the same calls
(the oracle, run here on the same model); the op without a formula stays na and in the
unmodelled report; a formula that raises is said and left na; a module that cannot be imported
is an error; pyprof's own models win over torch's entries for the same ops.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

TESTS = os.path.dirname(os.path.abspath(__file__))
SCRIPT = testlib.script("flop_registry_model.py")
MODULE = "flop_registry_ops"  # tests/flop_registry_ops.py, importable with tests/ on the path
GATED, NO_META, PLAIN, BROKEN = ("flopreg::gated_mm", "flopreg::no_meta", "flopreg::plain",
                                 "flopreg::broken")
PARAMS = "registry=torch.utils.flop_counter"


def pyprof(*args, cwd: str | None = None) -> subprocess.CompletedProcess:
    """`python -m pyprof ARGS` with tests/ on the path (so MODULE imports), text output."""
    env = testlib.pyprof_env()
    env["PYTHONPATH"] = os.pathsep.join([TESTS, env["PYTHONPATH"]])
    return subprocess.run([testlib.PY, "-m", "pyprof", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=env, cwd=cwd or testlib.ROOT)


@pytest.fixture(scope="module")
def oracle():
    """FlopCounterMode's count per op over the model's calls (without flopreg::broken, whose
    formula raises, which stops FlopCounterMode)."""
    import importlib

    from torch.utils.flop_counter import FlopCounterMode

    sys.path[:0] = [TESTS, os.path.dirname(SCRIPT)]
    try:
        model = importlib.import_module("flop_registry_model")
    finally:
        del sys.path[:2]
    with FlopCounterMode(display=False) as counter:
        model.run(2, broken=False)
    return {str(op).replace(".", "::"): n for op, n in counter.get_flop_counts()["Global"].items()}


@pytest.fixture(scope="module")
def pyprof_dict(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flop_registry")
    res = pyprof_db.profile(tmp, SCRIPT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    return tmp / "net.dict"


@pytest.fixture(scope="module")
def kineto_trace(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flop_registry_kineto")
    trace = tmp / "trace.json"
    res = testlib.run_tool(testlib.PY, SCRIPT, "--torch-profiler", trace, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return trace


def records_of(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def by_op(records: list[dict], op: str) -> list[dict]:
    return [r for r in records if r.get("op") == op]


@pytest.mark.parametrize("capture", ["pyprof_dict", "kineto_trace"])
def test_prof_flops_equal_flop_counter_modes(capture, oracle, request):
    # torch.profiler's trace goes in as it is: the front parses it first, then the pass.
    source = request.getfixturevalue(capture)
    assert oracle[GATED] == 2 * 4 * 32 * 16 + 4 * 4 * 16 + 2 * 8 * 32 * 16 + 4 * 8 * 16  # 13056
    assert oracle[NO_META] == 3 * 4 * 16 + 3 * 8 * 16  # 576
    res = pyprof("prof", "--flop-registry", MODULE, "--json", "-c", "all", "--iterations", "all",
                 source)
    assert res.returncode == 0, res.stderr
    records = records_of(res.stdout)
    for op in (GATED, NO_META):
        calls = by_op(records, op)
        assert len(calls) == 2, calls  # one call per step
        assert sum(r["op_flops"] for r in calls) == oracle[op], calls
        assert {r["params"] for r in calls} == {PARAMS}, calls
        assert all(r["flops"] == r["op_flops"] for r in calls), calls  # counted, outermost
    # Bytes: the tensors the record lists, plus the output the op's fake implementation gave
    # (gated_mm); no_meta has none, so its input alone.
    gated = sorted(by_op(records, GATED), key=lambda r: r["op_bytes"])
    assert [r["op_bytes"] for r in gated] == [4 * (4 * 32 + 32 * 16 + 4 * 16),
                                              4 * (8 * 32 + 32 * 16 + 8 * 16)]
    assert sorted(r["op_bytes"] for r in by_op(records, NO_META)) == [4 * 4 * 16, 4 * 8 * 16]
    for op in (PLAIN, BROKEN):
        assert [r["op_flops"] for r in by_op(records, op)] == [None, None], op
    assert (f"pyprof prof: warning: --flop-registry: {BROKEN}: 2 distinct calls (2 records) not "
            "costed: its formula raised ValueError: broken on purpose; left na") in res.stderr
    assert (f"pyprof prof: note: --flop-registry: 4 distinct calls costed by the formulas "
            f"registered with PyTorch ({GATED}, {NO_META})") in res.stderr


def test_without_the_option_the_ops_are_na(pyprof_dict):
    res = pyprof("prof", "--json", "-c", "all", "--iterations", "all", pyprof_dict)
    assert res.returncode == 0, res.stderr
    records = records_of(res.stdout)
    for op in (GATED, NO_META):
        assert [r["op_flops"] for r in by_op(records, op)] == [None, None]


def unmodelled_ops(*args) -> list[str]:
    res = pyprof("prof", *args, "--report", "unmodelled", "--formats", "json")
    assert res.returncode == 0, res.stderr
    _, rows = testlib.report_json(res.stdout)
    return sorted(r["Op"] for r in rows if r.get("table") == "unmodelled")


def test_parquet_gets_the_table(kineto_trace, tmp_path):
    # `pyprof prof --parquet` runs pyprof-prof itself: the table reaches it.
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "net.parquet"
    res = pyprof("prof", "--flop-registry", MODULE, "--parquet", "-o", out, kineto_trace)
    assert res.returncode == 0, res.stderr
    frame = pd.read_parquet(out)
    gated = frame[frame["op"] == GATED]
    assert sorted(gated["op_flops"]) == [4352, 8704]
    assert set(gated["params"]) == {PARAMS}


def test_the_op_without_a_formula_stays_in_the_unmodelled_report(pyprof_dict):
    assert {GATED, NO_META, PLAIN, BROKEN} <= set(unmodelled_ops(pyprof_dict))
    after = unmodelled_ops("--flop-registry", MODULE, pyprof_dict)
    assert PLAIN in after and BROKEN in after
    assert GATED not in after and NO_META not in after


def test_the_page_uses_the_registry(pyprof_dict, tmp_path):
    pytest.importorskip("plotly")
    out = tmp_path / "net.html"
    res = pyprof("report", "--flop-registry", MODULE, pyprof_dict, "-o", out)
    assert res.returncode == 0, res.stderr
    embedded = re.search(r'<script type="application/json" id="pyprof-data">(.*?)</script>',
                         out.read_text(), re.S).group(1)
    data = json.loads(embedded.replace("<\\/", "</"))
    unmodelled = {row[1] for row in data["tables"]["unmodelled"]["rows"]}
    assert PLAIN in unmodelled and BROKEN in unmodelled
    assert GATED not in unmodelled and NO_META not in unmodelled
    res = pyprof("report", "--flop-registry", "no_such_flop_module", pyprof_dict, "-o", out)
    assert res.returncode == 2
    assert "pyprof report: error: --flop-registry no_such_flop_module: cannot import it" in \
        res.stderr


def test_a_module_that_cannot_be_imported_is_an_error(pyprof_dict):
    res = pyprof("prof", "--flop-registry", "no_such_flop_module", pyprof_dict)
    assert res.returncode == 2, res
    assert res.stderr.startswith(
        "pyprof prof: error: --flop-registry no_such_flop_module: cannot import it: "
        "ModuleNotFoundError: No module named 'no_such_flop_module'"), res.stderr
    assert res.stdout == ""
    res = pyprof("prof", "--flop-registry", pyprof_dict)
    assert res.returncode == 2 and "--flop-registry" in res.stderr


def test_pyprofs_own_model_wins_over_torchs_entry(pyprof_dict, tmp_path):
    # torch registers a formula for aten::addmm (the Linear); pyprof models it: its records are
    # costed by pyprof's model with or without the option, and a table entry for it is ignored.
    import torch
    from torch.utils.flop_counter import flop_registry

    assert torch.ops.aten.addmm in flop_registry

    def addmm(*args):
        res = pyprof("prof", *args, "--json", "-c", "all", "--iterations", "all", pyprof_dict)
        assert res.returncode == 0, res.stderr
        return [(r["op_flops"], r["params"]) for r in by_op(records_of(res.stdout), "aten::addmm")
                ], res
    before, _ = addmm()
    assert before and all(PARAMS not in p for _, p in before)
    with_registry, _ = addmm("--flop-registry", MODULE)
    assert with_registry == before
    _, records = testlib.read_dict(pyprof_dict)
    args = next(r for r in records if r["name"] == "aten::addmm")["args"]
    table = tmp_path / "addmm.flops"
    table.write_text('{"pyprof_flop_table":1}\n' + json.dumps(
        {"op": "aten::addmm", "args": json.dumps(args, separators=(",", ":")), "flops": 7}) + "\n")
    with_table, res = addmm("--flop-table", table)
    assert with_table == before
    assert ("pyprof prof: note: --flop-table: entries of ops pyprof models ignored (pyprof's "
            "model wins): aten::addmm") in res.stderr


def test_unmodelled_calls_lists_each_distinct_call_as_the_dict_has_it(pyprof_dict):
    res = testlib.prof("--unmodelled-calls", pyprof_dict)
    calls = records_of(res.stdout)
    # The custom ops, and ATen's unmodelled ops around them (aten::resolve_conj); never a
    # modelled one.
    assert {c["op"] for c in calls if c["op"].startswith("flopreg::")} == {
        GATED, NO_META, PLAIN, BROKEN}
    assert "aten::addmm" not in {c["op"] for c in calls}
    _, records = testlib.read_dict(pyprof_dict)
    for op in (GATED, NO_META, PLAIN, BROKEN):
        listed = [c for c in calls if c["op"] == op]
        mine = [r for r in records if r["name"] == op]
        assert len(listed) == 2, listed  # two shapes: a batch of 4, then of 8
        assert sum(c["records"] for c in listed) == len(mine)
        assert sorted(json.loads(c["args"])["x"]["shape"][0] for c in listed) == [4, 8]
        assert {json.dumps(json.loads(c["args"]), sort_keys=True) for c in listed} == {
            json.dumps(r["args"], sort_keys=True) for r in mine}
    # A user model makes its op modelled: no longer listed.
    models = testlib.ROOT + "/tests/data/flopreg_plain.txt"
    res = testlib.prof("--unmodelled-calls", "--op-models", models, pyprof_dict)
    assert PLAIN not in {c["op"] for c in records_of(res.stdout)}


def test_the_table_is_reusable_without_the_modules(pyprof_dict, kineto_trace, tmp_path):
    table = tmp_path / "net.flops"
    res = pyprof("flop-table", "--flop-registry", MODULE, pyprof_dict, "-o", table)
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in table.read_text().splitlines()]
    assert lines[0] == {"pyprof_flop_table": 1}
    assert sorted(e["flops"] for e in lines[1:]) == sorted(
        [2 * 4 * 32 * 16 + 4 * 64, 2 * 8 * 32 * 16 + 4 * 128, 3 * 64, 3 * 128])
    assert {e["source"] for e in lines[1:]} == {"torch.utils.flop_counter"}
    # pyprof-prof alone, no module imported: the same FLOPs as the front's pass.
    direct = testlib.prof("--flop-table", table, "--json", "-c", "all", "--iterations", "all",
                          pyprof_dict)
    front = pyprof("prof", "--flop-registry", MODULE, "--json", "-c", "all", "--iterations",
                   "all", pyprof_dict)
    assert records_of(direct.stdout) == records_of(front.stdout)
    # pyprof export takes it too: the op's events carry the table's FLOPs.
    trace = tmp_path / "trace.json"
    res = testlib.run_tool(os.path.join(testlib.BIN, "pyprof-export"), "--flop-table", table,
                           pyprof_dict, "-o", trace)
    assert res.returncode == 0, res.stderr
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("name") == GATED]
    assert sorted(e["args"]["FLOPs"] for e in events) == [4352, 8704]
    # A table of another capture of the same program matches no call of this one: each call is
    # found by its args text, and torch.profiler's are positional.
    other = tmp_path / "kineto.flops"
    assert pyprof("flop-table", "--flop-registry", MODULE, kineto_trace, "-o", other
                  ).returncode == 0
    res = testlib.prof("--flop-table", other, "--json", "-c", "all", pyprof_dict)
    assert all(r["op_flops"] is None for r in by_op(records_of(res.stdout), GATED))


def test_a_bad_table_is_an_error_naming_its_line(pyprof_dict, tmp_path):
    table = tmp_path / "bad.flops"
    table.write_text('{"pyprof_flop_table":1}\n{"op":"a::b","args":"{}","flops":"many"}\n')
    res = testlib.prof("--flop-table", table, pyprof_dict, check=False)
    assert res.returncode == 2
    assert res.stderr == (f"pyprof prof: error: {table}:2: `flops` is no count (a finite "
                          "number, 0 or more)\n")
    res = testlib.prof("--flop-registry", MODULE, pyprof_dict, check=False)
    assert res.returncode == 2 and "the Python front's" in res.stderr


def test_help_names_the_options():
    res = testlib.prof("--help")
    for option in ("--flop-registry", "--flop-table", "--unmodelled-calls"):
        assert option in res.stdout, option
    res = pyprof("flop-table", "--help")
    assert res.returncode == 0 and "--flop-registry MODULE" in res.stdout
