"""Every cache of the app is bounded: a class of 40 (or one visitor trying many seeds) cannot grow
the server's memory without limit."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _decorators():
    tree = ast.parse((ROOT / "ui" / "compute.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr.startswith("cache_"):
                    yield node, d


def test_every_data_cache_has_a_bound_and_every_resource_is_one_per_server():
    found = list(_decorators())
    assert len(found) >= 10
    for fn, d in found:
        kw = {k.arg: k.value for k in d.keywords}
        if d.func.attr == "cache_data":
            assert "max_entries" in kw and isinstance(kw["max_entries"], ast.Constant), fn.name
            assert 1 <= kw["max_entries"].value <= 256, fn.name
        else:  # st.cache_resource: no arguments → one object for the whole server, whatever visitors type
            assert not fn.args.args or "max_entries" in kw, fn.name


def _entries(name: str) -> int:
    from streamlit.runtime.caching import cache_data_api

    caches = cache_data_api._data_caches._function_caches
    for group in caches.values():
        for cache in group.values():
            if cache.display_name == f"ui.compute.{name}":
                return len(cache.get_stats().get("cache_memory_bytes", []))
    return 0


def test_many_seeds_and_scenarios_stay_within_the_bounds():
    from ui import compute

    for seed in range(300):  # a visitor trying seeds
        compute.projection(3, 3, seed, "W_q")
    assert 0 < _entries("projection") <= 256
    X = np.ones((3, 3), np.float32)
    for i in range(70):  # many different scenarios
        Xi = X + i
        compute.playground(Xi, Xi, "identity", None, None, None, None, None, None, "dot", {}, None, 1.0, None, "row", "cpu")
    assert 0 < _entries("playground") <= 48
