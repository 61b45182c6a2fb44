// A part of the page a teacher took the class to (Follow me: one exercise of a lesson), brought into
// view and focused once per token, so every student sees it and keyboard users start there. It looks
// for the part by its Streamlit key class for a few seconds (the part may be drawn after this element);
// the same token again (a rerun for another reason) leaves the page where the learner scrolled it.
export default function (component) {
  const { data, parentElement } = component;
  silentMount(parentElement, true); // silent_lib.js: no room taken, the "has run" marker
  const root = document.documentElement;
  if (!data.token || (root.dataset.alFocused || "") === data.token) return;
  root.dataset.alFocused = data.token;
  let tries = 0;
  const look = () => {
    const el = document.querySelector("." + CSS.escape(data.cls));
    if (!el) {
      if (++tries < 50) setTimeout(look, 100);
      return;
    }
    el.tabIndex = -1;
    // below Streamlit's fixed header, not under it
    const header = document.querySelector("[data-testid=stHeader]");
    el.style.scrollMarginTop = `${(header ? header.getBoundingClientRect().bottom : 0) + 8}px`;
    el.scrollIntoView({ block: "start" });
    el.focus({ preventScroll: true });
  };
  look();
}
