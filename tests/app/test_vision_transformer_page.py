"""AppTest: the Vision Transformer page (patches, attention, uploads) against core."""

from __future__ import annotations

import re

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
    at = page(VIT, run=False)
    at.session_state[state.VISION_TRANSFORMER.weights] = "random"  # the trained ViT is the default when shipped
    at.run()
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
    at = page(VIT, run=False)
    at.session_state[state.VISION_TRANSFORMER.weights] = "random"
    at.run()
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

    with pytest.raises(ValueError, match=f"^{re.escape(key)}$"):  # the i18n key, shown in the learner's language
        _load(data)


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


# ------------------------------------------------------------------ the trained ViT (core.models.vit_trained)
VT = state.VISION_TRANSFORMER


@pytest.fixture
def shapes_model(monkeypatch, tmp_path):
    """The shipped checkpoint when it is there; otherwise a seeded untrained TinyViT saved as a stand-in
    (it checks the page's plumbing — the page must show what core computes — not the model's skill)."""
    from core.models import vit_trained
    from ui import compute

    path = vit_trained.CHECKPOINT
    if not path.is_file():
        path = vit_trained.save(vit_trained.TinyViT(vit_trained.ViTConfig(), seed=3), tmp_path / "vit_shapes.pt")
        monkeypatch.setattr(vit_trained, "CHECKPOINT", path)
    caches = (compute.vit_trained_model, compute.vit_trained_trace, compute.vit_trained_scores)
    for c in caches:
        c.clear()
    yield vit_trained.load(path)
    for c in caches:
        c.clear()


def _shapes():
    from core.models import vit_trained
    from ui import compute

    return vit_trained.make_shapes(6, compute.SHAPES_SEED)


def test_trained_vit_is_the_default_and_the_page_shows_cores_numbers(shapes_model):
    from core.models import vit_trained

    from .helpers import bars, texts

    at = page(VIT)
    no_errors(at)
    assert at.radio(key=VT.weights).value == "trained"
    data = _shapes()
    tr = vit_trained.trace(shapes_model, data.images[0])  # the first generated image is the default
    close(bars(at, VT.probs)[0], tr.probs.numpy(), tol=6e-4)  # the probabilities, 3 decimals shown
    label = ("circle", "square", "triangle")[tr.pred]
    assert f"The trained ViT says: **{label}** ({tr.probs[tr.pred]:.1%})." in texts(at)
    truth = ("circle", "square", "triangle")[int(data.labels[0])]
    assert any(f"the image shows a {truth}." in m.value for m in [*at.success, *at.warning])
    close(heat(at, VT.grid), tr.cls_map(-1).numpy(), tol=6e-4)  # class token, last layer, heads averaged
    assert heat(at, VT.grid).shape == shapes_model.cfg.grid
    acc = vit_trained.accuracy(shapes_model, n=300)
    assert f"**{acc:.1%}**" in texts(at)
    if shapes_model.meta.get("steps"):  # the shipped checkpoint (the stand-in has no training record)
        assert acc > 0.8
    # a clicked patch, then the first layer
    at.session_state[VT.clicks] = [(VT.grid, (2, 3))]
    at.run()
    cols = shapes_model.cfg.grid[1]
    close(heat(at, VT.grid), tr.patch_map(2 * cols + 3).numpy(), tol=6e-4)
    at.select_slider(key=VT.layer).set_value(0).run()
    close(heat(at, VT.grid), tr.patch_map(2 * cols + 3, layer=0).numpy(), tol=6e-4)
    at.button(key=VT.use_cls).click().run()
    close(heat(at, VT.grid), tr.cls_map(0).numpy(), tol=6e-4)
    # another generated image
    at.radio(key=VT.gen_choice).set_value(4).run()
    no_errors(at)
    close(bars(at, VT.probs)[0], vit_trained.trace(shapes_model, data.images[4]).probs.numpy(), tol=6e-4)


def test_trained_vit_classifies_an_upload_and_switches_to_random(shapes_model):
    from core.models import vit_trained

    from .helpers import bars, texts

    at = page(VIT, run=False)
    at.session_state[state.setting("lang")] = "ko"
    at.session_state[VT.image] = _img("face")  # what a validated upload leaves (ui.images.load)
    at.session_state[VT.gen_choice] = "upload"
    at.run()
    no_errors(at)
    tr = vit_trained.trace(shapes_model, _img("face"))
    close(bars(at, VT.probs)[0], tr.probs.numpy(), tol=6e-4)
    close(heat(at, VT.grid), tr.cls_map(-1).numpy(), tol=6e-4)
    from ui.i18n import table

    assert table("ko")["vt.trained.upload_note"] in texts(at)
    at.radio(key=VT.weights).set_value("random").run()
    no_errors(at)
    assert table("ko")["vt.random"] in [w.value for w in at.warning]
    ref = vit.vit_attention(_img("house"), 16, d_model=16, seed=0, cls=True)
    close(heat(at, VT.grid), ref.attention_map(0).numpy(), tol=6e-4)  # random mode: as before, its own sample


def test_without_the_checkpoint_the_page_uses_random_weights(monkeypatch, tmp_path):
    from core.models import vit_trained
    from ui.i18n import table

    monkeypatch.setattr(vit_trained, "CHECKPOINT", tmp_path / "missing.pt")
    at = page(VIT)
    no_errors(at)
    assert table("en")["vt.trained.missing"] in [c.value for c in at.caption]
    assert at.radio(key=VT.choice).value == "house" and not [r for r in at.radio if r.key == VT.weights]
    tr = vit.vit_attention(_img(), 16, d_model=16, seed=0, cls=True)
    close(heat(at, VT.grid), tr.attention_map(0).numpy(), tol=6e-4)
