"""AppTest: the Vision Transformer page (patches, attention, uploads) against core."""

from __future__ import annotations

import pytest

from core import tokens, vit
from ui import state

from .helpers import close, heat, no_errors, page, spec

S2S, BLOCK, VIT = "app_pages/seq2seq.py", "app_pages/transformer_block.py", "app_pages/vision_transformer.py"
C18 = list(tokens.C18_TOKENS)


def _img(name="house"):
    from ui.images import IMAGES
    from ui.images import load as _load

    return _load((IMAGES / f"{name}.png").read_bytes())


def test_vit_patches_and_class_token_attention():
    at = page(VIT)
    no_errors(at)
    tr = vit.vit_attention(_img(), 16, d_model=16, seed=0, cls=True)
    close(heat(at, state.VISION_TRANSFORMER.grid), tr.attention_map(0).numpy(), tol=6e-4)
    assert "N = " in "".join(str(l.value) for l in at.latex) and "= 36" in "".join(str(l.value) for l in at.latex)
    at.session_state[state.VISION_TRANSFORMER.clicks] = [(state.VISION_TRANSFORMER.grid, (2, 3))]
    at.run()
    no_errors(at)
    close(heat(at, state.VISION_TRANSFORMER.grid), tr.attention_map(1 + 2 * 6 + 3).numpy(), tol=6e-4)
    assert spec(at, state.VISION_TRANSFORMER.grid)["mark"] == [2, 3]


@pytest.mark.parametrize("P", [8, 12, 24])
def test_vit_patch_sizes_and_pooling(P):
    at = page(VIT)
    at.select_slider(key=state.VISION_TRANSFORMER.P).set_value(P).run()
    at.toggle(key=state.VISION_TRANSFORMER.cls).set_value(False).run()
    no_errors(at)
    tr = vit.vit_attention(_img(), P, d_model=16, seed=0, cls=False)
    assert heat(at, state.VISION_TRANSFORMER.grid).shape == (96 // P, 96 // P)
    close(heat(at, state.VISION_TRANSFORMER.grid), tr.attention_map(0).numpy(), tol=6e-4)
    assert at.select_slider(key=state.VISION_TRANSFORMER.P).options == [str(p) for p in vit.patch_sizes(96, 96) if 4 <= p <= 32]


@pytest.mark.parametrize("data, key", [(b"not an image", "vt.err.broken"), (b"GIF89a" + b"\x00" * 40, "vt.err.broken"),
                                       (b"\x89PNG" + b"\x00" * (1024 * 1024 + 1), "vt.err.size")])
def test_vit_refuses_bad_files(data, key):
    from ui.images import load as _load

    with pytest.raises(ValueError) as err:
        _load(data)
    assert str(err.value) == key


def test_vit_accepts_a_jpeg_and_refuses_a_gif():
    import io

    from PIL import Image

    from ui.images import load as _load

    buf = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buf, format="JPEG")
    arr = _load(buf.getvalue())
    assert arr.shape == (96, 96, 3) and arr[..., 0].mean() > 0.7
    gif = io.BytesIO()
    Image.new("RGB", (8, 8)).save(gif, format="GIF")
    with pytest.raises(ValueError, match="vt.err.format"):
        _load(gif.getvalue())
