"""Prints what a pyprof database holds: a stopgap view for the demo until `pyprof parse` and
`pyprof prof` (issues #3, #4) exist. Reads the database with plain SQL, as any nsys-export
reader would."""

import json
import sqlite3
import sys

OPS_BY_TIME = """
WITH dom AS (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'pyprof'),
marker AS (
  SELECT e.start, e."end", COALESCE(e.text, s.value) AS msg
  FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
  WHERE e.eventType = 59 AND e.domainId IN (SELECT domainId FROM dom))
SELECT json_extract(msg, '$.op') AS op, json_extract(msg, '$.scope') AS scope,
       COUNT(*) AS calls, SUM("end" - start) AS total_ns
FROM marker WHERE json_extract(msg, '$.op') IS NOT NULL
GROUP BY op, scope ORDER BY total_ns DESC LIMIT ?"""

MODULES_BY_TIME = """
WITH dom AS (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'pyprof')
SELECT json_extract(s.value, '$.module') AS module, json_extract(s.value, '$.type') AS type,
       COUNT(*) AS calls, SUM(e."end" - e.start) AS total_ns
FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId
WHERE e.eventType = 59 AND e.domainId IN (SELECT domainId FROM dom)
  AND json_extract(s.value, '$.module') IS NOT NULL
GROUP BY module ORDER BY module"""


def main(path: str, top: int = 12) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    meta = dict(con.execute("SELECT name, value FROM META_DATA_EXPORT"))
    stats = dict(con.execute("SELECT name, value FROM PYPROF_COLLECTOR_STATS"))
    ranges = con.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)").fetchone()[0]
    print(f"{path}: written by {meta.get('EXPORT_PRODUCT_NAME')} {meta.get('EXPORT_PRODUCT_VERSION')}, "
          f"{ranges} NVTX ranges, {stats.get('events_dropped', 0)} events dropped")
    print(f"\nTop {top} ops by inclusive CPU time (FLOPs, bytes and GPU kernels come with parse/prof):")
    print(f"  {'op':<44} {'scope':<9} {'calls':>6} {'total us':>10} {'avg us':>9}")
    for op, scope, calls, total in con.execute(OPS_BY_TIME, (top,)):
        print(f"  {op[:44]:<44} {scope:<9} {calls:>6} {total / 1e3:>10.1f} {total / 1e3 / calls:>9.1f}")
    print("\nModules (forward, inclusive CPU time):")
    print(f"  {'module':<30} {'type':<16} {'calls':>6} {'total us':>10}")
    for module, mtype, calls, total in con.execute(MODULES_BY_TIME):
        print(f"  {module[:30]:<30} {mtype[:16]:<16} {calls:>6} {total / 1e3:>10.1f}")
    sample = con.execute(
        "SELECT text FROM NVTX_EVENTS WHERE text LIKE '{\"v\":1,\"op\":\"aten::conv2d\"%' LIMIT 1"
    ).fetchone()
    if sample:
        print("\nOne op marker, as recorded:")
        print("  " + json.dumps(json.loads(sample[0]), separators=(",", ":"))[:600])
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: db_summary.py NAME.sqlite")
    sys.exit(main(sys.argv[1]))
