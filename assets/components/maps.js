// The pipeline's panels as ONE element: each panel is a title, its formula (MathML generated from
// the LaTeX of attention_lab/formulas.py), its shape line, notes and a heatmap drawn by heatmap_lib.js
// (Python puts it and dom_lib.js in front of this file). One element instead of five maps, five
// headers and their columns: the browser renders one message per rerun instead of about twenty.
// Learner text (token labels, inside the maps) goes in with textContent only.
function panelBox(p, index, onCell) {
  const box = text("div", "panel " + p.css);  // the map's own key as a class, as a separate map would have
  box.dataset.key = p.key;
  const head = text("div", "head");
  head.appendChild(text("span", "title", p.title));
  const formula = p.mathml ? mathElement(p.mathml) : null;
  if (formula) head.appendChild(formula);
  head.appendChild(text("span", "shape-badge", p.shape));  // on the title's line where it fits: lower panels
  box.appendChild(head);
  for (const note of p.before || []) box.appendChild(text("div", "note", note));
  const root = text("div", "alhm");
  box.appendChild(root);
  const draw = () => {
    drawMap(root, p.map, (cell) => onCell([index, cell[0], cell[1]]));
    const pictures = root.querySelector(".export");  // on the title's line: not over the corner label
    if (pictures) head.appendChild(pictures);
  };
  return { box, root, draw };
}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const grid = ownRoot(parentElement, "almaps");
  grid.classList.toggle("present", !!data.present);
  grid.classList.toggle("hc", !!data.hc);
  grid.style.gridTemplateColumns = "repeat(" + data.per_row + ", minmax(0, 1fr))";
  grid.replaceChildren();
  let newest = null;
  data.panels.forEach((p, index) => {
    const panel = panelBox(p, index, (cell) => setTriggerValue("cell", cell));
    grid.appendChild(panel.box);  // in the page before drawing: a canvas map sizes itself to its box
    panel.draw();
    for (const note of p.after || []) panel.box.appendChild(text("div", "note", note));
    if (p.warning) panel.box.appendChild(text("div", "warning", p.warning));
    if (p.key === data.focus) newest = panel.box;
  });
  bringIntoView(grid, newest, newest ? data.focus : "");  // the step just shown
}
