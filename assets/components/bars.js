// One bar chart as a component; the drawing is drawBars (bars_lib.js, which Python puts in front).
export default function (component) {
  const { data, parentElement } = component;
  let root = parentElement.querySelector("div.albars");
  if (!root) {
    root = document.createElement("div");
    root.className = "albars";
    parentElement.appendChild(root);
  }
  drawBars(root, data);
}
