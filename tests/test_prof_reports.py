"""prof's reports on real profiles: rates over the time the counted FLOPs ran in (on a CPU
profile an op's inclusive time), where each op's cost is counted, the family and phase
breakdowns, and human units in text reports checked against the raw numbers of JSON.

The CPU profiles are tests/scripts/flops_oracle.py's: one training step under pyprof, after
the same step under torch.utils.flop_counter.FlopCounterMode, the independent FLOP count."""

import collections
import os
import csv
import json
import re

import pytest

import pyprof_db
import testlib
from testlib import DATA, parse_to, prof

pytestmark = pytest.mark.needs_build


@pytest.fixture(scope="module", params=testlib.all_but_one_slow(["lenet", "resnet_block"],
                                                                "lenet"))
def cpu_profile(request, tmp_path_factory):
    """(model, FlopCounterMode's counts, net.dict path, the dict's records)."""
    tmp = tmp_path_factory.mktemp(request.param)
    oracle = tmp / "oracle.json"
    res = pyprof_db.profile(tmp, testlib.script("flops_oracle.py"), request.param, str(oracle))
    assert res.returncode == 0, res.stderr
    parse_to(tmp / "net.sqlite", tmp / "net.dict", timeout=120)
    _, records = testlib.read_dict(tmp / "net.dict")
    with open(oracle) as f:
        return request.param, json.load(f), tmp / "net.dict", records


def report(name, path, *extra):
    """The rows of prof's report `name` as JSON (testlib.report_rows: each with its report and
    table ids)."""
    return testlib.report_rows(prof("--report", name, "--formats", "json", *extra,
                                    path).stdout)


def summary(path):
    return {r["Metric"]: r["Value"] for r in report("summary", path)}


def test_cpu_conv2d_rate_is_its_flops_over_its_inclusive_time(cpu_profile):
    """aten::conv2d counts the FLOPs its callee aten::mkldnn_convolution spent its self time on:
    its row's counted time is its inclusive time (the records' durations in net.dict), its FLOPs
    FlopCounterMode's forward convolutions, its TFLOP/s their quotient; the callee's row says
    where its cost went and carries no rate."""
    model, oracle, path, records = cpu_profile
    rows = {(r["Op"], r["Direction"]): r for r in report("op", path)}
    conv = rows[("aten::conv2d", "fprop")]
    durations = [r["duration"] for r in records if r["name"] == "aten::conv2d"]
    assert conv["Records"] == conv["Instances"] == len(durations) > 0
    assert conv["Inclusive(ns)"] == conv["Counted time(ns)"] == sum(durations)
    assert conv["Self(ns)"] == sum(r["self_duration"] for r in records
                                   if r["name"] == "aten::conv2d")
    assert conv["FLOPs(FMA=2)"] == oracle["ops"]["aten.convolution"]
    # Raw rates keep 3 significant digits below 0.1 TFLOP/s (a CPU's rate), 3 decimals above.
    assert conv["TFLOP/s"] == pytest.approx(conv["FLOPs(FMA=2)"] / sum(durations) / 1e3, rel=5e-3)
    assert conv["Modeled"] == "yes"
    assert conv["Avg/instance(ns)"] == sum(durations) // len(durations)
    assert (conv["Min/instance(ns)"], conv["Max/instance(ns)"]) == (min(durations), max(durations))
    for callee in ("aten::convolution", "aten::_convolution", "aten::mkldnn_convolution"):
        row = rows[(callee, "fprop")]
        assert row["Modeled"] == "in caller", row
        assert (row["FLOPs(FMA=2)"], row["Counted time(ns)"], row["TFLOP/s"]) == (0, 0, None)
        assert row["Self(ns)"] == sum(r["self_duration"] for r in records if r["name"] == callee)


def test_cpu_summary_rates_and_coverage(cpu_profile):
    model, oracle, path, records = cpu_profile
    s = summary(path)
    ops = report("op", path)
    self_time = sum(r["self_duration"] for r in records)
    counted = sum(r["Counted time(ns)"] for r in ops)
    flops = sum(r["FLOPs(FMA=2)"] for r in ops)
    assert int(s["op self time (ns)"]) == sum(r["Self(ns)"] for r in ops) == self_time
    assert int(s["counted time (ns)"]) == counted
    assert int(s["FLOPs (FMA=2)"]) == flops
    assert float(s["achieved TFLOP/s (over counted time)"]) == pytest.approx(flops / counted / 1e3,
                                                                             rel=5e-3)
    # The counted ops' call trees never nest, and parse's self times add up to their inclusive
    # times: the covered share is the counted time over the self time, and at most 100%.
    covered = float(s["time covered by a FLOP model %"])
    assert covered == float(f"{100 * counted / self_time:.1f}") and 0 < covered <= 100
    # Every modelled op is counted exactly once, or says where it is counted ("na", no model, is
    # JSON's null).
    assert {r["Modeled"] for r in ops} <= {"yes", "in caller", None, "yes/in caller",
                                          "yes/na", "in caller/na", "yes/in caller/na", "no"}


def test_cpu_module_rate_is_its_counted_flops_over_its_time(cpu_profile):
    model, oracle, path, records = cpu_profile
    top = next(r for r in report("module", path, "--depth", "1"))
    in_module = [r for r in records if r.get("module")]
    assert top["Total(ns)"] == sum(r["self_duration"] for r in in_module)
    flops = top["Fprop FLOPs"] + top["Bprop FLOPs"]
    per_record = [json.loads(line) for line in
                  prof("--json", "-c", "module,flops", path).stdout.splitlines()]
    # The loss is outside the model: its FLOPs are in no module.
    assert flops == sum(r["flops"] or 0 for r in per_record if r["module"]) > 0
    assert top["TFLOP/s"] == pytest.approx(flops / top["Total(ns)"] / 1e3, rel=5e-3, abs=5e-4)


def test_family_report_adds_up(cpu_profile):
    model, oracle, path, records = cpu_profile
    rows = report("family", path)
    assert list(rows[0]) == ["report", "table", "Family", "Records", "Time(ns)", "% of time",
                             "Counted time(ns)", "FLOPs(FMA=2)", "Bytes(ideal DRAM)", "TFLOP/s"]
    s = summary(path)
    assert sum(r["Records"] for r in rows) == len(records)
    assert sum(r["Time(ns)"] for r in rows) == int(s["op self time (ns)"])
    assert sum(r["FLOPs(FMA=2)"] for r in rows) == int(s["FLOPs (FMA=2)"])
    by_family = {r["Family"]: r for r in rows}
    # FlopCounterMode's families: its GEMMs and convolutions, each call tree once.
    assert by_family["conv"]["FLOPs(FMA=2)"] + by_family.get("matmul", {}).get(
        "FLOPs(FMA=2)", 0) == oracle["total"]
    assert [r["Time(ns)"] for r in rows] == sorted((r["Time(ns)"] for r in rows), reverse=True)


def test_phase_report_on_a_cpu_step(cpu_profile):
    """flops_oracle.py's step is forward and backward, no optimizer."""
    model, oracle, path, records = cpu_profile
    rows = report("phase", path)
    assert [r["Phase"] for r in rows] == ["forward", "backward", "optimizer", "other"]
    assert list(rows[0]) == ["report", "table", "Phase", "Records", "Time(ns)", "% of time",
                             "FLOPs(FMA=2)", "TFLOP/s"]
    dirs = collections.Counter(r["dir"] for r in records)
    assert [r["Records"] for r in rows] == [dirs["fprop"], dirs["bprop"], 0, 0]
    assert rows[0]["Time(ns)"] == sum(r["self_duration"] for r in records if r["dir"] == "fprop")
    assert rows[2]["TFLOP/s"] is None and rows[2]["Time(ns)"] == 0


def test_phase_report_finds_torch_optimizer_ranges(tmp_path):
    """The ROCm Kineto trace: SGD's step is a RecordFunction range, Optimizer.step#SGD.step, over
    one kernel (a _foreach_add_, of the optim family)."""
    path = tmp_path / "rocm.dict"
    parse_to(f"{DATA}/kineto_hta-mi250-rocm6.2-minitoy.json.gz", path)
    _, records = testlib.read_dict(path)
    rows = {r["Phase"]: r for r in report("phase", path)}
    optimizer = [r for r in records
                 if any(u.startswith("Optimizer.step#") for u in r.get("user_ranges") or [])]
    assert len(optimizer) == rows["optimizer"]["Records"] == 1
    assert rows["optimizer"]["Time(ns)"] == optimizer[0]["duration"]
    backward = [r for r in records if r["dir"] == "bprop" and r not in optimizer]
    assert rows["backward"]["Records"] == len(backward)
    assert sum(r["Records"] for r in rows.values()) == len(records)


def test_family_report_on_a_gpu_profile(tmp_path):
    path = tmp_path / "lenet.dict"
    parse_to(f"{DATA}/nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite", path)
    _, records = testlib.read_dict(path)
    rows = {r["Family"]: r for r in report("family", path)}
    assert sum(r["Time(ns)"] for r in rows.values()) == sum(r["duration"] for r in records)
    # max_pool2d has no GPU model here: its kernels are "(no model)".
    assert rows["(no model)"]["FLOPs(FMA=2)"] == 0 and rows["(no model)"]["TFLOP/s"] is None
    copies = [r for r in records if r["kind"] == "memcpy"]
    assert rows["memcpy"]["Records"] == len(copies)
    assert rows["memcpy"]["Time(ns)"] == sum(r["duration"] for r in copies)


# --- human units ---------------------------------------------------------------------------

SCALE = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9, "FLOP": 1, "kFLOP": 1e3, "MFLOP": 1e6,
         "GFLOP": 1e9, "TFLOP": 1e12, "PFLOP": 1e15, "B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9,
         "TB": 1e12, "FLOP/s": 1e-12, "kFLOP/s": 1e-9, "MFLOP/s": 1e-6, "GFLOP/s": 1e-3,
         "TFLOP/s": 1, "B/s": 1e-9, "kB/s": 1e-6, "MB/s": 1e-3, "GB/s": 1, "TB/s": 1e3}
HUMAN = re.compile(r"^(-?[\d,]+(?:\.\d+)?) (\S+)$")


def human_value(text):
    """'12.3 µs' -> 12300.0 in the raw unit (ns, FLOPs, bytes, TFLOP/s, GB/s)."""
    m = HUMAN.match(text)
    assert m, text
    number = m.group(1).replace(",", "")
    digits = len(number.replace("-", "").replace(".", "").lstrip("0"))
    assert "," in m.group(1) or digits <= 3 or "." not in number, text  # 3 significant digits
    return float(number) * SCALE[m.group(2)]


def text_cells(text, headers):
    """The text report's rows, cut at the columns' right edges (numbers are right-aligned)."""
    lines = text.splitlines()[1:]
    header = lines[0]
    rows = []
    for line in lines[1:]:
        if not line.strip():
            break
        rows.append(line)
    ends = {}
    for h in headers:
        at = header.index(h)
        ends[h] = (at, at + len(h))
    return header, rows, ends


@pytest.mark.parametrize("source", ["cpu", "gpu"])
def test_text_op_report_is_the_json_report_in_human_units(cpu_profile, tmp_path, source):
    if source == "cpu":
        path = cpu_profile[2]
    else:
        path = tmp_path / "gpu.dict"
        parse_to(f"{DATA}/nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite", path)
    raw = report("op", path)
    text = prof("--report", "op", "-w", "0", path).stdout  # one line a row, every column
    lines = text.splitlines()
    time_headers = [h for h in raw[0] if h.endswith("(ns)")]
    header = lines[1]
    # Headers lose "(ns)"; rates name no prefix (each cell has its own).
    for h in time_headers:
        assert h not in header and f" {h[:-4]} " in f" {header} ", (h, header)
    assert "FLOP/s" in header and "TFLOP/s" not in header and "Bytes/s" in header
    assert len(lines) == 2 + len(raw) + 1  # title, header, rows, blank line
    columns = [(h, h[:-4] if h.endswith("(ns)") else
                {"TFLOP/s": "FLOP/s", "GB/s": "Bytes/s"}.get(h, h))
               for h in raw[0] if h not in ("report", "table", "Op", "Direction", "Modeled")]
    for line, row in zip(lines[2:], raw):
        # Every line as wide as the header: numbers are right-aligned to the header's end.
        assert len(line) == len(header)
        for key, shown in columns:
            end = header.index(f" {shown}" if shown != "Instances" else shown) + len(shown) + \
                (1 if shown != "Instances" else 0)
            cell = line[:end].rsplit("  ", 1)[-1].strip()
            value = row[key]
            if value is None or isinstance(value, str):
                assert cell == ("na" if value is None else value), (key, cell, value)
            elif key in ("Instances", "Records"):
                assert cell == f"{value:,}", (key, cell)
            else:
                shown_value = human_value(cell)
                # 3 significant digits of the value (rates: of the exact one; JSON keeps 3 or 1
                # decimals, so compare within those too).
                rounding = {"TFLOP/s": 0.0005, "GB/s": 0.05}.get(key, 0.5)
                tolerance = abs(value) * 0.005 + rounding
                assert abs(shown_value - value) <= tolerance, (key, cell, value)


def test_text_summary_in_human_units_and_raw(cpu_profile):
    path = cpu_profile[2]
    s = summary(path)
    text = prof("--report", "summary", "-w", "0", path).stdout
    metrics = dict(re.split(r"\s{2,}", line.rstrip(), maxsplit=1)
                   for line in text.splitlines()[2:] if line.strip())
    assert human_value(metrics["wall time"]) == pytest.approx(int(s["wall time (ns)"]), rel=5e-3)
    assert human_value(metrics["counted time"]) == pytest.approx(int(s["counted time (ns)"]),
                                                                 rel=5e-3)
    assert human_value(metrics["FLOPs (FMA=2)"]) == pytest.approx(int(s["FLOPs (FMA=2)"]),
                                                                  rel=5e-3)
    assert metrics["records"] == f"{int(s['records']):,}"
    assert metrics["top op 1"].endswith("%)") and " ns (" not in metrics["top op 1"]
    # --raw: the numbers of CSV and JSON, aligned, with today's metric names.
    raw = prof("--report", "summary", "--raw", "-w", "0", path).stdout
    raw_metrics = dict(re.split(r"\s{2,}", line.rstrip(), maxsplit=1)
                       for line in raw.splitlines()[2:] if line.strip())
    csv_rows = list(csv.reader(prof("--report", "summary", "--formats", "csv", path)
                               .stdout.splitlines()))[1:]
    assert raw_metrics == dict(csv_rows)
    # JSON: the same values, a number where the metric's unit is a quantity.
    assert s.keys() == raw_metrics.keys()
    for metric, value in s.items():
        if isinstance(value, str):
            assert value == raw_metrics[metric], metric
        else:
            assert value == float(raw_metrics[metric]), metric


def test_raw_keeps_integers_and_csv_json_do_not_change(cpu_profile, tmp_path):
    path = cpu_profile[2]
    prof("--report", "op,family", "--formats", "text,csv,json", "--raw", "-o", tmp_path / "raw",
         path)
    prof("--report", "op,family", "--formats", "text,csv,json", "-o", tmp_path / "human", path)
    for name in ("op", "family"):
        for fmt in ("csv", "json"):
            assert (tmp_path / f"raw.{name}.{fmt}").read_text() == \
                (tmp_path / f"human.{name}.{fmt}").read_text()
        raw_text = (tmp_path / f"raw.{name}.text").read_text()
        assert "(ns)" in raw_text and " ms " not in raw_text and "µs" not in raw_text
        assert "µs" in (tmp_path / f"human.{name}.text").read_text()


def test_raw_needs_a_report_and_is_documented(cpu_profile):
    res = prof("--raw", cpu_profile[2], check=False)
    assert res.returncode == 2 and "--raw applies to --report" in res.stderr
    assert "--raw" in prof("--help").stdout
    res = prof("--report", "nope", cpu_profile[2], check=False)
    assert res.returncode == 2 and "family, phase" in res.stderr


def test_top_keeps_the_rows_with_the_most_time(tmp_path):
    """--top N: the instance, kernel and roofline-instance tables are the first N rows of the
    full ones (sorted by time); the other reports do not change."""
    src = os.path.join(testlib.DATA, "nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql")
    dict_path = tmp_path / "lm.dict"
    testlib.parse_to(src, dict_path)

    def tables(*extra):
        res = testlib.run_tool(testlib.PROF, "--report", "instance,kernel,roofline,op",
                               "--formats", "json", *extra, dict_path)
        assert res.returncode == 0, res.stderr
        out = {}
        for row in testlib.report_rows(res.stdout):
            out.setdefault(f"{row.pop('report')}/{row.pop('table')}", []).append(row)
        return out

    full, top = tables(), tables("--top", "3")
    assert set(full) == {"instance/instance", "kernel/kernel", "roofline/op_types",
                         "roofline/op_instances", "op/op"}
    for title, rows in full.items():
        if title in ("instance/instance", "kernel/kernel", "roofline/op_instances"):
            assert len(rows) > 3 and top[title] == rows[:3], title
            times = [r.get("Total(ns)", r.get("Time(ns)")) for r in rows]
            assert times == sorted(times, reverse=True)
        else:
            assert top[title] == rows, title
    bad = testlib.run_tool(testlib.PROF, "--report", "instance", "--top", "-1", dict_path)
    assert bad.returncode == 2


def union_ns(spans):
    """The length of the union of [start, end) spans: the oracle, by hand."""
    total, end = 0, None
    for s, e in sorted(spans):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def test_gpu_busy_is_per_device_on_several_gpus(tmp_path):
    """Two GPUs driven by two threads (a 2-GPU Nsight Systems export's shape): each GPU is busy
    most of the time, but not at the same moments. The union over both devices (what the summary
    used to call "GPU busy") says nothing about either; each device's busy and idle time, and
    totals that name what they add up, do (issue 30, item 8)."""
    from nsys_synth import SynthDb
    db = SynthDb()
    for device in (0, 1):
        db.gpu(device)
        t = db.thread(pid=100, tid=100 + device)
        t.wait_until(20_000_000 + device * 30_000)  # GPU 1 starts and ends later
        for i in range(20):
            t.launch("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor"
                     "<float>>(int)", device=device, duration=20_000 + 1_000 * device)
            t.advance(2_000 if i % 5 else 40_000)  # a gap now and then
    path = tmp_path / "x.sqlite"
    db.save(path)
    parse_to(path, tmp_path / "net.dict", timeout=60)
    _, records = testlib.read_dict(tmp_path / "net.dict")
    first = min(r["start"] for r in records)
    wall = max(r["start"] + r["duration"] for r in records) - first
    busy = {d: union_ns([(r["start"], r["start"] + r["duration"]) for r in records
                         if r["device"] == d]) for d in (0, 1)}
    any_busy = union_ns([(r["start"], r["start"] + r["duration"]) for r in records])
    assert busy[0] + busy[1] > any_busy > max(busy.values())  # the union was neither
    s = summary(tmp_path / "net.dict")
    assert "GPU busy (ns)" not in s and "GPU busy %" not in s
    assert s["wall time (ns)"] == wall
    assert s["GPU busy, sum over 2 GPUs (ns)"] == busy[0] + busy[1]
    assert float(s["GPU busy %, mean over 2 GPUs"]) == pytest.approx(
        100 * (busy[0] + busy[1]) / (2 * wall), abs=0.05)
    assert s["time with any GPU busy (ns)"] == any_busy
    for d in (0, 1):
        assert s[f"GPU {d} busy (ns)"] == busy[d]
        assert float(s[f"GPU {d} busy %"]) == pytest.approx(100 * busy[d] / wall, abs=0.05)
        assert s[f"GPU {d} idle (ns)"] == wall - busy[d]
        assert float(s[f"GPU {d} idle %"]) == pytest.approx(100 * (wall - busy[d]) / wall,
                                                           abs=0.05)
    # The HTML report's card shows the mean and says so, with each GPU's share under it.
    from pyprof import _reports
    from pyprof._report_page import gpu_busy_headline
    (table,) = _reports.read_tables(prof("--report", "summary", "--formats", "json",
                                         tmp_path / "net.dict").stdout.splitlines())
    card = gpu_busy_headline(table, cpu_only=False)
    assert card["label"] == "GPU busy (mean of 2 GPUs)"
    assert card["value"] == pytest.approx(float(s["GPU busy %, mean over 2 GPUs"]))
    assert f"GPU 0 {float(s['GPU 0 busy %']):.1f}%" in card["sub"]
    assert f"GPU 1 {float(s['GPU 1 busy %']):.1f}%" in card["sub"]
    # One GPU: the rows stay what they were.
    one = tmp_path / "one.dict"
    with open(tmp_path / "net.dict") as f, open(one, "w") as out:
        for line in f:
            if '"device": 1' not in line and '"device":1' not in line:
                out.write(line)
    s1 = summary(one)
    assert s1["GPU busy (ns)"] == busy[0] and "GPU 0 busy (ns)" not in s1
