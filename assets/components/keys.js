// Attention Lab step-through keys: ← and → anywhere on the page (not while typing in a box)
// report "prev" / "next". One listener per page: a newer mount replaces the older one.
export default function (component) {
  const { setTriggerValue } = component;
  if (window.__attentionLabKeys) document.removeEventListener("keydown", window.__attentionLabKeys);
  window.__attentionLabKeys = (e) => {
    const path = e.composedPath ? e.composedPath() : [e.target];
    if (path.some((n) => n && n.tagName && /^(INPUT|TEXTAREA|SELECT)$/.test(n.tagName))) return;
    if (e.key === "ArrowRight") setTriggerValue("key", "next");
    else if (e.key === "ArrowLeft") setTriggerValue("key", "prev");
  };
  document.addEventListener("keydown", window.__attentionLabKeys);
}
