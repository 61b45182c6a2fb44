"""The ViT front end: patches, their order, and attention over them."""

import pytest
import torch

from core import vit


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("P", [2, 4, 8])
def test_patch_count_order_and_round_trip(P):
    img = rand(16, 24, 3, seed=1)
    patches = vit.patchify(img, P)
    assert patches.shape == ((16 // P) * (24 // P), P * P * 3)
    torch.testing.assert_close(patches[1], img[:P, P:2 * P].reshape(-1))  # patch (0, 1) is row 1
    torch.testing.assert_close(patches[24 // P], img[P:2 * P, :P].reshape(-1))  # patch (1, 0)
    torch.testing.assert_close(vit.unpatchify(patches, 16, 24, 3, P), img)


def test_vit_attention_shapes_and_class_token():
    img = rand(16, 16, 3, seed=2)
    tr = vit.vit_attention(img, 4, d_model=8, seed=0)
    assert tr.tokens.shape == (17, 8) and tr.attn.weights.shape == (17, 17) and tr.grid == (4, 4)
    assert tr.attention_map(0).shape == (4, 4)
    torch.testing.assert_close(tr.attention_map(0).sum() + tr.attn.weights[0, 0], torch.tensor(1.0, dtype=torch.float64))
    pooled = vit.vit_attention(img, 4, d_model=8, seed=0, cls=False)
    assert pooled.tokens.shape == (16, 8)
    assert vit.patch_sizes(96, 96)[:4] == [2, 3, 4, 6]
    with pytest.raises(ValueError, match="does not divide"):
        vit.patchify(img, 5)
