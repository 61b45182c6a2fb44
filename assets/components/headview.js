// Attention Lab head view (BertViz's picture): the tokens twice, queries on the left and keys on the
// right, joined by lines whose opacity is the attention weight. Hover a token to see only its lines
// (a left token: where it looks; a right token: who looks at it). Tokens are set with textContent only.
const NS = "http://www.w3.org/2000/svg";

export default function (component) {
  const { data, parentElement } = component;
  const root = ownRoot(parentElement, "alhv");
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  };
  const toks = data.tokens, w = data.w, n = toks.length, row = data.row || 22, mid = data.mid || 170;
  const head = el("div", "titles");
  const gapTitle = el("div", "t-mid");
  gapTitle.style.width = mid + "px";
  head.append(el("div", "t-left", data.left_title), gapTitle, el("div", "t-right", data.right_title));
  const body = el("div", "body");
  const left = el("div", "col left"), right = el("div", "col right");
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("width", mid);
  svg.setAttribute("height", n * row);
  svg.setAttribute("class", "lines");
  toks.forEach((t, i) => {
    const a = el("div", "tok", t);
    a.tabIndex = 0;  // the keyboard: focusing a token shows its lines, as hovering does
    a.dataset.i = i;
    a.style.height = row + "px";
    left.appendChild(a);
    const b = el("div", "tok", t);
    b.tabIndex = 0;
    b.dataset.j = i;
    b.style.height = row + "px";
    right.appendChild(b);
  });
  const lines = [];
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (w[i][j] < data.min_weight) continue;  // fainter than the eye can see: not drawn
      const ln = document.createElementNS(NS, "line");
      ln.setAttribute("x1", 3);
      ln.setAttribute("y1", i * row + row / 2);
      ln.setAttribute("x2", mid - 3);
      ln.setAttribute("y2", j * row + row / 2);
      ln.setAttribute("stroke", data.color);
      ln.setAttribute("stroke-opacity", w[i][j]);
      ln.setAttribute("stroke-width", 2);
      ln.dataset.i = i;
      ln.dataset.j = j;
      svg.appendChild(ln);
      lines.push(ln);
    }
  }
  const shade = (tokEls, weights) => tokEls.forEach((e, k) => {
    e.style.background = weights ? "rgba(" + data.rgb + "," + weights[k] + ")" : "";
  });
  const reset = () => {
    root.dataset.focus = "";
    lines.forEach((ln) => ln.classList.remove("off"));
    [...left.children, ...right.children].forEach((e) => e.classList.remove("on"));
    shade([...left.children], null);
    shade([...right.children], null);
  };
  const focus = (side, k) => {
    reset();
    root.dataset.focus = side + k;
    lines.forEach((ln) => { if (+ln.dataset[side] !== k) ln.classList.add("off"); });
    if (side === "i") {
      left.children[k].classList.add("on");
      shade([...right.children], w[k]);
    } else {
      right.children[k].classList.add("on");
      shade([...left.children], w.map((r) => r[k]));
    }
  };
  left.addEventListener("mouseover", (e) => {
    const tok = e.target.closest(".tok");
    if (tok) focus("i", +tok.dataset.i);
  });
  right.addEventListener("mouseover", (e) => {
    const tok = e.target.closest(".tok");
    if (tok) focus("j", +tok.dataset.j);
  });
  body.addEventListener("mouseleave", reset);
  body.addEventListener("focusin", (e) => {
    const tok = e.target.closest(".tok");
    if (tok) focus(tok.dataset.i !== undefined ? "i" : "j", +(tok.dataset.i !== undefined ? tok.dataset.i : tok.dataset.j));
  });
  body.addEventListener("focusout", (e) => { if (!body.contains(e.relatedTarget)) reset(); });
  body.append(left, svg, right);
  root.replaceChildren(head, body);
  root.dataset.lines = String(lines.length);
  root.dataset.focus = "";
}
