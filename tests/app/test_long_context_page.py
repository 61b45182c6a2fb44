"""AppTest: the long-context page (sliding window with sinks, reach over layers, cache memory) against core
and against the rule written out here."""

from __future__ import annotations

import numpy as np
import pytest

import core
from ui import state

from .helpers import heat, no_errors, page, texts

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
