// Attention Lab heatmap: a labelled table of coloured cells, clickable.
// Everything the learner typed is inserted with textContent (never as HTML).
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let root = parentElement.querySelector("div.alhm");
  if (!root) {
    root = document.createElement("div");
    root.className = "alhm";
    parentElement.appendChild(root);
  }
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  };
  const table = el("table", data.clickable ? "clickable" : "");
  const head = el("tr");
  head.appendChild(el("th", "corner", data.y_title + " ↓  " + data.x_title + " →"));
  data.xs.forEach((x, j) => {
    const th = el("th", data.vertical ? "col vertical" : "col", x);
    if (data.highlight_col === j) th.classList.add("hl");
    head.appendChild(th);
  });
  if (data.side) head.appendChild(el("th", "side-h", data.side_title || ""));
  table.appendChild(head);
  data.ys.forEach((y, i) => {
    const tr = el("tr");
    if (data.highlight_row === i) tr.className = "hl";
    tr.appendChild(el("th", "row", y));
    data.text[i].forEach((t, j) => {
      const td = el("td", null, data.show_text ? t : "");
      td.style.background = data.bg[i][j];
      td.style.color = data.fg[i][j];
      td.dataset.i = i;
      td.dataset.j = j;
      if (data.highlight_col === j) td.classList.add("hlc");
      if (data.mark && data.mark[0] === i && data.mark[1] === j) td.classList.add("mark");
      tr.appendChild(td);
    });
    if (data.side) tr.appendChild(el("td", "side", data.side[i]));
    table.appendChild(tr);
  });
  root.replaceChildren(table);
  root.dataset.z = JSON.stringify(data.z);
  const tip = (e) => {
    const td = e.target.closest("td[data-i]");
    if (!td) return;
    const i = +td.dataset.i, j = +td.dataset.j;
    td.title = data.y_title + ": " + data.ys[i] + "\n" + data.x_title + ": " + data.xs[j] + "\n" + data.text[i][j];
  };
  table.addEventListener("mouseover", tip);
  if (data.clickable) {
    table.addEventListener("click", (e) => {
      const td = e.target.closest("td[data-i]");
      if (td) setTriggerValue("cell", [+td.dataset.i, +td.dataset.j]);
    });
  }
}
