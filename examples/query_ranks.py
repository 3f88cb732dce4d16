"""Query a folder of many ranks' Parquet with DuckDB: time per op across ranks, each step's
straggler, and bus bandwidth per collective (docs/dataframes.md §4.1).

    pyprof parse -o dicts job/net.rank*.sqlite           # one net.dict per rank, in parallel
    pyprof prof --parquet -o ds dicts                    # ds/records/rank=R/..., ds/ranks/...
    python examples/query_ranks.py ds                    # the tables below, as text
    python examples/query_ranks.py ds --json             # the same, one JSON object

DuckDB (pip install duckdb) runs embedded, in this process, and reads only the columns a query
names; the `rank` column comes from the folder names (rank=R). Dask reads the same files with
dd.read_parquet("ds/records") and gives the same answers (tests/test_ranks_dask.py,
docs/dataframes.md §4.1); Spark's spark.read.parquet("ds/records") takes the layout too, untested.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# Per (op, direction; a record no op claims by its own name): its time summed on each rank, then compared across ranks. An op whose
# slowest rank is far above the median is where one rank loses time the others do not.
OPS_ACROSS_RANKS = """
WITH per_rank AS (
    SELECT coalesce(op, kernel) AS op, dir, rank, sum(duration) AS ns, count(*) AS records
    FROM read_parquet('{records}', hive_partitioning = true)
    GROUP BY ALL
)
SELECT op, dir, count(*) AS ranks, min(ns) AS min_ns, CAST(median(ns) AS BIGINT) AS median_ns,
       max(ns) AS max_ns, arg_max(rank, ns) AS slowest_rank,
       CASE WHEN median(ns) > 0 THEN round(100.0 * (max(ns) - median(ns)) / median(ns), 1)
       END AS max_over_median_pct
FROM per_rank
GROUP BY op, dir
ORDER BY max_ns DESC, op, dir
"""

STEPS = """
SELECT Step AS step, Ranks AS ranks, "Median wall(ns)" AS median_wall_ns,
       "Max wall(ns)" AS max_wall_ns, Straggler AS straggler, "Lag(ns)" AS lag_ns,
       "Others waited(ns)" AS others_waited_ns
FROM read_parquet('{rank_steps}')
ORDER BY step
"""

COLLECTIVES = """
SELECT Collective AS collective, "Size(B)" AS size_bytes, count(*) AS ranks,
       sum(Calls) AS calls, min("Busbw GB/s") AS min_busbw_gbps,
       median("Busbw GB/s") AS median_busbw_gbps, arg_min(rank, "Busbw GB/s") AS slowest_rank
FROM read_parquet('{ranks}', hive_partitioning = true)
WHERE "table" = 'collectives'
GROUP BY collective, size_bytes
ORDER BY collective, size_bytes
"""


def run(folder: str, top: int) -> dict:
    import duckdb

    paths = {"records": os.path.join(folder, "records", "*", "*.parquet"),
             "ranks": os.path.join(folder, "ranks", "*", "*.parquet"),
             "rank_steps": os.path.join(folder, "rank_steps", "*.parquet")}
    con = duckdb.connect()

    def rows(sql: str) -> list[dict]:
        cursor = con.execute(sql.format(**{k: v.replace("'", "''") for k, v in paths.items()}))
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def has(table: str, *columns: str) -> bool:
        """A profile with no steps or no collectives leaves those columns out of its tables."""
        cursor = con.execute(f"SELECT * FROM read_parquet('{paths[table]}', "
                             "hive_partitioning = true) LIMIT 0")
        return set(columns) <= {column[0] for column in cursor.description}

    ops = rows(OPS_ACROSS_RANKS)
    return {"ops": ops[:top] if top else ops,
            "steps": rows(STEPS) if has("rank_steps", "Step", "Straggler") else [],
            "collectives": rows(COLLECTIVES) if has("ranks", "Collective", "Busbw GB/s") else []}


def print_table(title: str, rows: list[dict]) -> None:
    print(title)
    if not rows:
        print("  (none)\n")
        return
    cells = [[("-" if v is None else f"{v:,}" if isinstance(v, int)
               else f"{v:.4g}" if isinstance(v, float) else str(v))
              for v in row.values()] for row in rows]
    names = list(rows[0])
    widths = [max(len(n), *(len(c[i]) for c in cells)) for i, n in enumerate(names)]
    print("  ".join(n.ljust(w) for n, w in zip(names, widths)))
    for c in cells:
        # text left, numbers right
        print("  ".join(v.rjust(w) if v[:1].isdigit() or v[:1] == "-" else v.ljust(w)
                        for v, w in zip(c, widths)))
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="the folder `pyprof prof --parquet -o DIR` wrote")
    parser.add_argument("--top", type=int, default=20,
                        help="ops with the most time on their slowest rank (0: all)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.dataset, "records")):
        print(f"query_ranks: {args.dataset} holds no records/ folder (write one with "
              "pyprof prof --parquet -o DIR RANK.dict...)", file=sys.stderr)
        return 1
    result = run(args.dataset, args.top)
    if args.json:
        print(json.dumps(result))
        return 0
    print_table("time per op across ranks (ns; the op's total on each rank)", result["ops"])
    print_table("steps (straggler: the rank the others waited for)", result["steps"])
    print_table("collectives (bus bandwidth across ranks)", result["collectives"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
