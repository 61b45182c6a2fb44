// One heatmap (see heatmap_lib.js; Python puts it and dom_lib.js in front of this file).
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const root = ownRoot(parentElement, "alhm");
  drawMap(root, data, (cell) => setTriggerValue("cell", cell));
}
