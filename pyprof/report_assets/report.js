// pyprof report page: renders the data that `pyprof report` embedded (prof's reports as JSON)
// into headline cards, Plotly charts and sortable, filterable tables. Runs offline: Plotly is
// inlined in the page, nothing is fetched.
"use strict";

const PYPROF = JSON.parse(document.getElementById("pyprof-data").textContent);

// One formatter per unit, so a number reads the same in every card and table.
function sig3(v) {
  const a = Math.abs(v);
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
}
function scaled(v, steps, base) {
  // steps: [[threshold, divisor, suffix], ...] largest first; picks the first that fits after
  // rounding, so 999.6 ns reads "1.00 µs", not "1000 ns".
  for (const [limit, div, suffix] of steps) {
    if (Math.abs(v) >= limit * 0.9995) return sig3(v / div) + " " + suffix;
  }
  // Below the first prefix a count of the base unit (ns, FLOP, B) is a whole number.
  return (Number.isInteger(v) ? String(v) : sig3(v)) + " " + base;
}
const FORMAT = {
  ns: (v) => scaled(v, [[1e9, 1e9, "s"], [1e6, 1e6, "ms"], [1e3, 1e3, "µs"]], "ns"),
  flop: (v) => scaled(v, [[1e15, 1e15, "PFLOP"], [1e12, 1e12, "TFLOP"], [1e9, 1e9, "GFLOP"], [1e6, 1e6, "MFLOP"], [1e3, 1e3, "kFLOP"]], "FLOP"),
  byte: (v) => scaled(v, [[1e12, 1e12, "TB"], [1e9, 1e9, "GB"], [1e6, 1e6, "MB"], [1e3, 1e3, "kB"]], "B"),
  flops: (v) => scaled(v, [[1e15, 1e15, "PFLOP/s"], [1e12, 1e12, "TFLOP/s"], [1e9, 1e9, "GFLOP/s"], [1e6, 1e6, "MFLOP/s"], [1e3, 1e3, "kFLOP/s"]], "FLOP/s"),
  tflops: (v) => FORMAT.flops(v * 1e12),
  bps: (v) => scaled(v, [[1e12, 1e12, "TB/s"], [1e9, 1e9, "GB/s"], [1e6, 1e6, "MB/s"], [1e3, 1e3, "kB/s"]], "B/s"),
  gbps: (v) => FORMAT.bps(v * 1e9),
  pct: (v) => v.toFixed(1) + " %",
  int: (v) => Math.round(v).toLocaleString("en-US"),
  ratio: (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(3)),
  text: (v) => String(v),
};
function formatValue(v, unit) {
  if (v === null || v === undefined || v === "") return "–";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return "–";
    if (v === 0 && unit !== "text" && unit !== "pct") return "0";
    return (FORMAT[unit] || FORMAT.text)(v);
  }
  return String(v);
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function renderCards() {
  const box = document.getElementById("headline-cards");
  for (const c of PYPROF.headline) {
    const card = el("div", { class: "card", "data-metric": c.id, "data-raw": c.value === null ? "" : String(c.value) });
    card.append(el("div", { class: "label" }, c.label));
    card.append(el("div", { class: "value" }, formatValue(c.value, c.unit)));
    if (c.sub) card.append(el("div", { class: "sub" }, c.sub));
    box.append(card);
  }
}

function renderNotes() {
  const ul = document.getElementById("notes-list");
  if (!PYPROF.notes.length) {
    document.getElementById("notes").style.display = "none";
    return;
  }
  for (const n of PYPROF.notes) ul.append(el("li", {}, n));
}

// A table that sorts on a header click (numbers by value) and filters rows on a text query.
function renderTable(id) {
  const spec = PYPROF.tables[id];
  const host = document.getElementById("table-" + id);
  if (!spec || !spec.rows.length) {
    host.append(el("p", { class: "empty" }, spec && spec.empty ? spec.empty : "nothing to show"));
    return;
  }
  const tools = el("div", { class: "table-tools" });
  const input = el("input", { type: "search", placeholder: "filter rows (text in any column)", "aria-label": "filter " + id });
  const count = el("span", {});
  tools.append(input, count);
  if (spec.note) tools.append(el("span", {}, spec.note));
  const table = el("table", { class: "data", "data-table": id });
  const thead = el("thead");
  const hr = el("tr");
  spec.columns.forEach((c, i) => {
    const numeric = c.unit !== "text";
    const th = el("th", { class: numeric ? "num" : "", "data-col": String(i), title: c.title || c.name }, c.label || c.name);
    hr.append(th);
  });
  thead.append(hr);
  const tbody = el("tbody");
  const rows = spec.rows.map((r) => {
    const tr = el("tr");
    r.forEach((v, i) => {
      const c = spec.columns[i];
      const td = el("td", { class: (c.unit !== "text" ? "num" : "") + (c.long ? " long" : "") }, formatValue(v, c.unit));
      if (c.long && v) td.title = String(v);
      tr.append(td);
    });
    tr._values = r;
    tr._text = r.map((v) => (v === null ? "" : String(v))).join("\u0001").toLowerCase();
    return tr;
  });
  rows.forEach((tr) => tbody.append(tr));
  table.append(thead, tbody);
  const wrap = el("div", { class: "table-wrap" });
  wrap.append(table);
  host.append(tools, wrap);
  const update = () => {
    const q = input.value.trim().toLowerCase();
    let shown = 0;
    for (const tr of rows) {
      const ok = !q || tr._text.includes(q);
      tr.style.display = ok ? "" : "none";
      shown += ok ? 1 : 0;
    }
    count.textContent = shown + " of " + rows.length + " rows";
  };
  input.addEventListener("input", update);
  update();
  let sortCol = -1, sortDir = 1;
  hr.addEventListener("click", (ev) => {
    const th = ev.target.closest("th");
    if (!th) return;
    const col = Number(th.dataset.col);
    sortDir = col === sortCol ? -sortDir : (spec.columns[col].unit === "text" ? 1 : -1);
    sortCol = col;
    for (const h of hr.children) h.classList.remove("sorted-asc", "sorted-desc");
    th.classList.add(sortDir > 0 ? "sorted-asc" : "sorted-desc");
    const key = (tr) => tr._values[col];
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      if (typeof x === "number" && typeof y === "number") return (x - y) * sortDir;
      return String(x).localeCompare(String(y)) * sortDir;
    });
    rows.forEach((tr) => tbody.append(tr));
  });
}

function renderFigure(id) {
  const fig = PYPROF.figures[id];
  const host = document.getElementById("fig-" + id);
  if (!fig) {
    const why = (PYPROF.figure_notes || {})[id] || "nothing to show";
    host.classList.remove("chart");
    host.append(el("p", { class: "empty" }, why));
    return;
  }
  Plotly.newPlot(host, fig.data, fig.layout, { responsive: true, displaylogo: false });
}

renderCards();
renderNotes();
for (const id of Object.keys(PYPROF.tables)) renderTable(id);
for (const id of PYPROF.figure_ids) renderFigure(id);
document.body.dataset.rendered = "yes";
