// Small helpers every Attention Lab component shares (Python puts this file in front of each).
// MathML comes from fixed text in ui/widgets/formulas.py; learner text only ever goes in as textContent.
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
