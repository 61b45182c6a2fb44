"""The one module of tolerances: every "equal up to …", "tied" and "close enough" the app decides, and why each
bound is what it is. Nothing else in the product code writes a tolerance literal
(``tests/architecture/test_tolerances.py`` scans core, ui, app_pages, attention_lab, serving, bench and scripts).

Float32 rounding: a sum of d products of numbers near 1 is off by about d · 2⁻²⁴ ≈ d · 6e-8; the pages' matrices
have d ≤ 64, so two ways of computing the same number stay well inside 1e-5.
"""

EQUAL = 1e-5  # two float32 results this close are equal up to rounding (every page, exercise and lesson check)
LOOSE_EQUAL = 1e-4  # the same for a longer float32 computation: RoPE at shifted starts, the paper's column form
WEIGHT_TIE = 5e-7  # two attention weights of one row this close tie for the largest (core.lab.top_keys)
ANSWER_TIE = 1e-6  # two weights this close count as one answer in an exercise or a class question
SLACK = 1e-9  # float noise allowed on top of a stated tolerance (an answer exactly at the bound counts)
SPREAD = 1e-9  # s / T this close to 1 leaves the softmax's spread as it was (the step-through's sentence)
CONSTANT = 1e-6  # scores whose max − min is below this are constant (a lesson's "all keys score the same")
CHANGED = 1e-9  # an entry that moved by more than this was changed by the learner
HALF = 1e-3  # a weight this close to 0.5 is "a half" (a two-way tie read aloud)

# answers in a live class: within this of the model's weight counts as right
CLASS_ALPHA = 0.05  # one weight α_qk
CLASS_ROW = 0.10  # each weight of a row

# the bar a real model's logits must meet against transformers reading the same file (issue 54): relative to their scale
MODEL_LOGITS = 2e-3
CONVEX = 1e-6  # a convex combination of float32 values may pass their largest by this much of rounding
SAME_NUMBERS = 1e-6  # two scenarios whose X, Q, K, V agree to this compute the same thing (an exercise's "make it so")

# how close a typed answer to an exercise must be: what its prompt promises ("to two decimals", "a whole number")
WHOLE = 0.0  # a count: exactly
HALF_UNIT = 0.5  # a size in KiB rounded to one decimal
DECIMALS_1 = 0.1
DECIMALS_2 = 0.01
DECIMALS_3 = 0.005
READ_OFF = 0.05  # a ratio read off a drawn panel
PERCENT_POINTS = 3.0  # a probability in percent read off a chart
