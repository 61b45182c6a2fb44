"""AppTest: the long-context page (sliding window with sinks, reach over layers, cache memory) against core
and against the rule written out here."""

from __future__ import annotations

import numpy as np
import pytest

import core
from ui import state

from .helpers import heat, no_errors, page, shown, texts

PAGE = "app_pages/long_context.py"
KEYS = state.LONG_CONTEXT


def at_with(**values):
    at = page(PAGE, run=False)
    for name, v in values.items():
        at.session_state[getattr(KEYS, name)] = v
    return at.run()


def rule(n: int, w: int, s: int) -> np.ndarray:
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return (((i - w < j) & (j <= i)) | ((j < s) & (j <= i))).astype(float)


def reach_by_walking(mask: np.ndarray, layers: int) -> list[np.ndarray]:
    """What the last token reaches after 1 … L layers, by following the allowed edges (a plain BFS)."""
    n = len(mask)
    seen, out = {n - 1}, []
    for _ in range(layers):
        seen = seen | {j for i in seen for j in range(n) if mask[i, j]}
        out.append(np.array([float(j in seen) for j in range(n)]))
    return out


@pytest.mark.parametrize(("n", "w", "s", "L"), [(24, 6, 2, 3), (16, 4, 0, 2), (10, 3, 1, 6)])
def test_mask_and_reach_equal_the_rule_and_a_walk(n, w, s, L):
    at = at_with(n=n, window=w, sinks=s, layers=L)
    no_errors(at)
    m = rule(n, w, s)
    np.testing.assert_array_equal(heat(at, KEYS.mask), m)
    np.testing.assert_array_equal(heat(at, KEYS.reach), np.stack(reach_by_walking(m, L)))
    far = core.masks.window_reach(n, w, L, sinks=s).farthest[-1]
    assert f"**{far}** tokens back" in texts(at)
    if s == 0:
        assert far == min(L * (w - 1), n - 1)
    # the sinks, which the side column counts, are named beside the window's reach (and only when there are any)
    assert (f"the first **{s}** tokens (the sinks)" in texts(at)) == (s > 0)
    walked = np.stack(reach_by_walking(m, L))[-1]
    through_window = {j for j in range(n) if n - 1 - j <= far}
    assert int(walked.sum()) == len(through_window | {j for j in range(s) if walked[j]})


def test_memory_table_equals_core():
    at = at_with(table_window=4096, table_sinks=4)
    no_errors(at)
    df = at.dataframe[0].value
    llama = core.MODEL_PRESETS["llama-3-8b"]
    row = df[df.iloc[:, 0] == "Llama-3-8B"].iloc[0]
    # 2·32·8·128·131072·2 B, past Llama-3-8B's published 8,192 tokens: marked as hypothetical
    assert row.iloc[3] == f"{llama.kv_cache_bytes(131072) / 2**30:.2f} GiB *" == "16.00 GiB *"
    assert row.iloc[6] == f"{llama.with_window(4096).kv_cache_bytes(131072, sinks=4) / 2**30:.2f} GiB"


def test_sizes_past_a_models_published_context_are_marked_hypothetical():
    """Every "all tokens" cell past its model's published context carries the mark, and no other cell does; the
    caption names each such model with its context, from core.MODEL_PRESETS (GPT-2 1,024; SmolLM2 and Llama-3-8B 8,192)."""
    at = at_with(table_window=4096, table_sinks=4)
    no_errors(at)
    df = at.dataframe[0].value
    names = {p.name: p for p in core.MODEL_PRESETS.values()}
    for _, row in df.iterrows():
        p = names[row.iloc[0]]
        for i, c in enumerate((4096, 32768, 131072)):
            assert row.iloc[1 + i].endswith(" *") == (c > p.context), (p.name, c)
            assert not row.iloc[4 + i].endswith("*")
    caption = next(c.value for c in at.caption if "published context" in c.value)
    assert "GPT-2 small 1,024" in caption and "Llama-3-8B 8,192" in caption and "SmolLM2-135M 8,192" in caption


@pytest.mark.parametrize(("name", "value"), [("window", 0), ("n", 10**9), ("sinks", -1), ("layers", "many"),
                                               ("table_window", 0), ("window", 99)])
def test_bad_and_tampered_values_get_a_message(name, value):
    at = at_with(**{name: value})
    assert not at.exception
    assert any("is not a whole number from" in e.value for e in at.error), [e.value for e in at.error]
    assert heat(at, KEYS.mask).shape[0] >= 2


def test_korean():
    at = page(PAGE, query={"lang": "ko"})
    no_errors(at)
    assert "슬라이딩 윈도우" in texts(at)


def test_the_new_pages_dynamic_string_keys_exist_in_both_languages():
    from ui.i18n import table

    keys = [f"lp.kind.{k}" for k in ("sinusoidal", "learned", "rope", "alibi")] + ["lp.pairing.adjacent", "lp.pairing.half"]
    keys += [f"lp.perm.{k}" for k in ("sinusoidal", "learned", "rope", "alibi")] + ["lp.added.sinusoidal", "lp.added.learned"]
    keys += [f"kvs.kind.{k}" for k in ("mha", "gqa", "mqa")] + [f"kvs.dtype.{k}" for k in ("bf16", "fp32", "int8")]
    keys += [f"lc.{k}" for k in ("n", "window", "sinks", "layers", "table_window", "table_sinks")]
    keys += [f"ta.{k}" for k in ("n", "block_q", "block_k")] + ["kv.cache.keys", "kv.cache.values", "kv.full.differ"]
    for lang in ("en", "ko"):
        assert [k for k in keys if k not in table(lang)] == [], lang


def _run(**values):
    at = page(PAGE, run=False)
    for name, value in values.items():
        at.session_state[getattr(KEYS, name)] = value
    return at.run()


@pytest.mark.parametrize(("model", "n"), [("Gemma 3 27B", 32768), ("gpt-oss-120b", 4096), ("Llama 4 Scout", 100_000),
                                        ("Gemma 2 2B", 8192)])
def test_a_published_schedules_reach_and_cache_are_cores(model, n):
    """The layer counts, the reach and the cache sentence equal core.schedule_reach; the reach is checked again by a
    walk written here over the layers' first visible key (window: i − w + 1; chunk: the chunk's start; global: 0)."""
    at = _run(schedule=model, sched_n=n)
    no_errors(at)
    s = core.SCHEDULE_PRESETS[model]
    r = core.schedule_reach(s, n)
    said = texts(at)
    assert f"{model} has {len(s.layers)} layers" in said
    oldest, first_all = n - 1, None
    for depth in range(1, len(s.layers) + 1):
        a = n - 1
        for layer in reversed(s.layers[:depth]):
            if layer.kind != "global":
                a = max(0, a - layer.size + 1) if layer.kind == "window" else a // layer.size * layer.size
            else:
                a = 0
        oldest = a
        if a == 0 and first_all is None:
            first_all = depth
    assert r.all_reached_at == first_all and r.oldest[-1] == oldest
    assert (f"a stack of its first {first_all} layers" in said) if first_all else (f"token {oldest:,}" in said)
    assert f"**{r.cache_bytes / 2**30:,.2f} GiB**, against **{r.global_cache_bytes / 2**30:,.2f} GiB**" in said
    table = at.dataframe[1].value
    assert dict(zip(table.iloc[:, 0], table.iloc[:, 1], strict=True)) == s.counts


def test_paged_cache_block_tables_and_memory_by_hand():
    """Requests of 20, 9, 33 and 4 tokens in pages of 8: 3 + 2 + 5 + 1 pages; a token takes 2 · 8 · 128 · 2 bytes
    = 4 KiB in one layer; against 64 tokens reserved per request. The fork of request 0 shares its 2 full pages and
    copies the third on its first write."""
    at = _run(lengths="20, 9, 33, 4", page_size=8, max_len=64, fork=True)
    no_errors(at)
    table = at.dataframe[2].value
    pages = [len(str(row).split(" · ")) for row in table.iloc[:, 2]]
    assert list(table.iloc[:, 1]) == [20, 9, 33, 4, 22] and pages == [3, 2, 5, 1, 3]
    said = texts(at)
    kib = 4
    assert f"the pages hold **{(3 + 2 + 5 + 1 + 1) * 8 * kib:,} KiB**" in said  # the fork's copied page: one more
    assert f"takes **{5 * 64 * kib:,} KiB**, of which **{(5 * 64 - (20 + 9 + 33 + 4 + 22)) * kib:,} KiB**" in said
    assert "The fork shares 2 page(s) with request 0; 1 page(s) were copied on write." in said
    shared = table.iloc[:, 2].iloc[0].split(" · ")[:2]
    assert table.iloc[:, 2].iloc[4].split(" · ")[:2] == shared


@pytest.mark.parametrize(("name", "value", "message"), [
    ("page_size", 0, "The page size “0” cannot be used"),
    ("lengths", "a, b", "“a, b” cannot be read as requests' lengths"),
    ("lengths", "1 2 3 4 5 6 7 8 9", "cannot be read as requests' lengths"),
    ("lengths", "600", "cannot be read as requests' lengths"),
    ("schedule", "GPT-9", "The model “GPT-9” is not one of the schedules here"),
    ("sched_n", -5, "is not a whole number from 1 to 1,048,576"),
    ("max_len", 0, "is not a whole number from 1 to 4,096"),
])
def test_bad_paged_and_schedule_input_gets_a_message_and_the_page_goes_on(name, value, message):
    at = _run(**{name: value})
    assert not at.exception
    assert any(message in shown(e.value) for e in at.error)
    assert len(at.dataframe) == 3  # the memory table, the schedule and the block tables are still drawn


@pytest.mark.parametrize("typed", ["", "<b>3</b>, 4", "**7** [x](javascript:alert(1))", "nan", "9" * 400])
def test_typed_lengths_that_cannot_be_read_are_shown_as_typed_not_as_markup(typed):
    at = _run(lengths=typed)
    assert not at.exception
    errors = [e.value for e in at.error if "cannot be read as requests' lengths" in shown(e.value)]
    assert errors and f"“{typed[:60]}”" in shown(errors[0])  # shown as typed (up to 60 characters) ...
    assert "<b>" not in errors[0] and "](" not in errors[0] and "**7**" not in errors[0]  # ... and not as markup
    assert len(at.dataframe) == 3  # the example's block tables are drawn instead
