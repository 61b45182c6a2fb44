"""The GRU encoder-decoder with and without attention, against torch's GRUCell."""

import pytest
import torch

from core import seq2seq


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_gru_cell_equals_torch_grucell():
    cell = torch.nn.GRUCell(5, 7).double()
    x, h = rand(3, 5, seed=1), rand(3, 7, seed=2)
    ours = seq2seq.gru_cell(x, h, cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)
    torch.testing.assert_close(ours, cell(x, h))


def test_decoder_shapes_and_attention_rows():
    cfg = seq2seq.Config(task="copy", attention="additive", hidden=16, emb=8, d_a=8)
    p = seq2seq.init_params(cfg, seed=0)
    src, tgt = seq2seq.make_batch(seq2seq.get_task("copy"), 5, (3, 6), torch.Generator().manual_seed(0))
    dec = seq2seq.greedy_decode(p, cfg, src, tgt.shape[1])
    assert dec.encoder_states.shape == (5, src.shape[1], 16)
    assert dec.attention_map.shape == (5, tgt.shape[1], src.shape[1])
    torch.testing.assert_close(dec.attention_map.sum(-1), torch.ones(5, tgt.shape[1]))
    assert (dec.attention_map[src.unsqueeze(1).expand_as(dec.attention_map) == seq2seq.PAD] == 0).all()
    st0 = dec.steps[0]
    assert st0.scores.shape == (5, src.shape[1]) and st0.context.shape == (5, 16) and st0.logits.shape[0] == 5
    none = seq2seq.greedy_decode(seq2seq.init_params(seq2seq.Config(attention="none", hidden=16, emb=8), 0),
                                 seq2seq.Config(attention="none", hidden=16, emb=8), src, 4)
    assert none.attention_map is None and torch.equal(none.steps[0].context, none.steps[1].context)


def test_toy_translation_rules():
    assert seq2seq.translate_words("the red car sees the dog".split()) == "le voiture rouge voit le chien".split()
    assert seq2seq.translate_words("the big house of the dog likes the car".split()) == \
        "le grand maison du chien aime le voiture".split()


def test_trained_copy_model_reaches_95_percent():
    m = seq2seq.train(seq2seq.Config(task="copy", attention="dot"), seed=0)
    assert m.accuracy >= 0.95, m.accuracy  # its training time is measured by bench/core.py, not asserted here
    assert m.losses[-1] < m.losses[0] / 5
    again = seq2seq.train(seq2seq.Config(task="copy", attention="dot", steps=5), seed=0)
    assert again.losses == seq2seq.train(seq2seq.Config(task="copy", attention="dot", steps=5), seed=0).losses


def test_unknown_task_and_attention():
    with pytest.raises(ValueError, match="unknown task 'poetry'; choose one of copy, reverse, translate"):
        seq2seq.get_task("poetry")
    with pytest.raises(ValueError, match="unknown attention 'psychic'; choose one of none, additive, dot"):
        seq2seq.train(seq2seq.Config(attention="psychic"))
