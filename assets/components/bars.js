// One bar chart as a component; the drawing is drawBars (Python puts bars_lib.js and dom_lib.js in front).
export default function (component) {
  const { data, parentElement } = component;
  const root = ownRoot(parentElement, "albars");
  drawBars(root, data);
}
