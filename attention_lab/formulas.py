"""LaTeX and MathML for every step, in both notations. Text only — the numbers come from core.
Streamlit-free: the app (ui/widgets/formulas.py), the notebook export and the notebook views share it."""

from __future__ import annotations

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
    """``formula`` (LaTeX or MathML) with its words (\\text{row}, <mtext>col</mtext>, …) in ``lang``."""
    for word, said in _WORDS.get(lang, {}).items():
        formula = formula.replace(r"\text{" + word + "}", r"\text{" + said + "}")
        formula = formula.replace(f"<mtext>{word}</mtext>", f"<mtext>{said}</mtext>")
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

# one-line forms for the compact pipeline beside the Playground's controls
SHORT = {
    "masked": r"L = \tilde S + M",
    "weights": {"row": r"\alpha = \mathrm{softmax}_{\text{row}}(L)", "column": r"\alpha = \mathrm{softmax}_{\text{col}}(L)"},
    "output": {"row": r"O = \alpha V", "column": r"O = V \alpha"},
}


# ---------------------------------------------------------------------------- MathML
# The same one-line forms as MathML, for the Playground's pipeline drawn as one component (which
# has no KaTeX): browsers render MathML natively. Fixed text only, never learner input.
def _mi(x: str) -> str:
    return f"<mi>{x}</mi>"


def _mo(x: str) -> str:
    return f"<mo>{x}</mo>"


def _sub(base: str, sub: str) -> str:
    return f"<msub>{base}{sub}</msub>"


def _T(base: str) -> str:  # base transposed
    return f"<msup>{base}<mo>⊤</mo></msup>"


def _wrap(*parts: str) -> str:
    return "<mrow>" + "".join(parts) + "</mrow>"


_S_IJ = _sub(_mi("S"), _wrap(_mi("i"), _mi("j")))
_S_TILDE = "<mover accent='true'><mi>S</mi><mo>~</mo></mover>"


def _additive(q: str, k: str) -> str:
    return _wrap(_S_IJ, _mo("="), "<msubsup><mi>w</mi><mi>a</mi><mo>⊤</mo></msubsup>", _mi("tanh"), _mo("("),
                 _sub(_mi("W"), _mi("a")), q, _mo("+"), _sub(_mi("U"), _mi("a")), k, _mo(")"))


def _cosine(a: str, b: str) -> str:
    norm = lambda x: _wrap(_mo("‖"), x, _mo("‖"))  # noqa: E731
    return _wrap(_S_IJ, _mo("="), f"<mfrac>{_wrap(_T(a), b)}{_wrap(norm(a), norm(b))}</mfrac>")


_QI, _KJ, _QJ, _KI = (_sub(_mi(a), _mi(b)) for a, b in (("q", "i"), ("k", "j"), ("q", "j"), ("k", "i")))
MATHML_SCORE = {
    "row": {"dot": _wrap(_mi("S"), _mo("="), _mi("Q"), _T(_mi("K"))),
            "scaled_dot": _wrap(_mi("S"), _mo("="), _mi("Q"), _T(_mi("K"))),
            "general": _wrap(_mi("S"), _mo("="), _mi("Q"), _T(_mi("W")), _T(_mi("K"))),
            "additive": _additive(_QI, _KJ), "cosine": _cosine(_QI, _KJ)},
    "column": {"dot": _wrap(_mi("S"), _mo("="), _T(_mi("K")), _mi("Q")),
               "scaled_dot": _wrap(_mi("S"), _mo("="), _T(_mi("K")), _mi("Q")),
               "general": _wrap(_mi("S"), _mo("="), _T(_mi("K")), _mi("W"), _mi("Q")),
               "additive": _additive(_QJ, _KI), "cosine": _cosine(_KI, _QJ)},
}
MATHML_SHORT = {
    "scaled": _wrap(_S_TILDE, _mo("="), _mi("S"), _mo("·"), _mi("s"), _mo("/"), _mi("T")),
    "masked": _wrap(_mi("L"), _mo("="), _S_TILDE, _mo("+"), _mi("M")),
    "weights": {conv: _wrap(_mi("α"), _mo("="), _sub(_mi("softmax"), f"<mtext>{sub}</mtext>"), _mo("("), _mi("L"), _mo(")"))
                for conv, sub in (("row", "row"), ("column", "col"))},
    "output": {"row": _wrap(_mi("O"), _mo("="), _mi("α"), _mi("V")), "column": _wrap(_mi("O"), _mo("="), _mi("V"), _mi("α"))},
}
_SUM_I = "<munder><mo>∑</mo><mi>i</mi></munder>"
_ALPHA_I = _sub(_mi("α"), _mi("i"))
# CONTRIB for the query inspector's one element
MATHML_CONTRIB = _wrap(_mi("o"), _mo("="), _SUM_I, _ALPHA_I, _sub(_mi("v"), _mi("i")), _mo(","), "<mspace width='1.5em'/>",
                       "<mn>0</mn>", _mo("≤"), _ALPHA_I, _mo("≤"), "<mn>1</mn>", _mo(","), "<mspace width='0.5em'/>",
                       _SUM_I, _ALPHA_I, _mo("="), "<mn>1</mn>")
