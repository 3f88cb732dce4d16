"""`pyprof parse REPLAY --graph-capture CAPTURE` (docs/formats.md §4.2): CUDA/HIP graph replays
traced apart from their capture. The replay shows only hipGraphLaunch / cudaGraphLaunch and
the kernels each ran; the capture shows the same kernels launched inside their ops. On a real
pair (vLLM piecewise graphs on an MI300X, from TraceLens's test data) the join is checked
against an oracle that reads both traces with gzip + json; on synthetic pairs, every kind of
mismatch is counted and costs are per replay."""

import bisect
import collections
import decimal
import gzip
import json
import os

import pytest

import testlib

pytestmark = pytest.mark.needs_build

REAL = os.path.join(testlib.SHARED_TRACES, "real")
CAPTURE = os.path.join(REAL, "kineto_tracelens-mi300x-vllm-piecewise-graph-capture.json.gz")
REPLAY = os.path.join(REAL, "kineto_tracelens-mi300x-vllm-piecewise-graph-replay.json.gz")


def ns(us) -> int:
    return int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_HALF_UP))


def events_of(path):
    with gzip.open(path) as f:
        return [e for e in json.load(f, parse_float=decimal.Decimal)["traceEvents"]
                if e.get("ph") == "X"]


def capture_oracle(events):
    """Per stream capture, in time order: for each kernel launch inside it, the kernel it names,
    the innermost cpu_op of its thread around it (latest start that holds the call) and that
    op's start (which op call it is)."""
    calls = sorted((e for e in events if e.get("cat") == "cuda_runtime"), key=lambda e: ns(e["ts"]))
    ops = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op":
            ops[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
    for v in ops.values():
        v.sort()
    captures, current = [], None
    for e in calls:
        if e["name"].endswith("StreamBeginCapture"):
            current = []
        elif e["name"].endswith("StreamEndCapture"):
            captures.append(current)
            current = None
        elif current is not None and "kernel" in e.get("args", {}):
            t0, t1 = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            thread = ops[(e["pid"], e["tid"])]
            around = [o for o in thread[:bisect.bisect_right(thread, (t0, 2**63, ""))]
                      if o[1] >= t1]
            current.append((e["args"]["kernel"], around[-1][2] if around else None,
                            around[-1][0] if around else None))
    return captures


def replay_oracle(events):
    """Per graph launch, in time order: its kernels' names in GPU start order."""
    launches = sorted((e for e in events if e.get("name") in ("hipGraphLaunch", "cudaGraphLaunch")),
                      key=lambda e: ns(e["ts"]))
    kernels = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "kernel":
            kernels[e["args"]["correlation"]].append((ns(e["ts"]), e["name"]))
    return [[name for _, name in sorted(kernels[g["args"]["correlation"]])] for g in launches]


def test_real_vllm_mi300x_replay_joined_to_its_capture():
    if not (os.path.exists(CAPTURE) and os.path.exists(REPLAY)):
        pytest.skip("../shared/traces/real is beside the checkout")
    captures = capture_oracle(events_of(CAPTURE))
    replays = replay_oracle(events_of(REPLAY))
    # The pair replays each piecewise graph once, in capture order (the oracle's own check).
    assert len(captures) == len(replays) == 25
    assert [[k for k, _, _ in c] for c in captures] == replays
    _, plain, plain_summary = testlib.parse(REPLAY)
    header, recs, summary = testlib.parse(REPLAY, "--graph-capture", CAPTURE)
    assert len(recs) == len(plain) == 423
    graph = [r for r in recs if r.get("launch", {}).get("api") == "hipGraphLaunch"]
    assert len(graph) == sum(map(len, replays)) == 361
    plain_graph = [r for r in plain if r.get("launch", {}).get("api") == "hipGraphLaunch"]
    assert len(plain_graph) == 361 and all(r["op"] is None for r in plain_graph)
    # Each replayed kernel gets the op its launch ran in at capture.
    expected = collections.Counter(op for c in captures for _, op, _ in c)
    assert collections.Counter(r["op"] for r in graph) == expected
    assert None not in expected
    by_launch = collections.defaultdict(list)
    for r in graph:
        by_launch[r["launch"]["start"]].append(r)
    for (start, rows), capture in zip(sorted(by_launch.items()), captures):
        rows.sort(key=lambda r: r["start"])
        assert [(r["long_name"], r["op"]) for r in rows] == [(k, op) for k, op, _ in capture]
    # Shapes came with them (the capture recorded them), and each op call of each replay is an
    # op instance of its own, the kernels of one call sharing it.
    assert sum("args" in r for r in graph) > 300
    assert len({r["instance"] for r in graph}) == sum(len({t for _, _, t in c}) for c in captures)
    assert ("graph capture " + CAPTURE + ": 25 captures (") in summary
    assert ("25 of 25 graph launches joined (25 with every kernel name checked, 0 by order alone, "
            "0 with names that differ), 0 with no capture of as many kernels; kernels: 361 "
            "replayed, 361 joined, 0 whose name differs from the capture's, 0 in unjoined "
            "launches") in summary
    ranges_line = summary.split("  ranges: ")[1].split("\n")[0]  # the replay's own ranges
    assert ranges_line == plain_summary.split("  ranges: ")[1].split("\n")[0]
    attributed = int(summary.split("attributed to an op: ")[1].split(" ")[0])
    before = int(plain_summary.split("attributed to an op: ")[1].split(" ")[0])
    assert attributed == before + 361


# -- synthetic pairs --------------------------------------------------------------------------

def cpu_op(ts, dur, ext, name, dims=None):
    args = {"External id": ext}
    if dims is not None:
        args.update({"Input Dims": dims, "Input type": ["float"] * len(dims)})
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 10, "tid": 10, "ts": ts, "dur": dur,
            "args": args}


def runtime(ts, name, corr, kernel=None, dur=2):
    args = {"correlation": corr}
    if kernel is not None:
        args["kernel"] = kernel
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 10, "tid": 10, "ts": ts,
            "dur": dur, "args": args}


def gpu(ts, name, corr, cat="kernel", dur=5):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": corr}}


def capture_doc(named):
    """Two graphs captured: aten::mm (gemm_a) then aten::relu (relu_k); aten::add (add_k)."""
    k = (lambda name: name) if named else (lambda name: None)
    launch = "hipLaunchKernel" if named else "cudaLaunchKernel"
    begin, end = ("hipStreamBeginCapture", "hipStreamEndCapture") if named else (
        "cudaStreamBeginCapture", "cudaStreamEndCapture")
    return {"traceEvents": [
        runtime(100, begin, 1),
        cpu_op(110, 30, 11, "aten::mm", [[8, 16], [16, 32]]),
        runtime(115, launch, 2, k("gemm_a")),
        cpu_op(150, 20, 12, "aten::relu", [[8, 32]]),
        runtime(155, launch, 3, k("relu_k")),
        runtime(180, end, 4),
        runtime(200, begin, 5),
        cpu_op(210, 20, 13, "aten::add", [[8, 32], [8, 32]]),
        runtime(215, launch, 6, k("add_k")),
        runtime(240, end, 7),
    ]}


def replay_doc(named):
    graph = "hipGraphLaunch" if named else "cudaGraphLaunch"
    return {"traceEvents": [
        runtime(1000, graph, 100), gpu(1010, "gemm_a", 100), gpu(1020, "relu_k", 100),
        gpu(1030, "Memcpy DtoD", 100, cat="gpu_memcpy"),
        runtime(1100, graph, 101), gpu(1110, "add_k", 101),
        # The first graph again, but its second kernel has another name.
        runtime(1200, graph, 102), gpu(1210, "gemm_a", 102), gpu(1220, "relu_other", 102),
        # Three kernels: no capture has as many.
        runtime(1300, graph, 103), gpu(1310, "gemm_a", 103), gpu(1320, "relu_k", 103),
        gpu(1330, "add_k", 103),
    ]}


def write(path, doc):
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("named", [True, False], ids=["rocm-names", "cuda-no-names"])
def test_synthetic_pair_counts_every_mismatch(tmp_path, named):
    capture = write(tmp_path / "capture.json", capture_doc(named))
    replay = write(tmp_path / "replay.json", replay_doc(named))
    _, recs, summary = testlib.parse(replay, "--graph-capture", capture)
    kernels = [r for r in recs if r["kind"] == "kernel"]
    ops = [(r["name"], r["op"]) for r in kernels]
    if named:
        # The renamed kernel is not joined; the rest of its launch is.
        assert ops == [("gemm_a", "aten::mm"), ("relu_k", "aten::relu"), ("add_k", "aten::add"),
                       ("gemm_a", "aten::mm"), ("relu_other", None),
                       ("gemm_a", None), ("relu_k", None), ("add_k", None)]
        assert ("2 captures (3 kernel launches, 3 naming their kernel); 3 of 4 graph launches "
                "joined (2 with every kernel name checked, 0 by order alone, 1 with names that "
                "differ), 1 with no capture of as many kernels; kernels: 8 replayed, 4 joined, "
                "1 whose name differs from the capture's, 3 in unjoined launches; 1 copies and "
                "memsets of graph launches not joined") in summary
    else:
        # Without names only the order and the counts can be checked.
        assert ops == [("gemm_a", "aten::mm"), ("relu_k", "aten::relu"), ("add_k", "aten::add"),
                       ("gemm_a", "aten::mm"), ("relu_other", "aten::relu"),
                       ("gemm_a", None), ("relu_k", None), ("add_k", None)]
        assert ("2 captures (3 kernel launches, 0 naming their kernel); 3 of 4 graph launches "
                "joined (0 with every kernel name checked, 3 by order alone, 0 with names that "
                "differ), 1 with no capture of as many kernels; kernels: 8 replayed, 5 joined, "
                "0 whose name differs from the capture's, 3 in unjoined launches") in summary
    mm = [r for r in kernels if r["op"] == "aten::mm"]
    assert [a["shape"] for a in mm[0]["args"].values()] == [[8, 16], [16, 32]]
    # Each replay is an op instance of its own, so prof costs each: 2 x (2 * 8 * 16 * 32).
    assert len({r["instance"] for r in mm}) == 2
    net = tmp_path / "net.dict"
    testlib.parse_to(replay, net, "--graph-capture", capture)
    rows = testlib.report_rows(testlib.prof(
        "--report", "op", "--formats", "json", str(net)).stdout)
    (mm_row,) = [r for r in rows if r["Op"] == "aten::mm"]
    assert float(mm_row["FLOPs(FMA=2)"]) == 2 * (2 * 8 * 16 * 32)


def test_a_capture_without_graphs_is_a_clear_error(tmp_path):
    replay = write(tmp_path / "replay.json", replay_doc(True))
    res = testlib.run_tool(testlib.PARSE, replay, "--graph-capture", replay, timeout=60)
    assert res.returncode == 1
    assert "--graph-capture" in res.stderr and "holds no stream capture" in res.stderr
    res = testlib.run_tool(testlib.PARSE, replay, "--graph-capture", tmp_path / "missing.json",
                           timeout=60)
    assert res.returncode == 1 and "missing.json" in res.stderr


def test_help_and_docs_name_the_option():
    res = testlib.run_tool(testlib.PARSE, "--help", timeout=60)
    assert "--graph-capture" in res.stdout
    with open(os.path.join(testlib.ROOT, "docs", "formats.md")) as f:
        assert "--graph-capture" in f.read()
