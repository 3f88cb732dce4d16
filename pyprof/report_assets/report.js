// pyprof report page: renders the data that `pyprof report` embedded (prof's reports as JSON)
// into headline cards, Plotly charts and sortable, filterable tables. Runs offline: Plotly is
// inlined in the page, nothing is fetched.
"use strict";

const PYPROF = JSON.parse(document.getElementById("pyprof-data").textContent);

// Every number arrives formatted (pyprof/_units.py, prof's own rule): the page only shows it.

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
    card.append(el("div", { class: "value" }, c.text));
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
  const rows = spec.rows.map((r, k) => {
    const tr = el("tr");
    const text = spec.text[k];
    r.forEach((v, i) => {
      const c = spec.columns[i];
      const td = el("td", { class: (c.unit !== "text" ? "num" : "") + (c.long ? " long" : "") }, text[i]);
      if (c.long && v) td.title = String(v);
      tr.append(td);
    });
    tr._values = r;
    tr._text = text.concat(r.map((v) => (v === null ? "" : String(v)))).join("\u0001").toLowerCase();
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
