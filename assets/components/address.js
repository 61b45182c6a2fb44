// The page's link in the address bar, put in place (history.replaceState): the one way the Playground
// writes its URL, on a run of the whole page and on a rerun of its results alone (Streamlit's own URL
// update re-renders the whole app, BENCHMARKS.md). Invisible. After a restart the connection guard
// (guard.js) reopens the link this wrote. The link goes in as a query string only ("?a=1&…").
export default function (component) {
  const { data, parentElement } = component;
  const host = parentElement.getRootNode().host || parentElement;
  const box = host.closest ? host.closest('[data-testid="stElementContainer"]') : null;
  if (box) box.style.display = "none"; // takes no room on the page
  // an (empty) element of the app's own, so a test's "every component has drawn" check sees this one too
  if (!parentElement.querySelector(".al-silent")) parentElement.appendChild(document.createElement("div")).className = "al-silent";
  if (typeof data.url === "string" && data.url.startsWith("?") && window.location.search !== data.url) {
    window.history.replaceState(window.history.state, "", window.location.pathname + data.url);
  }
}
