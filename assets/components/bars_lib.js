// Attention Lab bars: one horizontal bar per row, made of signed segments stacked from zero,
// with an optional total marker; shared by the one-chart component (bars.js) and the query
// inspector (inspector.js). Labels are inserted with textContent (never as HTML).
function drawBars(root, data) {
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  };
  const lo = Math.min(0, data.lo), hi = Math.max(0, data.hi);
  const span = hi - lo || 1;
  const pos = (v) => (100 * (v - lo)) / span;
  const box = el("div", "rows");
  data.rows.forEach((row) => {
    const line = el("div", "row");
    line.appendChild(el("div", "label", row.label));
    const track = el("div", "track");
    const zero = el("div", "zero");
    zero.style.left = pos(0) + "%";
    track.appendChild(zero);
    let up = 0, down = 0;
    row.segments.forEach((s) => {
      if (!s.value) return;
      const seg = el("div", "seg");
      const start = s.value > 0 ? up : down + s.value;
      if (s.value > 0) up += s.value; else down += s.value;
      seg.style.left = pos(start) + "%";
      seg.style.width = (100 * Math.abs(s.value)) / span + "%";
      seg.style.background = s.color;
      seg.title = (s.name ? s.name + ": " : "") + s.text;
      track.appendChild(seg);
    });
    if (row.total !== null && row.total !== undefined) {
      const mark = el("div", "total");
      mark.style.left = pos(row.total) + "%";
      track.appendChild(mark);
    }
    line.appendChild(track);
    line.appendChild(el("div", "value", row.value_text));
    box.appendChild(line);
  });
  const parts = [box];
  if (data.legend && data.legend.length) {
    const legend = el("div", "legend");
    data.legend.forEach((item) => {
      const it = el("span", "item");
      const sw = el("span", "swatch");
      sw.style.background = item.color;
      it.appendChild(sw);
      it.appendChild(el("span", null, item.name));
      legend.appendChild(it);
    });
    parts.push(legend);
  }
  if (data.table) {  // a screen reader reads the table (caption, headers, every value) instead of the bars
    parts.forEach((p) => p.setAttribute("aria-hidden", "true"));
    parts.push(barsTable(data.table));
  }
  root.replaceChildren(...parts);
}

// The bars' text alternative, visually hidden: a caption (what the bars show, the largest weights),
// column headers, one row per bar with its label as the row header (plain text from Python).
function barsTable(t) {
  const el = (tag, cls, value) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (value !== undefined && value !== null) e.textContent = value;
    return e;
  };
  const box = el("div", "sr-only");  // a table itself would not shrink to 1 px: it sits in a clipped box
  const table = el("table");
  box.appendChild(table);
  table.appendChild(el("caption", null, t.caption));
  const head = el("tr");
  t.head.forEach((h) => { const th = el("th", null, h); th.scope = "col"; head.appendChild(th); });
  table.appendChild(head);
  t.rows.forEach((row) => {
    const tr = el("tr");
    row.forEach((v, i) => {
      const c = el(i ? "td" : "th", null, v);
      if (!i) c.scope = "row";
      tr.appendChild(c);
    });
    table.appendChild(tr);
  });
  return box;
}
