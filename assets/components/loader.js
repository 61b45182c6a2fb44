// A component whose code the server serves as a file (static/components/, written by scripts/make_components.py):
// each element of it carries its data only, and the browser fetches the code once (ui.widgets.assets.served_js).
// Python puts the file's address (with its version) and the message for a failed load in place of the two marks.
// Until the code has drawn, the element's host is marked data-al-loading (what a test waits for before it reads the page).
const loading = import(new URL("__CODE__", document.baseURI));
const FAILED = __FAILED__;

function failed(parent, err) {
  console.error(err);
  let note = parent.querySelector("p.al-load-failed");
  if (!note) {
    note = document.createElement("p");
    note.className = "al-load-failed";
    note.setAttribute("role", "alert");
    parent.appendChild(note);
  }
  // The page's language is set on <html> by the frame's own component, which may run after this load has failed:
  // the note follows the attribute until it leaves the page.
  const html = document.documentElement;
  const say = () => { note.textContent = FAILED[html.lang === "ko" ? "ko" : "en"]; };
  say();
  const watch = new MutationObserver(() => (note.isConnected ? say() : watch.disconnect()));
  watch.observe(html, { attributes: true, attributeFilter: ["lang"] });
}

export default function (component) {
  const parent = component.parentElement;  // the element's shadow root (its styles isolated), or the element
  const host = parent.host || parent;
  host.dataset.alLoading = "1";
  loading
    .then((code) => code.default(component), (err) => failed(parent, err))
    .finally(() => delete host.dataset.alLoading);
}
