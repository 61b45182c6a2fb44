"""Mamba-2 as gated linear attention (core.variants.mamba2, issue 55) against transformers' BambaMixer (and
NemotronHMamba2Mixer) from tiny random configs with the same weights; the scan is core's gated linear attention
(q = C, k = B, v = x); negative controls; prefill then steps equal the whole pass."""

from __future__ import annotations

import pytest
import torch

import core
from core.variants.mamba2 import mamba2

D, H, P, STATE, G, KAPPA = 16, 4, 4, 6, 2, 4  # STATE: the state size the papers call N
I = H * P  # noqa: E741 (the inner width, as the papers name it)


def _init(ref, seed: int):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        ref.A_log.copy_(torch.rand(H, generator=g).log())
        ref.norm.weight.add_(1.0)
    return ref.eval()


def _bamba(seed: int = 0):
    transformers = pytest.importorskip("transformers")
    from transformers.models.bamba.modeling_bamba import BambaMixer

    cfg = transformers.BambaConfig(hidden_size=D, mamba_n_heads=H, mamba_d_head=P, mamba_d_state=STATE, mamba_n_groups=G,
                                   mamba_d_conv=KAPPA, mamba_expand=1, num_hidden_layers=2, num_attention_heads=2,
                                   num_key_value_heads=1, intermediate_size=16, vocab_size=16, attn_layer_indices=[1])
    return _init(BambaMixer(cfg, 0), seed)


def _weights(ref) -> dict:
    W = ref.in_proj.weight.detach().T  # (d_model, I + C + H): z, then x | B | C, then Δ
    W_z, W_xBC, W_dt = W.split([I, I + 2 * G * STATE, H], dim=-1)
    return dict(W_z=W_z, W_xBC=W_xBC, W_dt=W_dt, conv_taps=ref.conv1d.weight.detach()[:, 0, :],
                conv_bias=None if ref.conv1d.bias is None else ref.conv1d.bias.detach(), dt_bias=ref.dt_bias.detach(),
                A_log=ref.A_log.detach(), D=ref.D.detach(), norm_weight=ref.norm.weight.detach(),
                W_out=ref.out_proj.weight.detach().T, n_heads=H, n_groups=G, norm_eps=ref.norm.variance_epsilon)


def _x(n: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(2, n, D, generator=torch.Generator().manual_seed(seed))


def _rel(a, b) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("n", [1, 6, 11])
def test_equals_bamba_mixer(n):
    ref = _bamba()
    x = _x(n)
    with torch.no_grad():
        want = ref(x)
    assert _rel(mamba2(x, **_weights(ref)).output, want) < 1e-4


def test_equals_nemotron_h_mamba2_mixer():
    transformers = pytest.importorskip("transformers")
    from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHMamba2Mixer

    cfg = transformers.NemotronHConfig(hidden_size=D, mamba_num_heads=H, mamba_head_dim=P, ssm_state_size=STATE,
                                       n_groups=G, conv_kernel=KAPPA, num_hidden_layers=2, vocab_size=16,
                                       num_attention_heads=2, num_key_value_heads=1, intermediate_size=16,
                                       expand=1)
    ref = _init(NemotronHMamba2Mixer(cfg, 0), seed=4)
    x = _x(7, seed=5)
    with torch.no_grad():
        want = ref(x)
    w = _weights(ref) | {"norm_eps": ref.norm.variance_epsilon}
    assert _rel(mamba2(x, **w).output, want) < 1e-4


def test_the_scan_is_core_gated_linear_attention_with_q_c_k_b_v_x():
    """The lesson: the state-space scan is gated linear attention; written as attention over the keys B with the
    queries C and a causal decay matrix, its output is the same."""
    ref = _bamba(seed=2)
    tr = mamba2(_x(5, seed=3).double(), **{k: (v.double() if torch.is_tensor(v) else v) for k, v in _weights(ref).items()})
    s = tr.scan
    cum = torch.log(s.decay).cumsum(-1)  # (B, H, n): Σ log α up to t
    L = torch.exp(cum[..., :, None] - cum[..., None, :]).tril()  # (B, H, n, n): the decay from token s to t
    scores = (s.q @ s.k.transpose(-1, -2)) * L * s.beta[..., None, :]  # (B, H, n, n): C_t·B_s · decay · Δ_s
    torch.testing.assert_close(scores @ s.v, s.output, atol=1e-12, rtol=0)
    assert not s.delta and s.scale == 1.0


@pytest.mark.parametrize("mistake", ["no skip", "decay off by one group", "gate after the norm"])
def test_negative_controls_fail(mistake):
    ref = _bamba(seed=6)
    x = _x(6, seed=7)
    with torch.no_grad():
        want = ref(x)
    w = _weights(ref)
    if mistake == "no skip":
        w["D"] = torch.zeros_like(w["D"])
    elif mistake == "decay off by one group":
        w["A_log"] = w["A_log"].roll(1)
    else:
        out = mamba2(x, **w)
        y = core.rms_norm(out.y.transpose(1, 2).reshape(2, 6, G, I // G), eps=w["norm_eps"]).reshape(2, 6, I)
        wrong = (y * w["norm_weight"] * torch.nn.functional.silu(x @ w["W_z"])) @ w["W_out"]
        assert _rel(wrong, want) > 1e-3
        return
    assert _rel(mamba2(x, **w).output, want) > 1e-3


def test_prefill_then_steps_equal_the_whole_pass():
    ref = _bamba(seed=8)
    w = {k: (v.double() if torch.is_tensor(v) else v) for k, v in _weights(ref).items()}
    x = _x(7, seed=9).double()
    whole = mamba2(x, **w)
    step = mamba2(x[:, :3], **w)
    outs = [step.output]
    for i in range(3, 7):
        step = mamba2(x[:, i:i + 1], step.cache, **w)
        outs.append(step.output)
    torch.testing.assert_close(torch.cat(outs, dim=-2), whole.output, atol=1e-12, rtol=0)
    assert step.cache.state.shape == (2, H, STATE, P)  # N × P a head, whatever the length


def test_bad_input_is_refused():
    w = _weights(_bamba())
    with pytest.raises(ValueError, match="must divide"):
        mamba2(_x(3), **(w | {"n_groups": 3}))
    with pytest.raises(ValueError, match="D has shape"):
        mamba2(_x(3), **(w | {"D": w["D"][:2]}))
    with pytest.raises(ValueError, match="x must be"):
        mamba2(torch.zeros(2, 0, D), **w)
