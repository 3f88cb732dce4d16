"""User op models (docs/ops.md "Adding your own models") end to end.

A custom op registered with torch.library on the CPU (tests/scripts/user_op_models.py:
mylib::fused_gate(Tensor x, Tensor w, int repeats) on x [8, 32] and w [32, 16] float32, repeats
3), profiled with `pyprof profile` and with torch.profiler: pyprof has no model of it (na); with
`pyprof prof --op-models FILE` (or $PYPROF_OP_MODELS) it costs what the file's formulas give,
counted by hand; a bad file is an error naming its line; a call the formula cannot cost is na with
one warning for the op. Without the file the op is what a model is missing for: the summary ranks
it with its share of the op self time counted by hand from the net.dict, the `unmodelled` report
lists it, the advice rule `unmodelled-ops` names it and the HTML page shows it; with the file it
leaves all of them.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

import browser
import pyprof_db
import testlib
from pyprof import _units

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("user_op_models.py")
OP = "mylib::fused_gate"

# x [8,32], w [32,16], out [8,16], repeats 3:
#   flops = 2*256*16 (x @ w) + 4*3*8*16 (3 gates of 4 FLOPs per element) = 8192 + 1536 = 9728
#   bytes = x 1024 + w 2048 + out 8*16*4 = 512 -> 3584
MODELS = """\
# mylib's ops (tests/scripts/user_op_models.py)
op mylib::fused_gate(x, w, repeats)
  flops = 2 * numel(x) * size(w, -1) + 4 * repeats * size(x, 0) * size(w, -1)
  bytes = nbytes(x) + nbytes(w) + size(x, 0) * size(w, -1) * itemsize(x)
  family = matmul
  dtype = x
"""
FLOPS, BYTES = 9728, 3584


@pytest.fixture(scope="module")
def pyprof_dict(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("user_op_models")
    res = pyprof_db.profile(tmp, SCRIPT, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    return tmp / "net.dict"


@pytest.fixture(scope="module")
def kineto_dict(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("user_op_models_kineto")
    trace = tmp / "trace.json"
    res = testlib.run_tool(testlib.PY, SCRIPT, "--torch-profiler", trace, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    testlib.parse_to(trace, tmp / "net.dict")
    return tmp / "net.dict"


@pytest.fixture
def models_file(tmp_path):
    path = tmp_path / "op_models.txt"
    path.write_text(MODELS)
    return path


def gate_records(dict_path, *args, check=True):
    """prof's JSON records of mylib::fused_gate, and prof's result."""
    res = testlib.prof("--json", "-c", "all", "--iterations", "all", *map(str, args),
                       str(dict_path), check=check)
    records = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    return [r for r in records if r.get("op") == OP], res


def test_without_a_models_file_the_op_is_na(pyprof_dict):
    gates, _ = gate_records(pyprof_dict)
    assert len(gates) == 2, gates  # two steps, one call each
    for r in gates:
        assert r["op_flops"] is None and r["op_bytes"] is None, r


@pytest.mark.parametrize("capture", ["pyprof_dict", "kineto_dict"])
def test_op_models_file_costs_the_op_by_hand(capture, models_file, request):
    dict_path = request.getfixturevalue(capture)
    gates, res = gate_records(dict_path, "--op-models", models_file)
    assert len(gates) == 2, gates
    for r in gates:
        assert (r["op_flops"], r["op_bytes"]) == (FLOPS, BYTES), r
        assert r["family"] == "matmul" and r["params"] == "user=op_models.txt:2", r
    assert "warning" not in res.stderr, res.stderr
    # pyprof capture names the arguments; torch.profiler's are positions ("0", "1", "2"), which
    # the op line's argument list maps.
    _, records = testlib.read_dict(dict_path)
    args = next(r for r in records if r["name"] == OP)["args"]
    assert list(args) == (["x", "w", "repeats"] if capture == "pyprof_dict" else ["0", "1", "2"])


def test_the_environment_names_a_default_file(pyprof_dict, models_file, monkeypatch):
    monkeypatch.setenv("PYPROF_OP_MODELS", str(models_file))
    gates, _ = gate_records(pyprof_dict)
    assert {(r["op_flops"], r["op_bytes"]) for r in gates} == {(FLOPS, BYTES)}


def test_a_call_the_formula_cannot_cost_is_na_said_once(pyprof_dict, tmp_path):
    # size(x, 2) of a 2-D x: both calls unmodelled, one warning for the op.
    path = tmp_path / "rank.txt"
    path.write_text("op mylib::fused_gate(x, w, repeats)\nflops = size(x, 2)\nbytes = nbytes(x)\n")
    gates, res = gate_records(pyprof_dict, "--op-models", path)
    assert [r["op_flops"] for r in gates] == [None, None], gates
    warnings = [line for line in res.stderr.splitlines() if OP in line and "warning" in line]
    assert len(warnings) == 1, res.stderr
    assert (f"2 records of {OP} that its user model cannot cost (first: line" in warnings[0]
            and f"{path}:1: flops: size(x, 2): 'x' has rank 2): not modelled (na)" in warnings[0]
            ), warnings[0]


def test_a_bad_file_is_an_error_naming_its_line(pyprof_dict, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text(MODELS.replace("size(w, -1) * itemsize(x)", "size(w, -1) * itemsiz(x)"))
    res = testlib.prof("--op-models", path, pyprof_dict, check=False)
    assert res.returncode == 2, res
    assert res.stderr == (
        f"pyprof prof: error: {path}:4: op {OP}: bytes: unknown function 'itemsiz' (did you mean "
        "'itemsize'?) (functions: numel, nbytes, itemsize, rank, size, min, max, ceil_div)\n")
    twice = tmp_path / "twice.txt"
    twice.write_text(MODELS + "\n" + MODELS)
    res = testlib.prof("--op-models", str(twice), "--op-models", str(path), pyprof_dict,
                       check=False)
    assert res.returncode == 2
    assert f"{twice}:9: op {OP} defined twice (first at {twice}:2)" in res.stderr, res.stderr
    res = testlib.prof("--op-models", tmp_path / "missing.txt", pyprof_dict, check=False)
    assert res.returncode == 2
    assert "cannot read op models file" in res.stderr and "missing.txt: no such file" in res.stderr


def test_a_user_model_replaces_pyprofs_with_one_note(pyprof_dict, tmp_path):
    # aten::mm ([8,32] x [32,16]) inside the custom op: pyprof's model 2*8*16*32 = 8192 FLOPs;
    # the file's says 7.
    _, records = testlib.read_dict(pyprof_dict)
    assert any(r["name"] == "aten::mm" for r in records)
    mm_before, _ = mm_flops(pyprof_dict)
    assert mm_before == {8192}
    path = tmp_path / "mm.txt"
    path.write_text("op aten::mm(self, mat2)\nflops = 7\nbytes = nbytes(self)\n")
    mm_after, res = mm_flops(pyprof_dict, "--op-models", path)
    assert mm_after == {7}
    assert res.stderr.count(
        f"pyprof prof: note: {path}:1: op aten::mm has a model in pyprof; this file's formulas "
        "replace it\n") == 1, res.stderr


def mm_flops(dict_path, *args):
    res = testlib.prof("--json", "-c", "all", "--iterations", "all", *map(str, args),
                       str(dict_path))
    records = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    return {r["op_flops"] for r in records if r.get("op") == "aten::mm"}, res


def test_help_names_the_option():
    res = testlib.prof("--help")
    assert "--op-models" in res.stdout and "PYPROF_OP_MODELS" in res.stdout


def test_parquet_passes_the_file_to_prof(kineto_dict, models_file, tmp_path):
    # `pyprof prof --parquet` runs pyprof-prof itself: --op-models and its FILE reach it (FILE is
    # not taken for a second input).
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    out = tmp_path / "net.parquet"
    res = testlib.run_tool(testlib.PY, "-m", "pyprof", "prof", "--parquet", "--op-models",
                           models_file, "-o", out, kineto_dict)
    assert res.returncode == 0, res.stderr
    frame = pd.read_parquet(out)
    gates = frame[frame["op"] == OP]
    assert len(gates) == 2
    assert set(zip(gates["op_flops"], gates["op_bytes"])) == {(FLOPS, BYTES)}


# ---- what a model is missing for: the summary's ranking, the `unmodelled` report, the advice, the
# page (docs/prof.md §3, docs/advice.md `unmodelled-ops`, docs/report.md) -------------------------
UNMODELLED_COLUMNS = [{"name": "Rank", "unit": "id"}, {"name": "Op", "unit": "text"},
                      {"name": "Records", "unit": "count"}, {"name": "Time(ns)", "unit": "ns"},
                      {"name": "% of time", "unit": "%"}]


def summary_and_advice(dict_path, *args):
    """prof's summary, unmodelled and advice JSON: (tables, rows), each by "report/table"."""
    res = testlib.prof(*map(str, args), "--report", "summary,unmodelled,advice", "--formats",
                       "json", str(dict_path))
    tables, rows = testlib.report_json(res.stdout)
    by_table = {f"{t['report']}/{t['table']}": t for t in tables}
    by_rows: dict = {key: [] for key in by_table}
    for row in rows:
        by_rows[f"{row['report']}/{row['table']}"].append(row)
    return by_table, by_rows


def gate_self_time(dict_path) -> tuple[int, int]:
    """(mylib::fused_gate's self time, every op record's self time) from the net.dict itself: the
    gate calls run at the top of their call trees, so no counted op covers their self time, and
    the ops inside them (aten::mm, sigmoid, mul) are modelled and counted."""
    _, records = testlib.read_dict(dict_path)
    ops = [r for r in records if r["kind"] == "op"]
    assert all(r.get("parent_id") is None for r in ops if r["name"] == OP)
    return sum(r["self_duration"] for r in ops if r["name"] == OP), \
        sum(r["self_duration"] for r in ops)


@pytest.mark.parametrize("capture", ["pyprof_dict", "kineto_dict"])
def test_summary_ranks_the_op_without_a_model_by_hand(capture, request):
    dict_path = request.getfixturevalue(capture)
    gate, total = gate_self_time(dict_path)
    tables, rows = summary_and_advice(dict_path)
    summary = {r["Metric"]: r["Value"] for r in rows["summary/summary"]}
    assert summary["op self time (ns)"] == total
    share = f"{100 * gate / total:.1f}"
    assert summary["unmodelled op 1"] == f"{OP} {share}% ({gate} ns, 2 records)", summary
    # The table, its ids and units pinned; the gate first, every row an op no model knows.
    assert tables["unmodelled/unmodelled"]["columns"] == UNMODELLED_COLUMNS
    table = rows["unmodelled/unmodelled"]
    assert table[0] == {"report": "unmodelled", "table": "unmodelled", "Rank": 1, "Op": OP,
                        "Records": 2, "Time(ns)": gate, "% of time": float(share)}, table
    assert [r["Rank"] for r in table] == list(range(1, len(table) + 1))
    assert summary["ops without a FLOP model"] == len(table)
    unmodelled = sum(r["Time(ns)"] for r in table)
    assert summary["time in ops without a FLOP model %"] == round(100 * unmodelled / total, 1)
    # The advice fires when the unmodelled ops hold 5% of the op self time or more (the share,
    # measured, is the run's: the rule is checked against it either way), naming the gate first
    # with every unmodelled op's time at stake.
    advice = [r for r in rows["advice/advice"] if r["Rule"] == "unmodelled-ops"]
    if unmodelled / total < 0.05:
        assert advice == [], (unmodelled, total, advice)
        return
    assert len(advice) == 1, rows["advice/advice"]
    assert advice[0]["Time at stake(ns)"] == unmodelled
    assert advice[0]["Evidence"].startswith(f"{OP} {share}% ("), advice[0]
    assert "2 records)" in advice[0]["Evidence"]
    assert "--op-models FILE" in advice[0]["Fix"] and "docs/ops.md" in advice[0]["Fix"]


@pytest.mark.parametrize("capture", ["pyprof_dict", "kineto_dict"])
def test_with_its_model_the_op_leaves_the_list_and_the_advice(capture, models_file, request):
    dict_path = request.getfixturevalue(capture)
    _, rows = summary_and_advice(dict_path)
    assert [r["Op"] for r in rows["unmodelled/unmodelled"]][:1] == [OP]
    _, rows = summary_and_advice(dict_path, "--op-models", models_file)
    summary = {r["Metric"]: r["Value"] for r in rows["summary/summary"]}
    # Everything else in this program is modelled: no table, no ranking, no advice.
    assert "unmodelled/unmodelled" not in rows, rows.get("unmodelled/unmodelled")
    assert not any(m.startswith("unmodelled op") for m in summary), summary
    assert summary["time covered by a FLOP model %"] == 100.0
    assert [r for r in rows["advice/advice"] if r["Rule"] == "unmodelled-ops"] == []


def test_the_page_shows_the_ops_without_a_model(pyprof_dict, models_file, tmp_path):
    pytest.importorskip("plotly")
    gate, total = gate_self_time(pyprof_dict)

    def page(name, env=None):
        out = tmp_path / f"{name}.html"
        res = subprocess.run([testlib.PY, "-m", "pyprof", "report", str(pyprof_dict), "-o",
                              str(out)], capture_output=True, text=True, timeout=300,
                             env=testlib.pyprof_env(env), cwd=testlib.ROOT)
        assert res.returncode == 0, res.stderr
        html = out.read_text()
        data = json.loads(re.search(r'<script type="application/json" id="pyprof-data">(.*?)'
                                    r"</script>", html, re.S).group(1).replace("<\\/", "</"))
        return html, data, out

    html, data, out = page("without")
    assert '<section id="unmodelled"><h2>Ops without a FLOP model</h2>' in html
    assert "--op-models FILE" in html and "docs/ops.md" in html
    spec = data["tables"]["unmodelled"]
    assert [c["name"] for c in spec["columns"]] == ["Rank", "Op", "Records", "Time(ns)",
                                                    "% of time"]
    assert spec["rows"][0] == [1, OP, 2, gate, round(100 * gate / total, 1)]
    assert data["prof"]["unmodelled/unmodelled"][0]["Op"] == OP
    share = _units.format_quantity(round(100 * sum(r["Time(ns)"] for r in data["prof"][
        "unmodelled/unmodelled"]) / total, 1), "%")
    assert data["unmodelled"].startswith(f"{share}% of the time in ops without a model"), \
        data["unmodelled"]
    # With the op's model (PYPROF_OP_MODELS reaches the page's prof run): the section says so.
    rendered_rows(out)
    html, data, _ = page("with", {"PYPROF_OP_MODELS": str(models_file)})
    assert '<section id="unmodelled">' in html
    assert data["tables"]["unmodelled"]["rows"] == []
    assert data["tables"]["unmodelled"]["empty"] == "every op with time has a FLOP model"
    assert data["unmodelled"] == "no op without a model holds time"


def rendered_rows(path):
    """The page's `unmodelled` table as a headless browser renders it (when there is one): the
    gate first, in human units, and no console error."""
    if not browser.browser_available():
        return
    driver = browser.new_driver()
    try:
        browser.open_page(driver, str(path))
        errors = browser.console_errors(driver)
        rows = driver.execute_script(
            "return [...document.querySelectorAll('table[data-table=unmodelled] tbody tr')]"
            ".map(tr => [...tr.children].map(td => td.textContent))")
    finally:
        driver.quit()
    assert errors == []
    assert rows[0][:3] == ["1", OP, "2"], rows


def test_parquet_has_the_unmodelled_table(kineto_dict, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    gate, _ = gate_self_time(kineto_dict)
    res = testlib.run_tool(testlib.PY, "-m", "pyprof", "prof", "--report", "unmodelled",
                           "--formats", "parquet", "-o", tmp_path / "net", kineto_dict)
    assert res.returncode == 0, res.stderr
    frame = pd.read_parquet(tmp_path / "net.unmodelled.parquet")
    first = frame.iloc[0]
    assert (first["report"], first["table"], first["Rank"], first["Op"], first["Records"],
            first["Time(ns)"]) == ("unmodelled", "unmodelled", 1, OP, 2, gate)
    assert str(frame["Time(ns)"].dtype) == "int64" and str(frame["% of time"].dtype) == "float64"


# ---- pyprof diff and pyprof export load the same models (docs/diff.md, docs/export.md) -----------
def diff_gate_flops(dict_path, *args, env=None):
    """pyprof diff of the profile against itself: the op-type rows' FLOPs of mylib::fused_gate."""
    res = subprocess.run([testlib.PY, "-m", "pyprof", "diff", *map(str, args), "--report",
                          "op_type", "--formats", "json", str(dict_path), str(dict_path)],
                         capture_output=True, text=True, timeout=120,
                         env=testlib.pyprof_env(env))
    assert res.returncode == 0, res.stderr
    _, rows = testlib.report_json(res.stdout)
    return [(r["Base FLOPs"], r["New FLOPs"]) for r in rows if r.get("Op") == OP]


def test_diff_costs_with_the_users_models(pyprof_dict, models_file):
    # Two calls, per call: each side's FLOPs per call are the file's 9,728; without it, none.
    assert diff_gate_flops(pyprof_dict) == [(0, 0)]
    assert diff_gate_flops(pyprof_dict, "--op-models", models_file) == [(FLOPS, FLOPS)]
    assert diff_gate_flops(pyprof_dict, env={"PYPROF_OP_MODELS": str(models_file)}) == [
        (FLOPS, FLOPS)]


def export_gate_flops(dict_path, out, *args, env=None):
    """pyprof export's trace: the FLOPs arg of each of mylib::fused_gate's events (None: none)."""
    res = subprocess.run([testlib.PY, "-m", "pyprof", "export", *map(str, args), str(dict_path),
                          "-o", str(out)], capture_output=True, text=True, timeout=120,
                         env=testlib.pyprof_env(env))
    assert res.returncode == 0, res.stderr
    events = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("name") == OP]
    assert len(events) == 2  # one call per step
    return [e["args"].get("FLOPs") for e in events]


def test_export_costs_with_the_users_models(pyprof_dict, models_file, tmp_path):
    out = tmp_path / "trace.json"
    assert export_gate_flops(pyprof_dict, out) == [None, None]  # not modelled: no cost args
    assert export_gate_flops(pyprof_dict, out, "--op-models", models_file) == [FLOPS, FLOPS]
    assert export_gate_flops(pyprof_dict, out, env={"PYPROF_OP_MODELS": str(models_file)}) == [
        FLOPS, FLOPS]
    # A bad file stops it before anything is written, as prof.
    bad = tmp_path / "bad.txt"
    bad.write_text("op mylib::fused_gate(x)\nflops = 1\n")
    res = subprocess.run([testlib.PY, "-m", "pyprof", "export", "--op-models", str(bad),
                          str(pyprof_dict), "-o", str(tmp_path / "t2.json")],
                         capture_output=True, text=True, timeout=120, env=testlib.pyprof_env())
    assert res.returncode == 2 and f"pyprof export: error: {bad}:1:" in res.stderr, res.stderr
    assert not (tmp_path / "t2.json").exists()
