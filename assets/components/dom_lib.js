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
