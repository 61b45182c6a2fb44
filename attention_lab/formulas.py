"""The formulas of every step as LaTeX, in both notations (MathML is generated from it: :func:`mathml`).
Text only — the numbers come from core.
Streamlit-free: the app (ui/widgets/formulas.py), the notebook export and the notebook views share it."""

from __future__ import annotations

import functools
import re

from latex2mathml.converter import convert

# score(q, k) for one pair
SCORE_PAIR = {
    "dot": r"\mathrm{score}(q, k) = q^\top k",
    # the scaled dot product is f(q, k) = qᵀk in step 1 and × s = 1/√d_k in step 2: divided once
    "scaled_dot": r"\mathrm{score}(q, k) = q^\top k,\quad s = 1/\sqrt{d_k}",
    "general": r"\mathrm{score}(q, k) = k^\top W q,\quad W \in \mathbb{R}^{d_k \times d_k}",
    "additive": r"\mathrm{score}(q, k) = w_a^\top \tanh(W_a q + U_a k),\quad W_a, U_a \in \mathbb{R}^{d_a \times d_k},\ "
                r"w_a \in \mathbb{R}^{d_a}",
    "cosine": r"\mathrm{score}(q, k) = \dfrac{q^\top k}{\lVert q \rVert\,\lVert k \rVert}",
}

# f(Q, K) as a matrix, row convention (rows = queries) and column convention (rows = keys)
SCORE_MATRIX = {
    "row": {
        "dot": r"S = Q K^\top",
        "scaled_dot": r"S = Q K^\top",
        "general": r"S = Q W^\top K^\top",
        "additive": r"S_{ij} = w_a^\top \tanh(W_a q_i + U_a k_j)",
        "cosine": r"S_{ij} = \dfrac{q_i^\top k_j}{\lVert q_i \rVert \lVert k_j \rVert}",
    },
    "column": {
        "dot": r"S = K^\top Q",
        "scaled_dot": r"S = K^\top Q",
        "general": r"S = K^\top W Q",
        "additive": r"S_{ij} = w_a^\top \tanh(W_a q_j + U_a k_i)",
        "cosine": r"S_{ij} = \dfrac{k_i^\top q_j}{\lVert k_i \rVert \lVert q_j \rVert}",
    },
}

WHOLE = {
    "row": r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}_{\text{row}}\!\left(\frac{f(Q, K)\cdot s}{T} + M\right) V",
    "column": r"\mathrm{Attention}(Q, K, V) = V \,\mathrm{Softmax}_{\text{column}}\!\left(\frac{f(Q, K)\cdot s}{T} + M\right)",
}

SCALED = r"\tilde S = S \cdot s \,/\, T"
MASKED = {
    "row": r"L = \tilde S + M,\quad M_{ij} \in \{0,\, -\infty\}",
    "column": r"L = \tilde S + M,\quad M_{ij} \in \{0,\, -\infty\}",
}
SOFTMAX = {
    "row": r"\alpha_{ij} = \frac{e^{L_{ij}}}{\sum_{j'} e^{L_{ij'}}},\qquad \sum_j \alpha_{ij} = 1",
    "column": r"\alpha_{ij} = \frac{e^{L_{ij}}}{\sum_{i'} e^{L_{i'j}}},\qquad \sum_i \alpha_{ij} = 1",
}
OUTPUT = {
    "row": r"O = \alpha V,\qquad o_i = \sum_j \alpha_{ij} v_j",
    "column": r"O = V \alpha,\qquad o_j = \sum_i \alpha_{ij} v_i",
}
CONTRIB = r"o = \sum_i \alpha_i \, v_i,\qquad 0 \le \alpha_i \le 1,\ \sum_i \alpha_i = 1"

PROJECTION = {
    "row": r"Q = X_q W_Q,\quad K = X_{kv} W_K,\quad V = X_{kv} W_V",
    "column": r"Q = W^Q X_q,\quad K = W^K X_{kv},\quad V = W^V X_{kv}",
}


# the words inside formulas, in the learner's language (the math stays as it is)
_WORDS = {"ko": {"row": "행", "column": "열", "col": "열", "target": "타깃", "source": "소스",
                 "the function's own scale": "함수 기본값", "edited": "직접 고침",
                 "bytes": "바이트 수", "bytes per value": "숫자 하나의 바이트 수"}}


def localize(formula: str, lang: str) -> str:
    """The LaTeX ``formula`` with its words (\\text{row}, …) in ``lang``."""
    for word, said in _WORDS.get(lang, {}).items():
        formula = formula.replace(r"\text{" + word + "}", r"\text{" + said + "}")
    return formula


def qkv_formula(qkv: str, cross: bool) -> str:
    """Where Q, K, V come from in the current mode: identity, projection or direct edits (self or cross)."""
    xq, xkv = (r"X_{\text{target}}", r"X_{\text{source}}") if cross else ("X", "X")
    if qkv == "projection":
        return rf"Q = {xq} W_Q,\quad K = {xkv} W_K,\quad V = {xkv} W_V"
    if qkv == "direct":
        return rf"Q \leftarrow {xq},\quad K, V \leftarrow {xkv}\quad (\text{{edited}})"
    return rf"Q = {xq},\quad K = V = {xkv}" if cross else r"Q = K = V = X"


def scale_text(scale_mode: str) -> str:
    return {"auto": r"s = \text{the function's own scale}", "sqrt_dk": r"s = 1/\sqrt{d_k}", "none": r"s = 1"}[scale_mode]

# one-line forms for the compact pipeline beside the Playground's controls (scores and scaled: SCORE_MATRIX, SCALED)
SHORT = {
    "masked": r"L = \tilde S + M",
    "weights": {"row": r"\alpha = \mathrm{softmax}_{\text{row}}(L)", "column": r"\alpha = \mathrm{softmax}_{\text{col}}(L)"},
    "output": {"row": r"O = \alpha V", "column": r"O = V \alpha"},
}


# ---------------------------------------------------------------------------- MathML
# The Playground's pipeline and query inspector are drawn as one element each, without KaTeX:
# browsers render MathML natively. It is generated from the LaTeX above (latex2mathml), so every
# formula is written once. Fixed text only, never learner input.
_CHAR_REF = re.compile(r"&#x([0-9A-Fa-f]+);")
_UPRIGHT_WORD = re.compile(r'<mrow>((?:<mi mathvariant="normal">[A-Za-z]</mi>){2,})</mrow>')


def _char(m: re.Match) -> str:
    c = chr(int(m.group(1), 16))
    return m.group(0) if c in "<>&\"'" else c


@functools.lru_cache(maxsize=256)
def mathml(latex: str) -> str:
    """The MathML of a LaTeX formula, without its ``<math>`` element (the component adds it):
    characters as themselves (⊤, α), an upright word (``\\mathrm{softmax}``) as one identifier."""
    body = convert(latex)
    body = body[body.index(">") + 1:body.rindex("</math>")]
    body = _CHAR_REF.sub(_char, body)
    return _UPRIGHT_WORD.sub(lambda m: "<mi>" + "".join(re.findall(r">([A-Za-z])<", m.group(1))) + "</mi>", body)
