"""Builder for synthetic Nsight-Systems-layout SQLite databases (tests and benchmarks of `parse`).

Real exports cover few of the cases `parse` must handle (start/end ranges ending on another
thread, marks, unclosed ranges, rows out of launch order, several processes whose CUPTI
correlation ids collide, driver-API launches, graph launches, old layouts...). This module
writes such databases with the exact table and column names, column order, types and enum
numbering of `nsys export --type sqlite` (facts: ../shared/reference/trace-formats.md §1; the
2024.6 DDL is reproduced in `_TABLES` below), stdlib only.

Model
-----
* A `SynthDb` holds processes, threads, GPUs and the rows written so far. Nothing is random:
  the same calls give the same file, byte for byte (`shuffle_rows` takes an explicit seed).
* A `Thread` has its own CPU clock (`t.now`, int ns relative to the capture start, like nsys).
  Every call that stands for CPU work advances it: an NVTX push/pop costs `SynthDb.push_cost` /
  `pop_cost` ns, a CUDA API call `api_duration` ns (defaults below), `t.advance(ns)` anything else.
* GPU work is placed on a per-(process, device, stream) timeline: an activity starts at
  `max(API end + SynthDb.launch_latency, end of the previous activity on that stream)`, so a
  kernel always starts after its launch call returned and kernels of one stream never overlap
  (unless `gpu_start=` says otherwise).
* CUPTI correlation ids are counted **per process** and start at `SynthDb.first_correlation_id`
  in every process, as in real multi-process nsys exports (a reader that forgets the
  `globalPid` condition of the kernel/API join then mixes processes up). Every API call, not only
  launches, takes the next id (as CUPTI does).
* NVTX rows are appended when a range ends (push/pop: at the pop; start/end: at `end()`), as
  nsys and pyprof's collector write them; ranges still open at `save()` get `end` NULL
  (pyprof's collector), or the session's end after `end_session(at)` (Nsight Systems).
* Strings used by id (kernel names, API names, registered NVTX strings, thread names) go to
  `StringIds`, deduplicated, ids from 1 in order of first use.
* Tables are created only when they get a row, like nsys; `create_tables=` forces empty ones.
  No indexes are created (nsys creates none).
* `globalTid = (1 << 48) | (pid << 24) | tid`, `globalPid` = the same with tid 0.

Layouts (`SynthDb(layout=...)`): "2020.3", "2020.5", "2021.2", "2022.1", "2023.1", "2023.3",
"2024.6" (default). What each adds (trace-formats.md §1.2):

* 2020.5: KERNEL.sharedMemoryLimitConfig, RUNTIME.callchainId, MEMCPY.migrationCause; a small
  TARGET_INFO_GPU(vmId, deviceId, name, busLocation, isDiscrete) beside TARGET_INFO_CUDA_GPU.
* 2021.2: the full TARGET_INFO_GPU; no TARGET_INFO_CUDA_GPU.
* 2022.1: KERNEL.mangledName, MEMCPY.virtualAddress, PROCESSES, TARGET_INFO_SESSION_START_TIME,
  metadata table EXPORT_META_DATA.
* 2023.3: the metadata table renamed META_DATA_EXPORT (META_DATA_CAPTURE beside it).
* 2024.6: greenContextId (KERNEL, MEMCPY, MEMSET, SYNCHRONIZATION), NVTX_EVENTS.binaryData
  (20 columns).

Assumptions where no public export shows the table: NVTX_EVENTS before 2022.1 is given the
2022.1 19-column set; TARGET_INFO_CUDA_GPU's columns follow CUPTI's device record (only `name`,
`deviceId`, `numMultiprocessors`, `computeCapabilityMajor/Minor`, `coreClockRate`,
`numThreadsPerWarp`, `maxWarpsPerMultiprocessor`, `maxIPC` are seen used by public readers);
units as the real 2020.3 export holds them: coreClockRate kHz, globalMemoryBandwidth KB/s,
globalMemorySize MiB.
Old exports claim "all fields NOT NULL, default value exported instead"; this builder writes
NULLs the same way in every layout.

Example::

    db = SynthDb()
    t = db.thread(pid=100, tid=100)
    with t.pyprof_module("LeNet.fc1", "Linear"):
        with t.pyprof_op("aten::linear", seq=3, args={"input": tensor([8, 84])}):
            with t.pyprof_op("aten::addmm", seq=3):
                corr = t.launch("void gemv2T_kernel<float, 128>(...)", duration=4000)
    db.save(tmp_path / "x.sqlite")

`SynthDb.streaming(path, ...)` writes rows to the file in chunks as they are made (for
million-kernel benchmark files); row-reordering helpers are not available there.

Rows are buffered as tuples in the 2024.6 column order of their table (`columns(table)`,
`db.rows(table)`) and projected on the layout when written; `finish()` adds the rows that
exist only at the end (thread/process names, GPUs, metadata, StringIds). `RowWriter` writes
such tuples to any connection and leaves out of each INSERT the columns that are NULL in all
its rows (Python's sqlite3 spends ~0.4 us per bound parameter), so callers that make rows
themselves (benchmarks/make_parse_db.py replays a simulated period) get the same layout.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

__all__ = [
    "LAYOUTS", "SynthDb", "Thread", "StartEndRange", "tensor", "global_tid", "global_pid",
    "short_kernel_name", "PUSH_POP", "START_END", "MARK", "DOMAIN_CREATE", "DOMAIN_DESTROY",
    "CATEGORY", "THREAD_NAME", "MEMCPY_KINDS", "MEM_KINDS", "RowWriter", "columns",
    "table_columns", "layout_tables",
]

LAYOUTS = ("2020.3", "2020.5", "2021.2", "2022.1", "2023.1", "2023.3", "2024.6")

# NVTX_EVENTS.eventType (ENUM_NSYS_EVENT_TYPE numbering).
CATEGORY, MARK, THREAD_NAME, PUSH_POP, START_END, DOMAIN_CREATE, DOMAIN_DESTROY = (
    33, 34, 39, 59, 60, 75, 76)

# ENUM_CUDA_MEMCPY_OPER (nsys numbering = CUPTI's for 0-10).
MEMCPY_KINDS = {"unknown": 0, "HtoD": 1, "DtoH": 2, "HtoA": 3, "AtoH": 4, "AtoA": 5, "AtoD": 6,
                "DtoA": 7, "DtoD": 8, "HtoH": 9, "PtoP": 10, "UVM_HtoD": 11, "UVM_DtoH": 12,
                "UVM_DtoD": 13}
# ENUM_CUDA_MEM_KIND (nsys numbering: CUPTI - 1, unknown = 7).
MEM_KINDS = {"pageable": 0, "pinned": 1, "device": 2, "array": 3, "managed": 4,
             "device_static": 5, "managed_static": 6, "unknown": 7}
# (src, dst) memory kinds a copy kind gets when the caller names none.
_DEFAULT_COPY_MEM = {"HtoD": ("pageable", "device"), "DtoH": ("device", "pageable"),
                     "DtoD": ("device", "device"), "HtoH": ("pageable", "pageable"),
                     "PtoP": ("device", "device")}

# Payload column for a Python value given as `payload=`.
_PAYLOAD_COLUMNS = ("uint64Value", "int64Value", "doubleValue", "uint32Value", "int32Value",
                    "floatValue")

_NVTX_ENUM_ROWS = [(33, "NvtxCategory"), (34, "NvtxMark"), (35, "NvtxPushRange"),
                   (36, "NvtxPopRange"), (37, "NvtxStartRange"), (38, "NvtxEndRange"),
                   (39, "NvtxThread"), (59, "NvtxPushPopRange"), (60, "NvtxStartEndRange"),
                   (75, "NvtxDomainCreate"), (76, "NvtxDomainDestroy")]

# Metadata rows an export of each layout carries (product version, export schema version).
_EXPORT_VERSIONS = {"2022.1": ("2022.1.3.3", "2.9.1"), "2023.1": ("2023.1.2.43", "3.1.2"),
                    "2023.3": ("2023.3.3.42", "3.4.0"), "2024.6": ("2024.6.2.225", "3.16.1")}


def _v(layout: str) -> tuple[int, int]:
    year, minor = layout.split(".")
    return int(year), int(minor)


# ------------------------------------------------------------------------------------------
# Schema: every table as nsys 2024.6 declares it (column order, type, NOT NULL), each column
# tagged with the first layout that has it (None: all). Tables tagged with the layouts that
# have them. Rows are kept as tuples in this (superset) column order and projected on save.
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Col:
    name: str
    decl: str
    since: str | None = None


@dataclass(frozen=True)
class _Table:
    name: str
    cols: tuple[_Col, ...]
    since: str | None = None
    until: str | None = None  # last layout that has it (inclusive)
    pk: str | None = None      # column declared PRIMARY KEY


def _cols(spec: str) -> tuple[_Col, ...]:
    """'name decl [@since]' per line."""
    out = []
    for line in spec.strip().splitlines():
        line = line.strip()
        since = None
        if "@" in line:
            line, since = line.rsplit("@", 1)
            since = since.strip()
        name, decl = line.split(None, 1)
        out.append(_Col(name, decl.strip(), since))
    return tuple(out)


_I, _INN, _T, _TNN, _R = "INTEGER", "INTEGER   NOT NULL", "TEXT", "TEXT      NOT NULL", "REAL"

_TABLES: dict[str, _Table] = {t.name: t for t in [
    _Table("StringIds", _cols(f"""
        id {_INN}
        value {_TNN}"""), pk="id"),
    _Table("ThreadNames", _cols(f"""
        nameId {_INN}
        priority {_I}
        globalTid {_I}""")),
    _Table("PROCESSES", _cols(f"""
        globalPid {_I}
        pid {_I}
        name {_T}"""), since="2022.1"),
    _Table("TARGET_INFO_SESSION_START_TIME", _cols(f"""
        utcEpochNs {_I}
        utcTime {_T}
        localTime {_T}"""), since="2022.1"),
    _Table("ANALYSIS_DETAILS", _cols(f"""
        globalVid {_INN}
        duration {_INN}
        startTime {_INN}
        stopTime {_INN}"""), since="2022.1"),
    _Table("EXPORT_META_DATA", _cols(f"""
        name {_TNN}
        value {_T}"""), since="2022.1", until="2023.1"),
    _Table("META_DATA_EXPORT", _cols(f"""
        name {_TNN}
        value {_T}"""), since="2023.3"),
    _Table("META_DATA_CAPTURE", _cols(f"""
        name {_TNN}
        value {_T}"""), since="2023.3"),
    _Table("TARGET_INFO_CUDA_GPU", _cols(f"""
        vmId {_INN}
        name {_T}
        pciBusId {_T}
        globalMemoryBandwidth {_I}
        globalMemorySize {_I}
        constantMemorySize {_I}
        l2CacheSize {_I}
        numThreadsPerWarp {_I}
        coreClockRate {_I}
        numMemcpyEngines {_I}
        numMultiprocessors {_I}
        maxIPC {_I}
        maxWarpsPerMultiprocessor {_I}
        maxBlocksPerMultiprocessor {_I}
        maxSharedMemoryPerMultiprocessor {_I}
        maxRegistersPerMultiprocessor {_I}
        maxRegistersPerBlock {_I}
        maxSharedMemoryPerBlock {_I}
        maxThreadsPerBlock {_I}
        maxBlockDimX {_I}
        maxBlockDimY {_I}
        maxBlockDimZ {_I}
        maxGridDimX {_I}
        maxGridDimY {_I}
        maxGridDimZ {_I}
        computeCapabilityMajor {_I}
        computeCapabilityMinor {_I}
        deviceId {_I}
        pid {_I}"""), until="2020.5"),
    _Table("TARGET_INFO_GPU_SMALL", _cols(f"""
        vmId {_INN}
        deviceId {_INN}
        name {_T}
        busLocation {_T}
        isDiscrete {_I}"""), since="2020.5", until="2020.5"),
    _Table("TARGET_INFO_GPU", _cols(f"""
        vmId {_INN}
        id {_INN}
        name {_T}
        busLocation {_T}
        isDiscrete {_I}
        l2CacheSize {_I}
        totalMemory {_I}
        memoryBandwidth {_I}
        clockRate {_I}
        smCount {_I}
        pwGpuId {_I}
        uuid {_T}
        luid {_I}
        chipName {_T}
        cuDevice {_I}
        ctxswDevPath {_T}
        ctrlDevPath {_T}
        revision {_I}
        nodeMask {_I}
        constantMemory {_I}
        maxIPC {_I}
        maxRegistersPerBlock {_I}
        maxShmemPerBlock {_I}
        maxShmemPerBlockOptin {_I}
        maxShmemPerSm {_I}
        maxRegistersPerSm {_I}
        threadsPerWarp {_I}
        asyncEngines {_I}
        maxWarpsPerSm {_I}
        maxBlocksPerSm {_I}
        maxThreadsPerBlock {_I}
        maxBlockDimX {_I}
        maxBlockDimY {_I}
        maxBlockDimZ {_I}
        maxGridDimX {_I}
        maxGridDimY {_I}
        maxGridDimZ {_I}
        computeMajor {_I}
        computeMinor {_I}
        smMajor {_I}
        smMinor {_I}"""), since="2021.2"),
    _Table("CUPTI_ACTIVITY_KIND_KERNEL", _cols(f"""
        start {_INN}
        end {_INN}
        deviceId {_INN}
        contextId {_INN}
        greenContextId {_I} @2024.6
        streamId {_INN}
        correlationId {_I}
        globalPid {_I}
        demangledName {_INN}
        shortName {_INN}
        mangledName {_I} @2022.1
        launchType {_I}
        cacheConfig {_I}
        registersPerThread {_INN}
        gridX {_INN}
        gridY {_INN}
        gridZ {_INN}
        blockX {_INN}
        blockY {_INN}
        blockZ {_INN}
        staticSharedMemory {_INN}
        dynamicSharedMemory {_INN}
        localMemoryPerThread {_INN}
        localMemoryTotal {_INN}
        gridId {_INN}
        sharedMemoryExecuted {_I}
        graphNodeId {_I}
        sharedMemoryLimitConfig {_I} @2020.5""")),
    _Table("CUPTI_ACTIVITY_KIND_MEMCPY", _cols(f"""
        start {_INN}
        end {_INN}
        deviceId {_INN}
        contextId {_INN}
        greenContextId {_I} @2024.6
        streamId {_INN}
        correlationId {_I}
        globalPid {_I}
        bytes {_INN}
        copyKind {_INN}
        deprecatedSrcId {_I}
        srcKind {_I}
        dstKind {_I}
        srcDeviceId {_I}
        srcContextId {_I}
        dstDeviceId {_I}
        dstContextId {_I}
        migrationCause {_I} @2020.5
        graphNodeId {_I}
        virtualAddress {_I} @2022.1""")),
    _Table("CUPTI_ACTIVITY_KIND_MEMSET", _cols(f"""
        start {_INN}
        end {_INN}
        deviceId {_INN}
        contextId {_INN}
        greenContextId {_I} @2024.6
        streamId {_INN}
        correlationId {_I}
        globalPid {_I}
        value {_INN}
        bytes {_INN}
        graphNodeId {_I}
        memKind {_I}""")),
    _Table("CUPTI_ACTIVITY_KIND_RUNTIME", _cols(f"""
        start {_INN}
        end {_INN}
        eventClass {_INN}
        globalTid {_I}
        correlationId {_I}
        nameId {_INN}
        returnValue {_INN}
        callchainId {_I} @2020.5""")),
    _Table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", _cols(f"""
        start {_INN}
        end {_INN}
        deviceId {_INN}
        contextId {_INN}
        greenContextId {_I} @2024.6
        streamId {_INN}
        correlationId {_I}
        globalPid {_I}
        syncType {_INN}
        eventId {_INN}""")),
    _Table("NVTX_EVENTS", _cols(f"""
        start {_INN}
        end {_I}
        eventType {_INN}
        rangeId {_I}
        category {_I}
        color {_I}
        text {_T}
        globalTid {_I}
        endGlobalTid {_I}
        textId {_I}
        domainId {_I}
        uint64Value {_I}
        int64Value {_I}
        doubleValue {_R}
        uint32Value {_I}
        int32Value {_I}
        floatValue {_R}
        jsonTextId {_I}
        jsonText {_T}
        binaryData {_T} @2024.6""")),
] + [_Table(name, _cols(f"""
        id {_INN}
        name {_T}
        label {_T}"""), pk="id") for name in (
    "ENUM_NSYS_EVENT_TYPE", "ENUM_NSYS_EVENT_CLASS", "ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND",
    "ENUM_CUDA_KERNEL_LAUNCH_TYPE")]}

# The small 2020.5 TARGET_INFO_GPU is kept under an internal name; saved as TARGET_INFO_GPU.
_SQL_NAME = {"TARGET_INFO_GPU_SMALL": "TARGET_INFO_GPU"}
_ENUM_ROWS = {
    "ENUM_NSYS_EVENT_TYPE": [(i, n, n) for i, n in _NVTX_ENUM_ROWS],
    "ENUM_NSYS_EVENT_CLASS": [(0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA Runtime API"),
                              (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA Driver API")],
    "ENUM_CUDA_MEMCPY_OPER": [(v, "CUDA_MEMCPY_KIND_" + k.upper(), k) for k, v in
                              MEMCPY_KINDS.items()],
    "ENUM_CUDA_MEM_KIND": [(v, "CUDA_MEMOPR_MEMORY_KIND_" + k.upper(), k.replace("_", " ").title())
                           for k, v in MEM_KINDS.items()],
    "ENUM_CUDA_KERNEL_LAUNCH_TYPE": [(0, "CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN", "Unknown"),
                                     (1, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"),
                                     (2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE",
                                      "Cooperative single device"),
                                     (3, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE",
                                      "Cooperative multi device")],
}
_COL_INDEX = {t.name: {c.name: i for i, c in enumerate(t.cols)} for t in _TABLES.values()}


def table_columns(table: str, layout: str = "2024.6") -> list[str]:
    """The columns `table` has in `layout`, in nsys' order ([] if the layout lacks the table)."""
    for t in _TABLES.values():
        if _SQL_NAME.get(t.name, t.name) == table and _table_in(t, layout):
            return [c.name for c in t.cols if c.since is None or _v(layout) >= _v(c.since)]
    return []


def layout_tables(layout: str = "2024.6") -> list[str]:
    """Every table (SQL name) this builder can write in `layout` (ENUM_* included)."""
    return sorted({_SQL_NAME.get(t.name, t.name) for t in _TABLES.values() if _table_in(t, layout)})


def _table_in(t: _Table, layout: str) -> bool:
    v = _v(layout)
    return (t.since is None or v >= _v(t.since)) and (t.until is None or v <= _v(t.until))


def _ddl(t: _Table, layout: str) -> str:
    lines = []
    for c in t.cols:
        if c.since is None or _v(layout) >= _v(c.since):
            decl = c.decl + ("   PRIMARY KEY" if c.name == t.pk else "")
            lines.append(f"    {c.name:<27} {decl}")
    return f"CREATE TABLE {_SQL_NAME.get(t.name, t.name)} (\n" + ",\n".join(lines) + "\n);"


# ------------------------------------------------------------------------------------------
# Small helpers
# ------------------------------------------------------------------------------------------
def global_tid(pid: int, tid: int, hw: int = 1) -> int:
    """nsys' serialized thread id: (hw << 48) | (pid << 24) | tid, 24 bits each id."""
    return (hw << 48) | ((pid & 0xFFFFFF) << 24) | (tid & 0xFFFFFF)


def global_pid(pid: int, hw: int = 1) -> int:
    return global_tid(pid, 0, hw)


def tensor(shape: Sequence[int], dtype: str = "float32", device: str = "cuda:0",
           stride: Sequence[int] | None = None) -> dict:
    """A tensor argument as pyprof markers write it (docs/formats.md §1.1), contiguous strides
    unless given."""
    if stride is None:
        stride, acc = [], 1
        for n in reversed(shape):
            stride.append(acc)
            acc *= max(int(n), 1)
        stride.reverse()
    return {"shape": list(shape), "dtype": dtype, "stride": list(stride), "device": device}


def short_kernel_name(demangled: str) -> str:
    """nsys' shortName of a demangled kernel name: no return type, template arguments,
    parameters or namespaces ("void at::native::foo<4>(int)" -> "foo")."""
    s = demangled.strip()
    if s.startswith("void "):
        s = s[5:]
    out, depth = [], 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip()
    return name.rsplit("::", 1)[-1] or demangled


def _pseudo_mangled(demangled: str) -> str:
    """A deterministic Itanium-style mangled name (good enough for a mangledName column)."""
    if demangled.startswith("_Z"):
        return demangled
    s = demangled[5:] if demangled.startswith("void ") else demangled
    s = re.split(r"[<(]", s, maxsplit=1)[0].strip()
    parts = [p for p in s.split("::") if p] or ["kernel"]
    parts = [re.sub(r"\W", "_", p) for p in parts]
    body = "".join(f"{len(p)}{p}" for p in parts)
    return f"_ZN{body}Ev" if len(parts) > 1 else f"_Z{body}v"


_JSON_STRINGS: dict[str, str] = {}


def _json_str(s: str) -> str:
    """json.dumps of a string, memoised (op names and scopes repeat millions of times)."""
    out = _JSON_STRINGS.get(s)
    if out is None:
        out = json.dumps(s)
        if len(_JSON_STRINGS) < 100_000:
            _JSON_STRINGS[s] = out
    return out


def _payload_cols(payload: Any) -> dict[str, Any]:
    """`payload=` as NVTX_EVENTS columns: an int -> int64Value, a float -> doubleValue, or an
    explicit (column, value) pair such as ("uint32Value", 7)."""
    if payload is None:
        return {}
    if isinstance(payload, tuple):
        col, value = payload
        if col not in _PAYLOAD_COLUMNS:
            raise ValueError(f"payload column must be one of {_PAYLOAD_COLUMNS}")
        return {col: value}
    if isinstance(payload, bool) or not isinstance(payload, (int, float)):
        raise TypeError("payload: int, float or (column, value)")
    return {"int64Value": payload} if isinstance(payload, int) else {"doubleValue": payload}


_DEFAULT = object()  # "argument not given" where None means NULL


# ------------------------------------------------------------------------------------------
# Processes, threads, ranges
# ------------------------------------------------------------------------------------------
@dataclass
class _Process:
    pid: int
    name: str
    next_corr: int
    next_range_id: int = 1
    next_op_id: int = 1
    next_grid_id: int = 1
    next_domain_id: int = 1
    next_rf_tid: int = 1
    domains: dict[str, int] = field(default_factory=dict)
    threads: list["Thread"] = field(default_factory=list)


class StartEndRange:
    """An open nvtxRangeStart range; `end()` writes its row (eventType 60)."""

    def __init__(self, thread: "Thread", row: dict):
        self.thread, self._row, self.ended = thread, row, False

    @property
    def range_id(self) -> int:
        return self._row["rangeId"]

    def end(self, on_thread: "Thread | None" = None, at: int | None = None) -> None:
        """Ends the range on `on_thread` (default: the starting thread) at that thread's clock,
        first moved up to the range's start if it was behind (or exactly at `at`, whatever it
        is). Ending on another thread sets endGlobalTid."""
        if self.ended:
            raise RuntimeError("range already ended")
        t = on_thread or self.thread
        if t.process is not self.thread.process:
            raise ValueError("a start/end range ends in the process that started it")
        if at is None:
            at = t.wait_until(self._row["start"] + t.db.push_cost).now
        self._row["end"] = at
        if t is not self.thread:
            self._row["endGlobalTid"] = t.global_tid
        t.advance(t.db.pop_cost)
        self.ended = True
        self.thread.db._open_start_end.remove(self)
        self.thread.db._nvtx(self._row)


class Thread:
    """One CPU thread: its clock, its push/pop stack, and the calls that write rows."""

    def __init__(self, db: "SynthDb", process: _Process, tid: int, name: str | None, start: int,
                 rf_tid: int | None):
        self.db, self.process, self.tid = db, process, tid
        self.pid = process.pid
        self.global_tid = global_tid(process.pid, tid, db.hw_id)
        self.global_pid = global_pid(process.pid, db.hw_id)
        self.now = start
        self.name = name
        if rf_tid is None:
            rf_tid = process.next_rf_tid
            process.next_rf_tid += 1
        self.rf_tid = rf_tid  # RecordFunction's thread id ("tid" in pyprof op markers)
        self._stack: list[dict] = []

    # -- clock --------------------------------------------------------------------------
    def advance(self, ns: int) -> "Thread":
        """Moves this thread's clock forward by `ns` (CPU work that writes nothing)."""
        if ns < 0:
            raise ValueError("time runs forward")
        self.now += int(ns)
        return self

    def wait_until(self, ns: int) -> "Thread":
        self.now = max(self.now, int(ns))
        return self

    # -- NVTX ---------------------------------------------------------------------------
    def domain(self, name: str) -> int:
        """The id of NVTX domain `name` in this process, creating it (eventType 75 row, on this
        thread, at its clock) on first use. Ids count from 1 per process; 0 = default domain."""
        p = self.process
        if name not in p.domains:
            p.domains[name] = p.next_domain_id
            p.next_domain_id += 1
            self.db._nvtx({"start": self.now, "eventType": DOMAIN_CREATE, "text": name,
                           "globalTid": self.global_tid, "domainId": p.domains[name]})
        return p.domains[name]

    def destroy_domain(self, name: str) -> None:
        """nvtxDomainDestroy: an eventType 76 row (the id stays known to the builder)."""
        self.db._nvtx({"start": self.now, "eventType": DOMAIN_DESTROY,
                       "globalTid": self.global_tid, "domainId": self.process.domains[name]})

    def name_category(self, category: int, name: str, domain: str | None = None) -> None:
        """nvtxNameCategory: an eventType 33 row."""
        self.db._nvtx({"start": self.now, "eventType": CATEGORY, "category": category,
                       "text": name, "globalTid": self.global_tid,
                       "domainId": self._domain_id(domain)})

    def name_os_thread(self, name: str) -> None:
        """nvtxNameOsThread: an eventType 39 row."""
        self.db._nvtx({"start": self.now, "eventType": THREAD_NAME, "text": name,
                       "globalTid": self.global_tid, "domainId": 0})

    def register_string(self, text: str, domain: str | None = None) -> int:
        """nvtxDomainRegisterString: the StringIds id that ranges with this message carry."""
        self._domain_id(domain)
        return self.db.string_id(text)

    def _domain_id(self, domain: str | None) -> int:
        return 0 if domain is None else self.domain(domain)

    def _message_row(self, text: str, domain: str | None, registered: bool, color: int | None,
                     category: int | None, payload: Any) -> dict:
        row = {"globalTid": self.global_tid, "domainId": self._domain_id(domain)}
        if registered:
            row["textId"] = self.register_string(text, domain)
        else:
            row["text"] = text
        if color is not None:
            row["color"] = color & 0xFFFFFFFF
        if category is not None:
            row["category"] = category
        row.update(_payload_cols(payload))
        return row

    def push(self, text: str, *, domain: str | None = None, registered: bool = False,
             color: int | None = None, category: int | None = None, payload: Any = None) -> None:
        """nvtxDomainRangePushEx at this thread's clock. `registered`: the message is a
        registered string (text NULL, textId into StringIds)."""
        row = self._message_row(text, domain, registered, color, category, payload)
        row["start"] = self.now
        row["eventType"] = PUSH_POP
        self._stack.append(row)
        self.advance(self.db.push_cost)

    def pop(self) -> None:
        """nvtxRangePop: closes the innermost push of this thread and writes its row."""
        if not self._stack:
            raise RuntimeError(f"pop without push on thread {self.tid}")
        row = self._stack.pop()
        row["end"] = self.now
        self.advance(self.db.pop_cost)
        self.db._nvtx(row)

    @contextlib.contextmanager
    def range(self, text: str, **kw: Any) -> Iterator["Thread"]:
        """push/pop around a block (same keywords as `push`)."""
        self.push(text, **kw)
        try:
            yield self
        finally:
            self.pop()

    @property
    def depth(self) -> int:
        """Push/pop ranges open on this thread."""
        return len(self._stack)

    def start_range(self, text: str, *, domain: str | None = None, registered: bool = False,
                    color: int | None = None, category: int | None = None,
                    payload: Any = None) -> StartEndRange:
        """nvtxRangeStartEx: returns a handle whose `end()` writes the eventType 60 row (rangeId
        from a per-process counter). Never ended: written at save() with end NULL."""
        row = self._message_row(text, domain, registered, color, category, payload)
        row.update(start=self.now, eventType=START_END, rangeId=self.process.next_range_id)
        self.process.next_range_id += 1
        self.advance(self.db.push_cost)
        handle = StartEndRange(self, row)
        self.db._open_start_end.append(handle)
        return handle

    def mark(self, text: str, *, domain: str | None = None, registered: bool = False,
             color: int | None = None, category: int | None = None, payload: Any = None) -> None:
        """nvtxMarkEx: eventType 34, end NULL."""
        row = self._message_row(text, domain, registered, color, category, payload)
        row.update(start=self.now, eventType=MARK)
        self.advance(self.db.push_cost)
        self.db._nvtx(row)

    def range_at(self, text: str | None, start: int, end: int | None, *,
                 event_type: int = PUSH_POP, domain: str | None = None, registered: bool = False,
                 color: int | None = None, category: int | None = None, payload: Any = None,
                 **columns: Any) -> None:
        """Writes one NVTX_EVENTS row with explicit times, whatever they are (end NULL, end <
        start, ...); `columns` sets any other column (rangeId=..., endGlobalTid=..., text=None).
        The thread's clock is not touched."""
        row = self._message_row(text or "", domain, registered, color, category, payload)
        if text is None:
            row.pop("text", None)
        row.update(start=start, end=end, eventType=event_type)
        row.update(columns)
        self.db._nvtx(row)

    # -- pyprof markers (docs/formats.md §1) ----------------------------------------------
    def pyprof_op(self, op: str, *, seq: int = -1, args: dict | None = None,
                  args_json: str | None = None, scope: str = "function",
                  fwd_tid: int | None = None, id: int | None = None, tid: int | None = None,
                  overload: str | None = None, stack: str | None = None,
                  extra: dict | None = None, interned: bool = False
                  ) -> contextlib.AbstractContextManager:
        """Context manager: an op marker (push/pop in domain "pyprof", plain-text JSON).
        `id` defaults to a per-process counter, `tid` to this thread's RecordFunction id;
        `args_json` (pre-encoded JSON object text) skips encoding `args` (fast path).
        `interned`: the interned form (docs/formats.md §1.1): a registered v2 marker without id
        and seq, the id as the uint64 payload and seq + 1 as the category (NULL for 0)."""
        if interned:
            text = self.db.op_marker(
                op, seq=seq, args=args, args_json=args_json, scope=scope, fwd_tid=fwd_tid,
                id=0, tid=self.rf_tid if tid is None else tid, overload=overload, stack=stack,
                extra=extra, interned=True)
            return self.range(text, domain="pyprof", registered=True,
                              category=seq + 1 if seq + 1 > 0 else None,
                              payload=("uint64Value", self._op_id(id)))
        return self.range(self.db.op_marker(
            op, seq=seq, args=args, args_json=args_json, scope=scope, fwd_tid=fwd_tid,
            id=self._op_id(id), tid=self.rf_tid if tid is None else tid, overload=overload,
            stack=stack, extra=extra), domain="pyprof")

    def _op_id(self, id: int | None) -> int:
        if id is None:
            id = self.process.next_op_id
            self.process.next_op_id += 1
        return id

    def pyprof_module(self, module: str, type: str, *,
                      registered: bool = True) -> contextlib.AbstractContextManager:
        """Context manager: a module marker {"v":1,"module":...,"type":...} in domain "pyprof",
        as a registered string (text NULL, textId) unless `registered=False` (legacy-friendly)."""
        return self.range(SynthDb.module_marker(module, type), domain="pyprof",
                          registered=registered)

    # -- CUDA ------------------------------------------------------------------------------
    def api(self, name: str, *, duration: int | None = None, event_class: int | None = None,
            return_value: int = 0, record: bool = True) -> int:
        """A CUDA runtime/driver API call at this thread's clock with no GPU work; returns its
        correlation id. `event_class` defaults to 1 (driver) for cu* names, else 0 (runtime)."""
        corr, _, _ = self._api(name, duration, event_class, return_value, record)
        return corr

    def _api(self, name: str, duration: int | None, event_class: int | None, return_value: int,
             record: bool, min_end: int = 0) -> tuple[int, int, int]:
        p = self.process
        corr = p.next_corr
        p.next_corr += 1
        start = self.now
        end = max(start + (self.db.api_duration if duration is None else int(duration)), min_end)
        if event_class is None:
            event_class = 0 if name.startswith("cuda") or not name.startswith("cu") else 1
        if record:
            self.db._add("CUPTI_ACTIVITY_KIND_RUNTIME", (
                start, end, event_class, self.global_tid, corr, self.db.string_id(name),
                return_value, None))
        self.now = end + self.db.api_gap
        return corr, start, end

    def _gpu_slot(self, device: int, stream: int, api_end: int, duration: int,
                  gpu_start: int | None) -> tuple[int, int]:
        key = (self.pid, device, stream)
        if gpu_start is None:
            gpu_start = max(api_end + self.db.launch_latency, self.db._stream_free.get(key, 0))
        end = gpu_start + int(duration)
        self.db._stream_free[key] = max(self.db._stream_free.get(key, 0), end)
        self.db._devices_used.add(device)
        return gpu_start, end

    def _kernel_row(self, corr: int, kernel: str, short: str | None, start: int, end: int,
                    device: int, context: int, stream: int, grid: Sequence[int],
                    block: Sequence[int], registers: int, static_shared: int,
                    dynamic_shared: int, mangled: Any, graph_node: int | None,
                    launch_type: int, cache_config: int, local_per_thread: int,
                    local_total: int, shared_executed: int, green_context: int | None) -> None:
        db = self.db
        sid = db.string_id
        g = (list(grid) + [1, 1, 1])[:3]
        b = (list(block) + [1, 1, 1])[:3]
        if short is None:
            short = db._short_cache.get(kernel)
            if short is None:
                short = db._short_cache[kernel] = short_kernel_name(kernel)
        if mangled is _DEFAULT:
            mangled = db._mangled_cache.get(kernel)
            if mangled is None:
                mangled = db._mangled_cache[kernel] = _pseudo_mangled(kernel)
        grid_id = self.process.next_grid_id
        self.process.next_grid_id += 1
        db._add("CUPTI_ACTIVITY_KIND_KERNEL", (
            start, end, device, context, green_context, stream, corr, self.global_pid,
            sid(kernel), sid(short), None if mangled is None else sid(mangled), launch_type,
            cache_config, registers, g[0], g[1], g[2], b[0], b[1], b[2], static_shared,
            dynamic_shared, local_per_thread, local_total, grid_id, shared_executed, graph_node,
            0))

    def launch(self, kernel: str, short: str | None = None, *, duration: int = 5000,
               device: int = 0, stream: int = 7, context: int = 1,
               grid: Sequence[int] = (1, 1, 1), block: Sequence[int] = (128, 1, 1),
               api: str = "cudaLaunchKernel_v7000", api_duration: int | None = None,
               registers: int = 32, static_shared: int = 0, dynamic_shared: int = 0,
               mangled: Any = _DEFAULT, gpu_start: int | None = None, record_api: bool = True,
               graph_node: int | None = None, launch_type: int = 1, cache_config: int = 0,
               local_per_thread: int = 0, local_total: int = 0, shared_executed: int = 0,
               green_context: int | None = None) -> int:
        """Launches `kernel` (its demangled name) from this thread: a RUNTIME row at this
        thread's clock (name `api`, e.g. "cuLaunchKernel" for a driver launch) and a KERNEL row
        on the GPU timeline. Returns the correlation id. `short` defaults to nsys' shortName of
        `kernel`; `mangled` to a pseudo-mangled name (pass None for NULL); `record_api=False`
        drops the RUNTIME row (a kernel whose launch was lost)."""
        corr, _, api_end = self._api(api, api_duration, None, 0, record_api)
        start, end = self._gpu_slot(device, stream, api_end, duration, gpu_start)
        self._kernel_row(corr, kernel, short, start, end, device, context, stream, grid, block,
                         registers, static_shared, dynamic_shared,
                         mangled if mangled is not _DEFAULT or self.db.mangled_names else None,
                         graph_node, launch_type, cache_config, local_per_thread, local_total,
                         shared_executed, green_context)
        return corr

    def graph_launch(self, kernels: Iterable[dict | str], *, device: int = 0, stream: int = 7,
                     api: str = "cudaGraphLaunch_v10000", first_node: int = 1,
                     api_duration: int | None = None) -> int:
        """cudaGraphLaunch: one RUNTIME row, one KERNEL row per entry of `kernels` (a name or a
        dict of `launch` keywords incl. "kernel"), all with the API's correlation id and
        graphNodeId first_node, first_node+1, ... Returns the correlation id."""
        corr, _, api_end = self._api(api, api_duration, None, 0, True)
        for i, k in enumerate(kernels):
            kw = {"kernel": k} if isinstance(k, str) else dict(k)
            name = kw.pop("kernel")
            duration = kw.pop("duration", 5000)
            start, end = self._gpu_slot(device, stream, api_end, duration,
                                        kw.pop("gpu_start", None))
            self._kernel_row(
                corr, name, kw.pop("short", None), start, end, device, kw.pop("context", 1),
                stream, kw.pop("grid", (1, 1, 1)), kw.pop("block", (128, 1, 1)),
                kw.pop("registers", 32), kw.pop("static_shared", 0), kw.pop("dynamic_shared", 0),
                _DEFAULT if self.db.mangled_names else None, first_node + i, 1, 0, 0, 0, 0, None)
            if kw:
                raise TypeError(f"unknown graph kernel keys {sorted(kw)}")
        return corr

    def memcpy(self, bytes: int, kind: str = "HtoD", *, device: int = 0, stream: int = 7,
               context: int = 1, duration: int | None = None, src_kind: str | None = None,
               dst_kind: str | None = None, api: str | None = None, sync: bool = False,
               api_duration: int | None = None, peer_device: int | None = None,
               gpu_start: int | None = None) -> int:
        """cudaMemcpyAsync (or cudaMemcpy with `sync=True`: the call returns after the copy):
        a RUNTIME row and a MEMCPY row. `kind`: a key of MEMCPY_KINDS ("HtoD", "DtoH", "DtoD",
        ...); memory kinds default per copy kind (pageable host, device). Returns the
        correlation id."""
        copy_kind = MEMCPY_KINDS[kind]
        s_default, d_default = _DEFAULT_COPY_MEM.get(kind, ("unknown", "unknown"))
        src = MEM_KINDS[src_kind or s_default]
        dst = MEM_KINDS[dst_kind or d_default]
        if duration is None:
            rate = 1000 if kind in ("DtoD", "PtoP") else 20  # bytes per ns
            duration = max(1000, bytes // rate)
        if api is None:
            api = "cudaMemcpy_v3020" if sync else "cudaMemcpyAsync_v3020"
        if sync:  # the copy starts during the call, which returns when it is done
            gstart, gend = self._gpu_slot(device, stream, self.now, duration, gpu_start)
            corr, _, _ = self._api(api, api_duration, None, 0, True, min_end=gend + 500)
        else:
            corr, _, api_end = self._api(api, api_duration, None, 0, True)
            gstart, gend = self._gpu_slot(device, stream, api_end, duration, gpu_start)
        peer = kind == "PtoP"
        self.db._add("CUPTI_ACTIVITY_KIND_MEMCPY", (
            gstart, gend, device, context, None, stream, corr, self.global_pid, bytes, copy_kind,
            None, src, dst, device if peer else None, context if peer else None,
            peer_device if peer else None, context if peer else None, None, None, None))
        return corr

    def memset(self, bytes: int, value: int = 0, *, device: int = 0, stream: int = 7,
               context: int = 1, duration: int | None = None, mem_kind: str = "device",
               api: str = "cudaMemsetAsync_v3020", api_duration: int | None = None,
               gpu_start: int | None = None) -> int:
        """cudaMemsetAsync: a RUNTIME row and a MEMSET row. Returns the correlation id."""
        if duration is None:
            duration = max(1000, bytes // 1000)
        corr, _, api_end = self._api(api, api_duration, None, 0, True)
        gstart, gend = self._gpu_slot(device, stream, api_end, duration, gpu_start)
        self.db._add("CUPTI_ACTIVITY_KIND_MEMSET", (
            gstart, gend, device, context, None, stream, corr, self.global_pid, value, bytes,
            None, MEM_KINDS[mem_kind]))
        return corr

    def synchronize(self, device: int = 0, stream: int | None = None, *, context: int = 1,
                    record_sync: bool = True) -> int:
        """cudaStreamSynchronize (or cudaDeviceSynchronize when `stream` is None): the call
        returns when the stream's (device's) GPU work is done; with `record_sync` a
        SYNCHRONIZATION row (syncType 3 stream / 4 context). Returns the correlation id."""
        free = self.db._stream_free
        if stream is None:
            done = max([v for (p, d, _), v in free.items() if p == self.pid and d == device],
                       default=0)
            name, sync_type, sync_stream = "cudaDeviceSynchronize_v3020", 4, 4294967295
        else:
            done = free.get((self.pid, device, stream), 0)
            name, sync_type, sync_stream = "cudaStreamSynchronize_v3020", 3, stream
        corr, start, end = self._api(name, None, None, 0, True, min_end=done + 500)
        if record_sync:
            self.db._add("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", (
                start, end, device, context, None, sync_stream, corr, self.global_pid,
                sync_type, 4294967295))
        return corr


# ------------------------------------------------------------------------------------------
# Writing rows
# ------------------------------------------------------------------------------------------
class RowWriter:
    """Inserts rows kept in the builder's (2024.6 superset) column order into `con`, projected
    on `layout`'s columns, creating each table (DDL as nsys declares it) on first write.

    Columns that are NULL in every row of one write() call are left out of its INSERT (they
    default to NULL): Python's sqlite3 spends ~0.4 us per bound parameter, which otherwise
    dominates files with millions of 20-column NVTX rows."""

    def __init__(self, con: sqlite3.Connection, layout: str = "2024.6"):
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}")
        self.con, self.layout = con, layout
        self.created: set[str] = set()
        self._keep = {name: [i for i, c in enumerate(t.cols)
                             if c.since is None or _v(layout) >= _v(c.since)]
                      for name, t in _TABLES.items()}

    def create(self, table: str) -> None:
        if table not in self.created:
            t = _TABLES[table]
            if not _table_in(t, self.layout):
                raise ValueError(f"layout {self.layout} has no table {table}")
            self.con.execute(_ddl(t, self.layout))
            self.created.add(table)

    def write(self, table: str, rows: list[tuple], create: bool = True) -> None:
        """Inserts `rows` (tuples in `columns(table)` order of nsys 2024.6) in their order."""
        t = _TABLES[table]
        if not rows:
            if create and _table_in(t, self.layout):
                self.create(table)
            return
        self.create(table)
        cols = list(zip(*rows))
        n = len(rows)
        keep = [i for i in self._keep[table] if cols[i].count(None) != n]
        names = ", ".join(t.cols[i].name for i in keep)
        sql = (f"INSERT INTO {_SQL_NAME.get(table, table)} ({names}) VALUES "
               f"({', '.join('?' * len(keep))})")
        if len(keep) == len(t.cols):
            self.con.executemany(sql, rows)
        else:
            self.con.executemany(sql, zip(*[cols[i] for i in keep]))


def columns(table: str) -> list[str]:
    """The builder's column order for `table` (nsys 2024.6 order, every layout's columns)."""
    return [c.name for c in _TABLES[table].cols]


# ------------------------------------------------------------------------------------------
# The database
# ------------------------------------------------------------------------------------------
class SynthDb:
    """A synthetic Nsight Systems export under construction (see the module docstring)."""

    # CPU costs in ns (class defaults; set on an instance to change them).
    push_cost = 150
    pop_cost = 150
    api_duration = 4000      # a CUDA API call
    api_gap = 200            # CPU time after each API call
    launch_latency = 2000    # API end -> earliest GPU start

    def __init__(self, layout: str = "2024.6", *, start: int = 20_000_000, hw_id: int = 1,
                 first_correlation_id: int = 1, product: str = "nsys",
                 enum_tables: bool = False, create_tables: Iterable[str] = (),
                 gpus: bool = True, mangled_names: bool = True, metadata: bool = True):
        """`layout`: one of LAYOUTS. `start`: every thread's clock at creation (ns after the
        capture start). `product`: "nsys" writes nsys' metadata rows for the layout, "pyprof"
        the rows pyprof's collector writes (docs/formats.md §2). `enum_tables`: also write the
        ENUM_* tables. `create_tables`: tables to create even if they stay empty. `gpus`: write
        a TARGET_INFO_GPU (or _CUDA_GPU) row for every device used and not declared with gpu().
        `mangled_names`: fill KERNEL.mangledName by default."""
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}")
        if product not in ("nsys", "pyprof"):
            raise ValueError("product: 'nsys' or 'pyprof'")
        self.layout, self.start, self.hw_id = layout, start, hw_id
        self.first_correlation_id = first_correlation_id
        self.product, self.enum_tables, self.write_gpus = product, enum_tables, gpus
        self.mangled_names, self.write_metadata = mangled_names, metadata
        self.create_tables = set(create_tables)
        self._rows: dict[str, list[tuple]] = {name: [] for name in _TABLES}
        self._strings: dict[str, int] = {}
        self._processes: dict[int, _Process] = {}
        self._threads: dict[tuple[int, int], Thread] = {}
        self._stream_free: dict[tuple[int, int, int], int] = {}
        self._devices_used: set[int] = set()
        self._gpus: dict[int, dict] = {}
        self._open_start_end: list[StartEndRange] = []
        self._meta: dict[str, str] = {}
        self._short_cache: dict[str, str] = {}
        self._mangled_cache: dict[str, str] = {}
        self._stream_con: sqlite3.Connection | None = None
        self._stream_path: str | None = None
        self._chunk = 0
        self._writer: RowWriter | None = None
        self._finished = False
        self._saved = False
        self._session_end: int | None = None
        nvtx_cols = table_columns("NVTX_EVENTS", "2024.6")
        self._nvtx_index = {c: i for i, c in enumerate(nvtx_cols)}
        self._nvtx_width = len(nvtx_cols)

    @classmethod
    def streaming(cls, path: str | os.PathLike, *, chunk_rows: int = 100_000,
                  **kw: Any) -> "SynthDb":
        """A builder that writes rows to `path` (replaced) every `chunk_rows` rows of a table,
        in one transaction committed by save(); for files too big to hold in memory.
        shuffle_rows/swap_rows/sort_rows are unavailable."""
        db = cls(**kw)
        path = os.fspath(path)
        if os.path.exists(path):
            os.remove(path)
        db._stream_path = path
        db._stream_con = sqlite3.connect(path, isolation_level=None)
        db._stream_con.execute("PRAGMA journal_mode=OFF")
        db._stream_con.execute("PRAGMA synchronous=OFF")
        db._stream_con.execute("BEGIN")
        db._chunk = chunk_rows
        return db

    # -- entities ---------------------------------------------------------------------------
    def process(self, pid: int, name: str = "python3") -> _Process:
        p = self._processes.get(pid)
        if p is None:
            p = self._processes[pid] = _Process(pid, name, self.first_correlation_id)
        return p

    def thread(self, pid: int, tid: int | None = None, *, name: str | None = None,
               start: int | None = None, rf_tid: int | None = None,
               process_name: str = "python3") -> Thread:
        """The thread (pid, tid), created on first call (tid defaults to pid: the main thread).
        `name` goes to ThreadNames (default "python3" for the main thread, else
        "thread-<tid>"); `rf_tid` is the RecordFunction thread id pyprof markers carry
        (default: 1, 2, ... in order of creation within the process)."""
        tid = pid if tid is None else tid
        t = self._threads.get((pid, tid))
        if t is None:
            p = self.process(pid, process_name)
            if name is None:
                name = "python3" if tid == pid else f"thread-{tid}"
            t = Thread(self, p, tid, name, self.start if start is None else start, rf_tid)
            p.threads.append(t)
            self._threads[(pid, tid)] = t
        return t

    @property
    def threads(self) -> list[Thread]:
        return list(self._threads.values())

    def gpu(self, device: int = 0, *, name: str = "NVIDIA H100 80GB HBM3", sm_count: int = 132,
            clock_hz: int = 1_980_000_000, memory_bytes: int = 85_520_809_984,
            bandwidth: int = 3_352_320_000_000, compute: tuple[int, int] = (9, 0),
            l2_bytes: int = 52_428_800, bus: str = "0000:19:00.0") -> None:
        """Declares GPU `device` (TARGET_INFO_GPU.id / TARGET_INFO_CUDA_GPU.deviceId)."""
        self._gpus[device] = dict(name=name, sm_count=sm_count, clock_hz=clock_hz,
                                  memory_bytes=memory_bytes, bandwidth=bandwidth,
                                  compute=compute, l2_bytes=l2_bytes, bus=bus)

    def meta(self, name: str, value: str) -> None:
        """Adds or overrides one metadata row (layouts that have a metadata table)."""
        self._meta[name] = value

    def string_id(self, value: str) -> int:
        """The StringIds id of `value` (added on first use)."""
        sid = self._strings.get(value)
        if sid is None:
            sid = self._strings[value] = len(self._strings) + 1
        return sid

    # -- marker texts -----------------------------------------------------------------------
    @staticmethod
    def op_marker(op: str, *, seq: int = -1, args: dict | None = None,
                  args_json: str | None = None, scope: str = "function",
                  fwd_tid: int | None = None, id: int = 1, tid: int = 1,
                  overload: str | None = None, stack: str | None = None,
                  extra: dict | None = None, interned: bool = False) -> str:
        """The JSON text of a pyprof op marker (docs/formats.md §1.1), keys in pyprof's order;
        `interned`: the v2 text, without id and seq."""
        if args_json is None:
            args_json = json.dumps(args or {}, separators=(",", ":"))
        parts = ['{"v":2,"op":' if interned else '{"v":1,"op":', _json_str(op)]
        if overload:
            parts += [',"overload":', json.dumps(overload)]
        parts.append(f',"tid":{tid}' if interned else f',"id":{id},"seq":{seq},"tid":{tid}')
        if fwd_tid is not None:
            parts.append(f',"fwd_tid":{fwd_tid}')
        parts += [',"scope":', _json_str(scope)]
        if stack is not None:
            parts += [',"stack":', json.dumps(stack)]
        for k, val in (extra or {}).items():
            parts += [",", json.dumps(k), ":", json.dumps(val, separators=(",", ":"))]
        parts += [',"args":', args_json, "}"]
        return "".join(parts)

    @staticmethod
    def module_marker(module: str, type: str) -> str:
        """The JSON text of a pyprof module marker (docs/formats.md §1.2)."""
        return '{"v":1,"module":%s,"type":%s}' % (json.dumps(module), json.dumps(type))

    # pyprof_op / pyprof_module on the db, as in `db.pyprof_op(t, ...)`.
    def pyprof_op(self, thread: Thread, op: str, **kw: Any) -> contextlib.AbstractContextManager:
        return thread.pyprof_op(op, **kw)

    def pyprof_module(self, thread: Thread, module: str, type: str,
                      **kw: Any) -> contextlib.AbstractContextManager:
        return thread.pyprof_module(module, type, **kw)

    # -- rows -------------------------------------------------------------------------------
    def _add(self, table: str, row: tuple) -> None:
        rows = self._rows[table]
        rows.append(row)
        if self._chunk and len(rows) >= self._chunk:
            self._flush(table)

    def _nvtx(self, d: dict) -> None:
        row = [None] * self._nvtx_width
        idx = self._nvtx_index
        for k, v in d.items():
            row[idx[k]] = v
        self._add("NVTX_EVENTS", tuple(row))

    def rows(self, table: str) -> list[tuple]:
        """The rows of `table` buffered so far, in nsys 2024.6 column order (superset)."""
        return self._rows[table]

    def _check_reorder(self) -> None:
        if self._stream_con is not None:
            raise RuntimeError("row reordering is not available on a streaming builder")

    def shuffle_rows(self, table: str = "CUPTI_ACTIVITY_KIND_KERNEL", seed: int = 0) -> None:
        """Puts the rows of `table` in a random (seeded, reproducible) order."""
        self._check_reorder()
        random.Random(seed).shuffle(self._rows[table])

    def shuffle_kernel_rows(self, seed: int = 0) -> None:
        self.shuffle_rows("CUPTI_ACTIVITY_KIND_KERNEL", seed)

    def swap_rows(self, table: str, i: int, j: int) -> None:
        self._check_reorder()
        rows = self._rows[table]
        rows[i], rows[j] = rows[j], rows[i]

    def swap_kernel_rows(self, i: int, j: int) -> None:
        """Swaps kernel rows i and j (0-based, launch order), e.g. to put a later launch first."""
        self.swap_rows("CUPTI_ACTIVITY_KIND_KERNEL", i, j)

    def sort_rows(self, table: str, column: str, reverse: bool = False) -> None:
        """Sorts the rows of `table` by `column` (stable), e.g. kernels by GPU start."""
        self._check_reorder()
        i = _COL_INDEX[table][column]
        self._rows[table].sort(key=lambda r: (r[i] is None, r[i] or 0), reverse=reverse)

    # -- writing ----------------------------------------------------------------------------
    def _write(self, con: sqlite3.Connection, table: str, rows: list[tuple]) -> None:
        if self._writer is None or self._writer.con is not con:
            self._writer = RowWriter(con, self.layout)
        self._writer.write(table, rows, create=True)

    def _flush(self, table: str) -> None:
        self._write(self._stream_con, table, self._rows[table])
        self._rows[table] = []

    def finish(self) -> None:
        """Adds the rows that exist only once everything is known (save() calls it): open
        ranges (end NULL), thread and process names, GPUs, session start, metadata, enums and,
        last, StringIds. Nothing may be recorded afterwards."""
        if self._finished:
            return
        self._finished = True
        for t in self._threads.values():
            while t._stack:
                row = t._stack.pop(0)  # outermost first, like an exit-time flush
                row["end"] = self._session_end
                self._nvtx(row)
        for h in list(self._open_start_end):
            h._row["end"] = self._session_end
            self._nvtx(h._row)
        self._open_start_end.clear()
        v = _v(self.layout)
        for t in self._threads.values():
            if t.name is not None:
                self._add("ThreadNames", (self.string_id(t.name), 0, t.global_tid))
        if v >= (2022, 1):
            for p in self._processes.values():
                self._add("PROCESSES", (global_pid(p.pid, self.hw_id), p.pid, p.name))
            self._add("TARGET_INFO_SESSION_START_TIME",
                      (1_763_800_000_000_000_000, "2025-11-22T08:26:40", "2025-11-22T08:26:40"))
        if self._session_end is not None and self._analysis_details and v >= (2022, 1):
            self._add("ANALYSIS_DETAILS", (self.hw_id << 48, self._session_end - self.start,
                                           self.start, self._session_end))
        if self.write_gpus:
            for d in sorted(self._devices_used):
                if d not in self._gpus:
                    self.gpu(d)
        for d, g in sorted(self._gpus.items()):
            major, minor = g["compute"]
            if v <= (2020, 5):
                self._add("TARGET_INFO_CUDA_GPU", (
                    0, g["name"], g["bus"], g["bandwidth"] // 1000, g["memory_bytes"] >> 20, 65536,
                    g["l2_bytes"], 32, g["clock_hz"] // 1000, 4, g["sm_count"], 4, 64, 32,
                    233472, 65536, 65536, 49152, 1024, 1024, 1024, 64, 2147483647, 65535, 65535,
                    major, minor, d, 0))
            if v == (2020, 5):
                self._add("TARGET_INFO_GPU_SMALL", (0, d, g["name"], g["bus"], 1))
            if v >= (2021, 2):
                self._add("TARGET_INFO_GPU", (
                    0, d, g["name"], g["bus"], 1, g["l2_bytes"], g["memory_bytes"],
                    g["bandwidth"], g["clock_hz"], g["sm_count"], d, None, None,
                    "GH100" if major == 9 else None, d, None, None, 161, 1, 65536, 4, 65536,
                    49152, 232448, 233472, 65536, 32, 5, 64, 32, 1024, 1024, 1024, 64,
                    2147483647, 65535, 65535, major, minor, major, minor))
        if self.write_metadata and v >= (2022, 1):
            table = "META_DATA_EXPORT" if v >= (2023, 3) else "EXPORT_META_DATA"
            if self.product == "pyprof":
                meta = {"EXPORT_PRODUCT_NAME": "pyprof", "EXPORT_PRODUCT_VERSION": "0.1.0",
                        "EXPORT_SCHEMA_VERSION": "1"}
            else:
                product, schema = _EXPORT_VERSIONS[max(
                    (k for k in _EXPORT_VERSIONS if _v(k) <= v), key=_v)]
                major, minor, micro = schema.split(".")
                meta = {"EXPORT_PRODUCT_VERSION": product, "EXPORT_SCHEMA_VERSION": schema,
                        "EXPORT_SCHEMA_VERSION_MAJOR": major, "EXPORT_SCHEMA_VERSION_MINOR": minor,
                        "EXPORT_SCHEMA_VERSION_MICRO": micro}
            meta["EXPORT_TIME_UTC"] = "2025-11-22T08:30:00Z"
            meta.update(self._meta)
            for k, val in meta.items():
                self._add(table, (k, val))
        if self.enum_tables:
            for table, rows in _ENUM_ROWS.items():
                for r in rows:
                    self._add(table, r)
        for value, sid in self._strings.items():
            self._add("StringIds", (sid, value))

    def end_session(self, at: int, *, analysis_details: bool = True) -> None:
        """Ends the capture session at `at` ns, as Nsight Systems does when the program ends
        (or --duration / a capture range stops it) with ranges still open: save() writes
        them with `end` = `at` instead of NULL. `analysis_details`: also write the
        ANALYSIS_DETAILS row (stopTime = `at`; layouts >= 2022.1)."""
        self._session_end = at
        self._analysis_details = analysis_details

    def save(self, path: str | os.PathLike | None = None) -> str:
        """Writes the database (replacing `path`) and returns its path. A builder is saved
        once; a streaming builder takes no path (it writes where it was opened)."""
        if self._saved:
            raise RuntimeError("already saved")
        if self._stream_con is not None:
            if path is not None and os.fspath(path) != self._stream_path:
                raise ValueError("a streaming builder saves to its own path")
            con, path = self._stream_con, self._stream_path
        else:
            if path is None:
                raise ValueError("save(path)")
            path = os.fspath(path)
            if os.path.exists(path):
                os.remove(path)
            con = sqlite3.connect(path, isolation_level=None)
            con.execute("BEGIN")
        self.finish()
        for table in _TABLES:
            sql_name = _SQL_NAME.get(table, table)
            if self._rows[table] or sql_name in self.create_tables:
                self._write(con, table, self._rows[table])
                self._rows[table] = []
        con.execute("COMMIT")
        con.close()
        self._stream_con = None
        self._saved = True
        return path

    def tables(self) -> list[str]:
        """The builder's names of the tables holding buffered rows (for rows() and
        RowWriter.write(); the same as the SQL names except the 2020.5 small TARGET_INFO_GPU,
        kept as "TARGET_INFO_GPU_SMALL")."""
        return [k for k, v in self._rows.items() if v]

    def counts(self) -> dict[str, int]:
        """Rows buffered per table (non-streaming builders; before save)."""
        return {_SQL_NAME.get(k, k): len(v) for k, v in self._rows.items() if v}
