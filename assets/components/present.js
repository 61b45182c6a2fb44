// Presenter view (the Python side: ui.presenter): the page's main map brought to the top of the first screen, once per page
// shown: the first map drawn in the page (a heatmap, the pipeline's maps, a model's heads, the inspector, bars, a chart),
// when it starts below the fold. A rerun of the same page leaves the page where the presenter scrolled it.
const MAPS = ".alhm, .almaps, .alhv, .almv, .alinspector, .albars";

export default function (component) {
  const { data, parentElement } = component;
  silentMount(parentElement, true); // silent_lib.js: no room taken, the "has run" marker
  const root = document.documentElement;
  if (!data.token || (root.dataset.alPresented || "") === data.token) return;
  root.dataset.alPresented = data.token;
  const first = () => {
    for (const el of document.querySelectorAll(
      "[data-testid=stMain] [data-testid=stBidiComponentIsolated], [data-testid=stMain] .js-plotly-plot")) {
      const map = el.classList.contains("js-plotly-plot") ? el : el.shadowRoot && el.shadowRoot.querySelector(MAPS);
      if (map && map.getBoundingClientRect().height > 40) return el;
    }
    return null;
  };
  // the presenter acts first (a click, a key: a step-through, a scroll): the page stays where they take it
  let touched = false;
  const touch = () => { touched = true; };
  for (const kind of ["pointerdown", "keydown", "wheel"]) window.addEventListener(kind, touch, { once: true, capture: true });
  // the page has drawn: its run ended, fonts and images loaded, every component holds what it draws
  const drawn = () => !!document.querySelector('[data-testid=stApp][data-test-script-state=notRunning]')
    && document.fonts.status === "loaded" && [...document.images].every((img) => img.complete)
    && [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')].every(
      (h) => !h.dataset.alLoading && (!h.shadowRoot || !!h.shadowRoot.querySelector('[class^=al], [class*=" al"]')));
  let tries = 0, last = null, calm = 0, scrolls = 0;
  // a map off the first screen (above it, or starting below 45 % of its height) is scrolled to its top while scrolls
  // are left; true when it was
  const bringUp = (el) => {
    const top = el.getBoundingClientRect().top;
    if ((top >= 0 && top <= window.innerHeight * 0.45) || scrolls >= 5) return false;
    scrolls += 1;
    el.style.scrollMarginTop = "96px"; // its heading and caption above it stay in view
    el.scrollIntoView({ block: "start" });
    return true;
  };
  const done = () => { root.dataset.alPresentedAt = data.token; }; // the tests' fact: the first screen is laid out
  const look = () => {
    if (touched) { done(); return; }
    // not drawn yet: wait as long as it takes (a busy server draws the language model's maps late); the tries below
    // count only once the page has drawn
    if (!drawn()) { setTimeout(look, 100); return; }
    const el = first();
    const at = el ? el.getBoundingClientRect().top : null;
    calm = el !== null && at === last ? calm + 1 : 0; // laid out: the same place three times in a row (0.3 s)
    last = at;
    tries += 1;
    // no map yet: the maps draw after the script; look for 10 s, then the first screen is as drawn (a page without one)
    if (!el) { if (tries < 100) setTimeout(look, 100); else done(); return; }
    // a map: wait until it holds still, before a scroll and after each one (what is above it may still change its
    // height: on a busy machine a scrolled map was left above the screen when that was not waited for); up to 30 s
    if (calm < 2 && tries < 300) { setTimeout(look, 100); return; }
    if (bringUp(el)) {
      calm = 0; last = null; tries = Math.min(tries, 200); // at least 10 s more to hold still where it was brought
      setTimeout(look, 100);
      return;
    }
    done();
    setTimeout(watch, 200);
  };
  // after that, for 20 s: a map that a late change above it moved off the first screen (and held still there) is
  // brought up again, while the presenter has not acted and scrolls are left
  let watched = 0, wLast = null, wCalm = 0;
  const watch = () => {
    if (touched || ++watched > 100) return;
    const el = first();
    const at = el ? el.getBoundingClientRect().top : null;
    wCalm = el !== null && at === wLast ? wCalm + 1 : 0;
    wLast = at;
    if (wCalm >= 2 && bringUp(el)) { wCalm = 0; wLast = null; }
    setTimeout(watch, 200);
  };
  look();
}
