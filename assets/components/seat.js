// A student's seat in a live class, kept in this browser only (localStorage, per origin): the class's join code
// and the student's id, so that a reload or a new tab is the same student again (ui.live). Invisible.
// data.seat: save it; data.ask: the session's first run, report the kept seat (if any) as the "seat" trigger;
// data.forget: the student left, or the class is gone: remove it.
const SEAT_KEY = "attention-lab.seat";

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  silentMount(parentElement, true); // silent_lib.js
  try {
    if (data.forget) window.localStorage.removeItem(SEAT_KEY);
    if (data.seat) {
      window.localStorage.setItem(SEAT_KEY, JSON.stringify({ code: data.seat.code, sid: data.seat.sid }));
    } else if (data.ask && !window.__attnlabSeatAsked) {
      window.__attnlabSeatAsked = true; // once per page load
      const kept = JSON.parse(window.localStorage.getItem(SEAT_KEY) || "null");
      if (kept && typeof kept.code === "string" && typeof kept.sid === "string") {
        setTriggerValue("seat", { code: kept.code.slice(0, 16), sid: kept.sid.slice(0, 40) });
      }
    }
  } catch (e) {
    /* no storage (private mode, blocked) or not our JSON: the student joins again with the code */
  }
}
