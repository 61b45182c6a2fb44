"""Kimi Delta Attention (core.variants.gated_deltanet.kimi_delta_attention, issue 55) against transformers'
KimiLinearDeltaAttention from a tiny random config with the same weights; its per-channel fade beside Gated
DeltaNet's per-head one; negative controls; prefill then steps equal the whole pass."""

from __future__ import annotations

import pytest
import torch

import core
from core.variants.gated_deltanet import kimi_delta_attention

D, H, HD, KAPPA = 24, 2, 6, 4


def _reference(seed: int = 0):
    transformers = pytest.importorskip("transformers")
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention

    cfg = transformers.KimiLinearConfig(hidden_size=D, linear_num_heads=H, linear_head_dim=HD,
                                        linear_conv_kernel_dim=KAPPA, num_hidden_layers=2, num_attention_heads=2,
                                        num_key_value_heads=1, intermediate_size=16, vocab_size=16, pad_token_id=0)
    ref = KimiLinearDeltaAttention(cfg, 0)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        ref.forget_gate.A_log.copy_(torch.rand(1, 1, H, 1, generator=g).log())
        ref.o_norm.weight.add_(1.0)
    return ref.eval()


def _weights(ref) -> dict:
    f = ref.forget_gate
    return dict(W_q=ref.q_proj.weight.T, W_k=ref.k_proj.weight.T, W_v=ref.v_proj.weight.T,
                conv_taps=ref.conv1d.weight[:, 0, :], W_fa=f.f_a_proj.weight.T, W_fb=f.f_b_proj.weight.T,
                dt_bias=f.dt_bias, A_log=f.A_log.reshape(H), W_b=ref.b_proj.weight.T, W_ga=ref.g_a_proj.weight.T,
                W_gb=ref.g_b_proj.weight.T, norm_weight=ref.o_norm.weight, W_out=ref.o_proj.weight.T, n_heads=H,
                norm_eps=ref.o_norm.variance_epsilon)


def _x(n: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(2, n, D, generator=torch.Generator().manual_seed(seed))


def _rel(a, b) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("n", [1, 5, 9])
def test_equals_kimi_linear_delta_attention(n):
    ref = _reference()
    x = _x(n)
    with torch.no_grad():
        want = ref(x)
        got = kimi_delta_attention(x, **_weights(ref))
    assert _rel(got.output, want) < 1e-4
    assert got.log_decay.shape == (2, H, n, HD)  # one rate per key channel


def test_each_key_channel_fades_at_its_own_rate():
    """GDN's decay scales the whole state; KDA's scales each row of it by its own channel's rate."""
    with torch.no_grad():
        tr = kimi_delta_attention(_x(4), **_weights(_reference(seed=2)))
    rates = tr.log_decay[0, 0, 1]  # (d,): token 1's fade of head 0's rows
    assert float(rates.max() - rates.min()) > 1e-3
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 1, 2, 3, generator=g, dtype=torch.float64) for _ in range(3))
    per_channel = torch.tensor([[[[-0.1, -2.0, -0.5], [-0.3, -0.3, -0.3]]]], dtype=torch.float64)
    beta = torch.ones(1, 1, 2, dtype=torch.float64) * 0.5
    one = core.gated_delta_rule(q, k, v, beta=beta, g=per_channel)
    S1 = one.states[0, 0, 0]
    S_before = S1 * torch.exp(per_channel[0, 0, 1])[:, None]  # row i of S faded by exp(g_i)
    pred = S_before.T @ k[0, 0, 1]
    assert torch.allclose(one.states[0, 0, 1], S_before + torch.outer(k[0, 0, 1], 0.5 * (v[0, 0, 1] - pred)))
    per_head = torch.tensor([[[-0.4, -0.7]]], dtype=torch.float64)  # (1, 1, n): one rate per token
    same_rates = per_head.unsqueeze(-1).expand(1, 1, 2, 3)  # every channel at its head's rate: Gated DeltaNet
    torch.testing.assert_close(core.gated_delta_rule(q, k, v, beta=beta, g=same_rates).states,
                               core.gated_delta_rule(q, k, v, beta=beta, g=per_head).states, atol=1e-15, rtol=0)
    with pytest.raises(ValueError, match="chunked form takes one log-decay per token"):
        core.gated_delta_rule_chunked(q, k, v, beta=beta, g=per_channel)


@pytest.mark.parametrize("mistake", ["one rate per head", "forget gate on the output", "conv one step late"])
def test_negative_controls_fail(mistake):
    ref = _reference(seed=4)
    x = _x(6, seed=5)
    with torch.no_grad():
        want = ref(x)
        w = _weights(ref)
        if mistake == "one rate per head":
            w["dt_bias"] = w["dt_bias"].reshape(H, HD).mean(-1, keepdim=True).expand(H, HD).reshape(-1)
            w["W_fb"] = w["W_fb"].reshape(-1, H, HD).mean(-1, keepdim=True).expand(-1, H, HD).reshape(HD, -1)
        elif mistake == "forget gate on the output":
            w["W_ga"], w["W_gb"] = w["W_fa"], w["W_fb"]
        else:
            w["conv_taps"] = torch.cat([torch.zeros_like(w["conv_taps"][:, :1]), w["conv_taps"][:, :-1]], dim=-1)
        assert _rel(kimi_delta_attention(x, **w).output, want) > 1e-3


def test_prefill_then_steps_equal_the_whole_pass():
    ref = _reference(seed=6)
    with torch.no_grad():
        w = {k: (v.double() if torch.is_tensor(v) else v) for k, v in _weights(ref).items()}
        x = _x(7, seed=7).double()
        whole = kimi_delta_attention(x, **w)
        step = kimi_delta_attention(x[:, :2], **w)
        outs = [step.output]
        for i in range(2, 7):
            step = kimi_delta_attention(x[:, i:i + 1], step.cache, **w)
            outs.append(step.output)
    torch.testing.assert_close(torch.cat(outs, dim=-2), whole.output, atol=1e-12, rtol=0)


def test_bad_input_is_refused():
    with torch.no_grad():
        w = _weights(_reference())
        with pytest.raises(ValueError, match="A_log has shape"):
            kimi_delta_attention(_x(3), **(w | {"A_log": w["A_log"][:1]}))
        with pytest.raises(ValueError, match="x must be"):
            kimi_delta_attention(torch.zeros(2, 0, D), **w)
