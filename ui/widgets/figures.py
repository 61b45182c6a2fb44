"""Plotly figures handed to Streamlit as finished dicts (see :class:`PrebuiltFigure`)."""

from __future__ import annotations

import plotly.graph_objects as go

FONT_FAMILY = "Source Sans, attention-lab-kr, Noto Sans CJK KR, sans-serif"  # see .streamlit/config.toml
# one button on every chart: save it as a picture for slides (title, axes and legend as drawn, in
# the current language); plotly's SVG export needs a second button it cannot declare in JSON
CHART_CONFIG = {"displaylogo": False, "modeBarButtons": [["toImage"]],
                "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "attention-lab-chart"}}


class PrebuiltFigure(go.Figure):
    """A plotly figure handed over as a finished dict.

    st.plotly_chart converts any figure with ``to_dict()``; plotly's own objects validate
    and deep-copy every cell on the way, which costs far more than the attention itself
    (0.3 s for a 64 × 64 map). The dicts built here use only documented plotly attributes.
    """

    def __init__(self, spec: dict):
        super().__init__()
        layout = spec.setdefault("layout", {})
        layout.setdefault("font", {"family": FONT_FAMILY})  # Korean labels use the shipped web font
        self._spec = spec

    def to_dict(self) -> dict:  # what Streamlit serialises
        return self._spec


def line_figure(data: list[dict], layout: dict, *, height: int = 300) -> PrebuiltFigure:
    """A small chart with a legend under it: ``data`` are plotly traces as dicts."""
    base = {"height": height, "margin": {"l": 10, "r": 10, "t": 30, "b": 10}, "legend": {"orientation": "h", "y": -0.25}}
    return PrebuiltFigure({"data": data, "layout": base | layout})
