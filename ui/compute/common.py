"""What every family of cached calls shares: the cache's time to live, one torch thread per computation, the
collector settled once per server, and traces moved to the CPU."""

from __future__ import annotations

import dataclasses
import gc
import os
from pathlib import Path

import streamlit as st
import torch

HOUR = 3600


ASSETS_TEXTS = Path(__file__).resolve().parents[2] / "assets" / "texts"  # ui/compute/common.py → the checkout


# one thread per computation: a class shares the server's cores, and the matrices here are small;
# with torch's default of one thread per core, a 4×4 softmax waited tens of ms whenever the other
# core was busy (measured, BENCHMARKS.md)
torch.set_num_threads(1)


# ATTN_LAB_GC_FREEZE=off: every object stays in the collector's sight (to measure what settled() saves)
GC_FREEZE = os.environ.get("ATTN_LAB_GC_FREEZE") != "off"


@st.cache_resource(show_spinner=False)
def settled() -> bool:
    """Once per server, after its first run: the objects alive then (the modules of Streamlit, torch, numpy, pandas,
    plotly and the app: ~300,000, of ~310,000 after every page has run) are collected once and put out of the
    collector's sight (``gc.freeze``). A full collection stops every session's run while it walks the objects it
    sees: beside a class writing, a median 312 ms, one at the press in every run; afterwards 85 ms (BENCHMARKS.md,
    "A full collection at the press"). Garbage made later is collected as before; only a cycle alive at that moment
    that dies later is never freed (one first run's worth, once)."""
    if GC_FREEZE:
        gc.collect()
        gc.freeze()
    return GC_FREEZE


def to_cpu(obj):
    """Tensors of a (nested) trace moved to the CPU, so the page can turn them into numbers."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if dataclasses.is_dataclass(obj):
        return dataclasses.replace(obj, **{f.name: to_cpu(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    return obj
