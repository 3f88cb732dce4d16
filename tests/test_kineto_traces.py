"""parse on real torch.profiler (Kineto) traces, checked against an oracle that reads the same
JSON with Python's gzip and json (not pyprof's C++); parse on broken and hostile traces; prof on
a Kineto net.dict.

The four small traces are copies in tests/data (see its README); the three large ones are read
from ../shared/traces/real, and their tests skip when that folder is not there.
"""

import bisect
import collections
import decimal
import gc
import gzip
import json
import os
import re
import resource
import shutil
import subprocess
import sys

import pytest

from testlib import (DATA, PARSE, PY, SHARED_TRACES, parse, prof, read_dict, read_records,
                     run_tool)

pytestmark = pytest.mark.needs_build

REAL = os.path.join(SHARED_TRACES, "real")

TRACES = {
    "alexnet": "kineto_hta-alexnet-a100.json.gz",
    "event_sync": "kineto_hta-a100-event-sync-multistream.json.gz",
    "cpu_only": "kineto_hta-cpu-only-gloo-rank34.json.gz",
    "rocm": "kineto_hta-mi250-rocm6.2-minitoy.json.gz",
    "nccl": "kineto_hta-a100-nccl-fwdbwd.json.gz",
    "control": "kineto_hta-a100-record-shapes-control.json.gz",
    "test": "kineto_hta-a100-record-shapes-test.json.gz",
    # Recorded by scripts/gpu_kineto_trace.py on an H100 (torch 2.11.0+cu130, CUDA 13.0), three
    # training steps of an example model each: this torch's format and Hopper's kernels.
    "h100_resnet_block": "h100/kineto-torch2.11-h100-resnet_block.json.gz",
    "h100_transformer": "h100/kineto-torch2.11-h100-transformer.json.gz",
    "h100_lstm": "h100/kineto-torch2.11-h100-lstm.json.gz",
}

# Event counts from ../shared/traces/real/README.md (counted when the files were collected):
# the oracle must agree with them before anything is compared with parse.
README_COUNTS = {  # cpu_op, cuda_runtime, kernel, gpu_memcpy, gpu_memset
    "alexnet": (359, 361, 79, 16, 3),
    "event_sync": (6, 39, 3, 0, 3),
    "cpu_only": (4, 0, 0, 0, 0),
    "rocm": (70, 21, 14, 2, 0),
    "nccl": (14346, 8740, 2700, 960, 114),
    "control": (40506, 24692, 8568, 228, 654),
    "test": (31236, 21167, 9876, 4856, 900),
    # tests/data/README.md (counted with gzip + json when they were recorded).
    "h100_resnet_block": (531, 196, 105, 0, 0),
    "h100_transformer": (1140, 217, 180, 0, 12),
    "h100_lstm": (726, 535, 138, 0, 0),
}

EVALUATE_FUNCTION = "autograd::engine::evaluate_function: "
# Autograd nodes: generated ones (AddmmBackward0), and torch::autograd's own (AccumulateGrad,
# CppNode<...> of custom C++ functions).
BACKWARD_NODE = re.compile(r"(torch::autograd::.+|[A-Za-z0-9_]+Backward\d*)")


def with_slow(names) -> list:
    """pytest parameters: the record_shapes test trace is marked slow (its net.dict is 76 MB: the
    4,464 kernels of its CUDA graph each carry their op's 150 input shapes, and reading that
    back in Python takes seconds)."""
    return [pytest.param(n, marks=pytest.mark.slow) if n == "test" else n for n in names]


def trace_file(name: str) -> str:
    for folder in (DATA, REAL):
        path = os.path.join(folder, TRACES[name])
        if os.path.exists(path):
            return path
    pytest.skip(f"{TRACES[name]} is neither in tests/data nor in ../shared/traces/real")


def ns(value) -> int:
    """A Kineto time (µs, up to three decimals, read as Decimal so nothing is rounded) in ns."""
    return int(decimal.Decimal(value) * 1000)


def is_backward_node(name: str) -> bool:
    return bool(BACKWARD_NODE.fullmatch(name))


class Oracle:
    """What a Kineto trace holds, read with the standard library alone."""

    def __init__(self, path: str):
        # The cyclic garbage collector would walk the other traces' millions of objects again
        # and again while this one loads (4x slower); nothing here makes cycles.
        gc.disable()
        try:
            self._read(path)
        finally:
            gc.enable()

    def _read(self, path: str):
        with open(path, "rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        with (gzip.open if gzipped else open)(path, "rt") as f:
            self.doc = json.load(f, parse_float=decimal.Decimal)
        events = self.doc["traceEvents"]
        complete = collections.defaultdict(list)
        for e in events:
            if e.get("ph") == "X":
                complete[e.get("cat")].append(e)
        self.cpu_ops = complete["cpu_op"]
        self.kernels = complete["kernel"]
        self.memcpys = complete["gpu_memcpy"]
        self.memsets = complete["gpu_memset"]
        self.gpu_rows = self.kernels + self.memcpys + self.memsets
        self.calls = complete["cuda_runtime"] + complete["cuda_driver"]
        self.call_of = {c["args"]["correlation"]: c for c in self.calls}
        assert len(self.call_of) == len(self.calls), "correlation ids repeat: oracle needs pids"
        self.launched = [g for g in self.gpu_rows if g["args"].get("correlation") in self.call_of]
        self.nodes = [e for e in self.cpu_ops if is_backward_node(e["name"])]
        # The ranges parse takes as ops and backward nodes (the autograd engine's
        # evaluate_function wrappers and ProfilerStep#N are user ranges).
        self.op_ranges = [e for e in self.cpu_ops if not e["name"].startswith(
            (EVALUATE_FUNCTION, "ProfilerStep#"))]
        # The engine's per-node steps: work in one beside its node is the node's backward work.
        self.steps = [e for e in self.cpu_ops if e["name"].startswith(EVALUATE_FUNCTION)]
        for e in self.op_ranges + self.calls + self.gpu_rows + self.steps:
            e["_start"] = ns(e["ts"])
            e["_end"] = e["_start"] + ns(e["dur"])
        self.nodes_on_thread = collections.defaultdict(list)
        for e in sorted(self.op_ranges, key=lambda e: (e["_start"], -e["_end"])):
            if is_backward_node(e["name"]):
                self.nodes_on_thread[(e["pid"], e["tid"])].append(e)
        self.steps_on_thread = collections.defaultdict(list)
        for e in sorted(self.steps, key=lambda e: e["_start"]):
            self.steps_on_thread[(e["pid"], e["tid"])].append(e)
        self.node_starts = collections.defaultdict(list, {
            t: [e["_start"] for e in v] for t, v in self.nodes_on_thread.items()})
        self.step_starts = collections.defaultdict(list, {
            t: [e["_start"] for e in v] for t, v in self.steps_on_thread.items()})
        self.ops_on_thread = collections.defaultdict(list)
        for e in self.op_ranges:
            self.ops_on_thread[(e["pid"], e["tid"])].append(e)
        self.around = self._enclosing_ops()
        self.flow_pairs = self._fwdbwd_pairs(events)

    def _enclosing_ops(self) -> dict:
        """launch call correlation -> the op ranges on its thread that hold it, outermost first.
        One sweep per thread in start order; the ranges still open at a time are few (the call
        stack), so it is quick on 40,000 ops."""
        calls_on_thread = collections.defaultdict(list)
        for c in self.calls:
            calls_on_thread[(c["pid"], c["tid"])].append(c)
        around = {}
        for thread, calls in calls_on_thread.items():
            # At equal starts, ranges come before calls (a range that starts with a call holds
            # it) and longer ranges before shorter ones (outer before inner).
            items = [(e["_start"], 0, -e["_end"], i, e)
                     for i, e in enumerate(self.ops_on_thread[thread])]
            items += [(c["_start"], 1, 0, i, c) for i, c in enumerate(calls)]
            items.sort(key=lambda item: item[:4])
            open_ranges = []
            for start, is_call, _, _, e in items:
                open_ranges = [r for r in open_ranges if r["_end"] >= start]
                if is_call:
                    around[e["args"]["correlation"]] = [r for r in open_ranges
                                                        if r["_end"] >= e["_end"]]
                else:
                    open_ranges.append(e)
        return around

    def _node_of_step_around(self, call):
        """The backward node run by the innermost engine step (evaluate_function) holding the
        call, or None: the outermost node inside that step."""
        thread = (call["pid"], call["tid"])
        steps, step_starts = self.steps_on_thread[thread], self.step_starts[thread]
        at = bisect.bisect_right(step_starts, call["_start"])
        for step in reversed(steps[max(0, at - 8):at]):  # steps nest only a few deep
            if step["_end"] < call["_end"]:
                continue
            nodes, node_starts = self.nodes_on_thread[thread], self.node_starts[thread]
            for n in nodes[bisect.bisect_left(node_starts, step["_start"]):]:
                if n["_start"] > step["_end"]:
                    break
                if n["_end"] <= step["_end"]:
                    return n
            return None
        return None

    def _starting_at(self, pid, tid, ts, want_node: bool) -> list:
        """The innermost op (or node) on a thread that starts at ts: several when they tie."""
        found = [e for e in self.ops_on_thread[(pid, tid)] if e["ts"] == ts
                 and is_backward_node(e["name"]) == want_node]
        if not found:
            return []
        shortest = min(e["dur"] for e in found)
        return [e for e in found if e["dur"] == shortest]

    def _fwdbwd_pairs(self, events) -> dict:
        """backward node External id -> the forward op the fwdbwd flow names."""
        flows = collections.defaultdict(dict)
        for e in events:
            if e.get("cat") == "fwdbwd" and e.get("ph") in ("s", "f"):
                flows[e["id"]][e["ph"]] = e
        pairs = {}
        for flow in flows.values():
            if "s" not in flow or "f" not in flow:
                continue
            ops = self._starting_at(flow["s"]["pid"], flow["s"]["tid"], flow["s"]["ts"], False)
            nodes = self._starting_at(flow["f"]["pid"], flow["f"]["tid"], flow["f"]["ts"], True)
            assert len(ops) == 1 and len(nodes) == 1, flow
            pairs[nodes[0]["args"]["External id"]] = ops[0]
        return pairs

    def enclosing(self, call) -> list:
        """The op ranges on the call's thread that hold it, outermost first."""
        return self.around[call["args"]["correlation"]]

    def attribution(self, gpu_row) -> dict:
        """dir, and the names the record may give (a set: ranges with the same start and
        duration cannot be told apart by time) for op (fprop) or bwd_node / bwd_op (bprop)."""
        return self.attribution_of_call(self.call_of[gpu_row["args"]["correlation"]])

    def attribution_of_call(self, call) -> dict:
        around = self.enclosing(call)
        nodes = [e for e in around if is_backward_node(e["name"])]

        def innermost(ranges):
            if not ranges:
                return {None}
            last = (ranges[-1]["_start"], ranges[-1]["_end"])
            return {e["name"] for e in ranges if (e["_start"], e["_end"]) == last}

        if not around:
            return {"dir": None, "op": {None}}
        if not nodes:
            node = self._node_of_step_around(call)
            if node is not None:
                return {"dir": "bprop", "bwd_node": {node["name"]}, "bwd_op": innermost(around)}
            return {"dir": "fprop", "op": innermost(around)}
        node = nodes[-1]
        inside = [e for e in around if not is_backward_node(e["name"])
                  and e["_start"] >= node["_start"] and e["_end"] <= node["_end"]]
        return {"dir": "bprop", "bwd_node": innermost(nodes), "bwd_op": innermost(inside)}


_cache = {}


_syncs = {}


def without_syncs(records: list[dict]) -> list[dict]:
    """The GPU (or op) records: parse writes `sync` lines after them (docs/formats.md §3)."""
    return [r for r in records if r["kind"] != "sync"]


def parsed(name: str):
    """(oracle, header, records, summary) of one trace, each parsed once per session. The
    records are the GPU (or op) records; the `sync` lines parse writes after them are in
    _syncs[name]."""
    if name not in _cache:
        path = trace_file(name)
        header, records, summary = parse(path, with_syncs=True)
        _syncs[name] = [r for r in records if r["kind"] == "sync"]
        records = [r for r in records if r["kind"] != "sync"]
        _cache[name] = (Oracle(path), header, records, summary)
    return _cache[name]


def by_gpu_row(records) -> dict:
    """(correlation, start) -> GPU record: a CUDA graph launch gives all its kernels the
    correlation id of its cudaGraphLaunch (the record_shapes test trace)."""
    out = {(r["correlation"], r["start"]): r for r in records if r["kind"] != "op"}
    assert len(out) == sum(r["kind"] != "op" for r in records)
    return out


def by_correlation(records) -> dict:
    """correlation -> GPU record, for traces where each launch launched one thing."""
    out = {r["correlation"]: r for r in records if r["kind"] != "op"}
    assert len(out) == sum(r["kind"] != "op" for r in records)
    return out


def row_key(gpu_row):
    return gpu_row["args"]["correlation"], gpu_row["_start"]


# ---- real traces: counts -------------------------------------------------------------------------

H100_TRACES = ["h100_resnet_block", "h100_transformer", "h100_lstm"]
GPU_TRACES = ["alexnet", "event_sync", "rocm", "nccl", "control", "test", *H100_TRACES]


@pytest.mark.parametrize("name", with_slow(TRACES))
def test_oracle_agrees_with_the_readme(name):
    oracle = parsed(name)[0]
    assert (len(oracle.cpu_ops), len(oracle.calls), len(oracle.kernels), len(oracle.memcpys),
            len(oracle.memsets)) == README_COUNTS[name]


@pytest.mark.parametrize("name", with_slow(GPU_TRACES))
def test_gpu_records_and_launches_match_the_oracle(name):
    oracle, header, records, summary = parsed(name)
    kinds = collections.Counter(r["kind"] for r in records)
    assert kinds == {k: n for k, n in [("kernel", len(oracle.kernels)),
                                       ("memcpy", len(oracle.memcpys)),
                                       ("memset", len(oracle.memsets))] if n}
    assert header["format"] == "kineto" and header["records"] == "gpu"
    assert sum("launch" in r for r in records) == len(oracle.launched)
    assert (f"GPU: {len(oracle.kernels)} kernels, {len(oracle.memcpys)} memcpy, "
            f"{len(oracle.memsets)} memset; {len(oracle.calls)} API calls") in summary
    assert f"ranges: {len(oracle.op_ranges)} ops and backward nodes," in summary
    assert "skipped events 0" in summary
    # Every GPU row, by its correlation id, as the trace has it.
    mine = by_gpu_row(records)
    for g in oracle.gpu_rows:
        r = mine[row_key(g)]
        assert (r["start"], r["duration"]) == (ns(g["ts"]), ns(g["dur"])), r
        assert (r["device"], r["stream"]) == (g["args"]["device"], g["args"]["stream"]), r
        call = oracle.call_of.get(g["args"]["correlation"])
        if call is None:
            assert "launch" not in r and r["op"] is None and r["dir"] is None, r
            continue
        assert r["launch"] == {"api": call["name"], "start": ns(call["ts"]),
                               "duration": ns(call["dur"])}, r
        assert (r["pid"], r["tid"]) == (call["pid"], call["tid"]), r
    # GPU start order (docs/formats.md §3).
    starts = [r["start"] for r in records]
    assert starts == sorted(starts)


@pytest.mark.parametrize("name", with_slow(GPU_TRACES))
def test_each_launch_is_attributed_to_the_innermost_op_around_its_call(name):
    oracle, _, records, _ = parsed(name)
    mine = by_gpu_row(records)
    backward_nodes = {e["args"]["External id"]: e["name"] for e in oracle.nodes}
    checked = collections.Counter()
    for g in oracle.launched:
        r = mine[row_key(g)]
        want = oracle.attribution(g)
        assert r["dir"] == want["dir"], r
        if want["dir"] == "bprop":
            assert r["bwd_node"] in want["bwd_node"], (r, want)
            assert r.get("bwd_op") in want["bwd_op"], (r, want)
            assert backward_nodes[r["bwd_node_id"]] == r["bwd_node"], r
        else:
            assert r["op"] in want["op"], (r, want)
        checked[want["dir"]] += 1
    assert sum(checked.values()) == len(oracle.launched)


SYNC_APIS = {f"{p}{what}Synchronize" for p in ("cuda", "hip") for what in ("Device", "Stream", "Event")}


@pytest.mark.parametrize("name", with_slow(GPU_TRACES))
def test_synchronizing_calls_are_sync_records_with_their_op(name):
    """Each cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize call (HIP's too)
    is one `sync` record after the GPU records, in start order, with the call's times and
    thread and the op around it as the launch test reads it (docs/formats.md §3)."""
    oracle, _, _, _ = parsed(name)
    syncs = _syncs[name]
    calls = sorted((c for c in oracle.calls if re.sub(r"_v\d+$", "", c["name"]) in SYNC_APIS),
                   key=lambda c: (ns(c["ts"]), ns(c["dur"])))
    assert [r["name"] for r in syncs] == [re.sub(r"_v\d+$", "", c["name"]) for c in calls]
    for r, c in zip(syncs, calls):
        assert (r["start"], r["duration"]) == (ns(c["ts"]), ns(c["dur"])), r
        assert (r["pid"], r["tid"]) == (c["pid"], c["tid"]), r
        want = oracle.attribution_of_call(c)
        assert r["dir"] == want["dir"], (r, want)
        if want["dir"] == "bprop":
            assert r["bwd_node"] in want["bwd_node"], (r, want)
        elif want["dir"] == "fprop":
            assert r["op"] in want["op"], (r, want)
    if name == "alexnet":
        assert len(syncs) == 21  # the trace's 21 cudaStreamSynchronize calls


@pytest.mark.parametrize("name", ["nccl", "rocm", *H100_TRACES])
def test_backward_work_lands_on_the_forward_op_the_fwdbwd_flow_names(name):
    oracle, _, records, summary = parsed(name)
    assert oracle.flow_pairs, "the trace has fwdbwd flows"
    paired = 0
    for r in records:
        if r["dir"] != "bprop" or r["bwd_node_id"] not in oracle.flow_pairs:
            continue
        fwd = oracle.flow_pairs[r["bwd_node_id"]]
        assert (r["op"], r["op_id"], r["paired"], r["fwd_op_id"]) == (
            fwd["name"], fwd["args"]["External id"], True, fwd["args"]["External id"]), r
        paired += 1
    assert paired > 0
    assert f"fwdbwd flows: {len(oracle.flow_pairs)} checked against the pairing, 0 disagree" \
        in summary


def test_nccl_trace_every_backward_record_is_paired():
    oracle, _, records, summary = parsed("nccl")
    bprop = [r for r in records if r["dir"] == "bprop"]
    # Every node that launched GPU work has its flow here, but AccumulateGrad, which has no
    # forward op (its engine step's gradient accumulation is backward work all the same).
    accumulate = [r for r in bprop if r["bwd_node"] == "torch::autograd::AccumulateGrad"]
    assert accumulate and all(not r["paired"] and r["seq"] == -1 for r in accumulate)
    assert {r["bwd_node_id"] for r in bprop if r not in accumulate} <= set(oracle.flow_pairs)
    assert len(oracle.flow_pairs) == 543
    assert f"backward: {len(bprop)} records, {len(bprop) - len(accumulate)} paired with their " \
           f"forward op, {len(accumulate)} unpaired" in summary


@pytest.mark.parametrize("name", with_slow(["control", "test"]))
def test_record_shapes_traces_pair_backward_nodes_without_flows(name):
    """No fwdbwd flows: the backward nodes' Fwd thread id names the thread that ran most ops with
    a sequence number. Every node but AccumulateGrad (which has no forward op) pairs with the op
    of its sequence number on the training thread, the last such op started before it."""
    oracle, _, records, _ = parsed(name)
    node_seq = {e["args"]["External id"]: e["args"]["Sequence number"] for e in oracle.nodes
                if "Sequence number" in e["args"]}
    forward = collections.defaultdict(list)  # seq -> forward ops, in start order
    for e in oracle.op_ranges:
        if not is_backward_node(e["name"]) and e["args"].get("Sequence number", -1) >= 0:
            forward[e["args"]["Sequence number"]].append(e)
    start_of = {e["args"]["External id"]: e["_start"] for e in oracle.nodes}
    unpaired = collections.Counter()
    for r in records:
        if r["dir"] != "bprop":
            continue
        if not r["paired"]:
            unpaired[r["bwd_node"]] += 1
            continue
        seq = node_seq[r["bwd_node_id"]]
        before = [e for e in forward[seq] if e["_start"] <= start_of[r["bwd_node_id"]]]
        fwd = max(before, key=lambda e: (e["_start"], -e["_end"]))
        assert (r["op"], r["fwd_op_id"]) == (fwd["name"], fwd["args"]["External id"]), r
    assert set(unpaired) == {"torch::autograd::AccumulateGrad"}


@pytest.mark.parametrize("name", with_slow(TRACES))
def test_header_names_devices_and_ranks(name):
    oracle, header, _, _ = parsed(name)
    assert header["format"] == "kineto" and header["version"] == "schema 1"
    devices = [(d["id"], d["name"], d.get("numSms", 0), d["totalGlobalMem"],
                [d["computeMajor"], d["computeMinor"]]) for d in oracle.doc["deviceProperties"]]
    assert [(d["id"], d["name"], d["sm_count"], d["total_memory"], d["compute_capability"])
            for d in header.get("devices", [])] == devices
    dist = oracle.doc.get("distributedInfo", {})
    for key in ("rank", "world_size", "backend"):
        assert header.get(key) == dist.get(key), key
    assert header.get("base_time_ns") == oracle.doc.get("baseTimeNanoseconds")


def test_header_hand_checked():
    _, header, _, _ = parsed("control")
    assert (header["rank"], header["world_size"], header["backend"]) == (3, 8, "nccl")
    assert len(header["devices"]) == 8
    assert header["devices"][3] == {
        "id": 3, "name": "NVIDIA A100-PG509-200", "sm_count": 108, "clock_hz": 0,
        "memory_bandwidth": 0, "total_memory": 42505273344, "compute_capability": [8, 0]}
    _, header, _, _ = parsed("rocm")
    assert "rank" not in header and len(header["devices"]) == 4
    assert (header["devices"][2]["name"], header["devices"][2]["sm_count"]) == (
        "AMD Radeon Graphics", 104)


# ---- real traces: records checked by hand against the raw JSON -----------------------------------

def raw_event(oracle, cat, correlation):
    (event,) = [e for e in oracle.doc["traceEvents"] if e.get("cat") == cat
                and e.get("args", {}).get("correlation") == correlation]
    return event


def test_alexnet_records_by_hand():
    oracle, _, records, _ = parsed("alexnet")
    mine = by_correlation(records)
    # The first HtoD copy: {"ts": 1695835572943613, "dur": 12, "bytes": 92928, stream 7},
    # launched by cudaMemcpyAsync inside aten::copy_ (External id 14... its op).
    r = mine[14]
    assert raw_event(oracle, "gpu_memcpy", 14)["args"]["bytes"] == 92928
    assert (r["kind"], r["name"], r["bytes"], r["copy_kind"], r["src_kind"], r["dst_kind"]) == (
        "memcpy", "[CUDA memcpy HtoD]", 92928, "HtoD", "pageable", "device")
    assert (r["start"], r["duration"], r["device"], r["stream"]) == (
        1695835572943613000, 12000, 0, 7)
    assert (r["op"], r["dir"]) == ("aten::copy_", "fprop")
    # {"cat": "kernel", "name": "void at::native::(anonymous namespace)::distribution_
    #  elementwise_grid_stride_kernel<...>", "ts": 1695835573023613, "dur": 71, "args":
    #  {"correlation": 218, "registers per thread": 47, "grid": [864, 1, 1], "block": [256, 1, 1]}},
    # launched by cudaLaunchKernel at 1695835573023578 (49 µs) inside aten::rand > aten::uniform_,
    # all inside the user_annotation "[param|cuda]".
    k = mine[218]
    assert (k["name"], k["grid"], k["block"], k["registers"], k["device"], k["stream"]) == (
        "distribution_elementwise_grid_stride_kernel", [864, 1, 1], [256, 1, 1], 47, 0, 7)
    assert (k["start"], k["duration"], k["launch"]) == (1695835573023613000, 71000, {
        "api": "cudaLaunchKernel", "start": 1695835573023578000, "duration": 49000})
    assert (k["op"], k["op_id"], k["dir"], k["user_ranges"]) == (
        "aten::uniform_", 164, "fprop", ["[param|cuda]"])
    # A 5123-byte kernel name: cut to 4096 bytes in long_name, its short name intact.
    long_kernels = [r for r in records if r["kind"] == "kernel"
                    and r["long_name"].startswith("void at::native::(anonymous namespace)::"
                                                  "distribution_elementwise_grid_stride_kernel")]
    assert long_kernels and all(len(r["long_name"].encode()) < 4200 for r in long_kernels)
    assert {r["name"] for r in long_kernels} == {"distribution_elementwise_grid_stride_kernel"}


def test_event_sync_kernel_by_hand():
    oracle, _, records, _ = parsed("event_sync")
    # {"cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 20,
    #  "ts": 1712867402348700, "dur": 123, "args": {"stream": 20, "correlation": 27,
    #  "registers per thread": 122, "grid": [8, 16, 5], "block": [128, 1, 1]}}, launched by
    # cudaLaunchKernel (correlation 27) inside aten::bmm inside aten::matmul.
    r = by_correlation(records)[27]
    assert raw_event(oracle, "kernel", 27)["name"] == "ampere_sgemm_128x64_nn"
    assert (r["name"], r["long_name"], r["grid"], r["block"], r["registers"]) == (
        "ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn", [8, 16, 5], [128, 1, 1], 122)
    assert (r["device"], r["context"], r["stream"], r["start"], r["duration"]) == (
        0, 1, 20, 1712867402348700000, 123000)
    assert (r["pid"], r["tid"], r["launch"]["api"]) == (3727853, 3727853, "cudaLaunchKernel")
    call = oracle.call_of[27]
    assert [e["name"] for e in oracle.enclosing(call)][-1] == r["op"]
    # Its 512-byte memset on stream 20 (correlation 25), in the same op.
    m = by_correlation(records)[25]
    assert (m["kind"], m["bytes"], m["mem_kind"], m["stream"], m["duration"]) == (
        "memset", 512, "device", 20, 1000)


def test_nccl_kernel_by_hand():
    oracle, _, records, _ = parsed("nccl")
    # {"cat": "kernel", "name": "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 32,
    #  true, 1>(...)", "ts": 4458676983543.183, "dur": 41.407, "args": {"External id": 12353,
    #  "stream": 7, "correlation": 57541, "registers per thread": 40, "grid": [512, 1, 1],
    #  "block": [512, 1, 1]}}: batch norm backward, so bprop, paired with the forward
    # aten::cudnn_batch_norm through its node's fwdbwd flow.
    r = by_correlation(records)[57541]
    raw = raw_event(oracle, "kernel", 57541)
    assert r["long_name"] == raw["name"] and r["name"] == "bn_bw_1C11_kernel_new"
    assert (r["grid"], r["block"], r["registers"], r["stream"], r["device"]) == (
        [512, 1, 1], [512, 1, 1], 40, 7, 0)
    assert (r["start"], r["duration"]) == (4458676983543183, 41407)
    assert (r["dir"], r["bwd_node"], r["paired"]) == ("bprop", "CudnnBatchNormBackward0", True)
    fwd = oracle.flow_pairs[r["bwd_node_id"]]
    assert (r["op"], r["op_id"]) == (fwd["name"], fwd["args"]["External id"])
    assert r["op"] == "aten::cudnn_batch_norm"


def test_control_addmm_args_by_hand():
    oracle, _, records, _ = parsed("control")
    # {"name": "aten::addmm", "ts": 1661203462603074, "dur": 103, "args": {"External id": 310,
    #  "Input Dims": [[512], [1024, 1705], [1705, 512], [], []],
    #  "Input type": ["float", "float", "float", "Scalar", "Scalar"], "Sequence number": 450029}}
    (op,) = [e for e in oracle.cpu_ops if e["args"]["External id"] == 310]
    assert op["args"]["Input Dims"] == [[512], [1024, 1705], [1705, 512], [], []]
    kernels = [r for r in records if r["kind"] == "kernel" and r.get("op_id") == 310
               and r["dir"] == "fprop"]
    assert kernels
    for r in kernels:
        assert (r["op"], r["seq"]) == ("aten::addmm", 450029)
        # No Concrete Inputs in this trace: the scalars' values are not known.
        assert r["args"] == {"0": {"shape": [512], "dtype": "float32"},
                             "1": {"shape": [1024, 1705], "dtype": "float32"},
                             "2": {"shape": [1705, 512], "dtype": "float32"},
                             "3": "<Scalar>", "4": "<Scalar>"}


def test_control_backward_kernel_by_hand():
    oracle, _, records, _ = parsed("control")
    # {"cat": "kernel", "name": "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_
    #  align4>(...)", "pid": 3, "tid": 7, "ts": 1661203463029566, "dur": 7, "args": {"device": 3,
    #  "stream": 7, "correlation": 1869557, "registers per thread": 90, "grid": [64, 1, 1],
    #  "block": [128, 1, 1]}}; its cudaLaunchKernel runs on the autograd thread 3126441 inside
    # AddmmBackward0 (External id 37326) > aten::mm (37330, Input Dims [[1024, 100], [100, 256]]).
    r = by_gpu_row(records)[(1869557, 1661203463029566000)]
    assert (r["name"], r["grid"], r["block"], r["registers"], r["device"], r["stream"]) == (
        "Kernel", [64, 1, 1], [128, 1, 1], 90, 3, 7)
    assert (r["duration"], r["pid"], r["tid"]) == (7000, 3113936, 3126441)
    assert (r["dir"], r["bwd_node"], r["bwd_node_id"], r["bwd_op"], r["bwd_op_id"]) == (
        "bprop", "AddmmBackward0", 37326, "aten::mm", 37330)
    assert r["bwd_args"] == {"0": {"shape": [1024, 100], "dtype": "float32"},
                             "1": {"shape": [100, 256], "dtype": "float32"}}
    # Paired with the forward aten::addmm of the node's sequence number (no flows here).
    (node,) = [e for e in oracle.nodes if e["args"]["External id"] == 37326]
    (fwd,) = [e for e in oracle.op_ranges if e["args"]["External id"] == r["fwd_op_id"]]
    assert fwd["name"] == r["op"] == "aten::addmm" and r["paired"]
    assert fwd["args"]["Sequence number"] == node["args"]["Sequence number"] == r["seq"]
    assert r["args"]["1"] == {"shape": fwd["args"]["Input Dims"][1], "dtype": "float32"}


def test_rocm_records_by_hand():
    oracle, _, records, summary = parsed("rocm")
    mine = by_correlation(records)
    # hipLaunchKernel (correlation 118), External id 13: aten::addmm copying its bias into the
    # output. ROCm writes grid and block on the launch call, not on the kernel row ({"kind":
    # "Dispatch Kernel", "device": 2, "stream": 0}).
    call = oracle.call_of[118]
    assert (call["name"], call["args"]["grid"], call["args"]["block"]) == (
        "hipLaunchKernel", [3, 1, 1], [128, 1, 1])
    r = mine[118]
    assert (r["launch"]["api"], r["device"], r["stream"], r["start"], r["duration"]) == (
        "hipLaunchKernel", 2, 0, 4203669603771648, 6880)
    assert r["launch"] == {"api": "hipLaunchKernel", "start": 4203669603752847,
                           "duration": 11502}
    assert (r["name"], r["op"], r["op_id"], r["seq"], r["dir"]) == (
        "elementwise_kernel", "aten::addmm", 13, 5, "fprop")
    # addmm's record_shapes args: "Input Dims" [[128], [5, 128], [128, 128], [], []], "Input
    # Strides" [[1], [128, 1], [1, 128], [], []], "Concrete Inputs" ["", "", "", "1", "1"].
    assert r["args"] == {"0": {"shape": [128], "dtype": "float32", "stride": [1]},
                         "1": {"shape": [5, 128], "dtype": "float32", "stride": [128, 1]},
                         "2": {"shape": [128, 128], "dtype": "float32", "stride": [1, 128]},
                         "3": 1, "4": 1}
    assert r["user_ranges"] == ["ProfilerStep#1"]
    # The Tensile GEMM launched by hipExtModuleLaunchKernel (correlation 121).
    assert mine[121]["launch"]["api"] == "hipExtModuleLaunchKernel"
    assert mine[121]["name"].startswith("Cijk_Alik_Bljk_SB_Bias")
    assert {r["launch"]["api"] for r in records} == {
        "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyWithStream"}
    # The HtoD copy of hipMemcpyWithStream (correlation 117), with record_shapes args and strides.
    m = mine[117]
    assert (m["kind"], m["copy_kind"], m["dst_kind"], m["device"]) == (
        "memcpy", "HtoD", "device", 2)
    assert (m["op"], m["op_id"]) == ("aten::copy_", 8)
    assert m["args"] == {"0": {"shape": [5, 128], "dtype": "float32", "stride": [128, 1]},
                         "1": {"shape": [5, 128], "dtype": "float32", "stride": [128, 1]},
                         "2": False}


def test_rocm_kernel_dimensions_come_from_the_launch_call():
    # ROCm Kineto traces give grid, block and shared memory only on the hipLaunchKernel /
    # hipExtModuleLaunchKernel call.
    oracle, _, records, _ = parsed("rocm")
    kernels = [r for r in records if r["kind"] == "kernel"]
    assert len(kernels) == 14
    for r in kernels:
        call = oracle.call_of[r["correlation"]]
        assert (r["grid"], r["block"]) == (call["args"]["grid"], call["args"]["block"]), r
        assert r["shared_memory"] == call["args"]["shared memory"], r


def test_rocm_copy_size_comes_from_the_launch_call():
    # ... and a copy's size only on the hipMemcpyWithStream call (args.size, a string).
    oracle, _, records, _ = parsed("rocm")
    copies = [r for r in records if r["kind"] == "memcpy"]
    assert [r["correlation"] for r in copies] == [117, 123]
    for r in copies:
        assert r["bytes"] == int(oracle.call_of[r["correlation"]]["args"]["size"]) == 2560, r


def test_cpu_only_trace_gives_one_record_per_op():
    oracle, header, records, summary = parsed("cpu_only")
    assert header["records"] == "op" and "devices" not in header
    assert (header["rank"], header["world_size"], header["backend"]) == (34, 300, "gloo")
    assert "no GPU activity (CPU-only profile): 4 op instances" in summary
    assert [r["kind"] for r in records] == ["op"] * len(oracle.op_ranges) == ["op"] * 4
    raw = sorted(oracle.op_ranges, key=lambda e: e["_start"])
    for r, e in zip(records, raw):
        assert (r["name"], r["op"], r["id"], r["start"], r["duration"], r["pid"], r["tid"]) == (
            e["name"], e["name"], e["args"]["External id"], ns(e["ts"]), ns(e["dur"]),
            e["pid"], e["tid"]), r
    # {"name": "aten::empty", "ts": 1212076812889.31, "dur": 2.503, "External id": 8490,
    #  "Concrete Inputs": ["", "", "", "", "False", ""],
    #  "Input type": ["", "", "", "", "Scalar", ""]}: only the bool is a value.
    first = records[0]
    assert (first["start"], first["duration"], first["id"]) == (1212076812889310, 2503, 8490)
    assert first["args"] == {"0": None, "1": None, "2": None, "3": None, "4": False, "5": None}


def test_positional_args_from_record_shapes():
    """Scalars from Concrete Inputs, dtypes renamed, strides kept: the rocm trace's aten::addmm."""
    oracle, _, records, _ = parsed("rocm")
    addmm = [e for e in oracle.cpu_ops if e["name"] == "aten::addmm"]
    assert addmm
    e = addmm[0]
    assert e["args"]["Input type"][:3] == ["float", "float", "float"]
    r = next(r for r in records if r.get("op_id") == e["args"]["External id"]
             and r["dir"] == "fprop")
    dims, strides, concrete = (e["args"][k] for k in ("Input Dims", "Input Strides",
                                                     "Concrete Inputs"))
    assert r["args"]["0"] == {"shape": dims[0], "dtype": "float32", "stride": strides[0]}
    assert r["args"]["1"] == {"shape": dims[1], "dtype": "float32", "stride": strides[1]}
    assert [r["args"]["3"], r["args"]["4"]] == [int(concrete[3]), int(concrete[4])] == [1, 1]


# ---- a trace torch writes here, on the CPU -------------------------------------------------------

# bfloat16 and int64 inputs (no real trace above has them), a Linear with backward (fwdbwd flows).
TORCH_CPU_PROGRAM = """
import sys, torch
from torch.profiler import profile, ProfilerActivity
x = torch.randn(4, 8, dtype=torch.bfloat16)
w = torch.randn(8, 3, dtype=torch.bfloat16)
index = torch.tensor([0, 2], dtype=torch.int64)
linear = torch.nn.Linear(8, 3)
inputs = torch.randn(5, 8, requires_grad=True)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
    y = torch.mm(x, w)
    torch.index_select(y, 0, index)
    linear(inputs).relu().sum().backward()
p.export_chrome_trace(sys.argv[1])
"""

INPUT_TYPES = {"float": "float32", "c10::BFloat16": "bfloat16", "long int": "int64"}


def test_torch_cpu_trace_with_record_shapes(tmp_path):
    path = tmp_path / "cpu.pt.trace.json"
    res = subprocess.run([PY, "-c", TORCH_CPU_PROGRAM, path], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    oracle = Oracle(str(path))
    header, records, summary = parse(path)
    assert header["records"] == "op" and "devices" not in header
    # One record per op and backward node, in start order, each as the trace has it.
    ops = sorted(oracle.op_ranges, key=lambda e: (e["_start"], -e["_end"]))
    assert [(r["name"], r["id"], r["start"], r["duration"]) for r in records] == [
        (e["name"], e["args"]["External id"], e["_start"], e["_end"] - e["_start"]) for e in ops]
    assert f"no GPU activity (CPU-only profile): {len(ops)} op instances" in summary
    # Every tensor input: shape, dtype renamed, stride. A record's args are its op's (fprop) or,
    # in backward, the forward op's; the op's own are then bwd_args.
    own = {r["id"]: r for r in records}
    tensors = 0
    for e in ops:
        ext = e["args"]["External id"]
        r = own[ext]
        args = r["args"] if r.get("op_id") == ext else r.get("bwd_args") \
            if r.get("bwd_op_id") == ext else None
        if args is None:  # a backward node: its record carries the forward op's args
            assert r["bwd_node_id"] == ext, r
            continue
        for i, (dims, kind, strides) in enumerate(zip(
                e["args"]["Input Dims"], e["args"]["Input type"], e["args"]["Input Strides"])):
            if kind in INPUT_TYPES:
                assert args[str(i)] == {"shape": dims, "dtype": INPUT_TYPES[kind],
                                        "stride": strides}, (e, r)
                tensors += 1
    assert tensors > 20
    (mm,) = [r for r in records if r["name"] == "aten::mm" and r["dir"] == "fprop"]
    assert mm["args"] == {"0": {"shape": [4, 8], "dtype": "bfloat16", "stride": [8, 1]},
                          "1": {"shape": [8, 3], "dtype": "bfloat16", "stride": [3, 1]}}
    (select,) = [r for r in records if r["name"] == "aten::index_select"]
    assert select["args"] == {"0": {"shape": [4, 3], "dtype": "bfloat16", "stride": [3, 1]},
                              "1": 0, "2": {"shape": [2], "dtype": "int64", "stride": [1]}}
    (addmm,) = [r for r in records if r["name"] == "aten::addmm"]
    assert addmm["args"]["3"] == addmm["args"]["4"] == 1  # beta, alpha: "Concrete Inputs"
    # Backward nodes: the forward op their fwdbwd flow names.
    assert {oracle_node for oracle_node in oracle.flow_pairs} <= {
        r["id"] for r in records if r["name"].endswith("Backward0")}
    for node_id, fwd in oracle.flow_pairs.items():
        r = own[node_id]
        assert (r["dir"], r["op"], r["op_id"], r["paired"]) == (
            "bprop", fwd["name"], fwd["args"]["External id"], True), r
    names = {own[n]["name"]: own[n]["op"] for n in oracle.flow_pairs}
    assert names["AddmmBackward0"] == "aten::addmm" and names["ReluBackward0"] == "aten::relu"
    assert f"fwdbwd flows: {len(oracle.flow_pairs)} checked against the pairing, 0 disagree" \
        in summary


# ---- bad input -----------------------------------------------------------------------------------

def run_parse(*args, timeout=60, limit_memory=False):
    """parse, never hanging; with limit_memory, under a 2 GiB address-space limit."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    res = subprocess.run([PARSE, *map(str, args)], capture_output=True, text=True,
                         timeout=timeout, preexec_fn=limit if limit_memory else None)
    assert res.returncode >= 0, f"killed by signal {-res.returncode}: {res.stderr[-2000:]}"
    assert res.returncode < 128, res.stderr
    return res


def assert_error(res, *words):
    assert res.returncode == 1, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyprof parse: error: "), res.stderr
    for w in words:
        assert w in lines[0], res.stderr


def small_trace_events():
    """The event-sync trace's document (plain Python values)."""
    with gzip.open(trace_file("event_sync"), "rt") as f:
        return json.load(f)


def write_trace(path, doc_or_text, compress=False):
    text = doc_or_text if isinstance(doc_or_text, (str, bytes)) else json.dumps(doc_or_text)
    data = text.encode() if isinstance(text, str) else text
    with open(path, "wb") as f:
        f.write(gzip.compress(data) if compress else data)
    return path


def kernel_event(ts, corr, dur=5):
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": corr, "grid": [1, 1, 1],
                     "block": [32, 1, 1]}}


def launch_event(ts, corr, dur=2):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
            "ts": ts, "dur": dur, "args": {"correlation": corr}}


def op_event(ts, dur, ext, name="aten::relu"):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 10, "tid": 10, "ts": ts,
            "dur": dur, "args": {"External id": ext}}


def tiny_trace(*extra):
    """One op launching one kernel, then `extra` events."""
    return {"traceEvents": [op_event(100, 50, 1), launch_event(110, 5), kernel_event(130, 5),
                            *extra]}


def test_truncated_gzip_keeps_the_events_before_the_cut(tmp_path):
    with open(trace_file("alexnet"), "rb") as f:
        data = f.read()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[:len(data) // 2])
    res = run_parse(path)
    assert res.returncode == 0, res.stderr
    header, records = read_records(res.stdout)
    assert "warning: trace cut short" in res.stderr
    full = parsed("alexnet")[2]
    assert 0 < len(records) < len(full)


def test_plain_json_cut_short(tmp_path):
    with gzip.open(trace_file("alexnet"), "rb") as f:
        text = f.read()
    events_at = text.index(b'"traceEvents"')
    for cut in (events_at + len(text[events_at:]) // 2, len(text) - 3):
        path = tmp_path / "cut.json"
        path.write_bytes(text[:cut])
        res = run_parse(path)
        assert res.returncode == 0, res.stderr
        _, records = read_records(res.stdout)
        records = without_syncs(records)
        assert "warning: trace cut short" in res.stderr
        assert 0 < len(records) <= len(parsed("alexnet")[2])
    # Cut before the first event is whole: nothing to keep, an error.
    for cut in (events_at // 2, events_at + 20):
        path = tmp_path / "head.json"
        path.write_bytes(text[:cut])
        assert_error(run_parse(path), "truncated file?")


@pytest.mark.parametrize("inflater", ["default", "zlib"])
def test_gzip_with_each_inflater(tmp_path, inflater):
    """parse inflates with ISA-L when it was built with it, else zlib (PYPROF_GZIP=zlib forces
    zlib): both read concatenated members as one stream, keep what precedes a cut, and refuse
    damaged data with one line."""
    env = dict(os.environ, PYPROF_GZIP=inflater)

    def parse_with(path):
        res = subprocess.run([PARSE, str(path)], capture_output=True, text=True, timeout=60,
                             env=env)
        assert 0 <= res.returncode < 128, res.stderr
        return res

    with gzip.open(trace_file("alexnet"), "rb") as f:
        text = f.read()
    plain = tmp_path / "plain.json"
    plain.write_bytes(text)
    want = read_records(parse_with(plain).stdout)[1]
    # Two members (as `cat a.gz b.gz` makes), then a few zero bytes of padding.
    members = tmp_path / "members.json.gz"
    members.write_bytes(gzip.compress(text[:20000]) + gzip.compress(text[20000:]) + b"\0" * 8)
    res = parse_with(members)
    assert res.returncode == 0, res.stderr
    assert read_records(res.stdout)[1] == want
    # Cut in the middle: the events before the cut, and the warning.
    data = gzip.compress(text)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[:len(data) // 2])
    res = parse_with(cut)
    assert res.returncode == 0 and "warning: trace cut short" in res.stderr, res.stderr
    assert "gzip stream ends early" in res.stderr
    got = read_records(res.stdout)[1]
    assert 0 < len(got) < len(want)
    # A damaged byte in the compressed data: an error line, or the events before it with a
    # warning; never a crash.
    damaged = bytearray(data)
    for i in range(len(data) // 3, len(data) // 3 + 64):
        damaged[i] ^= 0x5A
    bad = tmp_path / "damaged.json.gz"
    bad.write_bytes(bytes(damaged))
    res = parse_with(bad)
    if res.returncode == 1:
        assert_error(res)
    else:
        assert "warning: trace cut short" in res.stderr or "skipped" in res.stderr, res.stderr


def test_gzip_of_garbage(tmp_path):
    path = write_trace(tmp_path / "garbage.json.gz", os.urandom(4096), compress=True)
    assert_error(run_parse(path))
    path = write_trace(tmp_path / "text.json.gz", "this is not JSON at all\n" * 100, compress=True)
    assert_error(run_parse(path))


def test_broken_event_in_the_middle_is_skipped_and_counted(tmp_path):
    doc = small_trace_events()
    text = json.dumps(doc)
    kernel = json.dumps(next(e for e in doc["traceEvents"] if e.get("cat") == "kernel"))
    assert text.count(kernel) == 1
    broken = kernel.replace('"dur": ', '"dur" ', 1)  # a missing colon
    path = write_trace(tmp_path / "broken.json", text.replace(kernel, broken))
    res = run_parse(path)
    assert res.returncode == 0, res.stderr
    _, records = read_records(res.stdout, with_syncs=True)
    assert collections.Counter(r["kind"] for r in records) == {"kernel": 2, "memset": 3,
                                                                "sync": 1}
    assert "skipped events 1" in res.stderr and "warning: trace events skipped (1x)" in res.stderr


def test_broken_top_level_is_an_error(tmp_path):
    text = json.dumps(small_trace_events())
    path = write_trace(tmp_path / "top.json", text.replace('"schemaVersion": 1',
                                                           '"schemaVersion" 1'))
    assert_error(run_parse(path))
    path = write_trace(tmp_path / "open.json", '{"traceEvents": [], "deviceProperties": [}')
    assert_error(run_parse(path))


@pytest.mark.parametrize("text", ['{"a": 1}', "42", '"x"', "{}", "null", '{"traceEvents": 3}'])
def test_json_that_is_not_a_trace(tmp_path, text):
    path = write_trace(tmp_path / "not_a_trace.json", text)
    assert_error(run_parse(path))


def test_empty_event_array_is_an_empty_profile(tmp_path):
    # `[]` is the Chrome trace JSON Array Format with no events.
    for text in ("[]", '{"traceEvents": []}'):
        res = run_parse(write_trace(tmp_path / "empty.json", text))
        assert res.returncode == 0, res.stderr
        header, records = read_records(res.stdout)
        assert header["format"] == "kineto" and records == []
        assert "warning: empty profile" in res.stderr


def test_no_trace_events(tmp_path):
    path = write_trace(tmp_path / "props.json", {"deviceProperties": [], "schemaVersion": 1})
    assert_error(run_parse(path), "traceEvents")
    path = write_trace(tmp_path / "props.json.gz", {"deviceProperties": []}, compress=True)
    assert_error(run_parse(path), "traceEvents")


def test_net_dicts_given_to_parse_are_said_to_be_net_dicts(tmp_path):
    """A net.dict is parse's output, not its input; one whose header line is gone (cut at its
    start, or a flipped bit) was taken for a trace without events (issue 31)."""
    records = [{"kind": "op", "name": "aten::mm", "start": 1000, "duration": 5000, "pid": 1,
                "tid": 1}] * 2
    header = {"pyprof_dict": 2, "source": "x", "format": "kineto", "records": "op"}
    whole = tmp_path / "net.dict"
    whole.write_text("".join(json.dumps(line) + "\n" for line in [header, *records]))
    assert_error(run_parse(whole), "this is a net.dict, `pyprof parse` output already")
    headless = tmp_path / "headless.dict"
    headless.write_text("".join(json.dumps(line) + "\n" for line in records))
    assert_error(run_parse(headless), "whose first line is not its header (\"pyprof_dict\")")


def test_two_trace_event_arrays_are_both_read_and_said(tmp_path):
    event = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "dur": 2}
    text = ('{"traceEvents": [%s], "traceEvents": [%s]}'
            % (json.dumps({**event, "name": "a", "ts": 1}), json.dumps({**event, "name": "b",
                                                                       "ts": 5})))
    res = run_parse(write_trace(tmp_path / "two.json", text))
    assert res.returncode == 0, res.stderr
    _, records = read_records(res.stdout)
    assert [r["name"] for r in records] == ["a", "b"]
    assert "warning: several traceEvents arrays (1x)" in res.stderr
    assert 'the document has 2 "traceEvents" keys: the events of all of them are read' in \
        res.stderr


def test_empty_file(tmp_path):
    for name in ("empty.json", "empty.json.gz"):
        path = tmp_path / name
        path.write_bytes(b"")
        assert_error(run_parse(path))
    path = write_trace(tmp_path / "empty_member.json.gz", b"", compress=True)
    assert_error(run_parse(path))


def test_100_mb_name_is_skipped_in_bounded_memory(tmp_path):
    """The event is larger than the 16 MiB an event may be: skipped and counted; the others kept,
    under a 2 GiB address-space limit; the scanner never holds it, so peak memory stays far
    below the file's size; and with less memory than parse needs, one error line, no abort."""
    path = tmp_path / "huge.json"
    with open(path, "w") as f:
        f.write('{"traceEvents": [')
        f.write(json.dumps(op_event(100, 50, 1)) + ",")
        f.write('{"ph": "X", "cat": "cpu_op", "pid": 10, "tid": 10, "ts": 101, "dur": 1, '
                '"name": "')
        chunk = "x" * (1 << 20)
        for _ in range(100):
            f.write(chunk)
        f.write('"},')
        f.write(json.dumps(launch_event(110, 5)) + "," + json.dumps(kernel_event(130, 5)))
        f.write("]}")
    res = run_parse(path, limit_memory=True)
    assert res.returncode == 0, res.stderr
    _, records = read_records(res.stdout)
    assert [(r["kind"], r["op"]) for r in records] == [("kernel", "aten::relu")]
    assert "skipped events 1" in res.stderr
    assert "events larger than 16 MiB" in res.stderr
    # Peak RSS of parse alone: measured in a fresh wrapper process, whose only child it is.
    peak = subprocess.run(
        [sys.executable, "-c", "import resource, subprocess, sys; "
         "rc = subprocess.run(sys.argv[1:]).returncode; "
         "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
         PARSE, path, "-q", "-o", tmp_path / "d"], capture_output=True, text=True, timeout=60)
    rc, peak_kb = map(int, peak.stdout.split())
    assert rc == 0 and peak_kb * 1024 < path.stat().st_size * 0.7, (peak_kb, peak.stderr)

    def tight():
        resource.setrlimit(resource.RLIMIT_AS, (60 << 20, 60 << 20))
    starved = subprocess.run([PARSE, path, "-o", tmp_path / "starved"], capture_output=True,
                             text=True, timeout=60, preexec_fn=tight)
    assert starved.returncode in (0, 1), starved.stderr  # never a signal (bad_alloc: SIGABRT)
    if starved.returncode == 1:
        assert_error(starved, "out of memory")


def test_5_mb_name_is_cut(tmp_path):
    long_name = "aten::" + "y" * (5 << 20)
    path = write_trace(tmp_path / "long.json", {"traceEvents": [
        op_event(100, 50, 1, long_name), launch_event(110, 5), kernel_event(130, 5)]})
    res = run_parse(path, limit_memory=True)
    assert res.returncode == 0, res.stderr
    _, (record,) = read_records(res.stdout)
    assert record["op"].startswith("aten::yyy") and len(record["op"]) < 4200
    assert "warning: names cut to 4096 bytes (1x)" in res.stderr


def test_nan_ts_is_skipped_and_counted(tmp_path):
    doc = tiny_trace(op_event(float("nan"), 5, 2, "aten::nan_op"))
    text = json.dumps(doc)  # Python writes NaN, which JSON does not have
    assert "NaN" in text
    res = run_parse(write_trace(tmp_path / "nan.json", text))
    assert res.returncode == 0, res.stderr
    _, records = read_records(res.stdout)
    assert [(r["kind"], r["op"]) for r in records] == [("kernel", "aten::relu")]
    assert "skipped events 1" in res.stderr


def test_infinite_and_huge_ts_are_skipped(tmp_path):
    doc = tiny_trace(op_event(float("inf"), 5, 2), op_event(1e300, 5, 3),
                     op_event(10 ** 30, 5, 4))
    res = run_parse(write_trace(tmp_path / "inf.json", json.dumps(doc)))
    assert res.returncode == 0, res.stderr
    _, records = read_records(res.stdout)
    assert [(r["kind"], r["op"]) for r in records] == [("kernel", "aten::relu")]
    assert "skipped events 3" in res.stderr


def test_negative_ts_is_kept_with_a_warning(tmp_path):
    doc = {"traceEvents": [op_event(-100, 50, 1), launch_event(-90, 5), kernel_event(-70, 5)]}
    res = run_parse(write_trace(tmp_path / "neg.json", doc))
    assert res.returncode == 0, res.stderr
    _, (record,) = read_records(res.stdout)
    assert (record["start"], record["duration"], record["op"]) == (-70000, 5000, "aten::relu")
    assert record["launch"]["start"] == -90000
    assert "warning: negative timestamps" in res.stderr


def test_ts_as_a_string(tmp_path):
    doc = {"traceEvents": [op_event("100", "50", 1), launch_event("110.5", 5),
                           kernel_event("130.001", 5, dur="2.5")]}
    res = run_parse(write_trace(tmp_path / "str.json", doc))
    assert res.returncode == 0, res.stderr
    _, (record,) = read_records(res.stdout)
    assert (record["start"], record["duration"], record["op"]) == (130001, 2500, "aten::relu")
    assert record["launch"]["start"] == 110500
    doc = {"traceEvents": [op_event("soon", 50, 1), launch_event(110, 5), kernel_event(130, 5)]}
    res = run_parse(write_trace(tmp_path / "word.json", doc))
    assert res.returncode == 0, res.stderr
    _, (record,) = read_records(res.stdout)
    assert record["op"] is None and "skipped events 1" in res.stderr


def test_missing_dur(tmp_path):
    kernel = kernel_event(130, 5)
    del kernel["dur"]
    doc = {"traceEvents": [op_event(100, 50, 1), launch_event(110, 5), kernel]}
    res = run_parse(write_trace(tmp_path / "nodur.json", doc))
    assert res.returncode == 0, res.stderr
    _, (record,) = read_records(res.stdout)
    assert record["op"] == "aten::relu" and record["start"] == 130000
    # Kept (its start, launch and op are known), and said: a duration of 0 is not measured.
    assert (record["duration"], record["launch"]["duration"]) == (0, 2000)
    assert 'warning: events without "dur" (1x)' in res.stderr


def test_end_before_start(tmp_path):
    doc = {"traceEvents": [op_event(100, -50, 1), op_event(200, 50, 2, "aten::mm"),
                           launch_event(210, 5), kernel_event(230, 5, dur=-3)]}
    res = run_parse(write_trace(tmp_path / "negdur.json", doc))
    assert res.returncode == 0, res.stderr
    _, (record,) = read_records(res.stdout)
    assert record["op"] == "aten::mm"
    assert record["duration"] is None and record["negative_duration"] == -3000
    assert "range ends before it starts (1x)" in res.stderr
    assert "GPU rows that end before they start" in res.stderr


def test_duplicate_external_and_correlation_ids(tmp_path):
    doc = {"traceEvents": [
        op_event(100, 50, 1), launch_event(110, 5), kernel_event(130, 5),
        op_event(200, 50, 1, "aten::mm"), launch_event(210, 5), kernel_event(230, 5),
        launch_event(300, 1, dur=1)]}
    res = run_parse(write_trace(tmp_path / "dup.json", doc))
    assert res.returncode == 0, res.stderr
    _, records = read_records(res.stdout)
    assert len(records) == 2 and all(r["kind"] == "kernel" for r in records)
    # Both kernels name correlation 5: both are joined to the first call with it, and said.
    assert all(r["launch"]["start"] == 110000 for r in records)
    assert "warning: API calls with a repeated correlation id (1x)" in res.stderr
    assert "1 calls repeat the correlation id of an earlier call" in res.stderr
    # Two ops with External id 1: both kept, and said.
    assert "warning: ops with a repeated External id (1x)" in res.stderr
    res = run_parse(write_trace(tmp_path / "unique.json", tiny_trace()))
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr


def test_metadata_only_trace(tmp_path):
    doc = {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "python"}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "main"}}],
        "deviceProperties": [{"id": 0, "name": "GPU", "numSms": 2, "totalGlobalMem": 1,
                              "computeMajor": 8, "computeMinor": 6}]}
    res = run_parse(write_trace(tmp_path / "meta.json", doc))
    assert res.returncode == 0, res.stderr
    header, records = read_records(res.stdout)
    assert records == [] and header["devices"][0]["sm_count"] == 2
    assert "warning: empty profile" in res.stderr and "metadata (M) 2" in res.stderr


def test_folder_of_rank_traces(tmp_path):
    ranks = tmp_path / "traces"
    ranks.mkdir()
    shutil.copy(trace_file("event_sync"), ranks / "rank0.pt.trace.json.gz")
    with gzip.open(trace_file("rocm"), "rb") as f:
        (ranks / "rank1.pt.trace.json").write_bytes(f.read())
    (ranks / "notes.txt").write_text("not a trace")
    out = tmp_path / "dicts"
    res = run_parse(ranks, "-o", out)
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(out)) == ["rank0.pt.trace.dict", "rank1.pt.trace.dict"]
    for rank, name in ((0, "event_sync"), (1, "rocm")):
        header, records = read_dict(out / f"rank{rank}.pt.trace.dict", with_syncs=True)
        _, gold_header, gold, _ = parsed(name)
        assert without_syncs(records) == gold and [r for r in records if r["kind"] == "sync"] \
            == _syncs[name]
        assert header | {"source": None} == gold_header | {"source": None}
    # Several files on the command line, too.
    out2 = tmp_path / "dicts2"
    res = run_parse(ranks / "rank0.pt.trace.json.gz", ranks / "rank1.pt.trace.json", "-o", out2)
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(out2)) == sorted(os.listdir(out))


def test_several_traces_need_an_output_folder(tmp_path):
    a = shutil.copy(trace_file("event_sync"), tmp_path / "a.json.gz")
    b = shutil.copy(trace_file("rocm"), tmp_path / "b.json.gz")
    res = run_parse(a, b)
    assert res.returncode == 2 and "give -o DIR" in res.stderr and res.stdout == ""
    res = run_parse(tmp_path)
    assert res.returncode == 2 and "give -o DIR" in res.stderr and res.stdout == ""


def test_folder_without_traces(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    assert_error(run_parse(tmp_path, "-o", tmp_path / "out"), "holds no trace files")


def test_file_names_do_not_decide_the_format(tmp_path):
    gold_header, gold = parsed("event_sync")[1:3]
    gz_named_json = shutil.copy(trace_file("event_sync"), tmp_path / "trace.json")
    with gzip.open(trace_file("event_sync"), "rb") as f:
        plain = f.read()
    json_named_gz = tmp_path / "trace.json.gz"
    json_named_gz.write_bytes(plain)
    odd_name = tmp_path / "trace.bin"
    odd_name.write_bytes(plain)
    for path in (gz_named_json, json_named_gz, odd_name):
        header, records, _ = parse(path)
        assert records == gold, path
        assert header["devices"] == gold_header["devices"]


# ---- prof on a Kineto net.dict -------------------------------------------------------------------

def test_prof_flops_from_kineto_shapes(tmp_path):
    dict_path = tmp_path / "control.dict"
    res = run_tool(PARSE, trace_file("control"), "-q", "-o", dict_path)
    assert res.returncode == 0, res.stderr
    out = prof("--json", "-c", "idx,dir,op,kernel,flops,op_flops,params", dict_path).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    _, records = read_dict(dict_path)
    records = without_syncs(records)  # prof's table: the GPU records (syncs are no records)
    assert len(rows) == len(records)
    # aten::addmm External id 310: Input Dims [[512], [1024, 1705], [1705, 512], [], []]:
    # mat1 is M x K = 1024 x 1705, mat2 K x N = 1705 x 512: 2*M*N*K.
    expected = 2 * 1024 * 512 * 1705
    assert expected == 1_787_822_080
    gemms = [row for row, r in zip(rows, records) if r.get("op_id") == 310
             and r["kind"] == "kernel" and r["dir"] == "fprop"]
    assert gemms and all(row["op"] == "aten::addmm" for row in gemms)
    assert [row["op_flops"] for row in gemms] == [expected] * len(gemms)
    assert sum(row["flops"] for row in gemms) == expected
    assert gemms[0]["params"] == "M=1024,N=512,K=1705,fp32"


def test_prof_on_a_trace_without_shapes_prints_na(tmp_path):
    dict_path = tmp_path / "nccl.dict"
    res = run_tool(PARSE, trace_file("nccl"), "-q", "-o", dict_path)
    assert res.returncode == 0, res.stderr
    res = prof("-c", "idx,dir,op,kernel,params,flops", dict_path)
    lines = res.stdout.splitlines()
    _, records = read_dict(dict_path)
    assert len(lines) == len(without_syncs(records)) + 1
    gemm_lines = [line for line in lines[1:] if " aten::addmm " in line or " aten::mm " in line
                  or " aten::cudnn_convolution " in line]
    assert gemm_lines and all(line.endswith(" na na") for line in gemm_lines)
    assert "Traceback" not in res.stderr


def test_kernel_shared_memory_is_kinetos_sum():
    # Kineto's "shared memory" is static plus dynamic: written as such, the split unknown.
    # {"cat": "kernel", "name": "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_
    #  nn_align4>(...)", "args": {"correlation": 1869557, "shared memory": 49152, ...}}
    _, _, records, _ = parsed("control")
    r = by_correlation(records)[1869557]
    assert (r["shared_memory"], r["shared_static"], r["shared_dynamic"]) == (49152, -1, -1)
