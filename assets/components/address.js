// The page's link in the address bar, put in place (history.replaceState): the one way the Playground
// writes its URL, on a run of the whole page and on a rerun of its results alone (Streamlit's own URL
// update re-renders the whole app, BENCHMARKS.md). Invisible. After a restart the connection guard
// (guard.js) reopens the link this wrote. The link goes in as a query string only ("?a=1&…").
export default function (component) {
  const { data, parentElement } = component;
  silentMount(parentElement, true); // silent_lib.js: no room on the page, the "has run" marker
  if (typeof data.url === "string" && data.url.startsWith("?") && window.location.search !== data.url) {
    window.history.replaceState(window.history.state, "", window.location.pathname + data.url);
  }
}
