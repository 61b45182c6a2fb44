"""Encoder-decoder attention in a GRU seq2seq model, trained in the app (C25–C27)."""

from ui import safe, seq2seq_page, settings

settings.page_setup("seq2seq")
safe.run(seq2seq_page.render)
