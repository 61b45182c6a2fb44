r"""A GRU encoder-decoder with and without attention (sources 002 and 004; C25–C27).

Everything is written as pure functions over an explicit parameter dict, so each formula
sits above the line that computes it. The encoder reads x_1 … x_N:

    h_i = GRU(E_src[x_i], h_{i−1})                                  (encoder states, B × N × h)

Without attention (C25) the decoder only ever sees the last state C = h_N:

    s_t = GRU([E_tgt[y_{t−1}] ; C], s_{t−1}),   logits_t = W_out [s_t ; C] + b_out

With attention (C26) it builds a new context for every step from s_{t−1}:

    e_{t,i} = f_att(s_{t−1}, h_i),   α_{t,·} = softmax_i(e_{t,·}),   c_t = Σ_i α_{t,i} h_i
    s_t = GRU([E_tgt[y_{t−1}] ; c_t], s_{t−1}),   logits_t = W_out [s_t ; c_t] + b_out

f_att is ``core.attention``'s additive score (Bahdanau) or dot score (Luong).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.mechanism.attention import attention

PAD, BOS = 0, 1
ATTENTIONS = ("none", "additive", "dot")
TASKS = ("copy", "reverse", "translate")

# ----------------------------------------------------------------------------- tasks
# a toy translation with a fixed mini vocabulary: colour adjectives swap places with their
# noun ("red car" → "voiture rouge") and "of the" merges into one word ("du")
_EN = ("the", "red", "blue", "big", "car", "house", "dog", "sees", "likes", "of")
_FR = {"the": "le", "red": "rouge", "blue": "bleu", "big": "grand", "car": "voiture", "house": "maison",
       "dog": "chien", "sees": "voit", "likes": "aime"}
_SYMBOLS = tuple("abcdefghijkl")


@dataclass(frozen=True)
class Task:
    """A synthetic task: source and target vocabularies (ids 0 = PAD, 1 = BOS are reserved)."""

    name: str
    src_vocab: tuple[str, ...]
    tgt_vocab: tuple[str, ...]

    def src_ids(self, words) -> list[int]:
        return [self.src_vocab.index(w) for w in words]

    def tgt_words(self, ids) -> list[str]:
        return [self.tgt_vocab[i] for i in ids]


def get_task(name: str) -> Task:
    if name in ("copy", "reverse"):
        vocab = ("<pad>", "<bos>") + _SYMBOLS
        return Task(name, vocab, vocab)
    if name == "translate":
        return Task(name, ("<pad>", "<bos>") + _EN, ("<pad>", "<bos>") + tuple(dict.fromkeys(_FR.values())) + ("du",))
    raise ValueError(f"unknown task '{name}'; choose one of {', '.join(TASKS)}")


def translate_words(words: list[str]) -> list[str]:
    """The toy translation rule (the reference answer): swap colour + noun, merge 'of the'."""
    out, i = [], 0
    while i < len(words):
        w = words[i]
        if w == "of" and i + 1 < len(words) and words[i + 1] == "the":
            out.append("du")
            i += 2
            continue
        if w in ("red", "blue") and i + 1 < len(words) and words[i + 1] in ("car", "house", "dog"):
            out += [_FR[words[i + 1]], _FR[w]]
            i += 2
            continue
        out.append(_FR[w])
        i += 1
    return out


def _sentence(g: torch.Generator) -> list[str]:
    def pick(options):
        return options[int(torch.randint(len(options), (1,), generator=g))]

    def noun_phrase():
        words = ["the"]
        r = int(torch.randint(3, (1,), generator=g))
        if r == 1:
            words.append(pick(("red", "blue")))
        elif r == 2:
            words.append("big")
        words.append(pick(("car", "house", "dog")))
        if int(torch.randint(3, (1,), generator=g)) == 0:
            words += ["of", "the", pick(("car", "house", "dog"))]
        return words

    return noun_phrase() + [pick(("sees", "likes"))] + noun_phrase()


def make_batch(task: Task, batch: int, lengths: tuple[int, int], g: torch.Generator):
    """(src (B, N), tgt (B, M)) padded with PAD; lengths (lo, hi) for copy/reverse."""
    srcs, tgts = [], []
    for _ in range(batch):
        if task.name == "translate":
            words = _sentence(g)
            srcs.append(task.src_ids(words))
            tgts.append([task.tgt_vocab.index(w) for w in translate_words(words)])
        else:
            n = int(torch.randint(lengths[0], lengths[1] + 1, (1,), generator=g))
            ids = (torch.randint(len(_SYMBOLS), (n,), generator=g) + 2).tolist()
            srcs.append(ids)
            tgts.append(ids if task.name == "copy" else ids[::-1])
    N, M = max(map(len, srcs)), max(map(len, tgts))
    src = torch.tensor([s + [PAD] * (N - len(s)) for s in srcs])  # (B, N)
    tgt = torch.tensor([s + [PAD] * (M - len(s)) for s in tgts])  # (B, M)
    return src, tgt


# ----------------------------------------------------------------------------- model
@dataclass(frozen=True)
class Config:
    task: str = "copy"
    attention: str = "additive"
    emb: int = 32
    hidden: int = 64
    d_a: int = 64
    min_len: int = 4
    max_len: int = 8
    steps: int = 400
    batch: int = 64
    lr: float = 0.01


def init_params(cfg: Config, seed: int = 0) -> dict[str, torch.Tensor]:
    """Seeded parameters, uniform(−1/√h, 1/√h) like torch's GRU."""
    task = get_task(cfg.task)
    g = torch.Generator().manual_seed(seed)
    h, e = cfg.hidden, cfg.emb
    dec_in = e + h  # [E_tgt[y] ; c]

    def u(*shape):
        return (torch.rand(*shape, generator=g) * 2 - 1) / math.sqrt(h)

    p = {"E_src": torch.randn(len(task.src_vocab), e, generator=g) * 0.3,
         "E_tgt": torch.randn(len(task.tgt_vocab), e, generator=g) * 0.3}
    for pre, n_in in (("enc", e), ("dec", dec_in)):
        p[f"{pre}.W"] = u(3 * h, n_in)  # input weights of the r, z, n gates stacked
        p[f"{pre}.U"] = u(3 * h, h)  # recurrent weights
        p[f"{pre}.b"] = u(3 * h)
        p[f"{pre}.c"] = u(3 * h)
    p["W_out"] = u(len(task.tgt_vocab), 2 * h)
    p["b_out"] = torch.zeros(len(task.tgt_vocab))
    if cfg.attention == "additive":
        p["W_a"], p["U_a"], p["w_a"] = u(cfg.d_a, h), u(cfg.d_a, h), u(cfg.d_a)
    return p


def gru_cell(x: torch.Tensor, h: torch.Tensor, W, U, b, c) -> torch.Tensor:
    """One GRU step (PyTorch's gate order r, z, n): x (B, n_in), h (B, hidden) → (B, hidden).

        r = σ(W_r x + b_r + U_r h + c_r),  z = σ(W_z x + b_z + U_z h + c_z)
        n = tanh(W_n x + b_n + r ⊙ (U_n h + c_n)),  h' = (1 − z) ⊙ n + z ⊙ h
    """
    gx = x @ W.T + b  # (B, 3h)
    gh = h @ U.T + c  # (B, 3h)
    xr, xz, xn = gx.chunk(3, dim=-1)
    hr, hz, hn = gh.chunk(3, dim=-1)
    r = torch.sigmoid(xr + hr)
    z = torch.sigmoid(xz + hz)
    n = torch.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def encode(p: dict, src: torch.Tensor) -> torch.Tensor:
    """h_i = GRU(E_src[x_i], h_{i−1}); PAD positions keep the previous state. src (B, N) → H (B, N, h)."""
    B, N = src.shape
    h = torch.zeros(B, p["enc.U"].shape[1])
    states = []
    for i in range(N):
        x = p["E_src"][src[:, i]]  # (B, e)
        new = gru_cell(x, h, p["enc.W"], p["enc.U"], p["enc.b"], p["enc.c"])
        keep = (src[:, i] == PAD).unsqueeze(-1)
        h = torch.where(keep, h, new)
        states.append(h)
    return torch.stack(states, dim=1)  # (B, N, h)


@dataclass(frozen=True, eq=False)
class StepTrace:
    """One decoder step t: s_prev (B, h), scores e (B, N), weights α (B, N), context c (B, h),
    s (B, h), logits (B, V)."""

    s_prev: torch.Tensor
    scores: torch.Tensor | None
    weights: torch.Tensor | None
    context: torch.Tensor
    s: torch.Tensor
    logits: torch.Tensor


def decode_step(p: dict, cfg: Config, y_prev: torch.Tensor, s_prev: torch.Tensor, H: torch.Tensor,
                src_mask: torch.Tensor) -> StepTrace:
    """One step of the decoder (formulas in the module docstring); src_mask (B, N) True = real token."""
    if cfg.attention == "none":
        # C25: the fixed summary C = h_N of the whole input, the same for every step
        context, scores, weights = H[:, -1], None, None
    else:
        params = {"W_a": p["W_a"], "U_a": p["U_a"], "w_a": p["w_a"]} if cfg.attention == "additive" else None
        tr = attention(s_prev.unsqueeze(1), H, H, score=cfg.attention, params=params,
                       mask=src_mask.unsqueeze(1))  # e_{t,i} = f_att(s_{t−1}, h_i), α = softmax_i, c = Σ α h
        context, scores, weights = tr.output[:, 0], tr.logits[:, 0], tr.weights[:, 0]  # (B, h), (B, N), (B, N)
    x = torch.cat([p["E_tgt"][y_prev], context], dim=-1)  # [E_tgt[y_{t−1}] ; c_t]
    s = gru_cell(x, s_prev, p["dec.W"], p["dec.U"], p["dec.b"], p["dec.c"])
    logits = torch.cat([s, context], dim=-1) @ p["W_out"].T + p["b_out"]  # (B, V)
    return StepTrace(s_prev=s_prev, scores=scores, weights=weights, context=context, s=s, logits=logits)


def _init_state(H: torch.Tensor) -> torch.Tensor:
    return H[:, -1]  # s_0 = h_N


def loss_fn(p: dict, cfg: Config, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Teacher-forced cross-entropy over the real (non-PAD) target tokens."""
    H = encode(p, src)
    s = _init_state(H)
    y_prev = torch.full((src.shape[0],), BOS, dtype=torch.long)
    losses = []
    for t in range(tgt.shape[1]):
        st = decode_step(p, cfg, y_prev, s, H, src != PAD)
        losses.append(F.cross_entropy(st.logits, tgt[:, t], ignore_index=PAD, reduction="sum"))
        s, y_prev = st.s, tgt[:, t]
    return torch.stack(losses).sum() / (tgt != PAD).sum()


@dataclass(frozen=True, eq=False)
class Decoded:
    """Greedy decoding of one batch: predictions (B, M), per-step traces, and the attention map
    (B, M, N) (None without attention)."""

    predictions: torch.Tensor
    steps: tuple[StepTrace, ...]
    attention_map: torch.Tensor | None
    encoder_states: torch.Tensor


@torch.no_grad()
def greedy_decode(p: dict, cfg: Config, src: torch.Tensor, length: int) -> Decoded:
    H = encode(p, src)
    s = _init_state(H)
    y = torch.full((src.shape[0],), BOS, dtype=torch.long)
    steps, preds = [], []
    for _ in range(length):
        st = decode_step(p, cfg, y, s, H, src != PAD)
        y = st.logits.argmax(dim=-1)
        steps.append(st)
        preds.append(y)
        s = st.s
    amap = None if cfg.attention == "none" else torch.stack([st.weights for st in steps], dim=1)  # (B, M, N)
    return Decoded(predictions=torch.stack(preds, dim=1), steps=tuple(steps), attention_map=amap, encoder_states=H)


def token_accuracy(p: dict, cfg: Config, src: torch.Tensor, tgt: torch.Tensor) -> float:
    """Share of real target tokens predicted right by greedy decoding."""
    pred = greedy_decode(p, cfg, src, tgt.shape[1]).predictions
    real = tgt != PAD
    return float(((pred == tgt) & real).sum() / real.sum())


@dataclass(frozen=True, eq=False)
class Trained:
    cfg: Config
    params: dict[str, torch.Tensor]
    losses: tuple[float, ...]
    accuracy: float
    seconds: float


def train(cfg: Config, seed: int = 0, *, callback: Callable[[int, float], None] | None = None,
          eval_batch: int = 256) -> Trained:
    """Adam on freshly generated batches (seeded); returns the parameters, the loss curve and the
    token accuracy on a held-out seeded batch."""
    if cfg.attention not in ATTENTIONS:
        raise ValueError(f"unknown attention '{cfg.attention}'; choose one of {', '.join(ATTENTIONS)}")
    task = get_task(cfg.task)
    torch.manual_seed(seed)  # nothing below draws from the global generator; set for safety
    p = {k: v.requires_grad_(True) for k, v in init_params(cfg, seed).items()}
    opt = torch.optim.Adam(p.values(), lr=cfg.lr)
    g = torch.Generator().manual_seed(seed + 1)
    losses, t0 = [], time.perf_counter()
    for step in range(cfg.steps):
        src, tgt = make_batch(task, cfg.batch, (cfg.min_len, cfg.max_len), g)
        loss = loss_fn(p, cfg, src, tgt)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p.values(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if callback is not None:
            callback(step, losses[-1])
    params = {k: v.detach() for k, v in p.items()}
    src, tgt = make_batch(task, eval_batch, (cfg.min_len, cfg.max_len), torch.Generator().manual_seed(seed + 2))
    acc = token_accuracy(params, cfg, src, tgt)
    return Trained(cfg=cfg, params=params, losses=tuple(losses), accuracy=acc, seconds=time.perf_counter() - t0)


def accuracy_by_length(model: Trained, lengths, *, n: int = 128, seed: int = 7) -> list[float]:
    """Token accuracy on inputs of each length (copy/reverse tasks): the bottleneck curve (C25)."""
    task = get_task(model.cfg.task)
    out = []
    for L in lengths:
        src, tgt = make_batch(task, n, (L, L), torch.Generator().manual_seed(seed + L))
        out.append(token_accuracy(model.params, model.cfg, src, tgt))
    return out
