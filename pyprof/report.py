"""`pyprof report INPUT -o net.html`: one self-contained HTML page of a profile.

The numbers come from prof (C++): this module runs `pyprof-prof --report ... --formats json`
once, groups its rows by report, and lays them out: headline figures, a roofline, time
breakdowns (op family, module tree, phase) and sortable, filterable tables. Plotly draws the
charts; its bundled plotly.js is inlined, so the page opens offline (docs/report.md). INPUT is a
net.dict or anything `pyprof parse` reads (parse runs first, into a temporary file).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from pyprof import _files, _signals, _tools
from pyprof._tools import missing_tool, tool_path

# The reports the page is made of, in one prof run.
PAGE_REPORTS = ["summary", "op", "instance", "kernel", "module", "tc", "family", "phase", "peaks",
                "roofline", "iteration", "advice", "timemodel", "compiled", "marks"]
# The page holds the op instances and kernels with the most time, at most this many (prof's
# --top: a million-kernel profile has as many instances); `pyprof prof --report` gives all.
MAX_TABLE_ROWS = 2000
# The longest net.dict line prof reads (prof/records.h kMaxDictLineBytes): the header is read
# here too, never further than that.
MAX_DICT_LINE_BYTES = 64 << 20
# The most characters of one text (a name, a cell, a warning) the page holds: parse cuts names
# at 4 KiB, so only a hand-made or damaged net.dict reaches it, where one 52 MB name, copied
# into several tables, the figures and the page's data, once took 25x its input in memory.
MAX_CELL_CHARS = 10_000
ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_assets")


class ReportError(Exception):
    """A report that cannot be made; the message says why (shown as `pyprof report: error:`)."""


# ---------------------------------------------------------------------------------------------
# Running parse and prof


def _run(args: list[str], what: str) -> subprocess.CompletedProcess:
    if why := missing_tool(args[0]):
        raise ReportError(why)
    res = _signals.run(args, capture_output=True, text=True, errors="replace")
    if res.returncode != 0:
        raise ReportError(f"{what} failed: {_tool_error(res)}")
    return res


def _tool_error(res: subprocess.CompletedProcess) -> str:
    """What a failed tool said, on one line: its error lines without their `pyprof X: error:`
    prefix (the report's own says `pyprof report: error:` once), else its last line."""
    lines = [ln.strip() for ln in res.stderr.splitlines() if ln.strip()]
    errors = [re.sub(r"^pyprof[ -]\w+: error: ", "", ln) for ln in lines if " error: " in ln]
    if res.returncode < 0:
        errors.append(f"killed by signal {-res.returncode}")
    return "; ".join(errors[-3:] or lines[-1:]) or f"exit status {res.returncode}"


def ensure_dict(path: str, workdir: str) -> tuple[str, list[str]]:
    """net.dict for `path`: itself, or parse's output for a trace. Also parse's warnings."""
    _check_input(path)
    if os.path.isdir(path):
        raise ReportError(f"{path} is a folder: give one trace or net.dict")
    if _tools.is_net_dict(path):
        return path, []
    out = os.path.join(workdir, "input.dict")
    res = _run([tool_path("pyprof-parse"), path, "-o", out], f"pyprof parse {path}")
    warnings = [bounded(ln.strip()) for ln in res.stderr.splitlines() if "warning" in ln]
    return out, warnings


def _check_input(path: str) -> None:
    """ReportError unless `path` is a folder (a job's ranks) or a regular file: the input is
    read several times (the header, parse, prof's runs), which a FIFO or a device cannot be."""
    try:
        if os.path.isdir(path):
            return
        _files.check_regular_input(path, "report reads its input several times (save it to a "
                                         "file first)")
    except _files.FileError as e:
        if not os.path.lexists(path):
            raise ReportError(f"{path}: no such file") from None
        raise ReportError(str(e)) from None


def read_header(dict_path: str) -> dict:
    try:
        return _tools.read_dict_header(dict_path, MAX_DICT_LINE_BYTES)  # bounded: one endless line
    except _tools.NotADict as e:
        raise ReportError(str(e)) from None


def tables_by_title(json_path: str) -> dict[str, list[dict]]:
    """A report JSON file of prof or diff (one row a line, its table's title under "report"):
    the rows grouped by title, in the order written, each row without its "report"."""
    tables: dict[str, list[dict]] = {}
    with open(json_path, encoding="utf-8") as f:
        for line in f:
            row = {key: bounded(value) for key, value in json.loads(line).items()}
            tables.setdefault(row.pop("report"), []).append(row)
    return tables


def bounded(value):
    """A text cut to MAX_CELL_CHARS characters, saying how much is left out; other values as
    they are."""
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        return f"{value[:MAX_CELL_CHARS]}…(+{len(value) - MAX_CELL_CHARS} characters)"
    return value


def run_prof_reports(dict_path: str, workdir: str, peaks: str | None, no_tf32: bool
                     ) -> tuple[dict[str, list[dict]], list[str]]:
    """prof's rows for PAGE_REPORTS, grouped by table title, in prof's order; and its warnings."""
    out = os.path.join(workdir, "reports.json")
    args = [tool_path("pyprof-prof"), "--report", ",".join(PAGE_REPORTS), "--formats", "json",
            "--depth", "0", "--top", str(MAX_TABLE_ROWS), "-o", out, dict_path]
    if peaks:
        args[1:1] = ["--peaks", peaks]
    if no_tf32:
        args.insert(1, "--no-tf32")
    res = _run(args, "pyprof prof")
    warnings = [bounded(ln.strip()) for ln in res.stderr.splitlines() if ln.strip()]
    return tables_by_title(out), warnings


def run_diff(base_dict: str, new_dict: str, workdir: str, no_tf32: bool
             ) -> tuple[dict[str, list[dict]], list[str]]:
    """pyprof diff BASE NEW's tables (docs/diff.md), grouped by title; and its notes. Its gate
    is not asked for: the page shows the verdicts, CI runs `pyprof diff --fail-above`."""
    out = os.path.join(workdir, "diff.json")
    args = [tool_path("pyprof-diff"), base_dict, new_dict, "--formats", "json", "-o", out]
    if no_tf32:
        args.append("--no-tf32")
    res = _run(args, "pyprof diff")
    notes = [bounded(ln.strip()) for ln in res.stderr.splitlines() if "warning" in ln]
    return tables_by_title(out), notes


def rank_inputs(input_path: str, ranks: list[str] | None) -> tuple[str, list[str] | None]:
    """(the profile the page is about, the ranks' net.dicts or folders). A folder given as INPUT
    is a job's ranks: the page is about its lowest rank, and its Ranks section about them all."""
    if not os.path.isdir(input_path):
        return input_path, ranks
    from pyprof import rank_dataset

    try:
        by_rank = rank_dataset.ranks_of(rank_dataset.expand_inputs([input_path]))
    except rank_dataset.DatasetError as e:
        raise ReportError(str(e)) from None
    return next(iter(by_rank.values())), [input_path, *(ranks or [])]


def run_ranks_report(ranks: list[str], workdir: str, no_tf32: bool
                     ) -> tuple[dict[str, list[dict]], list[str]]:
    """prof's ranks report over the ranks' net.dicts (docs/prof.md §6), grouped by title."""
    for path in ranks:
        if not os.path.exists(path):
            raise ReportError(f"--ranks {path}: no such file")
        _check_input(path)
    out = os.path.join(workdir, "ranks.json")
    args = [tool_path("pyprof-prof"), "--report", "ranks", "--formats", "json", "-o", out,
            *ranks]
    if no_tf32:
        args.insert(1, "--no-tf32")
    res = _run(args, "pyprof prof --report ranks")
    notes = [bounded(f"ranks: {ln.strip()}") for ln in res.stderr.splitlines() if "warning" in ln]
    return tables_by_title(out), notes


def step_count(dict_path: str) -> int:
    """How many training steps the profile's user ranges name (torch.profiler's ProfilerStep#N,
    `step N` / `iteration N` ranges as examples/train.py and many scripts write). 0: none."""
    res = _run([tool_path("pyprof-prof"), "--csv", "-c", "layer", dict_path], "pyprof prof")
    pattern = re.compile(r"^(profilerstep#\d+|step[ _#]?\d+|iter(ation)?[ _#]?\d+)$",
                         re.IGNORECASE)
    steps = set()
    for line in res.stdout.splitlines()[1:]:
        for label in line.strip('"').split(":"):
            if pattern.match(label.strip()):
                steps.add(label.strip())
    return len(steps)


# ---------------------------------------------------------------------------------------------
# Finding prof's tables and values


def table(tables: dict[str, list[dict]], *prefixes: str) -> list[dict] | None:
    for title, rows in tables.items():
        if any(title.lower().startswith(p) for p in prefixes):
            return rows
    return None


def gpu_busy_headline(summary: list[dict], cpu_only: bool) -> dict:
    """The GPU busy card: prof's summary gives one GPU's busy % ("GPU busy %"), or with several
    GPUs their mean ("GPU busy %, mean over N GPUs") beside each one's."""
    card = {"id": "gpu_busy", "label": "GPU busy", "unit": "pct",
            "value": summary_value(summary, "GPU busy %"),
            "sub": "union of kernel, copy and memset time" if not cpu_only else "not a GPU profile"}
    for row in summary:
        metric = str(row.get("Metric", ""))
        if metric.startswith("GPU busy %, mean over "):
            gpus = metric[len("GPU busy %, mean over "):]
            per_gpu = [f"{str(r.get('Metric'))[:-len(' busy %')]} {_number(r.get('Value')):.1f}%"
                       for r in summary if str(r.get("Metric", "")).startswith("GPU ")
                       and str(r.get("Metric", "")).endswith(" busy %")
                       and _number(r.get("Value")) is not None]
            card["label"] = f"GPU busy (mean of {gpus})"
            card["sub"] = "each GPU's kernel, copy and memset time: " + ", ".join(per_gpu)
    return card


def summary_value(summary: list[dict], *prefixes: str):
    for row in summary:
        metric = str(row.get("Metric", ""))
        if any(metric.startswith(p) for p in prefixes):
            return _number(row.get("Value"))
    return None


def _number(v):
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return None
        return int(x) if x.is_integer() and "." not in v else x
    return None


def unit_of(header: str) -> str:
    """The page's unit for a column of prof's reports, from its header's stated unit."""
    h = header.strip()
    if h.endswith("(ns)"):
        return "ns"
    if h.startswith("FLOPs") or h.endswith("FLOPs"):
        return "flop"
    if h.startswith("Bytes"):
        return "byte"
    if h == "TFLOP/s":
        return "tflops"
    if h == "GB/s" or h.endswith(" GB/s"):
        return "gbps"
    if h.endswith("(B)"):
        return "byte"
    if h.endswith("FLOP/s"):
        return "flops"
    if h.endswith("B/s"):
        return "bps"
    if h == "FLOP/Byte" or h.startswith("Ridge"):
        return "ratio"
    if "%" in h:
        return "pct"
    if h in ("Count", "Records", "Instances", "Seq", "Eligible kernels", "Step", "Ops", "Points",
             "Rank", "Ranks", "Steps", "Calls", "Group", "Straggler", "Straggler steps"):
        return "int"
    if h in ("p", "q", "R2", "Actual/predicted", "Base calls", "New calls"):
        return "ratio"
    return "text"


def table_spec(rows: list[dict] | None, empty: str, limit: int = MAX_TABLE_ROWS) -> dict:
    if not rows:
        return {"columns": [], "rows": [], "empty": empty}
    headers = list(rows[0].keys())
    cols = [{"name": h, "label": re.sub(r"\(ns\)$", "", h).strip(), "unit": unit_of(h),
             "long": h in ("Op", "Kernel", "Module", "Params", "Shapes", "Source", "Name")}
            for h in headers]
    for c in cols:
        if c["unit"] != "text":
            continue
    body = [[_cell(r.get(h), c["unit"]) for h, c in zip(headers, cols)] for r in rows[:limit]]
    spec = {"columns": cols, "rows": body}
    if len(rows) >= limit:
        spec["note"] = (f"the {limit} rows with the most time; `pyprof prof --report` lists "
                        "them all")
    return spec


def _cell(v, unit):
    if unit == "text":
        return v
    n = _number(v)
    return n if n is not None else v


# ---------------------------------------------------------------------------------------------
# Charts (Plotly figures as JSON: plotly.js draws them in the page)


def _fig_json(fig) -> dict:
    return json.loads(fig.to_json())


def roofline_figure(types: list[dict], instances: list[dict], peaks: list[dict],
                    device_hint: str | None) -> tuple[dict | None, str, dict]:
    """The roofline: op types and op instances at (FLOP/Byte, FLOP/s), sized by time, under the
    roofs of one device. Returns the figure (None when there is nothing to draw), a sentence on
    what it shows, and facts the page states (device, points, left out)."""
    import plotly.graph_objects as go

    def points(rows):
        kept = [r for r in rows if (_number(r.get("FLOP/Byte")) or 0) > 0
                and (_number(r.get("FLOP/s")) or 0) > 0]
        return kept, len(rows) - len(kept)

    type_pts, type_skipped = points(types)
    inst_rows = sorted(instances, key=lambda r: -(_number(r.get("Time(ns)")) or 0))
    inst_pts, inst_skipped = points(inst_rows)
    facts = {"type_points": len(type_pts), "type_rows": len(types), "type_skipped": type_skipped,
             "instance_points": len(inst_pts), "instance_rows": len(instances)}
    if not type_pts and not inst_pts:
        return None, "no op has a FLOP model with counted time", facts

    # The device whose roofs are drawn: the one most of the points' time ran on.
    time_by_device: dict[str, float] = {}
    for r in type_pts:
        d = str(r.get("Device", "-"))
        time_by_device[d] = time_by_device.get(d, 0) + (_number(r.get("Time(ns)")) or 0)
    device = max(time_by_device, key=time_by_device.get) if time_by_device else device_hint
    roofs = [p for p in peaks if str(p.get("Device")) == str(device)
             and _number(p.get("Peak FLOP/s"))]
    facts["device"] = device
    facts["roofs"] = len(roofs)

    xs = [_number(r["FLOP/Byte"]) for r in type_pts + inst_pts]
    ridge = [_number(p.get("Ridge FLOP/Byte")) or 0 for p in roofs]
    xmin = min(xs) / 4
    xmax = max(max(xs), max(ridge, default=0)) * 4
    fig = go.Figure()
    max_time = max((_number(r.get("Time(ns)")) or 0) for r in type_pts + inst_pts) or 1

    dash = {"datasheet": "solid", "derived": "dot", "override": "solid", "measured": "dash"}
    # One colour per math mode, shared by its roof and the op types that ran in it.
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
               "#17becf", "#bcbd22", "#7f7f7f"]
    modes = sorted({str(p.get("Mode")) for p in roofs} | {str(r.get("Mode")) for r in type_pts})
    colour = {m: palette[i % len(palette)] for i, m in enumerate(modes)}
    for p in roofs:
        peak = _number(p["Peak FLOP/s"])
        bw = _number(p.get("Memory B/s")) or 0
        if bw > 0:
            knee = peak / bw
            x = [xmin, max(xmin, min(knee, xmax)), xmax]
            y = [min(peak, xmin * bw), min(peak, x[1] * bw), peak]
        else:
            x, y = [xmin, xmax], [peak, peak]
        kind = str(p.get("Kind", "datasheet"))
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=f"{p.get('Mode')} {kind}: {_si(peak, 'FLOP/s')}",
            line={"dash": dash.get(kind, "solid"), "width": 1.5,
                  "color": colour[str(p.get("Mode"))]}, hoverinfo="name",
            meta={"role": "roof", "mode": p.get("Mode"), "kind": kind, "peak": peak,
                  "bandwidth": bw, "device": str(device)}))

    def hover(r, level):
        parts = [f"<b>{_esc(r.get('Op'))}</b> {r.get('Direction', '')}"]
        if level == "instance" and r.get("Module") not in (None, "-", ""):
            parts.append(f"module: {_esc(r.get('Module'))}")
        if level == "instance" and r.get("Shapes") not in (None, "-", ""):
            parts.append(f"shapes: {_esc(_short(str(r.get('Shapes')), 120))}")
        if level == "op type":
            parts.append(f"instances: {r.get('Instances')}")
        parts.append(f"mode: {r.get('Mode')}, dtype: {r.get('DType')}")
        parts.append(f"time: {_si(_number(r.get('Time(ns)')) or 0, 's', 1e-9)}")
        parts.append(f"{_si(_number(r.get('FLOP/s')), 'FLOP/s')} at "
                     f"{_number(r.get('FLOP/Byte')):.3g} FLOP/byte")
        pct = _number(r.get("% of roof"))
        parts.append(f"{pct:.1f} % of the roof ({r.get('Bound')}-bound)" if pct is not None
                     else "no roof for this mode")
        return "<br>".join(parts)

    def size(r, scale):
        return 5 + scale * math.sqrt((_number(r.get("Time(ns)")) or 0) / max_time)

    if inst_pts:
        fig.add_trace(go.Scatter(
            x=[_number(r["FLOP/Byte"]) for r in inst_pts],
            y=[_number(r["FLOP/s"]) for r in inst_pts], mode="markers", name="op instances",
            marker={"size": [size(r, 22) for r in inst_pts], "opacity": 0.35,
                    "color": "#7b8798"},
            hovertext=[hover(r, "instance") for r in inst_pts], hoverinfo="text",
            meta={"role": "points", "level": "op instance"}))
    fig.add_trace(go.Scatter(
        x=[_number(r["FLOP/Byte"]) for r in type_pts],
        y=[_number(r["FLOP/s"]) for r in type_pts], mode="markers", name="op types (colour: math mode)",
        marker={"size": [size(r, 34) for r in type_pts], "opacity": 0.8,
                "color": [colour[str(r.get("Mode"))] for r in type_pts],
                "line": {"width": 1, "color": "#1d2330"}},
        hovertext=[hover(r, "op type") for r in type_pts], hoverinfo="text",
        meta={"role": "points", "level": "op type"}))
    fig.update_layout(
        xaxis={"type": "log", "title": "arithmetic intensity (FLOP / byte of ideal DRAM traffic)",
               "exponentformat": "SI"},
        yaxis={"type": "log", "title": "achieved FLOP/s", "exponentformat": "SI"}, height=560,
        margin={"l": 70, "r": 20, "t": 30, "b": 60}, legend={"font": {"size": 11}},
        template="plotly_white")
    text = (f"{len(type_pts)} op types and {len(inst_pts)} op instances with a FLOP model and "
            f"counted time")
    return _fig_json(fig), text, facts


def bar_figure(rows: list[dict] | None, label_key: str, value_key: str, title: str,
               extra_key: str | None = None) -> dict | None:
    import plotly.graph_objects as go

    rows = [r for r in (rows or []) if (_number(r.get(value_key)) or 0) > 0]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: _number(r.get(value_key)))[-25:]
    fig = go.Figure(go.Bar(
        x=[_number(r[value_key]) / 1e6 for r in rows], y=[str(r[label_key]) for r in rows],
        orientation="h", hovertext=[
            f"{_esc(r[label_key])}: {_si(_number(r[value_key]), 's', 1e-9)}"
            + (f" ({_number(r.get(extra_key)):.1f} %)" if extra_key and
               _number(r.get(extra_key)) is not None else "") for r in rows],
        hoverinfo="text", marker={"color": "#2f6fde"}))
    fig.update_layout(title={"text": title, "font": {"size": 14}}, xaxis={"title": "time (ms)"},
                      height=max(260, 28 * len(rows) + 90), template="plotly_white",
                      margin={"l": 10, "r": 20, "t": 40, "b": 50}, yaxis={"automargin": True})
    return _fig_json(fig)


def module_figure(rows: list[dict] | None) -> dict | None:
    """The module tree as a sunburst; forward and backward time rolled up (prof's module
    report already includes each module's children)."""
    import plotly.graph_objects as go

    rows = [r for r in (rows or []) if (_number(r.get("Total(ns)")) or 0) > 0]
    if not rows:
        return None
    paths = {str(r["Module"]) for r in rows}
    ids, parents, values, hovers = [], [], [], []
    for r in rows:
        path = str(r["Module"])
        parent = path.rsplit(".", 1)[0] if "." in path else ""
        ids.append(path)
        parents.append(parent if parent in paths else "")
        values.append(_number(r["Total(ns)"]))
        hovers.append(f"<b>{_esc(path)}</b><br>forward {_si(_number(r.get('Fprop(ns)')) or 0, 's', 1e-9)}"
                      f"<br>backward {_si(_number(r.get('Bprop(ns)')) or 0, 's', 1e-9)}")
    labels = [i.rsplit(".", 1)[-1] for i in ids]
    fig = go.Figure(go.Sunburst(ids=ids, labels=labels, parents=parents, values=values,
                                branchvalues="total", hovertext=hovers, hoverinfo="text",
                                maxdepth=4))
    fig.update_layout(height=560, margin={"l": 10, "r": 10, "t": 10, "b": 10})
    return _fig_json(fig)


def _si(v, unit, scale=1.0):
    if v is None:
        return "–"
    v = v * scale
    for div, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""),
                        (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if abs(v) >= div * 0.9995 or div == 1e-9:
            return f"{v / div:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def _esc(s) -> str:
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


# ---------------------------------------------------------------------------------------------
# The page


def build_page_data(header: dict, tables: dict[str, list[dict]], steps: int,
                    warnings: list[str], diff: dict[str, list[dict]] | None = None,
                    diff_base: str | None = None,
                    ranks: dict[str, list[dict]] | None = None) -> dict:
    summary = table(tables, "summary") or []
    ops = table(tables, "ops by", "op types by")
    instances = table(tables, "op instances")
    kernels = table(tables, "kernels")
    compiled = table(tables, "compiled kernels")
    modules = table(tables, "modules")
    tc = table(tables, "tensor core")
    family = table(tables, "op famil", "famil", "time by op famil")
    phase = table(tables, "phase", "time by phase")
    peaks = table(tables, "device peaks") or []
    roof_types = table(tables, "roofline: op types") or []
    roof_inst = table(tables, "roofline: op instances") or []
    iterations = table(tables, "iterations (")
    steady = table(tables, "steady state")
    advice = table(tables, "advice")
    time_model = table(tables, "time model")
    model_far = table(tables, "model points far")
    marks = table(tables, "marks")

    cpu_only = header.get("records") == "op"
    devices = header.get("devices") or []
    records = summary_value(summary, "records") or 0
    notes: list[str] = []
    if records == 0:
        notes.append("The profile holds no records: nothing ran inside the capture, or the "
                     "trace holds no ops or GPU activity. Every section below is empty.")
    if cpu_only:
        notes.append("CPU-only profile: times are the ops' times on the CPU (no kernels), so GPU "
                     "busy time and Tensor Core use do not apply.")
    elif not devices:
        notes.append("The profile names no GPU (the trace has no device table): the roofline has "
                     "no datasheet roofs. Give `--peaks FILE` (docs/peaks.md) to add them.")
    for p in peaks:
        if str(p.get("Mode")) in ("-", "", "None") and p.get("Source"):
            notes.append(f"Device {p.get('Device')} ({p.get('Name')}): {p.get('Source')}")
    notes.extend(w for w in warnings if "warning" in w)

    # Headline figures.
    device_names = sorted({str(d.get("name")) for d in devices if d.get("name")})
    wall = summary_value(summary, "wall time")
    achieved = summary_value(summary, "achieved TFLOP/s")
    dominant = _dominant_mode(roof_types)
    peak_row = _peak_for(peaks, dominant) if dominant else None
    pct_peak = None
    if achieved is not None and peak_row and _number(peak_row.get("Peak FLOP/s")):
        pct_peak = 100.0 * achieved * 1e12 / _number(peak_row["Peak FLOP/s"])
    headline = [
        {"id": "device", "label": "device", "unit": "text",
         "value": ", ".join(device_names) if device_names else ("CPU" if cpu_only else "unknown GPU"),
         "sub": f"{len(devices)} GPU(s) in the trace" if devices else
                ("CPU-only profile" if cpu_only else "no device table in the trace")},
        {"id": "wall_time", "label": "wall time", "unit": "ns", "value": wall,
         "sub": "first record's start to last record's end"},
        step_headline(steady, iterations, wall, steps),
        gpu_busy_headline(summary, cpu_only),
        {"id": "achieved_tflops", "label": "achieved FLOP/s", "unit": "tflops",
         "value": achieved, "sub": "counted FLOPs / their time"},
        {"id": "pct_of_peak", "label": "% of peak", "unit": "pct", "value": pct_peak,
         "sub": (f"of {peak_row.get('Name')} {dominant} peak ({peak_row.get('Kind')})"
                 if peak_row else "no peak for this device")},
        {"id": "tc_share", "label": "Tensor Core time", "unit": "pct",
         "value": summary_value(summary, "Tensor Core kernel time %"),
         "sub": "share of kernel time in Tensor Core kernels" if not cpu_only else "not a GPU profile"},
        {"id": "modeled_share", "label": "time with a FLOP model", "unit": "pct",
         "value": summary_value(summary, "time covered by a FLOP model"),
         "sub": "share of time whose FLOPs are counted"},
        {"id": "records", "label": "records", "unit": "int", "value": records,
         "sub": "op records" if cpu_only else "kernels, copies and memsets"},
        {"id": "flops", "label": "FLOPs (FMA = 2)", "unit": "flop",
         "value": summary_value(summary, "FLOPs")},
        {"id": "bytes", "label": "bytes (ideal DRAM)", "unit": "byte",
         "value": summary_value(summary, "bytes")},
    ]

    figures: dict[str, dict] = {}
    figure_notes: dict[str, str] = {}
    roof, roof_text, roof_facts = roofline_figure(roof_types, roof_inst, peaks,
                                                  str(devices[0].get("id")) if devices else None)
    if roof:
        figures["roofline"] = roof
    else:
        figure_notes["roofline"] = f"No roofline: {roof_text}."
    for key, fig, why in (
            ("family", bar_figure(family, "Family", "Time(ns)", "time by op family", "% of time"),
             "no records with time"),
            ("phase", bar_figure(phase, "Phase", "Time(ns)", "time by phase", "% of time"),
             "no records with time"),
            ("modules", module_figure(modules),
             "no module ranges in the trace (pyprof.init(model=...), emit_nvtx with module "
             "hooks or torch.profiler with_modules give them)"),
            ("iterations", iterations_figure(iterations),
             "no iterations detected (ProfilerStep#N, a `step N` range, Optimizer.step or a "
             "repeating module forward: docs/formats.md §3); `pyprof parse --step-range NAME` "
             "names the range"),
            ("diff", diff_figure(table(diff or {}, "diff: op types")),
             f"no op type changed against {diff_base}" if diff is not None else
             "no baseline: `pyprof report NEW --diff BASE` compares this profile with another "
             "run of the same workload"),
            ("ranks", ranks_figure(table(ranks or {}, "ranks")),
             "no rank states its rank" if ranks is not None else _NO_RANKS),
            ("rank_steps", rank_steps_figure(table(ranks or {}, "rank step detail")),
             "no selected steps on any rank" if ranks is not None else _NO_RANKS)):
        if fig:
            figures[key] = fig
        else:
            figure_notes[key] = why

    tables_out = {
        "ops": table_spec(ops, "no ops"),
        "instances": table_spec(instances, "no op instances"),
        "kernels": table_spec(kernels, "no kernels"),
        "compiled": table_spec(compiled, "no torch.compile kernels"),
        "tc": table_spec(tc, "no Tensor Core eligible kernels" if not cpu_only
                         else "not a GPU profile: no kernels to judge"),
        "peaks": table_spec(peaks, "no device peaks"),
        "roofline_types": table_spec(roof_types, "no op types with a FLOP model and time"),
        "summary": table_spec(summary, "empty summary"),
        "iterations": table_spec(iterations, "no iterations detected"),
        "steady": steady_spec(steady),
        "marks": table_spec(marks, "no marks: the program called no pyprof.mark(\"...\")"),
        "advice": table_spec(advice, "no rule fired: nothing with at least 2% of the time at "
                                     "stake (docs/advice.md lists the rules)"),
        "timemodel": table_spec(time_model, "no op family with enough costed points to fit"),
        "timemodel_far": table_spec(model_far, "every fitted point is within 2x of its "
                                               "prediction"),
    }
    if ranks is not None:
        for key, prefixes, empty in (
                ("ranks", ("ranks",), "no rank states its rank"),
                ("rank_steps", ("rank steps",), "no steps"),
                ("rank_collectives", ("collectives",), "no collectives")):
            tables_out[key] = table_spec(table(ranks, *prefixes), empty)
    if diff is not None:
        for key, prefixes, empty in (
                ("diff_summary", ("diff summary",), "no summary"),
                ("diff_steps", ("diff: per iteration", "diff: whole profile"), "no step rows"),
                ("diff_op_types", ("diff: op types",), "no ops in either profile"),
                ("diff_ops", ("diff: ops",), "no ops in either profile"),
                ("diff_modules", ("diff: modules",), "no module ranges in either profile"),
                ("diff_kernels", ("diff: kernels",), "no kernels (CPU-only profiles)")):
            tables_out[key] = table_spec(table(diff, *prefixes), empty)
    return {
        "meta": {"source": header.get("source"), "format": header.get("format"),
                 "records_kind": header.get("records"),
                 "generated": datetime.datetime.now().strftime("%Y-%m-%d %H:%M")},
        "headline": headline, "notes": notes, "figures": figures, "figure_notes": figure_notes,
        "figure_ids": ["roofline", "family", "phase", "modules", "iterations", "diff", "ranks",
                       "rank_steps"],
        "tables": tables_out, "diff_base": diff_base,
        "roofline": {"text": roof_text, **roof_facts},
        # prof's rows as it wrote them (raw numbers), for scripts and tests; long tables cut
        # to the rows the page shows, with their full length in prof_rows.
        "prof": {t: rows[:MAX_TABLE_ROWS] for t, rows in tables.items()},
        "prof_rows": {t: len(rows) for t, rows in tables.items()},
        "diff": {t: rows[:MAX_TABLE_ROWS] for t, rows in (diff or {}).items()},
        "ranks": {t: rows[:MAX_TABLE_ROWS] for t, rows in (ranks or {}).items()},
    }


_NO_RANKS = ("one rank: `pyprof report RANK.dict --ranks dicts/` (or `pyprof report dicts/`) "
             "compares the ranks of a distributed job")


def step_headline(steady: list[dict] | None, iterations: list[dict] | None, wall, steps: int
                  ) -> dict:
    """The step time card: the steady state's median over the selected iterations (prof's
    iteration report), else the wall time over the step ranges found."""
    card = {"id": "step_time", "label": "step time", "unit": "ns"}
    for row in steady or []:
        if str(row.get("Metric", "")).startswith("wall time"):
            selected = sum(1 for r in iterations or [] if r.get("Selected") == "yes")
            iqr = _number(row.get("IQR"))
            return {**card, "label": "median step time", "value": _number(row.get("Median")),
                    "sub": f"median of {selected} iterations, IQR "
                           f"{_si(iqr, 's', 1e-9) if iqr is not None else 'na'}"}
    return {**card, "label": "mean step time", "value": (wall / steps) if (wall and steps) else None,
            "sub": f"wall time / {steps} steps" if steps else "no step ranges in the trace"}


def steady_spec(rows: list[dict] | None) -> dict:
    """The steady-state table with each row in its own unit (wall time in ns, GPU busy in %,
    TFLOP/s), as text a person reads; prof's raw numbers stay in the page's `prof` data."""
    if not rows:
        return {"columns": [], "rows": [], "empty": "no iterations detected"}

    def show(metric: str, v):
        n = _number(v)
        if n is None:
            return "na"
        if "(ns)" in metric:
            return _si(n, "s", 1e-9)
        if "%" in metric:
            return f"{n:.1f} %"
        if "TFLOP/s" in metric:
            return _si(n * 1e12, "FLOP/s")
        return f"{n:.3g}"

    names = ["Median", "Min", "Max", "Q1", "Q3", "IQR"]
    cols = [{"name": "Metric", "label": "Metric", "unit": "text", "long": True}] + [
        {"name": n, "label": n, "unit": "text", "long": False} for n in names]
    body = [[str(r.get("Metric"))] + [show(str(r.get("Metric")), r.get(n)) for n in names]
            for r in rows]
    return {"columns": cols, "rows": body}


def iterations_figure(rows: list[dict] | None) -> dict | None:
    """Per iteration: forward, backward and optimizer time stacked, the wall time as a line;
    warm-up and left-out iterations marked."""
    import plotly.graph_objects as go

    if not rows:
        return None
    labels = [f"{r.get('Name')}" + ("" if r.get("Selected") == "yes" else f" ({r.get('Selected')})")
              for r in rows]
    fig = go.Figure()
    for key, name, colour in (("Forward(ns)", "forward", "#2f6fde"),
                              ("Backward(ns)", "backward", "#e07b39"),
                              ("Optimizer(ns)", "optimizer", "#3aa76d")):
        fig.add_trace(go.Bar(x=labels, y=[(_number(r.get(key)) or 0) / 1e6 for r in rows],
                             name=name, marker={"color": colour}))
    fig.add_trace(go.Scatter(x=labels, y=[(_number(r.get("Wall(ns)")) or 0) / 1e6 for r in rows],
                             name="wall time", mode="lines+markers", line={"color": "#1d2330"}))
    fig.update_layout(barmode="stack", yaxis={"title": "time (ms)"}, height=420,
                      template="plotly_white", margin={"l": 60, "r": 20, "t": 30, "b": 80},
                      title={"text": "time per iteration (GPU: kernel time by phase; CPU: op "
                                     "self time)", "font": {"size": 14}})
    return _fig_json(fig)


def diff_figure(rows: list[dict] | None) -> dict | None:
    """The op types whose time changed most against the baseline, coloured by verdict."""
    import plotly.graph_objects as go

    rows = [r for r in (rows or []) if _number(r.get("Delta(ns)"))]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: abs(_number(r["Delta(ns)"])))[-20:]
    # What a row's times are per (docs/diff.md §1.1): "per iteration", or "per call".
    per = str(rows[-1].get("Basis") or "per iteration")
    colour = {"slower": "#d62728", "faster": "#2ca02c", "new": "#9467bd", "gone": "#7f7f7f",
              "same": "#b0b8c4"}
    fig = go.Figure(go.Bar(
        x=[_number(r["Delta(ns)"]) / 1e6 for r in rows],
        y=[f"{r.get('Op')} {r.get('Direction')}" for r in rows], orientation="h",
        marker={"color": [colour.get(str(r.get("Verdict")), "#b0b8c4") for r in rows]},
        hovertext=[f"<b>{_esc(r.get('Op'))}</b> {r.get('Direction')}: {r.get('Verdict')}<br>"
                   f"{_si(_number(r.get('Base(ns)')), 's', 1e-9)} → "
                   f"{_si(_number(r.get('New(ns)')), 's', 1e-9)} {per}"
                   + (f"<br>q = {r.get('q')}" if r.get("q") is not None else "") for r in rows],
        hoverinfo="text"))
    fig.update_layout(title={"text": f"change {per} by op type (red: slower, green: faster, "
                                     "purple: new, grey: gone, same or untested)",
                             "font": {"size": 14}},
                      xaxis={"title": f"time change (ms {per})"}, template="plotly_white",
                      height=max(260, 28 * len(rows) + 90), yaxis={"automargin": True},
                      margin={"l": 10, "r": 20, "t": 40, "b": 50})
    return _fig_json(fig)


def ranks_figure(rows: list[dict] | None) -> dict | None:
    """Per rank: compute, exposed communication and idle stacked (they sum to the wall time of
    the selected steps); overlapped communication as a marker: time hidden behind compute."""
    import plotly.graph_objects as go

    if not rows:
        return None
    labels = [f"rank {r.get('Rank')}" for r in rows]
    fig = go.Figure()
    for key, name, colour in (("Compute(ns)", "compute", "#2f6fde"),
                              ("Exposed comm(ns)", "exposed communication", "#d62728"),
                              ("Idle(ns)", "idle", "#b0b8c4")):
        fig.add_trace(go.Bar(x=labels, y=[(_number(r.get(key)) or 0) / 1e6 for r in rows],
                             name=name, marker={"color": colour}))
    fig.add_trace(go.Scatter(x=labels, y=[(_number(r.get("Overlapped(ns)")) or 0) / 1e6
                                          for r in rows],
                             name="overlapped communication", mode="markers",
                             marker={"color": "#1d2330", "symbol": "diamond", "size": 9}))
    fig.update_layout(barmode="stack", yaxis={"title": "time over the selected steps (ms)"},
                      height=420, template="plotly_white",
                      margin={"l": 60, "r": 20, "t": 40, "b": 60},
                      title={"text": "per rank: compute + exposed communication + idle = wall "
                                     "time", "font": {"size": 14}})
    return _fig_json(fig)


def rank_steps_figure(detail: list[dict] | None) -> dict | None:
    """Rank × step heat map of the time outside exposed communication: what the other ranks
    wait for, so a straggler is the hot cell of its column."""
    import plotly.graph_objects as go

    if not detail:
        return None
    ranks = sorted({r["Rank"] for r in detail if isinstance(r.get("Rank"), int)})
    steps = sorted({r["Step"] for r in detail if isinstance(r.get("Step"), int)})
    if not ranks or not steps:
        return None
    cell = {(r["Rank"], r["Step"]): ((_number(r.get("Wall(ns)")) or 0)
                                     - (_number(r.get("Exposed comm(ns)")) or 0)) / 1e6
            for r in detail}
    z = [[cell.get((rank, step)) for step in steps] for rank in ranks]
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"step {s}" for s in steps], y=[f"rank {r}" for r in ranks],
        colorscale="Reds", colorbar={"title": "ms"},
        hovertemplate="%{y}, %{x}: %{z:.3f} ms outside exposed communication<extra></extra>"))
    fig.update_layout(height=max(220, 26 * len(ranks) + 120), template="plotly_white",
                      margin={"l": 70, "r": 20, "t": 40, "b": 50},
                      yaxis={"autorange": "reversed"},
                      title={"text": "time outside exposed communication per rank and step (what "
                                     "the others wait for)", "font": {"size": 14}})
    return _fig_json(fig)


def _dominant_mode(types: list[dict]) -> str | None:
    by_mode: dict[str, float] = {}
    for r in types:
        m = r.get("Mode")
        if m in (None, "-", "na"):
            continue
        by_mode[m] = by_mode.get(m, 0) + (_number(r.get("Time(ns)")) or 0)
    return max(by_mode, key=by_mode.get) if by_mode else None


def _peak_for(peaks: list[dict], mode: str) -> dict | None:
    rows = [p for p in peaks if p.get("Mode") == mode and _number(p.get("Peak FLOP/s"))]
    rows.sort(key=lambda p: p.get("Kind") == "measured")  # datasheet before measured
    return rows[0] if rows else None


SECTIONS = [
    ("headline", "Overview"), ("roofline", "Roofline"), ("breakdown", "Where the time goes"),
    ("ops", "Ops"), ("instances", "Op instances"), ("kernels", "Kernels"),
    ("tensor-cores", "Tensor Cores"), ("iterations", "Iterations"), ("advice", "Advice"),
    ("diff", "Diff"), ("ranks", "Ranks"), ("devices", "Device peaks"),
]


def render_html(data: dict, title: str) -> str:
    import plotly.offline

    with open(os.path.join(ASSETS, "report.css"), encoding="utf-8") as f:
        css = f.read()
    with open(os.path.join(ASSETS, "report.js"), encoding="utf-8") as f:
        js = f.read()
    payload = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    # Inside <script>, "</" would end the element: JSON allows "<\/" for it.
    payload = payload.replace("</", "<\\/").replace("<!--", "<\\!--")
    plotly_js = plotly.offline.get_plotlyjs()
    toc = "".join(f'<a href="#{sid}">{name}</a>' for sid, name in SECTIONS)
    meta = data["meta"]
    roof_text = _esc(data["roofline"]["text"])
    if "diff_summary" in data["tables"]:
        diff_html = f'<p class="explain">Baseline: {_esc(data.get("diff_base"))}.</p>' + "".join(
            f'<h3>{name}</h3><div id="table-{key}"></div>' for key, name in (
                ("diff_summary", "Summary"),
                ("diff_steps", "Step rows (per iteration, or the whole profiles)"),
                ("diff_op_types", "Op types"), ("diff_ops", "Ops (op, direction, module, shapes)"),
                ("diff_modules", "Modules"), ("diff_kernels", "Kernels")))
    else:
        diff_html = ('<p class="empty" data-placeholder="diff">No baseline given: '
                     '<code>pyprof report NEW --diff BASE</code> adds this section.</p>')
    if "ranks" in data["tables"]:
        ranks_html = ('<div class="chart" id="fig-ranks"></div>'
                      '<div class="chart" id="fig-rank_steps"></div>' + "".join(
                          f'<h3>{name}</h3><div id="table-{key}"></div>' for key, name in (
                              ("ranks", "Per rank"), ("rank_steps", "Per step: stragglers"),
                              ("rank_collectives", "Collectives: message size and bandwidth"))))
    else:
        ranks_html = ('<div id="fig-ranks"></div><div id="fig-rank_steps" hidden></div>'
                      '<p class="empty" data-placeholder="ranks">One rank: <code>pyprof report '
                      'RANK.dict --ranks dicts/</code> (or <code>pyprof report dicts/</code>) '
                      'adds this section for a distributed job.</p>')
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="pyprof report">
<title>{_esc(title)}</title>
<style>{css}</style>
<script>{plotly_js}</script>
</head><body>
<header class="page"><h1>{_esc(title)}</h1>
<div class="source">{_esc(meta.get('source') or '')} · {_esc(meta.get('format') or '')} ·
generated {_esc(meta['generated'])} by pyprof</div></header>
<nav class="toc">{toc}</nav>
<main>
<section id="headline"><h2>Overview</h2>
<div class="cards" id="headline-cards"></div>
<div class="notes" id="notes"><b>What this profile lacks</b><ul id="notes-list"></ul></div>
</section>
<section id="roofline"><h2>Roofline</h2>
<p class="explain">Each point is an op type (large) or an op instance (small, grey) at its
arithmetic intensity (FLOPs per byte of ideal DRAM traffic, docs/ops.md) and achieved FLOP/s,
sized by time. Lines are the device's roofs: DRAM bandwidth up to each math mode's peak
(solid: datasheet, dotted: derived from SMs × clock, dashed: measured by `pyprof peak`). A point
far under the roof of its mode is worth a look. {roof_text}.</p>
<div class="chart" id="fig-roofline"></div></section>
<section id="breakdown"><h2>Where the time goes</h2>
<div class="row2"><div class="chart" id="fig-family"></div><div class="chart" id="fig-phase"></div></div>
<h3>Module tree</h3><p class="explain">Time per nn.Module, forward and backward together, each
module including its children. Click a module to zoom in.</p>
<div class="chart" id="fig-modules"></div></section>
<section id="ops"><h2>Ops</h2><p class="explain">Per op type and direction. Rates divide the
counted FLOPs and bytes by the time of exactly the instances that count them (docs/prof.md §3).</p>
<div id="table-ops"></div></section>
<section id="instances"><h2>Op instances</h2><div id="table-instances"></div></section>
<section id="kernels"><h2>Kernels</h2><div id="table-kernels"></div>
<h3>torch.compile kernels</h3><p class="explain">Each Inductor kernel (and each kernel of the C++
wrapper's extern calls): how it was attributed (its ATen nodes, its extern call's, or opaque:
no compile metadata), its FLOPs and bytes, the bytes its nodes would move run one by one, and
the share of those fusion saved (docs/compile.md).</p><div id="table-compiled"></div></section>
<section id="tensor-cores"><h2>Tensor Cores</h2><p class="explain">Tensor Core eligible ops
(dtype and shapes allow them) and whether their kernels used them (judged from kernel names,
docs/prof.md §4). "eligible, not using TC" is the row to act on.</p>
<div id="table-tc"></div></section>
<section id="iterations"><h2>Iterations</h2><p class="explain">The profile's iterations as
parse detected them (the rule is in the table's title) and which the other sections cover: a
warm-up step 0 is left out by default (docs/prof.md, Iterations). The steady state is the median
and spread over the selected iterations.</p>
<div class="chart" id="fig-iterations"></div>
<h3>Steady state</h3><div id="table-steady"></div>
<h3>Per iteration</h3><div id="table-iterations"></div>
<h3>Marks</h3><p class="explain">The program's <code>pyprof.mark("...")</code> calls: when each
happened, on which thread, in which step.</p><div id="table-marks"></div></section>
<section id="advice"><h2>Advice</h2><p class="explain">Rules that fired on this profile, each
with the time a fix could save estimated from the profile itself, the evidence and the fix
(docs/advice.md).</p><div id="table-advice"></div>
<h3>Fitted time model</h3><p class="explain">Per op family, time ≈ FLOPs / P + bytes / B + c
fitted over the profile's own ops (non-negative least squares): P and B are the ceilings this
run achieved; the points far from their prediction are worth a look.</p>
<div id="table-timemodel"></div><h3>Far from the model</h3><div id="table-timemodel_far"></div>
</section>
<section id="diff"><h2>Diff</h2><p class="explain">This profile against a baseline run
(<code>pyprof report NEW --diff BASE</code>; the same tables as <code>pyprof diff</code>,
docs/diff.md): time per iteration before and after (per call when a profile has fewer than two
iterations, as fixed-length captures: the summary and each row's Basis say), each row judged
against the typical change of all rows, Welch's t-test over the iterations (or calls), q-values
adjusted for the many rows.</p>
<div class="chart" id="fig-diff"></div>
{diff_html}</section>
<section id="ranks"><h2>Ranks</h2><p class="explain">A distributed job's ranks side by side
(<code>pyprof prof --report ranks</code>, docs/prof.md §6), over the steps each rank's reports
cover: compute, communication not hidden behind compute (exposed) and idle time per rank; each
step's straggler, the rank the others waited for, with its lag; and per collective the message
size, algorithm and bus bandwidth.</p>
{ranks_html}</section>
<section id="devices"><h2>Device peaks</h2><p class="explain">The roofs' numbers and their
sources (docs/peaks.md).</p><div id="table-peaks"></div>
<h3>Roofline points (op types)</h3><div id="table-roofline_types"></div>
<h3>Summary (prof)</h3><div id="table-summary"></div></section>
</main>
<script type="application/json" id="pyprof-data">{payload}</script>
<script>{js}</script>
</body></html>
"""


def make_report(input_path: str, output: str, peaks: str | None = None, title: str | None = None,
                no_tf32: bool = False, diff_base: str | None = None,
                ranks: list[str] | None = None) -> dict:
    """Writes the page for `input_path` to `output`; returns the data embedded in it. With
    `diff_base`, the Diff section compares the profile with that baseline; with `ranks` (a job's
    net.dicts or folders of them), the Ranks section compares the ranks. A folder as
    `input_path` is a job's ranks: the page is about its lowest rank."""
    if peaks and not os.path.isfile(peaks):
        raise ReportError(f"--peaks {peaks}: no such file")
    _check_input(input_path)
    if diff_base:
        _check_input(diff_base)
    try:
        _files.check_not_an_input(output, [input_path, diff_base, peaks, *(ranks or [])])
    except _files.FileError as e:
        raise ReportError(str(e)) from None
    input_path, ranks = rank_inputs(input_path, ranks)
    rank_tables = None
    with tempfile.TemporaryDirectory(prefix="pyprof-report-") as work:
        dict_path, parse_warnings = ensure_dict(input_path, work)
        header = read_header(dict_path)
        tables, prof_warnings = run_prof_reports(dict_path, work, peaks, no_tf32)
        # The step card falls back on counting step ranges (another prof run over the whole
        # dict) only when prof's iteration report has no steady state to give it.
        steps = 0 if table(tables, "steady state") else step_count(dict_path)
        diff = None
        if diff_base:
            base_work = os.path.join(work, "base")
            os.mkdir(base_work)
            base_dict, base_warnings = ensure_dict(diff_base, base_work)
            read_header(base_dict)
            diff, diff_notes = run_diff(base_dict, dict_path, work, no_tf32)
            parse_warnings += [f"baseline: {w}" for w in base_warnings + diff_notes]
        if ranks:
            rank_tables, rank_notes = run_ranks_report(ranks, work, no_tf32)
            parse_warnings += rank_notes
    data = build_page_data(header, tables, steps, parse_warnings + prof_warnings, diff,
                           diff_base, rank_tables)
    if ranks and isinstance(header.get("rank"), int):
        data["notes"].insert(0, f"The sections other than Ranks show rank {header['rank']} "
                                f"({input_path}).")
    page = render_html(data, title or f"pyprof report: {os.path.basename(input_path)}")
    try:
        _files.write_atomic(output, page)
    except OSError as e:
        raise ReportError(f"writing {output} failed: {e.strerror}") from None
    return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="pyprof report",
        description="One self-contained HTML page of a profile (works offline): headline figures, "
                    "a roofline, time by op family, module and phase, sortable tables of "
                    "ops, instances, kernels and Tensor Core use, iterations, advice with the "
                    "time at stake and, with --diff BASE, a comparison with a baseline. "
                    "docs/report.md",
        epilog="Exit status: 0 the page was written, 1 it could not be (the input, parse or "
               "prof failed: the message says why; no page is left), 2 usage.")
    p.add_argument("input", help="net.dict, or anything `pyprof parse` reads (parsed first); a "
                                 "folder of a job's per-rank net.dicts: the page shows its lowest "
                                 "rank and a Ranks section over them all")
    p.add_argument("-o", "--output", help="the HTML file (default: INPUT's name + .html)")
    p.add_argument("--peaks", metavar="FILE",
                   help="device peaks to add or override (docs/peaks.md); `pyprof peak -o FILE` "
                        "writes measured ones, drawn beside the datasheet roofs")
    p.add_argument("--title", help="the page's title")
    p.add_argument("--no-tf32", action="store_true",
                   help="fp32 GEMMs and convolutions are not Tensor Core eligible")
    p.add_argument("--diff", metavar="BASE",
                   help="a baseline profile (net.dict, database or trace) of the same workload: "
                        "the Diff section compares INPUT with it, as `pyprof diff BASE INPUT` "
                        "(docs/diff.md)")
    p.add_argument("--ranks", nargs="+", metavar="DICT",
                   help="the job's per-rank net.dicts (or folders of them: `pyprof parse -o DIR "
                        "net.rank*.sqlite`): the Ranks section compares them (per-rank compute, "
                        "exposed communication, idle; stragglers; collectives' bandwidth; "
                        "docs/prof.md §6)")
    args = p.parse_args(argv)
    output = args.output or re.sub(r"(\.json)?(\.gz)?$|\.(dict|sqlite|sql)$", "",
                                   args.input.rstrip("/")) + ".html"
    try:
        data = make_report(args.input, output, args.peaks, args.title, args.no_tf32, args.diff,
                           args.ranks)
    except ReportError as e:
        print(f"pyprof report: error: {e}", file=sys.stderr)
        return 1
    for n in data["notes"]:
        print(f"pyprof report: note: {n}", file=sys.stderr)
    print(f"pyprof report: wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(_tools.run_front("report", lambda: main(sys.argv[1:])))  # signals end it cleanly
