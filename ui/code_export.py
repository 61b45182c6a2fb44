"""“Copy as code”: a scenario as a runnable ``core`` snippet, as plain PyTorch, and as a notebook.

:func:`code_panel` takes exactly the dict of :meth:`attention_lab.scenario.Numbers.args` (the keyword
arguments of ``core.lab.playground``); the token labels come separately. The snippets are built by
:mod:`attention_lab.codegen` (tested there: they print the page's numbers); the notebook is built only when
the learner presses the download button."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from attention_lab import codegen

from . import settings, state
from .i18n import current_lang, t


def _with_tokens(args: dict, tokens_q: Sequence[str] | None, tokens_k: Sequence[str] | None) -> dict:
    """The playground arguments plus the token labels codegen writes as comments (only those that fit)."""
    out = {k: v for k, v in args.items() if k in codegen.ARG_NAMES}
    if tokens_q is not None:
        out["tokens_q"] = [str(s) for s in tokens_q]
    if tokens_k is not None:
        out["tokens_k"] = [str(s) for s in tokens_k]
    return out


def code_panel(args: dict, *, title: str, key_prefix: str, tokens_q: Sequence[str] | None = None,
               tokens_k: Sequence[str] | None = None, formulas_md: str | Sequence[str] | None = None,
               file_stem: str = "attention-lab") -> None:
    """Two tabs — the ``core`` snippet and the plain-PyTorch one — and a notebook download.

    ``args``: ``num.args(conv)`` (``attention_lab.scenario.Numbers``); ``title``
    heads the notebook; ``key_prefix`` keeps the download buttons of several panels apart.
    A scenario too large to write out gets a message instead (attention_lab.codegen.size_problem)."""
    if codegen.size_problem(args):
        st.info(t("cx.too_large", limit=codegen.MAX_CODE_TOKENS, dim=codegen.MAX_DIM))
        return
    full = _with_tokens(args, tokens_q, tokens_k)
    lang, dec = current_lang(), settings.get("precision")
    try:
        core_code, torch_code = codegen.core_snippet(full, lang), codegen.torch_snippet(full, lang)
    except ValueError as err:
        st.warning(t("cx.failed", detail=str(err)))
        return
    st.caption(t("cx.intro"))
    tab_core, tab_torch = st.tabs([t("cx.tab.core"), t("cx.tab.torch")])
    with tab_core:
        st.code(core_code, language="python", wrap_lines=True)
    with tab_torch:
        st.code(torch_code, language="python", wrap_lines=True)
    st.download_button(t("cx.notebook"),  # built on the click: the notebook is saved with its outputs (maps included)
                       data=lambda: codegen.notebook_bytes(full, title=title, formulas_md=formulas_md, lang=lang, decimals=dec),
                       file_name=f"{file_stem}.ipynb", mime="application/x-ipynb+json", on_click="ignore",
                       key=state.item(state.CODE_EXPORT.download, key_prefix), icon=":material/download:")
