r"""What a model keeps per sequence to write its next token, from its published shapes (issue 55's chart).

Counted per layer from :mod:`core.shapes` (values, one sequence; bytes = values × bytes per value)::

    global / global-nope   2·G·d · t                          keys and values of every token (MHA: G = H; GQA: G < H)
    window (w)             2·G·d · min(t, w)                  the last w tokens
    chunk (c)              2·G·d · ((t − 1) mod c + 1)         the current chunk
    mla                    (d_c + d_R) · t                     the latent and the shared rotary key
    csa (m), hca (m')      d · min(t, w) + d · ⌊t/m⌋ (+ d_I · ⌊t/m⌋ for CSA's indexer keys)     one K = V head
    linear (GDN, KDA)      H_v·d_k·d_v + (κ − 1)·(2·H_k·d_k + H_v·d_v)     the states and the conv's last inputs
    mamba                  H·N·P + (κ − 1)·(H·P + 2·G·N)                      the same, Mamba-2's names
    a reused layer         0                                    Gemma 4's last layers read an earlier layer's K and V

The fixed parts (states, windows) do not grow with t; the rest grows by the same amount every token.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.checks import int_at_least
from core.shapes import Published


@dataclass(frozen=True)
class Kept:
    """What :func:`kept` counted: by_kind maps a layer kind to (layers, values in all of them); total values."""

    name: str
    tokens: int
    by_kind: dict[str, tuple[int, int]]
    total: int

    def bytes(self, bytes_per_value: float = 2) -> float:
        return self.total * bytes_per_value


def _layer_values(p: Published, kind: str, t: int) -> int:
    G, d = p.n_kv_heads, p.d_head
    if kind in ("global", "global-nope"):
        G, d = (p.global_kv_heads or G), (p.global_d_head or d)
        return 2 * G * d * t
    if kind == "window":
        return 2 * G * d * min(t, p.window)
    if kind == "chunk":
        return 2 * G * d * ((t - 1) % p.chunk + 1)
    if kind == "mla":
        return (p.kv_rank + p.rope_dim) * t
    if kind in ("csa", "hca"):
        m = p.csa_rate if kind == "csa" else p.hca_rate
        entries = t // m
        return d * min(t, p.window) + d * entries + (p.index_head_dim * entries if kind == "csa" else 0)
    if kind == "linear":
        Hv, Hk, dk, dv = p.linear_value_heads, p.linear_key_heads, p.linear_key_dim, p.linear_value_dim
        return Hv * dk * dv + (p.conv_kernel - 1) * (2 * Hk * dk + Hv * dv)
    if kind == "mamba":
        H, G_, N, P = p.linear_value_heads, p.linear_key_heads, p.linear_key_dim, p.linear_value_dim
        return H * N * P + (p.conv_kernel - 1) * (H * P + 2 * G_ * N)
    raise ValueError(f"{p.name}: no count for a layer of kind {kind!r}")


def kept(p: Published, tokens: int) -> Kept:
    """The values ``p`` keeps for one sequence of ``tokens`` tokens, layer by layer (module doc)."""
    t = int_at_least("tokens", tokens)
    # without a published pattern every layer is alike: MLA, a window (Mistral), or global attention
    pattern = p.layer_pattern or (("mla",) if p.kv_rank else ("window",) if p.window else ("global",))
    shared_from = p.layers - (p.kv_shared_layers or 0)  # layers from here on reuse an earlier layer's K and V
    by_kind: dict[str, tuple[int, int]] = {}
    for layer in range(p.layers):
        kind = pattern[layer % len(pattern)]
        label, values = (f"{kind} (reused)", 0) if layer >= shared_from else (kind, _layer_values(p, kind, t))
        n, v = by_kind.get(label, (0, 0))
        by_kind[label] = (n + 1, v + values)
    return Kept(name=p.name, tokens=t, by_kind=by_kind, total=sum(v for _, v in by_kind.values()))
