"""The app's maps in Jupyter: any trace shown with the app's OWN components, plus a static fallback.

    from attention_lab import show
    show(core.lab.playground(X, X))            # the five pipeline steps, the query inspector
    show(core.attention(Q, K, V), tokens=[…])  # an AttentionTrace (2-D)
    show(mh, tokens=[…])                       # a MultiHeadTrace: every head's weights; head=h: one head's pipeline
    show(core.pretrained.minilm().trace("…"), layer=2)   # a trained model's 12 heads; head=h: its pipeline

The live view is an `anywidget <https://anywidget.dev>`_ whose JavaScript is the app's own
``assets/components`` files (dom_lib.js, heatmap_lib.js, maps.js, bars_lib.js, inspector.js), read
at run time and joined as they are (each file's ``export default`` becomes a named function): the
same tables and canvases, hover values, a click on a weights row or the query picker moves the
inspector, a language picker switches English / 한국어. Every output also carries a static SVG of the same maps (``text/html`` and
``image/svg+xml``), so a saved notebook, GitHub's viewer and ``nbconvert --to html`` show the maps
without a kernel. Streamlit is never imported; anywidget is needed only for the live view
(``pip install -e ".[notebook]"``).
"""

from __future__ import annotations

import base64
import dataclasses
import html
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from core.models.paths import ASSETS

from . import colours
from . import panels as P
from .strings import LANGS, translate

COMPONENTS = ASSETS / "components"
ADAPTER = Path(__file__).with_name("widget.js")  # anywidget's render(): feeds the components the widget's data
INSPECTOR_LIMIT = 16  # the query inspector (every query's bars, precomputed) for up to this many queries
MIME_SVG = "image/svg+xml"


# ---------------------------------------------------------------------------- the live widget
@cache
def widget_js() -> str:
    """The app's component files as one ES module: the libraries as they are, maps.js and
    inspector.js as named functions, and a small ``render`` that feeds them the widget's data."""
    read = lambda name: (COMPONENTS / name).read_text(encoding="utf-8")  # noqa: E731
    parts = [read("dom_lib.js"), read("heatmap_lib.js"), read("bars_lib.js")]
    for name, fn in (("maps.js", "alMaps"), ("inspector.js", "alInspector")):
        src = read(name)
        if "export default function" not in src:
            raise RuntimeError(f"assets/components/{name} no longer has 'export default function'")
        parts.append(src.replace("export default function", f"const {fn} = function", 1))
    return "\n".join(parts) + "\n" + ADAPTER.read_text(encoding="utf-8")


@cache
def widget_css() -> str:
    return "\n".join((COMPONENTS / n).read_text(encoding="utf-8")
                     for n in ("a11y.css", "heatmap.css", "maps.css", "bars.css", "inspector.css"))


def _widget_class():
    import anywidget
    import traitlets

    class AttentionMaps(anywidget.AnyWidget):
        """The maps as one widget: ``data`` (panels, inspectors), ``query`` (the picked query)."""

        _esm = widget_js()
        _css = widget_css()
        data = traitlets.Dict().tag(sync=True)
        query = traitlets.Int(0).tag(sync=True)
        lang = traitlets.Unicode("en").tag(sync=True)  # the language picked in the widget (data["langs"] holds both)

    return AttentionMaps


# ---------------------------------------------------------------------------- the view object
@dataclass
class Maps:
    """Maps ready to show: the panels (maps.js's data), the inspectors (one per query, or none),
    the notation and the language. Displayed in Jupyter it is two outputs: the static SVG, and the
    live widget (when anywidget is installed), which hides the SVG once it draws; ``svg()`` is the
    SVG alone."""

    panels: list[dict]
    per_row: int
    lang: str
    conv: str = "row"
    inspectors: list[dict] | None = None
    query: int = 0
    title: str = ""
    langs: dict | None = None  # every language's panels and inspectors (the widget's language picker)

    def __post_init__(self) -> None:
        self.static_id = uuid.uuid4().hex  # the live widget hides the static twin with this id

    def data(self) -> dict:
        return {"panels": self.panels, "per_row": self.per_row, "present": False, "conv": self.conv,
                "inspectors": self.inspectors, "static_id": self.static_id, "lang": self.lang, "langs": self.langs,
                "lang_names": {"en": "English", "ko": "한국어"}}

    def widget(self):
        """The live anywidget (raises ImportError without anywidget)."""
        return _widget_class()(data=self.data(), query=self.query, lang=self.lang)

    def svg(self) -> str:
        return maps_svg(self.panels, self.per_row, title=self.title)

    def static_bundle(self) -> dict:
        """The static output: the maps as SVG (in HTML, and as an image for viewers that take no HTML)."""
        svg = self.svg()
        return {"text/plain": f"<attention-lab maps: {', '.join(p['title'] for p in self.panels)}>",
                "text/html": f'<div class="attention-lab-static" data-al-static="{self.static_id}">{svg}</div>',
                MIME_SVG: svg}

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.static_bundle()

    def _ipython_display_(self) -> None:
        """Two outputs: the static SVG, then the live widget (which hides the SVG once it is drawn)."""
        from IPython.display import display

        display(self.static_bundle(), raw=True)
        try:
            display(self.widget())
        except ImportError:  # no anywidget: the static maps only
            pass

    def outputs(self) -> tuple[list, dict]:
        """The outputs a kernel would save for this view, made here without one: the static
        display_data, the widget's view, and the widget's state for the notebook's metadata."""
        import nbformat
        from ipywidgets.embed import dependency_state

        out = [nbformat.v4.new_output("display_data", data=self.static_bundle())]
        try:
            w = self.widget()
        except ImportError:
            return out, {}
        view = {"version_major": 2, "version_minor": 0, "model_id": w.model_id}
        out.append(nbformat.v4.new_output("display_data", data={"text/plain": repr(w),
                                                                 "application/vnd.jupyter.widget-view+json": view}))
        state = dependency_state([w], drop_defaults=True)
        for widget in (w.layout, w):  # no kernel holds them: let them go (a server builds one notebook per download)
            widget.close()
        return out, state


# ---------------------------------------------------------------------------- from a trace
def _labels(tokens, n: int, prefix: str) -> list[str]:
    if tokens is None:
        return [f"{prefix}{i}" for i in range(n)]
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} token labels for {n} {'queries' if prefix == 'q' else 'keys'}")
    return P.indexed_labels(tokens) if len(set(tokens)) < len(tokens) else tokens


def _per_row(n: int, dec: int) -> int:
    """As the app: three maps side by side while every column fits, else two, else one."""
    return 3 if n <= 3 or (n <= 4 and dec <= 2) else 2 if n <= 8 else 1


def _two_d(A):
    """A 2-D AttentionTrace (raises for a batched one: pick one with ``head=`` or index it yourself)."""
    if A.weights.dim() != 2:
        raise ValueError(f"this trace has weights of shape {tuple(A.weights.shape)}; show() draws one (n_q, n_k) map "
                         "at a time: pass head= (multi-head, pretrained) or slice the batch first")
    return A


def _slice(A, index) -> object:
    """One head of a batched AttentionTrace: every tensor field indexed by ``index``."""
    import torch

    fields = {f.name: getattr(A, f.name) for f in dataclasses.fields(A)}
    return dataclasses.replace(A, **{k: v[index] for k, v in fields.items() if isinstance(v, torch.Tensor) and v.dim() >= 2
                                     and k not in ("fully_masked",)}, fully_masked=A.fully_masked[index])


def _inspector(spec: dict) -> dict:
    """An inspector spec with the CSS classes inspector.js puts on its picker and sections."""
    return spec | {"picker_css": "al-query-picker",
                   "sections": [sec | {"key": sec["step"], "css": f"al-{sec['step']}"} for sec in spec["sections"]]}


def pipeline_maps(trace, *, tokens=None, tokens_k=None, lang: str = "en", decimals: int = 3, steps=None,
                  query: int = 0, title: str = "") -> Maps:
    """The five steps of a ``core.lab.PlaygroundTrace`` (or of a 2-D ``AttentionTrace``) as the
    Playground draws them, with the query inspector when there are at most 16 queries."""
    A = trace.attn if hasattr(trace, "attn") else _two_d(trace)
    if not hasattr(trace, "attn"):  # an AttentionTrace: Q and V in row convention for the shape lines
        row = A if A.convention == "row" else A.transposed()
        trace = SimpleNamespace(attn=A, Q=row.q, V=row.v)
    n_q, n_k = trace.Q.shape[0], trace.V.shape[0]
    q_labels = _labels(tokens, n_q, "q")
    k_labels = q_labels if tokens_k is None and n_k == n_q and tokens is not None else _labels(tokens_k, n_k, "k")
    live = n_q <= INSPECTOR_LIMIT
    layout = P.Layout(q_labels, k_labels, A.convention, decimals, lang, clickable=live, compact=True)
    shows = None if steps is None else (lambda s: s in steps)
    # no highlighted query in the specs: the live widget highlights the picked one itself (widget.js)
    panels = P.pipeline_panels(trace, layout, A.score, shows=shows)
    click = translate("pg.weights.click", lang)  # true of the live widget only: not written into the static SVG
    dicts = [P.panel_dict(p, p.step, lang) | {"pick": p.step == "weights" and live, "live_only": [click]} for p in panels]
    inspectors = [_inspector(P.inspector_spec(A, j, q_labels, k_labels, decimals, lang)) for j in range(n_q)] if live else None
    return Maps(dicts, _per_row(max(n_q, n_k), decimals), lang, A.convention, inspectors, query, title)


def heads_maps(weights, tokens_q, tokens_k, *, lang: str = "en", decimals: int = 3, title: str = "",
               first_head: int = 0) -> Maps:
    """Every head's softmax weights (H, n_q, n_k) side by side, one map per head (rows = queries)."""
    from .heatmap_spec import heatmap

    w = np.asarray(weights.detach().cpu().numpy() if hasattr(weights, "detach") else weights, dtype=float)
    axes = P.qk_axes("row", P.shorts(tokens_q), P.shorts(tokens_k), lang)
    panels = []
    for h in range(w.shape[0]):
        name = translate("mh.head", lang, h=first_head + h)
        spec = heatmap(w[h], decimals=decimals, title=name, sequential=True, compact=True, **axes)
        panels.append({"key": f"head{h}", "title": name, "mathml": None, "shape": f"({w.shape[1]}×{w.shape[2]})",
                       "map": spec, "before": [], "after": [], "warning": None, "pick": False})
    return Maps(panels, 3 if w.shape[1] <= 8 else 2 if w.shape[1] <= 16 else 1, lang, "row", None, 0, title)


def show(trace, *, lang: str = "en", **kwargs) -> Maps:
    """The maps of any trace of ``core`` (see the module's docstring) in ``lang`` ("en" or "ko"); the live
    widget carries both languages (its picker switches them). Keywords: see :func:`maps_of`."""
    lang = lang if lang in LANGS else "en"
    view = maps_of(trace, lang=lang, **kwargs)
    view.langs = {code: {"panels": v.panels, "inspectors": v.inspectors}
                  for code, v in ((code, view if code == view.lang else maps_of(trace, lang=code, **kwargs)) for code in LANGS)}
    return view


def maps_of(trace, *, tokens=None, tokens_k=None, lang: str = "en", decimals: int = 3, steps=None, query: int = 0,
         layer: int = 0, head: int | None = None, batch: int = 0, title: str = "") -> Maps:
    """The maps of any trace of ``core`` in one language: ``tokens`` / ``tokens_k`` label queries and keys,
    values are printed with ``decimals`` digits, ``steps`` picks pipeline steps, ``layer`` / ``head`` /
    ``batch`` pick what a multi-head or pretrained trace shows. Returns a :class:`Maps`."""
    kind = type(trace).__name__
    if kind == "MultiHeadTrace":
        heads = trace.heads
        if head is not None:
            return pipeline_maps(_slice(heads, (batch, head)), tokens=tokens, tokens_k=tokens_k, lang=lang,
                                 decimals=decimals, steps=steps, query=query, title=title)
        w = heads.weights[batch] if heads.convention == "row" else heads.weights[batch].transpose(-1, -2)
        n_q, n_k = w.shape[-2], w.shape[-1]
        q_labels = _labels(tokens, n_q, "q")
        k_labels = q_labels if tokens_k is None and tokens is not None and n_q == n_k else _labels(tokens_k, n_k, "k")
        return heads_maps(w, q_labels, k_labels, lang=lang, decimals=decimals, title=title)
    if kind == "BertTrace":
        labels = P.indexed_labels(list(trace.tokens))
        if head is not None:
            import core

            A = core.attention(trace.q[layer, head], trace.k[layer, head], trace.v[layer, head])
            return pipeline_maps(A, tokens=labels, lang=lang, decimals=decimals, steps=steps, query=query, title=title)
        return heads_maps(trace.attentions[layer], labels, labels, lang=lang, decimals=decimals, title=title)
    if hasattr(trace, "attn") or kind == "AttentionTrace":
        return pipeline_maps(trace, tokens=tokens, tokens_k=tokens_k, lang=lang, decimals=decimals, steps=steps,
                             query=query, title=title)
    raise TypeError(f"show() draws core's traces (PlaygroundTrace, AttentionTrace, MultiHeadTrace, BertTrace), not {kind}")


# ---------------------------------------------------------------------------- the static SVG
_FONT = '"Source Sans", "attention-lab-kr", "Noto Sans CJK KR", sans-serif'


def _text_width(s: str, size: float) -> float:
    """A width estimate for SVG layout (no font metrics on the server): wide glyphs count double."""
    return sum(size * (1.0 if ord(ch) > 0x2E80 else 0.58) for ch in str(s))


def _cell_values(spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """The map's shown values (NaN where −∞) and its −∞ cells, whatever form the spec carries."""
    n, m = len(spec["ys"]), len(spec["xs"])
    z = spec["z"]
    if isinstance(z, str):
        vals = np.frombuffer(base64.b64decode(z), dtype="<f8").reshape(n, m)
    else:
        vals = np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float).reshape(n, m)
    if spec.get("text"):
        ninf = np.array([[t == "−∞" for t in row] for row in spec["text"]], dtype=bool)
    elif isinstance(spec.get("masked"), str):
        ninf = np.frombuffer(base64.b64decode(spec["masked"]), dtype=np.uint8).reshape(n, m).astype(bool)
    else:
        ninf = np.zeros((n, m), dtype=bool)
    return vals, ninf


def _colours(spec: dict, vals: np.ndarray, ninf: np.ndarray) -> np.ndarray:
    """The cells' r, g, b as the app colours them (the same stops and range as the spec)."""
    stops = colours.scale(spec["sequential"])
    rgb = colours.rgb_at((np.nan_to_num(vals) - spec["lo"]) / (spec["hi"] - spec["lo"]), stops).astype(int)
    rgb[ninf] = colours.MASKED_RGB
    return rgb


def _esc(s) -> str:
    return html.escape(str(s), quote=True)


def map_svg(spec: dict, *, step: str, x0: float = 0, y0: float = 0) -> tuple[str, float, float]:
    """One map as SVG elements at (x0, y0): its labels, its cells (a ``<g class="cell">`` each, with
    ``data-i``, ``data-j`` and the shown value as text when the map prints values) and its side notes.
    Returns (markup, width, height)."""
    vals, ninf = _cell_values(spec)
    n, m = vals.shape
    dec, show_text = spec["decimals"], spec["show_text"]
    texts = [["−∞" if ninf[i, j] else ("NaN" if np.isnan(vals[i, j]) else f"{vals[i, j]:.{dec}f}") for j in range(m)]
             for i in range(n)]
    cell = max(30, max((_text_width(t, 12) for row in texts for t in row), default=0) + 10) if show_text else 12
    left = max((_text_width(y, 12) for y in spec["ys"]), default=0) + 12
    top = 22 + max((_text_width(x, 12) for x in spec["xs"]), default=0) + 8
    side_w = (max(_text_width(s, 12) for s in spec["side"]) + 14) if spec.get("side") else 0
    rgb = _colours(spec, vals, ninf)
    fgs = colours.text_colour(rgb, ninf)  # the app's rule (colours.text_on): ≥ 4.5 : 1 on every cell
    out = [f'<g class="al-map" data-step="{_esc(step)}" transform="translate({x0:.1f},{y0:.1f})">',
           f'<text x="0" y="12" font-size="11" fill="#64748b">{_esc(spec["y_title"])} ↓  {_esc(spec["x_title"])} →</text>']
    for j, x in enumerate(spec["xs"]):
        cx = left + j * cell + cell / 2
        out.append(f'<text class="col" x="{cx:.1f}" y="{top - 6:.1f}" font-size="12" fill="#334155" '
                   f'transform="rotate(-90 {cx:.1f} {top - 6:.1f})" dominant-baseline="middle">{_esc(x)}</text>')
    for i, y in enumerate(spec["ys"]):
        cy = top + i * cell + (cell - 2) / 2
        hl = spec.get("highlight_row") == i
        out.append(f'<text class="row" x="{left - 6:.1f}" y="{cy:.1f}" font-size="12" text-anchor="end" '
                   f'dominant-baseline="middle" fill="{"#b45309" if hl else "#334155"}">{_esc(y)}</text>')
        for j in range(m):
            r, g, b = rgb[i, j]
            fg = fgs[i, j]
            x = left + j * cell
            label = (f'<text x="{x + (cell - 2) / 2:.1f}" y="{cy:.1f}" font-size="12" text-anchor="middle" '
                     f'dominant-baseline="middle" fill="{fg}">{_esc(texts[i][j])}</text>') if show_text else ""
            out.append(f'<g class="cell" data-i="{i}" data-j="{j}" data-v="{_esc(texts[i][j])}"><title>'
                       f'{_esc(spec["y_title"])}: {_esc(y)}, {_esc(spec["x_title"])}: {_esc(spec["xs"][j])}: '
                       f'{_esc(texts[i][j])}</title><rect x="{x}" y="{top + i * cell:.1f}" width="{cell - 2}" '
                       f'height="{cell - 2}" rx="3" fill="rgb({r},{g},{b})"/>{label}</g>')
        if spec.get("side"):
            out.append(f'<text class="side" x="{left + m * cell + 6:.1f}" y="{cy:.1f}" font-size="12" fill="#475569" '
                       f'dominant-baseline="middle">{_esc(spec["side"][i])}</text>')
    hl_row = spec.get("highlight_row")
    if hl_row is not None:
        out.append(f'<rect x="{left - 1}" y="{top + hl_row * cell - 1:.1f}" width="{m * cell + 1}" height="{cell + 1}" '
                   'fill="none" stroke="#f59e0b" stroke-width="2"/>')
    hl_col = spec.get("highlight_col")
    if hl_col is not None:
        out.append(f'<rect x="{left + hl_col * cell - 1:.1f}" y="{top - 1:.1f}" width="{cell + 1}" height="{n * cell + 1}" '
                   'fill="none" stroke="#f59e0b" stroke-width="2"/>')
    out.append("</g>")
    return "".join(out), left + m * cell + side_w + 4, top + n * cell + 4


def maps_svg(panels: list[dict], per_row: int, *, title: str = "") -> str:
    """Every panel (title, shape line, notes, map) in one SVG, ``per_row`` side by side."""
    boxes = []
    for p in panels:
        body, w, h = map_svg(p["map"], step=p["key"], x0=0, y0=40)
        notes = [n for n in (*p.get("before", []), *p.get("after", []), *([p["warning"]] if p.get("warning") else []))
                 if n not in p.get("live_only", ())]
        note_svg = "".join(f'<text x="0" y="{40 + h + 16 * (k + 1):.1f}" font-size="12" fill="#64748b">{_esc(t)}</text>'
                           for k, t in enumerate(notes))
        head = (f'<text class="title" x="0" y="14" font-size="15" font-weight="700" fill="#0f172a">{_esc(p["title"])}</text>'
                f'<text class="shape" x="0" y="32" font-size="12" fill="#1e3a8a" font-family="ui-monospace, monospace">'
                f'{_esc(p["shape"])}</text>')
        width = max(w, _text_width(p["title"], 15), _text_width(p["shape"], 12), *(_text_width(t, 12) for t in notes))
        boxes.append((head + body + note_svg, width + 24, 40 + h + 16 * len(notes) + 20))
    out, y, top = [], 0.0, (26.0 if title else 0.0)
    total_w = 0.0
    for start in range(0, len(boxes), per_row):
        row = boxes[start:start + per_row]
        x = 0.0
        for body, w, _ in row:
            out.append(f'<g class="panel" transform="translate({x:.1f},{top + y:.1f})">{body}</g>')
            x += w
        total_w = max(total_w, x)
        y += max(h for _, _, h in row)
    heading = f'<text x="0" y="18" font-size="17" font-weight="700" fill="#0f172a">{_esc(title)}</text>' if title else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="attention-lab-maps" width="{total_w:.0f}" '
            f'height="{top + y:.0f}" viewBox="0 0 {total_w:.0f} {top + y:.0f}" font-family=\'{_FONT}\'>'
            f'{heading}{"".join(out)}</svg>')


def values_in(svg_or_html: str, step: str) -> list[list[str]]:
    """The printed values of one map (``data-step``) in a fallback SVG, row by row (for tests and checks)."""
    import re

    start = svg_or_html.find(f'<g class="al-map" data-step="{step}"')
    if start < 0:
        return []
    end = svg_or_html.find('<g class="al-map"', start + 1)
    block = svg_or_html[start:end if end > 0 else None]
    cells = re.findall(r'<g class="cell" data-i="(\d+)" data-j="(\d+)" data-v="([^"]*)"', block)
    n = max(int(i) for i, _, _ in cells) + 1
    rows: list[list[str]] = [[] for _ in range(n)]
    for i, _, v in cells:
        rows[int(i)].append(html.unescape(v))
    return rows

