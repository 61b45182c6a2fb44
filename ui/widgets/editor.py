"""An editable matrix (st.data_editor) that refuses empty, non-numeric, NaN/inf and huge cells."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from .. import state
from ..i18n import t

EDIT_LIMIT = 64  # matrices are editable up to this many tokens


def matrix_frame(m: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(np.asarray(m, dtype=float), index=list(row_labels), columns=list(col_labels))


def matrix_editor(
    label: str,
    base: np.ndarray,
    *,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    key: str,
    decimals: int = 3,
) -> tuple[np.ndarray, str | None]:
    """An editable table on top of ``base``; returns (matrix, problem).

    Edits are Streamlit's own widget state under ``key`` (so they survive reruns and can be
    put in a URL). A cell left empty or holding NaN/±inf is refused: the problem names the
    cell and the last valid matrix is returned instead.
    """
    base = np.asarray(base, dtype=float)
    if base.ndim == 1:
        base = base[:, None]
    df = matrix_frame(base, row_labels, col_labels)
    step = 10 ** (-decimals)
    cfg = {c: st.column_config.NumberColumn(c, format=f"%.{decimals}f", step=step) for c in df.columns}
    st.caption(label)
    edited = st.data_editor(df, key=key, column_config=cfg, num_rows="fixed", width="stretch")
    values = edited.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    last_key = state.last_valid(key)
    if values.shape != base.shape:
        return base, t("err.cell_shape")
    bad = ~np.isfinite(values)
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        last = st.session_state.get(last_key)
        fallback = last if isinstance(last, np.ndarray) and last.shape == base.shape else base
        return fallback, t("err.cell_invalid", row=row_labels[i], col=col_labels[j])
    too_big = np.abs(values) > 1e6
    if too_big.any():
        i, j = map(int, np.argwhere(too_big)[0])
        last = st.session_state.get(last_key)
        fallback = last if isinstance(last, np.ndarray) and last.shape == base.shape else base
        return fallback, t("err.cell_huge", row=row_labels[i], col=col_labels[j])
    st.session_state[last_key] = values
    return values, None
