"""The SVG under every plotly chart (ui.widgets.chart_svg): well-formed, titled, labelled, one mark
per data point, text kept as text; the figures the pages really build, in both languages; one
SVG button per chart."""

from __future__ import annotations

import base64
import io
import json
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

from ui import state
from ui.widgets import figures
from ui.widgets.chart_svg import figure_svg
from ui.widgets.figures import line_figure

from .helpers import no_errors, page

NS = {"s": "http://www.w3.org/2000/svg"}
SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


def parse(spec: dict) -> ET.Element:
    return ET.fromstring(figure_svg(spec))


def texts(root: ET.Element, cls: str | None = None) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text") if cls is None or t.get("class") == cls]


def trace_groups(root: ET.Element) -> list[ET.Element]:
    """One <g> per drawn trace, in the figure's order."""
    return root.findall("./s:g[@class='traces']/s:g", NS)


def count(group: ET.Element, tag: str, cls: str | None = None) -> int:
    return sum(1 for e in group.iter(f"{SVG}{tag}") if cls is None or e.get("class") == cls)


def legend_names(root: ET.Element) -> list[str]:
    return texts(root, "legend-name")


# ------------------------------------------------------------------ expectations, worked out independently
def finite(v, log: bool = False) -> bool:
    if v is None or isinstance(v, str):
        return v is not None and not log
    return math.isfinite(float(v)) and (not log or float(v) > 0)


def scatter_expected(tr: dict, xlog: bool, ylog: bool) -> dict:
    """Polylines (unbroken runs of ≥ 2 drawable points), circles and point texts of a scatter trace."""
    ys = tr.get("y") or []
    xs = tr.get("x") if tr.get("x") is not None else list(range(len(ys)))
    ok = [finite(x, xlog) and finite(y, ylog) for x, y in zip(xs, ys, strict=False)]
    runs, n = 0, 0
    for good in ok + [False]:
        if good:
            n += 1
        else:
            runs, n = runs + (n >= 2), 0
    mode = tr.get("mode") or ("lines+markers" if len(ys) < 20 else "lines")
    text = [s for s, good in zip(tr.get("text") or [], ok, strict=False) if good and s not in (None, "")]
    return {"polyline": runs if "lines" in mode else 0, "circle": sum(ok) if "markers" in mode else 0,
            "text": len(text) if "text" in mode else 0}


def check_marks(spec: dict, root: ET.Element) -> None:
    """Every trace of a figure drawn with one mark per data point (heatmaps: covering every cell)."""
    layout = spec.get("layout", {})
    xlog = layout.get("xaxis", {}).get("type") == "log"
    ylog = layout.get("yaxis", {}).get("type") == "log"
    traces = [tr for tr in spec["data"] if tr.get("visible", True) is not False]
    groups = trace_groups(root)
    assert len(groups) == len(traces)
    for tr, g in zip(traces, groups, strict=True):
        kind = tr.get("type", "scatter")
        if kind == "scatter":
            want = scatter_expected(tr, xlog, ylog)
            assert {tag: count(g, tag) for tag in want} == want, tr.get("name")
        elif kind == "histogram":
            counts = [int(r.find(f"{SVG}title").text) for r in g.iter(f"{SVG}rect")]
            assert sum(counts) == sum(finite(v) for v in tr["x"]) and len(counts) <= tr.get("nbinsx", 20) + 1
        elif kind == "bar":
            vals = tr["x"] if tr.get("orientation") == "h" else tr["y"]
            assert count(g, "rect", "bar") == sum(finite(v) for v in vals)
        elif kind == "heatmap":
            check_heat_area(tr, g, root)
        elif kind == "image":
            assert count(g, "image") == 1


def check_heat_area(tr: dict, g: ET.Element, root: ET.Element) -> None:
    """The cells' rects cover exactly the cells that have a value (equal neighbours may share one)."""
    z = tr["z"]
    rects = list(g.iter(f"{SVG}rect"))
    img = root.find(".//s:image", NS)
    if img is not None:  # the ViT overlay: one heatmap cell per image pixel
        unit_w, unit_h = float(img.get("width")) / len(z[0]), float(img.get("height")) / len(z)
    else:
        xs = sorted({float(r.get("x")) for r in rects} | {float(r.get("x")) + float(r.get("width")) for r in rects})
        ys = sorted({float(r.get("y")) for r in rects} | {float(r.get("y")) + float(r.get("height")) for r in rects})
        unit_w, unit_h = (xs[-1] - xs[0]) / len(z[0]), (ys[-1] - ys[0]) / len(z)
    area = sum(float(r.get("width")) * float(r.get("height")) for r in rects) / (unit_w * unit_h)
    assert area == pytest.approx(sum(finite(v) for row in z for v in row), rel=1e-3)


def check_text(spec: dict, root: ET.Element) -> None:
    """Title, axis titles, notes and (where plotly shows a legend) every trace name, as text."""
    layout = spec.get("layout", {})
    shown = set(texts(root))
    title = layout.get("title")
    if title:
        assert (title["text"] if isinstance(title, dict) else title) in texts(root, "title")
    for axis in ("xaxis", "yaxis"):
        ax = layout.get(axis, {})
        if ax.get("visible", True) and ax.get("title", {}).get("text"):
            assert ax["title"]["text"] in texts(root, "axis-title")
    assert {a["text"] for a in layout.get("annotations", [])} <= shown
    named = [tr["name"] for tr in spec["data"] if tr.get("name") and tr.get("showlegend") is not False]
    if len(named) >= 2:
        assert legend_names(root) == named


# ------------------------------------------------------------------ the figures the pages build
PAGES = {
    "app_pages/score_functions.py": 5,
    "app_pages/seq2seq.py": 2,
    "app_pages/self_vs_cross.py": 1,
    "app_pages/vision_transformer.py": 1,
    "app_pages/transformer_block.py": 2,
}


def page_charts(path: str, lang: str):
    at = page(path, query={"lang": lang}) if lang != "en" else page(path)
    if path.endswith("transformer_block.py"):  # its cost charts appear once measured
        at.button(key=state.TRANSFORMER_BLOCK.measure).click().run()
    no_errors(at)
    charts = {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}
    return at, charts


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("path", list(PAGES))
def test_every_chart_of_a_page_as_svg(path, lang):
    at, charts = page_charts(path, lang)
    assert len(charts) >= PAGES[path], sorted(charts)
    buttons = {b.proto.id.rsplit("-", 1)[-1]: b for b in at.get("download_button")}
    for key, spec in charts.items():
        root = ET.fromstring(figure_svg(spec))
        assert root.tag == f"{SVG}svg" and "Noto Sans CJK KR" in root.get("font-family")
        check_text(spec, root)
        check_marks(spec, root)
        button = buttons[state.item(key, "svg")]  # one SVG download under every chart
        assert button.proto.label == "SVG" and button.proto.help


def test_the_layer_figure_of_self_vs_cross_draws_every_weight_and_node():
    _, charts = page_charts("app_pages/self_vs_cross.py", "en")
    spec = charts[state.SELF_VS_CROSS.layer]
    n_in, n_out = len(spec["data"][-2]["y"]), len(spec["data"][-1]["y"])
    root = ET.fromstring(figure_svg(spec))
    assert sum(count(g, "polyline") for g in trace_groups(root)) == n_in * n_out
    assert sum(count(g, "circle") for g in trace_groups(root)) == n_in + n_out
    assert set(spec["data"][-2]["text"] + spec["data"][-1]["text"]) <= set(texts(root, "point-text"))
    assert legend_names(root) == []  # every trace says showlegend: False


def test_score_functions_page_has_one_svg_button_per_chart():
    at = page("app_pages/score_functions.py")
    no_errors(at)
    charts = [el.proto.id.rsplit("-", 1)[-1] for el in at.get("plotly_chart")]
    svgs = [b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button") if b.proto.label == "SVG"]
    assert len(charts) == 5 and sorted(svgs) == sorted(state.item(k, "svg") for k in charts)
    assert all(b.proto.deferred_file_id for b in at.get("download_button") if b.proto.label == "SVG")  # drawn on click


def test_show_chart_hands_the_figure_with_its_title_to_the_button(monkeypatch):
    calls = {}
    monkeypatch.setattr(figures.st, "plotly_chart", lambda fig, **kw: calls.setdefault("chart", kw))
    monkeypatch.setattr(figures.st, "download_button", lambda label, **kw: calls.setdefault("button", (label, kw)))
    fig = line_figure([{"type": "scatter", "x": [1, 2], "y": [3, 4], "name": "a"}], {})
    figures.show_chart(fig, key=state.SCORE_FUNCTIONS.exp_var, title="제목 <b>x</b>")
    label, kw = calls["button"]
    assert calls["chart"] == {"key": state.SCORE_FUNCTIONS.exp_var, "config": figures.CHART_CONFIG, "alt": None}
    assert label == "SVG" and kw["key"] == state.item(state.SCORE_FUNCTIONS.exp_var, "svg")
    assert kw["file_name"] == "score_functions-exp_var.svg" and kw["mime"] == "image/svg+xml"
    root = ET.fromstring(kw["data"]())
    assert texts(root, "title") == ["제목 <b>x</b>"]
    assert "title" not in fig.to_dict()["layout"]  # the chart on the page keeps its heading above it


# ------------------------------------------------------------------ every kind of trace, by hand
def test_scatter_modes_gaps_and_missing_x():
    spec = {"data": [
        {"type": "scatter", "mode": "lines", "y": [1, 2, 3, 4, 5], "name": "no x"},
        {"type": "scatter", "mode": "markers", "x": [0, 1, 2, 3], "y": [1, None, float("nan"), 2], "name": "gaps"},
        {"type": "scatter", "mode": "lines+markers", "x": [0, 1, 2, 3, 4], "y": [1, 2, None, 3, 4], "name": "broken"},
        {"mode": "markers+text", "x": [1, 2], "y": [1, 2], "text": ["p", "q"], "textposition": "middle left"},
    ], "layout": {"title": {"text": "Scatter"}, "xaxis": {"title": {"text": "step"}}}}
    root = parse(spec)
    check_marks(spec, root)
    check_text(spec, root)
    first = trace_groups(root)[0].find("s:polyline", NS)
    assert len(first.get("points").split()) == 5  # x omitted → 0 … 4
    assert legend_names(root) == ["no x", "gaps", "broken"]  # the unnamed trace has no entry


def test_bars_grouped_stacked_and_horizontal_with_token_labels():
    tokens = ["the", "cat", "sat"]
    for mode in ("group", "stack", "overlay"):
        spec = {"data": [{"type": "bar", "x": tokens, "y": [0.2, 0.5, 0.3], "name": "α"},
                         {"type": "bar", "x": tokens, "y": [0.1, None, 0.4], "name": "β"}],
                "layout": {"barmode": mode, "yaxis": {"title": {"text": "weight"}}}}
        root = parse(spec)
        check_marks(spec, root)
        check_text(spec, root)
        assert texts(root, "tick")[:3] == tokens
    spec = {"data": [{"type": "bar", "orientation": "h", "y": tokens, "x": [1, 2, 3], "name": "h"}], "layout": {}}
    root = parse(spec)
    check_marks(spec, root)
    rects = list(trace_groups(root)[0].iter(f"{SVG}rect"))
    assert [float(r.get("width")) for r in rects] == sorted(float(r.get("width")) for r in rects)  # longer for 2, 3
    assert set(tokens) <= set(texts(root, "tick"))


def test_histogram_counts_every_value_once():
    values = np.random.default_rng(0).normal(size=500).round(3).tolist()
    spec = {"data": [{"type": "histogram", "x": values + [None], "nbinsx": 30, "name": "a", "opacity": 0.6},
                     {"type": "histogram", "x": [v / 3 for v in values], "nbinsx": 30, "name": "b", "opacity": 0.6}],
            "layout": {"barmode": "overlay"}}
    root = parse(spec)
    check_marks(spec, root)
    assert legend_names(root) == ["a", "b"]
    assert trace_groups(root)[0].get("opacity") == "0.6"


def test_heatmap_cells_labels_colours_and_masked_cells():
    z = [[0.0, 0.25, None, 1.0], [0.5, float("nan"), 0.75, 0.1], [0.2, 0.3, 0.4, 0.6]]
    spec = {"data": [{"type": "heatmap", "z": z, "x": ["k0", "k1", "k2", "k3"], "y": ["q0", "q1", "q2"],
                      "zmin": 0.0, "zmax": 1.0, "showscale": False,
                      "colorscale": [[0, "rgb(247, 251, 255)"], [0.5, "rgb(107, 174, 214)"], [1, "rgb(8, 48, 107)"]]}],
            "layout": {"yaxis": {"autorange": "reversed", "title": {"text": "query"}}, "xaxis": {"title": {"text": "key"}}}}
    root = parse(spec)
    check_marks(spec, root)
    check_text(spec, root)
    cells = list(trace_groups(root)[0].iter(f"{SVG}rect"))
    assert len(cells) == 10  # 12 cells, None and NaN left empty
    by_value = {c.find(f"{SVG}title").text: c.get("fill") for c in cells}
    assert by_value["0"] == "rgb(247,251,255)" and by_value["1"] == "rgb(8,48,107)" and by_value["0.5"] == "rgb(107,174,214)"
    assert {"k0", "k1", "k2", "k3", "q0", "q1", "q2"} <= set(texts(root, "tick"))
    top_row = min(float(c.get("y")) for c in cells)  # reversed: q0 on top
    assert {c.find(f"{SVG}title").text for c in cells if float(c.get("y")) == top_row} == {"0", "0.25", "1"}


def test_heatmap_patches_blown_up_to_pixels_are_one_rect_each():
    amap = np.arange(12, dtype=float).reshape(3, 4) / 12
    z = np.kron(amap, np.ones((8, 8))).round(4).tolist()
    spec = {"data": [{"type": "heatmap", "z": z, "colorscale": "Inferno", "showscale": False}],
            "layout": {"xaxis": {"visible": False}, "yaxis": {"visible": False}}}
    root = parse(spec)
    assert count(trace_groups(root)[0], "rect") == 12
    assert texts(root) == []  # hidden axes: no ticks, no titles


def test_log_axes_ticks_and_skipped_values():
    spec = {"data": [{"type": "scatter", "mode": "lines+markers", "x": [1, 10, 100, 1000], "y": [0.5, 5, -1, 500]}],
            "layout": {"xaxis": {"type": "log", "title": {"text": "d"}}, "yaxis": {"type": "log"}}}
    root = parse(spec)
    check_marks(spec, root)  # the −1 cannot sit on a log axis: the line breaks there
    assert {"1", "10", "100", "1000"} <= set(texts(root, "tick"))


def test_image_shapes_and_annotations():
    buf = io.BytesIO()
    Image.fromarray(np.zeros((6, 9, 3), dtype=np.uint8)).save(buf, format="PNG")
    uri = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    spec = {"data": [{"type": "image", "source": uri}],
            "layout": {"shapes": [{"type": "line", "x0": 2.5, "x1": 2.5, "y0": -0.5, "y1": 5.5},
                                  {"type": "rect", "x0": -0.5, "x1": 2.5, "y0": -0.5, "y1": 2.5, "fillcolor": "#eee",
                                   "layer": "below", "line": {"width": 0}}],
                       "annotations": [{"x": 4, "y": 0, "text": "note & more", "showarrow": False}],
                       "xaxis": {"visible": False}, "yaxis": {"visible": False, "scaleanchor": "x"}}}
    root = parse(spec)
    img = root.find(".//s:image", NS)
    assert float(img.get("width")) / 9 == pytest.approx(float(img.get("height")) / 6)  # equal units, 9 × 6 pixels
    assert len(root.findall(".//s:line[@class='shape']", NS)) == 1 and len(root.findall(".//s:rect[@class='shape']", NS)) == 1
    assert texts(root, "annotation") == ["note & more"]


def test_text_stays_text():
    nasty = ["<script>alert(1)</script>", "a & b", "<b>x</b>", '"quoted"', "ctrl\x01char"]
    spec = {"data": [{"type": "bar", "x": nasty, "y": [1, 2, 3, 4, 5], "name": "<b>x</b>"},
                     {"type": "scatter", "x": nasty, "y": [1, 2, 3, 4, 5], "name": "& <i>"}],
            "layout": {"title": "<script>t</script>", "xaxis": {"title": {"text": "<b>x</b>"}}}}
    svg = figure_svg(spec)
    assert "<script" not in svg and "<b>" not in svg
    root = ET.fromstring(svg)
    tags = {e.tag for e in root.iter()}
    assert not {"script", "b", "i", f"{SVG}script", f"{SVG}b"} & tags
    shown = texts(root)
    assert {"<script>alert(1)</script>", "a & b", "<b>x</b>", '"quoted"', "ctrlchar", "& <i>", "<script>t</script>"} <= set(shown)


def test_korean_labels_and_the_font():
    spec = {"data": [{"type": "scatter", "x": ["나는", "학생", "입니다"], "y": [1, 2, 3], "name": "가중치"},
                     {"type": "scatter", "x": ["나는", "학생", "입니다"], "y": [3, 2, 1], "name": "점수"}],
            "layout": {"title": {"text": "어텐션 가중치"}, "yaxis": {"title": {"text": "값"}}}}
    root = parse(spec)
    assert texts(root, "title") == ["어텐션 가중치"] and legend_names(root) == ["가중치", "점수"]
    assert {"나는", "학생", "입니다"} <= set(texts(root, "tick"))
    assert root.get("font-family") == "Source Sans, attention-lab-kr, Noto Sans CJK KR, sans-serif"


def test_a_korean_picture_carries_the_slices_of_the_shipped_font_it_uses():
    from attention_lab import svg_font

    spec = {"data": [{"type": "bar", "x": ["나는", "오늘", "사과를", "먹었다"], "y": [1, 2, 3, 4], "name": "가중치"}],
            "layout": {"title": {"text": "어텐션 가중치"}}}
    svg = figure_svg(spec)
    faces = re.findall(r"@font-face \{[^}]*?unicode-range: ([^;]+);[^}]*?base64,([A-Za-z0-9+/=]+)\)", svg)
    assert faces and len(faces) == svg.count("@font-face") == len(svg_font.used_slices("나는오늘사과를먹었다가중치어텐션"))
    covered = set()
    for rng, _ in faces:
        for part in rng.split(","):
            lo, _, hi = part.strip()[2:].partition("-")
            covered.update(range(int(lo, 16), int(hi or lo, 16) + 1))
    assert {ord(c) for c in "나는오늘사과를먹었다가중치어텐션"} <= covered
    assert sum(len(data) for _, data in faces) <= 120_000  # a few slices, not the whole font (830 KB as base64)
    assert ET.fromstring(svg).tag == f"{SVG}svg"  # still well-formed XML
    english = figure_svg({"data": [{"type": "bar", "x": ["the", "cat"], "y": [1, 2]}], "layout": {"title": {"text": "Weights"}}})
    assert "@font-face" not in english and "<style" not in english


@pytest.mark.parametrize("spec", [
    {},
    {"data": [], "layout": {}},
    {"data": [{"type": "scatter", "y": [None, float("nan")]}]},
    {"data": [{"type": "heatmap", "z": [[None, None]]}]},
    {"data": [{"type": "heatmap", "z": []}]},
    {"data": [{"type": "histogram", "x": []}, {"type": "bar", "y": [float("inf")]}]},
    {"data": [{"type": "pie", "values": [1, 2]}, {"type": "image", "source": "not a png"}]},
    {"data": [{"type": "scatter", "x": [1, 1], "y": [2, 2]}], "layout": {"xaxis": {"range": [3, 3]}}},
])
def test_empty_odd_and_unsupported_figures_still_give_a_picture(spec):
    root = ET.fromstring(figure_svg(spec))
    assert root.tag == f"{SVG}svg"


def test_a_large_heatmap_as_show_heatmap_draws_it_with_plotly():
    """Beyond 64 rows/columns ui.widgets.heatmap hands plotly a heatmap without labels, titled axes on
    top and left, the first row on top, a −∞ (masked) cell as null. Its cells become ONE picture with
    a pixel per cell (a rect each took seconds at 256 × 256 on a shared server); titles stay text."""
    import base64
    import io

    from PIL import Image

    z = np.random.default_rng(1).permutation(4900).reshape(70, 70) / 4900  # no two cells alike
    rows = [[None if (i, j) == (3, 5) else v for j, v in enumerate(r)] for i, r in enumerate(z.tolist())]
    spec = {"data": [{"type": "heatmap", "z": rows, "zmin": 0.0, "zmax": 1.0, "showscale": False,
                      "colorscale": [[0.0, "rgb(247, 251, 255)"], [0.5, "rgb(107, 174, 214)"], [1.0, "rgb(8, 48, 107)"]],
                      "hovertemplate": "query %{y}<br>key %{x}<br>%{z}<extra></extra>"}],
            "layout": {"height": 400, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
                       "xaxis": {"title": {"text": "키"}, "side": "top", "showticklabels": False},
                       "yaxis": {"title": {"text": "쿼리"}, "autorange": "reversed", "showticklabels": False}}}
    root = parse(spec)
    check_text(spec, root)
    group = trace_groups(root)[0]
    assert list(group.iter(f"{SVG}rect")) == [] and texts(root, "tick") == []
    (picture,) = list(group.iter(f"{SVG}image"))
    png = Image.open(io.BytesIO(base64.b64decode(picture.get(f"{XLINK}href").split(",", 1)[1]))).convert("RGBA")
    assert png.size == (70, 70)
    assert png.getpixel((5, 3))[3] == 0 and png.getpixel((0, 0))[3] == 255  # the masked cell stays empty

    def colour(v: float) -> tuple:  # the colour scale by hand: two linear pieces
        lo, mid, hi = (247, 251, 255), (107, 174, 214), (8, 48, 107)
        a, b, f = (lo, mid, v / 0.5) if v <= 0.5 else (mid, hi, (v - 0.5) / 0.5)
        return tuple(round(x + f * (y - x)) for x, y in zip(a, b, strict=True))

    for i, j in ((0, 0), (0, 69), (69, 0), (40, 17)):  # the first row on top, as plotly draws it
        assert all(abs(p - q) <= 1 for p, q in zip(png.getpixel((j, i))[:3], colour(z[i, j]), strict=True)), (i, j)
    cells = [picture]
    x_title = next(t for t in root.iter(f"{SVG}text") if t.get("class") == "axis-title" and t.text == "키")
    assert float(x_title.get("y")) < min(float(c.get("y")) for c in cells)  # above the map
