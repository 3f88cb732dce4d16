"""The HTML page's Memory section (`pyprof report`, docs/report.md): one plot per device of the
bytes allocated over time, from prof's `memory_timeline` report (already downsampled in C++,
keeping every peak: prof/memory_timeline.h), with the steps as bands, a lane of the top-level
module spans under it, and the peak marked with the op the `memory` report names at it. Nothing
is computed here but the layout."""

from __future__ import annotations

import json

from pyprof._reports import Table
from pyprof._units import format_quantity

# Step bands drawn at most (each is a shape); a longer profile's plot goes without them.
MAX_STEP_BANDS = 400
_MODULE_COLOURS = ("#2f6fde", "#e07b39", "#3aa76d", "#9467bd", "#d62728", "#17becf", "#8c564b",
                   "#e377c2", "#bcbd22", "#7f7f7f")

NO_MEMORY = ("No memory lines: the profile recorded no allocations (pyprof profile records "
             "them unless PYPROF_MEMORY=0; a torch.profiler trace needs profile_memory=True; "
             "docs/memory.md).")


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _bytes(v) -> str:
    return format_quantity(_num(v), "bytes")


def _peak_row(steps: list[dict], device: str) -> dict | None:
    """The memory report's step row with the device's largest peak (the first of equal ones:
    the summary's `memory allocated peak`)."""
    best = None
    for r in steps:
        if r.get("Device") == device and _num(r.get("Peak allocated")) is not None:
            if best is None or r["Peak allocated"] > best["Peak allocated"]:
                best = r
    return best


def memory_figure(device: str, points: list[dict], spans: list[dict], steps: list[dict],
                  peak: dict | None, origin: int) -> dict:
    """One device's plot: the running total allocated (and the allocator's totals where given)
    over time in ms since `origin`, the steps as bands, the module spans in a lane under it,
    the peak marked."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    def ms(ns):
        return (ns - origin) / 1e6

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.8, 0.2],
                        vertical_spacing=0.04)
    x = [ms(p["Time(ns)"]) for p in points]
    for key, name, colour in (("Allocated", "allocated (running total)", "#2f6fde"),
                              ("Allocator allocated", "allocator's total allocated", "#3aa76d"),
                              ("Allocator reserved", "allocator's total reserved", "#e07b39")):
        y = [_num(p.get(key)) for p in points]
        if all(v is None for v in y):
            continue
        fig.add_trace(go.Scatter(
            x=x, y=y, name=name, mode="lines", line={"color": colour, "shape": "hv", "width": 1.5},
            hovertemplate="%{x:.3f} ms: %{y:.4s}B<extra>" + name + "</extra>"), row=1, col=1)
    if peak is not None:
        text = (f"peak {_bytes(peak['bytes'])}: {peak.get('op') or '-'}"
                + (f" ({peak['module']})" if peak.get("module") not in (None, "-") else "")
                + (f", step {peak['step']}" if peak.get("step") not in (None, "-") else ""))
        # The label on the side with room: a peak in the plot's right half is labelled leftwards.
        right_half = x and ms(peak["time_ns"]) > (x[0] + x[-1]) / 2
        fig.add_trace(go.Scatter(
            x=[ms(peak["time_ns"])], y=[peak["bytes"]], mode="markers+text", name="peak",
            text=[text], textposition="top left" if right_half else "top right",
            marker={"color": "#d62728", "size": 10, "symbol": "diamond"},
            hovertemplate=text + "<extra></extra>"), row=1, col=1)
    if 0 < len(steps) <= MAX_STEP_BANDS:
        for i, s in enumerate(steps):
            start, wall = _num(s.get("Start(ns)")), _num(s.get("Wall(ns)"))
            if start is None or wall is None:
                continue
            selected = s.get("Selected") == "yes"
            fig.add_vrect(x0=ms(start), x1=ms(start + wall), line_width=0, layer="below",
                          fillcolor=("#5b7fb8" if i % 2 == 0 else "#8fa8cf") if selected
                          else "#c4c8ce", opacity=0.15, row="all", col=1)
        # Each band's name on hover: an invisible point at its start.
        timed = [s for s in steps if _num(s.get("Start(ns)")) is not None]
        fig.add_trace(go.Scatter(
            x=[ms(s["Start(ns)"]) for s in timed], y=[0] * len(timed), mode="markers",
            marker={"size": 1, "opacity": 0}, name="steps", showlegend=False,
            text=[f"{s.get('Name')} ("
                  f"{'selected' if s.get('Selected') == 'yes' else s.get('Selected')})"
                  for s in timed],
            hovertemplate="%{text}<extra></extra>"), row=1, col=1)
    if spans:
        names = sorted({str(s["Module"]) for s in spans})
        colour = {n: _MODULE_COLOURS[i % len(_MODULE_COLOURS)] for i, n in enumerate(names)}
        lane = {"fprop": "forward", "bprop": "backward"}
        fig.add_trace(go.Bar(
            base=[ms(s["Start(ns)"]) for s in spans],
            x=[max((s["End(ns)"] - s["Start(ns)"]) / 1e6, 1e-6) for s in spans],
            y=[lane.get(s.get("Direction"), "other") for s in spans], orientation="h",
            marker={"color": [colour[str(s["Module"])] for s in spans]},
            text=[str(s["Module"]) for s in spans], textposition="inside",
            insidetextanchor="start",
            hovertext=[f"{s['Module']} "
                       f"({lane.get(s.get('Direction'), 'outside forward and backward')}): "
                       f"{s.get('Events')} allocations and frees" for s in spans],
            hoverinfo="text", name="top-level modules", showlegend=False), row=2, col=1)
    fig.update_yaxes(title_text="bytes", tickformat=".3s", ticksuffix="B", rangemode="tozero",
                     row=1, col=1)
    fig.update_yaxes(title_text="module", row=2, col=1)
    fig.update_xaxes(title_text="time (ms)", row=2, col=1)
    fig.update_layout(height=520, template="plotly_white", barmode="overlay",
                      margin={"l": 70, "r": 20, "t": 40, "b": 50},
                      legend={"orientation": "h", "y": 1.06, "x": 0},
                      title={"text": f"{device}: memory allocated over time", "font": {"size": 14}})
    return json.loads(fig.to_json())


def memory_section(tables: dict[str, Table]) -> dict:
    """The section's data: per device its figure id and facts (`devices`), the figures by id,
    and a note (a profile without memory lines: one line saying why, no plot)."""
    points_table = tables.get("memory_timeline/points")
    if points_table is None or not points_table.rows:
        return {"devices": [], "figures": {}, "note": NO_MEMORY}
    span_table = tables.get("memory_timeline/modules")
    memory_steps = tables["memory/steps"].rows if "memory/steps" in tables else []
    iteration = tables.get("iteration/steps")
    steps = iteration.rows if iteration else []
    devices: list[str] = []
    by_device: dict[str, list[dict]] = {}
    for p in points_table.rows:
        if p.get("Device") not in by_device:
            devices.append(p.get("Device"))
            by_device[p.get("Device")] = []
        by_device[p["Device"]].append(p)
    starts = [p["Time(ns)"] for p in points_table.rows if _num(p.get("Time(ns)")) is not None]
    starts += [s["Start(ns)"] for s in steps if _num(s.get("Start(ns)")) is not None]
    origin = min(starts) if starts else 0
    out = {"devices": [], "figures": {}, "title": points_table.title,
           "note": "" if len(steps) <= MAX_STEP_BANDS else
           f"{len(steps)} steps: too many to draw as bands (at most {MAX_STEP_BANDS})",
           "origin_ns": origin}
    for i, device in enumerate(devices):
        points = by_device[device]
        top = max(points, key=lambda p: p.get("Allocated") if _num(p.get("Allocated")) is not None
                  else float("-inf"))
        row = _peak_row(memory_steps, device)
        peak = {"bytes": top.get("Allocated"), "time_ns": top.get("Time(ns)"),
                "op": row.get("Op at peak") if row else top.get("Op"),
                "module": row.get("Module at peak") if row else None,
                "step": row.get("Step") if row else None,
                "report_peak": row.get("Peak allocated") if row else None}
        spans = [s for s in (span_table.rows if span_table else []) if s.get("Device") == device]
        fig_id = f"memory-{i}"
        out["figures"][fig_id] = memory_figure(device, points, spans, steps, peak, origin)
        out["devices"].append({"device": device, "figure": fig_id, "points": len(points),
                               "spans": len(spans), "peak": peak})
    return out
