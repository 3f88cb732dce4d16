"""Test-side reader of the databases `pyprof profile` writes (Nsight Systems layout).

Deliberately independent of pyprof's own C++ code: plain sqlite3 + json, so that the tests
check the database against what a third-party reader of an nsys export would see.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import subprocess

import testlib

PUSH_POP, START_END, MARK, DOMAIN_CREATE = 59, 60, 34, 75


@dataclasses.dataclass
class Range:
    start: int
    end: int | None
    event_type: int
    global_tid: int
    domain: str  # "" for the default domain
    text: str
    color: int | None = None
    marker: dict | None = None  # the parsed JSON of a pyprof marker
    interned: bool = False  # a registered op marker, its "id" and "seq" filled in from the row

    @property
    def tid(self) -> int:
        return self.global_tid & 0xFFFFFF

    @property
    def pid(self) -> int:
        return (self.global_tid >> 24) & 0xFFFFFF

    def encloses(self, other: "Range") -> bool:
        return (self.global_tid == other.global_tid and self.start <= other.start
                and other.end is not None and self.end is not None and other.end <= self.end)


def read_ranges(path: str) -> list[Range]:
    """Every NVTX_EVENTS row (ranges and marks) with text and domain resolved, by start time."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        strings = dict(con.execute("SELECT id, value FROM StringIds"))
        domains = {0: ""}
        for domain_id, text, gtid in con.execute(
                "SELECT domainId, text, globalTid FROM NVTX_EVENTS WHERE eventType = ?",
                (DOMAIN_CREATE,)):
            domains[domain_id] = text
        out = []
        for (start, end, etype, gtid, domain_id, text, text_id, color, category,
             payload) in con.execute(
                "SELECT start, end, eventType, globalTid, domainId, text, textId, color, "
                "category, uint64Value "
                "FROM NVTX_EVENTS WHERE eventType IN (?, ?, ?) ORDER BY start",
                (PUSH_POP, START_END, MARK)):
            if text is None and text_id is not None:
                text = strings[text_id]
            r = Range(start, end, etype, gtid, domains.get(domain_id or 0, "?"), text, color)
            if r.domain == "pyprof":
                r.marker = json.loads(text)  # every pyprof marker must be valid JSON
                if "op" in r.marker and r.marker.get("v", 1) >= 2:
                    # An interned marker (docs/formats.md §1.1, interned form): the call's id
                    # is the uint64 payload and seq + 1 the category; put them where a text
                    # marker has them.
                    r.interned = True
                    r.marker["id"] = payload
                    r.marker["seq"] = (category or 0) - 1
            out.append(r)
        return out
    finally:
        con.close()


def ops(ranges: list[Range]) -> list[Range]:
    """The op markers (ATen ops, backward nodes, record_function scopes), by start time."""
    return [r for r in ranges if r.marker is not None and "op" in r.marker]


def modules(ranges: list[Range]) -> list[Range]:
    return [r for r in ranges if r.marker is not None and "module" in r.marker]


def stats(path: str) -> dict[str, int]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(con.execute("SELECT name, value FROM PYPROF_COLLECTOR_STATS"))
    finally:
        con.close()


def profile(tmp_path, script: str, *args: str, name: str = "net", env: dict | None = None,
            timeout: float = 300, extra_profile_args: tuple = ()) -> subprocess.CompletedProcess:
    """Runs `pyprof profile -o tmp_path/name -- python script args` and returns the result."""
    cmd = [testlib.PY, "-m", "pyprof", "profile", "-o", str(tmp_path / name),
           *extra_profile_args, "--", testlib.PY, script, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=testlib.pyprof_env(env), cwd=testlib.ROOT,
                          preexec_fn=testlib.terminal_signals)
