"""Every page in Korean: no visible English sentence that is not math, code or example data.

The walk reads what a learner reads — markdown, captions, the coloured boxes, titles, the labels,
help texts and options of every widget, table headers and cells, chart axis titles and legends —
strips what is not prose (LaTeX, code, HTML tags, quoted examples, the sources' example sentences,
the toy tasks' vocabulary) and fails on a run of four or more English words in a row.
"""

from __future__ import annotations

import json
import re

import pytest

from attention_lab import scenario
from core import seq2seq
from ui import nav, state
from ui.i18n import table

from .helpers import open_tab, page

MIN_RUN = 4  # "Dot product" or "Attention Mechanism" is a term; four English words in a row are a sentence

# English that the app shows as data, on purpose, in both languages:
ALLOWED = (
    # the sources' example sentences, loaded by the example menu (their labels print them)
    *(v for p in scenario.PRESETS.values() for k, v in p.items() if k in ("tokens", "source")),
    "is very cool",  # the target of the lecture notes' causal-mask example
    "the cat saw the dog",  # the position page's sentence with a repeated token
    "Attention Is All You Need",  # the title of Vaswani et al. (2017)
)
# the toy translation's vocabulary (model inputs and outputs are shown as they are)
DATA_WORDS = frozenset(
    w.lower()
    for name in seq2seq.TASKS
    for vocab in (seq2seq.get_task(name).src_vocab, seq2seq.get_task(name).tgt_vocab)
    for w in vocab
)

NOT_PROSE = (
    re.compile(r"<style>.*?</style>", re.S),  # the app's CSS
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"\$[^$\n]+\$"),  # inline math
    re.compile(r"```.*?```", re.S),  # code blocks
    re.compile(r"`[^`]*`"),  # inline code
    re.compile(r"“[^”]*”|‘[^’]*’"),  # quoted text: example sentences, titles, the words a source prints
    re.compile(r"<[^>]+>"),  # HTML tags (their text stays)
)
WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
EDGE = "\"'“”‘’()[]{}<>.,;:!?*_~—–-…·|/=+→←↓"


def english_runs(text: str, data_words: frozenset[str] = frozenset()) -> list[str]:
    """The runs of ≥ MIN_RUN consecutive English words in ``text`` once math, code, HTML, quotes
    and allowed data are removed. Single letters (Q, K, V, X, a) and data words neither count nor
    break a run; anything else that is not an English word (Hangul, numbers, symbols, code
    identifiers such as W_Q or nn.MultiheadAttention) ends it."""
    for pattern in NOT_PROSE:
        text = pattern.sub(" | ", text)
    for phrase in ALLOWED:
        text = re.sub(re.escape(phrase), " | ", text, flags=re.IGNORECASE)
    runs, run = [], []
    for raw in text.split():
        tok = raw.strip(EDGE)
        if WORD.fullmatch(tok):
            if len(tok) > 1 and tok.lower() not in data_words:
                run.append(tok)
            continue
        if len(run) >= MIN_RUN:
            runs.append(" ".join(run))
        run = []
    if len(run) >= MIN_RUN:
        runs.append(" ".join(run))
    return runs


# ------------------------------------------------------------------ what a learner reads
TEXT = ("markdown", "caption", "info", "warning", "error", "success", "subheader", "title", "header", "text")
WIDGETS = (
    "radio",
    "slider",
    "select_slider",
    "checkbox",
    "toggle",
    "selectbox",
    "multiselect",
    "text_input",
    "number_input",
    "button",
    "download_button",
    "file_uploader",
    "expander",
    "tabs",
    "page_link",
)


def _elements(at, kind):
    try:
        return list(getattr(at, kind))
    except (AttributeError, KeyError):
        return list(at.get(kind))


# keys of the app's components whose strings are data, code or markup, not prose: values, colours, labels
# of tokens (the learner's own text), ids, file names, formulas (checked by test_korean_markup), bytes
DATA_KEYS = frozenset({"z", "rgb", "masked", "bg", "fg", "xs", "ys", "text", "options", "id", "key", "css", "file",
                       "mathml", "latex", "url", "sid", "mark", "cols", "tokens", "labels", "svg", "png", "font",
                       "data", "values", "value", "cells", "rows", "query", "bdata"})


def component_strings(value, key: str = "") -> list[str]:
    """Every prose string inside a component's data (the pipeline's panels and notes, the inspector's
    headings, the maps' accessible names and key help, the live lines …), data keys left out."""
    if key in DATA_KEYS:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in component_strings(v, str(k))]
    if isinstance(value, list):
        return [s for v in value for s in component_strings(v, key)]
    return []


def _charts(at) -> list[tuple[str, str]]:
    """Every prose string of the app's components (heatmaps, the pipeline, the inspector, bars, the
    frame's messages); axis titles, legends and notes of plotly charts."""
    out = []
    for el in at.get("bidi_component"):
        try:
            spec = json.loads(el.proto.json)
        except (AttributeError, ValueError):
            continue
        out += [("component", text) for text in component_strings(spec) if text.strip()]
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        layout = spec.get("layout", {})
        out += [("chart", str(d["name"])) for d in spec.get("data", []) if d.get("name")]
        for axis in ("xaxis", "yaxis"):
            title = layout.get(axis, {}).get("title", {})
            if isinstance(title, dict) and title.get("text"):
                out.append(("chart", str(title["text"])))
        out += [("chart", str(a["text"])) for a in layout.get("annotations", []) if a.get("text")]
    return out


def visible_text(at) -> list[tuple[str, str]]:
    """(where, text) for everything a learner reads on the page."""
    out = [(kind, str(e.value)) for kind in TEXT for e in _elements(at, kind)]
    for kind in WIDGETS:
        for e in _elements(at, kind):
            for attr in ("label", "help", "placeholder"):
                v = getattr(e.proto, attr, None) if hasattr(e, "proto") else None
                if v:
                    out.append((f"{kind}.{attr}", str(v)))
            for option in getattr(e, "options", None) or []:
                out.append((f"{kind}.option", str(option)))
    for df in at.dataframe:
        frame = df.value
        out.append(("table.header", " · ".join(map(str, frame.columns))))
        out += [("table.cell", str(v)) for v in frame.to_numpy().ravel().tolist()]
    return out + _charts(at)


def scenario_words(at) -> frozenset[str]:
    """The words of the scenario's token boxes: the learner's own text, shown back as token names."""
    words = set()
    for name in ("tokens", "source"):
        try:
            text = at.session_state[state.scenario_kept(name)]
        except KeyError:
            text = scenario.DEFAULTS[name]
        words |= {w.lower() for w in str(text).split()}
    return frozenset(words)


def english_on(at, data_words: frozenset[str] = frozenset()) -> list[str]:
    """Every English run on the page; the words of the scenario's tokens count as data."""
    data_words = data_words | scenario_words(at)
    seen, found = set(), []
    for where, text in visible_text(at):
        if text in seen:
            continue
        seen.add(text)
        found += [f"[{where}] {run}   ← {text[:160]!r}" for run in english_runs(text, data_words)]
    return found


# ------------------------------------------------------------------ the detector itself
@pytest.mark.parametrize(
    "text",
    [
        "이 문장에는 This is a planted English sentence 가 숨어 있습니다.",
        "The weights of one query sum to 1.",
        "**Causal mask**: query i may see keys j ≤ i only",
        "키별 가중치 (hover a cell to read its value)",
    ],
)
def test_the_detector_finds_english_sentences(text):
    assert english_runs(text)


@pytest.mark.parametrize(
    "text",
    [
        "토큰을 입력하고 X, Q, K, V, W를 고치고, 점수 함수와 마스크를 바꿔 보세요.",  # single letters are math
        "$\\mathrm{softmax}(QK^\\top / \\sqrt{d_k}) V$를 계산합니다.",
        "`torch.softmax(scores, dim=-1)` — 행을 따라 적용합니다.",
        "CPU에서 torch의 scaled_dot_product_attention은 0을, nn.MultiheadAttention은 NaN을 돌려줍니다.",
        "왜 √d_k인가 · when you play the game of thrones",  # an example sentence of a source
        "블로그 글 “Attention Mechanism”의 “Seq2Seq with Attention” 코드",
        "φ는 ReLU 또는 GELU이고, LayerNorm에는 γ와 β가 없습니다.",
        "<span class='shape-badge'>Q (4×3) · Kᵀ (3×4) → (4×4)</span>",
    ],
)
def test_the_detector_lets_math_code_and_data_pass(text):
    assert english_runs(text) == []


def test_the_detector_knows_the_toy_vocabulary_only_when_told():
    shown = "모델 출력: **the red car sees the big dog** — 정답: **the red car sees the big dog**"
    assert english_runs(shown) and english_runs(shown, DATA_WORDS) == []


def _planted(key: str, english: str, page_file: str) -> list[str]:
    """The English runs of a Korean page with ``english`` in place of the Korean string ``key``."""
    ko = table("ko")
    kept, ko[key] = ko[key], english
    try:
        at = page(page_file, query={"lang": "ko"})
    finally:
        ko[key] = kept
    return english_on(at)


def test_the_walk_catches_english_planted_in_the_korean_table():
    found = _planted("mk.intro", "A mask says which keys each query may use.", "app_pages/masks.py")
    assert any("A mask says which keys" in f for f in found), found


def test_the_walk_reads_the_text_inside_the_apps_components():
    """English planted in a string only a component shows (a map's key help, inside the Playground's one
    pipeline element) is found."""
    found = _planted("a11y.map.keys", "Move between cells with the arrow keys.", "app_pages/playground.py")
    assert any("Move between cells with" in f for f in found), found


# ------------------------------------------------------------------ every page, in Korean
def korean_page(name: str, query: dict | None = None):
    info = nav.PAGE_BY_NAME[name]
    return page("app.py" if name == "home" else info.file, query={"lang": "ko"} | (query or {}))


@pytest.mark.parametrize("info", nav.PAGES, ids=[p.name for p in nav.PAGES])
def test_no_english_sentence_on_a_korean_page(info):
    at = korean_page(info.name)
    assert not at.exception, [e.value for e in at.exception]
    words = DATA_WORDS if info.name == "seq2seq" else frozenset()
    assert english_on(at, words) == []


def _playground_tabs(query: dict, tabs=("embed", "qkv", "score", "mask", "share")) -> list[str]:
    at = korean_page("playground", query)
    found = english_on(at)
    for tab in tabs:
        open_tab(at, tab)
        assert not at.exception, [e.value for e in at.exception]
        found += english_on(at)
    return found


def test_every_playground_tab_in_korean():
    assert _playground_tabs({}) == []


def test_playground_with_additive_score_projections_and_causal_mask_in_korean():
    query = {"score": "additive", "qkv": "projection", "causal": "1", "conv": "column"}
    assert _playground_tabs(query, ("qkv", "score", "mask")) == []


def test_cross_attention_in_korean():
    query = {"mode": "cross", "tok": "vediamo il cielo", "src": "We see the sky"}
    assert _playground_tabs(query, ("mask",)) == []
    assert english_on(korean_page("self_vs_cross", query)) == []


def test_queries_that_see_nothing_in_korean():
    at = korean_page("masks", {"pad": "[0,1,2,3]"})
    assert at.warning and english_on(at) == []


def test_a_selected_cell_of_the_notations_page_in_korean():
    at = korean_page("notations", {"causal": "1"})
    at.session_state[state.NOTATIONS.selected] = ("scores", 0, 1)
    at.run()
    assert at.info and english_on(at) == []


def test_seq2seq_without_attention_and_the_toy_translation_in_korean():
    at = korean_page("seq2seq")
    for name, value in ((state.SEQ2SEQ.att, "none"), (state.SEQ2SEQ.task, "translate")):
        at.session_state[name] = value
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert english_on(at, DATA_WORDS) == []


def test_vision_transformer_without_class_token_in_korean():
    at = korean_page("vision_transformer")
    at.session_state[state.VISION_TRANSFORMER.cls] = False
    at.run()
    assert not at.exception and english_on(at) == []
