// anywidget's entry point for the notebook views (attention_lab/notebook.py): the app's own
// components (maps.js as alMaps, inspector.js as alInspector, joined in front of this file) drawn
// from the widget's `data`; `query` is the picked query (the weights map's highlighted row or
// column, and the inspector shown). A click on the weights map or the picker changes it. `lang`
// is the language shown: data.langs holds every language's panels and inspectors (the picker on top).
function alRender({ model, el }) {
  const bar = text("div", "al-langs"), maps = document.createElement("div"), insp = document.createElement("div");
  el.classList.add("attention-lab-nb");
  el.append(bar, maps, insp);
  const langs = model.get("data").langs || {};
  if (Object.keys(langs).length > 1) {
    const select = document.createElement("select");
    select.className = "al-lang";
    for (const code of Object.keys(langs)) {
      const option = text("option", null, (model.get("data").lang_names || {})[code] || code);
      option.value = code;
      select.appendChild(option);
    }
    select.value = model.get("lang");
    select.addEventListener("change", () => { model.set("lang", select.value); model.save_changes(); });
    model.on("change:lang", () => { select.value = model.get("lang"); });
    bar.appendChild(select);
  }
  const pick = (j) => {
    const d = model.get("data");
    if (!d.inspectors || !Number.isInteger(j) || j < 0 || j >= d.inspectors.length) return;
    model.set("query", j);
    model.save_changes();
  };
  const draw = () => {
    const d = JSON.parse(JSON.stringify(model.get("data")));  // drawMap decodes into its data: a copy each time
    const chosen = (d.langs || {})[model.get("lang")];
    if (chosen) Object.assign(d, chosen);  // the panels and inspectors in the picked language
    const q = model.get("query");
    const live = Array.isArray(d.inspectors) && d.inspectors.length > 0;
    for (const p of d.panels) {
      if (!p.pick || !live) continue;
      if (d.conv === "row") p.map.highlight_row = q;
      else p.map.highlight_col = q;
    }
    alMaps({ data: d, parentElement: maps, setTriggerValue: (name, cell) => {
      if (name === "cell" && d.panels[cell[0]] && d.panels[cell[0]].pick) pick(d.conv === "row" ? cell[1] : cell[2]);
    } });
    if (live && d.inspectors[q]) {
      alInspector({ data: d.inspectors[q], parentElement: insp, setTriggerValue: (name, j) => { if (name === "query") pick(j); } });
    } else {
      insp.replaceChildren();
    }
  };
  // the static SVG of the same maps, saved beside the widget for viewers without a kernel: hidden while the widget lives
  const twin = () => document.querySelectorAll('[data-al-static="' + model.get("data").static_id + '"]');
  twin().forEach((e) => { e.style.display = "none"; });
  model.on("change:query", draw);
  model.on("change:data", draw);
  model.on("change:lang", draw);
  draw();
  return () => {
    model.off("change:query", draw);
    model.off("change:data", draw);
    model.off("change:lang", draw);
    twin().forEach((e) => { e.style.display = ""; });
  };
}

export default { render: alRender };
