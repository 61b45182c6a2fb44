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
const KR_FONT_URL = "app/static/attention-lab-kr-400.woff2";  // served by the app (.streamlit/config.toml)
const HANGUL = /[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]/;

// The shipped Korean font as base64, fetched once (the page has already loaded it, so it comes from
// the browser's cache); null when the picture's text has no Hangul or the font cannot be read.
function shippedFont(pictureText) {
  if (!HANGUL.test(pictureText)) return Promise.resolve(null);
  if (!window.__attentionLabKrFont) {
    window.__attentionLabKrFont = fetch(new URL(KR_FONT_URL, document.baseURI))
      .then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error(String(r.status)))))
      .then((buf) => {
        const bytes = new Uint8Array(buf);
        let raw = "";
        for (let i = 0; i < bytes.length; i += 0x8000) raw += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
        return btoa(raw);
      })
      .catch(() => { window.__attentionLabKrFont = null; return null; });
  }
  return window.__attentionLabKrFont;
}

function download(name, blob) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

// The CSS that puts the shipped Korean font (base64 WOFF2) inside an SVG picture: its Korean renders
// on a machine that has no Korean font.
function fontFaceStyle(fontData) {
  return "@font-face { font-family: 'attention-lab-kr'; font-weight: 100 900; " +
    "src: url(data:font/woff2;base64," + fontData + ") format('woff2'); }";
}
