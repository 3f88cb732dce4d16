"""A fleet's Parquet dataset (docs/dataframes.md §4.1) read by a distributed engine: Dask's
dataframe on a local cluster of two worker processes, reading only the columns a query names
plus the `rank` partition column, gives the same answers as DuckDB (examples/query_ranks.py's
queries) and as the numbers planted in the profiles.

The job is 16 ranks of a CPU training loop written as parse writes it (docs/formats.md §3,
`"records": "op"`): per step, each rank computes (`aten::mm`, `aten::relu`) and then waits in an
all-reduce until the step ends (`c10d::allreduce_` and gloo's span on its own thread). Rank R's
mm takes 1.5 ms + R x 10 us and its relu 0.5 ms + R x 1 us, so every op has one slowest rank; in
step 2 rank 11's mm takes 5 ms longer, which makes it that step's straggler by a known lag."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import testlib

pytestmark = pytest.mark.slow  # a Dask cluster of two worker processes: ~40 s on two busy cores

RANKS, STEPS, SLOW_RANK, SLOW_STEP = 16, 4, 11, 2
STEP_NS = 10_000_000        # every step of every rank: 10 ms
BASE_NS = 1_000_000          # the first step starts 1 ms into the capture
MM_NS, RELU_NS, SLOW_NS = 1_500_000, 500_000, 5_000_000
MAIN_TID, GLOO_TID = 100, 200


def mm_ns(rank: int, step: int) -> int:
    return MM_NS + rank * 10_000 + (SLOW_NS if (rank, step) == (SLOW_RANK, SLOW_STEP) else 0)


def relu_ns(rank: int) -> int:
    return RELU_NS + rank * 1_000


def busy_ns(rank: int, step: int) -> int:
    """The rank's time outside communication in the step: its compute (it is never idle)."""
    return mm_ns(rank, step) + relu_ns(rank)


def rank_dict(rank: int) -> list[dict]:
    """Rank `rank`'s net.dict (compact form, no args), line by line."""
    steps = [{"index": i, "name": f"step {i}", "start": BASE_NS + i * STEP_NS,
              "end": BASE_NS + (i + 1) * STEP_NS} for i in range(STEPS)]
    lines: list[dict] = [{
        "pyprof_dict": 2, "source": f"net.rank{rank}.sqlite", "format": "pyprof", "records": "op",
        "rank": rank, "world_size": RANKS,
        "iterations": {"rule": "user_range", "range": "step N", "count": STEPS, "steps": steps}}]
    pid, op_id = 1000 + rank, 0
    comm = []
    for step in range(STEPS):
        start = BASE_NS + step * STEP_NS
        spans = [("aten::mm", mm_ns(rank, step)), ("aten::relu", relu_ns(rank))]
        spans.append(("c10d::allreduce_", STEP_NS - sum(d for _, d in spans)))
        for name, duration in spans:
            op_id += 1
            lines.append({"kind": "op", "name": name, "start": start, "duration": duration,
                          "self_duration": duration, "pid": pid, "rank": rank, "tid": MAIN_TID,
                          "id": op_id, "step": step, "op": name, "dir": "fprop", "op_id": op_id,
                          "dialect": "pyprof", "seq": -1, "sub": 0, "instance": op_id})
            if name.startswith("c10d::"):
                comm.append({"kind": "comm", "name": "gloo:all_reduce", "start": start,
                             "duration": duration, "pid": pid, "rank": rank, "tid": GLOO_TID,
                             "step": step})
            start += duration
    return lines + comm


def pyprof_prof(*args) -> subprocess.CompletedProcess:
    return subprocess.run([testlib.PY, "-m", "pyprof", "prof", *map(str, args)],
                          capture_output=True, text=True, timeout=300, env=testlib.pyprof_env())


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The 16 ranks' net.dicts and their Parquet dataset."""
    tmp = tmp_path_factory.mktemp("fleet")
    dicts = tmp / "dicts"
    dicts.mkdir()
    for rank in range(RANKS):
        with open(dicts / f"net.rank{rank}.dict", "w") as f:
            f.writelines(json.dumps(line, separators=(",", ":")) + "\n" for line in rank_dict(rank))
    dataset = tmp / "ds"
    res = pyprof_prof("--parquet", "-j", "2", "-o", dataset, dicts)
    assert res.returncode == 0, res.stderr
    assert f"{RANKS} ranks (0, 1, 2," in res.stderr, res.stderr
    return dicts, dataset


@pytest.fixture(scope="module")
def dask_client():
    """A local Dask cluster: a scheduler and two worker processes, one thread each."""
    import distributed  # scripts/setup.sh installs it, with dask[dataframe]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def read_columns(dataset, table: str, columns: list[str]):
    """dd.read_parquet of one table, only `columns` and the partition column `rank` (int)."""
    import dask.dataframe as dd

    frame = dd.read_parquet(str(dataset / table), columns=[*columns, "rank"])
    return frame.assign(rank=frame["rank"].astype("int64"))


def duckdb_rows(sql: str) -> list[tuple]:
    import duckdb

    return duckdb.connect().execute(sql).fetchall()


def test_the_workers_are_processes_of_their_own(dask_client):
    info = dask_client.scheduler_info()["workers"]
    assert len(info) == 2
    pids = set(dask_client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids


def test_time_per_op_across_ranks(fleet, dask_client):
    """examples/query_ranks.py's first query, in Dask: per (op, dir) the time on each rank, then
    across ranks the min, median, max and the slowest rank."""
    _, dataset = fleet
    records = read_columns(dataset, "records", ["op", "kernel", "dir", "duration"])
    assert set(records.columns) == {"op", "kernel", "dir", "duration", "rank"}
    records = records.assign(op=records["op"].fillna(records["kernel"]))
    per_rank = (records.groupby(["op", "dir", "rank"], dropna=False)["duration"].sum()
                .reset_index())
    across = per_rank.groupby(["op", "dir"], dropna=False)["duration"]
    stats = across.agg(["min", "max", "count"]).compute()
    median = across.median(shuffle_method="tasks").compute()
    # arg_max: each (op, dir)'s rows whose time is its max (one per op: the ranks differ)
    top = per_rank.merge(stats.reset_index()[["op", "dir", "max"]], on=["op", "dir"])
    top = top[top["duration"] == top["max"]].compute()
    dask_rows = {(op, d): (int(r["min"]), int(median[(op, d)]), int(r["max"]), int(r["count"]))
                 for (op, d), r in stats.iterrows()}
    slowest_rank = {(r.op, r.dir): int(r.rank) for r in top.itertuples()}

    import sys

    sys.path.insert(0, os.path.join(testlib.ROOT, "examples"))
    try:
        import query_ranks
    finally:
        sys.path.pop(0)
    duck = query_ranks.run(str(dataset), 0)["ops"]
    assert {(r["op"], r["dir"]): (r["min_ns"], r["median_ns"], r["max_ns"], r["ranks"])
            for r in duck} == dask_rows
    assert {(r["op"], r["dir"]): r["slowest_rank"] for r in duck} == slowest_rank

    # by hand: mm's total on rank R is 4 steps of 1.5 ms + R x 10 us, plus 5 ms on rank 11
    def mm_total(rank):
        return sum(mm_ns(rank, step) for step in range(STEPS))

    totals = sorted(mm_total(rank) for rank in range(RANKS))
    assert dask_rows[("aten::mm", "fprop")] == (
        mm_total(0), (totals[7] + totals[8]) // 2, mm_total(SLOW_RANK), RANKS)
    assert slowest_rank[("aten::mm", "fprop")] == SLOW_RANK
    assert dask_rows[("aten::relu", "fprop")] == (
        STEPS * relu_ns(0), STEPS * (relu_ns(7) + relu_ns(8)) // 2, STEPS * relu_ns(15), RANKS)
    assert slowest_rank[("aten::relu", "fprop")] == RANKS - 1
    # the all-reduce waits longest on the fastest rank
    assert slowest_rank[("c10d::allreduce_", "fprop")] == 0


def test_per_rank_totals(fleet, dask_client):
    _, dataset = fleet
    records = read_columns(dataset, "records", ["duration"])
    dask_totals = records.groupby("rank")["duration"].agg(["count", "sum"]).compute()
    mine = {int(rank): (int(r["count"]), int(r["sum"])) for rank, r in dask_totals.iterrows()}
    duck = duckdb_rows(
        f"SELECT rank, count(*), sum(duration) FROM read_parquet('{dataset}/records/*/*.parquet',"
        " hive_partitioning = true) GROUP BY rank ORDER BY rank")
    assert mine == {rank: (count, total) for rank, count, total in duck}
    # by hand: 3 ops a step, and a step's ops fill it exactly
    assert mine == {rank: (3 * STEPS, STEPS * STEP_NS) for rank in range(RANKS)}


# Per step, the rank busiest outside exposed communication, and by how much it exceeds the
# median of the other ranks: docs/prof.md §6's straggler, from the `rank step detail` rows.
STRAGGLER_SQL = """
WITH busy AS (
    SELECT Step AS step, rank, "Wall(ns)" - "Exposed comm(ns)" AS busy
    FROM read_parquet('{ranks}/*/*.parquet', hive_partitioning = true)
    WHERE "table" = 'step_detail'),
top AS (SELECT step, arg_max(rank, busy) AS rank, max(busy) AS busy FROM busy GROUP BY step)
SELECT top.step, top.rank, CAST(top.busy - median(busy.busy) AS BIGINT) AS lag
FROM top JOIN busy ON busy.step = top.step AND busy.rank <> top.rank
GROUP BY top.step, top.rank, top.busy ORDER BY top.step
"""


def test_straggler_per_step(fleet, dask_client):
    import numpy as np
    import pandas as pd

    _, dataset = fleet
    detail = read_columns(dataset, "ranks", ["table", "Step", "Wall(ns)", "Exposed comm(ns)"])
    detail = detail[detail["table"] == "step_detail"]
    busy = detail.assign(busy=detail["Wall(ns)"] - detail["Exposed comm(ns)"])[
        ["Step", "rank", "busy"]]

    def straggler(step: pd.DataFrame) -> pd.Series:
        busy, ranks = step["busy"].to_numpy(), step["rank"].to_numpy()
        top = int(busy.argmax())
        others = np.delete(busy, top)
        return pd.Series({"rank": int(ranks[top]), "lag": int(busy[top] - np.median(others))})

    per_step = (busy.groupby("Step").apply(straggler, meta={"rank": "int64", "lag": "int64"})
                .compute().sort_index())
    dask_rows = [(int(step), int(r["rank"]), int(r["lag"])) for step, r in per_step.iterrows()]
    duck = duckdb_rows(STRAGGLER_SQL.format(ranks=dataset / "ranks"))
    assert dask_rows == [tuple(row) for row in duck]
    # by hand: in step 2 rank 11 is 5 ms slower than it would be, and the median of the other
    # 15 ranks is rank 7's; in the others the last rank is the busiest, by little
    assert dask_rows[SLOW_STEP] == (SLOW_STEP, SLOW_RANK,
                                    busy_ns(SLOW_RANK, SLOW_STEP) - busy_ns(7, SLOW_STEP))
    for step, rank, lag in dask_rows:
        if step != SLOW_STEP:
            assert (rank, lag) == (RANKS - 1, busy_ns(RANKS - 1, step) - busy_ns(7, step))
    # prof's own verdict (rank_steps) names the same straggler, and no other
    import pyarrow.parquet as pq

    steps = pq.read_table(dataset / "rank_steps").to_pylist()
    named = {r["Step"]: (r["Straggler"], r["Lag(ns)"]) for r in steps if r["Straggler"] is not None}
    assert named == {SLOW_STEP: (SLOW_RANK, dask_rows[SLOW_STEP][2])}
