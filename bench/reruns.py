"""Server-side reruns of every page, measured with AppTest: ``python -m bench.reruns [ROOT]``.

Prints one JSON object (milliseconds, medians); ``--pages llm`` (or ``--pages KV_cache,Long_context``) measures
only a seed change on those pages. ``ROOT`` is a checkout of this project, by default
this one; ``bench.playground --before REV`` runs this file against a worktree of an older commit
in the same run, so "before" and "after" are measured on the same machine at the same time. The
script therefore finds pages and widgets by what every version has in common — the page's URL
path, a text box whose key ends in ``tokens``, a number box whose key ends in ``seed`` — not by
this version's registry.

One difference from a plain AppTest, on purpose: the compiled page scripts are kept between
reruns, as a real server keeps them (``streamlit.runtime.Runtime`` holds one ``ScriptCache`` for
the process). AppTest makes a new ``ScriptCache`` for every run, so it re-reads, re-parses (the
"magic" AST pass) and re-compiles the page file on every rerun — a cost a server pays once per
process, and one that grows with the page file's length: it was 79 ms of a 159 ms profiled
Playground rerun.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import app_test as _app_test
from streamlit.testing.v1 import local_script_runner as _runner

PAGES = ("Playground", "Notations", "Score_functions", "Masks", "Multi-head", "Self_vs_cross", "Position",
         "Transformer_block", "Vision_Transformer")
QUERY = {"emb": "random", "qkv": "projection", "causal": "1"}  # as the browser benchmark's URL


def keep_compiled_pages() -> None:
    """One ScriptCache for every AppTest run in this process, as one server has."""
    shared = ScriptCache()
    _runner.ScriptCache = _app_test.ScriptCache = lambda: shared


def page_file(root: Path, url: str) -> str:
    """The page file behind a URL path, in either layout (``st.navigation`` or ``pages/N_Name.py``)."""
    try:
        from ui import nav
        return next(p.file for p in nav.PAGES if p.url == url or p.file.endswith(f"/{url.lower()}.py"))
    except (ImportError, AttributeError, StopIteration):
        return str(next((root / "pages").glob(f"*_{url}.py")).relative_to(root))


def _widget(elements, suffix: str):
    return next(w for w in elements if str(w.key or "").endswith(suffix))


def _median(at: AppTest, change, repeats: int) -> float:
    times = []
    for r in range(repeats + 1):  # the first change is a warm-up
        change(r)
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        assert not at.exception, at.exception
    return statistics.median(times[1:]) * 1e3


def _open(root: Path, url: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(root / "app.py"), default_timeout=300)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    return at.switch_page(page_file(root, url)).run()


def token_change(root: Path, n: int, repeats: int) -> float:
    at = _open(root, "Playground", QUERY)
    return _median(at, lambda r: _widget(at.text_input, "tokens").input(" ".join(f"w{r}_{i}" for i in range(n))),
                   repeats)


def seed_change(root: Path, url: str, repeats: int = 5) -> float:
    """A rerun after a new seed: new random numbers, so nothing comes from a cache."""
    at = _open(root, url)
    return _median(at, lambda r: _widget(at.number_input, "seed").set_value(100 + r), repeats)


def seq2seq_input(root: Path, repeats: int = 5) -> float:
    """The seq2seq page once its model is ready (trained, or shipped), a new input each rerun."""
    at = _open(root, "Seq2seq")
    if not [w for w in at.text_input if str(w.key or "").endswith("input")]:  # an older version: train first
        _widget(at.button, "train").click().run()
    return _median(at, lambda r: _widget(at.text_input, "input").input(
        " ".join("abcdefgh"[(r + i) % 8] for i in range(6))), repeats)


def bare(root: Path, repeats: int = 7) -> float:
    at = AppTest.from_file(str(root / "bench" / "bare_app.py"), default_timeout=60).run()
    return _median(at, lambda r: at.text_input(key="text").input(f"w{r}"), repeats)


def experiment(repeats: int = 5) -> float:
    import core

    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        core.experiments.scaling_experiment(seed=r)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def measure(root: Path, sizes=(8, 64, 256)) -> dict:
    keep_compiled_pages()
    out: dict[str, float] = {"bare": bare(root)}
    for n in sizes:
        out[f"tokens.{n}"] = token_change(root, n, repeats=5 if n < 256 else 3)
    out["experiment"] = experiment()
    for url in PAGES:
        out[f"seed.{url}"] = seed_change(root, url)
    out["seq2seq"] = seq2seq_input(root)
    return out


LLM_PAGES = ("KV_cache", "KV_sharing", "LLM_positions", "Long_context", "Tiled_attention", "Linear_attention")


def measure_pages(root: Path, urls) -> dict:
    """Only a seed change on the given pages (and the bare app, for scale): ``--pages KV_cache,…`` or ``--pages llm``."""
    keep_compiled_pages()
    return {"bare": bare(root)} | {f"seed.{url}": seed_change(root, url) for url in urls}


def main() -> None:
    args = sys.argv[1:]
    pages = None
    if "--pages" in args:
        i = args.index("--pages")
        pages = LLM_PAGES if args[i + 1] == "llm" else tuple(args[i + 1].split(","))
        args = args[:i] + args[i + 2:]
    root = Path(args[0] if args else Path(__file__).resolve().parents[1]).resolve()
    os.chdir(root)
    sys.path.insert(0, str(root))
    result = measure(root) if pages is None else measure_pages(root, pages)
    print(json.dumps({k: round(v, 1) for k, v in result.items()}))


if __name__ == "__main__":
    main()
