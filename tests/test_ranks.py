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
    out = tmp / "dicts"
    parsed = testlib.run_tool(testlib.PARSE, "-j", "2", str(tmp / "net.rank0.sqlite"),
                              str(tmp / "net.rank1.sqlite"), "-o", str(out), timeout=300)
    assert parsed.returncode == 0, parsed.stderr
    return tmp, out, parsed.stderr


def lines(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def report(*args) -> list[dict]:
    res = testlib.prof("--report", "ranks", "--formats", "json", *map(str, args))
    return [json.loads(line) for line in res.stdout.splitlines() if line.strip()]


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
    per_rank = {r["Rank"]: r for r in rows if r["report"] == "ranks"}
    steps = {r["Step"]: r for r in rows if r["report"] == "rank steps"}
    detail = {(r["Rank"], r["Step"]): r for r in rows if r["report"] == "rank step detail"}
    assert set(per_rank) == {0, 1}
    slow = steps[SLOW_STEP]
    assert slow["Straggler"] == str(SLOW_RANK)
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
    rows = [r for r in everything if r["report"] == "collectives"]
    steps = {r["Rank"]: r["Steps"] for r in everything if r["report"] == "ranks"}
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
