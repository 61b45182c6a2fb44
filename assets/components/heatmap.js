// One heatmap (see heatmap_lib.js, which Python puts in front of this file).
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let root = parentElement.querySelector("div.alhm");
  if (!root) {
    root = document.createElement("div");
    root.className = "alhm";
    parentElement.appendChild(root);
  }
  drawMap(root, data, (cell) => setTriggerValue("cell", cell));
}
