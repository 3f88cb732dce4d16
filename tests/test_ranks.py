"""Multi-rank profiles (issue 16) on a real distributed run: two gloo ranks started by torchrun
under `pyprof profile`, DDP training of a small MLP plus collectives of known sizes, rank 1
made 300 ms slower in step 2 (tests/scripts/ddp_ranks.py). Checked: one database per rank,
parse's parallel multi-input mode with `rank` in the header and every record, the message
sizes prof costs, the backend's comm spans, and `pyprof prof --report ranks` naming rank 1 as
step 2's straggler with the time the other rank waited."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

import testlib

SLOW_RANK, SLOW_STEP, SLOW_MS, STEPS = 1, 2, 300, 4
# Payload bytes per call (this rank's send buffer) and nccl-tests' size for 2 ranks.
EXPECTED = {  # op: (kind, payload, size)
    "c10d::allreduce_": ("all_reduce", 4096 * 4, 4096 * 4),
    "c10d::_allgather_base_": ("all_gather", 1024 * 4, 2 * 1024 * 4),
    "c10d::_reduce_scatter_base_": ("reduce_scatter", 2 * 512 * 4, 2 * 512 * 4),
    "c10d::broadcast_": ("broadcast", 256 * 8, 256 * 8),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    cmd = [testlib.PY, "-m", "pyprof", "profile", "-o", str(tmp / "net"), "--",
           testlib.PY, "-m", "torch.distributed.run", "--nproc-per-node", "2",
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
           testlib.script("ddp_ranks.py"), "--steps", str(STEPS), "--slow-rank", str(SLOW_RANK),
           "--slow-step", str(SLOW_STEP), "--slow-ms", str(SLOW_MS)]
    env = testlib.pyprof_env({"OMP_NUM_THREADS": "1"})
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env,
                         cwd=testlib.ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert '"skipped": []' in res.stdout and "skipped " not in res.stdout, res.stdout
    (tmp / "profile.stderr").write_text(res.stderr)
    out = tmp / "dicts"
    parsed = testlib.run_tool(testlib.PARSE, "-j", "2", str(tmp / "net.rank0.sqlite"),
                              str(tmp / "net.rank1.sqlite"), "-o", str(out), timeout=300)
    assert parsed.returncode == 0, parsed.stderr
    return tmp, out, parsed.stderr


def lines(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def report(*args) -> list[dict]:
    """The ranks report's rows, each with its table id: per_rank, steps, step_detail or
    collectives."""
    res = testlib.prof("--report", "ranks", "--formats", "json", *map(str, args))
    return testlib.report_rows(res.stdout)


def test_one_database_per_rank_each_parsed_with_its_rank(job):
    tmp, out, summary = job
    for rank in (0, 1):
        assert (tmp / f"net.rank{rank}.sqlite").exists()
        assert f"-> {out / f'net.rank{rank}.dict'}" in summary
        header, *rest = lines(out / f"net.rank{rank}.dict")
        assert header["rank"] == rank and header["world_size"] == 2
        assert header["iterations"]["count"] == STEPS
        records = [r for r in rest if r.get("kind") in ("op", "comm")]
        assert len(records) > 200
        assert all(r["rank"] == rank for r in records)
    assert "2 of 2 inputs parsed" in summary


def test_launcher_database_is_a_note_not_a_warning(job):
    """torchrun itself makes no NVTX call; its ranks do. pyprof profile still leaves net.sqlite
    (empty) but says why as a note, with the count of the ranks' databases."""
    tmp, _, _ = job
    err = (tmp / "profile.stderr").read_text()
    assert "warning: the program made no NVTX calls" not in err, err
    assert ("note: the launching process made no NVTX calls; its child processes wrote 2 "
            "databases") in err, err
    assert (tmp / "net.sqlite").exists()


def test_parallel_parse_writes_what_one_at_a_time_writes(job, tmp_path):
    tmp, out, _ = job
    for rank in (0, 1):
        single = tmp_path / f"r{rank}.dict"
        testlib.parse_to(str(tmp / f"net.rank{rank}.sqlite"), str(single))
        with open(single) as a, open(out / f"net.rank{rank}.dict") as b:
            assert a.read() == b.read()


def test_collective_message_sizes(job):
    _, out, _ = job
    for rank in (0, 1):
        # prof's default selection: steps 1-3 (step 0 is the warm-up)
        res = testlib.prof("--json", "-c", "op,bytes", str(out / f"net.rank{rank}.dict"))
        seen = {}
        for row in (json.loads(line) for line in res.stdout.splitlines() if line.strip()):
            if row["op"] in EXPECTED:
                seen.setdefault(row["op"], set()).add(int(float(row["bytes"])))
        for op, (_, payload, _) in EXPECTED.items():
            assert payload in seen.get(op, set()), (op, seen)
        # DDP's own gradient all-reduce (its bucket of 9,610 floats) rides beside ours
        assert seen["c10d::allreduce_"] == {4096 * 4, 9610 * 4}


def test_backend_spans_are_comm_lines_on_gloo_threads(job):
    _, out, _ = job
    rest = lines(out / "net.rank0.dict")[1:]
    comm = [r for r in rest if r.get("kind") == "comm"]
    kinds = {r["name"] for r in comm}
    # (gloo runs reduce_scatter_tensor as an all-reduce: no span of its own)
    assert {"gloo:all_reduce", "gloo:all_gather", "gloo:broadcast"} <= kinds
    main_tids = {r["tid"] for r in rest if r.get("name") == "aten::addmm"}
    assert main_tids and not main_tids & {r["tid"] for r in comm}
    assert all(r["duration"] >= 0 for r in comm)


def test_ranks_report_names_the_straggler_and_the_wait(job):
    _, out, _ = job
    rows = report(out)
    per_rank = {r["Rank"]: r for r in rows if r["table"] == "per_rank"}
    steps = {r["Step"]: r for r in rows if r["table"] == "steps"}
    detail = {(r["Rank"], r["Step"]): r for r in rows if r["table"] == "step_detail"}
    assert set(per_rank) == {0, 1}
    slow = steps[SLOW_STEP]
    assert slow["Straggler"] == SLOW_RANK
    lag_ms = slow["Lag(ns)"] / 1e6
    assert 0.7 * SLOW_MS < lag_ms < 1.5 * SLOW_MS, slow
    # The other rank waited for it in communication (DDP's gradient all-reduce) ...
    assert detail[(0, SLOW_STEP)]["Exposed comm(ns)"] / 1e6 > 0.7 * SLOW_MS
    # ... while the straggler itself was busy outside communication (its sleep is not an op)
    assert detail[(SLOW_RANK, SLOW_STEP)]["Exposed comm(ns)"] / 1e6 < 0.3 * SLOW_MS
    assert detail[(SLOW_RANK, SLOW_STEP)]["Idle(ns)"] / 1e6 > 0.7 * SLOW_MS
    # no other step has a straggler of that size
    for index, row in steps.items():
        if index != SLOW_STEP:
            assert row["Lag(ns)"] < 0.3 * SLOW_MS * 1e6, row
    assert per_rank[SLOW_RANK]["Straggler steps"] >= 1
    for r in per_rank.values():
        parts = r["Compute(ns)"] + r["Exposed comm(ns)"] + r["Idle(ns)"]
        assert parts == r["Wall(ns)"], r  # the split covers the wall time exactly


def test_ranks_report_collectives_bandwidth(job):
    _, out, _ = job
    everything = report(out / "net.rank0.dict", out / "net.rank1.dict")
    rows = [r for r in everything if r["table"] == "collectives"]
    steps = {r["Rank"]: r["Steps"] for r in everything if r["table"] == "per_rank"}
    for rank in (0, 1):
        mine = [r for r in rows if r["Rank"] == rank]
        for op, (kind, payload, size) in EXPECTED.items():
            row = next(r for r in mine if r["Op"] == op and r["Payload(B)"] == payload)
            assert row["Collective"] == kind and row["Size(B)"] == size and row["Group"] == 2
            assert row["Calls"] == steps[rank]  # one per step prof kept (warm-up left out)
            algbw = size * row["Calls"] / row["Time(ns)"]  # B/ns = GB/s
            assert row["Algbw GB/s"] == pytest.approx(algbw, rel=1e-3, abs=1e-3)
            factor = {"all_reduce": 2 * 1 / 2, "all_gather": 1 / 2, "reduce_scatter": 1 / 2,
                      "broadcast": 1}[kind]
            assert row["Busbw GB/s"] == pytest.approx(algbw * factor, rel=1e-3, abs=1e-3)


def test_ranks_report_inputs_are_checked(job, tmp_path):
    tmp, out, _ = job
    res = testlib.prof("--report", "op", str(out / "net.rank0.dict"),
                       str(out / "net.rank1.dict"), check=False)
    assert res.returncode == 2 and "--report ranks" in res.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    res = testlib.prof("--report", "ranks", str(empty), check=False)
    assert res.returncode == 1 and "no *.dict" in res.stderr
    # the launcher's own empty database (torchrun itself made no NVTX call) states no rank
    testlib.parse_to(str(tmp / "net.sqlite"), str(tmp_path / "net.dict"))
    res = testlib.prof("--report", "ranks", str(tmp_path / "net.dict"),
                       str(out / "net.rank0.dict"), check=False)
    assert res.returncode == 0 and "no rank in its header" in res.stderr


def test_parse_jobs_option_is_checked(job):
    tmp, _, _ = job
    res = testlib.run_tool(testlib.PARSE, "-j", "0", str(tmp / "net.rank0.sqlite"), "-o",
                           os.devnull)
    assert res.returncode == 2


# ---- the Parquet dataset (docs/dataframes.md §4.1) --------------------------------------------

def pyprof_prof(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([testlib.PY, "-m", "pyprof", "prof", *map(str, args)],
                          capture_output=True, text=True, timeout=300, env=testlib.pyprof_env(),
                          cwd=cwd)


@pytest.fixture(scope="module")
def dataset(job, tmp_path_factory):
    _, out, _ = job
    folder = tmp_path_factory.mktemp("dataset") / "ds"
    res = pyprof_prof("--parquet", "--report", "op,module", "-o", folder, out)
    assert res.returncode == 0, res.stderr
    assert "2 ranks (0, 1) written to" in res.stderr
    return folder


def test_dataset_layout_is_partitioned_by_rank(dataset):
    found = sorted(str(p.relative_to(dataset)) for p in dataset.rglob("*") if p.is_file())
    assert found == ["module/rank=0/part-0.parquet", "module/rank=1/part-0.parquet",
                     "op/rank=0/part-0.parquet", "op/rank=1/part-0.parquet",
                     "rank_steps/part-0.parquet",
                     "ranks/rank=0/part-0.parquet", "ranks/rank=1/part-0.parquet",
                     "records/rank=0/part-0.parquet", "records/rank=1/part-0.parquet"]
    import pyarrow.parquet as pq

    meta = json.loads(pq.read_schema(dataset / "records/rank=1/part-0.parquet")
                      .metadata[b"pyprof"])
    assert meta["table"] == "records" and meta["rank"] == 1
    assert meta["source"].endswith("net.rank1.dict")
    # the rank is the partition's, not a column of the file
    assert "rank" not in pq.read_schema(dataset / "records/rank=0/part-0.parquet").names


def test_dataset_records_read_back_equal_the_json_records(job, dataset):
    """The oracle is prof's own JSON of each rank, read with the json module."""
    import pyarrow.dataset as pads

    from pyprof import frames

    _, out, _ = job
    table = pads.dataset(dataset / "records", partitioning="hive").to_table()
    assert set(table.column_names) == set(frames.RECORD_COLUMNS) | {"rank"}
    for rank in (0, 1):
        res = testlib.prof("--json", "-c", "all", str(out / f"net.rank{rank}.dict"))
        expected = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
        mine = table.filter(pads.field("rank") == rank).sort_by("idx").to_pylist()
        assert len(mine) == len(expected) > 200
        for got, want in zip(mine, expected):
            for key, value in want.items():
                if key == "seq" and value is not None:
                    value = int(value)
                assert got[key] == value, (rank, key, got, want)


def test_dataset_reports_equal_prof_reports(job, dataset):
    import pyarrow.dataset as pads

    _, out, _ = job
    ops = pads.dataset(dataset / "op", partitioning="hive").to_table()
    ranks = pads.dataset(dataset / "ranks", partitioning="hive").to_table()
    # one schema over both ranks: each column typed over every rank's rows
    assert ops.schema.field("Self(ns)").type == "int64"
    for rank in (0, 1):
        res = testlib.prof("--report", "op", "--formats", "json",
                           str(out / f"net.rank{rank}.dict"))
        want = testlib.report_rows(res.stdout)
        mine = [r for r in ops.to_pylist() if r["rank"] == rank]
        assert [(r["Op"], r["Direction"], r["Self(ns)"]) for r in mine] == [
            (r["Op"], r["Direction"], r["Self(ns)"]) for r in want]
    want = [r for r in report(out) if r["table"] != "steps"]
    mine = ranks.to_pylist()
    assert sorted((r["table"], r["rank"], r.get("Step"), r.get("Op"), r.get("Payload(B)"))
                  for r in mine) == sorted(
        (r["table"], r["Rank"], r.get("Step"), r.get("Op"), r.get("Payload(B)")) for r in want)
    straggler = pads.dataset(dataset / "rank_steps").to_table().to_pylist()
    assert [r["Straggler"] for r in straggler if r["Step"] == SLOW_STEP] == [SLOW_RANK]


def test_duckdb_time_per_op_across_ranks(job, dataset):
    """examples/query_ranks.py's query, against sums over prof's JSON records."""
    import duckdb

    _, out, _ = job
    res = subprocess.run([testlib.PY, os.path.join(testlib.ROOT, "examples", "query_ranks.py"),
                          str(dataset), "--json", "--top", "0"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["ops"]
    totals = {}
    for rank in (0, 1):
        records = testlib.prof("--json", "-c", "op,kernel,dir,duration",
                               str(out / f"net.rank{rank}.dict")).stdout.splitlines()
        for r in map(json.loads, filter(None, records)):
            key = (r["op"] or r["kernel"], r["dir"])
            totals.setdefault(key, {}).setdefault(rank, 0)
            totals[key][rank] += r["duration"]
    by_op = {(r["op"], r["dir"]): r for r in rows}
    assert set(by_op) == set(totals)
    for key, per_rank in totals.items():
        row = by_op[key]
        assert row["min_ns"] == min(per_rank.values()) and row["max_ns"] == max(per_rank.values())
        assert row["slowest_rank"] in [k for k, v in per_rank.items() if v == row["max_ns"]]
    # the straggler's step, straight from the dataset
    con = duckdb.connect()
    step = con.execute(f"SELECT Straggler FROM read_parquet('{dataset}/rank_steps/*.parquet') "
                       f"WHERE Step = {SLOW_STEP}").fetchall()
    assert step == [(SLOW_RANK,)]


def test_dataset_rewrite_replaces_its_tables_and_keeps_other_files(job, dataset, tmp_path):
    _, out, _ = job
    folder = tmp_path / "ds"
    assert pyprof_prof("--parquet", "--report", "op", "-o", folder, out).returncode == 0
    (folder / "notes.txt").write_text("mine")
    res = pyprof_prof("--parquet", "-c", "op,duration", "-j", "1", "-o", folder,
                      out / "net.rank1.dict", out / "net.rank0.dict")
    assert res.returncode == 0, res.stderr
    names = sorted(p.name for p in folder.iterdir())
    # op/ is from the first command: a table folder is replaced only by one of its own name
    assert names == ["notes.txt", "op", "rank_steps", "ranks", "records"]
    import pyarrow.parquet as pq

    assert pq.read_schema(folder / "records/rank=0/part-0.parquet").names == ["op", "duration"]


def test_dataset_with_every_report(job, tmp_path):
    """--report all: a table folder per report prof makes of one profile, each partitioned by
    rank; the list is pyprof-prof's own (its --help, and its registry: --list-reports) less the
    cross-rank `ranks`."""
    import pyarrow.dataset as pads

    from pyprof import rank_dataset

    _, out, _ = job
    listed = testlib.prof("--help").stdout.split("reports instead of the per-record table:")[1]
    names = [n.strip() for n in listed.split("(")[0].replace("\n", " ").split(",")]
    assert [n for n in names if n != "ranks"] == rank_dataset.per_rank_reports()
    folder = tmp_path / "all"
    res = pyprof_prof("--parquet", "--report", "all", "-c", "op,duration", "-o", folder, out)
    assert res.returncode == 0, res.stderr
    for report in rank_dataset.per_rank_reports():
        assert sorted(p.name for p in (folder / report).iterdir()) == ["rank=0", "rank=1"]
    summary = pads.dataset(folder / "summary", partitioning="hive").to_table().to_pylist()
    for rank in (0, 1):
        want = report_rows(out / f"net.rank{rank}.dict", "summary")
        assert [r["Metric"] for r in summary if r["rank"] == rank] == [r["Metric"] for r in want]


def report_rows(path, name) -> list[dict]:
    res = testlib.prof("--report", name, "--formats", "json", str(path))
    return testlib.report_rows(res.stdout)


def test_dataset_inputs_are_checked(job, tmp_path):
    tmp, out, _ = job
    folder = tmp_path / "ds"
    res = pyprof_prof("--parquet", "-o", folder, out / "net.rank0.dict", out / "net.rank0.dict")
    assert res.returncode == 1 and "rank 0 twice" in res.stderr
    assert not folder.exists()
    res = pyprof_prof("--parquet", "-o", folder, out / "net.rank0.dict",
                      tmp / "net.rank1.sqlite")
    assert res.returncode == 1 and "not a net.dict" in res.stderr
    res = pyprof_prof("--parquet", out, out / "net.rank0.dict")
    assert res.returncode == 2 and "-o DIR" in res.stderr
    res = pyprof_prof("--parquet", "--csv", "-o", folder, out)
    assert res.returncode == 2 and "do not apply" in res.stderr
    res = pyprof_prof("--parquet", "-j", "x", "-o", folder, out)
    assert res.returncode == 2 and "-j x" in res.stderr
    res = pyprof_prof("--parquet", "--report", "nonesuch", "-o", folder, out)
    assert res.returncode == 1 and "nonesuch" in res.stderr and not folder.exists()
    # the launcher's rank-less database: left out with a warning
    testlib.parse_to(str(tmp / "net.sqlite"), str(tmp_path / "net.dict"))
    res = pyprof_prof("--parquet", "-o", folder, tmp_path / "net.dict", out / "net.rank1.dict")
    assert res.returncode == 0 and "no rank in its header" in res.stderr
    assert sorted(p.name for p in (folder / "records").iterdir()) == ["rank=1"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


# ---- the HTML report's Ranks section (docs/report.md) ------------------------------------------

def test_report_ranks_section_matches_the_ranks_report(job, tmp_path):
    """`pyprof report dicts/`: the page is about rank 0 and its Ranks section draws prof's ranks
    report: the stacked bars are each rank's split, the heat map's hottest cell is the slowed
    rank's slowed step; opened in headless Chromium with no console error."""
    import browser

    if not browser.browser_available():
        pytest.skip("no headless browser (scripts/setup.sh installs chromium and selenium)")
    _, out, _ = job
    page = tmp_path / "job.html"
    res = subprocess.run([testlib.PY, "-m", "pyprof", "report", str(out), "-o", str(page)],
                         capture_output=True, text=True, timeout=300, env=testlib.pyprof_env())
    assert res.returncode == 0, res.stderr
    assert "other than Ranks show rank 0" in res.stderr
    rows = report(out)
    per_rank = [r for r in rows if r["table"] == "per_rank"]
    detail = [r for r in rows if r["table"] == "step_detail"]
    d = browser.new_driver()
    try:
        browser.open_page(d, page)
        assert browser.console_errors(d) == []
        bars = d.execute_script(
            "return document.getElementById('fig-ranks').data.map(t => [t.name, "
            "Array.from(t.y)])")
        by_name = dict((name, y) for name, y in bars)
        for key, name in (("Compute(ns)", "compute"), ("Exposed comm(ns)", "exposed communication"),
                          ("Idle(ns)", "idle")):
            assert by_name[name] == pytest.approx([r[key] / 1e6 for r in per_rank])
        heat = d.execute_script("const t = document.getElementById('fig-rank_steps').data[0];"
                                "return [t.z, Array.from(t.x), Array.from(t.y)]")
        z, steps, ranks = heat
        # every rank has every step the report kept (one selection for all ranks)
        assert all(v is not None for row in z for v in row), (z, steps, ranks)
        hottest = max(((i, j) for i in range(len(ranks)) for j in range(len(steps))),
                      key=lambda ij: z[ij[0]][ij[1]])
        assert (ranks[hottest[0]], steps[hottest[1]]) == (f"rank {SLOW_RANK}",
                                                          f"step {SLOW_STEP}")
        cell = next(r for r in detail if (r["Rank"], r["Step"]) == (SLOW_RANK, SLOW_STEP))
        assert z[hottest[0]][hottest[1]] == pytest.approx(
            (cell["Wall(ns)"] - cell["Exposed comm(ns)"]) / 1e6)
        stragglers = d.execute_script(
            "return [...document.querySelectorAll('table[data-table=rank_steps] tbody tr')]"
            ".map(tr => [...tr.children].map(td => td.textContent))")
        assert [r[4] for r in stragglers if r[0] == str(SLOW_STEP)] == [str(SLOW_RANK)]
        d.save_screenshot(str(tmp_path / "ranks.png"))
    finally:
        d.quit()
    # one rank, no --ranks: the section says how to add it
    single = tmp_path / "one.html"
    res = subprocess.run([testlib.PY, "-m", "pyprof", "report", str(out / "net.rank1.dict"),
                          "-o", str(single)], capture_output=True, text=True, timeout=300,
                         env=testlib.pyprof_env())
    assert res.returncode == 0, res.stderr
    assert 'data-placeholder="ranks"' in single.read_text()
    res = subprocess.run([testlib.PY, "-m", "pyprof", "report", str(out / "net.rank1.dict"),
                          "--ranks", str(tmp_path / "nonesuch"), "-o", str(single)],
                         capture_output=True, text=True, timeout=300, env=testlib.pyprof_env())
    assert res.returncode == 1 and "--ranks" in res.stderr and "no such file" in res.stderr


# ---- a real NCCL job's torch.profiler trace (HTA's test data, A100, 2 ranks) ---------------------

NCCL_TRACE = os.path.join(testlib.SHARED_TRACES, "real", "kineto_hta-a100-nccl-fwdbwd.json.gz")


def test_nccl_kineto_trace_collectives_from_record_param_comms(tmp_path):
    """The trace has no record_shapes: each collective's size is only in record_param_comms'
    args ("In msg nelems", "dtype", "Group size"). The oracle is those args read from the trace
    with the json module; parse keeps them and prof's ranks report costs every call by them."""
    import gzip
    from collections import Counter

    if not os.path.exists(NCCL_TRACE):
        pytest.skip("needs ../shared/traces/real")
    with gzip.open(NCCL_TRACE, "rt") as f:
        trace = json.load(f)
    itemsize = {"Float": 4, "Long": 8, "Half": 2, "BFloat16": 2, "Int": 4}
    kinds = {"allreduce": "all_reduce", "broadcast": "broadcast"}
    steps = [e for e in trace["traceEvents"] if e.get("cat") == "user_annotation"
             and e.get("name", "").startswith("ProfilerStep#")]
    assert len(steps) == 3
    first, last = min(e["ts"] for e in steps), max(e["ts"] + e["dur"] for e in steps)
    want = Counter()
    for e in trace["traceEvents"]:
        if e.get("name") == "record_param_comms" and first <= e["ts"] < last:
            a = e["args"]
            if a["Collective name"] == "wait":  # a work's wait(): no kernel of its own
                continue
            want[(kinds[a["Collective name"]], a["In msg nelems"] * itemsize[a["dtype"]],
                  a["Group size"])] += 1
    assert sum(want.values()) == 21 and len(want) > 3
    testlib.parse_to(NCCL_TRACE, str(tmp_path / "nccl.dict"))
    header = lines(tmp_path / "nccl.dict")[0]
    assert (header["rank"], header["world_size"], header["backend"]) == (0, 2, "nccl")
    rows = report("--iterations", "all", tmp_path / "nccl.dict")
    coll = [r for r in rows if r["table"] == "collectives"]
    got = Counter()
    for r in coll:
        assert r["Op"] == "record_param_comms" and r["Group"] == 2
        got[(r["Collective"], r["Payload(B)"], r["Group"])] += r["Calls"]
        algbw = r["Size(B)"] * r["Calls"] / r["Time(ns)"]
        assert r["Algbw GB/s"] == pytest.approx(algbw, rel=1e-3, abs=1e-3)
        assert r["Busbw GB/s"] == pytest.approx(algbw * bus(r["Collective"], 2), rel=1e-3,
                                                abs=1e-3)
    assert got == want
    # the step split on a GPU: NCCL kernels are the communication
    per_rank = next(r for r in rows if r["table"] == "per_rank")
    assert per_rank["Communication(ns)"] > 0 and per_rank["Compute(ns)"] > 0
    assert (per_rank["Compute(ns)"] + per_rank["Exposed comm(ns)"] + per_rank["Idle(ns)"]
            == per_rank["Wall(ns)"])


def bus(kind: str, n: int) -> float:
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n,
            "reduce_scatter": (n - 1) / n}.get(kind, 1.0)
