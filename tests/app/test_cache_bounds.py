"""Every cache of the app is bounded: a class of 40 (or one visitor trying many seeds and the largest
inputs) cannot grow the server's memory without limit — by entries per function, and by BYTES for
the whole server (ui/memo.py)."""

from __future__ import annotations

import ast
import gc
from pathlib import Path

import numpy as np
import pytest

from ui import compute, memo

from .helpers import no_errors, page

ROOT = Path(__file__).resolve().parents[2]


def _decorated():
    """Every decorated function of ui/compute/ (one module per family of pages), with its decorator call."""
    for path in sorted((ROOT / "ui" / "compute").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                for d in node.decorator_list:
                    if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute):
                        yield node, d


def test_every_cached_call_is_byte_bounded_and_every_resource_is_one_per_server():
    found = list(_decorated())
    assert len(found) >= 10
    for fn, d in found:
        kw = {k.arg: k.value for k in d.keywords}
        assert d.func.attr in ("cached", "cache_resource"), f"{fn.name}: st.cache_data bounds entries, not bytes"
        if d.func.attr == "cached":
            assert "max_entries" in kw and isinstance(kw["max_entries"], ast.Constant), fn.name
            assert 1 <= kw["max_entries"].value <= 256, fn.name
        else:  # st.cache_resource: no arguments → one object for the whole server, whatever visitors type
            assert not fn.args.args or "max_entries" in kw, fn.name


def _entries(name: str) -> int:
    return memo.CACHE.stats().get(_cache_name(name), (0, 0))[0]


def _cache_name(name: str) -> str:
    """The memo cache's name of ``compute.<name>`` (its family module's)."""
    return f"{getattr(compute, name).__module__}.{name}"


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


@pytest.fixture
def small_cache(monkeypatch):
    """The server's cache with an 8 MB budget (entries up to 4 MB), emptied before and after."""
    cache = memo.ByteCache(8 * 2**20, 4 * 2**20)
    monkeypatch.setattr(memo, "CACHE", cache)
    yield cache
    cache.clear()


def test_the_largest_scenarios_stay_under_the_byte_budget_and_the_newest_are_kept(small_cache):
    from ui import compute

    rng = np.random.default_rng(0)
    sizes = []
    for _ in range(12):  # 12 different 256-token scenarios: each trace ~1.6 MB pickled
        X = rng.standard_normal((256, 16)).astype(np.float32)
        compute.playground(X, X, "identity", None, None, None, None, None, None, "scaled_dot", {}, None, 1.0, None,
                           "row", "cpu")
        sizes.append(small_cache.total)
        assert small_cache.total <= small_cache.max_bytes
    n, total = small_cache.stats()[_cache_name("playground")]
    assert 2 <= n < 12 and total == small_cache.total
    assert max(sizes) > 6 * 2**20  # the budget was reached, so eviction did the bounding (not max_entries)
    compute.playground(X, X, "identity", None, None, None, None, None, None, "scaled_dot", {}, None, 1.0, None, "row", "cpu")
    assert small_cache.stats()[_cache_name("playground")][0] == n  # the newest one is a hit: nothing added


def test_one_result_over_the_entry_cap_is_returned_but_not_kept(small_cache):
    @memo.cached(max_entries=4)
    def big(n: int) -> np.ndarray:
        return np.zeros(n, np.float64)

    assert big(1024 * 1024).shape == (1024 * 1024,)  # 8 MB > the 4 MB entry cap
    assert small_cache.total == 0
    assert big(1000).shape == (1000,) and small_cache.total > 8000


def test_hits_are_copies_and_keys_are_by_value():
    calls = []

    @memo.cached(max_entries=8)
    def f(a, k):
        calls.append(1)
        return {"a": a * 2, "k": k}

    x = np.arange(4.0)
    r1 = f(x, {"p": (1, 2)})
    r1["a"][0] = 99  # a caller changing its result changes nothing kept
    r2 = f(x.copy(), {"p": (1, 2)})
    assert len(calls) == 1 and r2["a"][0] == 0
    f(x.astype(np.float32), {"p": (1, 2)})  # another dtype, another key
    f(x, {"p": [1, 2]})  # a list is not a tuple
    f(x, {"p": (1, 2.0)})  # 2.0 is not 2
    assert len(calls) == 4
    f.clear()
    f(x, {"p": (1, 2)})
    assert len(calls) == 5


def test_expired_entries_are_recomputed(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(memo.time, "monotonic", lambda: clock[0])
    calls = []

    @memo.cached(max_entries=2, ttl=60)
    def g(i):
        calls.append(i)
        return i

    g(1), g(1)
    clock[0] += 61
    g(1)
    assert calls == [1, 1]


def test_after_the_first_run_a_full_collection_walks_only_what_the_sessions_made():
    """Once per server, after its first run, the objects alive then (Streamlit's, torch's, the app's modules) are out of
    the collector's sight (``compute.settled``): a full collection, which stops every session, no longer walks them."""
    at = page("app.py")
    no_errors(at)
    assert compute.settled() is True
    assert gc.get_freeze_count() > 100_000  # ~300,000 after the home page's first run
