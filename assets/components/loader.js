// A component whose code the server serves as a file (static/components/, written by scripts/make_components.py):
// each element of it carries its data only, and the browser fetches the code once (ui/widgets/assets.py, served_js).
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
  note.textContent = FAILED[document.documentElement.lang === "ko" ? "ko" : "en"];
}

export default function (component) {
  const parent = component.parentElement;  // the element's shadow root (its styles isolated), or the element
  const host = parent.host || parent;
  host.dataset.alLoading = "1";
  loading
    .then((code) => code.default(component), (err) => failed(parent, err))
    .finally(() => delete host.dataset.alLoading);
}
