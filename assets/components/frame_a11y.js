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

// A tab that had the keyboard focus and lost it to the page because a run redrew its strip (each tab of a
// stateful tab strip is a run; on a busy server, the strip is drawn again while the learner is on it) gets it
// back: the tab with the same name in the same strip (found by the strip's Streamlit key class), within a
// second, unless the learner has put the focus somewhere else meanwhile or used the mouse (a click on the
// page's background also leaves the focus on the page: that is the learner's choice) (WCAG 2.4.3, focus order).
function keepTabFocus() {
  let pointer = -1e9;
  document.addEventListener("pointerdown", () => { pointer = performance.now(); }, true);
  document.addEventListener("focusout", (e) => {
    const tab = e.target;
    if (e.relatedTarget || !tab.getAttribute || tab.getAttribute("role") !== "tab") return;
    const at = performance.now();
    if (at - pointer < 500) return;
    let box = tab;
    while (box && ![...(box.classList || [])].some((c) => c.startsWith("st-key-"))) box = box.parentElement;
    if (!box) return;
    const cls = [...box.classList].find((c) => c.startsWith("st-key-"));
    const name = tab.textContent;
    const lost = () => !document.activeElement || document.activeElement === document.body;
    for (const ms of [30, 120, 300, 700, 1000]) {
      setTimeout(() => {
        if (!lost() || pointer > at) return;
        const strip = document.querySelector("." + CSS.escape(cls));
        const again = strip && [...strip.querySelectorAll("[role=tab]")].find((t) => t.textContent === name);
        if (again && again.isConnected) again.focus({ preventScroll: true });
      }, ms);
    }
  }, true);
}

export default function (component) {
  const { data, parentElement } = component;
  const html = document.documentElement;
  if (html.lang !== data.lang) html.lang = data.lang;
  html.dataset.alFrame = data.lang;  // the frame has run in this document (index.html's own lang is "en")
  silentMount(parentElement, false); // silent_lib.js: the "has run" marker
  html.classList.toggle("al-hc", !!data.hc);
  if (!window.__attentionLabTabFocus) {
    window.__attentionLabTabFocus = true;
    keepTabFocus();
  }
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
