// Attention Lab step-through keys: ← and → anywhere on the page report "prev" / "next" — never while
// the focus is in a text box or on a control or map that uses the arrows itself (WCAG 2.1.4).
// One listener per page: a newer mount replaces the older one.
export default function (component) {
  const { setTriggerValue, parentElement } = component;
  silentMount(parentElement, false); // draws nothing: silent_lib.js's marker says it has run
  if (window.__attentionLabKeys) document.removeEventListener("keydown", window.__attentionLabKeys);
  window.__attentionLabKeys = (e) => {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;  // a map or a widget used the key
    const path = e.composedPath ? e.composedPath() : [e.target];
    const own = (n) => n && n.tagName && (/^(INPUT|TEXTAREA|SELECT|CANVAS|TD)$/.test(n.tagName) || n.isContentEditable ||
      /^(slider|radio|radiogroup|tab|tablist|listbox|option|combobox|spinbutton|textbox|grid|gridcell|menu|menuitem|application)$/
        .test(n.getAttribute && n.getAttribute("role") || ""));
    if (path.some(own)) return;  // text boxes, sliders, tabs, radios and the maps keep their own arrow keys
    if (e.key === "ArrowRight") setTriggerValue("key", "next");
    else if (e.key === "ArrowLeft") setTriggerValue("key", "prev");
  };
  document.addEventListener("keydown", window.__attentionLabKeys);
}
