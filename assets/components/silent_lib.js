// What every invisible component of the app does first (guard.js, address.js, frame_a11y.js, keys.js):
// with ``hide`` its element takes no room on the page, and an empty marker says it has run (the
// browser tests wait until every component on the page has drawn something of the app's own).
function silentMount(parentElement, hide) {
  if (!parentElement) return;
  if (hide) {
    const host = parentElement.getRootNode().host || parentElement;
    const box = host.closest ? host.closest('[data-testid="stElementContainer"]') : null;
    if (box) box.style.display = "none";
  }
  if (!parentElement.querySelector(".al-silent")) parentElement.appendChild(document.createElement("div")).className = "al-silent";
}

