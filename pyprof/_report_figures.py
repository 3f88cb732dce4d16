"""The HTML page's Plotly figures (`pyprof report`, docs/report.md), built from prof's report
rows (pyprof._reports): the roofline, time by family, phase and module, iterations, the diff's
op types and a job's ranks. Each returns the figure as JSON for plotly.js, or None when there is
nothing to draw. Numbers in hover texts read as prof's text reports do (pyprof._units)."""

from __future__ import annotations

import json
import math

from pyprof._units import format_quantity


def number(v):
    """A JSON cell as a number: ints and floats as they are, None for anything else."""
    if isinstance(v, bool):
        return None
    return v if isinstance(v, (int, float)) else None


def _fig_json(fig) -> dict:
    return json.loads(fig.to_json())


def esc(s) -> str:
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _text(v) -> str:
    """A text cell; "-" for a null (prof's JSON null is its text reports' "-")."""
    return "-" if v is None else str(v)


def _time(v) -> str:
    return format_quantity(number(v), "ns")


def roofline_figure(types: list[dict], instances: list[dict], peaks: list[dict],
                    device_hint: str | None) -> tuple[dict | None, str, dict]:
    """The roofline: op types and op instances at (FLOP/Byte, FLOP/s), sized by time, under the
    roofs of one device. Returns the figure (None when there is nothing to draw), a sentence on
    what it shows, and facts the page states (device, points, left out)."""
    import plotly.graph_objects as go

    def points(rows):
        kept = [r for r in rows if (number(r.get("FLOP/Byte")) or 0) > 0
                and (number(r.get("FLOP/s")) or 0) > 0]
        return kept, len(rows) - len(kept)

    type_pts, type_skipped = points(types)
    inst_rows = sorted(instances, key=lambda r: -(number(r.get("Time(ns)")) or 0))
    inst_pts, inst_skipped = points(inst_rows)
    facts = {"type_points": len(type_pts), "type_rows": len(types), "type_skipped": type_skipped,
             "instance_points": len(inst_pts), "instance_rows": len(instances)}
    if not type_pts and not inst_pts:
        return None, "no op has a FLOP model with counted time", facts

    # The device whose roofs are drawn: the one most of the points' time ran on.
    time_by_device: dict[str, float] = {}
    for r in type_pts:
        d = str(r.get("Device", "-"))
        time_by_device[d] = time_by_device.get(d, 0) + (number(r.get("Time(ns)")) or 0)
    device = max(time_by_device, key=time_by_device.get) if time_by_device else device_hint
    roofs = [p for p in peaks if str(p.get("Device")) == str(device)
             and number(p.get("Peak FLOP/s"))]
    facts["device"] = device
    facts["roofs"] = len(roofs)

    xs = [number(r["FLOP/Byte"]) for r in type_pts + inst_pts]
    ridge = [number(p.get("Ridge FLOP/Byte")) or 0 for p in roofs]
    xmin = min(xs) / 4
    xmax = max(max(xs), max(ridge, default=0)) * 4
    fig = go.Figure()
    max_time = max((number(r.get("Time(ns)")) or 0) for r in type_pts + inst_pts) or 1

    dash = {"datasheet": "solid", "derived": "dot", "override": "solid", "measured": "dash"}
    # One colour per math mode, shared by its roof and the op types that ran in it.
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
               "#17becf", "#bcbd22", "#7f7f7f"]
    modes = sorted({_text(p.get("Mode")) for p in roofs} | {_text(r.get("Mode")) for r in type_pts})
    colour = {m: palette[i % len(palette)] for i, m in enumerate(modes)}
    for p in roofs:
        peak = number(p["Peak FLOP/s"])
        bw = number(p.get("Memory B/s")) or 0
        if bw > 0:
            knee = peak / bw
            x = [xmin, max(xmin, min(knee, xmax)), xmax]
            y = [min(peak, xmin * bw), min(peak, x[1] * bw), peak]
        else:
            x, y = [xmin, xmax], [peak, peak]
        kind = str(p.get("Kind", "datasheet"))
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=f"{p.get('Mode')} {kind}: {format_quantity(peak, 'FLOP/s')}",
            line={"dash": dash.get(kind, "solid"), "width": 1.5,
                  "color": colour[_text(p.get("Mode"))]}, hoverinfo="name",
            meta={"role": "roof", "mode": p.get("Mode"), "kind": kind, "peak": peak,
                  "bandwidth": bw, "device": str(device)}))

    def hover(r, level):
        parts = [f"<b>{esc(r.get('Op'))}</b> {_text(r.get('Direction'))}"]
        if level == "instance" and r.get("Module") not in (None, "-", ""):
            parts.append(f"module: {esc(r.get('Module'))}")
        if level == "instance" and r.get("Shapes") not in (None, "-", ""):
            parts.append(f"shapes: {esc(_short(str(r.get('Shapes')), 120))}")
        if level == "op type":
            parts.append(f"instances: {r.get('Instances')}")
        parts.append(f"mode: {_text(r.get('Mode'))}, dtype: {_text(r.get('DType'))}")
        parts.append(f"time: {_time(r.get('Time(ns)') or 0)}")
        parts.append(f"{format_quantity(number(r.get('FLOP/s')), 'FLOP/s')} at "
                     f"{number(r.get('FLOP/Byte')):.3g} FLOP/byte")
        pct = number(r.get("% of roof"))
        parts.append(f"{pct:.1f} % of the roof ({r.get('Bound')}-bound)" if pct is not None
                     else "no roof for this mode")
        return "<br>".join(parts)

    def size(r, scale):
        return 5 + scale * math.sqrt((number(r.get("Time(ns)")) or 0) / max_time)

    if inst_pts:
        fig.add_trace(go.Scatter(
            x=[number(r["FLOP/Byte"]) for r in inst_pts],
            y=[number(r["FLOP/s"]) for r in inst_pts], mode="markers", name="op instances",
            marker={"size": [size(r, 22) for r in inst_pts], "opacity": 0.35,
                    "color": "#7b8798"},
            hovertext=[hover(r, "instance") for r in inst_pts], hoverinfo="text",
            meta={"role": "points", "level": "op instance"}))
    fig.add_trace(go.Scatter(
        x=[number(r["FLOP/Byte"]) for r in type_pts],
        y=[number(r["FLOP/s"]) for r in type_pts], mode="markers", name="op types (colour: math mode)",
        marker={"size": [size(r, 34) for r in type_pts], "opacity": 0.8,
                "color": [colour[_text(r.get("Mode"))] for r in type_pts],
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

    rows = [r for r in (rows or []) if (number(r.get(value_key)) or 0) > 0]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: number(r.get(value_key)))[-25:]
    fig = go.Figure(go.Bar(
        x=[number(r[value_key]) / 1e6 for r in rows], y=[str(r[label_key]) for r in rows],
        orientation="h", hovertext=[
            f"{esc(r[label_key])}: {_time(r[value_key])}"
            + (f" ({number(r.get(extra_key)):.1f} %)" if extra_key and
               number(r.get(extra_key)) is not None else "") for r in rows],
        hoverinfo="text", marker={"color": "#2f6fde"}))
    fig.update_layout(title={"text": title, "font": {"size": 14}}, xaxis={"title": "time (ms)"},
                      height=max(260, 28 * len(rows) + 90), template="plotly_white",
                      margin={"l": 10, "r": 20, "t": 40, "b": 50}, yaxis={"automargin": True})
    return _fig_json(fig)


def module_figure(rows: list[dict] | None) -> dict | None:
    """The module tree as a sunburst; forward and backward time rolled up (prof's module
    report already includes each module's children)."""
    import plotly.graph_objects as go

    rows = [r for r in (rows or []) if (number(r.get("Total(ns)")) or 0) > 0]
    if not rows:
        return None
    paths = {str(r["Module"]) for r in rows}
    ids, parents, values, hovers = [], [], [], []
    for r in rows:
        path = str(r["Module"])
        parent = path.rsplit(".", 1)[0] if "." in path else ""
        ids.append(path)
        parents.append(parent if parent in paths else "")
        values.append(number(r["Total(ns)"]))
        hovers.append(f"<b>{esc(path)}</b><br>forward {_time(r.get('Fprop(ns)') or 0)}"
                      f"<br>backward {_time(r.get('Bprop(ns)') or 0)}")
    labels = [i.rsplit(".", 1)[-1] for i in ids]
    fig = go.Figure(go.Sunburst(ids=ids, labels=labels, parents=parents, values=values,
                                branchvalues="total", hovertext=hovers, hoverinfo="text",
                                maxdepth=4))
    fig.update_layout(height=560, margin={"l": 10, "r": 10, "t": 10, "b": 10})
    return _fig_json(fig)


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
        fig.add_trace(go.Bar(x=labels, y=[(number(r.get(key)) or 0) / 1e6 for r in rows],
                             name=name, marker={"color": colour}))
    fig.add_trace(go.Scatter(x=labels, y=[(number(r.get("Wall(ns)")) or 0) / 1e6 for r in rows],
                             name="wall time", mode="lines+markers", line={"color": "#1d2330"}))
    fig.update_layout(barmode="stack", yaxis={"title": "time (ms)"}, height=420,
                      template="plotly_white", margin={"l": 60, "r": 20, "t": 30, "b": 80},
                      title={"text": "time per iteration (GPU: kernel time by phase; CPU: op "
                                     "self time)", "font": {"size": 14}})
    return _fig_json(fig)


def diff_figure(rows: list[dict] | None) -> dict | None:
    """The op types whose time changed most against the baseline, coloured by verdict."""
    import plotly.graph_objects as go

    rows = [r for r in (rows or []) if number(r.get("Delta(ns)"))]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: abs(number(r["Delta(ns)"])))[-20:]
    # What a row's times are per (docs/diff.md §1.1): "per iteration", or "per call".
    per = str(rows[-1].get("Basis") or "per iteration")
    colour = {"slower": "#d62728", "faster": "#2ca02c", "new": "#9467bd", "gone": "#7f7f7f",
              "same": "#b0b8c4"}
    fig = go.Figure(go.Bar(
        x=[number(r["Delta(ns)"]) / 1e6 for r in rows],
        y=[f"{r.get('Op')} {_text(r.get('Direction'))}" for r in rows], orientation="h",
        marker={"color": [colour.get(str(r.get("Verdict")), "#b0b8c4") for r in rows]},
        hovertext=[f"<b>{esc(r.get('Op'))}</b> {_text(r.get('Direction'))}: {r.get('Verdict')}<br>"
                   f"{_time(r.get('Base(ns)'))} → "
                   f"{_time(r.get('New(ns)'))} {per}"
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
        fig.add_trace(go.Bar(x=labels, y=[(number(r.get(key)) or 0) / 1e6 for r in rows],
                             name=name, marker={"color": colour}))
    fig.add_trace(go.Scatter(x=labels, y=[(number(r.get("Overlapped(ns)")) or 0) / 1e6
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
    cell = {(r["Rank"], r["Step"]): ((number(r.get("Wall(ns)")) or 0)
                                     - (number(r.get("Exposed comm(ns)")) or 0)) / 1e6
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


def dominant_mode(types: list[dict]) -> str | None:
    by_mode: dict[str, float] = {}
    for r in types:
        m = r.get("Mode")
        if m in (None, "-", "na"):
            continue
        by_mode[m] = by_mode.get(m, 0) + (number(r.get("Time(ns)")) or 0)
    return max(by_mode, key=by_mode.get) if by_mode else None


def peak_for(peaks: list[dict], mode: str) -> dict | None:
    rows = [p for p in peaks if p.get("Mode") == mode and number(p.get("Peak FLOP/s"))]
    rows.sort(key=lambda p: p.get("Kind") == "measured")  # datasheet before measured
    return rows[0] if rows else None


