"""`pyprof report`: the HTML page, opened in a real headless browser (chromium through selenium).

Checked on a real CPU capture (LeNet trained under `pyprof profile`), a real A100 torch.profiler
trace, a real nsys trace of an RTX 2070 SUPER (a GPU outside the datasheet table: derived
peaks), a GPU trace without a device table, an empty profile, and broken inputs. The page's
figures are compared with prof's own JSON reports for the same input (run separately here), and
its roofs with the device peak table.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import browser
import pyprof_db
import testlib

pytestmark = pytest.mark.needs_build

SECTIONS = ["headline", "roofline", "breakdown", "ops", "unmodelled", "instances", "kernels",
            "tensor-cores", "iterations", "memory", "advice", "diff", "ranks", "devices"]
V100_TRACE = os.path.join(testlib.DATA, "nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql")
A100_SHAPES_TRACE = os.path.join(testlib.SHARED_TRACES, "real",
                                 "kineto_hta-a100-record-shapes-control.json.gz")
RTX2070_TRACE = os.path.join(testlib.DATA, "nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite")
NO_DEVICES_TRACE = os.path.join(testlib.DATA, "synthetic_mlp.nsys.sqlite")


def report(*args, check=True) -> subprocess.CompletedProcess:
    res = subprocess.run([testlib.PY, "-m", "pyprof", "report", *map(str, args)],
                         capture_output=True, text=True, timeout=300, env=testlib.pyprof_env(),
                         cwd=testlib.ROOT)
    assert res.returncode >= 0, res
    if check:
        assert res.returncode == 0, res.stderr
    return res


def prof_json(dict_path, *reports, extra=()) -> dict[str, list[dict]]:
    """prof's reports as JSON, grouped by "report/table" id: the oracle the page must agree
    with."""
    res = testlib.run_tool(testlib.PROF, *extra, "--report", ",".join(reports), "--formats",
                           "json", "--depth", "0", dict_path)
    assert res.returncode == 0, res.stderr
    table_lines, rows = testlib.report_json(res.stdout)
    tables: dict[str, list[dict]] = {f"{t['report']}/{t['table']}": [] for t in table_lines}
    for row in rows:
        tables[f"{row.pop('report')}/{row.pop('table')}"].append(row)
    return tables


def human_ns(ns: float) -> str:
    """A time as the page writes it: 3 significant digits, the largest unit that keeps >= 1."""
    for div, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if ns >= div * 0.9995:
            x = ns / div
            return (f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}") + " " + unit
    return f"{ns:.0f} ns"


def summary_values(tables) -> dict[str, str]:
    return {r["Metric"]: r["Value"] for r in tables["summary/summary"]}


@pytest.fixture(scope="module")
def driver():
    if not browser.browser_available():
        pytest.skip("no headless browser (scripts/setup.sh installs chromium and selenium)")
    d = browser.new_driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def lenet_dict(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report_lenet")
    res = pyprof_db.profile(tmp, os.path.join(testlib.ROOT, "examples", "train.py"), "--model",
                            "lenet", "--steps", "3")
    assert res.returncode == 0, res.stderr
    testlib.parse_to(tmp / "net.sqlite", tmp / "net.dict")
    return tmp / "net.dict"


class Page:
    """A rendered report: the browser's view of it."""

    def __init__(self, driver, path, shot=None):
        browser.open_page(driver, path)
        self.d = driver
        self.errors = browser.console_errors(driver)
        if shot:
            driver.save_screenshot(str(shot))

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def sections(self):
        return self.js("return [...document.querySelectorAll('main > section')].map(s => s.id)")

    def cards(self) -> dict[str, tuple[str, str]]:
        return {k: (raw, text) for k, raw, text in self.js(
            "return [...document.querySelectorAll('.card')].map(c => "
            "[c.dataset.metric, c.dataset.raw, c.querySelector('.value').textContent])")}

    def traces(self, fig):
        return self.js(f"const g = document.getElementById('fig-{fig}');"
                       "return g && g.data ? g.data.map(t => ({meta: t.meta || null, "
                       "x: Array.from(t.x || []), y: Array.from(t.y || []), "
                       "type: t.type})) : null")

    def notes(self):
        return self.js("return [...document.querySelectorAll('#notes-list li')]"
                       ".map(li => li.textContent)")

    def table_rows(self, table_id):
        return self.js(f"return [...document.querySelectorAll('table[data-table={table_id}] "
                       "tbody tr')].map(tr => [...tr.children].map(td => td.textContent))")


def test_cpu_profile_page_matches_prof_and_renders_cleanly(driver, lenet_dict, tmp_path):
    out = tmp_path / "lenet.html"
    res = report(lenet_dict, "-o", out)
    assert "wrote" in res.stdout
    html = out.read_text()
    # Self-contained: no external script, style or font.
    assert "<script src=" not in html and "<link " not in html and "@import" not in html
    page = Page(driver, out, shot=tmp_path / "lenet.png")
    assert page.errors == []
    assert (tmp_path / "lenet.png").stat().st_size > 10_000
    assert page.sections() == SECTIONS
    tables = prof_json(lenet_dict, "summary", "op", "roofline")
    summary = summary_values(tables)
    cards = page.cards()
    assert int(cards["records"][0]) == int(summary["records"]) > 100
    assert int(cards["wall_time"][0]) == int(summary["wall time (ns)"])
    assert float(cards["flops"][0]) == float(summary["FLOPs (FMA=2)"]) > 1e6
    assert cards["device"][1] == "CPU"
    # Human units in the cards: 95043532 ns reads "95.0 ms".
    assert cards["wall_time"][1] == human_ns(int(summary["wall time (ns)"]))
    # Three `step N` ranges from examples/train.py: the step time card is the steady state's
    # median wall time of prof's iteration report (the warm-up step 0 left out).
    steady = prof_json(lenet_dict, "iteration")
    (wall_row,) = [r for r in steady["iteration/steady_state"]
                   if r["Metric"].startswith("wall time")]
    assert float(cards["step_time"][0]) == pytest.approx(float(wall_row["Median"]))
    assert any("CPU-only profile" in n for n in page.notes())
    # One roofline point per op type of prof's roofline report (with a positive intensity).
    types = tables["roofline/op_types"]
    traces = page.traces("roofline")
    points = [t for t in traces if (t["meta"] or {}).get("level") == "op type"]
    assert len(points) == 1
    expected = sorted((float(r["FLOP/Byte"]), float(r["FLOP/s"])) for r in types
                      if r["FLOP/Byte"] and r["FLOP/s"])
    assert sorted(zip(points[0]["x"], points[0]["y"])) == pytest.approx(expected)
    assert len(expected) >= 5  # conv2d, linear, relu, max_pool2d, loss ... forward and backward
    # The ops table has prof's op rows, in prof's order.
    rows = page.table_rows("ops")
    assert [r[0] for r in rows] == [r["Op"] if r["Op"] else "(unattributed)"
                                    for r in tables["op/op"]][:len(rows)]


def test_iterations_advice_and_diff_sections(driver, lenet_dict, tmp_path):
    """The Iterations and Advice sections hold prof's iteration, advice and time model reports;
    with --diff BASE the Diff section holds `pyprof diff BASE INPUT`'s tables (the profile against
    itself here: every row the same)."""
    out = tmp_path / "sections.html"
    report(lenet_dict, "--diff", lenet_dict, "-o", out)
    page = Page(driver, out, shot=tmp_path / "sections.png")
    assert page.errors == []
    tables = prof_json(lenet_dict, "iteration", "advice", "timemodel")
    iterations = tables["iteration/steps"]
    assert [r[1] for r in page.table_rows("iterations")] == [r["Name"] for r in iterations]
    # The warm-up rule (docs/prof.md, Iterations): step 0 is left out when its wall time is over
    # 1.25x the median of the others' (on a loaded machine a later step can be the slow one).
    walls = [r["Wall(ns)"] for r in iterations]
    low, high = sorted(walls[1:])
    warm_up = walls[0] > 1.25 * (low + (high - low) // 2)  # prof's median: whole ns
    assert [r["Selected"] for r in iterations] == ["warm-up" if warm_up else "yes", "yes", "yes"]
    bars = page.traces("iterations")
    assert [t["type"] for t in bars] == ["bar", "bar", "bar", "scatter"]
    assert bars[3]["y"] == pytest.approx([r["Wall(ns)"] / 1e6 for r in iterations])
    advice = tables.get("advice/advice", [])
    assert [r[0] for r in page.table_rows("advice")] == [r["Rule"] for r in advice]
    model = tables["timemodel/fits"]
    assert [r[0] for r in page.table_rows("timemodel")] == [r["Family"] for r in model]
    verdicts = [r[9] for r in page.table_rows("diff_op_types")]  # Op, Direction, ..., Verdict
    assert verdicts and set(verdicts) == {"same"}
    assert page.js("return document.getElementById('fig-diff').querySelector('.empty') "
                   "!== null")  # no op type changed: nothing to draw, said so


def memory_traces(page, fig):
    """The traces of a memory plot: name, type, x, y, text; and its step bands' count."""
    return page.js(f"const g = document.getElementById('fig-{fig}');"
                   "return g && g.data ? {traces: g.data.map(t => ({name: t.name, type: t.type, "
                   "x: Array.from(t.x || []), y: Array.from(t.y || []), "
                   "text: Array.isArray(t.text) ? t.text : [t.text]})), "
                   "bands: (g.layout.shapes || []).length} : null")


def test_memory_section_plots_the_cpu_with_the_memory_reports_peak(driver, lenet_dict, tmp_path):
    """LeNet's capture records its allocations (docs/memory.md): one plot, `cpu`, whose running
    total tops out at prof's peak, the diamond at it naming the memory report's op, the steps as
    bands and LeNet's top-level modules in the lane under it."""
    out = tmp_path / "memory.html"
    report(lenet_dict, "-o", out)
    page = Page(driver, out, shot=tmp_path / "memory.png")
    assert page.errors == []
    tables = prof_json(lenet_dict, "summary", "memory", "iteration")
    peak = summary_values(tables)["memory allocated peak (bytes)"]
    data = page.js("return JSON.parse(document.getElementById('pyprof-data').textContent).memory")
    (device,) = data["devices"]
    assert device["device"] == "cpu" and device["figure"] == "memory-0"
    fig = memory_traces(page, "memory-0")
    by_name = {t["name"]: t for t in fig["traces"]}
    assert max(by_name["allocated (running total)"]["y"]) == peak > 0
    best = max(tables["memory/steps"], key=lambda r: r["Peak allocated"])
    assert by_name["peak"]["y"] == [peak] and best["Peak allocated"] == peak
    assert by_name["peak"]["text"][0].startswith("peak ") and \
        f": {best['Op at peak']}" in by_name["peak"]["text"][0]
    assert fig["bands"] == len(tables["iteration/steps"]) == 3
    lane = by_name["top-level modules"]
    assert lane["type"] == "bar" and {"LeNet.conv1", "LeNet.fc1"} <= set(lane["text"])
    assert set(lane["y"]) <= {"forward", "backward", "other"} and "backward" in lane["y"]
    rows = page.table_rows("memory_steps")
    assert len(rows) == len(tables["memory/steps"])


def test_memory_section_without_memory_lines_says_so_in_one_line(driver, lenet_dict, tmp_path):
    plain = tmp_path / "plain.dict"
    plain.write_text("".join(l for l in open(lenet_dict, encoding="utf-8")
                             if '"kind":"memory"' not in l))
    out = tmp_path / "plain.html"
    report(plain, "-o", out)
    page = Page(driver, out)
    assert page.errors == [] and page.sections() == SECTIONS
    text = page.js("return document.getElementById('memory').textContent")
    assert "No memory lines" in text and "PYPROF_MEMORY=0" in text
    assert page.js("return document.querySelectorAll('#memory .chart').length") == 0


def test_memory_section_one_plot_per_device(driver, tmp_path):
    """tests/data/memory_small.dict (cuda:0, peaks by hand in test_memory_report.py) with the
    same events again on the CPU at half their size: two plots, cpu first, each its own peak."""
    lines = open(f"{testlib.DATA}/memory_small.dict", encoding="utf-8").read().splitlines()
    cpu = []
    for line in lines:
        if '"kind":"memory"' in line:
            e = json.loads(line)
            e.update(device=-1, bytes=e["bytes"] // 2, addr=e["addr"] + 1000)
            e.pop("total_reserved")
            e.pop("total_allocated")
            cpu.append(json.dumps(e))
    path = tmp_path / "two.dict"
    path.write_text("\n".join(lines + cpu) + "\n")
    out = tmp_path / "two.html"
    report(path, "-o", out)
    page = Page(driver, out, shot=tmp_path / "two.png")
    assert page.errors == []
    data = page.js("return JSON.parse(document.getElementById('pyprof-data').textContent).memory")
    assert [d["device"] for d in data["devices"]] == ["cpu", "cuda:0"]
    # The page's default selection leaves out the warm-up step 0 only when it is slow; prof's
    # summary is the oracle either way.
    summary = summary_values(prof_json(path, "summary"))
    for d in data["devices"]:
        fig = {t["name"]: t for t in memory_traces(page, d["figure"])["traces"]}
        want = summary[f"memory allocated peak, {d['device']} (bytes)"]
        assert max(fig["allocated (running total)"]["y"]) == want == d["peak"]["bytes"]
        # Only CUDA's lines carry the allocator's totals.
        assert ("allocator's total reserved" in fig) == (d["device"] == "cuda:0")


def test_no_baseline_says_how_to_add_one(driver, lenet_dict, tmp_path):
    out = tmp_path / "nodiff.html"
    report(lenet_dict, "-o", out)
    page = Page(driver, out)
    assert "pyprof report NEW --diff BASE" in page.js(
        "return document.getElementById('diff').textContent")


def test_gpu_trace_roofs_equal_the_device_table(driver, tmp_path):
    """A V100 (nvprof, legacy PyProf markers with shapes): the roofs drawn are prof's peaks rows
    for the device and NVIDIA's V100 SXM2 datasheet; the cards and points equal prof's JSON."""
    dict_path = tmp_path / "v100.dict"
    testlib.parse_to(V100_TRACE, dict_path)
    out = tmp_path / "v100.html"
    report(V100_TRACE, "-o", out)
    page = Page(driver, out, shot=tmp_path / "v100.png")
    assert page.errors == []
    tables = prof_json(dict_path, "summary", "peaks", "roofline")
    summary = summary_values(tables)
    cards = page.cards()
    assert cards["device"][1] == "Tesla V100-SXM2-16GB"
    assert float(cards["gpu_busy"][0]) == float(summary["GPU busy %"])
    assert float(cards["tc_share"][0]) == float(summary["Tensor Core kernel time %"])
    assert float(cards["flops"][0]) == float(summary["FLOPs (FMA=2)"]) > 1e10
    roofs = [t["meta"] for t in page.traces("roofline") if (t["meta"] or {}).get("role") == "roof"]
    assert roofs and {m["device"] for m in roofs} == {"0"}
    expected = {(r["Mode"], r["Kind"]): float(r["Peak FLOP/s"]) for r in tables["peaks/peaks"]
                if str(r["Device"]) == "0" and r["Peak FLOP/s"]}
    assert {(m["mode"], m["kind"]): m["peak"] for m in roofs} == pytest.approx(expected)
    # NVIDIA's V100 SXM2 datasheet (docs/peaks.md): 7.8 TFLOP/s FP64, 15.7 FP32, 125 FP16
    # Tensor Core, 900 GB/s.
    assert expected[("fp64", "datasheet")] == pytest.approx(7.8e12)
    assert expected[("fp32", "datasheet")] == pytest.approx(15.7e12)
    assert expected[("fp16_tc", "datasheet")] == pytest.approx(125e12)
    assert [m["bandwidth"] for m in roofs] == pytest.approx([900e9] * len(roofs))
    types = [r for r in tables["roofline/op_types"] if r["FLOP/Byte"] and r["FLOP/s"]]
    points = next(t for t in page.traces("roofline") if (t["meta"] or {}).get("level") == "op type")
    assert sorted(zip(points["x"], points["y"])) == pytest.approx(
        sorted((float(r["FLOP/Byte"]), float(r["FLOP/s"])) for r in types))
    assert len(types) >= 5
    # % of peak: the achieved rate over the peak of the mode with the most counted time.
    by_mode = {}
    for r in tables["roofline/op_types"]:
        by_mode[r["Mode"]] = by_mode.get(r["Mode"], 0) + float(r["Time(ns)"])
    mode = max(by_mode, key=by_mode.get)
    achieved = float(next(v for k, v in summary.items() if k.startswith("achieved TFLOP/s")))
    assert float(cards["pct_of_peak"][0]) == pytest.approx(
        100 * achieved * 1e12 / expected[(mode, "datasheet")])


@pytest.mark.skipif(not os.path.exists(A100_SHAPES_TRACE), reason="needs ../shared/traces")
def test_a100_torch_profiler_trace_with_shapes(driver, tmp_path):
    """A torch.profiler trace from an A100 with record_shapes: a roofline with points."""
    out = tmp_path / "a100.html"
    report(A100_SHAPES_TRACE, "-o", out)
    page = Page(driver, out, shot=tmp_path / "a100.png")
    assert page.errors == []
    traces = page.traces("roofline")
    points = next(t for t in traces if (t["meta"] or {}).get("level") == "op type")
    assert len(points["x"]) >= 5


def test_unknown_gpu_gets_derived_roofs_and_says_so(driver, tmp_path):
    """An RTX 2070 SUPER (sm_75, 40 SMs, 1785 MHz) is not in the datasheet table: its roofs are
    derived from SMs x clock x per-SM rate, drawn dotted, and the page says they are derived."""
    out = tmp_path / "rtx.html"
    report(RTX2070_TRACE, "-o", out)
    page = Page(driver, out)
    assert page.errors == []
    roofs = [t["meta"] for t in page.traces("roofline") or [] if (t["meta"] or {}).get("role") == "roof"]
    assert roofs and {m["kind"] for m in roofs} == {"derived"}
    fp32 = next(m for m in roofs if m["mode"] == "fp32")
    assert fp32["peak"] == pytest.approx(40 * 128 * 1.785e9)  # 9.14 TFLOP/s
    assert fp32["bandwidth"] == pytest.approx(448.064e9)


def test_trace_without_devices_renders_and_says_what_is_missing(driver, tmp_path):
    out = tmp_path / "nodev.html"
    res = report(NO_DEVICES_TRACE, "-o", out)
    assert "no GPU" in res.stderr
    page = Page(driver, out)
    assert page.errors == []
    assert page.sections() == SECTIONS
    assert any("names no GPU" in n for n in page.notes())
    roofs = [t for t in page.traces("roofline") or [] if (t["meta"] or {}).get("role") == "roof"]
    assert roofs == []


def test_empty_profile_renders_with_a_note(driver, tmp_path):
    empty = tmp_path / "empty.dict"
    empty.write_text('{"pyprof_dict":1,"source":"x","format":"pyprof","records":"op"}\n')
    out = tmp_path / "empty.html"
    report(empty, "-o", out)
    page = Page(driver, out)
    assert page.errors == []
    assert page.sections() == SECTIONS
    assert any("no records" in n for n in page.notes())
    assert page.cards()["records"][0] == "0"
    assert page.js("return document.querySelector('#fig-roofline .empty').textContent") \
        .startswith("No roofline")


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    (b"", "pyprof parse"),
    (b"\x00\x01garbage", "pyprof parse"),
    (b'{"pyprof_dict":1,"source":"x","format":"pyprof","records":"op"}\n{"kind":"op","name":',
     None),
])
def test_broken_input_is_a_clear_error_and_leaves_no_page(tmp_path, content, message):
    src = tmp_path / "in.dict"
    if content is not None:
        src.write_bytes(content)
    out = tmp_path / "out.html"
    res = report(src, "-o", out, check=False)
    if message is None:
        # A truncated last line is skipped and counted by prof: the page is made, with a note.
        assert res.returncode == 0, res.stderr
        assert "skipped" in res.stderr or "unreadable" in res.stderr
        return
    assert res.returncode == 1
    assert res.stderr.startswith("pyprof report: error:") and message in res.stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.html")] == []


def test_measured_roofs_are_drawn_beside_the_datasheet_ones(driver, tmp_path):
    """--peaks with a measured entry (what `pyprof peak` writes) adds dashed roofs; the
    datasheet ones stay, and % of peak stays against the datasheet."""
    peaks = tmp_path / "measured.json"
    peaks.write_text(json.dumps({"pyprof_peaks": 1, "devices": [{
        "name": "Tesla V100-SXM2-16GB", "kind": "measured", "source": "a test's numbers",
        "memory_bandwidth": 8.0e11, "flops": {"fp32": 1.4e13, "fp16_tc": 1.0e14}}]}))
    out = tmp_path / "v100m.html"
    report(V100_TRACE, "--peaks", peaks, "-o", out)
    page = Page(driver, out)
    assert page.errors == []
    roofs = {(m["mode"], m["kind"]): m for m in
             (t["meta"] for t in page.traces("roofline") if (t["meta"] or {}).get("role") == "roof")}
    assert roofs[("fp32", "measured")]["peak"] == pytest.approx(1.4e13)
    assert roofs[("fp32", "measured")]["bandwidth"] == pytest.approx(8.0e11)
    assert roofs[("fp16_tc", "measured")]["peak"] == pytest.approx(1.0e14)
    assert roofs[("fp32", "datasheet")]["peak"] == pytest.approx(15.7e12)
    dashes = page.js("return document.getElementById('fig-roofline').data"
                     ".filter(t => t.meta && t.meta.role === 'roof')"
                     ".map(t => [t.meta.kind, t.line.dash])")
    assert {k: d for k, d in dashes} == {"datasheet": "solid", "measured": "dash"}
    sub = page.js("return document.querySelector('[data-metric=pct_of_peak] .sub').textContent")
    assert "(datasheet)" in sub


def test_cpu_profile_with_roofs_measured_by_pyprof_peak(driver, lenet_dict, tmp_path):
    """`pyprof peak` measures this CPU; the report of a CPU profile draws those roofs."""
    peaks = tmp_path / "cpu.json"
    res = subprocess.run([testlib.PY, "-m", "pyprof", "peak", "-o", peaks, "--dtypes", "fp32",
                          "--size", "256", "--repeat", "2", "--warmup", "1", "--copy-mb", "16"],
                         capture_output=True, text=True, timeout=300, env=testlib.pyprof_env())
    assert res.returncode == 0, res.stderr
    measured = json.loads(peaks.read_text())["devices"][0]
    out = tmp_path / "cpu.html"
    report(lenet_dict, "--peaks", peaks, "-o", out)
    page = Page(driver, out)
    assert page.errors == []
    roofs = [t["meta"] for t in page.traces("roofline") if (t["meta"] or {}).get("role") == "roof"]
    assert [(m["device"], m["mode"], m["kind"]) for m in roofs] == [("cpu", "fp32", "measured")]
    assert roofs[0]["peak"] == pytest.approx(measured["flops"]["fp32"])
    assert roofs[0]["bandwidth"] == pytest.approx(measured["memory_bandwidth"])
    # conv2d runs in fp32 on the CPU: % of peak is measured against the measured fp32 roof.
    pct = float(page.cards()["pct_of_peak"][0])
    assert 0 < pct


def test_unknown_gpu_without_facts_says_why_it_has_no_roofs(driver, tmp_path):
    """A GPU the table does not know, with no compute capability or clock to derive peaks from:
    the page renders, without roofs, and says why."""
    src = tmp_path / "v100.dict"
    testlib.parse_to(V100_TRACE, src)
    lines = src.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["devices"] = [{"id": 0, "name": "Imaginary GPU X1", "sm_count": 0, "clock_hz": 0,
                          "memory_bandwidth": 0, "total_memory": 0,
                          "compute_capability": [0, 0]}]
    unknown = tmp_path / "unknown.dict"
    unknown.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    out = tmp_path / "unknown.html"
    report(unknown, "-o", out)
    page = Page(driver, out)
    assert page.errors == []
    assert any("Imaginary GPU X1" in n and "unknown GPU" in n for n in page.notes())
    assert [t for t in page.traces("roofline") if (t["meta"] or {}).get("role") == "roof"] == []
    assert page.cards()["device"][1] == "Imaginary GPU X1"
    assert page.cards()["pct_of_peak"][1] == "–"


def test_tables_sort_and_filter_and_charts_equal_prof(driver, lenet_dict, tmp_path):
    """The ops table sorts on a header click (numbers by value) and keeps the rows a filter
    matches; the phase and family bars are prof's phase and family reports."""
    from selenium.webdriver.common.by import By

    out = tmp_path / "lenet.html"
    report(lenet_dict, "-o", out)
    page = Page(driver, out)
    tables = prof_json(lenet_dict, "op", "phase", "family")
    ops = tables["op/op"]
    headers = driver.find_elements(By.CSS_SELECTOR, "table[data-table=ops] th")
    labels = [h.text for h in headers]
    col = labels.index("Inclusive")
    headers[col].click()  # numbers sort largest first
    shown = page.js("return [...document.querySelectorAll('table[data-table=ops] tbody tr')]"
                    f".map(tr => tr.children[0].textContent + '|' + tr.children[1].textContent)")
    expected = sorted(ops, key=lambda r: -r["Inclusive(ns)"])
    assert [s.split("|")[0] for s in shown][:5] == \
        [r["Op"] or "(unattributed)" for r in expected][:5]
    headers[col].click()  # and smallest first on a second click
    first = page.js("return document.querySelector('table[data-table=ops] tbody tr td')"
                    ".textContent")
    assert first == (min(ops, key=lambda r: r["Inclusive(ns)"])["Op"] or "(unattributed)")
    box = driver.find_element(By.CSS_SELECTOR, "#table-ops input[type=search]")
    box.send_keys("conv")
    visible = page.js("return [...document.querySelectorAll('table[data-table=ops] tbody tr')]"
                      ".filter(tr => tr.style.display !== 'none')"
                      ".map(tr => tr.children[0].textContent)")
    assert visible and all("conv" in v for v in visible)
    assert len(visible) == sum("conv" in (r["Op"] or "") for r in ops)
    # The bar charts: prof's times, in ms.
    phase = {r["Phase"]: r["Time(ns)"] / 1e6 for r in tables["phase/phase"] if r["Time(ns)"]}
    bars = page.js("const t = document.getElementById('fig-phase').data[0];"
                   "return [Array.from(t.y), Array.from(t.x)]")
    assert dict(zip(*bars)) == pytest.approx(phase)
    assert set(phase) >= {"forward", "backward", "optimizer"}
    family = {r["Family"]: r["Time(ns)"] / 1e6 for r in tables["family/family"] if r["Time(ns)"]}
    bars = page.js("const t = document.getElementById('fig-family').data[0];"
                   "return [Array.from(t.y), Array.from(t.x)]")
    assert dict(zip(*bars)) == pytest.approx(family)
    assert "conv" in family


def test_page_number_formats():
    """The page has no formatter of its own: its cells and cards are prof's format_quantity
    (pyprof/_units.py, held digit for digit to the C++ one by tests/test_report_json.py): 3
    significant digits with an SI prefix, rounding up a unit (999.6 ns reads 1.00 µs), counts
    with separators, no value as a dash."""
    from pyprof._report_page import cell_text

    cases = [(845, "ns", "845 ns"), (999.6, "ns", "1.00 µs"), (12345, "ns", "12.3 µs"),
             (95043532, "ns", "95.0 ms"), (1.5e9, "ns", "1.50 s"), (0, "ns", "0 ns"),
             (72, "FLOPs", "72 FLOP"), (17.3e6, "FLOPs", "17.3 MFLOP"),
             (2.5e12, "FLOPs", "2.50 TFLOP"), (1.2e6, "bytes", "1.20 MB"),
             (0.000638, "TFLOP/s", "638 MFLOP/s"), (989.4e12, "FLOP/s", "989 TFLOP/s"),
             (4.4, "GB/s", "4.40 GB/s"), (3.35e12, "B/s", "3.35 TB/s"), (27.91, "%", "27.9"),
             (1234567, "count", "1,234,567"), (None, "ns", "–"), ("fprop", "text", "fprop")]
    assert [cell_text(v, unit) for v, unit, _ in cases] == [c[2] for c in cases]
