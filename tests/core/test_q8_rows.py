"""A decoder's token embedding kept in the file's Q8_0 blocks (core.models.gguf_file.Q8Rows, issue 54 point 3): on the
real files of both models, every row it gives is the float32 dequantisation bit for bit, and the tied head h Eᵀ is the
float32 head within float32 rounding; a scale read from the wrong block breaks both.

The head's bound. Every entry is Σ_k h_k·E_jk over d = d_model terms; each E_jk = scale·q is exact in float32 (an
11-bit times a 7-bit significand), so the chunked head and h @ E32ᵀ sum the same exact numbers, at most in another
order. Each result is within γ_d·Σ_k |h_k·E_jk| of the exact sum (γ_d = d·u / (1 − d·u), u = 2⁻²⁴: d − 1 additions and
one product per term, Higham's bound), so the two are within 2·γ_d·(|h| |E|ᵀ) of each other. On this machine they
came out the same bits (the BLAS sums a row's d products in the same order whichever rows share the product).
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from core import pretrained
from core.models import decoder, gguf_file
from core.models.decoder_forward import norm
from core.models.decoder_load import LlamaWeights, read_config, read_weights
from core.models.gguf_file import Q8_0, GGUFFile, Q8Rows

U = 2.0 ** -24  # float32's unit roundoff


def _paths():
    out = []
    if importlib.util.find_spec(decoder.MODULE) is not None:
        out.append(pytest.param(decoder.gguf_path, id="smollm2"))
    if importlib.util.find_spec(pretrained.GEMMA3_MODULE) is not None:
        out.append(pytest.param(pretrained.gemma3_path, id="gemma3"))
    return out or [pytest.param(None, marks=pytest.mark.skip(reason="neither model package is installed"))]


@pytest.fixture(scope="module", params=_paths())
def embedding(request):
    """(the Q8_0 blocks, the float32 dequantisation) of the file's token_embd.weight."""
    reader = GGUFFile(request.param())
    assert reader.tensors["token_embd.weight"][0] == Q8_0  # both files store their embedding as Q8_0
    return reader.q8_rows("token_embd.weight"), reader.tensor("token_embd.weight")


def head_bound(h: torch.Tensor, E32: torch.Tensor) -> torch.Tensor:
    """2·γ_d·(|h| |E|ᵀ): how far two float32 summation orders of h Eᵀ may be apart (module docstring). h (n, d) → (n, V)."""
    d = h.shape[-1]
    gamma = d * U / (1 - d * U)
    return 2 * gamma * (h.double().abs() @ E32.double().abs().T)


def test_rows_from_the_blocks_are_the_float32_rows_bit_for_bit(embedding):
    E, E32 = embedding
    assert E.shape == E32.shape and E.q.dtype == torch.int8 and E.scale.dtype == torch.float16
    assert E.scale.shape == (E32.shape[0], E32.shape[1] // 32)
    assert E.nbytes == E32.numel() * (1 + 2 / 32)  # a quarter of the float32 bytes and a little
    assert torch.equal(E.dequantised(), E32)  # every row of the file
    ids = torch.tensor([[0, 1, 2], [E32.shape[0] - 1, 7, 7]])
    assert torch.equal(E.rows(ids), E32[ids]) and torch.equal(E[ids], E32[ids])
    assert E.rows(ids).dtype == torch.float32 and E.dtype == torch.float32


@pytest.mark.parametrize("rows,chunk", [(1, 2048), (40, 2048), (3, 1000)])
def test_the_head_is_the_float32_head_within_rounding(embedding, rows, chunk):
    E, E32 = embedding
    h = torch.randn(rows, E32.shape[1], generator=torch.Generator().manual_seed(rows))
    ref = h @ E32.T  # (rows, V)
    got = E.head(h, chunk)  # 1000 does not divide V: the last chunk is shorter
    assert got.shape == ref.shape and got.dtype == torch.float32
    assert bool(((got.double() - ref.double()).abs() <= head_bound(h, E32)).all())
    assert torch.equal(h[0] @ E.T, E.head(h[:1])[0])  # a vector h (d,) → (V,), as for the float32 tensor


def test_a_scale_from_the_wrong_block_breaks_the_rows_and_the_head(embedding):
    """The negative control: the scale of the block beside each one (rolled by one block along a row)."""
    E, E32 = embedding
    wrong = Q8Rows(q=E.q, scale=E.scale.roll(1, dims=1))
    ids = torch.arange(0, E32.shape[0], 997)
    assert not torch.equal(wrong.rows(ids), E32[ids])
    h = torch.randn(2, E32.shape[1], generator=torch.Generator().manual_seed(0))
    gap = (wrong.head(h).double() - (h @ E32.T).double()).abs()
    assert bool((gap > head_bound(h, E32)).any())
    assert float(gap.max()) > 1e3 * float(head_bound(h, E32).max())  # far outside rounding, not at its edge


def test_the_model_computes_the_same_with_the_blocks_as_with_float32():
    """LlamaWeights.embed and .logits on the blocks and on the float32 embedding: the same hidden states bit for bit
    (the rows are), the logits within the head's bound; to(device) keeps the blocks."""
    if importlib.util.find_spec(decoder.MODULE) is None:
        pytest.skip(f"the model package '{decoder.PACKAGE}' is not installed")
    reader = GGUFFile(decoder.gguf_path())
    c = read_config(reader)
    P = read_weights(reader, c)
    assert isinstance(P.E, Q8Rows) and P.nbytes() < read_weights(reader, c, embedding_blocks=False).nbytes()
    P32 = LlamaWeights(E=P.E.dequantised(), g_final=P.g_final, layers=P.layers)
    ids = torch.tensor([1, 504, 3458, 314, 4649, 314])
    with torch.no_grad():
        a = decoder.forward(ids, P, c, keep_qkv=False)
        b = decoder.forward(ids, P32, c, keep_qkv=False)
    assert torch.equal(a.hidden, b.hidden) and torch.equal(a.attentions, b.attentions)
    h = norm(a.hidden[-1], P.g_final, c)  # (n, d): the head's input
    assert bool(((a.logits.double() - b.logits.double()).abs() <= head_bound(h, P32.E)).all())
    assert (P.device, P.dtype) == (torch.device("cpu"), torch.float32)
    moved = P.to(torch.device("cpu"))
    assert isinstance(moved.E, Q8Rows) and torch.equal(moved.embed(ids), P32.embed(ids))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_the_blocks_on_a_gpu_give_the_cpu_rows_and_head():
    if importlib.util.find_spec(decoder.MODULE) is None:
        pytest.skip(f"the model package '{decoder.PACKAGE}' is not installed")
    E = GGUFFile(decoder.gguf_path()).q8_rows("token_embd.weight")
    G = E.to(torch.device("cuda"))
    ids = torch.tensor([0, 5, 49151])
    assert G.device.type == "cuda" and torch.equal(G.rows(ids.cuda()).cpu(), E.rows(ids))
    h = torch.randn(4, E.shape[1])
    E32 = E.dequantised()
    got = G.head(h.cuda()).cpu().double()  # a GPU's sums, in its own order (TF32 off: torch's default for matmul)
    assert bool(((got - (h @ E32.T).double()).abs() <= head_bound(h, E32)).all())


@pytest.mark.parametrize("path", _paths())
def test_a_tensors_raw_bytes_dequantise_to_the_tensor(path):
    """GGUFFile.raw (what bench.smollm2 times the dequantising of): each type in the file, its stored bytes, which
    ``dequantize`` (or the plain values) turn into ``tensor``'s values exactly."""
    reader = GGUFFile(path())
    seen = set()
    for name, (ttype, _, _) in reader.tensors.items():
        if ttype in seen:
            continue
        seen.add(ttype)
        raw, kind = reader.raw(name)
        assert kind == ttype and raw.dtype == torch.uint8
        want = reader.tensor(name).reshape(-1)
        got = (raw.view(torch.float32) if ttype == gguf_file.F32 else raw.view(torch.float16).float()
               if ttype == gguf_file.F16 else gguf_file.dequantize(raw, ttype))
        assert torch.equal(got, want), name
    assert len(seen) >= 2
    with pytest.raises(ValueError, match="no tensor"):
        reader.raw("no.such.weight")
