"""What a new user meets (issue 38), on the script such a user writes: a small CNN trained with
Adam from a DataLoader with 2 worker processes, in the natural loop

    for x, y in loader:
        with pyprof.range("step"):
            ...

(tests/scripts/new_user_train.py), run under `pyprof profile` and then parsed, costed, reported
and read into pandas as README's table says. Every number is checked against what the net.dict
holds, read here with the json module: records' times, the header's step spans, the user ranges
that put a record in torch.optim's step."""

import json
import os
import re
import subprocess

import pytest

import pyprof_db
import testlib
from testlib import prof

pytestmark = pytest.mark.needs_build

SCRIPT = testlib.script("new_user_train.py")
STEPS = 8


def profile_and_parse(tmp, *args, name="net"):
    res = pyprof_db.profile(tmp, SCRIPT, *args, name=name)
    assert res.returncode == 0, res.stderr
    parsed = testlib.run_tool(testlib.PARSE, tmp / f"{name}.sqlite", "-o", tmp / f"{name}.dict")
    assert parsed.returncode == 0, parsed.stderr
    return res, parsed


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("new_user")
    profiled, parsed = profile_and_parse(tmp, "--steps", str(STEPS))
    header, records = testlib.read_dict(tmp / "net.dict")
    return {"dir": tmp, "dict": tmp / "net.dict", "db": tmp / "net.sqlite",
            "profile": profiled, "parse": parsed, "header": header, "records": records}


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def table(path, columns, *extra):
    return json_lines(prof("--json", "-c", columns, *extra, path).stdout)


def report(path, name, *extra):
    """One report's rows by table id: {table: [row, ...]} ("steps", "steady_state", ...)."""
    out = {}
    for row in testlib.report_rows(prof("--report", name, "--formats", "json", *extra,
                                        path).stdout):
        assert row.pop("report") == name
        out.setdefault(row.pop("table"), []).append(row)
    return out


def summary(path, *extra):
    return {r["Metric"]: r["Value"] for r in report(path, "summary", *extra)["summary"]}


def layer(record):
    return ":".join(r.removeprefix("layer:") for r in record.get("user_ranges", []))


def phase(record):
    """docs/prof.md §3's phase rule, from the record's own keys."""
    if "Optimizer.step#" in layer(record) or "Optimizer.zero_grad#" in layer(record):
        return "optimizer"
    return {"fprop": "forward", "bprop": "backward"}.get(record.get("dir"), "other")


def step_layout(header, record):
    """Where a record lies among the header's step spans (docs/formats.md §3: by its start):
    ("step", i), ("between", i) before step i, "before" or "after"."""
    steps = header["iterations"]["steps"]
    t = record["start"]
    if "step" in record:
        return ("step", record["step"])
    if t < steps[0]["start"]:
        return "before"
    if t >= steps[-1]["end"]:
        return "after"
    following = next(s["index"] for s in steps if s["start"] > t)
    return ("between", following)


# ---- 1. per-record rates ----------------------------------------------------------------------

def test_cpu_record_rates_divide_by_the_time_their_flops_ran_in(run):
    """A CPU record's TFLOP/s is its counted FLOPs over the inclusive time of the op that counts
    them (docs/prof.md §3), not over its self time: aten::conv2d's FLOPs are spent in the
    aten::mkldnn_convolution inside it. Inner ops, which count nothing, have no rate; no CPU
    record is Tensor Core eligible."""
    records = run["records"]
    rows = table(run["dict"], "op,sil,duration,counted_ns,flops,bytes,tflops,gbps,tc_eligible",
                 "--iterations", "all")
    assert len(rows) == len(records)
    counted = inner = 0
    for rec, row in zip(records, rows):
        assert row["tc_eligible"] is None, row
        assert row["sil"] == rec["self_duration"]
        if row["flops"] is None:  # no model
            assert row["tflops"] is None and row["counted_ns"] is None
            continue
        if row["counted_ns"] == 0:  # inside a counted op: its cost is the caller's
            inner += 1
            assert (row["flops"], row["tflops"], row["gbps"]) == (0, None, None), row
            continue
        counted += 1
        assert row["counted_ns"] == rec["duration"] > rec["self_duration"] or \
            row["counted_ns"] == rec["duration"] == rec["self_duration"]
        rate = row["flops"] / rec["duration"] / 1e3
        assert row["tflops"] == pytest.approx(rate, rel=5e-3, abs=5e-4), row
    assert counted > 0 and inner > 0
    conv = [row for row in rows if row["op"] == "aten::conv2d" and row["flops"]]
    assert conv and all(row["counted_ns"] > row["sil"] for row in conv)
    # The op report's rate is the same counted FLOPs over the same counted time.
    ops = report(run["dict"], "op", "--iterations", "all")
    (conv2d,) = [r for r in next(iter(ops.values()))
                 if r["Op"] == "aten::conv2d" and r["Direction"] == "fprop"]
    assert sum(r["counted_ns"] for r in conv) == conv2d["Counted time(ns)"]
    assert sum(r["flops"] for r in conv) == conv2d["FLOPs(FMA=2)"]


def test_read_dict_and_parquet_carry_the_same_rates(run, tmp_path):
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    import pyarrow.parquet as pq

    import pyprof

    frame = pyprof.read_dict(run["dict"], iterations="all")
    rows = table(run["dict"], "all", "--iterations", "all")
    assert len(frame) == len(rows)
    for key in ("tflops", "counted_ns", "tc_eligible"):
        assert [None if v is None else v for v in (r[key] for r in rows)] == \
            [None if v is pd_na(v) else v for v in frame[key].tolist()], key
    out = tmp_path / "net.parquet"
    res = subprocess.run([testlib.PY, "-m", "pyprof", "prof", "--parquet", "-o", str(out),
                          "--iterations", "all", str(run["dict"])], capture_output=True,
                         text=True, env=testlib.pyprof_env())
    assert res.returncode == 0, res.stderr
    parquet = pq.read_table(out).to_pylist()
    assert [r["tflops"] for r in parquet] == [r["tflops"] for r in rows]
    assert all(r["tc_eligible"] is None for r in parquet)


def pd_na(value):
    """`value` itself when it is pandas' NA (so that the comparison above maps it to None)."""
    import pandas as pd

    return value if value is pd.NA else object()


# ---- 2. what the step selection leaves out ----------------------------------------------------

def iteration_states(path, *extra):
    tables = report(path, "iteration", *extra)
    return [r["Selected"] for r in tables["steps"]]


@pytest.mark.parametrize("selection", [(), ("--iterations", "2:6")], ids=["default", "2:6"])
def test_the_selection_says_what_it_left_out_and_where(run, selection):
    header, records = run["header"], run["records"]
    assert header["iterations"]["rule"] == "user_range"
    states = iteration_states(run["dict"], *selection)
    assert len(states) == STEPS
    selected = {i for i, s in enumerate(states) if s == "yes"}
    if selected == set(range(STEPS)):
        assert not selection
        pytest.skip("the default selection left no step out on this run (no warm-up)")
    s = summary(run["dict"], *selection)
    parts = {"step": 0, "between": 0, "before": 0, "after": 0}
    counts = dict.fromkeys(parts, 0)
    for r in records:
        where = step_layout(header, r)
        kind = where if isinstance(where, str) else where[0]
        if kind == "step" and where[1] in selected:
            continue
        counts[kind] += 1
        parts[kind] += r["self_duration"]
    left = sum(parts.values())
    total = sum(r["self_duration"] for r in records)
    assert counts["between"] > 0 and counts["step"] > 0  # the loading, the steps left out
    assert int(s["records outside the selected iterations (left out)"]) == sum(counts.values())
    assert int(s["time left out (ns)"]) == left
    assert float(s["time left out %"]) == pytest.approx(100 * left / total, abs=0.051)
    assert int(s["left out: in steps not selected (ns)"]) == parts["step"]
    assert int(s["left out: between steps (ns)"]) == parts["between"]
    assert int(s["left out: before the first step (ns)"]) == parts["before"]
    assert int(s["left out: after the last step (ns)"]) == parts["after"]
    note = prof("--report", "summary", *selection, run["dict"]).stderr
    assert f"{sum(counts.values())} records outside them left out" in note
    assert f"{counts['step']} in steps not selected" in note
    assert f"{counts['between']} between steps" in note


@pytest.mark.parametrize("selection", [(), ("--iterations", "1:")], ids=["default", "1:"])
def test_advice_sees_the_time_between_steps(run, selection):
    """The loop waits for the DataLoader between the step ranges: advice judges those gaps
    (their wall time from the header's spans), whatever the selection."""
    header = run["header"]
    steps = header["iterations"]["steps"]
    states = iteration_states(run["dict"], *selection)
    gaps = sum(steps[i]["start"] - steps[i - 1]["end"] for i in range(1, len(steps))
               if states[i] == "yes")
    walls = sum(s["end"] - s["start"] for s, state in zip(steps, states) if state == "yes")
    share = 100 * gaps / (gaps + walls)
    s = summary(run["dict"], *selection)
    assert int(s["wall time between the selected steps (ns)"]) == gaps
    assert float(s["wall time between the selected steps %"]) == pytest.approx(share, abs=0.051)
    rows = report(run["dict"], "advice", *selection)
    advice = {r["Rule"]: r for r in next(iter(rows.values()))}
    if share < 2:
        # The workers kept up with the steps on this run: no wait worth a rule.
        assert "dataloader-wait" not in advice and "time-between-steps" not in advice
        return
    wait = advice["dataloader-wait"]
    assert wait["Time at stake(ns)"] == gaps
    assert wait["% of time"] == pytest.approx(share, abs=0.051)
    assert "between the selected steps" in wait["Finding"]
    assert "num_workers" in wait["Fix"]
    assert "aten::" in wait["Evidence"]  # the ops that ran in the gaps (the batch's unpacking)


def test_read_dict_returns_every_record_with_the_selection(run):
    pytest.importorskip("pandas")
    import pyprof

    records = run["records"]
    for selection in ({}, {"iterations": "2:6"}):
        frame = pyprof.read_dict(run["dict"], **selection)
        assert len(frame) == len(records)  # README: one row per record
        assert frame["step"].astype(object).where(frame["step"].notna(), None).tolist() == \
            [r.get("step") for r in records]
        extra = [f"--{k}" for k in selection] + list(selection.values())
        s = summary(run["dict"], *extra)
        assert int(frame["selected"].sum()) == int(s["records"])
        states = iteration_states(run["dict"], *extra)
        active = any(state != "yes" for state in states)
        for r, selected in zip(records, frame["selected"].tolist()):
            in_reports = not active or ("step" in r and states[r["step"]] == "yes")
            assert selected == (1 if in_reports else 0)
        assert active or not selection


# ---- 3. advice and the optimizer ---------------------------------------------------------------

def test_advice_uses_the_phase_reports_phases(run):
    """backward-forward-ratio compares the phase report's backward and forward; no rule's
    evidence is an op only torch.optim's step runs (Adam's casts of its 0-dim step counters,
    lerp_, addcmul_), nor a 0-dim tensor's cast, unless the rule is the optimizer's own."""
    records = run["records"]
    optimizer_only = {r["op"] for r in records if phase(r) == "optimizer"} - \
        {r["op"] for r in records if phase(r) != "optimizer"}
    assert {"aten::addcmul_", "aten::lerp_"} & optimizer_only
    for extra in ((), ("--iterations", "all")):
        phases = {r["Phase"]: r for r in report(run["dict"], "phase", *extra)["phase"]}
        rows = next(iter(report(run["dict"], "advice", *extra).values()))
        for row in rows:
            if row["Rule"] == "optimizer-not-foreach":
                continue
            named = set(re.findall(r"(aten::\w+)", row["Evidence"]))
            assert not named & optimizer_only, row
            assert "[] " not in row["Evidence"], row
            if row["Rule"] == "backward-forward-ratio":
                ratio = float(re.search(r"took ([\d.]+)x", row["Finding"]).group(1))
                assert ratio == pytest.approx(
                    phases["backward"]["Time(ns)"] / phases["forward"]["Time(ns)"], abs=0.006)
        # The ratio this profile has (Adam's step is no forward work) is a usual one, or the
        # rule names the forward work without a backward.
        ratio = phases["backward"]["Time(ns)"] / phases["forward"]["Time(ns)"]
        fired = [r for r in rows if r["Rule"] == "backward-forward-ratio"]
        if 1.5 <= ratio <= 3:
            assert not fired
        elif fired and ratio < 1.5:
            assert "no backward used" in fired[0]["Finding"]


def test_forward_work_without_backward_is_what_a_low_ratio_names(tmp_path):
    """A no_grad evaluation in every step (4 forward passes besides the training one) makes the
    backward a fraction of the forward: the rule fires, and its time at stake is the self time
    of the GEMM-like forward ops in call trees no backward node names (found here from the
    records' op ids, parent links and `fwd_op_id`s)."""
    profile_and_parse(tmp_path, "--steps", "4", "--eval", "4")
    path = tmp_path / "net.dict"
    _, records = testlib.read_dict(path)
    family = [r["family"] for r in table(path, "family", "--iterations", "all")]
    named = {r["fwd_op_id"] for r in records if r.get("dir") == "bprop" and r.get("fwd_op_id")}
    by_id = {r["id"]: r for r in records if "id" in r}

    def root(r):
        while r.get("parent_id") in by_id:
            r = by_id[r["parent_id"]]
        return r["id"]

    trees_with_backward = {root(r) for r in records
                           if phase(r) == "forward" and r.get("id") in named}
    forward_only = sum(r["self_duration"] for r, fam in zip(records, family)
                       if phase(r) == "forward" and root(r) not in trees_with_backward
                       and fam in ("conv", "matmul"))
    assert forward_only > 0
    rows = next(iter(report(path, "advice", "--iterations", "all").values()))
    (rule,) = [r for r in rows if r["Rule"] == "backward-forward-ratio"]
    assert rule["Time at stake(ns)"] == forward_only
    assert "GEMM-like ops whose results no backward used" in rule["Finding"]
    assert "without backward" in rule["Evidence"] and "no_grad" in rule["Fix"]
    # The training forward (with its backward) is not named.
    assert "lerp_" not in rule["Evidence"]


# ---- 4. partial and empty steps ------------------------------------------------------------------

def test_a_step_the_capture_cut_is_marked_and_left_out(tmp_path):
    _, parsed = profile_and_parse(tmp_path, "--steps", "5", "--cut")
    header, records = testlib.read_dict(tmp_path / "net.dict")
    steps = header["iterations"]["steps"]
    assert len(steps) == 6 and steps[-1].get("cut") is True
    assert not any(s.get("cut") for s in steps[:-1])
    assert "1 step cut by the capture" in parsed.stderr
    cut_ops = [r for r in records if r.get("step") == 5]
    assert cut_ops  # the forward it began
    for extra in ((), ("--iterations", "all")):
        tables = report(tmp_path / "net.dict", "iteration", *extra)
        rows = tables["steps"]
        assert rows[5]["Selected"] == "cut"
        whole = [r["Wall(ns)"] for r in rows if r["Selected"] == "yes"]
        steady = {r["Metric"]: r for r in tables["steady_state"]}
        assert steady["wall time (ns)"]["Max"] == max(whole)
        assert steady["wall time (ns)"]["Min"] == min(whole)
    s = summary(tmp_path / "net.dict")
    assert s["steps cut by the capture (left out)"] == 1
    # Its records leave the reports with the other left-out ones (an explicit selection of it
    # alone is refused).
    rows = report(tmp_path / "net.dict", "iteration")["steps"]
    selected = {i for i, row in enumerate(rows) if row["Selected"] == "yes"}
    assert 5 not in selected
    assert int(s["records"]) == sum(1 for r in records if r.get("step") in selected)
    res = prof("--iterations", "5", "--report", "summary", tmp_path / "net.dict", check=False)
    assert res.returncode == 2 and "no whole iteration" in res.stderr


def test_steps_after_stop_are_empty_not_steady_state(tmp_path):
    profile_and_parse(tmp_path, "--steps", "5", "--stop")
    header, records = testlib.read_dict(tmp_path / "net.dict")
    assert header["iterations"]["count"] == 7
    assert not [r for r in records if r.get("step") in (5, 6)]
    tables = report(tmp_path / "net.dict", "iteration", "--iterations", "all")
    rows = tables["steps"]
    assert [r["Selected"] for r in rows[5:]] == ["empty", "empty"]
    steady = {r["Metric"]: r for r in tables["steady_state"]}
    rates = sorted(r["TFLOP/s"] for r in rows[:5])
    assert steady["TFLOP/s (over wall time)"]["Min"] == rates[0] > 0
    titles, _ = testlib.report_json(prof("--report", "iteration", "--iterations", "all",
                                         "--formats", "json", tmp_path / "net.dict").stdout)
    assert titles[1]["title"] == "steady state over the selected iterations (5 of 7)"


# ---- 5. marks ------------------------------------------------------------------------------------

def test_marks_reach_the_dict_the_report_the_export_and_the_page(run, tmp_path):
    lines = json_lines(open(run["dict"]).read())
    marks = [line for line in lines if line.get("kind") == "mark"]
    assert [m["name"] for m in marks] == ["epoch start", "epoch end"]
    steps = run["header"]["iterations"]["steps"]
    assert marks[0]["start"] < steps[0]["start"] and marks[1]["start"] > steps[-1]["end"]
    rows = report(run["dict"], "marks")["marks"]
    assert [(r["Mark"], r["Start(ns)"]) for r in rows] == [(m["name"], m["start"]) for m in marks]
    assert summary(run["dict"])["marks (--report marks)"] == 2
    trace = tmp_path / "net.trace.json"
    res = subprocess.run([testlib.PY, "-m", "pyprof", "export", str(run["db"]), "-o", str(trace)],
                         capture_output=True, text=True, env=testlib.pyprof_env())
    assert res.returncode == 0, res.stderr
    events = json.load(open(trace))["traceEvents"]
    instants = [e for e in events if e.get("ph") == "i"]
    assert [e["name"] for e in instants] == ["epoch start", "epoch end"]
    # The export's summary names the database given, not the temporary net.dict it made.
    assert f"pyprof export: {run['db']} -> " in res.stderr and "2 marks" in res.stderr
    page = tmp_path / "net.html"
    res = subprocess.run([testlib.PY, "-m", "pyprof", "report", str(run["dict"]), "-o", str(page)],
                         capture_output=True, text=True, env=testlib.pyprof_env())
    if res.returncode != 0 and "pandas" in res.stderr + res.stdout:
        pytest.skip("pyprof report needs its dependencies")
    assert res.returncode == 0, res.stderr
    html = open(page, encoding="utf-8").read()
    assert "epoch start" in html and "epoch end" in html and 'id="table-marks"' in html


# ---- 6. messages ----------------------------------------------------------------------------------

def test_options_after_the_command_are_named(tmp_path):
    res = subprocess.run(
        [testlib.PY, "-m", "pyprof", "profile", testlib.PY, "-c", "import sys", "-o", "late"],
        capture_output=True, text=True, cwd=tmp_path, env=testlib.pyprof_env(), timeout=300)
    assert "-o after the command goes to the program, not to pyprof profile" in res.stderr
    assert "pyprof profile [OPTIONS] -- CMD" in res.stderr


def test_the_empty_database_of_a_mistaken_run_does_not_block_the_next(tmp_path):
    """Options after the command: the program ran unprofiled and an empty pyprof_report.sqlite
    was written. The retry without -o replaces it (it held nothing) and says so; a recorded
    profile is never replaced without --force."""
    def profile(*cmd):
        return subprocess.run([testlib.PY, "-m", "pyprof", "profile", *cmd], capture_output=True,
                              text=True, cwd=tmp_path, env=testlib.pyprof_env(), timeout=300)
    res = profile(testlib.PY, "-c", "import sys", "-o", "late")
    assert res.returncode == 0, res.stderr
    assert "wrote an empty pyprof_report.sqlite" in res.stderr
    program = "import pyprof, torch; pyprof.init(); torch.ones(3).add(1)"
    res = profile("--", testlib.PY, "-c", program)
    assert res.returncode == 0, res.stderr
    assert "replacing the empty" in res.stderr and "pyprof_report.sqlite" in res.stderr
    header, records, _ = testlib.parse(tmp_path / "pyprof_report.sqlite")
    assert any(r.get("op") == "aten::add" for r in records), records
    res = profile("--", testlib.PY, "-c", program)
    assert res.returncode != 0
    assert "output of an earlier run exists" in res.stderr and "--force" in res.stderr


def test_export_of_a_missing_file_says_so(tmp_path):
    res = subprocess.run([testlib.PY, "-m", "pyprof", "export", "nope.dict", "-o", "t.json"],
                         capture_output=True, text=True, cwd=tmp_path, env=testlib.pyprof_env())
    assert res.returncode == 1
    assert res.stderr.strip() == "pyprof export: error: cannot open nope.dict: no such file"


def test_parse_names_the_output_meant(run, tmp_path):
    res = testlib.run_tool(testlib.PARSE, run["db"], tmp_path / "out.dict")
    assert res.returncode == 2
    assert f"give -o (pyprof parse {run['db']} -o {tmp_path / 'out.dict'})" in res.stderr
    assert "traces: give -o DIR" not in res.stderr


def test_prof_without_input_on_a_terminal_does_not_wait(run):
    import pty

    controller, terminal = pty.openpty()
    try:
        res = subprocess.run([testlib.PROF], stdin=terminal, capture_output=True, text=True,
                             timeout=60)
    finally:
        os.close(terminal)
        os.close(controller)
    assert res.returncode == 2 and "no input" in res.stderr


def test_prof_report_names_and_typos(run):
    res = prof("summary", run["dict"], check=False)
    assert res.returncode == 2 and "--report summary" in res.stderr
    assert "ranks" not in res.stderr.split("(reports:")[0]
    res = prof("--report", "sumary", run["dict"], check=False)
    assert res.returncode == 2 and "did you mean 'summary'?" in res.stderr
    res = prof("-c", "tflop", run["dict"], check=False)
    assert res.returncode == 2 and "did you mean 'tflops'?" in res.stderr
    everything = prof("--report", "all", "--formats", "json", run["dict"]).stdout
    ids = {(row["report"], row["table"]) for row in testlib.report_rows(everything)}
    assert {("summary", "summary"), ("phase", "phase"), ("marks", "marks")} <= ids


def test_parse_says_why_backward_records_are_unpaired(run):
    line = next(line for line in run["parse"].stderr.splitlines() if "backward:" in line)
    paired = re.search(r"(\d+) records, (\d+) paired with their forward op, (\d+) unpaired", line)
    unpaired = int(paired.group(3))
    nodes = [r for r in run["records"] if r.get("dir") == "bprop" and not r.get("paired")]
    assert unpaired == len(nodes) > 0
    assert all(r["bwd_node"] == "torch::autograd::AccumulateGrad" for r in nodes)
    assert "(all AccumulateGrad: a parameter's gradient accumulation" in line


# ---- 8. DataLoader workers' files ----------------------------------------------------------------

def test_the_workers_files_are_explained(run):
    files = sorted(p.name for p in run["dir"].glob("net.pid*.sqlite"))
    assert len(files) == 2  # the two DataLoader workers
    assert "the .pid<P> files are the program's child processes (DataLoader workers" in \
        run["profile"].stderr
    docs = open(os.path.join(testlib.ROOT, "docs", "formats.md")).read()
    assert "DataLoader worker" in docs and "not a rank" in docs
