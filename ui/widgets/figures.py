"""Plotly figures handed to Streamlit as finished dicts (see :class:`PrebuiltFigure`), each
shown with its "SVG" and "PNG" buttons under it (:func:`show_chart`)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from .. import settings, state
from ..i18n import t
from .assets import ASSETS, DOM_LIB

FONT_FAMILY = "Source Sans, attention-lab-kr, Noto Sans CJK KR, sans-serif"  # every chart's: Korean renders too
# (Source Sans, the shipped Korean font, Noto Sans CJK KR: see .streamlit/config.toml)
# no modebar: the buttons under the chart save it (plotly cannot declare a second, SVG, modebar button in JSON)
CHART_CONFIG = {"displaylogo": False, "displayModeBar": False}
# the pictures are made by plotly.js in the browser from the chart on screen (assets/components/chart_export.js)
_EXPORT = st.components.v2.component("attention_lab_chart_export",
                                     js=DOM_LIB + (ASSETS / "chart_export.js").read_text(encoding="utf-8"),
                                     css=(ASSETS / "chart_export.css").read_text(encoding="utf-8"))


class PrebuiltFigure(go.Figure):
    """A plotly figure handed over as a finished dict.

    st.plotly_chart converts any figure with ``to_dict()``; plotly's own objects validate
    and deep-copy every cell on the way, which costs far more than the attention itself
    (BENCHMARKS.md, "Figures behind the code"). The dicts built here use only documented plotly attributes.
    """

    def __init__(self, spec: dict):  # noqa: D107 — go.Figure's own __init__ is skipped on purpose:
        # building an empty figure's validators costs time on every chart, and Streamlit only checks
        # isinstance(…, BaseFigure) and calls to_dict()
        layout = spec.setdefault("layout", {})
        layout.setdefault("font", {"family": FONT_FAMILY})  # Korean labels use the shipped web font
        self._spec = spec

    def to_dict(self) -> dict:  # what Streamlit serialises
        return self._spec


def line_figure(data: list[dict], layout: dict, *, height: int = 300) -> PrebuiltFigure:
    """A small chart with a legend under it: ``data`` are plotly traces as dicts."""
    base = {"height": height, "margin": {"l": 10, "r": 10, "t": 30, "b": 10}, "legend": {"orientation": "h", "y": -0.25}}
    return PrebuiltFigure({"data": data, "layout": base | layout})


def show_chart(fig: go.Figure, *, key: str, file: str | None = None, title: str | None = None,
               alt: str | None = None) -> None:
    """A plotly chart with "SVG" and "PNG" (2×) under it: the chart as on screen, as a picture for
    slides (title, axes, token labels, legend; the Korean font inside the SVG). ``title`` (shown on
    the page as a heading) is written into the picture only; ``file`` names the download (the key by default);
    ``alt`` is the chart's accessible name (Streamlit makes the chart a named ``role=figure``)."""
    st.plotly_chart(fig, key=key, config=CHART_CONFIG, alt=alt)
    _EXPORT(data={"chart": state.css_class(key)[1:], "file": (file or key).replace(".", "-"), "title": title or "",
                  "help": {"svg": t("export.svg.help"), "png": t("class.export.png", scale=2)},
                  "hc": bool(settings.get("contrast"))}, key=state.item(key, "export"))
