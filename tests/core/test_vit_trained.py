"""The trained ViT of the Vision Transformer page (core/models/vit_trained.py, scripts/train_vit.py).

The generator is checked against geometry computed here from the masks, the attention against a
forward pass written here from the formulas (plain torch.nn.functional, with PyTorch's own
scaled_dot_product_attention as a second opinion), and the shipped checkpoint on fresh images."""

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.models import vit_trained as vt

ROOT = Path(__file__).resolve().parents[2]
FRESH = 777  # a seed the training never used (its pool comes from seed + 1 = 1)


@pytest.fixture(scope="module")
def model():
    assert vt.CHECKPOINT.is_file(), "run scripts/train_vit.py to create the checkpoint"
    return vt.load()


def _script():
    spec = importlib.util.spec_from_file_location("train_vit", ROOT / "scripts" / "train_vit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- (e) the generator
def test_generator_is_deterministic_and_seeded():
    a, b, c = vt.make_shapes(10, 5), vt.make_shapes(10, 5), vt.make_shapes(10, 6)
    for name in ("images", "labels", "masks", "boxes"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert not torch.equal(a.images, c.images)
    assert a.images.shape == (10, 96, 96, 3) and a.images.dtype == torch.float32
    assert 0.0 <= float(a.images.min()) and float(a.images.max()) <= 1.0
    g = torch.Generator().manual_seed(5)  # a shared generator moves on: two calls, two different batches
    assert not torch.equal(vt.make_shapes(4, generator=g).images, vt.make_shapes(4, generator=g).images)
    state = torch.random.get_rng_state()
    vt.make_shapes(3, 1)
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is never touched
    forced = vt.make_shapes(6, 9, labels=[2, 1, 0, 0, 1, 2])
    assert forced.labels.tolist() == [2, 1, 0, 0, 1, 2]
    with pytest.raises(ValueError, match=re.escape("labels must be 2 class indices in 0..2")):
        vt.make_shapes(2, 0, labels=[0, 3])


def _reach_ratio(mask: torch.Tensor) -> float:
    """Farthest shape pixel from the centroid / √area, whatever the size and rotation: r/√(πr²) = 1/√π ≈ 0.56
    for a disc, (a/√2)/a ≈ 0.71 for a square of side a, R/√((3√3/4)R²) ≈ 0.88 for an equilateral triangle."""
    rc = mask.nonzero().double() + 0.5  # (area, 2) pixel centres
    return float((rc - rc.mean(0)).norm(dim=1).max() / math.sqrt(rc.shape[0]))


def test_labels_match_the_drawn_shape_and_the_shape_stands_out():
    data = vt.make_shapes(60, 11)
    expected = {0: (0.50, 0.62), 1: (0.64, 0.77), 2: (0.79, 0.95)}
    for i in range(len(data)):
        m, label = data.masks[i], int(data.labels[i])
        lo, hi = expected[label]
        assert lo < _reach_ratio(m) < hi, (i, vt.CLASSES[label], _reach_ratio(m))
        r0, c0, r1, c1 = data.boxes[i].tolist()  # the box is the mask's tight bounding box
        assert m[r0:r1, c0:c1].sum() == m.sum() and m[r0].any() and m[r1 - 1].any() and m[:, c0].any() and m[:, c1 - 1].any()
        img = data.images[i]
        inside = img[m]  # (area, 3): one colour plus a little pixel noise
        assert float(inside.std(0).max()) < 0.05
        ring = F.max_pool2d(m[None, None].float(), 7, stride=1, padding=3)[0, 0].bool() & ~m  # 3 px around it
        assert float(inside.mean()) - float(img[ring].mean()) > 0.25  # the shape is brighter than its surroundings
    assert set(data.labels.tolist()) == {0, 1, 2}


def test_patch_masks_mark_the_patches_that_touch_the_shape():
    data = vt.make_shapes(5, 3)
    pm = data.patch_masks(16)
    assert pm.shape == (5, 6, 6)
    for i in range(5):
        for r in range(6):
            for c in range(6):
                assert bool(pm[i, r, c]) == bool(data.masks[i, 16 * r:16 * r + 16, 16 * c:16 * c + 16].any())


# ---------------------------------------------------------------- (a) training
def test_short_training_is_deterministic_and_learns_its_batch():
    kw = dict(steps=12, batch=16, pool=16, lr=3e-3)  # one small batch, seen again and again (turned)
    a, b = vt.train(seed=3, **kw), vt.train(seed=3, **kw)
    assert a.losses == b.losses and len(a.losses) == 12
    assert all(math.isfinite(x) for x in a.losses)
    sa, sb = a.model.state_dict(), b.model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert sum(a.losses[-3:]) < sum(a.losses[:3])
    assert vt.train(seed=4, **kw).losses != a.losses
    threads = torch.get_num_threads()
    vt.train(seed=3, steps=1, batch=4, pool=4)
    assert torch.get_num_threads() == threads  # the thread setting is restored


def test_script_writes_the_same_checkpoint_twice(tmp_path, capsys):
    script = _script()
    args = ["--steps", "3", "--pool", "32", "--batch", "16", "--eval", "30"]
    r1 = script.main(args + ["--out", str(tmp_path / "a.pt")])
    r2 = script.main(args + ["--out", str(tmp_path / "b.pt")])
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes()
    assert r1["accuracy"] == r2["accuracy"] and "accuracy on 30 fresh images" in capsys.readouterr().out
    m = vt.load(tmp_path / "a.pt")
    assert m.meta["steps"] == 3 and not m.training
    assert vt.CHECKPOINT == ROOT / "assets" / "checkpoints" / "vit_shapes.pt"  # where the script writes by default


# ---------------------------------------------------------------- (b) the shipped checkpoint
def test_shipped_checkpoint_is_small_and_classifies_fresh_images(model):
    assert vt.CHECKPOINT.stat().st_size < 1024 * 1024
    cfg = model.cfg
    assert cfg.image == 96 and 96 % cfg.patch == 0 and 4 <= cfg.patch <= 32 and 1 <= cfg.n_layers <= 2
    data = vt.make_shapes(150, FRESH)
    preds, _ = vt.predict(model, data.images)  # batched; the page's one-image trace must agree
    assert [vt.trace(model, img).pred for img in data.images[:8]] == preds[:8].tolist()
    acc = float((preds == data.labels).float().mean())
    assert acc >= 0.8, acc  # chance is 1/3
    for c in range(3):  # every class is recognised, not just the majority
        assert float((preds[data.labels == c] == c).float().mean()) >= 0.6


def test_trace_takes_the_page_image_format(model):
    img = vt.make_shapes(1, 5).images[0]
    tr_np = vt.trace(model, img.numpy().astype(np.float32))
    tr_t = vt.trace(model, img)
    assert torch.equal(tr_np.logits, tr_t.logits)
    assert tr_t.label == vt.CLASSES[tr_t.pred] and tr_t.pred == int(tr_t.probs.argmax())
    torch.testing.assert_close(tr_t.probs.sum(), torch.tensor(1.0))
    with pytest.raises(ValueError, match="96, 96, 3"):
        vt.trace(model, torch.zeros(64, 64, 3))


# ---------------------------------------------------------------- (c) the attention maps, recomputed
def _reference(sd: dict, cfg, img: torch.Tensor):
    """The model's forward pass written out from the formulas; returns the attention weights
    (layers, H, 1+N, 1+N) and the logits (classes,)."""
    P, d, H = cfg.patch, cfg.d_model, cfg.n_heads
    g, dk = 96 // P, d // H
    x = img.reshape(g, P, g, P, 3).permute(0, 2, 1, 3, 4).reshape(g * g, P * P * 3)  # patches, row-major
    x = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
    x = F.layer_norm(x @ sd["W_E"] + sd["b_E"], (d,), sd["ln_E.weight"], sd["ln_E.bias"])
    z = torch.cat([sd["x_cls"][0], x]) + sd["E_pos"][0]  # (1+N, d)
    n, weights = z.shape[0], []
    for layer in range(cfg.n_layers):
        p = {k.split(".", 2)[2]: v for k, v in sd.items() if k.startswith(f"layers.{layer}.")}
        u = F.layer_norm(z, (d,), p["ln1.weight"], p["ln1.bias"])
        q, k, v = ((u @ p[f"W_{s}"] + p[f"b_{s}"]).reshape(n, H, dk).transpose(0, 1) for s in "qkv")  # (H, n, dk)
        A = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dk), dim=-1)  # (H, n, n)
        out = F.scaled_dot_product_attention(q[None], k[None], v[None])[0]  # (H, n, dk): PyTorch's own kernel
        torch.testing.assert_close(out, A @ v, atol=1e-5, rtol=1e-4)
        z = z + out.transpose(0, 1).reshape(n, d) @ p["W_o"] + p["b_o"]
        z = z + F.gelu(F.layer_norm(z, (d,), p["ln2.weight"], p["ln2.bias"]) @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"]
        weights.append(A)
    logits = F.layer_norm(z[0], (d,), sd["ln_f.weight"], sd["ln_f.bias"]) @ sd["W_head"] + sd["b_head"]
    return torch.stack(weights), logits


def test_attention_matches_an_independent_recomputation(model):
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    data = vt.make_shapes(3, 21)
    for img in data.images:
        tr = vt.trace(model, img)
        cfg = model.cfg
        n = 1 + cfg.n_patches
        assert tr.attn.shape == (cfg.n_layers, cfg.n_heads, n, n) and tr.grid == cfg.grid
        torch.testing.assert_close(tr.attn.sum(-1), torch.ones(cfg.n_layers, cfg.n_heads, n))
        A, logits = _reference(sd, cfg, img)
        torch.testing.assert_close(tr.attn, A, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(tr.logits, logits, atol=1e-4, rtol=1e-4)
        cls = tr.cls_map()
        assert cls.shape == cfg.grid
        torch.testing.assert_close(cls.reshape(-1), A[-1, :, 0, 1:].mean(0))  # the class token's row, heads averaged
        torch.testing.assert_close(tr.patch_map(7).reshape(-1), A[-1, :, 8, 1:].mean(0))
        roll = tr.rollout()
        assert roll.shape == cfg.grid and float(roll.min()) >= 0 and float(roll.sum()) <= 1 + 1e-5


# ---------------------------------------------------------------- (d) where the class token looks
def test_class_token_attends_to_the_shape(model):
    data = vt.make_shapes(120, FRESH + 1)
    P, g = model.cfg.patch, model.cfg.grid[0]
    on_shape = data.masks.reshape(-1, g, P, g, P).any(4).any(2).float()  # (n, rows, cols): patch touches the shape
    _, maps = vt.predict(model, data.images)  # (n, rows, cols), batched
    for i in range(4):  # the same maps as the page's one-image trace
        torch.testing.assert_close(maps[i], vt.trace(model, data.images[i]).cls_map())
    shares, areas, top_hits = [], [], 0
    for w, on in zip(maps, on_shape, strict=True):
        shares.append(float((w * on).sum() / w.sum()))
        areas.append(float(on.mean()))  # the share a uniform look would put on the shape
        top_hits += bool(on.reshape(-1)[w.reshape(-1).argmax()])
    share, area = sum(shares) / len(shares), sum(areas) / len(areas)
    assert share > 1.5 * area, (share, area)
    assert sum(s > a for s, a in zip(shares, areas, strict=True)) >= 0.8 * len(shares)  # on most images, not only on average
    assert top_hits >= 0.7 * len(shares)  # the most attended patch is usually on the shape
