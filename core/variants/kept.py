r"""What a model keeps per sequence to write its next token, from its published shapes (issue 55's chart).

The model's layer schedule (:func:`core.variants.schedules.schedule_of` over :mod:`core.shapes`) counts each layer
(:meth:`core.variants.schedules.LayerKind.values`, the one place the counts live); here they are summed per kind.
Values for one sequence of t tokens (bytes = values × bytes per value)::

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
from core.variants.schedules import schedule_of


@dataclass(frozen=True)
class Kept:
    """What :func:`kept` counted: by_kind maps a layer kind (the registry's name, " (reused)" for a reused layer) to
    (layers, values in all of them); total values."""

    name: str
    tokens: int
    by_kind: dict[str, tuple[int, int]]
    total: int

    def bytes(self, bytes_per_value: float = 2) -> float:
        return self.total * bytes_per_value


def kept(p: Published, tokens: int) -> Kept:
    """The values ``p`` keeps for one sequence of ``tokens`` tokens, layer by layer through its schedule (module doc)."""
    t = int_at_least("tokens", tokens)
    schedule = schedule_of(p)
    by_kind: dict[str, tuple[int, int]] = {}
    for layer, values in zip(schedule.layers, schedule.values(t), strict=True):
        n, v = by_kind.get(layer.name, (0, 0))
        by_kind[layer.name] = (n + 1, v + values)
    return Kept(name=p.name, tokens=t, by_kind=by_kind, total=sum(v for _, v in by_kind.values()))
