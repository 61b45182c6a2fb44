"""AppTest for the seq2seq, Transformer-block and Vision-Transformer pages (issue 6)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core import block, seq2seq, tokens, vit

from .helpers import close, heat, no_errors, page, spec, texts

S2S, BLOCK, VIT = "pages/8_Seq2seq.py", "pages/9_Transformer_block.py", "pages/10_Vision_Transformer.py"
C18 = list(tokens.C18_TOKENS)


def test_seq2seq_trains_in_the_app_and_shows_cores_attention():
    at = page(S2S)
    no_errors(at)
    assert at.button(key="s2.train")  # nothing trained yet for this configuration
    at.radio(key="s2.task").set_value("reverse").run()
    at.radio(key="s2.att").set_value("dot").run()
    at.button(key="s2.train").click().run()
    no_errors(at)
    ref = seq2seq.train(seq2seq.Config(task="reverse", attention="dot"), seed=0)  # independent, same seed
    assert f"{100 * ref.accuracy:.1f}%" in texts(at)
    words = at.text_input(key="s2.input").value.split()
    task = seq2seq.get_task("reverse")
    dec = seq2seq.greedy_decode(ref.params, ref.cfg, torch.tensor([task.src_ids(words)]), len(words))
    close(heat(at, "s2.map"), np.round(dec.attention_map[0].numpy(), 2), tol=0.006)
    assert spec(at, "s2.map")["ys"][0].split(" ", 1)[1] == task.tgt_words(dec.predictions[0].tolist())[0]
    # a bad input is refused; the model is not run
    at.text_input(key="s2.input").input("a b <script>").run()
    assert not at.exception and any("<script>" not in e.value and "not:" in e.value for e in at.error)


def test_block_post_and_pre_norm_equal_core():
    at = page(BLOCK)
    no_errors(at)
    X = tokens.embed(C18, 8, seed=0)
    W = {n: tokens.projection(8, 8, seed=0, name=f"tb.{n}") for n in ("W_q", "W_k", "W_v", "W_o")}
    W |= {"W_1": tokens.projection(8, 32, seed=0, name="tb.W_1"), "W_2": tokens.projection(32, 8, seed=0, name="tb.W_2"),
          "b_1": torch.zeros(32), "b_2": torch.zeros(8)}
    for norm in ("post", "pre"):
        tr = block.transformer_block(X, n_heads=2, norm=norm, **W)
        close(heat(at, f"tb.{norm}.y"), np.round(tr.y.numpy(), 2), tol=0.006)
        close(heat(at, f"tb.{norm}.attn"), np.round(tr.attn.numpy(), 2), tol=0.006)
    assert "(C31)" in texts(at) and all("= 0" in c.value for c in at.caption if "FFN(P·Z)" in c.value)
    at.radio(key="tb.act").set_value("gelu").run()
    tr = block.transformer_block(X, n_heads=2, norm="pre", activation="gelu", **W)
    close(heat(at, "tb.pre.y"), np.round(tr.y.numpy(), 2), tol=0.006)


def test_block_complexity_is_measured_on_request():
    at = page(BLOCK)
    assert not any(el.proto.id.endswith("-tb.time") for el in at.get("plotly_chart"))
    at.button(key="tb.measure").click().run()
    no_errors(at)
    assert any(el.proto.id.endswith("-tb.mem") for el in at.get("plotly_chart"))


def _img(name="house"):
    from ui.vit_page import IMAGES, _load

    return _load((IMAGES / f"{name}.png").read_bytes())


def test_vit_patches_and_class_token_attention():
    at = page(VIT)
    no_errors(at)
    tr = vit.vit_attention(_img(), 16, d_model=16, seed=0, cls=True)
    close(heat(at, "vt.grid"), tr.attention_map(0).numpy(), tol=6e-4)
    assert "N = " in "".join(str(l.value) for l in at.latex) and "= 36" in "".join(str(l.value) for l in at.latex)
    at.session_state["vt.clicks"] = [("vt.grid", (2, 3))]
    at.run()
    no_errors(at)
    close(heat(at, "vt.grid"), tr.attention_map(1 + 2 * 6 + 3).numpy(), tol=6e-4)
    assert spec(at, "vt.grid")["mark"] == [2, 3]


@pytest.mark.parametrize("P", [8, 12, 24])
def test_vit_patch_sizes_and_pooling(P):
    at = page(VIT)
    at.select_slider(key="vt.P").set_value(P).run()
    at.toggle(key="vt.cls").set_value(False).run()
    no_errors(at)
    tr = vit.vit_attention(_img(), P, d_model=16, seed=0, cls=False)
    assert heat(at, "vt.grid").shape == (96 // P, 96 // P)
    close(heat(at, "vt.grid"), tr.attention_map(0).numpy(), tol=6e-4)
    assert at.select_slider(key="vt.P").options == [str(p) for p in vit.patch_sizes(96, 96) if 4 <= p <= 32]


@pytest.mark.parametrize("data, key", [(b"not an image", "vt.err.broken"), (b"GIF89a" + b"\x00" * 40, "vt.err.broken"),
                                       (b"\x89PNG" + b"\x00" * (1024 * 1024 + 1), "vt.err.size")])
def test_vit_refuses_bad_files(data, key):
    from ui.vit_page import _load

    with pytest.raises(ValueError) as err:
        _load(data)
    assert str(err.value) == key


def test_vit_accepts_a_jpeg_and_refuses_a_gif():
    import io

    from PIL import Image

    from ui.vit_page import _load

    buf = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buf, format="JPEG")
    arr = _load(buf.getvalue())
    assert arr.shape == (96, 96, 3) and arr[..., 0].mean() > 0.7
    gif = io.BytesIO()
    Image.new("RGB", (8, 8)).save(gif, format="GIF")
    with pytest.raises(ValueError, match="vt.err.format"):
        _load(gif.getvalue())


@pytest.mark.parametrize("path, title", [(S2S, "어텐션을 쓰는 seq2seq"), (BLOCK, "트랜스포머 블록"), (VIT, "비전 트랜스포머")])
def test_issue6_pages_in_korean(path, title):
    at = page(path)
    at.radio(key="_w.settings.lang").set_value("ko").run()
    no_errors(at)
    assert at.title[0].value.endswith(title)


@pytest.mark.parametrize("path", [BLOCK])
@pytest.mark.parametrize("text", ["", "<b>x</b> y", " ".join(["w"] * 600)])
def test_block_page_handles_bad_tokens(path, text):
    at = page(path)
    at.text_input(key="pg.tokens").input(text).run()
    assert not at.exception and not any("Something went wrong" in e.value for e in at.error)
