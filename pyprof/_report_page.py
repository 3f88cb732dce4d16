"""The HTML page of `pyprof report` (docs/report.md): prof's tables (pyprof._reports.Table, found
by their report and table ids) laid out as headline cards, figures and sortable tables, every
number formatted as prof's text reports format it (pyprof._units), and the page itself
(report_assets/: its style and the little script that renders the embedded data)."""

from __future__ import annotations

import datetime
import json
import os

from pyprof._report_figures import (bar_figure, diff_figure, dominant_mode, esc, iterations_figure,
                                    module_figure, number, peak_for, rank_steps_figure,
                                    ranks_figure, roofline_figure)
from pyprof._report_memory import memory_section
from pyprof._reports import Table
from pyprof._units import NUMERIC_UNITS, format_quantity, human_header

# The page holds the op instances and kernels with the most time, at most this many (prof's
# --top: a million-kernel profile has as many instances); `pyprof prof --report` gives all.
MAX_TABLE_ROWS = 2000
ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_assets")
# Columns of names and free text, which the page lets wrap and shows whole on hover.
LONG_COLUMNS = ("Op", "Kernel", "Module", "Params", "Shapes", "Source", "Name")


def cell_text(value, unit: str) -> str:
    """A cell as the page prints it: a quantity in human units (as `pyprof prof` prints it),
    text as it is, no value as "–"."""
    if value is None or value == "":
        return "–"
    if unit in NUMERIC_UNITS and isinstance(value, (int, float)):
        return format_quantity(value, unit)
    return str(value)


def table_spec(table: Table | None, empty: str, limit: int = MAX_TABLE_ROWS) -> dict:
    """A table for report.js: its columns (name, label, unit), each row's values (for sorting
    and filtering) and the text each cell shows."""
    if table is None or not table.rows:
        return {"columns": [], "rows": [], "text": [], "empty": empty}
    cols = [{"name": c, "label": human_header(c, table.units.get(c, "text")),
             "unit": table.units.get(c, "text"), "long": c in LONG_COLUMNS}
            for c in table.columns]
    rows = table.rows[:limit]
    values = [[row.get(c) for c in table.columns] for row in rows]
    text = [[cell_text(row.get(c), table.unit(c, row)) for c in table.columns] for row in rows]
    spec = {"columns": cols, "rows": values, "text": text}
    if len(table.rows) >= limit:
        spec["note"] = (f"the {limit} rows with the most time; `pyprof prof --report` lists "
                        "them all")
    return spec


def steady_spec(table: Table | None) -> dict:
    """The steady-state table: each row in its own unit (the row's `unit`: wall time in ns,
    GPU busy in %, TFLOP/s)."""
    if table is None or not table.rows:
        return {"columns": [], "rows": [], "text": [], "empty": "no iterations detected"}
    spec = table_spec(table, "no iterations detected")
    for c in spec["columns"][1:]:
        c["unit"] = "per-row"
    return spec


def _metric(summary: Table | None, metric: str):
    """The summary's value of `metric` (its exact name), as a number; None when absent."""
    return number(summary.value(metric)) if summary else None


def gpu_busy_headline(summary: Table | None, cpu_only: bool) -> dict:
    """The GPU busy card: prof's summary gives one GPU's busy % ("GPU busy %"), or with several
    GPUs their mean ("GPU busy %, mean over N GPUs") beside each one's."""
    card = {"id": "gpu_busy", "label": "GPU busy", "unit": "%",
            "value": _metric(summary, "GPU busy %"),
            "sub": "union of kernel, copy and memset time" if not cpu_only else "not a GPU profile"}
    rows = summary.rows if summary else []
    for row in rows:
        metric = str(row.get("Metric", ""))
        if metric.startswith("GPU busy %, mean over "):
            gpus = metric[len("GPU busy %, mean over "):]
            per_gpu = [f"{str(r.get('Metric'))[:-len(' busy %')]} "
                       f"{format_quantity(number(r.get('Value')), '%')}%"
                       for r in rows if str(r.get("Metric", "")).startswith("GPU ")
                       and str(r.get("Metric", "")).endswith(" busy %")
                       and number(r.get("Value")) is not None]
            card["label"] = f"GPU busy (mean of {gpus})"
            card["value"] = number(row.get("Value"))
            card["sub"] = "each GPU's kernel, copy and memset time: " + ", ".join(per_gpu)
    return card


def step_headline(steady: Table | None, iterations: Table | None, wall, steps: int) -> dict:
    """The step time card: the steady state's median over the selected iterations (prof's
    iteration report), else the wall time over the step ranges found."""
    card = {"id": "step_time", "label": "step time", "unit": "ns"}
    for row in steady.rows if steady else []:
        if row.get("Metric") == "wall time (ns)":
            selected = sum(1 for r in (iterations.rows if iterations else [])
                           if r.get("Selected") == "yes")
            return {**card, "label": "median step time", "value": number(row.get("Median")),
                    "sub": f"median of {selected} iterations, IQR "
                           f"{format_quantity(number(row.get('IQR')), 'ns')}"}
    return {**card, "label": "mean step time", "value": (wall / steps) if (wall and steps) else None,
            "sub": f"wall time / {steps} steps" if steps else "no step ranges in the trace"}


def _card_text(card: dict) -> dict:
    value, unit = card.get("value"), card["unit"]
    if value is None:
        card["text"] = "–"
    elif unit == "%":
        card["text"] = f"{format_quantity(value, '%')} %"
    else:
        card["text"] = cell_text(value, unit)
    return card


_NO_RANKS = ("one rank: `pyprof report RANK.dict --ranks dicts/` (or `pyprof report dicts/`) "
             "compares the ranks of a distributed job")


def unmodelled_note(summary: Table | None) -> str:
    """What the summary says of the time no FLOP model covers, for the section's text."""
    share = _metric(summary, "time in ops without a FLOP model %")
    no_op = _metric(summary, "time with no op to model %")
    uncosted = _metric(summary, "time in calls a FLOP model could not cost %")
    parts = [f"{format_quantity(share, '%')}% of the time in ops without a model"
             if share is not None else "no op without a model holds time"]
    if uncosted is not None:
        parts.append(f"{format_quantity(uncosted, '%')}% in calls a model could not cost")
    if no_op is not None:
        parts.append(f"{format_quantity(no_op, '%')}% in records with no op to model")
    return "; ".join(parts)


def build_page_data(header: dict, tables: dict[str, Table], steps: int, warnings: list[str],
                    diff: dict[str, Table] | None = None, diff_base: str | None = None,
                    ranks: dict[str, Table] | None = None) -> dict:
    """The data the page embeds. `tables`, `diff`, `ranks`: prof's, diff's and the ranks
    report's tables by "report/table" id (pyprof._reports.by_key)."""
    def rows(key):
        t = tables.get(key)
        return t.rows if t else []

    summary = tables.get("summary/summary")
    peaks = rows("peaks/peaks")
    roof_types = rows("roofline/op_types")
    roof_inst = rows("roofline/op_instances")
    iterations = tables.get("iteration/steps")
    steady = tables.get("iteration/steady_state")

    cpu_only = header.get("records") == "op"
    devices = header.get("devices") or []
    records = _metric(summary, "records") or 0
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
        if p.get("Mode") in (None, "") and p.get("Source"):
            notes.append(f"Device {p.get('Device')} ({p.get('Name')}): {p.get('Source')}")
    notes.extend(w for w in warnings if "warning" in w)

    # Headline figures.
    device_names = sorted({str(d.get("name")) for d in devices if d.get("name")})
    wall = _metric(summary, "wall time (ns)")
    achieved = _metric(summary, "achieved TFLOP/s (over counted time)")
    dominant = dominant_mode(roof_types)
    peak_row = peak_for(peaks, dominant) if dominant else None
    pct_peak = None
    if achieved is not None and peak_row and number(peak_row.get("Peak FLOP/s")):
        pct_peak = 100.0 * achieved * 1e12 / number(peak_row["Peak FLOP/s"])
    headline = [_card_text(card) for card in (
        {"id": "device", "label": "device", "unit": "text",
         "value": ", ".join(device_names) if device_names else ("CPU" if cpu_only else "unknown GPU"),
         "sub": f"{len(devices)} GPU(s) in the trace" if devices else
                ("CPU-only profile" if cpu_only else "no device table in the trace")},
        {"id": "wall_time", "label": "wall time", "unit": "ns", "value": wall,
         "sub": "first record's start to last record's end"},
        step_headline(steady, iterations, wall, steps),
        gpu_busy_headline(summary, cpu_only),
        {"id": "achieved_tflops", "label": "achieved FLOP/s", "unit": "TFLOP/s",
         "value": achieved, "sub": "counted FLOPs / their time"},
        {"id": "pct_of_peak", "label": "% of peak", "unit": "%", "value": pct_peak,
         "sub": (f"of {peak_row.get('Name')} {dominant} peak ({peak_row.get('Kind')})"
                 if peak_row else "no peak for this device")},
        {"id": "tc_share", "label": "Tensor Core time", "unit": "%",
         "value": _metric(summary, "Tensor Core kernel time %"),
         "sub": "share of kernel time in Tensor Core kernels" if not cpu_only else "not a GPU profile"},
        {"id": "modeled_share", "label": "time with a FLOP model", "unit": "%",
         "value": _metric(summary, "time covered by a FLOP model %"),
         "sub": "share of time whose FLOPs are counted"},
        {"id": "records", "label": "records", "unit": "count", "value": records,
         "sub": "op records" if cpu_only else "kernels, copies and memsets"},
        {"id": "flops", "label": "FLOPs (FMA = 2)", "unit": "FLOPs",
         "value": _metric(summary, "FLOPs (FMA=2)")},
        {"id": "bytes", "label": "bytes (ideal DRAM)", "unit": "bytes",
         "value": _metric(summary, "bytes (ideal DRAM)")},
    )]

    figures: dict[str, dict] = {}
    figure_notes: dict[str, str] = {}
    roof, roof_text, roof_facts = roofline_figure(roof_types, roof_inst, peaks,
                                                  str(devices[0].get("id")) if devices else None)
    if roof:
        figures["roofline"] = roof
    else:
        figure_notes["roofline"] = f"No roofline: {roof_text}."
    diff_rows = (lambda key: diff[key].rows if diff and key in diff else [])
    rank_rows = (lambda key: ranks[key].rows if ranks and key in ranks else [])
    for key, fig, why in (
            ("family", bar_figure(rows("family/family"), "Family", "Time(ns)", "time by op family",
                                  "% of time"), "no records with time"),
            ("phase", bar_figure(rows("phase/phase"), "Phase", "Time(ns)", "time by phase",
                                 "% of time"), "no records with time"),
            ("modules", module_figure(rows("module/module")),
             "no module ranges in the trace (pyprof.init(model=...), emit_nvtx with module "
             "hooks or torch.profiler with_modules give them)"),
            ("iterations", iterations_figure(iterations.rows if iterations else []),
             "no iterations detected (ProfilerStep#N, a `step N` range, Optimizer.step or a "
             "repeating module forward: docs/formats.md §3); `pyprof parse --step-range NAME` "
             "names the range"),
            ("diff", diff_figure(diff_rows("diff/op_types")),
             f"no op type changed against {diff_base}" if diff is not None else
             "no baseline: `pyprof report NEW --diff BASE` compares this profile with another "
             "run of the same workload"),
            ("ranks", ranks_figure(rank_rows("ranks/per_rank")),
             "no rank states its rank" if ranks is not None else _NO_RANKS),
            ("rank_steps", rank_steps_figure(rank_rows("ranks/step_detail")),
             "no selected steps on any rank" if ranks is not None else _NO_RANKS)):
        if fig:
            figures[key] = fig
        else:
            figure_notes[key] = why

    memory = memory_section(tables)
    figures.update(memory.pop("figures"))

    tables_out = {
        "ops": table_spec(tables.get("op/op"), "no ops"),
        "unmodelled": table_spec(tables.get("unmodelled/unmodelled"),
                                 "every op with time has a FLOP model"),
        "uncosted": table_spec(tables.get("unmodelled/uncosted"),
                               "every call of a modelled op was costed"),
        "instances": table_spec(tables.get("instance/instance"), "no op instances"),
        "kernels": table_spec(tables.get("kernel/kernel"), "no kernels"),
        "compiled": table_spec(tables.get("compiled/compiled"), "no torch.compile kernels"),
        "tc": table_spec(tables.get("tc/tc"), "no Tensor Core eligible kernels" if not cpu_only
                         else "not a GPU profile: no kernels to judge"),
        "peaks": table_spec(tables.get("peaks/peaks"), "no device peaks"),
        "roofline_types": table_spec(tables.get("roofline/op_types"),
                                     "no op types with a FLOP model and time"),
        "summary": table_spec(summary, "empty summary"),
        "iterations": table_spec(iterations, "no iterations detected"),
        "steady": steady_spec(steady),
        "marks": table_spec(tables.get("marks/marks"),
                            "no marks: the program called no pyprof.mark(\"...\")"),
        "advice": table_spec(tables.get("advice/advice"),
                             "no rule fired: nothing with at least 2% of the time at stake "
                             "(docs/advice.md lists the rules)"),
        "timemodel": table_spec(tables.get("timemodel/fits"),
                                "no op family with enough costed points to fit"),
        "timemodel_far": table_spec(tables.get("timemodel/far_points"),
                                    "every fitted point is within 2x of its prediction"),
    }
    if memory["devices"]:
        for key, table_key in (("memory_steps", "memory/steps"), ("memory_ops", "memory/ops"),
                               ("memory_modules", "memory/modules")):
            tables_out[key] = table_spec(tables.get(table_key), "no memory lines")
    if ranks is not None:
        for key, table_key, empty in (
                ("ranks", "ranks/per_rank", "no rank states its rank"),
                ("rank_steps", "ranks/steps", "no steps"),
                ("rank_collectives", "ranks/collectives", "no collectives")):
            tables_out[key] = table_spec(ranks.get(table_key), empty)
    if diff is not None:
        for key, table_key, empty in (
                ("diff_summary", "diff/summary", "no summary"),
                ("diff_steps", "diff/steps", "no step rows"),
                ("diff_op_types", "diff/op_types", "no ops in either profile"),
                ("diff_ops", "diff/ops", "no ops in either profile"),
                ("diff_modules", "diff/modules", "no module ranges in either profile"),
                ("diff_kernels", "diff/kernels", "no kernels (CPU-only profiles)")):
            tables_out[key] = table_spec(diff.get(table_key), empty)

    def raw(by_key):
        return {k: t.rows[:MAX_TABLE_ROWS] for k, t in (by_key or {}).items()}

    return {
        "unmodelled": unmodelled_note(summary),
        "meta": {"source": header.get("source"), "format": header.get("format"),
                 "records_kind": header.get("records"),
                 "generated": datetime.datetime.now().strftime("%Y-%m-%d %H:%M")},
        "headline": headline, "notes": notes, "figures": figures, "figure_notes": figure_notes,
        "figure_ids": ["roofline", "family", "phase", "modules", "iterations", "diff", "ranks",
                       "rank_steps"] + [d["figure"] for d in memory["devices"]],
        "memory": memory,
        "tables": tables_out, "diff_base": diff_base,
        "roofline": {"text": roof_text, **roof_facts},
        # prof's rows as it wrote them (raw numbers), by "report/table" id, for scripts and
        # tests; long tables cut to the rows the page shows, with their full length in
        # prof_rows, and each table's title and column units beside them.
        "prof": raw(tables),
        "prof_rows": {k: len(t.rows) for k, t in tables.items()},
        "prof_tables": {k: {"title": t.title, "units": t.units} for k, t in tables.items()},
        "diff": raw(diff),
        "ranks": raw(ranks),
    }


SECTIONS = [
    ("headline", "Overview"), ("roofline", "Roofline"), ("breakdown", "Where the time goes"),
    ("ops", "Ops"), ("unmodelled", "Ops without a FLOP model"), ("instances", "Op instances"),
    ("kernels", "Kernels"),
    ("tensor-cores", "Tensor Cores"), ("iterations", "Iterations"), ("memory", "Memory"),
    ("advice", "Advice"),
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
    roof_text = esc(data["roofline"]["text"])
    unmodelled_share = data.get("unmodelled", "")
    if "diff_summary" in data["tables"]:
        diff_html = f'<p class="explain">Baseline: {esc(data.get("diff_base"))}.</p>' + "".join(
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
    memory_html = memory_section_html(data["memory"])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="pyprof report">
<title>{esc(title)}</title>
<style>{css}</style>
<script>{plotly_js}</script>
</head><body>
<header class="page"><h1>{esc(title)}</h1>
<div class="source">{esc(meta.get('source') or '')} · {esc(meta.get('format') or '')} ·
generated {esc(meta['generated'])} by pyprof</div></header>
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
<section id="unmodelled"><h2>Ops without a FLOP model</h2><p class="explain">The ops that
neither pyprof nor a model of yours costs, ranked by their share of the time
({esc(unmodelled_share)}): their FLOPs, bytes and rates are missing from every section above.
Add a model of each as a few formulas over its arguments in a file:
<code>pyprof prof --op-models FILE</code>, or <code>PYPROF_OP_MODELS=FILE pyprof report ...</code>
(<code>docs/ops.md</code>, “Adding your own models”).</p>
<div id="table-unmodelled"></div>
<h3>Calls a model could not cost</h3><p class="explain">Ops pyprof (or your file) models, whose
calls here the model could not cost (<code>na</code>): an argument the record lacks, a shape or
dtype it does not take. <code>pyprof prof --all-records</code> shows each call's Params.</p>
<div id="table-uncosted"></div></section>
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
{memory_html}
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




def memory_section_html(memory: dict) -> str:
    """The Memory section: a plot per device and the memory report's tables, or one line saying
    the profile has no memory lines."""
    if not memory["devices"]:
        return ('<section id="memory"><h2>Memory</h2><p class="empty" '
                f'data-placeholder="memory">{esc(memory["note"])}</p></section>')
    plots = "".join(
        f'<h3>{esc(d["device"])}</h3><div class="chart" id="fig-{esc(d["figure"])}"></div>'
        for d in memory["devices"])
    note = f'<p class="explain">{esc(memory["note"])}.</p>' if memory.get("note") else ""
    return f"""<section id="memory"><h2>Memory</h2><p class="explain">Each device's bytes
allocated over time (prof's <code>memory_timeline</code> report: {esc(memory["title"])}): the
running total of the allocations and frees, counted as the <code>memory</code> report counts
it, and the allocator's own totals where the trace gives them (CUDA: the caching allocator's
allocated and reserved). Bands are the steps (grey: left out of the reports), the lane under each
plot the top-level modules that allocated (forward, backward), and the diamond the peak with the
op that reached it (docs/memory.md).</p>{note}
{plots}
<h3>Per step</h3><div id="table-memory_steps"></div>
<h3>Per op</h3><div id="table-memory_ops"></div>
<h3>Per module</h3><div id="table-memory_modules"></div></section>"""
