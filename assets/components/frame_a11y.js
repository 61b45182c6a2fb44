// Attention Lab frame: what the whole document needs for assistive technology, set once per run.
// Streamlit serves one index.html with <html lang="en">; a screen reader reads Korean with English
// rules unless the document's language follows the chosen one (WCAG 3.1.1). The high-contrast
// setting puts a class on <html> that the frame's CSS (ui.widgets.a11y) keys on. A display
// formula wider than its column (a phone) scrolls sideways: it is made focusable, so a keyboard
// can scroll it too (2.1.1); checked after the page changes, at most every 300 ms.
function scrollersFocusable() {
  for (const box of document.querySelectorAll(".katex-display")) {
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    if (scrolls && !box.hasAttribute("tabindex")) {
      box.tabIndex = 0;
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", box.querySelector("annotation") ? box.querySelector("annotation").textContent : "formula");
    } else if (!scrolls && box.getAttribute("role") === "group") {
      box.removeAttribute("tabindex");
      box.removeAttribute("role");
      box.removeAttribute("aria-label");
    }
  }
}

export default function (component) {
  const { data, parentElement } = component;
  const html = document.documentElement;
  if (html.lang !== data.lang) html.lang = data.lang;
  html.dataset.alFrame = data.lang;  // the frame has run in this document (index.html's own lang is "en")
  silentMount(parentElement, false); // silent_lib.js: the "has run" marker
  html.classList.toggle("al-hc", !!data.hc);
  if (!window.__attentionLabScrollers) {
    let pending = null;
    const later = () => {
      if (pending === null) pending = setTimeout(() => { pending = null; scrollersFocusable(); }, 300);
    };
    window.__attentionLabScrollers = new MutationObserver(later);
    window.__attentionLabScrollers.observe(document.body, { childList: true, subtree: true });
    window.addEventListener("resize", later);
    later();
  }
}
