"""Every page in Korean: no raw LaTeX markup in prose, no English words inside a formula's text,
no English-only widget text, and Streamlit's own uploader texts covered by ours.

The companion of test_korean_text.py (which fails on English sentences): this walk fails on what a
sentence detector lets through — a lone English label ("Upload"), a formula's ``\\text{ or }``, or
markup printed raw (``W_{V,h}``, ``\\text``) outside math."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ui import nav, state
from ui.i18n import table

from .helpers import open_tab
from .test_korean_text import korean_page, visible_text

ROOT = Path(__file__).resolve().parents[2]

MATH_OR_CODE = (re.compile(r"\$\$.*?\$\$", re.S), re.compile(r"\$[^$\n]+\$"), re.compile(r"```.*?```", re.S),
                re.compile(r"`[^`]*`"), re.compile(r"<style>.*?</style>", re.S))
RAW_MARKUP = re.compile(r"\\[A-Za-z]+|[A-Za-z0-9]_\{|\^\{")  # \text, \frac …, W_{V,h}, x^{2}
TEXT_IN_MATH = re.compile(r"\\(?:text|mathrm|textrm|operatorname)\{([^}]*)\}")
# words a formula may keep in Korean: function names, and the axes named in the row/column notation's subscripts
MATH_WORDS = {"softmax", "Softmax", "Attention", "MHA", "Concat", "head", "row", "column", "target", "source", "PE", "pos",
              "LayerNorm", "FFN", "ReLU", "GELU", "tanh", "exp", "cos", "sin", "max", "score", "align", "dim", "mean", "std",
              "Var", "enc", "dec", "top", "DiffAttn", "init", "GRU", "LN", "att", "out", "in", "model", "cls", "patch", "CLS",
              "SiLU", "softplus", "RMSNorm", "conv"}
ENGLISH_WORD = re.compile(r"\b[A-Za-z]{3,}\b")
HANGUL = re.compile(r"[\uac00-\ud7a3]")
# English a widget may show as it is in Korean: names of things (code, models, formats), not UI words
NAMES = {"softmax", "JSON", "CSV", "PNG", "SVG", "JPEG", "GELU", "ReLU", "MiniLM", "all-MiniLM-L6-v2", "PyTorch", "torch",
         "core", "GRU", "seq2seq", "ViT", "CLS", "SEP", "UNK", "LayerNorm", "Jupyter", "notebook", "cpu", "cuda", "mps",
         "float32", "float64", "max", "English", "d_model", "d_k", "d_v", "d_a", "seed", "Q", "K", "V", "X",
         "Gemma", "Llama", "Scout", "gpt", "oss"}  # model names stay as published


def _prose(at) -> list[tuple[str, str]]:
    return [(w, s) for w, s in visible_text(at) if w not in ("table.cell",)]


def problems_on(at) -> list[str]:
    found = []
    for where, text in _prose(at):
        bare = text
        for pattern in MATH_OR_CODE:
            bare = pattern.sub(" ", bare)
        found += [f"[{where}] raw markup {m.group(0)!r} in {text[:120]!r}" for m in RAW_MARKUP.finditer(bare)]
        if where.endswith((".label", ".option")) and not HANGUL.search(text):
            words = [w for w in ENGLISH_WORD.findall(text) if w not in NAMES and w.lower() not in {n.lower() for n in NAMES}]
            if words:
                found.append(f"[{where}] English-only widget text {text[:80]!r}")
    for latex in at.latex:
        for inner in TEXT_IN_MATH.findall(str(latex.value)):
            words = [w for w in re.findall(r"[A-Za-z]{2,}", inner) if w not in MATH_WORDS]
            if words:
                found.append(f"[latex] English words {words} in {str(latex.value)[:100]!r}")
    found += _uploaders_covered(at)
    return found


def _uploaders_covered(at) -> list[str]:
    """Every file uploader in Korean carries the style that draws our button and limit texts."""
    styles = " ".join(m.value for m in at.markdown if "<style>" in m.value)
    ko = table("ko")
    out = []
    for up in at.get("file_uploader"):
        sel = state.css_class(up.proto.id.rsplit("-", 1)[-1]) if "-" in up.proto.id else ""
        if not (sel and sel in styles and ko["class.upload.browse"] in styles):
            out.append(f"[file_uploader] {up.proto.id}: Streamlit's English 'Upload' / limit text left uncovered")
    return out


@pytest.mark.parametrize("info", nav.PAGES, ids=[p.name for p in nav.PAGES])
def test_no_raw_markup_or_english_ui_text_on_a_korean_page(info):
    at = korean_page(info.name)
    assert not at.exception, [e.value for e in at.exception]
    assert problems_on(at) == []


def test_every_playground_tab_and_the_trained_heads_in_korean():
    at = korean_page("playground")
    found = []
    for tab in ("embed", "qkv", "score", "mask", "share"):
        open_tab(at, tab)
        assert not at.exception
        found += problems_on(at)
    at = korean_page("multi_head")
    at.session_state[state.MULTI_HEAD.source] = "model"  # (AppTest formats options in English: seeded, not clicked)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    found += problems_on(at)
    at = korean_page("vision_transformer")
    at.session_state[state.VISION_TRANSFORMER.source] = "random"
    at.run()
    found += problems_on(at)
    assert found == []


def test_the_walk_finds_what_it_is_for():
    ko = table("ko")
    key, kept = "mh.paper.text", ko["mh.paper.text"]
    ko[key] = "헤드마다 W_{V,h} W_{O,h}를 곱합니다."
    try:
        at = korean_page("multi_head")
    finally:
        ko[key] = kept
    assert any("W_{" in f for f in problems_on(at)), problems_on(at)


def test_every_bold_in_every_string_closes_when_rendered():
    """``**…**`` right before a Korean particle does not close when the bold ends in punctuation (CommonMark's
    flanking rule: ``**79.3%**를`` shows its asterisks). Every string of both languages, its placeholders filled
    with a number, rendered by CommonMark, keeps no ``**``."""
    import glob
    import json

    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    left = []
    for path in sorted(glob.glob(str(ROOT / "assets" / "i18n" / "*.json"))):
        for key, value in json.loads(Path(path).read_text(encoding="utf-8")).items():
            if isinstance(value, str) and "**" in value:
                html = md.render(re.sub(r"\{\w+\}", "7", value))
                if "**" in re.sub(r"<code>.*?</code>", "", html, flags=re.S):
                    left.append(f"{Path(path).name}:{key}")
    assert not left, "asterisks left on the page: " + ", ".join(left)
