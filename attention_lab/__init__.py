"""Attention Lab outside the app: the notebook views of core's traces and the building blocks they
share with the app (strings, formulas, map and bar specs, the pipeline's panels) — none of it imports
Streamlit. ``from attention_lab import show`` draws any trace of ``core`` in Jupyter."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["show"]


def show(trace, **kwargs):
    """:func:`attention_lab.notebook.show` (imported on first use)."""
    from .notebook import show as _show

    return _show(trace, **kwargs)
