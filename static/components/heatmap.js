// Small helpers every Attention Lab component shares (Python puts this file in front of each).
// MathML comes from fixed text (generated from attention_lab/formulas.py); learner text only ever goes in as textContent.
const MATH_NS = "http://www.w3.org/1998/Math/MathML";

function mathElement(body) {
  const doc = new DOMParser().parseFromString('<math xmlns="' + MATH_NS + '">' + body + "</math>", "application/xml");
  if (doc.getElementsByTagName("parsererror").length) return null;
  return document.importNode(doc.documentElement, true);
}

function text(tag, cls, value) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (value !== undefined && value !== null) e.textContent = value;
  return e;
}


// The component's one root element (class cls), made on its first draw and reused on every rerun.
function ownRoot(parentElement, cls) {
  let root = parentElement.querySelector("div." + cls);
  if (!root) {
    root = document.createElement("div");
    root.className = cls;
    parentElement.appendChild(root);
  }
  return root;
}

// base64 text → its bytes
function base64Bytes(b64) {
  const raw = atob(b64);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

// A newly shown step of the step-through (token: its name, or "" for none): scrolled into view
// and focused, so the class sees it and keyboard users follow it. Only when the token changes
// (a rerun for another reason leaves the page where it is).
function bringIntoView(root, el, token) {
  if ((root.dataset.focused || "") === (token || "")) return;
  root.dataset.focused = token || "";
  if (!token || !el) return;
  el.tabIndex = -1;
  requestAnimationFrame(() => {
    el.scrollIntoView({ block: "nearest", inline: "nearest" });
    el.focus({ preventScroll: true });
  });
}

// ---- pictures for slides (the maps' and the charts' SVG / PNG buttons)
// The shipped Korean font in slices for pictures (static/svg-font/, scripts/make_svg_font.py): a
// manifest of files and their unicode-range, served by the app (.streamlit/config.toml). A picture
// carries only the slices that hold its characters.
const SVG_FONT_DIR = "app/static/svg-font/";
const KOREAN = /[\u1100-\u11ff\u3000-\u303f\u3130-\u318f\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff]/;

function fetchBytes(url) {
  return fetch(new URL(url, document.baseURI))
    .then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error(url + ": " + r.status))));
}

function base64(buf) {
  const bytes = new Uint8Array(buf);
  let raw = "";
  for (let i = 0; i < bytes.length; i += 0x8000) raw += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(raw);
}

// "U+AC00,U+AC02-AC05" → [[0xAC00, 0xAC00], [0xAC02, 0xAC05]]
function parseRange(range) {
  return range.split(",").map((part) => {
    const [a, b] = part.trim().slice(2).split("-");
    return [parseInt(a, 16), parseInt(b || a, 16)];
  });
}

function fontSlices() {
  if (!window.__attentionLabSvgFont) {
    window.__attentionLabSvgFont = fetchBytes(SVG_FONT_DIR + "slices.json")
      .then((buf) => JSON.parse(new TextDecoder().decode(buf)).slices
        .map((s) => ({ file: s.file, range: s.unicode_range, runs: parseRange(s.unicode_range) })))
      .catch(() => { window.__attentionLabSvgFont = null; return null; });
  }
  return window.__attentionLabSvgFont;
}

// The font faces a picture's text needs: [{range, b64}], one per slice that holds one of its characters
// (each file fetched once); null when the text has no Korean or the slices cannot be read.
function shippedFont(pictureText) {
  if (!KOREAN.test(pictureText)) return Promise.resolve(null);
  return fontSlices().then((slices) => {
    if (!slices) return null;
    const used = new Set();
    for (const ch of pictureText) {
      const cp = ch.codePointAt(0);
      if (cp < 0x1100) continue;  // Latin text keeps the viewer's own font
      const k = slices.findIndex((s) => s.runs.some(([a, b]) => a <= cp && cp <= b));
      if (k >= 0) used.add(k);
    }
    const cache = (window.__attentionLabSvgFontFiles = window.__attentionLabSvgFontFiles || {});
    return Promise.all([...used].sort((a, b) => a - b).map((k) => {
      const s = slices[k];
      if (!cache[s.file]) {
        cache[s.file] = fetchBytes(SVG_FONT_DIR + s.file).then(base64)
          .catch((e) => { delete cache[s.file]; throw e; });  // the next click tries again
      }
      return cache[s.file].then((b64) => ({ range: s.range, b64 }));
    }));
  }).catch(() => null);
}

function download(name, blob) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

// The CSS that puts the font faces of :func:`shippedFont` inside an SVG picture: its Korean renders
// on a machine that has no Korean font.
function fontFaceStyle(faces) {
  return faces.map((f) => "@font-face { font-family: 'attention-lab-kr'; font-weight: 400; unicode-range: " +
    f.range + "; src: url(data:font/woff2;base64," + f.b64 + ") format('woff2'); }").join("\n");
}
// Attention Lab heatmaps: the drawing shared by the one-map component (heatmap.js) and the
// pipeline's several-panel component (maps.js); Python joins this file with either.
// A labelled table of coloured cells up to 16 rows/columns, one canvas up to 64. Everything the
// learner typed is inserted with textContent (never as HTML). onCell([row, column]) is called
// when a clickable cell is clicked.
function drawMap(root, data, onCell) {
  const a11y = data.a11y || {};
  const keep = mapKeep(a11y.id || "");  // kept across redraws and remounts: the focused cell, the table toggle
  // a canvas map's colours and masked cells come as base64 bytes (r, g, b per cell; 0/1 per cell)
  if (typeof data.rgb === "string") data.rgb = base64Bytes(data.rgb);
  if (typeof data.masked === "string") data.masked = base64Bytes(data.masked);
  if (typeof data.z === "string") {  // a canvas map's values: float64 bytes, row by row (NaN: a −∞ cell)
    const f = new Float64Array(base64Bytes(data.z).buffer), m = data.xs.length;
    data.z = data.ys.map((_, i) => Array.from(f.subarray(i * m, (i + 1) * m), (v) => (Number.isNaN(v) ? null : v)));
  }
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  };
  root.alToken = null;  // a newer draw cancels a pending redraw
  root.classList.toggle("present", !!data.present);  // presenter view: larger type and cells
  root.classList.toggle("compact", !!data.compact && !data.present);  // beside the controls: lower rows
  root.classList.toggle("hc", !!data.hc);  // the high-contrast setting
  root.classList.toggle("large", !!data.large);
  if (data.large) {  // over 64 rows/columns the map is a plotly image: this is its text alternative
    drawLarge(root, data, onCell, keep);
    return;
  }
  if (!data.text) {
    drawCanvas(root, data, onCell, true);
    return;
  }
  const table = el("table", data.clickable ? "clickable" : "");
  const caption = el("caption", "sr-only", a11y.name || "");  // the map's accessible name: what it is, its shape
  if (data.clickable && a11y.keys) caption.appendChild(el("span", null, " " + a11y.keys));
  table.appendChild(caption);
  const head = el("tr");
  head.appendChild(el("th", "corner", data.y_title + " ↓  " + data.x_title + " →"));
  data.xs.forEach((x, j) => {
    const th = el("th", data.vertical ? "col vertical" : "col", x);
    th.scope = "col";
    if (data.highlight_col === j) th.classList.add("hl");
    head.appendChild(th);
  });
  if (data.side) head.appendChild(el("th", "side-h", data.side_title || ""));
  table.appendChild(head);
  data.ys.forEach((y, i) => {
    const tr = el("tr");
    if (data.highlight_row === i) tr.className = "hl";
    const rowHead = el("th", "row", y);
    rowHead.scope = "row";
    tr.appendChild(rowHead);
    data.text[i].forEach((t, j) => {
      const td = el("td", t === "−∞" ? "masked" : null, data.show_text ? t : "");
      td.style.background = data.bg[i][j];
      td.style.color = data.fg[i][j];
      td.dataset.i = i;
      td.dataset.j = j;
      if (data.highlight_col === j) td.classList.add("hlc");
      if (data.mark && data.mark[0] === i && data.mark[1] === j) td.classList.add("mark");
      tr.appendChild(td);
    });
    if (data.side) tr.appendChild(el("td", "side", data.side[i]));
    table.appendChild(tr);
  });
  root.replaceChildren(table);
  if (data.present) fitTable(root, table);
  addExport(root, data);
  root.dataset.z = JSON.stringify(data.z);
  if (data.clickable) gridKeys(table, data, onCell, keep);
  focusableWhenScrolling(root, a11y.name);
  const tip = (e) => {
    const td = e.target.closest("td[data-i]");
    if (!td) return;
    const i = +td.dataset.i, j = +td.dataset.j;
    td.title = data.y_title + ": " + data.ys[i] + "\n" + data.x_title + ": " + data.xs[j] + "\n" + data.text[i][j];
  };
  table.addEventListener("mouseover", tip);
  if (data.clickable) {
    table.addEventListener("click", (e) => {
      const td = e.target.closest("td[data-i]");
      if (td) onCell([+td.dataset.i, +td.dataset.j]);
    });
  }
}

// Presenter view: one scale for the table's type and cells (--al-fit), the largest of 1.6 … 0.25
// at which the table fits its box's width and the window's height (room left for the panel's
// title, formula and shape line): nothing cut at any token count, small maps drawn large.
function fitTable(root, table) {
  const avail = root.clientWidth;
  if (!avail) return;  // not laid out (a closed tab): drawn at the default size
  const maxH = Math.max(160, window.innerHeight - 200);
  let scale = 1.6;
  root.style.setProperty("--al-fit", String(scale));
  while (scale > 0.25 && (table.offsetWidth > avail || table.offsetHeight > maxH)) {
    scale *= 0.92;
    root.style.setProperty("--al-fit", scale.toFixed(3));
  }
  root.dataset.fit = scale.toFixed(3);
}

// Large maps (values not printed in cells): one canvas instead of thousands of table cells.
// Colours come from the server (data.rgb, flat r,g,b bytes per cell); labels are drawn as canvas
// text; the hovered cell's query, key and value show in a line under the map.
function drawCanvas(root, data, onCell, waitForFont) {
  const n = data.ys.length, m = data.xs.length;
  const font = '"Source Sans", "attention-lab-kr", "Noto Sans CJK KR", sans-serif';
  const width = Math.max(240, Math.floor(root.getBoundingClientRect().width) || 700);
  const probe = document.createElement("canvas").getContext("2d");
  probe.font = "11px " + font;
  const textW = (list) => list.reduce((w, s) => Math.max(w, probe.measureText(s).width), 0);
  const left = Math.min(140, Math.ceil(textW(data.ys)) + 10);
  const sideW = data.side ? Math.min(90, Math.ceil(textW(data.side)) + 10) : 0;
  const cell = Math.max(3, Math.min(24, Math.floor((width - left - sideW - 4) / m)));
  const labelsFit = cell >= 11;  // below that, labels would overlap: every k-th label is drawn
  const step = labelsFit ? 1 : Math.ceil(11 / cell);
  const top = Math.min(120, Math.ceil(textW(data.xs)) + 10) + 16;
  const W = left + m * cell + sideW + 4, H = top + n * cell + 4;
  const dpr = window.devicePixelRatio || 1;
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(H * dpr);
  canvas.style.width = W + "px";
  canvas.style.height = H + "px";
  canvas.className = data.clickable ? "clickable" : "";
  const a11y = data.a11y || {}, keep = mapKeep(a11y.id || "");
  canvas.tabIndex = 0;  // focusable: a keyboard reaches it, and with a clickable map moves a cell cursor
  canvas.setAttribute("role", data.clickable ? "application" : "img");
  canvas.setAttribute("aria-label", (a11y.name || "") + (data.clickable && a11y.keys ? " " + a11y.keys : ""));
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  ctx.font = "11px " + font;
  // the high-contrast setting: black text, every cell outlined in black (the grid is laid on black,
  // with a gap down to 4-pixel cells), masked cells cross-hatched in black
  const hc = !!data.hc;
  const ink = hc ? { title: "#000000", label: "#000000", side: "#000000", hatch: "#000000" }
    : { title: "#64748b", label: "#334155", side: "#475569", hatch: "#475569" };
  ctx.fillStyle = ink.title;
  ctx.textBaseline = "top";
  ctx.fillText(data.y_title + " ↓  " + data.x_title + " →", 0, 0);
  const rgb = data.rgb, gap = cell >= (hc ? 4 : 6) ? 1 : 0;
  if (hc) {
    ctx.fillStyle = "#000000";
    ctx.fillRect(left - 1, top - 1, m * cell + 1, n * cell + 1);
  }
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < m; j++) {
      const k = 3 * (i * m + j);
      ctx.fillStyle = "rgb(" + rgb[k] + "," + rgb[k + 1] + "," + rgb[k + 2] + ")";
      ctx.fillRect(left + j * cell, top + i * cell, cell - gap, cell - gap);
    }
  }
  if (data.masked) {  // masked cells: hatched as well as grey, so colour is not the only sign
    ctx.strokeStyle = ink.hatch;
    ctx.lineWidth = hc ? 1.5 : 1;
    ctx.beginPath();
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < m; j++) {
        if (!data.masked[i * m + j] || cell < 5) continue;
        const x = left + j * cell, y = top + i * cell, s = cell - gap;
        ctx.moveTo(x, y + s);
        ctx.lineTo(x + s, y);
        if (hc) {  // a cross: a second sign besides the grey, bolder than the plain hatch
          ctx.moveTo(x, y);
          ctx.lineTo(x + s, y + s);
        }
      }
    }
    ctx.stroke();
  }
  ctx.fillStyle = ink.label;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  data.ys.forEach((y, i) => {
    if (i % step === 0 || data.highlight_row === i) {
      ctx.fillStyle = data.highlight_row === i ? "#b45309" : ink.label;
      ctx.fillText(y, left - 4, top + i * cell + cell / 2);
    }
  });
  ctx.textAlign = "left";
  data.xs.forEach((x, j) => {
    if (j % step !== 0 && data.highlight_col !== j) return;
    ctx.save();
    ctx.translate(left + j * cell + cell / 2, top - 4);
    ctx.rotate(-Math.PI / 2);
    ctx.fillStyle = data.highlight_col === j ? "#b45309" : ink.label;
    ctx.fillText(x, 0, 0);
    ctx.restore();
  });
  if (data.side) {
    ctx.fillStyle = ink.side;
    data.side.forEach((s, i) => {
      if (i % step === 0) ctx.fillText(s, left + m * cell + 6, top + i * cell + cell / 2);
    });
  }
  ctx.lineWidth = 2;
  if (data.highlight_row !== null && data.highlight_row !== undefined) {
    ctx.strokeStyle = "#f59e0b";
    ctx.strokeRect(left - 1, top + data.highlight_row * cell - 1, m * cell + 1, cell + 1);
  }
  if (data.highlight_col !== null && data.highlight_col !== undefined) {
    ctx.strokeStyle = "#f59e0b";
    ctx.strokeRect(left + data.highlight_col * cell - 1, top - 1, cell + 1, n * cell + 1);
  }
  if (data.mark) {
    ctx.strokeStyle = "#dc2626";
    ctx.strokeRect(left + data.mark[1] * cell - 1, top + data.mark[0] * cell - 1, cell + 1, cell + 1);
  }
  const info = document.createElement("div");
  info.className = "hover";
  info.setAttribute("aria-live", "polite");  // the cell under the keyboard cursor is read out
  info.textContent = "\u00a0";
  const cellAt = (e) => {
    const r = canvas.getBoundingClientRect();
    const j = Math.floor((e.clientX - r.left - left) / cell), i = Math.floor((e.clientY - r.top - top) / cell);
    return i >= 0 && i < n && j >= 0 && j < m ? [i, j] : null;
  };
  const valueText = (i, j) => {
    const v = data.z[i][j];
    if (v === null) return data.masked && data.masked[i * m + j] ? "−∞" : "NaN";
    return Number(v).toFixed(data.decimals);
  };
  const describe = (c) => data.y_title + ": " + data.ys[c[0]] + "   " + data.x_title + ": " + data.xs[c[1]] +
      "   " + valueText(c[0], c[1]) + (data.masked && data.masked[c[0] * m + c[1]] ? " (" + (a11y.masked || "") + ")" : "");
  canvas.addEventListener("mousemove", (e) => {
    const c = cellAt(e);
    info.textContent = c ? describe(c) : "\u00a0";
  });
  if (data.clickable) {
    canvas.addEventListener("click", (e) => {
      const c = cellAt(e);
      if (c) onCell(c);
    });
  }
  const cursor = document.createElement("div");  // the keyboard's cell, drawn over the canvas
  cursor.className = "cursor";
  cursor.style.width = cursor.style.height = Math.max(cell, 6) + "px";
  root.replaceChildren(canvas, cursor, info);
  canvasKeys(canvas, cursor, info, { n, m, left, top, cell, describe }, data, onCell, keep);
  addExport(root, data);
  addTableToggle(root, data, keep);
  root.dataset.z = JSON.stringify(data.z);
  root.dataset.geom = JSON.stringify({ left, top, cell });  // where the cells are, for tests
  // canvas text does not re-render when a web font arrives: draw once more when the Korean font is in
  if (waitForFont && document.fonts && !document.fonts.check("11px attention-lab-kr", "가")) {
    const token = {};
    root.alToken = token;
    document.fonts.load("11px attention-lab-kr", "가")
      .then(() => { if (root.alToken === token) drawCanvas(root, data, onCell, false); })
      .catch(() => {});
  }
}

// ---- keyboard and screen readers (WCAG 2.1.1, 1.3.1, 4.1.2): the same paths for every map

// per map (its registry key): the cell the keyboard is on, whether to focus it again after the
// rerun its Enter caused, whether its table is shown. Kept on window: it outlives a remount.
function mapKeep(id) {
  const all = (window.__attentionLabMaps = window.__attentionLabMaps || {});
  return (all[id] = all[id] || { cell: null, refocus: false, table: false });
}

const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

// the next cell for a key (arrows, Home, End), or null when the key is not a move
function moved(key, c, n, m, ctrl) {
  if (MOVES[key]) return [Math.max(0, Math.min(n - 1, c[0] + MOVES[key][0])), Math.max(0, Math.min(m - 1, c[1] + MOVES[key][1]))];
  if (key === "Home") return ctrl ? [0, 0] : [c[0], 0];
  if (key === "End") return ctrl ? [n - 1, m - 1] : [c[0], m - 1];
  return null;
}

// A clickable table is an ARIA grid: one cell in the Tab order (roving tabindex), arrows move it,
// Enter or Space does what a click does, Esc leaves the grid (focus goes to the map's box).
function gridKeys(table, data, onCell, keep) {
  table.setAttribute("role", "grid");
  const n = data.ys.length, m = data.xs.length;
  const cellEl = (c) => table.querySelector('td[data-i="' + c[0] + '"][data-j="' + c[1] + '"]');
  let at = keep.cell && keep.cell[0] < n && keep.cell[1] < m ? keep.cell : (data.mark || [0, 0]);
  if (!cellEl(at)) at = [0, 0];
  table.querySelectorAll("td[data-i]").forEach((td) => { td.tabIndex = -1; });
  cellEl(at).tabIndex = 0;
  const go = (c) => {
    cellEl(at).tabIndex = -1;
    at = c;
    keep.cell = c;
    const td = cellEl(c);
    td.tabIndex = 0;
    td.focus();
  };
  table.addEventListener("keydown", (e) => {
    const td = e.target.closest("td[data-i]");
    if (!td) return;
    const c = [+td.dataset.i, +td.dataset.j];
    const next = moved(e.key, c, n, m, e.ctrlKey || e.metaKey);
    if (next) go(next);
    else if (e.key === "Enter" || e.key === " ") { keep.cell = c; keep.refocus = true; onCell(c); }
    else if (e.key === "Escape") { const box = table.parentElement; box.tabIndex = -1; box.focus(); }
    else return;
    e.preventDefault();  // the page's step-through keys leave a handled key alone
    e.stopPropagation();
  });
  table.addEventListener("click", (e) => {
    const td = e.target.closest("td[data-i]");
    if (td) keep.cell = [+td.dataset.i, +td.dataset.j];
  });
  if (keep.refocus) { keep.refocus = false; cellEl(at).focus({ preventScroll: true }); }
}

// A canvas map: focusable; on a clickable one the arrows move a drawn cell cursor, the live line
// under the map reads the cell out, Enter does what a click does, Esc leaves.
function canvasKeys(canvas, cursor, info, g, data, onCell, keep) {
  let at = keep.cell && keep.cell[0] < g.n && keep.cell[1] < g.m ? keep.cell : (data.mark || [0, 0]);
  const place = () => {
    cursor.style.left = canvas.offsetLeft + g.left + at[1] * g.cell - 2 + "px";
    cursor.style.top = canvas.offsetTop + g.top + at[0] * g.cell - 2 + "px";
    info.textContent = g.describe(at);
  };
  canvas.addEventListener("focus", () => { if (data.clickable) { cursor.classList.add("on"); place(); } });
  canvas.addEventListener("blur", () => cursor.classList.remove("on"));
  if (!data.clickable) return;
  canvas.addEventListener("keydown", (e) => {
    const next = moved(e.key, at, g.n, g.m, e.ctrlKey || e.metaKey);
    if (next) { at = next; keep.cell = next; place(); }
    else if (e.key === "Enter" || e.key === " ") { keep.cell = at; keep.refocus = true; onCell(at); }
    else if (e.key === "Escape") canvas.blur();
    else return;
    e.preventDefault();
    e.stopPropagation();
  });
  canvas.addEventListener("click", (e) => {
    const r = canvas.getBoundingClientRect();
    const j = Math.floor((e.clientX - r.left - g.left) / g.cell), i = Math.floor((e.clientY - r.top - g.top) / g.cell);
    if (i >= 0 && i < g.n && j >= 0 && j < g.m) keep.cell = [i, j];
  });
  if (keep.refocus) { keep.refocus = false; canvas.focus({ preventScroll: true }); }
}

// A box that scrolls sideways (a wide map on a phone) must be reachable from the keyboard (2.1.1).
function focusableWhenScrolling(root, name) {
  const check = () => {
    const scrolls = root.scrollWidth > root.clientWidth + 1;
    if (scrolls && !root.hasAttribute("tabindex")) {
      root.tabIndex = 0;
      root.setAttribute("role", "region");
      root.setAttribute("aria-label", name || "");
    } else if (!scrolls && root.getAttribute("role") === "region") {
      root.removeAttribute("tabindex");
      root.removeAttribute("role");
      root.removeAttribute("aria-label");
    }
  };
  check();
  if (!root.alResize && window.ResizeObserver) {
    root.alResize = new ResizeObserver(check);
    root.alResize.observe(root);
  }
}

// The values of a canvas map as a real table (token headers), shown by its "Table" button: a screen
// reader's text alternative, and exact numbers for anyone. Built only when asked (up to 64 × 64 cells).
function valuesTable(data) {
  const table = text("table", "values");
  table.appendChild(text("caption", "sr-only", (data.a11y && data.a11y.name) || ""));
  const head = text("tr");
  head.appendChild(text("th", "corner", data.y_title + " ↓  " + data.x_title + " →"));
  data.xs.forEach((x) => { const th = text("th", null, x); th.scope = "col"; head.appendChild(th); });
  table.appendChild(head);
  data.ys.forEach((y, i) => {
    const tr = text("tr");
    const th = text("th", null, y);
    th.scope = "row";
    tr.appendChild(th);
    data.xs.forEach((_, j) => tr.appendChild(text("td", null, cellText(data, i, j))));
    table.appendChild(tr);
  });
  return table;
}

// The "Table" button and the box it fills with ``build(data)`` (pressed or not: ``keep.table``, kept
// across redraws); returns the box and a function that draws the current state.
function tableToggle(bar, data, keep, build) {
  const a11y = data.a11y || {};
  const b = text("button", "table-toggle", a11y.table || "Table");
  b.type = "button";
  b.title = a11y.table_help || "";
  const box = text("div", "values-box");
  const show = (on) => {
    keep.table = on;
    b.setAttribute("aria-pressed", on ? "true" : "false");
    box.replaceChildren(...(on ? [build(data)] : []));
  };
  b.addEventListener("click", () => show(!keep.table));
  bar.appendChild(b);
  return { box, show: () => show(keep.table) };
}

function addTableToggle(root, data, keep) {
  let bar = root.querySelector(".export");
  if (!bar) { bar = text("div", "export"); root.appendChild(bar); }
  const toggle = tableToggle(bar, data, keep, valuesTable);
  root.appendChild(toggle.box);
  toggle.show();
}

// ---- a large map (over 64 rows/columns): the plotly image above is named (its alt); this element is
// its text alternative — a summary table behind a button (each row's largest values, or every value
// of a narrow map; all of them: the CSV download under it) — and, on a clickable map, a cell picker:
// row and column numbers, Enter (or the button) does what a click on a smaller map does.
function drawLarge(root, data, onCell, keep) {
  const bar = text("div", "export");
  const toggle = tableToggle(bar, data, keep, summaryTable);
  root.replaceChildren(...(data.clickable ? [cellPicker(data, onCell, keep), bar, toggle.box] : [bar, toggle.box]));
  toggle.show();
}

function summaryTable(data) {
  const a11y = data.a11y || {}, s = data.summary;
  const table = text("table", "values summary");
  table.appendChild(text("caption", null, (a11y.name || "") + ". " + (a11y.caption || "")));
  const head = text("tr");
  head.appendChild(text("th", "corner", data.y_title + " ↓"));
  const masked = s.masked.some((c) => c > 0);
  const cols = s.all ? data.xs : (a11y.rank || []).slice(0, s.text[0] ? s.text[0].length : 0);
  cols.forEach((x) => { const th = text("th", null, x); th.scope = "col"; head.appendChild(th); });
  if (masked) { const th = text("th", null, a11y.masked_head || "−∞"); th.scope = "col"; head.appendChild(th); }
  table.appendChild(head);
  data.ys.forEach((y, i) => {
    const tr = text("tr");
    const th = text("th", null, y);
    th.scope = "row";
    tr.appendChild(th);
    s.text[i].forEach((v, r) => tr.appendChild(text("td", null, s.all ? v : data.xs[s.cols[i][r]] + ": " + v)));
    if (masked) tr.appendChild(text("td", null, String(s.masked[i])));
    table.appendChild(tr);
  });
  return table;
}

function cellPicker(data, onCell, keep) {
  const a11y = data.a11y || {}, n = data.ys.length, m = data.xs.length;
  const box = text("fieldset", "picker");
  box.appendChild(text("legend", null, a11y.pick || ""));
  const start = keep.cell && keep.cell[0] < n && keep.cell[1] < m ? keep.cell
    : (data.mark || [data.highlight_row || 0, data.highlight_col || 0]);
  const number = (label, value, last, name) => {
    const wrap = text("label");
    wrap.appendChild(text("span", null, label));
    const input = document.createElement("input");
    Object.assign(input, { type: "number", min: "0", max: String(last), step: "1", value: String(value) });
    input.dataset.part = name;
    wrap.appendChild(input);
    box.appendChild(wrap);
    return input;
  };
  const row = number(a11y.row || "row", start[0], n - 1, "row"), col = number(a11y.col || "column", start[1], m - 1, "col");
  const go = text("button", "go", a11y.go || "OK");
  go.type = "button";
  go.dataset.part = "go";
  box.appendChild(go);
  const live = text("div", "hover");
  live.setAttribute("aria-live", "polite");  // the cell the numbers name is read out
  box.appendChild(live);
  const clamp = (v, last) => Math.max(0, Math.min(last, Math.round(Number(v)) || 0));
  const cell = () => [clamp(row.value, n - 1), clamp(col.value, m - 1)];
  const say = () => {
    const c = cell();
    live.textContent = data.y_title + ": " + data.ys[c[0]] + "   " + data.x_title + ": " + data.xs[c[1]];
  };
  const choose = (part) => {
    const c = cell();
    row.value = String(c[0]);
    col.value = String(c[1]);
    keep.cell = c;
    keep.refocus = part;  // the rerun redraws this element: the focus goes back to the same box
    onCell(c);
  };
  for (const input of [row, col]) {
    input.addEventListener("input", say);
    input.addEventListener("keydown", (e) => {
      if (e.key !== "Enter") return;
      e.preventDefault();
      choose(input.dataset.part);
    });
  }
  go.addEventListener("click", () => choose("go"));
  say();
  if (keep.refocus) {
    const part = keep.refocus;
    keep.refocus = false;
    const again = box.querySelector('[data-part="' + part + '"]');
    if (again) requestAnimationFrame(() => again.focus({ preventScroll: true }));
  }
  return box;
}

// ---- pictures for slides: the map as SVG (labels and values as text) or PNG, in one click
const FONT = '"Source Sans", "attention-lab-kr", "Noto Sans CJK KR", sans-serif';

function cellColour(data, i, j) {
  if (data.bg) return data.bg[i][j];
  const m = data.xs.length, k = 3 * (i * m + j);
  return "rgb(" + data.rgb[k] + "," + data.rgb[k + 1] + "," + data.rgb[k + 2] + ")";
}

function cellText(data, i, j) {
  if (data.text) return data.text[i][j];
  const v = data.z[i][j];
  if (v === null) return data.masked && data.masked[i * data.xs.length + j] ? "−∞" : "NaN";
  return Number(v).toFixed(data.decimals);
}

// One geometry for both pictures: where the title, labels and cells go. Column labels stand
// upright or turned as on screen (data.vertical: the table's writing-mode columns).
function geometry(data) {
  const n = data.ys.length, m = data.xs.length;
  const probe = document.createElement("canvas").getContext("2d");
  probe.font = "13px " + FONT;
  const textW = (list) => list.reduce((w, s) => Math.max(w, probe.measureText(String(s)).width), 0);
  const values = [];
  for (let i = 0; i < n; i++) for (let j = 0; j < m; j++) values.push(cellText(data, i, j));
  const colW = data.vertical ? 0 : Math.ceil(textW(data.xs)) + 10;  // upright labels: as wide as the longest
  const cell = Math.max(28, Math.ceil(textW(values)) + 10, colW);
  const left = Math.ceil(textW(data.ys)) + 16, top = 44 + (data.vertical ? Math.ceil(textW(data.xs)) : 16) + 10;
  const sideW = data.side ? Math.ceil(textW(data.side)) + 16 : 0;
  const W = Math.max(left + m * cell + sideW + 8, Math.ceil(textW([data.title || ""]) * 1.2) + 16);
  return { n, m, cell, left, top, W, H: top + n * cell + 8 };
}

// Every piece of the picture as (kind, attributes, text): drawn as SVG elements or on a canvas.
function pieces(data, g) {
  const out = [["rect", { x: 0, y: 0, w: g.W, h: g.H, fill: "#ffffff" }]];
  out.push(["text", { x: 8, y: 18, size: 15, bold: true, fill: "#0f172a" }, data.title || ""]);
  out.push(["text", { x: 8, y: 36, size: 11, fill: "#64748b" }, data.y_title + " ↓  " + data.x_title + " →"]);
  data.xs.forEach((x, j) => out.push(["text", { x: g.left + j * g.cell + (g.cell - 2) / 2, y: g.top - (data.vertical ? 6 : 12),
                                                size: 13, fill: "#334155", rotate: !!data.vertical,
                                                anchor: data.vertical ? "start" : "middle" }, x]));
  data.ys.forEach((y, i) => {
    const cy = g.top + i * g.cell + (g.cell - 2) / 2;
    out.push(["text", { x: g.left - 8, y: cy, size: 13, fill: "#334155", anchor: "end" }, y]);
    for (let j = 0; j < g.m; j++) {
      out.push(["rect", { x: g.left + j * g.cell, y: g.top + i * g.cell, w: g.cell - 2, h: g.cell - 2, fill: cellColour(data, i, j) }]);
      out.push(["text", { x: g.left + j * g.cell + (g.cell - 2) / 2, y: cy, size: 12, anchor: "middle",
                          fill: data.fg ? data.fg[i][j] : "#0f172a" }, cellText(data, i, j)]);
    }
    if (data.side) out.push(["text", { x: g.left + g.m * g.cell + 6, y: cy, size: 12, fill: "#475569" }, data.side[i]]);
  });
  return out;
}

// SVG built with DOM calls: every label is a text node, so HTML in a token stays text.
// faces (from shippedFont in dom_lib.js: the slices of the shipped Korean font that hold the picture's characters,
// each {range, b64}; empty or null without Korean) go inside as @font-face rules with their
// unicode-range: the picture's Korean renders on a machine that has no Korean font.
function buildSvg(data, faces) {
  const NS = "http://www.w3.org/2000/svg", g = geometry(data);
  const svg = document.createElementNS(NS, "svg");
  for (const [k, v] of [["xmlns", NS], ["width", g.W], ["height", g.H], ["viewBox", "0 0 " + g.W + " " + g.H]]) {
    svg.setAttribute(k, v);
  }
  if (faces && faces.length) {
    const style = document.createElementNS(NS, "style");
    style.textContent = fontFaceStyle(faces);
    svg.appendChild(style);
  }
  for (const [kind, a, text] of pieces(data, g)) {
    const e = document.createElementNS(NS, kind);
    if (kind === "rect") {
      for (const [k, v] of [["x", a.x], ["y", a.y], ["width", a.w], ["height", a.h], ["fill", a.fill], ["rx", 3]]) e.setAttribute(k, v);
    } else {
      const attrs = { x: a.x, y: a.y, fill: a.fill, "font-family": FONT, "font-size": a.size, "dominant-baseline": "middle",
                      "text-anchor": a.anchor || "start" };
      if (a.bold) attrs["font-weight"] = 700;
      if (a.rotate) attrs.transform = "rotate(-90 " + a.x + " " + a.y + ")";
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      e.textContent = String(text);
    }
    svg.appendChild(e);
  }
  return { svg, W: g.W, H: g.H };
}

// PNG drawn on a canvas, which uses the page's fonts (the shipped Korean font included), at
// ``scale`` pixels per CSS pixel (2 or 3: sharp on a slide).
function buildPng(data, scale, done) {
  const g = geometry(data), c = document.createElement("canvas");
  c.width = g.W * scale;
  c.height = g.H * scale;
  const ctx = c.getContext("2d");
  ctx.scale(scale, scale);
  for (const [kind, a, text] of pieces(data, g)) {
    ctx.fillStyle = a.fill;
    if (kind === "rect") { ctx.fillRect(a.x, a.y, a.w, a.h); continue; }
    ctx.font = (a.bold ? "700 " : "") + a.size + "px " + FONT;
    ctx.textBaseline = "middle";
    ctx.textAlign = a.anchor === "end" ? "right" : a.anchor === "middle" ? "center" : "left";
    if (a.rotate) {
      ctx.save();
      ctx.translate(a.x, a.y);
      ctx.rotate(-Math.PI / 2);
      ctx.fillText(String(text), 0, 0);
      ctx.restore();
    } else {
      ctx.fillText(String(text), a.x, a.y);
    }
  }
  c.toBlob(done, "image/png");
}

const PNG_SCALES = [2, 3];  // a PNG's pixels per CSS pixel: the choice under every map

function pictureText(data) {
  return [data.title, data.x_title, data.y_title, ...data.xs, ...data.ys, ...(data.side || [])].join(" ");
}

function addExport(root, data) {
  if (!data.export) return;
  const bar = document.createElement("div");
  bar.className = "export";
  const name = (data.export.file || "attention-map").replace(/[^\w.-]+/g, "-");
  const svgText = (faces) => new XMLSerializer().serializeToString(buildSvg(data, faces).svg);
  const mk = (label, fn, help) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.title = help || data.export.help || "";
    b.addEventListener("click", fn);
    bar.appendChild(b);
  };
  mk("SVG", () => shippedFont(pictureText(data)).then((font) =>
    download(name + ".svg", new Blob([svgText(font)], { type: "image/svg+xml" }))));
  for (const scale of PNG_SCALES) {
    mk("PNG " + scale + "×", () => buildPng(data, scale, (blob) => download(name + "@" + scale + "x.png", blob)),
       (data.export.png_help || {})[String(scale)]);
  }
  root.appendChild(bar);
}
// One heatmap (see heatmap_lib.js; Python puts it and dom_lib.js in front of this file).
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const root = ownRoot(parentElement, "alhm");
  drawMap(root, data, (cell) => setTriggerValue("cell", cell));
}
