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

// The tab a keyboard user moved to stays theirs through the runs it starts. Each tab of a stateful tab strip is a
// run, and on a busy server a run that ends after the learner has moved on redraws the strip for its own tab: the
// focus falls to the page, or moves to that older tab. Focus fallen from a tab to the page (not by the mouse) goes
// back within a second; focus a run moved to another tab goes back too. Either way to the tab the learner's last
// key left them on, within 5 s of it and with no mouse since (else to the tab that lost it), found by its name in
// the strip with the same Streamlit key class. Focusing a tab selects it, so the strip follows them again (WCAG
// 2.4.3, focus order).
function keepTabFocus() {
  let pointer = -1e9, key = -1e9, wanted = null; // wanted: {cls, name, at}: the tab the learner's last key left them on
  const isTab = (el) => !!(el && el.getAttribute && el.getAttribute("role") === "tab");
  const stripOf = (tab) => {
    let box = tab;
    while (box && ![...(box.classList || [])].some((c) => c.startsWith("st-key-"))) box = box.parentElement;
    return box ? [...box.classList].find((c) => c.startsWith("st-key-")) : null;
  };
  const recent = (cls) => wanted && wanted.cls === cls && pointer < wanted.at && performance.now() - wanted.at < 5000;
  const focusTab = (target) => {
    const strip = document.querySelector("." + CSS.escape(target.cls));
    const again = strip && [...strip.querySelectorAll("[role=tab]")].find((t) => t.textContent === target.name);
    if (again && again.isConnected) again.focus({ preventScroll: true });
  };
  document.addEventListener("pointerdown", () => { pointer = performance.now(); }, true);
  document.addEventListener("keydown", (e) => { if (isTab(e.target)) key = performance.now(); }, true);
  document.addEventListener("keyup", () => { // after the learner's key: the tab they are on now
    const a = document.activeElement;
    if (isTab(a) && performance.now() - key < 1000 && stripOf(a)) wanted = { cls: stripOf(a), name: a.textContent, at: performance.now() };
  }, true);
  // the focus fell to the page: back to the learner's tab (or to the tab that lost it), within a second
  document.addEventListener("focusout", (e) => {
    const tab = e.target, cls = isTab(tab) && stripOf(tab);
    const at = performance.now();
    if (!cls || e.relatedTarget || at - pointer < 500) return;
    const target = recent(cls) ? wanted : { cls, name: tab.textContent };
    for (const ms of [30, 120, 300, 700, 1000]) {
      setTimeout(() => {
        const a = document.activeElement;
        if (pointer < at && (!a || a === document.body)) focusTab(target);
      }, ms);
    }
  }, true);
  // a run moved the focus to another tab of the strip (no key of the learner's just before): back to theirs
  document.addEventListener("focusin", (e) => {
    const tab = e.target, cls = isTab(tab) && stripOf(tab);
    if (!cls || performance.now() - key < 300 || !recent(cls) || tab.textContent === wanted.name) return;
    setTimeout(() => { if (document.activeElement === tab && recent(cls)) focusTab(wanted); }, 30);
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
