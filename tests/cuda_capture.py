"""Reading a pyprof CUDA capture with sqlite3 alone: the independent oracle of the GPU tests.

tests/test_gpu_capture.py uses it on databases recorded on a GPU during the run;
tests/test_h100_capture.py on the real H100 capture kept in tests/data/h100 (CI has no GPU).
None of pyprof's own code reads the database here.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
import sqlite3

import pyprof_db
from pyprof_db import PUSH_POP, Range

PID_MASK = 0xFFFFFFFFFF000000  # globalTid -> globalPid (tid bits cleared)


@dataclasses.dataclass
class Capture:
    """What one database holds, read with sqlite3 only."""
    path: str
    tables: set
    strings: dict  # StringIds
    meta: dict  # META_DATA_CAPTURE
    stats: dict  # PYPROF_COLLECTOR_STATS
    kernels: list  # CUPTI_ACTIVITY_KIND_KERNEL rows as dicts
    runtime: list  # CUPTI_ACTIVITY_KIND_RUNTIME rows as dicts
    ranges: list  # NVTX rows (pyprof_db.Range)


def rows(con, table):
    cur = con.execute(f"SELECT * FROM {table}")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row)) for row in cur]


def read_capture(path) -> Capture:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

        def table(name):
            return rows(con, name) if name in tables else []

        strings = {r["id"]: r["value"] for r in table("StringIds")}
        meta = {r["name"]: r["value"] for r in table("META_DATA_CAPTURE")}
        stats = {r["name"]: r["value"] for r in table("PYPROF_COLLECTOR_STATS")}
        kernels = table("CUPTI_ACTIVITY_KIND_KERNEL")
        runtime = table("CUPTI_ACTIVITY_KIND_RUNTIME")
    finally:
        con.close()
    return Capture(str(path), tables, strings, meta, stats, kernels, runtime,
                   pyprof_db.read_ranges(str(path)))


def kernel_name(cap: Capture, k: dict) -> str:
    for col in ("shortName", "demangledName"):
        if k.get(col) is not None:
            return cap.strings.get(k[col], f"<StringIds {k[col]}?>")
    return "?"


def api_name(cap: Capture, r: dict) -> str:
    return re.sub(r"_v\d{4,}$", "", cap.strings.get(r["nameId"], f"<StringIds {r['nameId']}?>"))


def launch_calls(cap: Capture) -> dict:
    """(globalPid, correlationId) -> the API call with that id in that process. When a runtime
    call and a driver call it made share the id, the outer one (earliest start) is kept."""
    out = {}
    for r in cap.runtime:
        if r.get("correlationId") is None or r.get("globalTid") is None:
            continue
        key = (r["globalTid"] & PID_MASK, r["correlationId"])
        if key not in out or r["start"] < out[key]["start"]:
            out[key] = r
    return out


def pid_tid(global_tid: int) -> tuple[int, int]:
    return (global_tid >> 24) & 0xFFFFFF, global_tid & 0xFFFFFF


def is_op_range(r: Range) -> bool:
    return (r.event_type == PUSH_POP and r.domain == "pyprof" and r.marker is not None
            and "op" in r.marker and r.end is not None)


class OpRanges:
    """The op ranges of each thread, for "which op ranges contain [start, end]" queries."""

    def __init__(self, ranges):
        self.by_tid = {}
        for r in ranges:
            if is_op_range(r):
                self.by_tid.setdefault(r.global_tid, []).append(r)
        self.starts, self.max_end = {}, {}
        for gtid, rs in self.by_tid.items():
            rs.sort(key=lambda r: (r.start, -r.end))  # parents before children
            self.starts[gtid] = [r.start for r in rs]
            acc, max_end = -1, []
            for r in rs:
                acc = max(acc, r.end)
                max_end.append(acc)
            self.max_end[gtid] = max_end  # max end of rs[0..i]: stops the backward scan

    def enclosing(self, gtid: int, start: int, end: int) -> list:
        """The op ranges of thread gtid that contain [start, end], innermost first."""
        rs = self.by_tid.get(gtid)
        if not rs:
            return []
        i = bisect.bisect_right(self.starts[gtid], start) - 1
        max_end = self.max_end[gtid]
        out = []
        while i >= 0 and max_end[i] >= end:
            if rs[i].end >= end:
                out.append(rs[i])
            i -= 1
        return out


def percent(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100.0 * part / whole:.2f}%)" if whole else "0/0"
