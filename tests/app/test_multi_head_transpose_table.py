"""AppTest: the multi-head page's "reshaping without the transpose" table, cell by cell against
what the bare reshape really does to the tensor (and what the right split holds)."""

from __future__ import annotations

import torch

from core import tokens
from ui import state

from .helpers import no_errors, page

C18 = list(tokens.C18_TOKENS)


def test_every_row_of_the_table_names_what_the_reshape_put_there_and_what_belongs_there():
    at = page("app_pages/multi_head.py", run=False)
    at.session_state[state.MULTI_HEAD.d_model] = 8
    at.session_state[state.MULTI_HEAD.heads] = 2
    at.run()
    no_errors(at)
    table = next(df.value for df in at.dataframe if df.value.shape[1] == 5)
    n, width, H = len(C18), 8, 2
    d_head = width // H
    x = torch.arange(n * width).reshape(1, n, width)  # entry = token · width + feature
    wrong = x.reshape(1, H, n, d_head)[0, 0]  # head 0 after the bare reshape
    right = x.reshape(1, n, H, d_head).transpose(1, 2)[0, 0]  # head 0 after the correct split
    labels = [f"{i} {t}" for i, t in enumerate(C18)]
    assert len(table) == n
    for r in range(n):
        got_tokens = sorted({int(v) // width for v in wrong[r]})
        assert table.iloc[r, 1] == ", ".join(labels[i] for i in got_tokens)
        assert table.iloc[r, 2] == f"{int(wrong[r, 0]) % width}…{int(wrong[r, -1]) % width}"
        assert table.iloc[r, 3] == labels[int(right[r, 0]) // width] == labels[r]
        assert table.iloc[r, 4] == f"{int(right[r, 0]) % width}…{int(right[r, -1]) % width}" == f"0…{d_head - 1}"
