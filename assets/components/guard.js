// Attention Lab's connection guard: one per page, drawn by the frame (ui.widgets.guard), invisible.
//
// A Streamlit session lives in one server's memory. When that server restarts or its replica is lost,
// the browser reconnects to a NEW session, and Streamlit sends it the query string it last wrote
// itself — not the link the page wrote in place since (history.replaceState after a rerun of the
// Playground's results alone), so the new session would start from an older scenario. The guard
// keeps the address bar as it was when the connection dropped, and when a run of a different session
// draws it, it reopens that link: the new session starts from the learner's current scenario.
// While the connection is down it shows the app's own message in the learner's language instead of
// Streamlit's developer dialog ("restart it in your terminal").
const GUARD_DOWN_MS = 1500; // a blip shorter than this shows nothing

function guardApp() {
  return document.querySelector('[data-testid="stApp"]');
}

function guardOverlay(g) {
  let box = document.getElementById("attnlab-connection");
  if (!box) {
    // a modal <dialog>: the browser's top layer, above everything the page draws (Streamlit's overlays too)
    box = document.createElement("dialog");
    box.id = "attnlab-connection";
    box.setAttribute("role", "alertdialog");
    box.setAttribute("aria-live", "assertive");
    box.style.cssText = "position:fixed;inset:0;width:100%;height:100%;max-width:none;max-height:none;margin:0;" +
      "padding:0;border:none;display:flex;align-items:center;justify-content:center;" +
      "background:rgba(255,255,255,0.92);font:1.1rem/1.5 system-ui,'attention-lab-kr',sans-serif";
    box.addEventListener("cancel", (e) => e.preventDefault()); // Escape does not hide it
    const card = document.createElement("div");
    card.style.cssText = "max-width:34rem;padding:1.5rem 2rem;border-radius:12px;background:#fff;" +
      "box-shadow:0 4px 24px rgba(0,0,0,0.18);color:#111";
    const title = document.createElement("div");
    title.className = "title";
    title.style.cssText = "font-weight:700;font-size:1.3rem;margin-bottom:0.5rem";
    const body = document.createElement("div");
    body.className = "body";
    card.append(title, body);
    box.appendChild(card);
    document.body.appendChild(box);
    box.showModal();
    // a modal library (react-aria, behind Streamlit's dialogs) makes everything outside its own dialog
    // inert and aria-hidden, this one too once it is there: undone, so learners can read it (and a reader hears it)
    const keepReadable = () => ["inert", "aria-hidden"].forEach((a) => box.hasAttribute(a) && box.removeAttribute(a));
    new MutationObserver(keepReadable).observe(box, { attributes: true, attributeFilter: ["inert", "aria-hidden"] });
    keepReadable();
  }
  for (const [cls, text] of [[".title", g.text.title], [".body", g.text.body]]) {
    const el = box.querySelector(cls);
    if (el.textContent !== text) el.textContent = text;
  }
  return box;
}

function guardHideOverlay() {
  const box = document.getElementById("attnlab-connection");
  if (box) {
    if (box.open) box.close();
    box.remove();
  }
}

function guardReopen(g) {
  const href = g.href || window.location.href;
  g.reopening = true;
  window.location.replace(href);
}

// Streamlit's own dialog while the connection is down is its developer message ("Connection error …
// restart it in your terminal", in English): hidden while the app's message is up, back once connected.
function guardHideStreamlitDialogs(g) {
  // only dialogs not hidden yet: the observer also sees this function's own changes, which must not loop
  for (const d of document.querySelectorAll('[data-testid="stDialog"]:not([data-attnlab-hidden])')) {
    d.dataset.attnlabHidden = d.style.display || "-";
    d.style.display = "none";
    if (!document.getElementById("attnlab-connection")) guardOverlay(g); // no wait: Streamlit's dialog is up
  }
}

function guardShowStreamlitDialogs() {
  for (const d of document.querySelectorAll("[data-attnlab-hidden]")) {
    d.style.display = d.dataset.attnlabHidden === "-" ? "" : d.dataset.attnlabHidden;
    delete d.dataset.attnlabHidden;
  }
}

function guardStateChanged(g, state) {
  const prev = g.lastState;
  g.lastState = state;
  if (state === "CONNECTED") {
    // back: a restarted server or another replica has a new session that has not run the page yet and
    // would not until the learner's next action; a run now lets the guard see the new session and
    // reopen the link (on the same session the run changes nothing)
    if (prev && prev !== "CONNECTED" && g.trigger) g.trigger("reconnected", Date.now());
    clearTimeout(g.downTimer);
    if (g.dialogs) g.dialogs.disconnect();
    g.dialogs = null;
    guardHideOverlay();
    guardShowStreamlitDialogs();
    return;
  }
  if (prev === "CONNECTED") {
    g.href = window.location.href; // the link as it was when the connection dropped
    clearTimeout(g.downTimer);
    g.downTimer = setTimeout(() => guardOverlay(g), GUARD_DOWN_MS);
    g.dialogs = new MutationObserver(() => guardHideStreamlitDialogs(g));
    g.dialogs.observe(document.body, { childList: true, subtree: true });
    guardHideStreamlitDialogs(g);
  }
  if (state === "DISCONNECTED_FOREVER") guardPollThenReopen(g); // Streamlit gave up: reopen once it answers
}

function guardPollThenReopen(g) {
  if (g.polling) return;
  g.polling = true;
  const poll = () => fetch(new URL("_stcore/health", window.location.origin + "/"), { cache: "no-store" })
    .then((r) => (r.ok ? guardReopen(g) : setTimeout(poll, 2000)))
    .catch(() => setTimeout(poll, 2000));
  poll();
}

function guardWatch(g) {
  const app = guardApp();
  if (!app) return;
  g.lastState = app.getAttribute("data-test-connection-state");
  g.observer = new MutationObserver(() => {
    const state = app.getAttribute("data-test-connection-state");
    if (state !== g.lastState) guardStateChanged(g, state);
  });
  g.observer.observe(app, { attributes: true, attributeFilter: ["data-test-connection-state"] });
}

export default function (component) {
  const { data, parentElement } = component;
  silentMount(parentElement, true); // silent_lib.js: no room on the page, the "has run" marker
  const g = window.__attnlabGuard || (window.__attnlabGuard = { sid: null, href: null });
  g.text = data.text;
  g.trigger = component.setTriggerValue;
  if (g.reopening) return;
  if (g.sid === null) g.sid = data.sid;
  else if (g.sid !== data.sid) {
    guardReopen(g); // a different session: this server has never seen the learner's current link
    return;
  }
  if (!g.observer) guardWatch(g);
}
