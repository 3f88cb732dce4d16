"""Tests of tests/nsys_synth.py: the databases it writes have the Nsight Systems layout
(../shared/reference/trace-formats.md §1) and the properties `parse` tests rely on."""

from __future__ import annotations

import json
import sqlite3

import pytest

from nsys_synth import (DOMAIN_CREATE, LAYOUTS, MARK, PUSH_POP, START_END, SynthDb, global_pid,
                        global_tid, layout_tables, short_kernel_name, table_columns, tensor)

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
GEMM = ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>"
        "(cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)")
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
               "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
               "at::detail::Array<char*, 1>)")


class Row(tuple):
    """A result row that compares like a tuple and also reads columns by name."""

    def __new__(cls, cursor, values):
        row = super().__new__(cls, values)
        row.names = {d[0]: i for i, d in enumerate(cursor.description)}
        return row

    def __getitem__(self, key):
        return super().__getitem__(self.names[key] if isinstance(key, str) else key)


def connect(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = Row
    return con


def tables(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(con, table) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def everything(db: SynthDb) -> SynthDb:
    """One of each row kind on two processes."""
    for pid in (100, 200):
        t = db.thread(pid)
        with t.range("step"):
            t.launch(GEMM, grid=(4, 2, 1), block=(128, 1, 1))
            t.memcpy(4096, "HtoD")
            t.memset(1024, 0)
            t.synchronize(0, 7)
    return db


# -- schema ---------------------------------------------------------------------------------

KERNEL_2020_3 = [  # trace-formats.md §1.2: 25 columns
    "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
    "demangledName", "shortName", "launchType", "cacheConfig", "registersPerThread", "gridX",
    "gridY", "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
    "localMemoryPerThread", "localMemoryTotal", "gridId", "sharedMemoryExecuted", "graphNodeId"]
KERNEL_2024_6 = (KERNEL_2020_3[:4] + ["greenContextId"] + KERNEL_2020_3[4:9] + ["mangledName"]
                 + KERNEL_2020_3[9:] + ["sharedMemoryLimitConfig"])
NVTX_19 = ["start", "end", "eventType", "rangeId", "category", "color", "text", "globalTid",
           "endGlobalTid", "textId", "domainId", "uint64Value", "int64Value", "doubleValue",
           "uint32Value", "int32Value", "floatValue", "jsonTextId", "jsonText"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_tables_and_columns_follow_the_layout(tmp_path, layout):
    path = everything(SynthDb(layout)).save(tmp_path / "x.sqlite")
    con = connect(path)
    have = tables(con)
    year = tuple(int(x) for x in layout.split("."))
    assert {"StringIds", "ThreadNames", "NVTX_EVENTS", KERNEL, RUNTIME, MEMCPY, MEMSET,
            SYNC} <= have
    assert ("TARGET_INFO_CUDA_GPU" in have) == (year <= (2020, 5))
    assert ("TARGET_INFO_GPU" in have) == (year >= (2020, 5))
    assert ("PROCESSES" in have) == (year >= (2022, 1))
    assert ("TARGET_INFO_SESSION_START_TIME" in have) == (year >= (2022, 1))
    assert ("EXPORT_META_DATA" in have) == ((2022, 1) <= year < (2023, 3))
    assert ("META_DATA_EXPORT" in have) == (year >= (2023, 3))
    assert not any(t.startswith("ENUM_") for t in have)
    assert have <= set(layout_tables(layout))
    for table in have:
        assert columns(con, table) == table_columns(table, layout), table

    kernel = columns(con, KERNEL)
    assert ("greenContextId" in kernel) == (year >= (2024, 6))
    assert ("mangledName" in kernel) == (year >= (2022, 1))
    assert ("sharedMemoryLimitConfig" in kernel) == (year >= (2020, 5))
    assert ("callchainId" in columns(con, RUNTIME)) == (year >= (2020, 5))
    memcpy = columns(con, MEMCPY)
    assert ("migrationCause" in memcpy) == (year >= (2020, 5))
    assert ("virtualAddress" in memcpy) == (year >= (2022, 1))
    assert columns(con, "NVTX_EVENTS") == NVTX_19 + (["binaryData"] if year >= (2024, 6) else [])
    if layout == "2020.3":
        assert kernel == KERNEL_2020_3
    if layout == "2024.6":
        assert kernel == KERNEL_2024_6
        assert columns(con, "TARGET_INFO_GPU")[:3] == ["vmId", "id", "name"]
        assert "smCount" in columns(con, "TARGET_INFO_GPU")
    # nsys creates no index
    assert con.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                       "AND sql IS NOT NULL").fetchone()[0] == 0


def test_ddl_types_and_not_null_match_nsys(tmp_path):
    con = connect(everything(SynthDb()).save(tmp_path / "x.sqlite"))
    info = {r["name"]: (r["type"], r["notnull"], r["pk"])
            for r in con.execute(f"PRAGMA table_info({KERNEL})")}
    assert info["start"] == ("INTEGER", 1, 0)
    assert info["correlationId"] == ("INTEGER", 0, 0)
    assert info["demangledName"] == ("INTEGER", 1, 0)
    assert info["graphNodeId"] == ("INTEGER", 0, 0)
    nvtx = {r["name"]: (r["type"], r["notnull"])
            for r in con.execute("PRAGMA table_info(NVTX_EVENTS)")}
    assert nvtx["end"] == ("INTEGER", 0) and nvtx["text"] == ("TEXT", 0)
    assert nvtx["doubleValue"] == ("REAL", 0) and nvtx["binaryData"] == ("TEXT", 0)
    strings = {r["name"]: r["pk"] for r in con.execute("PRAGMA table_info(StringIds)")}
    assert strings == {"id": 1, "value": 0}


def test_tables_are_created_lazily_unless_asked(tmp_path):
    db = SynthDb()
    db.thread(1).mark("only a mark")
    con = connect(db.save(tmp_path / "a.sqlite"))
    assert KERNEL not in tables(con) and MEMSET not in tables(con)
    assert "TARGET_INFO_GPU" not in tables(con)  # no device used

    db = SynthDb(create_tables=[KERNEL, MEMSET], enum_tables=True)
    db.thread(1).mark("m")
    con = connect(db.save(tmp_path / "b.sqlite"))
    assert con.execute(f"SELECT count(*) FROM {KERNEL}").fetchone()[0] == 0
    assert columns(con, MEMSET) == table_columns(MEMSET)
    enum = dict(con.execute("SELECT id, name FROM ENUM_NSYS_EVENT_TYPE").fetchall())
    assert enum[59] == "NvtxPushPopRange" and enum[60] == "NvtxStartEndRange"
    assert enum[34] == "NvtxMark" and enum[75] == "NvtxDomainCreate"
    kinds = dict(con.execute("SELECT id, label FROM ENUM_CUDA_MEM_KIND").fetchall())
    assert kinds[0] == "Pageable" and kinds[2] == "Device" and kinds[7] == "Unknown"


def test_metadata_rows(tmp_path):
    con = connect(SynthDb().save(tmp_path / "a.sqlite"))
    meta = dict(con.execute("SELECT name, value FROM META_DATA_EXPORT").fetchall())
    assert meta["EXPORT_PRODUCT_VERSION"].startswith("2024.6")
    assert meta["EXPORT_SCHEMA_VERSION"] == "3.16.1"
    con = connect(SynthDb("2022.1").save(tmp_path / "b.sqlite"))
    assert dict(con.execute("SELECT name, value FROM EXPORT_META_DATA").fetchall())[
        "EXPORT_SCHEMA_VERSION"] == "2.9.1"
    db = SynthDb(product="pyprof")
    db.meta("EXPORT_PRODUCT_VERSION", "9.9")
    con = connect(db.save(tmp_path / "c.sqlite"))
    meta = dict(con.execute("SELECT name, value FROM META_DATA_EXPORT").fetchall())
    assert meta["EXPORT_PRODUCT_NAME"] == "pyprof" and meta["EXPORT_SCHEMA_VERSION"] == "1"
    assert meta["EXPORT_PRODUCT_VERSION"] == "9.9"
    assert "META_DATA_EXPORT" not in tables(connect(SynthDb("2021.2").save(tmp_path / "d.sqlite")))


# -- ids ------------------------------------------------------------------------------------

def test_global_ids_are_packed_like_nsys(tmp_path):
    assert global_tid(0x123456, 0x654321) == 0x0001123456654321
    assert global_pid(7) == (1 << 48) | (7 << 24)
    db = SynthDb()
    main, worker = db.thread(4242), db.thread(4242, 4250, name="pt_autograd_0")
    with main.range("a"):
        main.launch(GEMM)
    worker.mark("b")
    con = connect(db.save(tmp_path / "x.sqlite"))
    gtids = {r[0] for r in con.execute("SELECT globalTid FROM NVTX_EVENTS")}
    assert gtids == {global_tid(4242, 4242), global_tid(4242, 4250)}
    assert con.execute(f"SELECT globalTid FROM {RUNTIME}").fetchone()[0] == global_tid(4242, 4242)
    k = con.execute(f"SELECT globalPid FROM {KERNEL}").fetchone()[0]
    assert k == global_pid(4242) and (k >> 24) & 0xFFFFFF == 4242 and k & 0xFFFFFF == 0
    assert con.execute("SELECT globalPid, pid FROM PROCESSES").fetchall() == [(k, 4242)]
    names = dict(con.execute("SELECT t.globalTid, s.value FROM ThreadNames t "
                             "JOIN StringIds s ON s.id = t.nameId").fetchall())
    assert names == {global_tid(4242, 4242): "python3", global_tid(4242, 4250): "pt_autograd_0"}


def test_correlation_ids_restart_in_every_process(tmp_path):
    db = SynthDb()
    a, b = db.thread(100), db.thread(200)
    for i in range(3):
        a.launch(GEMM, duration=1000 + i)
        b.launch(ELEMENTWISE, duration=2000 + i, device=1)
    b.memcpy(100, "DtoH")
    a.memset(64, 1)
    con = connect(db.save(tmp_path / "x.sqlite"))
    corr = {}
    for pid in (100, 200):
        corr[pid] = [r[0] for r in con.execute(
            f"SELECT correlationId FROM {KERNEL} WHERE globalPid = ? ORDER BY start",
            (global_pid(pid),))]
    assert corr[100] == corr[200] == [1, 2, 3]
    # Every GPU activity has exactly one launch of the same process with its correlation id ...
    for table in (KERNEL, MEMCPY, MEMSET):
        for row in con.execute(
                f"SELECT (SELECT count(*) FROM {RUNTIME} r WHERE r.correlationId = g.correlationId"
                f" AND (r.globalTid & 0xFFFFFFFFFF000000) = g.globalPid) FROM {table} g"):
            assert row[0] == 1
    # ... and a join without the process condition is ambiguous.
    assert con.execute(f"SELECT count(*) FROM {KERNEL} k JOIN {RUNTIME} r "
                       "USING (correlationId)").fetchone()[0] > 6
    # the two processes' kernels sit on their own devices
    assert {r[0] for r in con.execute(f"SELECT deviceId FROM {KERNEL} WHERE globalPid = ?",
                                      (global_pid(200),))} == {1}
    assert {r[0] for r in con.execute("SELECT id FROM TARGET_INFO_GPU")} == {0, 1}

    db = SynthDb(first_correlation_id=1000)
    db.thread(1).launch(GEMM)
    con = connect(db.save(tmp_path / "y.sqlite"))
    assert con.execute(f"SELECT correlationId FROM {KERNEL}").fetchone()[0] == 1000


def test_every_api_call_takes_a_correlation_id(tmp_path):
    db = SynthDb()
    t = db.thread(1)
    assert t.api("cudaStreamIsCapturing_v10000") == 1
    assert t.launch(GEMM) == 2
    assert t.synchronize() == 3
    assert t.launch(GEMM, api="cuLaunchKernel") == 4
    con = connect(db.save(tmp_path / "x.sqlite"))
    rows = con.execute(f"SELECT r.correlationId, s.value, r.eventClass FROM {RUNTIME} r "
                       "JOIN StringIds s ON s.id = r.nameId ORDER BY r.start").fetchall()
    assert [tuple(r) for r in rows] == [
        (1, "cudaStreamIsCapturing_v10000", 0), (2, "cudaLaunchKernel_v7000", 0),
        (3, "cudaDeviceSynchronize_v3020", 0), (4, "cuLaunchKernel", 1)]
    sync = con.execute(f"SELECT syncType, streamId, correlationId FROM {SYNC}").fetchone()
    assert tuple(sync) == (4, 4294967295, 3)


# -- time -----------------------------------------------------------------------------------

def test_gpu_work_starts_after_its_launch_and_streams_serialise(tmp_path):
    db = SynthDb()
    t, u = db.thread(1), db.thread(1, 2)
    for i in range(20):
        t.launch(GEMM, duration=10_000, stream=7 if i % 3 else 13)
        u.launch(ELEMENTWISE, duration=3_000, stream=7)
        t.memcpy(1 << 16, "HtoD", stream=13)
        t.advance(500)
    t.memcpy(1 << 20, "DtoH", sync=True)
    con = connect(db.save(tmp_path / "x.sqlite"))
    n = 0
    for table in (KERNEL, MEMCPY):
        for g_start, g_end, r_start, r_end, name in con.execute(
                f"SELECT g.start, g.end, r.start, r.end, s.value FROM {table} g JOIN {RUNTIME} r "
                "ON r.correlationId = g.correlationId AND (r.globalTid & 0xFFFFFFFFFF000000) = "
                "g.globalPid JOIN StringIds s ON s.id = r.nameId"):
            n += 1
            assert g_end > g_start
            if name == "cudaMemcpy_v3020":  # synchronous: the call ends after the copy
                assert r_start < g_start and g_end < r_end
            else:
                assert g_start >= r_end
    assert n == 61
    for stream in (7, 13):
        spans = sorted(tuple(r) for r in con.execute(
            f"SELECT start, end FROM {KERNEL} WHERE streamId = ? UNION ALL "
            f"SELECT start, end FROM {MEMCPY} WHERE streamId = ?", (stream, stream)))
        for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
            assert e0 <= s1
    # launches on one thread never overlap in CPU time
    ends = con.execute(f"SELECT start, end FROM {RUNTIME} WHERE globalTid = ? ORDER BY start",
                       (global_tid(1, 1),)).fetchall()
    assert all(e0 <= s1 for (_, e0), (s1, _) in zip(ends, ends[1:]))


def test_ranges_enclose_their_launches(tmp_path):
    db = SynthDb()
    t = db.thread(7)
    with t.range("outer"):
        t.advance(1000)
        with t.range("inner"):
            corr = t.launch(GEMM)
    con = connect(db.save(tmp_path / "x.sqlite"))
    r_start, r_end = con.execute(f"SELECT start, end FROM {RUNTIME} WHERE correlationId = ?",
                                 (corr,)).fetchone()
    texts = [r[0] for r in con.execute(
        "SELECT text FROM NVTX_EVENTS WHERE globalTid = ? AND start < ? AND end > ? "
        "ORDER BY start", (global_tid(7, 7), r_start, r_end))]
    assert texts == ["outer", "inner"]
    # rows are written when the range ends: inner first
    assert [r[0] for r in con.execute("SELECT text FROM NVTX_EVENTS")] == ["inner", "outer"]


# -- NVTX -----------------------------------------------------------------------------------

def test_pyprof_markers(tmp_path):
    db = SynthDb()
    t = db.thread(300)
    bwd = db.thread(300, 301, name="pt_autograd_0")
    x = tensor([8, 3, 32, 32])
    assert x["stride"] == [3072, 1024, 32, 1]
    with db.pyprof_module(t, "LeNet", "LeNet"):
        with db.pyprof_module(t, "LeNet.conv1", "Conv2d"):
            with db.pyprof_op(t, "aten::conv2d", seq=7, args={"input": x, "groups": 1},
                              stack="train.py:12"):
                with t.pyprof_op("aten::cudnn_convolution", seq=7, args_json='{"0":null}'):
                    t.launch(GEMM)
    bwd.wait_until(t.now)
    with bwd.pyprof_op("ConvolutionBackward0", seq=7, fwd_tid=t.rf_tid, scope="backward",
                       id=97, overload="default"):
        bwd.launch(ELEMENTWISE)
    con = connect(db.save(tmp_path / "x.sqlite"))
    domains = con.execute("SELECT text, domainId, globalTid FROM NVTX_EVENTS "
                          "WHERE eventType = ?", (DOMAIN_CREATE,)).fetchall()
    assert [tuple(d) for d in domains] == [("pyprof", 1, global_tid(300, 300))]
    rows = con.execute("SELECT text, textId, domainId, globalTid FROM NVTX_EVENTS "
                       "WHERE eventType = ? ORDER BY start", (PUSH_POP,)).fetchall()
    strings = dict(con.execute("SELECT id, value FROM StringIds").fetchall())
    assert all(r["domainId"] == 1 for r in rows)
    mods = [json.loads(strings[r["textId"]]) for r in rows if r["text"] is None]
    assert mods == [{"v": 1, "module": "LeNet", "type": "LeNet"},
                    {"v": 1, "module": "LeNet.conv1", "type": "Conv2d"}]
    ops = [json.loads(r["text"]) for r in rows if r["text"] is not None]
    assert list(ops[0]) == ["v", "op", "id", "seq", "tid", "scope", "stack", "args"]
    assert ops[0]["op"] == "aten::conv2d" and ops[0]["args"]["input"] == x
    assert ops[0]["id"] == 1 and ops[1]["id"] == 2 and ops[1]["args"] == {"0": None}
    assert ops[0]["tid"] == 1 and ops[0]["seq"] == 7
    assert ops[2] == {"v": 1, "op": "ConvolutionBackward0", "overload": "default", "id": 97,
                      "seq": 7, "tid": 2, "fwd_tid": 1, "scope": "backward", "args": {}}
    assert [r["globalTid"] for r in rows][-1] == global_tid(300, 301)
    # unregistered module markers (for legacy readers): plain text
    db = SynthDb()
    with db.thread(1).pyprof_module("M", "Linear", registered=False):
        pass
    con = connect(db.save(tmp_path / "y.sqlite"))
    assert con.execute("SELECT text, textId FROM NVTX_EVENTS WHERE eventType = 59").fetchone()[
        0] == '{"v":1,"module":"M","type":"Linear"}'


def test_domains_are_per_process(tmp_path):
    db = SynthDb()
    a, b = db.thread(1), db.thread(2)
    assert b.domain("other") == 1
    assert a.domain("pyprof") == 1 and b.domain("pyprof") == 2 and a.domain("pyprof") == 1
    a.mark("x", domain="pyprof", color=0xFF00FF00, category=3, payload=5)
    a.mark("y", payload=("uint32Value", 9))
    a.mark("z", payload=2.5)
    a.name_category(3, "cat")
    a.name_os_thread("main")
    a.destroy_domain("pyprof")
    con = connect(db.save(tmp_path / "x.sqlite"))
    creates = con.execute("SELECT text, domainId, globalTid >> 24 & 0xFFFFFF FROM NVTX_EVENTS "
                          "WHERE eventType = 75 ORDER BY globalTid, domainId").fetchall()
    assert [tuple(r) for r in creates] == [("pyprof", 1, 1), ("other", 1, 2), ("pyprof", 2, 2)]
    marks = con.execute("SELECT text, end, color, category, domainId, int64Value, uint32Value, "
                        "doubleValue FROM NVTX_EVENTS WHERE eventType = ?", (MARK,)).fetchall()
    assert [tuple(m) for m in marks] == [("x", None, 0xFF00FF00, 3, 1, 5, None, None),
                                         ("y", None, None, None, 0, None, 9, None),
                                         ("z", None, None, None, 0, None, None, 2.5)]
    assert {r[0] for r in con.execute("SELECT eventType FROM NVTX_EVENTS")} >= {33, 39, 76}


def test_start_end_ranges(tmp_path):
    db = SynthDb()
    t, u = db.thread(5), db.thread(5, 6)
    r1 = t.start_range("same thread")
    r2 = t.start_range("crosses threads", registered=True)
    t.advance(10_000)
    r1.end()
    r2.end(on_thread=u)
    r3 = u.start_range("never ended")
    with pytest.raises(RuntimeError):
        r1.end()
    con = connect(db.save(tmp_path / "x.sqlite"))
    rows = con.execute("SELECT start, end, rangeId, globalTid, endGlobalTid, text, textId "
                       "FROM NVTX_EVENTS WHERE eventType = ? ORDER BY rangeId",
                       (START_END,)).fetchall()
    assert [r["rangeId"] for r in rows] == [1, 2, 3] and r3.range_id == 3
    same, cross, never = rows
    assert same["endGlobalTid"] is None and same["end"] > same["start"]
    assert cross["globalTid"] == global_tid(5, 5) and cross["endGlobalTid"] == global_tid(5, 6)
    assert cross["text"] is None and cross["textId"] is not None and cross["end"] > cross["start"]
    assert never["end"] is None


def test_unclosed_and_malformed_ranges(tmp_path):
    db = SynthDb()
    t = db.thread(9)
    t.push("left open")
    t.push("inner open")
    t.range_at("backwards", start=5000, end=4000)
    t.range_at("no end", start=6000, end=None)
    t.range_at(None, start=7000, end=8000, textId=db.string_id("by id"), rangeId=42)
    assert t.depth == 2
    with pytest.raises(RuntimeError):
        db.thread(10).pop()
    con = connect(db.save(tmp_path / "x.sqlite"))
    rows = {r["text"] or r["textId"]: r for r in con.execute("SELECT * FROM NVTX_EVENTS")}
    assert rows["left open"]["end"] is None and rows["inner open"]["end"] is None
    assert rows["backwards"]["end"] < rows["backwards"]["start"]
    assert rows["no end"]["end"] is None
    assert rows[db.string_id("by id")]["rangeId"] == 42


# -- kernels --------------------------------------------------------------------------------

def test_kernel_row_contents(tmp_path):
    db = SynthDb()
    t = db.thread(1)
    t.launch(ELEMENTWISE, grid=(108, 2), block=(256,), registers=40, static_shared=1024,
             dynamic_shared=2048, duration=1234, device=0, stream=13)
    t.launch("my_kernel", short="mine", mangled=None)
    con = connect(db.save(tmp_path / "x.sqlite"))
    s = dict(con.execute("SELECT id, value FROM StringIds").fetchall())
    k1, k2 = con.execute(f"SELECT * FROM {KERNEL} ORDER BY start").fetchall()
    assert s[k1["demangledName"]] == ELEMENTWISE
    assert s[k1["shortName"]] == "vectorized_elementwise_kernel"
    assert s[k1["mangledName"]].startswith("_ZN2at6native")
    assert (k1["gridX"], k1["gridY"], k1["gridZ"], k1["blockX"], k1["blockY"], k1["blockZ"]) == (
        108, 2, 1, 256, 1, 1)
    assert (k1["registersPerThread"], k1["staticSharedMemory"], k1["dynamicSharedMemory"]) == (
        40, 1024, 2048)
    assert k1["end"] - k1["start"] == 1234 and k1["streamId"] == 13
    assert k1["launchType"] == 1 and k1["graphNodeId"] is None
    assert k1["gridId"] != k2["gridId"]
    assert s[k2["shortName"]] == "mine" and k2["mangledName"] is None
    assert short_kernel_name(GEMM) == "Kernel2"
    assert short_kernel_name("void foo<(int)4>(float*)") == "foo"


def test_graph_launch_shares_one_correlation_id(tmp_path):
    db = SynthDb()
    t = db.thread(1)
    corr = t.graph_launch([GEMM, {"kernel": ELEMENTWISE, "duration": 100, "grid": (2, 1, 1)}],
                          first_node=10)
    con = connect(db.save(tmp_path / "x.sqlite"))
    rows = con.execute(f"SELECT correlationId, graphNodeId, end - start FROM {KERNEL} "
                       "ORDER BY start").fetchall()
    assert [tuple(r) for r in rows] == [(corr, 10, 5000), (corr, 11, 100)]
    assert con.execute(f"SELECT count(*) FROM {RUNTIME}").fetchone()[0] == 1


def test_kernel_without_launch_record(tmp_path):
    db = SynthDb()
    db.thread(1).launch(GEMM, record_api=False)
    con = connect(db.save(tmp_path / "x.sqlite"))
    assert con.execute(f"SELECT count(*) FROM {KERNEL}").fetchone()[0] == 1
    assert RUNTIME not in tables(con)


def test_memcpy_and_memset_rows(tmp_path):
    db = SynthDb()
    t = db.thread(1)
    t.memcpy(1 << 20, "HtoD", src_kind="pinned")
    t.memcpy(256, "DtoH")
    t.memcpy(4096, "PtoP", peer_device=1)
    t.memset(512, value=255, mem_kind="managed")
    con = connect(db.save(tmp_path / "x.sqlite"))
    copies = con.execute(f"SELECT bytes, copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId "
                         f"FROM {MEMCPY} ORDER BY correlationId").fetchall()
    assert [tuple(c) for c in copies] == [(1 << 20, 1, 1, 2, None, None),
                                          (256, 2, 2, 0, None, None), (4096, 10, 2, 2, 0, 1)]
    assert tuple(con.execute(f"SELECT bytes, value, memKind FROM {MEMSET}").fetchone()) == (
        512, 255, 4)
    names = [r[0] for r in con.execute(f"SELECT s.value FROM {RUNTIME} r JOIN StringIds s "
                                       "ON s.id = r.nameId ORDER BY r.start")]
    assert names == ["cudaMemcpyAsync_v3020"] * 3 + ["cudaMemsetAsync_v3020"]


# -- row order, determinism, streaming --------------------------------------------------------

def kernel_corrs(path):
    return [r[0] for r in sqlite3.connect(path).execute(
        f"SELECT correlationId FROM {KERNEL} ORDER BY rowid")]


def launches(db: SynthDb, n: int = 30) -> SynthDb:
    t = db.thread(1)
    for i in range(n):
        with t.range(f"op{i}"):
            t.launch(GEMM, stream=7 + 6 * (i % 2), duration=1000 * (1 + i % 5))
    return db


def test_shuffle_swap_and_sort_kernel_rows(tmp_path):
    in_order = kernel_corrs(launches(SynthDb()).save(tmp_path / "a.sqlite"))
    assert in_order == list(range(1, 31))
    db = launches(SynthDb())
    db.shuffle_kernel_rows(seed=3)
    shuffled = kernel_corrs(db.save(tmp_path / "b.sqlite"))
    assert shuffled != in_order and sorted(shuffled) == in_order
    db = launches(SynthDb())
    db.shuffle_kernel_rows(seed=3)
    assert kernel_corrs(db.save(tmp_path / "c.sqlite")) == shuffled
    db = launches(SynthDb())
    db.swap_kernel_rows(0, 29)
    assert kernel_corrs(db.save(tmp_path / "d.sqlite"))[::29] == [30, 1]
    db = launches(SynthDb())
    db.sort_rows(KERNEL, "start", reverse=True)
    con = sqlite3.connect(db.save(tmp_path / "e.sqlite"))
    starts = [r[0] for r in con.execute(f"SELECT start FROM {KERNEL} ORDER BY rowid")]
    assert starts == sorted(starts, reverse=True)


def test_builds_are_deterministic_and_streaming_writes_the_same(tmp_path):
    a = everything(launches(SynthDb())).save(tmp_path / "a.sqlite")
    b = everything(launches(SynthDb())).save(tmp_path / "b.sqlite")
    assert open(a, "rb").read() == open(b, "rb").read()
    s = everything(launches(SynthDb.streaming(tmp_path / "s.sqlite", chunk_rows=7)))
    with pytest.raises(RuntimeError):
        s.shuffle_kernel_rows(1)
    s = s.save()
    ca, cs = sqlite3.connect(a), sqlite3.connect(s)
    assert tables(ca) == tables(cs)
    for table in tables(ca):
        assert (ca.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall() ==
                cs.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()), table


def test_bad_arguments():
    with pytest.raises(ValueError):
        SynthDb("2019.1")
    db = SynthDb()
    with pytest.raises(TypeError):
        db.thread(1).mark("x", payload="text")
    with pytest.raises(ValueError):
        db.save()


# -- the benchmark generator (benchmarks/make_parse_db.py) -----------------------------------

def check_profile(path) -> dict:
    """Properties every profile `parse` benchmarks on must have; returns a few counts."""
    con = sqlite3.connect(path)
    launches = {}  # (globalPid, correlationId) -> launch end; each exactly once
    for gtid, corr, end in con.execute(f"SELECT globalTid, correlationId, end FROM {RUNTIME}"):
        key = (gtid & 0xFFFFFFFFFF000000, corr)
        assert key not in launches
        launches[key] = end
    for table in (KERNEL, MEMCPY, MEMSET):
        for gpid, corr, start in con.execute(
                f"SELECT globalPid, correlationId, start FROM {table}"):
            assert launches[(gpid, corr)] <= start, table
    spans = {}
    for table in (KERNEL, MEMCPY, MEMSET):
        for row in con.execute(f"SELECT globalPid, deviceId, streamId, start, end FROM {table}"):
            spans.setdefault(row[:3], []).append(row[3:])
    for v in spans.values():
        v.sort()
        assert all(e0 <= s1 for (_, e0), (s1, _) in zip(v, v[1:]))
    threads, ops, iterations = {}, [], {}
    for start, end, gtid, text in con.execute(
            "SELECT start, end, globalTid, text FROM NVTX_EVENTS WHERE eventType = 59"):
        threads.setdefault(gtid, []).append((start, end))
        if text and text.startswith('{"v":1,"op"'):
            ops.append((gtid >> 24 & 0xFFFFFF, json.loads(text)))
        elif text and text.startswith("iteration "):
            iterations.setdefault(gtid, []).append(int(text.split()[1]))
    for v in threads.values():  # ranges of one thread nest
        v.sort(key=lambda r: (r[0], -r[1]))
        stack = []
        for start, end in v:
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1]
            stack.append(end)
    assert len({(p, o["id"]) for p, o in ops}) == len(ops)  # op ids unique per process
    forward = {(p, o["tid"], o["seq"]) for p, o in ops if o["scope"] == "function"}
    backward = [(p, o) for p, o in ops if o["scope"] == "backward" and o["seq"] >= 0]
    assert backward and all((p, o["fwd_tid"], o["seq"]) in forward for p, o in backward)
    for its in iterations.values():
        assert sorted(its) == list(range(len(its)))
    return {"processes": len(iterations), "ops": len(ops),
            "kernels": con.execute(f"SELECT count(*) FROM {KERNEL}").fetchone()[0]}


def test_benchmark_generator_replays_a_consistent_profile(tmp_path):
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    import make_parse_db

    path = str(tmp_path / "bench.sqlite")
    info = make_parse_db.generate(path, 4700, processes=2)  # over 2 periods: replayed rows
    assert info["iterations"] > 2 * make_parse_db.PERIOD
    assert 2.5 <= info["ranges_per_kernel"] <= 3.5
    counts = check_profile(path)
    assert counts["processes"] == 2 and counts["kernels"] == info["kernels"] >= 3500
    con = connect(path)
    assert columns(con, KERNEL) == table_columns(KERNEL, "2024.6")
    streams = {r[0] for r in con.execute(f"SELECT DISTINCT streamId FROM {KERNEL}")}
    assert streams == {7, 13, 19}
    # correlation ids collide across the two processes
    assert con.execute(f"SELECT count(*) FROM (SELECT correlationId FROM {KERNEL} "
                       "GROUP BY correlationId HAVING count(DISTINCT globalPid) = 2)"
                       ).fetchone()[0] > 1000
    # module markers are registered strings; legacy-compatible files have no NULL text and
    # no text PyProf would eval()
    assert con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND text IS NULL"
                       ).fetchone()[0] > 0
    legacy = str(tmp_path / "legacy.sqlite")
    make_parse_db.generate(legacy, 1000, legacy=True)
    con = sqlite3.connect(legacy)
    assert con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE text IS NULL").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE '%mod%' AND "
                       "text LIKE '%op%' AND text LIKE '%args%' AND text LIKE '%type%'"
                       ).fetchone()[0] == 0
    pool = [json.loads(t) for (t,) in con.execute(
        "SELECT text FROM NVTX_EVENTS WHERE text LIKE '%aten::max_pool2d\"%'")]
    assert pool and pool[0]["args"]["ceil_mode"] is False


def test_benchmark_generator_interned_markers_parse_like_text(tmp_path):
    """make_parse_db.py --interned (the form pyprof records by default) holds the same profile
    as the text form: parse writes the same records from both, replayed periods included
    (their op ids and seqs move in uint64Value / category instead of the text)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    import make_parse_db
    from testlib import parse as run_parse

    text, interned = str(tmp_path / "text.sqlite"), str(tmp_path / "interned.sqlite")
    make_parse_db.generate(text, 4700, processes=2)
    info = make_parse_db.generate(interned, 4700, processes=2, interned=True)
    assert info["interned"] and info["iterations"] > 2 * make_parse_db.PERIOD
    con = sqlite3.connect(interned)
    # op markers are registered strings with the op id as payload, no plain-text op marker
    assert con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE uint64Value IS NOT NULL AND "
                       "text IS NULL AND textId IS NOT NULL").fetchone()[0] > 10000
    assert con.execute("SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE '{\"v\":1,\"op\"%'"
                       ).fetchone()[0] == 0
    assert os.path.getsize(interned) < os.path.getsize(text) / 2
    head_t, recs_t, _ = run_parse(text)
    head_i, recs_i, _ = run_parse(interned)
    assert len(recs_t) > 4700
    assert recs_i == recs_t
    head_t.pop("source"), head_i.pop("source")
    assert head_i == head_t


def test_nvtx_events_read_in_chunks_by_two_threads_parse_the_same(tmp_path):
    """Large NVTX_EVENTS tables are read in chunks of rows by two threads and merged in table
    order (parse/nsys_reader.cpp). PYPROF_PARSE_CHUNK_ROWS forces that on a small file with
    many small chunks: the records, the range lines and the summary (its warnings and counts,
    from rows spread over several chunks) must be those of the plain one-thread read."""
    import os
    import subprocess
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    import make_parse_db
    from testlib import PARSE

    for interned in (False, True):
        path = str(tmp_path / f"chunks_{interned}.sqlite")
        make_parse_db.generate(path, 4700, processes=2, interned=interned)
        con = sqlite3.connect(path)
        rows = con.execute("SELECT count(*) FROM NVTX_EVENTS").fetchone()[0]
        # Faults the summary must count and name, in the middle and at the end of the table:
        # ranges that end before they start, and ranges of a domain with no creation row.
        gtid = con.execute("SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 59 LIMIT 1"
                           ).fetchone()[0]
        for start in (20, 5, 30):
            con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, domainId, "
                        "text) VALUES (?, 10, 59, ?, 4242, 'orphan')", (start, gtid))
        for rowid in (rows // 3, rows // 2):
            con.execute("UPDATE NVTX_EVENTS SET end = start - 5 WHERE rowid = ?", (rowid,))
        con.execute("UPDATE NVTX_EVENTS SET domainId = 4242 WHERE rowid = ?", (rows // 4,))
        # Trace-level marks in several chunks (rows turned into marks of the pyprof domain): the
        # last settings mark in table order is the header's; a compiled kernel marked alike in
        # two chunks is one line, one marked differently in two chunks is ambiguous (warned once).
        pyprof_domain, pyprof_gtid = con.execute(
            "SELECT domainId, globalTid FROM NVTX_EVENTS WHERE eventType = 75 AND "
            "text = 'pyprof'").fetchone()
        x = {"shape": [4], "dtype": "float32"}
        kernel = {"nodes": [{"op": "aten::exp", "args": {"self": x}, "out": x}],
                  "reads": [x], "writes": [x], "missing": 0}
        other = {"nodes": [{"op": "aten::neg", "args": {"self": x}, "out": x}],
                 "reads": [x], "writes": [x], "missing": 0}
        marks = {rows // 5: {"v": 1, "settings": {"tf32": False}},
                 rows // 5 + 1: {"v": 1, "compiled_kernel": "k_same", "kernel": kernel},
                 rows // 5 + 2: {"v": 1, "compiled_kernel": "k_twice", "kernel": kernel},
                 4 * rows // 5: {"v": 1, "settings": {"tf32": True}},
                 4 * rows // 5 + 1: {"v": 1, "compiled_kernel": "k_same", "kernel": kernel},
                 4 * rows // 5 + 2: {"v": 1, "compiled_kernel": "k_twice", "kernel": other}}
        for rowid, mark in marks.items():
            con.execute("UPDATE NVTX_EVENTS SET eventType = 34, end = NULL, text = ?, "
                        "textId = NULL, domainId = ?, globalTid = ?, uint64Value = NULL "
                        "WHERE rowid = ?", (json.dumps(mark), pyprof_domain, pyprof_gtid, rowid))
        con.commit()
        con.close()

        def run(env_extra):
            env = dict(os.environ, **env_extra)
            if not env_extra:
                env.pop("PYPROF_PARSE_CHUNK_ROWS", None)
            res = subprocess.run([PARSE, path, "--ranges"], capture_output=True, text=True,
                                 env=env, timeout=120)
            assert res.returncode == 0, res.stderr
            return res.stdout, res.stderr

        plain_out, plain_err = run({})
        assert "unknown NVTX domain (2x)" in plain_err, plain_err  # two processes
        assert "range ends before it starts" in plain_err, plain_err
        assert "ambiguous compiled kernel (1x)" in plain_err and "k_twice" in plain_err
        lines = [json.loads(line) for line in plain_out.splitlines()]
        assert lines[0]["torch_settings"] == {"tf32": True}
        assert [d["name"] for d in lines if d.get("kind") == "compiled_kernel"] == ["k_same"]
        for chunk in ("997", "4096"):
            out, err = run({"PYPROF_PARSE_CHUNK_ROWS": chunk})
            assert rows // int(chunk) >= 3  # several chunks, both threads busy
            assert out == plain_out
            assert err.replace(path, "") == plain_err.replace(path, "")
