// Attention Lab model view: every head of every layer of a trained model as a small map, all on
// ONE canvas (72 maps are one element, not 72). Click a map to open that head.
// The weights arrive as base64 little-endian uint16 (or uint8 for long sentences: data.bytes),
// value = round(α · scale), laid out (L, H, n, n).
// Learner text (the tokens) is only ever set with textContent.
// the colour stops [[t, [r, g, b]], …] arrive with the data (attention_lab/colours.py SEQ: one copy of the palette)
function lut(stops) {
  const out = new Uint8ClampedArray(256 * 3);
  for (let k = 0; k < 256; k++) {
    const t = k / 255;
    let s = 0;
    while (s < stops.length - 2 && t > stops[s + 1][0]) s++;
    const [t0, c0] = stops[s], [t1, c1] = stops[s + 1];
    const f = (t - t0) / (t1 - t0);
    for (let ch = 0; ch < 3; ch++) out[3 * k + ch] = Math.round(c0[ch] + f * (c1[ch] - c0[ch]));
  }
  return out;
}

const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// base64 → a typed array of the packed weights (uint16 little-endian or uint8)
function decode(b64, width) {
  const bytes = base64Bytes(b64);
  if (width === 1) return bytes;
  if (LITTLE) return new Uint16Array(bytes.buffer);
  const view = new DataView(bytes.buffer), out = new Uint16Array(bytes.length / 2);
  for (let k = 0; k < out.length; k++) out[k] = view.getUint16(2 * k, true);
  return out;
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const root = ownRoot(parentElement, "almv");
  const started = performance.now();
  const L = data.layers, H = data.heads, n = data.n, scale = data.scale;
  const packed = decode(data.w, data.bytes);
  const COLOURS = lut(data.stops);
  const value = (l, h, i, j) => packed[((l * H + h) * n + i) * n + j] / scale;

  // geometry: a column of layer numbers, a row of head numbers, H × L square maps
  const width = Math.max(360, Math.floor(root.getBoundingClientRect().width) || 900);
  const left = 26, top = 18, gap = 6;
  const size = Math.max(24, Math.min(96, Math.floor((width - left - 2) / H) - gap));
  const W = left + H * (size + gap), Hgt = top + L * (size + gap);
  const dpr = window.devicePixelRatio || 1;
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(W * dpr);
  canvas.height = Math.round(Hgt * dpr);
  canvas.style.width = W + "px";
  canvas.style.height = Hgt + "px";
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);

  // each head: an n × n image (one pixel per weight), scaled up without smoothing
  const tile = document.createElement("canvas");
  tile.width = n;
  tile.height = n;
  const tctx = tile.getContext("2d");
  const img = tctx.createImageData(n, n);
  const toByte = 255 / scale;  // weight → colour index 0 … 255
  ctx.imageSmoothingEnabled = false;
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const base = (l * H + h) * n * n, px = img.data;
      for (let c = 0; c < n * n; c++) {
        const k = Math.min(255, Math.round(packed[base + c] * toByte));
        px[4 * c] = COLOURS[3 * k];
        px[4 * c + 1] = COLOURS[3 * k + 1];
        px[4 * c + 2] = COLOURS[3 * k + 2];
        px[4 * c + 3] = 255;
      }
      tctx.putImageData(img, 0, 0);
      ctx.drawImage(tile, left + h * (size + gap), top + l * (size + gap), size, size);
    }
  }
  ctx.font = '11px "Source Sans", sans-serif';
  ctx.fillStyle = "#334155";
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let h = 0; h < H; h++) ctx.fillText(String(h), left + h * (size + gap) + size / 2, top / 2);
  ctx.textAlign = "right";
  for (let l = 0; l < L; l++) ctx.fillText(String(l), left - 8, top + l * (size + gap) + size / 2);
  const frame = (l, h, colour) => {
    ctx.lineWidth = 3;
    ctx.strokeStyle = colour;
    ctx.strokeRect(left + h * (size + gap) - 2, top + l * (size + gap) - 2, size + 4, size + 4);
  };
  if (data.selected) frame(data.selected[0], data.selected[1], "#f59e0b");

  const axes = document.createElement("div");
  axes.className = "axes";
  axes.textContent = data.axes;
  const info = document.createElement("div");
  info.className = "hover";
  info.textContent = "\u00a0";
  const at = (e) => {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left - left, y = e.clientY - r.top - top;
    const h = Math.floor(x / (size + gap)), l = Math.floor(y / (size + gap));
    const dx = x - h * (size + gap), dy = y - l * (size + gap);
    if (l < 0 || l >= L || h < 0 || h >= H || dx >= size || dy >= size) return null;
    return [l, h, Math.min(n - 1, Math.floor(dy * n / size)), Math.min(n - 1, Math.floor(dx * n / size))];
  };
  canvas.addEventListener("mousemove", (e) => {
    const c = at(e);
    canvas.style.cursor = c ? "pointer" : "default";
    info.textContent = c ? data.layer_word + " " + c[0] + ", " + data.head_word + " " + c[1] + ":   " +
      data.tokens[c[2]] + " → " + data.tokens[c[3]] + "   α = " + value(c[0], c[1], c[2], c[3]).toFixed(data.bytes === 2 ? 4 : 3) :
      "\u00a0";
  });
  canvas.addEventListener("mouseleave", () => { info.textContent = "\u00a0"; });
  canvas.addEventListener("click", (e) => {
    const c = at(e);
    if (c) setTriggerValue("head", [c[0], c[1]]);
  });
  // the keyboard: Tab in, arrows move a cursor from head to head, Enter opens it (as a click does),
  // Esc leaves; the live line reads the head under the cursor (WCAG 2.1.1, 4.1.2)
  const keep = (window.__attentionLabModelView = window.__attentionLabModelView || { cell: null, refocus: false });
  let cur = keep.cell && keep.cell[0] < L && keep.cell[1] < H ? keep.cell : (data.selected || [0, 0]);
  canvas.tabIndex = 0;
  canvas.setAttribute("role", "application");
  canvas.setAttribute("aria-label", (data.a11y && data.a11y.name) || "");
  info.setAttribute("aria-live", "polite");
  const cursor = document.createElement("div");
  cursor.className = "cursor";
  cursor.style.width = cursor.style.height = size + 8 + "px";
  const place = () => {
    cursor.style.left = canvas.offsetLeft + left + cur[1] * (size + gap) - 4 + "px";
    cursor.style.top = canvas.offsetTop + top + cur[0] * (size + gap) - 4 + "px";
    info.textContent = data.layer_word + " " + cur[0] + ", " + data.head_word + " " + cur[1];
  };
  canvas.addEventListener("focus", () => { cursor.classList.add("on"); place(); });
  canvas.addEventListener("blur", () => cursor.classList.remove("on"));
  const MOVE = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  canvas.addEventListener("keydown", (e) => {
    if (MOVE[e.key]) {
      cur = [Math.max(0, Math.min(L - 1, cur[0] + MOVE[e.key][0])), Math.max(0, Math.min(H - 1, cur[1] + MOVE[e.key][1]))];
      keep.cell = cur;
      place();
    } else if (e.key === "Enter" || e.key === " ") {
      keep.cell = cur;
      keep.refocus = true;
      setTriggerValue("head", [cur[0], cur[1]]);
    } else if (e.key === "Escape") canvas.blur();
    else return;
    e.preventDefault();
    e.stopPropagation();
  });
  root.replaceChildren(axes, canvas, cursor, info);
  if (keep.refocus) { keep.refocus = false; canvas.focus({ preventScroll: true }); }
  root.dataset.geom = JSON.stringify({ left, top, size, gap });  // where the maps are, for tests
  root.dataset.selected = JSON.stringify(data.selected);
  root.dataset.ms = (performance.now() - started).toFixed(1);  // decode + draw time, measured by the bench
}
