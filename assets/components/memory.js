// Attention Lab's memory of where a learner stopped, kept in this browser only (localStorage, per origin; nothing
// is sent anywhere): the tutorial's last lesson with its progress, and the last page with its link (a page's link
// holds its scenario and settings). Saved after every run and when the tab is hidden or closed. A visit without
// parameters (a bare address, a bookmark of the app) is offered to go back; a visit whose link carries its own
// state is never redirected. "Forget my progress" (the sidebar, or the offer) removes the record.
const MEMORY_KEY = "attention-lab.memory";
const MEMORY_VERSION = 1;
const MEMORY_MAX_SEARCH = 16384; // a link is at most ~8 KB (the app's link budget): anything longer is not ours

function memoryRead() {
  try {
    const m = JSON.parse(window.localStorage.getItem(MEMORY_KEY) || "null");
    return m && m.v === MEMORY_VERSION ? m : null;
  } catch (e) {
    return null; // no storage (private mode, blocked), or not our JSON: nothing to offer
  }
}

function memoryWrite(m) {
  try {
    window.localStorage.setItem(MEMORY_KEY, JSON.stringify(m));
  } catch (e) {
    /* storage full or blocked: the app works on without it */
  }
}

function memoryForget() {
  if (window.__attnlabMemory) window.__attnlabMemory.quiet = window.location.href;
  try {
    window.localStorage.removeItem(MEMORY_KEY);
  } catch (e) {
    /* nothing to remove */
  }
}

function memorySave() {
  const M = window.__attnlabMemory;
  if (!M || !M.data || M.offer) return; // while the offer is open the record is what it offers: kept as it is
  if (M.quiet === window.location.href) return; // just forgotten: nothing is saved until the learner moves on
  const d = M.data;
  const here = { path: window.location.pathname, search: window.location.search.slice(0, MEMORY_MAX_SEARCH) };
  const m = memoryRead() || { v: MEMORY_VERSION };
  if (d.tutorial && /[?&]lesson=/.test(here.search)) m.tutorial = here;
  if (!d.home) m.page = here;
  m.at = Date.now();
  memoryWrite(m);
}

function memoryLesson(search) {
  const id = new URLSearchParams(search).get("lesson");
  return id && Object.prototype.hasOwnProperty.call(memoryData().lessons, id) ? memoryData().lessons[id] : null;
}

function memoryData() {
  return window.__attnlabMemory.data;
}

function memoryPageLabel(path) {
  let last = "";
  try {
    last = decodeURIComponent(path.split("/").pop() || "");
  } catch (e) {
    return null; // not a path the app wrote
  }
  const pages = memoryData().pages;
  return Object.prototype.hasOwnProperty.call(pages, last) ? pages[last] : null;
}

function memoryTargets(m) {
  const out = [];
  const here = window.location.pathname + window.location.search;
  const ok = (r) => r && typeof r.path === "string" && typeof r.search === "string" && r.path.startsWith("/")
    && !r.path.startsWith("//") && r.search.length <= MEMORY_MAX_SEARCH && (r.search === "" || r.search.startsWith("?"));
  if (ok(m.tutorial) && memoryLesson(m.tutorial.search)) {
    out.push({ href: m.tutorial.path + m.tutorial.search, label: memoryLesson(m.tutorial.search) });
  }
  if (ok(m.page) && memoryPageLabel(m.page.path) && m.page.path !== (m.tutorial && m.tutorial.path)) {
    out.push({ href: m.page.path + m.page.search, label: memoryPageLabel(m.page.path) });
  }
  return out.filter((x) => x.href !== here);
}

function memoryShow(parentElement, show) {
  const host = parentElement.getRootNode().host || parentElement;
  const box = host.closest ? host.closest('[data-testid="stElementContainer"]') : null;
  if (box) box.style.display = show ? "" : "none";
}

function memoryRender(parentElement, targets) {
  const M = window.__attnlabMemory;
  const t = M.data.text;
  let root = parentElement.querySelector(".al-memory");
  if (!targets.length) {
    if (root) root.remove();
    memoryShow(parentElement, false);
    return;
  }
  if (!root) {
    root = document.createElement("section");
    root.className = "al-memory";
    parentElement.appendChild(root);
  }
  root.setAttribute("aria-label", t.title);
  root.replaceChildren();
  const title = document.createElement("p");
  title.className = "al-memory-title";
  title.textContent = t.title;
  root.appendChild(title);
  const row = document.createElement("div");
  row.className = "al-memory-row";
  for (const target of targets) {
    const a = document.createElement("a");
    a.className = "al-memory-go";
    a.href = target.href; // same origin: a path and a query string checked above
    a.textContent = target.label;
    a.addEventListener("click", () => { M.offer = null; });
    row.appendChild(a);
  }
  const later = document.createElement("button");
  later.type = "button";
  later.className = "al-memory-later";
  later.textContent = t.later;
  later.addEventListener("click", () => { M.offer = null; memoryRender(parentElement, []); memorySave(); });
  const forget = document.createElement("button");
  forget.type = "button";
  forget.className = "al-memory-forget";
  forget.textContent = t.forget;
  forget.addEventListener("click", () => { memoryForget(); M.offer = null; memoryRender(parentElement, []); });
  row.append(later, forget);
  root.appendChild(row);
  const note = document.createElement("p");
  note.className = "al-memory-note";
  note.textContent = t.note;
  root.appendChild(note);
  memoryShow(parentElement, true);
}

export default function (component) {
  const { data, parentElement } = component;
  if (!parentElement.querySelector(".al-silent")) parentElement.appendChild(document.createElement("div")).className = "al-silent";
  const M = window.__attnlabMemory || (window.__attnlabMemory = { offer: undefined, forgotten: null, bound: false });
  M.data = data;
  if (data.forget && data.forget !== M.forgotten) { // the sidebar's "Forget my progress"
    M.forgotten = data.forget;
    memoryForget();
    M.offer = null;
  }
  if (M.offer === undefined) { // the first run drawn in this page load decides whether to offer
    const stored = data.bare ? memoryRead() : null;
    const targets = stored ? memoryTargets(stored) : [];
    M.offer = targets.length ? targets : null;
  }
  memoryRender(parentElement, M.offer || []);
  if (!M.bound) {
    M.bound = true;
    window.addEventListener("pagehide", memorySave);
    document.addEventListener("visibilitychange", () => { if (document.hidden) memorySave(); });
  }
  clearTimeout(M.timer);
  M.timer = setTimeout(memorySave, 400); // after the run: the link is in the address bar by then
}
