// Attention Lab: a lesson link's QR code (a PNG drawn on the server) that never leaves its column,
// and a full-screen view of it for the back of the room: an overlay over the whole window (also
// in the browser's own full screen where allowed), the code as large as the window's shorter side
// allows; a click, the close button or Escape ends it. The link goes in as text only.
// Python puts dom_lib.js in front of this file.
function qrOverlay(data) {
  const shade = document.createElement("div");
  shade.className = "alqr-full";
  shade.setAttribute("role", "dialog");
  shade.setAttribute("aria-label", data.caption);
  Object.assign(shade.style, { position: "fixed", inset: "0", zIndex: "1000000", background: "#ffffff",
    display: "flex", flexDirection: "column", alignItems: "center", justifyContent: "center", gap: "1vh" });
  const img = document.createElement("img");
  img.src = "data:image/png;base64," + data.png;
  img.alt = data.caption;
  // the code as large as the window allows, its link under it
  Object.assign(img.style, { width: "min(86vh, 94vw)", height: "auto", imageRendering: "pixelated" });
  const link = text("div", null, data.link);
  Object.assign(link.style, { font: "1.6vh 'Source Code Pro', monospace", color: "#334155", maxWidth: "94vw",
    overflowWrap: "anywhere", maxHeight: "6vh", overflow: "hidden", textAlign: "center" });
  const close = text("button", null, data.close);
  close.type = "button";
  Object.assign(close.style, { position: "absolute", top: "12px", right: "12px", font: "16px 'Source Sans', sans-serif",
    padding: "6px 14px", borderRadius: "6px", border: "1px solid #cbd5e1", background: "#f8fafc", cursor: "pointer" });
  shade.append(img, link, close);
  const end = () => {
    document.removeEventListener("keydown", onKey, true);
    if (document.fullscreenElement === shade && document.exitFullscreen) document.exitFullscreen().catch(() => {});
    shade.remove();
  };
  const onKey = (e) => { if (e.key === "Escape") { e.stopPropagation(); end(); } };
  shade.addEventListener("click", end);
  document.addEventListener("keydown", onKey, true);
  document.body.appendChild(shade);  // outside every Streamlit box: fixed to the window itself
  close.focus();
  if (shade.requestFullscreen) shade.requestFullscreen().catch(() => {});  // a real full screen where allowed
}

export default function (component) {
  const { data, parentElement } = component;
  const root = ownRoot(parentElement, "alqr");
  const img = document.createElement("img");
  img.className = "code";
  img.src = "data:image/png;base64," + data.png;
  img.alt = data.caption;
  const caption = text("div", "caption", data.caption);
  const full = text("button", "full", data.full);
  full.type = "button";
  full.addEventListener("click", () => qrOverlay(data));
  root.replaceChildren(img, caption, full);
}
