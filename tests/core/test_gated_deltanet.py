"""The whole Gated DeltaNet layer (core.variants.gated_deltanet, issue 55) against transformers' Qwen3NextGatedDeltaNet
built from a tiny random config with the same weights (its pure-torch kernels run in float32: bound 1e-4), with
negative controls; prefill then one token at a time equals the whole pass; bad input is refused."""

from __future__ import annotations

import pytest
import torch

from core.variants.gated_deltanet import DeltaNetCache, gated_deltanet

HK, HV, DK, DV, D, KAPPA = 2, 4, 8, 6, 32, 4


def _reference(seed: int = 0):
    transformers = pytest.importorskip("transformers")
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet

    cfg = transformers.Qwen3NextConfig(hidden_size=D, linear_num_value_heads=HV, linear_num_key_heads=HK,
                                       linear_key_head_dim=DK, linear_value_head_dim=DV, linear_conv_kernel_dim=KAPPA,
                                       num_hidden_layers=4, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                       intermediate_size=16, vocab_size=16)
    ref = Qwen3NextGatedDeltaNet(cfg, 0)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        ref.A_log.copy_(torch.rand(HV, generator=g).log())  # decay rates in (0, 1): A_log < 0
        ref.norm.weight.add_(1.0)
    return ref.eval()


def _weights(ref) -> dict:
    """The reference's weights in core's names (row convention): its projections interleave q, k, v, z per key head."""
    r = HV // HK
    W = ref.in_proj_qkvz.weight.detach().T.reshape(D, HK, 2 * DK + 2 * r * DV)  # (d_model, H_k, per group)
    q, k, v, z = W.split([DK, DK, r * DV, r * DV], dim=-1)
    ba = ref.in_proj_ba.weight.detach().T.reshape(D, HK, 2 * r)
    b, a = ba.split([r, r], dim=-1)

    def flat(m):  # (d_model, H_k, w) → (d_model, H_k·w), heads in order
        return m.reshape(D, -1)

    return dict(W_q=flat(q), W_k=flat(k), W_v=flat(v), W_z=flat(z), W_b=flat(b), W_a=flat(a),
                conv_taps=ref.conv1d.weight.detach()[:, 0, :], A_log=ref.A_log.detach(), dt_bias=ref.dt_bias.detach(),
                norm_weight=ref.norm.weight.detach(), W_out=ref.out_proj.weight.detach().T, n_key_heads=HK,
                n_value_heads=HV, norm_eps=ref.layer_norm_epsilon)


def _x(n: int, B: int = 2, seed: int = 1) -> torch.Tensor:
    return torch.randn(B, n, D, generator=torch.Generator().manual_seed(seed))


def _rel(a, b) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("n", [1, 5, 9])
def test_equals_qwen3_next_gated_deltanet(n):
    ref = _reference()
    x = _x(n)
    with torch.no_grad():
        want = ref(x)
    got = gated_deltanet(x, **_weights(ref))
    assert _rel(got.output, want) < 1e-4
    assert got.cache.state.shape == (2, HV, DK, DV) and got.cache.conv.shape == (2, KAPPA - 1, 2 * HK * DK + HV * DV)


def test_left_padding_equals_the_reference_with_its_mask():
    ref = _reference(seed=2)
    x = _x(6)
    real = torch.tensor([[False, False, True, True, True, True], [True] * 6])
    with torch.no_grad():
        want = ref(x, attention_mask=real)
    got = gated_deltanet(x, **_weights(ref), padding=real)
    assert _rel(got.output, want) < 1e-4
    with pytest.raises(ValueError, match="padding"):
        gated_deltanet(x, **_weights(ref), padding=real[:, :5])


@pytest.mark.parametrize("mistake", ["faster decay", "conv one step late", "key heads not shared in order",
                                     "output gate on the wrong heads"])
def test_negative_controls_fail_the_comparison(mistake):
    ref = _reference()
    x = _x(7)
    with torch.no_grad():
        want = ref(x)
    w = _weights(ref)
    if mistake == "faster decay":
        w["A_log"] = w["A_log"] + 1.5  # a faster decay: exp(A_log) larger
    elif mistake == "conv one step late":
        w["conv_taps"] = torch.cat([torch.zeros_like(w["conv_taps"][:, :1]), w["conv_taps"][:, :-1]], dim=-1)
    elif mistake == "key heads not shared in order":
        w["W_q"] = w["W_q"].reshape(D, HK, DK).flip(1).reshape(D, -1)
    elif mistake == "output gate on the wrong heads":
        w["W_z"] = w["W_z"].reshape(D, HV, DV).flip(1).reshape(D, -1)
    assert _rel(gated_deltanet(x, **w).output, want) > 1e-3


def test_prefill_then_steps_equal_the_whole_pass():
    ref = _reference(seed=3)
    w = {k: (v.double() if torch.is_tensor(v) else v) for k, v in _weights(ref).items()}
    x = _x(8, seed=4).double()
    whole = gated_deltanet(x, **w)
    step = gated_deltanet(x[:, :2], **w)  # a prompt shorter than the conv's reach
    outs = [step.output]
    for i in range(2, 8):
        step = gated_deltanet(x[:, i:i + 1], step.cache, **w)
        outs.append(step.output)
    torch.testing.assert_close(torch.cat(outs, dim=-2), whole.output, atol=1e-12, rtol=0)
    torch.testing.assert_close(step.cache.state, whole.cache.state, atol=1e-12, rtol=0)
    torch.testing.assert_close(step.cache.conv, whole.cache.conv, atol=0, rtol=0)
    assert step.cache.values == HV * DK * DV + (KAPPA - 1) * (2 * HK * DK + HV * DV)  # fixed, whatever the length


def test_negative_eigenvalues_widen_beta_to_two():
    ref = _reference(seed=5)
    w = _weights(ref)
    x = _x(4)
    one, two = gated_deltanet(x, **w), gated_deltanet(x, **w, beta_max=2.0)
    torch.testing.assert_close(two.beta, 2 * one.beta)
    assert float(two.beta.max()) > 1.0 >= float(one.beta.max())


def test_bad_input_is_refused():
    w = _weights(_reference())
    x = _x(3)
    with pytest.raises(ValueError, match="must divide"):
        gated_deltanet(x, **(w | {"n_key_heads": 3}))
    with pytest.raises(ValueError, match="beta_max must be 1 or 2"):
        gated_deltanet(x, **w, beta_max=3.0)
    with pytest.raises(ValueError, match="conv_taps"):
        gated_deltanet(x, **(w | {"conv_taps": w["conv_taps"][:5]}))
    with pytest.raises(ValueError, match="A_log has shape"):
        gated_deltanet(x, **(w | {"A_log": w["A_log"][:2]}))
    bad = DeltaNetCache(state=torch.zeros(2, HV, DK, DV + 1), conv=torch.zeros(2, KAPPA - 1, 2 * HK * DK + HV * DV))
    with pytest.raises(ValueError):
        gated_deltanet(x, bad, **w)


def test_equals_olmo_hybrid_with_negative_eigenvalues():
    """OLMo-Hybrid's layer: separate projections, its own output gate, β in (0, 2) (linear_allow_neg_eigval)."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.olmo_hybrid.modeling_olmo_hybrid import OlmoHybridGatedDeltaNet

    cfg = transformers.OlmoHybridConfig(hidden_size=D, linear_num_value_heads=HV, linear_num_key_heads=HK,
                                        linear_key_head_dim=DK, linear_value_head_dim=DV, linear_conv_kernel_dim=KAPPA,
                                        linear_allow_neg_eigval=True, num_hidden_layers=4, num_attention_heads=2,
                                        num_key_value_heads=1, intermediate_size=16, vocab_size=16)
    ref = OlmoHybridGatedDeltaNet(cfg, 0)
    g = torch.Generator().manual_seed(9)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        ref.A_log.copy_(torch.rand(HV, generator=g).log())
        ref.o_norm.weight.add_(1.0)
    x = _x(7)
    with torch.no_grad():
        want = ref.eval()(x)
    got = gated_deltanet(x, **_weights_from_olmo(ref), beta_max=2.0)
    assert _rel(got.output, want) < 1e-4
    assert float(got.beta.max()) > 1.0  # the negative-eigenvalue range is used
    one = gated_deltanet(x, **_weights_from_olmo(ref))
    assert _rel(one.output, want) > 1e-3  # negative control: β capped at 1 is another layer


def _weights_from_olmo(ref) -> dict:
    """OLMo-Hybrid's separate projections are core's names as they are (its g_proj is the output gate W_z)."""
    return dict(W_q=ref.q_proj.weight.T, W_k=ref.k_proj.weight.T, W_v=ref.v_proj.weight.T, W_z=ref.g_proj.weight.T,
                W_b=ref.b_proj.weight.T, W_a=ref.a_proj.weight.T, conv_taps=ref.conv1d.weight[:, 0, :], A_log=ref.A_log,
                dt_bias=ref.dt_bias, norm_weight=ref.o_norm.weight, W_out=ref.o_proj.weight.T, n_key_heads=HK,
                n_value_heads=HV, norm_eps=ref.o_norm.variance_epsilon)
