"""A plotly figure dict drawn as a standalone SVG picture: the one-click "SVG" under every chart.

Plotly's modebar saves a PNG only (a second, SVG, button cannot be declared in JSON) and the
server has no kaleido, so the figure dicts this app builds (``ui.widgets.figures``) are drawn
here: the title, axes with a few round ticks, category (token) labels, every trace and a legend,
in the figure's own language (its text is already translated). Display only: every number drawn
comes from the figure; only positions, ticks, colours and a histogram's bins are worked out here.

What the pages use is covered: scatter (lines / markers / text in any mix; no ``x`` → 0 … n−1),
bar (vertical or ``orientation: "h"``; ``barmode`` group / stack / overlay), histogram (``x``,
``nbinsx``), heatmap (``z``, optional ``x``/``y``, a colorscale list or name, ``zmin``/``zmax``),
image (a PNG data URI), layout shapes (line, rect), annotations and linear / log / category axes
(``range``, ``autorange: "reversed"``, ``visible``, ``showticklabels``, ``side: "top"``,
``scaleanchor``). Anything else is left out of the picture rather than guessed. All text is
escaped: a token such as ``<script>`` or ``&`` stays text. A picture with Korean carries the glyphs
it uses of the shipped Korean font (``attention_lab.svg_font``), so it renders on a machine without one.
"""

from __future__ import annotations

import base64
import io
import math
import re
import struct
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

import numpy as np
import plotly.colors
from PIL import Image

from attention_lab.svg_font import font_faces

FONT = "Source Sans, attention-lab-kr, Noto Sans CJK KR, sans-serif"  # every chart's font: Korean renders too
WIDTH, HEIGHT = 700, 450  # plotly's defaults where the figure gives none
INK, FAINT, GRID = "#31333f", "#6b7280", "#e5e7eb"
# Streamlit's light-theme chart colours, which plotly charts on the page are drawn with
COLORWAY = ("#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a", "#6d3fc0", "#d5dae5")
DASHES = {"dot": "2,3", "dash": "6,4", "longdash": "10,4", "dashdot": "6,3,2,3", "longdashdot": "10,3,2,3"}
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML 1.0 cannot hold
MARKS = ("scatter", "bar", "heatmap", "image")
RASTER_CELLS = 64 * 64  # a heatmap needing more rects than this is drawn as one PNG of its cells (see _raster)


# ------------------------------------------------------------------ text and elements
def _clean(s) -> str:
    return _NOT_XML.sub("", str(s))


def _el(tag: str, body: str | None = None, **attrs) -> str:
    """``<tag a="…">body</tag>``; attribute names lose a trailing ``_`` and use ``-`` for ``_``."""
    a = "".join(f" {k.rstrip('_').replace('_', '-')}={quoteattr(_clean(v))}" for k, v in attrs.items() if v is not None)
    return f"<{tag}{a}/>" if body is None else f"<{tag}{a}>{body}</{tag}>"


def _text(x: float, y: float, s, *, size: float = 12, anchor: str = "start", fill: str = INK, **attrs) -> str:
    """One line of text, vertically centred on y."""
    return _el("text", escape(_clean(s)), x=_n(x), y=_n(y), dy="0.35em", font_size=_n(size), text_anchor=anchor,
               fill=fill, **attrs)


def _n(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _width(s, size: float = 12) -> float:
    """A rough width of a line of text (wide characters for Hangul and CJK)."""
    return sum(size * (1.0 if ord(c) >= 0x1100 else 0.56) for c in str(s))


def _num(v) -> float | None:
    """v as a finite float, or None (None, NaN, ±∞ and text are skipped)."""
    if isinstance(v, (bool, str)):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _title(obj) -> str:
    """The text of a plotly title: a string or ``{"text": …}``."""
    if isinstance(obj, dict):
        return str(obj.get("text") or "")
    return "" if obj is None else str(obj)


# ------------------------------------------------------------------ axes
@dataclass
class Axis:
    """One axis: its kind, the range shown (axis units: log10 on a log axis, the index on a
    category axis) and, once the frame is known, the pixels the range spans."""

    spec: dict
    kind: str = "linear"  # linear | log | category
    cats: list = field(default_factory=list)
    r0: float = 0.0
    r1: float = 1.0
    p0: float = 0.0
    p1: float = 1.0
    nticks: float = 6.0  # about how many ticks fit (plotly: one per 80 px across, 40 px up)

    @property
    def visible(self) -> bool:
        return self.spec.get("visible", True) is not False

    @property
    def labelled(self) -> bool:
        return self.visible and self.spec.get("showticklabels", True) is not False

    def coord(self, v) -> float | None:
        """A data value in axis units (None where it cannot be placed)."""
        if self.kind == "category":
            return float(self.cats.index(v)) if isinstance(v, str) and v in self.cats else _num(v)
        f = _num(v)
        if self.kind == "log":
            return math.log10(f) if f is not None and f > 0 else None
        return f

    def at(self, c: float) -> float:
        """Axis units → pixels."""
        return self.p0 + (c - self.r0) / (self.r1 - self.r0) * (self.p1 - self.p0)

    def px(self, v) -> float | None:
        c = self.coord(v)
        return None if c is None else self.at(c)


def _axis_kind(spec: dict, values: list) -> tuple[str, list]:
    """The axis type (the figure's, or category when any value is text) and its categories."""
    kind = spec.get("type") if spec.get("type") in ("linear", "log", "category") else None
    if kind is None:
        kind = "category" if any(isinstance(v, str) for v in values) else "linear"
    cats = list(dict.fromkeys(str(v) for v in values if isinstance(v, str))) if kind == "category" else []
    return kind, cats


def _axis_range(ax: Axis, spans: list[tuple[float, float, bool]]) -> tuple[float, float]:
    """The range given by the figure, or one around the data (padded for markers and bars)."""
    given = ax.spec.get("range")
    if isinstance(given, (list, tuple)) and len(given) == 2 and None not in (_num(given[0]), _num(given[1])):
        if given[0] != given[1]:
            return float(given[0]), float(given[1])
    if not spans:
        lo, hi = (-0.5, 0.5) if ax.kind == "category" else (0.0, 1.0)
    else:
        lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
        pad = 0.05 * (hi - lo)  # 5 % more at an end set by a marker or a bar's top
        lo -= pad if any(padded and low == lo for low, _, padded in spans) else 0.0
        hi += pad if any(padded and high == hi for _, high, padded in spans) else 0.0
        if hi == lo:
            lo, hi = lo - 1, hi + 1
    if ax.kind == "category" and ax.cats:  # every category has its slot
        lo, hi = min(lo, -0.5), max(hi, len(ax.cats) - 0.5)
    return (hi, lo) if ax.spec.get("autorange") == "reversed" else (lo, hi)


def _nice_step(span: float, count: float) -> float:
    """The smallest of 1, 2, 5 × 10ᵏ that cuts ``span`` into at most ``count`` parts (plotly's rule)."""
    raw = span / count
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw * (1 - 1e-9))


def _fmt_tick(v: float, step: float) -> str:
    decimals = len(f"{step:.10f}".rstrip("0").split(".")[1])  # 2.5 → one decimal, 0.25 → two, 5 → none
    s = f"{v:.{decimals}f}"
    s = s.rstrip("0").rstrip(".") if "." in s else s
    return "0" if s.strip("-0.") == "" else s


def _ticks(ax: Axis) -> list[tuple[float, str]]:
    """(axis units, label) of the ticks: every category (thinned past 30), powers of ten (and
    2, 5 within them on a short log axis), or about five round numbers."""
    lo, hi = sorted((ax.r0, ax.r1))
    if ax.kind == "category":
        every = max(1, math.ceil(len(ax.cats) / 30))
        return [(float(i), c) for i, c in enumerate(ax.cats) if lo - 1e-9 <= i <= hi + 1e-9 and i % every == 0]
    if ax.kind == "log":
        mults = (1, 2, 5) if hi - lo < 2 else (1,)
        vals = [10.0 ** k * m for k in range(math.floor(lo), math.ceil(hi) + 1) for m in mults]
        return [(math.log10(v), f"{v:g}") for v in vals if lo - 1e-9 <= math.log10(v) <= hi + 1e-9]
    step = _nice_step(hi - lo, ax.nticks)
    first = math.ceil(lo / step - 1e-9)
    vals = [k * step for k in range(first, first + int((hi - lo) / step + 1e-9) + 2)]
    return [(v, _fmt_tick(v, step)) for v in vals if lo - 1e-9 * step <= v <= hi + 1e-9 * step]


# ------------------------------------------------------------------ traces: what they place where
def _raw(tr: dict, letter: str) -> list:
    """The values a trace places along x or y, as given (positions, labels or values)."""
    typ = tr.get("type", "scatter")
    if typ == "heatmap":
        z = tr.get("z") or []
        n = (len(z[0]) if z and isinstance(z[0], (list, tuple)) else 0) if letter == "x" else len(z)
        return list(tr.get(letter) or range(n))
    if typ == "image":
        return []
    vals = tr.get(letter)
    if vals is None:  # plotly: a missing x (or y) is 0 … n−1
        return list(range(len(tr.get("y" if letter == "x" else "x") or [])))
    return list(vals)


def _histogram_bars(tr: dict) -> dict:
    """A histogram over ``x`` as the bars plotly draws: at most ``nbinsx`` bins of a round width."""
    vals = [v for v in map(_num, tr.get("x") or []) if v is not None]
    bar = {k: v for k, v in tr.items() if k not in ("x", "y", "nbinsx")} | {"type": "bar", "x": [], "y": []}
    if not vals:
        return bar
    lo, hi = min(vals), max(vals)
    size = _nice_step(hi - lo, int(tr.get("nbinsx") or 20)) if hi > lo else 1.0
    start = math.floor(lo / size) * size
    counts = [0] * (int((hi - start) / size) + 1)
    for v in vals:
        counts[min(int((v - start) / size), len(counts) - 1)] += 1
    return bar | {"x": [start + (k + 0.5) * size for k in range(len(counts))], "y": counts, "width": size}


def _heat_edges(ax: Axis, labels: list) -> list[float | None]:
    """Cell edges (axis units) around each heatmap row or column: halfway between neighbours."""
    cs = [ax.coord(v) for v in labels]
    if not cs or None in cs:
        return [None] * (len(cs) + 1)
    if len(cs) == 1:
        return [cs[0] - 0.5, cs[0] + 0.5]
    mids = [(a + b) / 2 for a, b in zip(cs, cs[1:], strict=False)]
    return [cs[0] - (mids[0] - cs[0]), *mids, cs[-1] + (cs[-1] - mids[-1])]


def _png_size(uri: str) -> tuple[int, int] | None:
    """Width and height of a PNG data URI (from its header), or None."""
    if not isinstance(uri, str) or not uri.startswith("data:image/png;base64,"):
        return None
    try:
        head = base64.b64decode(uri.split(",", 1)[1][:48])
    except ValueError:
        return None
    return struct.unpack(">II", head[16:24]) if len(head) >= 24 and head[12:16] == b"IHDR" else None


def _image_box(tr: dict) -> tuple[float, float, float, float] | None:
    """(x0, x1, y0, y1) in data units of an image trace's pixels (each pixel one unit)."""
    size = _png_size(tr.get("source"))
    if size is None:
        return None
    dx, dy = _num(tr.get("dx")) or 1.0, _num(tr.get("dy")) or 1.0
    x0, y0 = _num(tr.get("x0")) or 0.0, _num(tr.get("y0")) or 0.0
    return x0 - dx / 2, x0 + (size[0] - 0.5) * dx, y0 - dy / 2, y0 + (size[1] - 0.5) * dy


# ------------------------------------------------------------------ bars in axis units
def _bar_boxes(bars: list[dict], xa: Axis, ya: Axis, mode: str) -> list[list[tuple]]:
    """Per bar trace, its boxes (pos0, pos1, val0, val1, value) in axis units; val0 None = the
    axis's low end (a base of 0 on a log axis). Grouped bars share each slot; stacked ones pile up."""
    grouped = [i for i, b in enumerate(bars) if b.get("width") is None] if mode == "group" else []
    out, piles = [], {}
    for i, b in enumerate(bars):
        horiz = b.get("orientation") == "h"
        pa, va = (ya, xa) if horiz else (xa, ya)
        pos, vals = (_raw(b, "y"), _raw(b, "x")) if horiz else (_raw(b, "x"), _raw(b, "y"))
        cs = [pa.coord(p) for p in pos]
        gaps = sorted({abs(a - c) for a, c in zip(cs, cs[1:], strict=False) if a is not None and c is not None} - {0.0})
        slot = _num(b.get("width")) or 0.8 * (gaps[0] if gaps else 1.0)
        width, shift = slot, 0.0
        if i in grouped and len(grouped) > 1:
            width = slot / len(grouped)
            shift = (grouped.index(i) - (len(grouped) - 1) / 2) * width
        boxes = []
        for c, v in zip(cs, vals, strict=False):
            f = _num(v)
            if c is None or f is None:
                continue
            base = piles.get((c, f >= 0), 0.0) if mode in ("stack", "relative") else 0.0
            if mode in ("stack", "relative"):
                piles[(c, f >= 0)] = base + f
            boxes.append((c + shift - width / 2, c + shift + width / 2, va.coord(base), va.coord(base + f), v))
        out.append(boxes)
    return out


# ------------------------------------------------------------------ the traces to draw and the axes they set
def _traces(spec: dict) -> list[dict]:
    """The visible traces this module draws (histograms as their bars), each with its colour."""
    out, k = [], 0
    for tr in spec.get("data") or []:
        if not isinstance(tr, dict) or tr.get("visible", True) is False:
            continue
        tr = _histogram_bars(tr) if tr.get("type") == "histogram" else {"type": "scatter"} | tr
        if tr["type"] not in MARKS:
            continue
        if tr["type"] in ("scatter", "bar"):  # plotly colours these by their order in the figure
            tr["_colour"], k = COLORWAY[k % len(COLORWAY)], k + 1
        out.append(tr)
    return out


def _mode(tr: dict) -> str:
    return tr.get("mode") or ("lines+markers" if len(_raw(tr, "y")) < 20 else "lines")


def _spans(tr: dict, letter: str, ax: Axis) -> list[tuple[float, float, bool]]:
    """(low, high, padded) in axis units of what a trace draws along one axis."""
    typ = tr["type"]
    if typ == "scatter":
        cs = [c for c in map(ax.coord, _raw(tr, letter)) if c is not None]
        padded = letter == "y" or "markers" in _mode(tr) or "text" in _mode(tr)
        return [(min(cs), max(cs), padded)] if cs else []
    if typ == "bar":
        on_value = (letter == "x") == (tr.get("orientation") == "h")
        if on_value:
            return [(c, c, k == 1) for box in tr["_boxes"] for k, c in enumerate(box[2:4]) if c is not None]
        return [(box[0], box[1], False) for box in tr["_boxes"]]
    if typ == "heatmap":
        edges = [e for e in _heat_edges(ax, _raw(tr, letter)) if e is not None]
        return [(min(edges), max(edges), False)] if edges else []
    box = _image_box(tr)
    if box is None:
        return []
    cs = [ax.coord(v) for v in (box[:2] if letter == "x" else box[2:])]
    return [] if None in cs else [(min(cs), max(cs), False)]


def _shape_spans(layout: dict, letter: str, ax: Axis) -> list[tuple[float, float, bool]]:
    out = []
    for s in layout.get("shapes") or []:
        if s.get(f"{letter}ref", letter) == letter:
            cs = [ax.coord(s.get(f"{letter}{k}")) for k in (0, 1)]
            out += [] if None in cs else [(min(cs), max(cs), False)]
    return out


def _axes(layout: dict, traces: list[dict]) -> tuple[Axis, Axis]:
    """The x and y axes: kinds and categories from the data, then the ranges shown."""
    xa, ya = Axis(dict(layout.get("xaxis") or {})), Axis(dict(layout.get("yaxis") or {}))
    w, h = _num(layout.get("width")) or WIDTH, _num(layout.get("height")) or HEIGHT
    xa.nticks, ya.nticks = (min(max(length / px, 4), 9) + 1 for length, px in ((w - 120, 80), (h - 100, 40)))
    if any(tr["type"] == "image" for tr in traces):  # plotly puts an image's first row on top
        ya.spec.setdefault("autorange", "reversed")
    for ax, letter in ((xa, "x"), (ya, "y")):
        ax.kind, ax.cats = _axis_kind(ax.spec, [v for tr in traces for v in _raw(tr, letter)])
    bars = [tr for tr in traces if tr["type"] == "bar"]
    for tr, boxes in zip(bars, _bar_boxes(bars, xa, ya, layout.get("barmode") or "group"), strict=True):
        tr["_boxes"] = boxes
    for ax, letter in ((xa, "x"), (ya, "y")):
        spans = [s for tr in traces for s in _spans(tr, letter, ax)] + _shape_spans(layout, letter, ax)
        ax.r0, ax.r1 = _axis_range(ax, spans)
    return xa, ya


# ------------------------------------------------------------------ the frame: title, plot area, legend
def _legend_items(layout: dict, traces: list[dict]) -> list[dict]:
    """The named traces, when plotly would show a legend (asked for, or two or more of them)."""
    named = [tr for tr in traces if tr["type"] in ("scatter", "bar") and str(tr.get("name") or "")
             and tr.get("showlegend") is not False]
    show = layout.get("showlegend")
    return named if show is True or (show is None and len(named) >= 2) else []


def _legend_rows(items: list[dict], width: float) -> list[list[tuple[float, dict]]]:
    """Legend entries packed left to right into rows no wider than ``width``: (x offset, trace)."""
    rows, x = [[]], 0.0
    for tr in items:
        w = 34 + _width(tr["name"]) + 18
        if rows[-1] and x + w > width:
            rows.append([])
            x = 0.0
        rows[-1].append((x, tr))
        x += w
    return rows if rows[0] else []


@dataclass
class Frame:
    width: float
    height: float
    left: float
    top: float
    right: float
    bottom: float
    legend: list = field(default_factory=list)
    rotate_x: bool = False
    x_title_y: float = 0.0


def _frame(layout: dict, traces: list[dict], xa: Axis, ya: Axis, title: str) -> Frame:
    """Room for the title, tick labels, axis titles and legend around the plot area; the figure
    grows taller when its own height leaves the plot under 120 px."""
    w, h = _num(layout.get("width")) or WIDTH, _num(layout.get("height")) or HEIGHT
    xticks, yticks = _ticks(xa), _ticks(ya)
    xt, yt = _title(xa.spec.get("title")) if xa.visible else "", _title(ya.spec.get("title")) if ya.visible else ""
    left = 12 + (22 if yt else 0) + (max((_width(s) for _, s in yticks), default=0) + 8 if ya.labelled else 0)
    longest = max((_width(s) for _, s in xticks), default=0) if xa.labelled else 0
    rotate = xa.kind == "category" and bool(xticks) and longest + 6 > (w - 20 - left) / max(len(xticks), 1)
    x_room = (min(longest, 120) * 0.71 + 14 if rotate else 20) if xa.labelled else 0
    x_room += 22 if xt else 0
    legend = _legend_rows(_legend_items(layout, traces), w - 20)
    head = (44 if title else 14) + (10 if layout.get("annotations") else 0)
    on_top = xa.spec.get("side") == "top"
    below = 10 + 22 * len(legend) + (0 if on_top else x_room)
    h = max(h, head + (x_room if on_top else 0) + below + 120)
    x_title_y = head + 11 if on_top else h - 10 - 22 * len(legend) - 11
    fr = Frame(w, h, left, head + (x_room if on_top else 0), w - 20, h - below, legend, rotate, x_title_y)
    xa.p0, xa.p1, ya.p0, ya.p1 = fr.left, fr.right, fr.bottom, fr.top
    if ya.spec.get("scaleanchor") == "x" or xa.spec.get("scaleanchor") == "y":
        _equal_units(xa, ya)
    return fr


def _equal_units(xa: Axis, ya: Axis) -> None:
    """One data unit as many pixels across as down (``scaleanchor``): the plot area shrinks and centres."""
    px_x = abs(xa.p1 - xa.p0) / abs(xa.r1 - xa.r0)
    px_y = abs(ya.p1 - ya.p0) / abs(ya.r1 - ya.r0)
    ax, unit = (xa, px_y) if px_x > px_y else (ya, px_x)
    mid, half = (ax.p0 + ax.p1) / 2, unit * abs(ax.r1 - ax.r0) / 2
    ax.p0, ax.p1 = (mid - half, mid + half) if ax.p1 > ax.p0 else (mid + half, mid - half)


# ------------------------------------------------------------------ marks
def _pick(value, i: int):
    """A per-point attribute: the i-th of a list, or the one value for all."""
    if isinstance(value, (list, tuple)):
        return value[i] if i < len(value) else None
    return value


def _segments(pts: list[tuple]) -> list[list[tuple]]:
    """Runs of drawable points; a skipped value (None, NaN, ≤ 0 on a log axis) breaks the line."""
    runs, run = [], []
    for p in pts:
        if None in p:
            runs, run = runs + [run], []
        else:
            run.append(p)
    return [r for r in runs + [run] if len(r) >= 2]


def _scatter(tr: dict, xa: Axis, ya: Axis) -> str:
    """Lines (one polyline per unbroken run), markers (circles) and point text."""
    pts = [(xa.px(x), ya.px(y)) for x, y in zip(_raw(tr, "x"), _raw(tr, "y"), strict=False)]
    mode, line, marker = _mode(tr), tr.get("line") or {}, tr.get("marker") or {}
    line_c = line.get("color") or tr["_colour"]
    out = []
    if "lines" in mode:
        width = _num(line.get("width"))
        out += [_el("polyline", class_="line", points=" ".join(f"{_n(x)},{_n(y)}" for x, y in run), fill="none",
                    stroke=line_c, stroke_width=_n(2 if width is None else width),
                    stroke_dasharray=DASHES.get(line.get("dash")), stroke_linejoin="round") for run in _segments(pts)]
    edge = marker.get("line") or {}
    for i, (x, y) in enumerate(pts):
        if x is None or y is None:
            continue
        r = (_num(_pick(marker.get("size"), i)) or 6) / 2
        if "markers" in mode:
            out.append(_el("circle", class_="marker", cx=_n(x), cy=_n(y), r=_n(r),
                           fill=_pick(marker.get("color"), i) or line_c, stroke=_pick(edge.get("color"), i),
                           stroke_width=_n(_num(edge.get("width")) or 1) if edge.get("color") else None))
        label = _pick(tr.get("text"), i)
        if "text" in mode and label not in (None, ""):
            out.append(_point_text(x, y, r, label, tr))
    return "".join(out)


def _point_text(x: float, y: float, r: float, label, tr: dict) -> str:
    """Text beside a point where ``textposition`` puts it (``middle center`` when not said)."""
    pos = str(tr.get("textposition") or "middle center")
    font = tr.get("textfont") or {}
    dx = -(r + 4) if "left" in pos else (r + 4 if "right" in pos else 0)
    dy = -(r + 8) if "top" in pos else (r + 8 if "bottom" in pos else 0)
    anchor = "end" if "left" in pos else ("start" if "right" in pos else "middle")
    return _text(x + dx, y + dy, label, size=_num(font.get("size")) or 12, anchor=anchor,
                 fill=font.get("color") or INK, class_="point-text")


def _bars(tr: dict, xa: Axis, ya: Axis) -> str:
    """One rect per bar (its value in a <title>); a base off a log axis starts at the axis's low end."""
    horiz = tr.get("orientation") == "h"
    pa, va = (ya, xa) if horiz else (xa, ya)
    marker = tr.get("marker") or {}
    base = min(va.r0, va.r1)
    out = []
    for c0, c1, v0, v1, value in tr["_boxes"]:
        a0, a1 = pa.at(c0), pa.at(c1)
        b0, b1 = va.at(base if v0 is None else v0), va.at(base if v1 is None else v1)
        (x0, x1), (y0, y1) = ((b0, b1), (a0, a1)) if horiz else ((a0, a1), (b0, b1))
        out.append(_el("rect", _el("title", escape(_clean(value))), class_="bar", x=_n(min(x0, x1)), y=_n(min(y0, y1)),
                       width=_n(abs(x1 - x0)), height=_n(abs(y1 - y0)),
                       fill=marker.get("color") if isinstance(marker.get("color"), str) else tr["_colour"]))
    return "".join(out)


def _rgb(colour) -> tuple[float, float, float]:
    """``#rgb``, ``#rrggbb``, ``rgb(r, g, b)`` or ``rgba(…)`` as numbers (grey for anything else)."""
    s = str(colour).strip().lower()
    if re.fullmatch(r"#[0-9a-f]{3}", s):
        return tuple(int(ch * 2, 16) for ch in s[1:])
    if re.fullmatch(r"#[0-9a-f]{6}", s):
        return tuple(int(s[k:k + 2], 16) for k in (1, 3, 5))
    num = r"\s*(\d+(?:\.\d+)?)\s*"
    m = re.fullmatch(rf"rgba?\({num},{num},{num}(,[^)]*)?\)", s)
    return tuple(float(m.group(k)) for k in (1, 2, 3)) if m else (128, 128, 128)


def _scale(tr: dict, z: list) -> tuple[list[tuple[float, tuple]], float, float]:
    """(colour stops, lo, hi): the trace's colorscale between zmin and zmax (the data's own range
    where not given)."""
    cs = tr.get("colorscale")
    if isinstance(cs, str):
        name = cs.lower().removesuffix("_r")
        cs = plotly.colors.get_colorscale(cs) if name in plotly.colors.named_colorscales() else None
    stops = [(float(t), _rgb(c)) for t, c in (cs or plotly.colors.get_colorscale("Plasma"))]
    if tr.get("reversescale"):
        stops = [(1 - t, c) for t, c in reversed(stops)]
    finite = [f for row in z if isinstance(row, (list, tuple)) for f in map(_num, row) if f is not None]
    lo = _num(tr.get("zmin")) if _num(tr.get("zmin")) is not None else min(finite, default=0.0)
    hi = _num(tr.get("zmax")) if _num(tr.get("zmax")) is not None else max(finite, default=1.0)
    return stops, lo, hi


def _colour_scale(tr: dict, z: list):
    """value → ``rgb(…)`` by the trace's colour scale (:func:`_scale`)."""
    stops, lo, hi = _scale(tr, z)

    def colour(v: float) -> str:
        t = min(max((v - lo) / (hi - lo), 0.0), 1.0) if hi > lo else 0.5
        (t0, c0), (t1, c1) = next(((a, b) for a, b in zip(stops, stops[1:], strict=False) if t <= b[0]),
                                  (stops[-1], stops[-1]))
        f = (t - t0) / (t1 - t0) if t1 > t0 else 0.0
        return "rgb({},{},{})".format(*(round(a + f * (b - a)) for a, b in zip(c0, c1, strict=True)))

    return colour


def _raster(tr: dict, xa: Axis, ya: Axis) -> str | None:
    """A large heatmap's cells as ONE pixel-per-cell PNG (labels and axes stay text around it): a
    rect per cell took ~65 µs, 4 s for 256 × 256 on a server a class shares. None where the rows
    are ragged or the cells are not on a regular grid of categories/indices."""
    z = tr.get("z") or []
    if not z or any(not isinstance(r, (list, tuple)) or len(r) != len(z[0]) for r in z):
        return None
    xe, ye = _heat_edges(xa, _raw(tr, "x")), _heat_edges(ya, _raw(tr, "y"))
    if len(xe) != len(z[0]) + 1 or len(ye) != len(z) + 1 or None in (xe[0], xe[-1], ye[0], ye[-1]):
        return None
    stops, lo, hi = _scale(tr, z)
    v = np.array([[np.nan if _num(c) is None else _num(c) for c in r] for r in z], dtype=float)
    t = np.clip((v - lo) / (hi - lo), 0.0, 1.0) if hi > lo else np.full(v.shape, 0.5)
    rgb = [np.interp(np.nan_to_num(t), [a for a, _ in stops], [c[k] for _, c in stops]) for k in range(3)]
    rgba = np.stack([*rgb, np.where(np.isnan(v), 0, 255)], axis=-1).round().astype(np.uint8)
    xs, ys = (xa.at(xe[0]), xa.at(xe[-1])), (ya.at(ye[0]), ya.at(ye[-1]))
    rgba = rgba[::-1] if ys[0] > ys[1] else rgba  # the first row drawn at the bottom (an upward y axis)
    rgba = rgba[:, ::-1] if xs[0] > xs[1] else rgba
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgba), "RGBA").save(buf, format="PNG")
    uri = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    return _el("image", **{"class": "cells", "xlink:href": uri}, x=_n(min(xs)), y=_n(min(ys)), width=_n(abs(xs[1] - xs[0])),
               height=_n(abs(ys[1] - ys[0])), preserveAspectRatio="none", style="image-rendering:pixelated")


def _runs(row) -> list[tuple[int, int, float]]:
    """(first, last, value) of each run of equal neighbouring values in a row; gaps skipped."""
    out = []
    for i, v in enumerate(row if isinstance(row, (list, tuple)) else []):
        f = _num(v)
        if f is None:
            continue
        if out and out[-1][1] == i - 1 and out[-1][2] == f:
            out[-1] = (out[-1][0], i, f)
        else:
            out.append((i, i, f))
    return out


def _heatmap(tr: dict, xa: Axis, ya: Axis) -> str:
    """One rect per cell (its value in a <title>); equal neighbouring cells (an image's patches
    blown up to pixels) share one rect. None and NaN cells stay empty, as in plotly."""
    z = tr.get("z") or []
    blocks = []  # (first row, last row, runs)
    for j, row in enumerate(z):
        runs = _runs(row)
        if blocks and blocks[-1][1] == j - 1 and blocks[-1][2] == runs:
            blocks[-1] = (blocks[-1][0], j, runs)
        else:
            blocks.append((j, j, runs))
    if sum(len(runs) for _, _, runs in blocks) > RASTER_CELLS and (picture := _raster(tr, xa, ya)):
        return picture
    xe, ye = _heat_edges(xa, _raw(tr, "x")), _heat_edges(ya, _raw(tr, "y"))
    colour = _colour_scale(tr, z)
    out = []
    for j0, j1, runs in blocks:
        for i0, i1, v in runs:
            if i1 + 1 >= len(xe) or j1 + 1 >= len(ye) or None in (xe[i0], xe[i1 + 1], ye[j0], ye[j1 + 1]):
                continue
            x0, x1, y0, y1 = xa.at(xe[i0]), xa.at(xe[i1 + 1]), ya.at(ye[j0]), ya.at(ye[j1 + 1])
            out.append(_el("rect", _el("title", escape(f"{v:g}")), class_="cell", x=_n(min(x0, x1)), y=_n(min(y0, y1)),
                           width=_n(abs(x1 - x0)), height=_n(abs(y1 - y0)), fill=colour(v)))
    return "".join(out)


def _image(tr: dict, xa: Axis, ya: Axis) -> str:
    box = _image_box(tr)
    xs = [xa.px(v) for v in box[:2]] if box else [None]
    ys = [ya.px(v) for v in box[2:]] if box else [None]
    if None in xs + ys:
        return ""
    return _el("image", **{"class": "image", "xlink:href": tr["source"]}, x=_n(min(xs)), y=_n(min(ys)),
               width=_n(abs(xs[1] - xs[0])), height=_n(abs(ys[1] - ys[0])), preserveAspectRatio="none",
               style="image-rendering:pixelated")


def _trace(tr: dict, xa: Axis, ya: Axis) -> str:
    draw = {"scatter": _scatter, "bar": _bars, "heatmap": _heatmap, "image": _image}[tr["type"]]
    opacity = _num(tr.get("opacity"))
    return _el("g", draw(tr, xa, ya), class_=f"trace {tr['type']}",
               opacity=None if opacity is None or opacity >= 1 else _n(opacity))


# ------------------------------------------------------------------ layout shapes and notes
def _place(ref, ax: Axis, v) -> float | None:
    """A position given in data units, or as a fraction of the plot area (``"paper"``)."""
    if ref == "paper":
        f = _num(v)
        return None if f is None else ax.p0 + f * (ax.p1 - ax.p0)
    return ax.px(v)


def _shapes(layout: dict, xa: Axis, ya: Axis, layer: str) -> str:
    """Layout lines and rectangles on one layer (``below`` the traces or ``above`` them)."""
    out = []
    for s in layout.get("shapes") or []:
        if (s.get("layer") or "above") != layer or s.get("type") not in ("line", "rect"):
            continue
        x0, x1 = (_place(s.get("xref"), xa, s.get(k)) for k in ("x0", "x1"))
        y0, y1 = (_place(s.get("yref"), ya, s.get(k)) for k in ("y0", "y1"))
        if None in (x0, x1, y0, y1):
            continue
        line = s.get("line") or {}
        width = 2 if _num(line.get("width")) is None else _num(line.get("width"))
        paint = {"stroke": (line.get("color") or "#444444") if width > 0 else "none", "stroke_width": _n(width),
                 "stroke_dasharray": DASHES.get(line.get("dash")), "opacity": s.get("opacity"), "class_": "shape"}
        if s["type"] == "line":
            out.append(_el("line", x1=_n(x0), y1=_n(y0), x2=_n(x1), y2=_n(y1), **paint))
        else:
            out.append(_el("rect", x=_n(min(x0, x1)), y=_n(min(y0, y1)), width=_n(abs(x1 - x0)),
                           height=_n(abs(y1 - y0)), fill=s.get("fillcolor") or "none", **paint))
    return "".join(out)


def _annotations(layout: dict, xa: Axis, ya: Axis) -> str:
    out = []
    for a in layout.get("annotations") or []:
        x, y = _place(a.get("xref"), xa, a.get("x")), _place(a.get("yref"), ya, a.get("y"))
        if x is None or y is None or a.get("text") in (None, ""):
            continue
        font = a.get("font") or {}
        dy = {"bottom": -8, "top": 8}.get(a.get("yanchor"), 0)
        out.append(_text(x, y + dy, a["text"], size=_num(font.get("size")) or 12, fill=font.get("color") or INK,
                         anchor={"left": "start", "right": "end"}.get(a.get("xanchor"), "middle"), class_="annotation"))
    return "".join(out)


# ------------------------------------------------------------------ axes, legend and the whole picture
def _grid(xa: Axis, ya: Axis, fr: Frame) -> str:
    out = []
    for ax, across in ((xa, True), (ya, False)):
        for c, _ in _ticks(ax) if ax.visible else []:
            p = ax.at(c)
            ends = {"x1": p, "x2": p, "y1": fr.top, "y2": fr.bottom} if across else \
                {"x1": fr.left, "x2": fr.right, "y1": p, "y2": p}
            out.append(_el("line", class_="grid", stroke=GRID, stroke_width="1", **{k: _n(v) for k, v in ends.items()}))
    return "".join(out)


def _axis_text(xa: Axis, ya: Axis, fr: Frame) -> str:
    """Tick labels (categories as text, rotated when they would collide) and axis titles."""
    out, top = [], xa.spec.get("side") == "top"
    edge = fr.top - 12 if top else fr.bottom + 12
    for c, label in _ticks(xa) if xa.labelled else []:
        x = xa.at(c)
        if fr.rotate_x:
            out.append(_text(x, edge, label, anchor="start" if top else "end", class_="tick",
                             transform=f"rotate(-45 {_n(x)} {_n(edge)})"))
        else:
            out.append(_text(x, edge, label, anchor="middle", class_="tick"))
    for c, label in _ticks(ya) if ya.labelled else []:
        out.append(_text(fr.left - 6, ya.at(c), label, anchor="end", class_="tick"))
    xt = _title(xa.spec.get("title")) if xa.visible else ""
    if xt:
        out.append(_text((fr.left + fr.right) / 2, fr.x_title_y, xt, size=13, anchor="middle", class_="axis-title"))
    yt = _title(ya.spec.get("title")) if ya.visible else ""
    if yt:
        mid = (fr.top + fr.bottom) / 2
        out.append(_text(16, mid, yt, size=13, anchor="middle", class_="axis-title", transform=f"rotate(-90 16 {_n(mid)})"))
    return "".join(out)


def _legend(fr: Frame) -> str:
    """The trace names under the plot, each after a sample of its line, marker or bar."""
    out = []
    for k, row in enumerate(fr.legend):
        y = fr.height - 10 - 22 * (len(fr.legend) - k) + 11
        for dx, tr in row:
            x = 10 + dx
            colour = ((tr.get("line") or {}).get("color") if tr["type"] == "scatter" else None) or tr["_colour"]
            if tr["type"] == "bar":
                out.append(_el("rect", x=_n(x), y=_n(y - 6), width="24", height="12", fill=colour))
            if tr["type"] == "scatter" and "lines" in _mode(tr):
                out.append(_el("line", x1=_n(x), x2=_n(x + 24), y1=_n(y), y2=_n(y), stroke=colour, stroke_width="2",
                               stroke_dasharray=DASHES.get((tr.get("line") or {}).get("dash"))))
            if tr["type"] == "scatter" and "markers" in _mode(tr):
                fill = (tr.get("marker") or {}).get("color")
                out.append(_el("circle", cx=_n(x + 12), cy=_n(y), r="4", fill=fill if isinstance(fill, str) else colour))
            out.append(_text(x + 30, y, tr["name"], class_="legend-name"))
    return _el("g", "".join(out), class_="legend") if out else ""


def figure_svg(spec: dict) -> str:
    """A plotly figure dict (``{"data": [...], "layout": {...}}``) as a standalone SVG document."""
    layout = spec.get("layout") or {}
    traces = _traces(spec)
    xa, ya = _axes(layout, traces)
    title = _title(layout.get("title"))
    fr = _frame(layout, traces, xa, ya, title)
    w, h = _n(fr.width), _n(fr.height)
    plot = _el("rect", x=_n(fr.left), y=_n(fr.top), width=_n(fr.right - fr.left), height=_n(fr.bottom - fr.top))
    body = [
        _el("rect", width=w, height=h, fill="#ffffff"),
        _el("defs", _el("clipPath", plot, id="plot-area")),
        _text(12, 20, title, size=16, font_weight="600", class_="title") if title else "",
        _grid(xa, ya, fr),
        _el("g", _shapes(layout, xa, ya, "below") + "".join(_trace(tr, xa, ya) for tr in traces)
            + _shapes(layout, xa, ya, "above"), class_="traces", clip_path="url(#plot-area)"),
        _annotations(layout, xa, ya),
        _axis_text(xa, ya, fr),
        _legend(fr),
    ]
    faces = font_faces("".join(body))  # the shipped Korean font's slices its text needs: Korean renders anywhere
    if faces:
        body.insert(0, _el("style", faces))
    font = (layout.get("font") or {}).get("family") or FONT
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + _el("svg", "".join(body), xmlns="http://www.w3.org/2000/svg", **{"xmlns:xlink": "http://www.w3.org/1999/xlink"},
                  width=w, height=h, viewBox=f"0 0 {w} {h}", font_family=font))
