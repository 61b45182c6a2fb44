"""Plotly figures handed to Streamlit as finished dicts (see :class:`PrebuiltFigure`), each
shown with its one-click SVG download (:func:`show_chart`)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from .. import state
from ..i18n import t
from .chart_svg import FONT as FONT_FAMILY  # Source Sans, the shipped Korean font, Noto Sans CJK KR (see .streamlit/config.toml)
from .chart_svg import figure_svg

# the modebar's one button on every chart: save it as a PNG for slides (title, axes and legend as
# drawn, in the current language); plotly cannot declare a second (SVG) button in JSON, so the SVG
# is drawn on the server (ui.widgets.chart_svg) behind a download button under the chart
CHART_CONFIG = {"displaylogo": False, "modeBarButtons": [["toImage"]],
                "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "attention-lab-chart"}}


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
    """A plotly chart with a small "SVG" download under it: the same figure as a picture for
    slides (title, axes, token labels, legend), drawn only when clicked. ``title`` (shown on the
    page as a heading) is written into the SVG only; ``file`` names the download (the key by default);
    ``alt`` is the chart's accessible name (Streamlit makes the chart a named ``role=figure``)."""
    st.plotly_chart(fig, key=key, config=CHART_CONFIG, alt=alt)

    def svg() -> str:  # runs on click, in another thread: no session state, the text is already translated
        spec = fig.to_dict()
        if title:
            spec = spec | {"layout": (spec.get("layout") or {}) | {"title": {"text": title}}}
        return figure_svg(spec)

    st.download_button("SVG", data=svg, file_name=f"{(file or key).replace('.', '-')}.svg", mime="image/svg+xml",
                       key=state.item(key, "svg"), help=t("export.svg.help"), type="tertiary", width="content",
                       on_click="ignore")
