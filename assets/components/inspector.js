// The query inspector as ONE element: its title and formula, the query picker, then one section
// per chart (a heading, the bars drawn by drawBars, a note). Python puts dom_lib.js and
// bars_lib.js in front of this file. One element instead of about a dozen Streamlit elements
// (each re-rendered on every change: BENCHMARKS.md). Learner text goes in as textContent.
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const root = ownRoot(parentElement, "alinspector");
  const head = text("div", "head");
  head.appendChild(text("span", "title", data.title));
  const formula = data.mathml ? mathElement(data.mathml) : null;
  if (formula) head.appendChild(formula);
  const pick = text("label", "pick " + data.picker_css);
  pick.appendChild(text("span", null, data.pick));
  const select = document.createElement("select");
  data.options.forEach((name, i) => {
    const option = text("option", null, name);
    option.value = String(i);
    select.appendChild(option);
  });
  select.value = String(data.chosen);
  select.addEventListener("change", () => setTriggerValue("query", Number(select.value)));
  pick.appendChild(select);
  const grid = text("div", "sections");
  data.sections.forEach((s) => {
    const box = text("div", "section " + s.css);
    box.dataset.key = s.key;
    box.appendChild(text("div", "heading", s.heading));
    const bars = text("div", "albars");
    drawBars(bars, s.bars);
    box.appendChild(bars);
    if (s.note) box.appendChild(text("div", "note", s.note));
    grid.appendChild(box);
  });
  root.replaceChildren(head, pick, grid);
  root.classList.toggle("present", !!data.present);  // presenter view: every text larger …
  if (data.present) {  // … as large as fits the window's height (many keys: smaller, never cut)
    let scale = 1;
    root.style.setProperty("--al-fit", "1");
    while (scale > 0.45 && root.offsetHeight > window.innerHeight - 90) {
      scale *= 0.9;
      root.style.setProperty("--al-fit", scale.toFixed(3));
    }
  } else {
    root.style.removeProperty("--al-fit");
  }
  bringIntoView(root, root, data.focus ? "inspector" : "");  // the step-through's last step
}
