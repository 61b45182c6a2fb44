// "SVG" and "PNG" under a plotly chart (ui.widgets.figures.show_chart). Plotly.js — which Streamlit's
// chart element loads as window.Plotly — draws the chart on screen, with its data, layout and size,
// as an SVG (Plotly.toImage); the chart's title (a heading on the page) goes on top. When the
// picture has Hangul, the shipped Korean font goes inside as an @font-face, so its Korean renders on a
// machine without a Korean font; the PNG is that SVG drawn at 2× on a canvas (the font inside too).
// Python puts dom_lib.js in front of this file. The title goes in as plotly text, escaped.
const CHART_PNG_SCALE = 2;
const CHART_TITLE_ROOM = 36;  // pixels added above the plot for the title

function chartDiv(data) {
  return document.querySelector("." + data.chart + " .js-plotly-plot");
}

function escapedTitle(text) {  // plotly reads <b>, <br> and entities in text: the title stays as typed
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

// The chart as on screen → {svg (text), width, height}
function chartPicture(gd, data) {
  const full = gd._fullLayout || {};
  const width = Math.round(full.width || 700);
  let height = Math.round(full.height || 450);
  const layout = Object.assign({}, gd.layout);
  if (data.title) {
    const m = full.margin || {};
    layout.margin = { l: m.l, r: m.r, b: m.b, t: (m.t || 0) + CHART_TITLE_ROOM, pad: m.pad };
    height += CHART_TITLE_ROOM;
    layout.title = { text: escapedTitle(data.title), x: 0, xref: "paper", xanchor: "left", y: 1 - 12 / height,
      yref: "container", yanchor: "top" };
  }
  return window.Plotly.toImage({ data: gd.data, layout }, { format: "svg", width, height, imageDataOnly: true })
    .then((svg) => shippedFont(svg).then((font) => {
      // plotly's own <style> (if any) stays; the font's goes first, right after the root's tag
      const withFont = font ? svg.replace(/<svg\b[^>]*>/, (tag) => tag + "<style>" + fontFaceStyle(font) + "</style>") : svg;
      return { svg: withFont, width, height };
    }));
}

function chartPng(pic, scale, done) {
  const url = URL.createObjectURL(new Blob([pic.svg], { type: "image/svg+xml" }));
  const img = new Image();
  img.onload = () => {
    const c = document.createElement("canvas");
    c.width = pic.width * scale;
    c.height = pic.height * scale;
    const ctx = c.getContext("2d");
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, c.width, c.height);
    ctx.drawImage(img, 0, 0, c.width, c.height);
    URL.revokeObjectURL(url);
    c.toBlob(done, "image/png");
  };
  img.src = url;
}

export default function (component) {
  const { data, parentElement } = component;
  const bar = ownRoot(parentElement, "alchart");
  bar.classList.toggle("hc", !!data.hc);
  bar.replaceChildren();
  const save = (label, help, make) => {
    const b = text("button", null, label);
    b.type = "button";
    b.title = help;
    b.addEventListener("click", () => {
      const gd = chartDiv(data);
      if (gd && window.Plotly) chartPicture(gd, data).then(make);
    });
    bar.appendChild(b);
  };
  save("SVG", data.help.svg, (pic) => download(data.file + ".svg", new Blob([pic.svg], { type: "image/svg+xml" })));
  save("PNG", data.help.png, (pic) => chartPng(pic, CHART_PNG_SCALE, (blob) => download(data.file + ".png", blob)));
}
