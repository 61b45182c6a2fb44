"""The guided tutorial (attention_lab.tutorial): every checker against truths computed here independently
(plain numpy, hand-written softmax), robust input handling, the texts in both languages, the
lessons' scenarios, and the progress code."""

import itertools
import json
import math
import re
import string
from pathlib import Path

import numpy as np
import pytest
import torch

import core
from attention_lab import scenario
from attention_lab import tutorial as T
from attention_lab.tutorial.lessons import MEOK, NANEUN, ONEUL, SAGWA  # the example sentence's tokens

LESSONS_DIR = Path(__file__).resolve().parents[2] / "assets" / "lessons"
EN = json.loads((LESSONS_DIR / "exercises.en.json").read_text(encoding="utf-8"))
KO = json.loads((LESSONS_DIR / "exercises.ko.json").read_text(encoding="utf-8"))

X = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 1, 1]], dtype=float)  # 나는 오늘 사과를 먹었다
ALL = [ex for lesson in T.LESSONS for ex in lesson.exercises]
SEEN: list = []  # the message keys produced, for the reachability test at the end


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """4×4 matrices: torch's thread pool only adds overhead here (a lot of it on a busy machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def softmax(row):
    row = np.asarray(row, dtype=float)
    if np.isneginf(row).all():
        return np.zeros_like(row)  # a query that sees nothing gets zeros
    e = np.exp(row - row.max())
    return e / e.sum()


def weights(Q, K, scale=None, temperature=1.0, mask=None):
    SAGWA = np.asarray(Q, float) @ np.asarray(K, float).T
    SAGWA = SAGWA * ((1 / math.sqrt(np.shape(K)[1])) if scale is None else scale) / temperature
    if mask is not None:
        SAGWA = np.where(mask, SAGWA, -np.inf)
    return np.stack([softmax(r) for r in SAGWA])


def ph(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def assert_has_text(result):
    """A Feedback or Reveal names a string of both json files whose placeholders its values fill."""
    for table in (EN, KO):
        assert result.message_key in table, result.message_key
        table[result.message_key].format(**result.values)
    if isinstance(result, T.Feedback) and not result.ok:
        assert result.hint_key in EN and result.hint_key in KO


def check(ex_id, answer):
    fb = T.exercise(ex_id).check(answer)
    assert isinstance(fb, T.Feedback)
    assert_has_text(fb)
    SEEN.append(fb.message_key)
    return fb


def state(lesson_id, **changes):
    """The panel state a learner leaves behind: the lesson's scenario with their changes."""
    st = T.lesson(lesson_id).scenario_dict()
    mats = {**st.pop("matrices", {}), **changes.pop("matrices", {})}
    st.update(changes)
    st["matrices"] = mats
    return st


def ok(fb):
    return fb.ok and fb.hint_key is None


def wrong(fb, key=None):
    assert not fb.ok, fb
    assert fb.hint_key and fb.hint_key.endswith(".hint")
    if key is not None:
        assert fb.message_key == key, fb
    return True


# ------------------------------------------------------------------ structure
def test_every_exercise_needs_only_what_this_lesson_or_an_earlier_one_teaches():
    taught: set[str] = set()
    known = {c for cs in T.CONCEPTS.values() for c in cs}
    for lesson in T.LESSONS:
        assert lesson.teaches == T.CONCEPTS[lesson.id]
        taught |= set(lesson.teaches)
        for ex in lesson.exercises:
            assert ex.concepts, f"{ex.id} declares no concept"
            assert set(ex.concepts) <= known, (ex.id, set(ex.concepts) - known)
            assert set(ex.concepts) <= taught, f"{ex.id} (lesson {lesson.id}) needs {set(ex.concepts) - taught}, taught later"


def test_computing_alpha_comes_after_the_dot_product_and_softmax_lessons():
    order = [lesson.id for lesson in T.LESSONS]
    where = order.index(T.lesson_of("weighted-average.weight").id)
    assert where > order.index("dot-product") and where >= order.index("softmax-temperature")
    assert T.lesson_of("weighted-average.weight").scenario == T.lesson("weighted-average").scenario  # the same numbers


def test_the_first_prediction_of_a_lesson_comes_first_so_its_text_can_point_at_the_map():
    first = T.lesson("weighted-average").exercises[0]
    assert first.kind == "predict" and first.hide_weights


def test_progress_order_is_unchanged_by_moving_an_exercise():
    assert T.PROGRESS_ORDER[:4] == ("weighted-average", "weighted-average.weight", "weighted-average.top",
                                    "weighted-average.row-sum")


def test_lessons_ids_panels_and_exercise_counts():
    ids = [lesson.id for lesson in T.LESSONS]
    assert len(ids) == len(set(ids)) == 15
    assert ids[0] == "weighted-average" and ids[8] == "cross-attention" and ids[9:] == ["kv-cache", "rope", "model-writing",
                                                                                       "mla-cache", "delta-rule",
                                                                                       "kept-per-token"]
    for lesson in T.LESSONS:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", lesson.id)
        assert lesson.panel in T.PANELS
        assert 2 <= len(lesson.exercises) <= 5
        for ex in lesson.exercises:
            assert ex.id.split(".")[0] in ids and ex.kind in T.KINDS and T.lesson_of(ex.id) is lesson
    kinds = {ex.kind for ex in ALL}
    assert kinds == set(T.KINDS)
    assert len({ex.id for ex in ALL}) == len(ALL)


@pytest.mark.parametrize("lesson", T.LESSONS, ids=lambda x: x.id)
def test_lesson_scenarios_validate_and_differ_from_defaults(lesson):
    raw = lesson.scenario_dict()
    for name, value in raw.items():
        assert name == "matrices" or (name in scenario.DEFAULTS and value != scenario.DEFAULTS[name]), name
    values, matrices, refused = scenario.validate(raw)
    assert refused == []
    assert matrices == raw.get("matrices", {})
    for ex in lesson.exercises:
        assert scenario.validate(lesson.scenario_dict(ex))[2] == []
    raw["tokens"] = "changed"  # a fresh copy: the lesson itself cannot be edited through it
    assert lesson.scenario_dict().get("tokens") != "changed"


@pytest.mark.parametrize("lesson", T.LESSONS, ids=lambda x: x.id)
def test_lesson_markdown_in_both_languages(lesson):
    for lang in T.LANGS:
        path = LESSONS_DIR / f"{lesson.id}.{lang}.md"
        assert path.exists(), path
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# ") and T.lesson_title(lesson.id, lang) == text.splitlines()[0][2:].strip()
        assert not re.search(r"\bC\d{1,2}\b|source 0\d\d|자료 0\d\d", text), "internal ids in learner text"
        assert len(text.split("\n\n")) >= 3
    assert re.search("[가-힣]", T.lesson_markdown(lesson.id, "ko"))
    assert T.lesson_markdown(lesson.id, "xx") == T.lesson_markdown(lesson.id, "en")


def test_exercise_json_files_have_the_same_keys_and_placeholders():
    assert set(EN) == set(KO)
    for key in EN:
        assert ph(EN[key]) == ph(KO[key]), key
        assert EN[key].strip() and KO[key].strip()


def test_every_declared_key_is_in_both_json_files_and_none_is_unused():
    declared = set()
    for ex in ALL:
        keys = {ex.prompt_key, ex.hint_key, ex.reveal_key, *ex.message_keys, *(ex.option_key(o) for o in ex.options)}
        declared |= keys
        for k in keys:
            assert k in EN and k in KO, k
        # the prompt, hint and options take the prompt values
        for k in (ex.prompt_key, ex.hint_key, *(ex.option_key(o) for o in ex.options)):
            assert ph(EN[k]) <= set(ex.prompt_values), k
    unused = {k for k in EN if not k.startswith("common.")} - declared
    assert not unused


def test_text_lookup_falls_back_and_never_raises():
    assert T.text("common.empty", "ko") == KO["common.empty"]
    assert T.text("common.index_range", "xx", answer=9, last=3) == EN["common.index_range"].format(answer=9, last=3)
    assert T.text("no.such.key") == "no.such.key"
    assert T.text("common.index_range", "en", wrong_name=1) == EN["common.index_range"]


# ------------------------------------------------------------------ the scenario → core
def test_scenario_trace_reproduces_the_worked_example():
    lt = T.scenario_trace({})
    want = weights(X, X)
    np.testing.assert_allclose(lt.weights.numpy(), want, atol=1e-6)
    np.testing.assert_allclose(lt.weights[MEOK].numpy(), [0.2091, 0.2091, 0.2091, 0.3726], atol=1e-4)
    np.testing.assert_allclose(lt.trace.attn.output.numpy(), want @ X, atol=1e-6)
    # a causal mask, a clicked cell and padding, all in row convention whatever the display
    lt = T.scenario_trace({"causal": True, "pad": [0], "blocked": [[3, 3]], "convention": "column"})
    mask = np.tril(np.ones((4, 4), bool))
    mask[:, 0] = False
    mask[3, 3] = False
    got = lt.weights.numpy()
    assert (got[~mask] == 0).all() and (got[0] == 0).all()
    np.testing.assert_allclose(got[1:], weights(X, X, mask=mask)[1:], atol=1e-6)
    with pytest.raises(scenario.BadScenario, match="^temperature$"):  # BadScenario names the value (a ValueError)
        T.scenario_trace({"temperature": "hot"})
    with pytest.raises(scenario.BadScenario, match="^state$"):
        T.scenario_trace("not a mapping")


# ------------------------------------------------------------------ robust input, every exercise
GARBAGE_NUMBERS = ["", "   ", None, "abc", "nan", "NaN", "inf", "-inf", "∞", float("nan"), float("inf"), True, [1, 2],
                   "1/2", "0.2.1", "1,2,3", "x" * 500, object()]


@pytest.mark.parametrize("ex", [e for e in ALL if e.kind == "number"], ids=lambda e: e.id)
def test_number_exercises_refuse_bad_input_with_a_message(ex):
    for answer in GARBAGE_NUMBERS:
        fb = check(ex.id, answer)
        assert wrong(fb) and fb.message_key.startswith("common."), (answer, fb)
        assert fb.message_key != "common.internal"
    assert check(ex.id, "21%").message_key == "common.percent"
    assert check(ex.id, 1e6).message_key in ("common.out_of_range", "common.weight_range", *ex.message_keys)
    assert not check(ex.id, 1e6).ok and not check(ex.id, -1e6).ok


@pytest.mark.parametrize("ex", [e for e in ALL if e.kind == "predict"], ids=lambda e: e.id)
def test_predict_exercises_refuse_bad_input_with_a_message(ex):
    for answer in ["", " ", None, "abc", 99, -1, "99", 1.5, float("nan"), float("inf"), True, [0], "0.5"]:
        fb = check(ex.id, answer)
        assert wrong(fb) and fb.message_key in ("common.empty", "common.not_index", "common.index_range"), (answer, fb)
    assert check(ex.id, 99).values["last"] == len(T.scenario_trace(T.lesson_of(ex.id).scenario).k_tokens) - 1


@pytest.mark.parametrize("ex", [e for e in ALL if e.kind == "choice"], ids=lambda e: e.id)
def test_choice_exercises_refuse_bad_input_and_explain_each_wrong_option(ex):
    for answer in ["", None, "nope", 3, ["one"]]:
        fb = check(ex.id, answer)
        assert wrong(fb) and fb.message_key in ("common.empty", "common.unknown_option")
    right = [o for o in ex.options if check(ex.id, o).ok]
    assert len(right) == 1
    for o in ex.options:
        if o != right[0]:
            assert wrong(check(ex.id, o), f"{ex.id}.why.{o}")


GARBAGE_STATE = {"temperature": "hot", "causal": "maybe", "pad": "x", "blocked": "x", T.MH_D_MODEL: "big",
                 T.MH_HEADS: "many", T.PS_D_KEY: "wide", T.PS_PERM: ["not", "text"]}


@pytest.mark.parametrize("ex", [e for e in ALL if e.kind == "make_it_so"], ids=lambda e: e.id)
def test_make_it_so_exercises_refuse_bad_states(ex):
    assert ex.needs
    lesson_id = T.lesson_of(ex.id).id
    for st in ["abc", None, 5, [1, 2], state(lesson_id, tokens=7), state(lesson_id, mode="both")]:
        assert wrong(check(ex.id, st), "common.bad_state"), st
    for need in ex.needs:  # a garbage value in each thing the task lets the learner change
        if need.startswith("matrices."):
            st = state(lesson_id, matrices={need.split(".")[1]: [["a", "b"]]})
        else:
            st = {**state(lesson_id), need: GARBAGE_STATE[need]}
        fb = check(ex.id, st)
        assert wrong(fb) and fb.message_key in ("common.bad_state", "position.move.bad_perm"), (st, fb)


def test_number_parsing_accepts_korean_comma_fullwidth_and_unicode_minus():
    assert T.parse_number("0,21") == pytest.approx(0.21)
    assert T.parse_number(" ０.２１ ") == pytest.approx(0.21)
    assert T.parse_number("−0.5") == pytest.approx(-0.5)
    assert T.parse_number("2e-1") == pytest.approx(0.2)
    assert T.parse_number(np.float32(0.25)) == pytest.approx(0.25)
    assert T.parse_number("1,234.5").message_key == "common.not_number"
    assert T.parse_number(np.bool_(True)).message_key == "common.not_number"
    assert T.parse_index(np.int64(2), ["a", "b", "c"]) == 2 and T.parse_index(np.bool_(True), ["a", "b"]).ok is False
    assert check("weighted-average.weight", "0,21").ok


# ------------------------------------------------------------------ 1. weighted average
def test_weighted_average_weight():
    w = weights(X, X)[MEOK, SAGWA]  # 먹었다 → 사과를
    assert w == pytest.approx(0.209, abs=5e-4)
    assert ok(check("weighted-average.weight", f"{w:.2f}"))
    assert ok(check("weighted-average.weight", w + 0.009))
    e = math.exp(2 / math.sqrt(3))
    fb = check("weighted-average.weight", f"{e:.2f}")  # exp(score) without dividing by the sum
    assert wrong(fb, "weighted-average.weight.no_sum")
    assert fb.values["e"] == pytest.approx(e, rel=1e-5)
    total = sum(math.exp(s / math.sqrt(3)) for s in X[MEOK] @ X.T)
    assert fb.values["total"] == pytest.approx(total, rel=1e-5)
    assert wrong(check("weighted-average.weight", "2"), "weighted-average.weight.score")
    assert wrong(check("weighted-average.weight", f"{2 / math.sqrt(3):.2f}"), "weighted-average.weight.scaled")
    assert wrong(check("weighted-average.weight", f"{softmax(X[MEOK] @ X.T)[SAGWA]:.3f}"), "weighted-average.weight.no_scale")
    assert wrong(check("weighted-average.weight", "0.25"), "weighted-average.weight.uniform")
    assert wrong(check("weighted-average.weight", "0.37"), "weighted-average.weight.self")
    assert wrong(check("weighted-average.weight", "0.6"), "weighted-average.weight.wrong")
    assert wrong(check("weighted-average.weight", "1.7"), "common.weight_range")
    assert wrong(check("weighted-average.weight", "-0.2"), "common.weight_range")


def test_weighted_average_top_accepts_either_tied_key():
    row = weights(X, X)[NANEUN]
    tied = [j for j in range(4) if row[j] >= row.max() - 1e-9]
    assert tied == [NANEUN, MEOK]
    for j in tied:
        fb = check("weighted-average.top", j)
        assert ok(fb) and fb.message_key == "weighted-average.top.ok_tie"
    assert ok(check("weighted-average.top", "먹었다")) and ok(check("weighted-average.top", "0"))
    fb = check("weighted-average.top", ONEUL)
    assert wrong(fb, "weighted-average.top.wrong") and fb.values["chosen_w"] == pytest.approx(row[ONEUL], abs=1e-5)


def test_weighted_average_row_sum():
    assert np.allclose(weights(X, X).sum(1), 1)
    assert ok(check("weighted-average.row-sum", "one"))


# ------------------------------------------------------------------ 2. dot product
def test_dot_product_score():
    s = float(X[MEOK] @ X[NANEUN])
    assert ok(check("dot-product.score", str(s)))
    assert wrong(check("dot-product.score", f"{s / math.sqrt(3):.3f}"), "dot-product.score.scaled")
    assert wrong(check("dot-product.score", f"{weights(X, X)[MEOK, NANEUN]:.3f}"), "dot-product.score.weight")
    assert wrong(check("dot-product.score", "3"), "dot-product.score.self")
    assert wrong(check("dot-product.score", "1"), "dot-product.score.wrong")
    bound = np.linalg.norm(X[MEOK]) * np.linalg.norm(X[NANEUN])  # |q·k| ≤ ‖q‖‖k‖
    assert wrong(check("dot-product.score", f"{bound + 0.1:.2f}"), "dot-product.score.outside")
    assert wrong(check("dot-product.score", "-5"), "dot-product.score.outside")


def test_dot_product_top_score():
    assert int(np.argmax(X[MEOK] @ X.T)) == MEOK
    assert ok(check("dot-product.top-score", MEOK))
    for j in (NANEUN, ONEUL, SAGWA):
        assert wrong(check("dot-product.top-score", j), "dot-product.top-score.wrong")


def _edit_k_solutions():
    """Single-cell edits of K that make 사과를 attend to 나는 alone, found by a small search."""
    found, others = [], []
    for r, c, v in itertools.product(range(4), range(3), (-1.0, 0.0, 1.0, 2.0, 3.0)):
        if X[r, c] == v:
            continue
        K = X.copy()
        K[r, c] = v
        row = weights(X, K)[SAGWA]
        top = [j for j in range(4) if row[j] >= row.max() - 1e-9]
        (found if top == [NANEUN] else others).append((K, top))
    return found, others


def test_dot_product_edit_k_solved_by_search():
    found, others = _edit_k_solutions()
    assert found and others
    for K, _ in found:
        fb = check("dot-product.edit-k", state("dot-product", matrices={"K": K.tolist()}))
        assert ok(fb) and fb.message_key == "dot-product.edit-k.ok"
    for K, top in others:
        fb = check("dot-product.edit-k", state("dot-product", matrices={"K": K.tolist()}))
        assert wrong(fb, "dot-product.edit-k.tie" if NANEUN in top else "dot-product.edit-k.not_top")


def test_dot_product_edit_k_wrong_states():
    assert wrong(check("dot-product.edit-k", state("dot-product")), "dot-product.edit-k.no_change")
    K = X.copy()
    K[0, 0], K[0, 1] = 3.0, 3.0
    fb = check("dot-product.edit-k", state("dot-product", matrices={"K": K.tolist()}))
    assert wrong(fb, "dot-product.edit-k.many_cells") and fb.values["n"] == 2
    K = X.copy()
    K[NANEUN, 1] = 2.0
    Q = X.copy()
    Q[SAGWA, 2] = 5.0  # a solution for K, but Q was edited too
    fb = check("dot-product.edit-k", state("dot-product", matrices={"K": K.tolist(), "Q": Q.tolist()}))
    assert wrong(fb, "common.changed_other")
    fb = check("dot-product.edit-k", state("dot-product", tokens="a b c d", matrices={"K": K.tolist()}))
    assert wrong(fb, "common.wrong_tokens")
    fb = check("dot-product.edit-k", state("dot-product", causal=True, matrices={"K": K.tolist()}))
    assert wrong(fb, "common.changed_other")


# ------------------------------------------------------------------ 3. softmax, temperature, √d_k
def test_softmax_no_scale():
    w = softmax(X[MEOK] @ X.T)[MEOK]
    assert w == pytest.approx(0.4754, abs=1e-4)
    assert ok(check("softmax-temperature.no-scale", round(w, 2)))
    assert wrong(check("softmax-temperature.no-scale", "0.37"), "softmax-temperature.no-scale.kept_scale")
    assert wrong(check("softmax-temperature.no-scale", f"{math.exp(3):.2f}"), "softmax-temperature.no-scale.no_sum")
    assert wrong(check("softmax-temperature.no-scale", "0.25"), "softmax-temperature.no-scale.uniform")
    assert wrong(check("softmax-temperature.no-scale", "3"), "softmax-temperature.no-scale.score")
    assert wrong(check("softmax-temperature.no-scale", "0.9"), "softmax-temperature.no-scale.wrong")


def test_softmax_sharp_solved_by_a_temperature_search():
    grid = [round(0.1 * i, 1) for i in range(1, 51)]  # the Playground's slider
    sharp = [T_ for T_ in grid if weights(X, X, temperature=T_)[MEOK].max() > 0.9]
    assert sharp == [0.1]
    for T_ in grid:
        fb = check("softmax-temperature.sharp", state("softmax-temperature", temperature=T_))
        if T_ in sharp:
            assert ok(fb) and fb.values["w"] > 0.9
        else:
            assert wrong(fb, "softmax-temperature.sharp.flatter" if T_ >= 1 else "softmax-temperature.sharp.not_yet")
    fb = check("softmax-temperature.sharp", state("softmax-temperature", temperature=0.3, scale="none"))
    assert wrong(fb, "common.changed_other")  # the scale sharpens too, but the task is the temperature


def test_softmax_tie_and_sqrt_dk():
    cold = weights(X, X, temperature=1e-3)[NANEUN]
    assert cold.max() == pytest.approx(0.5, abs=1e-6)  # 나는 ties with 먹었다: half each, never more
    assert ok(check("softmax-temperature.tie", "half"))
    rng = np.random.default_rng(1)
    var = {d: np.var((rng.standard_normal((4000, d)) * rng.standard_normal((4000, d))).sum(1)) for d in (4, 64)}
    assert var[64] > 8 * var[4]  # Var(q·k) grows like d_k
    assert ok(check("softmax-temperature.sqrt-dk", "variance"))


# ------------------------------------------------------------------ 4. the output
def test_weighted_sum_output():
    out = weights(X, X)[MEOK] @ X[:, 0]
    assert out == pytest.approx(0.7909, abs=1e-4)
    assert ok(check("weighted-sum.output", f"{out:.2f}"))
    assert wrong(check("weighted-sum.output", str(X[:, 0].mean())), "weighted-sum.output.mean")
    assert wrong(check("weighted-sum.output", "3"), "weighted-sum.output.sum_v")
    assert wrong(check("weighted-sum.output", "0.37"), "weighted-sum.output.only_self")
    assert wrong(check("weighted-sum.output", "1"), "weighted-sum.output.sum_w")
    assert wrong(check("weighted-sum.output", "0.5"), "weighted-sum.output.wrong")
    assert wrong(check("weighted-sum.output", "1.5"), "weighted-sum.output.outside")


def test_weighted_sum_convex_and_edit_v():
    assert ok(check("weighted-sum.convex", "no"))
    A = weights(X, X)
    found = None
    for v in np.arange(1.0, 10.0, 0.5):  # the smallest first entry of 먹었다's own value that lifts the output over 2
        V = X.copy()
        V[MEOK, 0] = v
        if (A @ V)[MEOK, 0] > 2:
            found = V
            break
    assert found is not None
    assert ok(check("weighted-sum.edit-v", state("weighted-sum", matrices={"V": found.tolist()})))
    V = X.copy()
    V[NANEUN, 0] = 3.0
    assert (A @ V)[MEOK, 0] < 2
    assert wrong(check("weighted-sum.edit-v", state("weighted-sum", matrices={"V": V.tolist()})), "weighted-sum.edit-v.not_yet")
    assert wrong(check("weighted-sum.edit-v", state("weighted-sum")), "weighted-sum.edit-v.no_change")
    K = X.copy()
    K[0, 0] = 9.0
    fb = check("weighted-sum.edit-v", state("weighted-sum", matrices={"V": found.tolist(), "K": K.tolist()}))
    assert wrong(fb, "common.changed_other")


# ------------------------------------------------------------------ 5. masks
def test_masks_causal_by_toggle_or_by_clicking_cells():
    assert ok(check("masks.causal", state("masks", causal=True)))
    cells = [[i, j] for i in range(4) for j in range(4) if j > i]
    A = weights(X, X, mask=np.tril(np.ones((4, 4), bool)))
    assert (A[np.triu_indices(4, 1)] == 0).all() and np.allclose(A.sum(1), 1)
    fb = check("masks.causal", state("masks", blocked=cells))
    assert ok(fb) and fb.values["zeros"] == len(cells)
    assert wrong(check("masks.causal", state("masks")), "masks.causal.future")
    assert wrong(check("masks.causal", state("masks", blocked=cells[:-1])), "masks.causal.future")
    assert wrong(check("masks.causal", state("masks", causal=True, pad=[0])), "masks.causal.past")
    assert wrong(check("masks.causal", state("masks", causal=True, blocked=[[2, 2]])), "masks.causal.past")
    assert wrong(check("masks.causal", state("masks", causal=True, temperature=2.0)), "common.changed_other")


def test_masks_weight_and_order():
    scaled = (X[ONEUL] @ X.T)[:2] / math.sqrt(3)  # 오늘 sees 나는 and itself
    w = softmax(scaled)[0]
    assert w == pytest.approx(0.3595, abs=1e-4)
    assert ok(check("masks.weight", f"{w:.2f}"))
    fb = check("masks.weight", f"{weights(X, X)[ONEUL, NANEUN]:.2f}")  # unmasked, or masked after the softmax
    assert wrong(fb, "masks.weight.unmasked")
    assert fb.values["after_sum"] == pytest.approx(weights(X, X)[ONEUL, :2].sum(), abs=1e-5)
    assert wrong(check("masks.weight", "0.5"), "masks.weight.half")
    assert wrong(check("masks.weight", "0.1"), "masks.weight.wrong")
    assert wrong(check("masks.weight", f"{1 - w:.2f}"), "masks.weight.self")
    assert ok(check("masks.order", "before"))


# ------------------------------------------------------------------ 6. projections
W_Q = np.array(T.lesson("projections").scenario["matrices"]["W_q"])
W_K = np.array(T.lesson("projections").scenario["matrices"]["W_k"])


def test_projections_score_top_and_shape():
    Q, K = X @ W_Q, X @ W_K
    s = float(Q[SAGWA] @ K[MEOK])
    assert ok(check("projections.score", str(s)))
    assert wrong(check("projections.score", str(float(X[SAGWA] @ X[MEOK]))), "projections.score.raw")
    assert wrong(check("projections.score", f"{s / math.sqrt(2):.3f}"), "projections.score.scaled")
    assert wrong(check("projections.score", "9"), "projections.score.outside")
    assert wrong(check("projections.score", "1"), "projections.score.wrong")
    A = weights(Q, K)
    top = int(np.argmax(A[MEOK]))
    assert top != MEOK  # the projections move 먹었다's attention away from itself
    assert ok(check("projections.top", top))
    assert wrong(check("projections.top", MEOK), "projections.top.wrong")
    assert ok(check("projections.k-shape", "x".join(map(str, K.shape))))


def test_projections_symmetric():
    # copy W_Q into W_K, or any W_K = W_Q·D with D symmetric (then W_Q·W_Kᵀ = W_Q·D·W_Qᵀ is symmetric)
    for W_k in (W_Q, 2 * W_Q, W_Q @ np.diag([1.0, 3.0])):
        S_ = (X @ W_Q) @ (X @ W_k).T
        assert np.allclose(S_, S_.T) and np.ptp(S_) > 0
        assert ok(check("projections.symmetric", state("projections", matrices={"W_k": W_k.tolist()})))
    assert ok(check("projections.symmetric", state("projections", matrices={"W_q": W_K.tolist()})))  # or W_Q := W_K
    fb = check("projections.symmetric", state("projections"))
    assert wrong(fb, "projections.symmetric.asymmetric") and fb.values["s_ab"] != fb.values["s_ba"]
    zeros = np.zeros_like(W_Q).tolist()
    assert wrong(check("projections.symmetric", state("projections", matrices={"W_q": zeros})), "projections.symmetric.flat")
    fb = check("projections.symmetric", state("projections", d_k=3, matrices={"W_k": W_Q.tolist()}))
    assert wrong(fb, "common.changed_other")


# ------------------------------------------------------------------ 7. multi-head
def test_multi_head():
    d, H, n = 8, 2, 4
    assert ok(check("multi-head.d-head", d // H))
    assert ok(check("multi-head.d-head", "4.0"))
    assert wrong(check("multi-head.d-head", "16"), "multi-head.d-head.times")
    assert wrong(check("multi-head.d-head", "8"), "multi-head.d-head.d_model")
    assert wrong(check("multi-head.d-head", "2"), "multi-head.d-head.heads")
    assert wrong(check("multi-head.d-head", "4.5"), "common.not_integer")
    assert wrong(check("multi-head.d-head", "3"), "multi-head.d-head.wrong")
    assert wrong(check("multi-head.d-head", "99"), "common.out_of_range")
    assert ok(check("multi-head.weights-shape", f"1x{H}x{n}x{n}"))
    solutions = [h for h in range(1, d + 1) if d % h == 0 and d // h == 2]
    assert solutions == [4]
    assert ok(check("multi-head.heads", {**state("multi-head"), T.MH_D_MODEL: 8, T.MH_HEADS: 4}))
    assert wrong(check("multi-head.heads", {**state("multi-head"), T.MH_D_MODEL: 8, T.MH_HEADS: 2}), "multi-head.heads.wrong_dk")
    assert wrong(check("multi-head.heads", {**state("multi-head"), T.MH_D_MODEL: 4, T.MH_HEADS: 2}), "multi-head.heads.keep_d")
    assert wrong(check("multi-head.heads", {**state("multi-head"), T.MH_D_MODEL: 8, T.MH_HEADS: 3}), "common.bad_state")
    assert wrong(check("multi-head.heads", {**state("multi-head"), T.MH_HEADS: "many"}), "common.bad_state")


# ------------------------------------------------------------------ 8. position
def test_position():
    rng = np.random.default_rng(0)
    Xr, Wq, Wk, Wv = (rng.standard_normal(s) for s in ((4, 8), (8, 8), (8, 8), (8, 8)))

    def sa(Z):
        return weights(Z @ Wq, Z @ Wk) @ (Z @ Wv)

    perm = [3, 2, 1, 0]
    assert np.allclose(sa(Xr[perm]), sa(Xr)[perm])  # permutation equivariance, independently
    assert ok(check("position.shuffle", "same"))
    assert ok(check("position.pe-value", f"{math.sin(1):.2f}"))
    assert wrong(check("position.pe-value", f"{math.sin(math.radians(1)):.3f}"), "position.pe-value.degrees")
    assert wrong(check("position.pe-value", f"{math.cos(1):.2f}"), "position.pe-value.cosine")
    assert wrong(check("position.pe-value", "1.5"), "position.pe-value.outside")
    assert wrong(check("position.pe-value", "0.5"), "position.pe-value.wrong")
    assert wrong(check("position.pe-value", "0"), "position.pe-value.pos0")  # sin(0): position 0
    for order in ("3 0 1 2", "1,0,2,3", "0 1 3 2"):
        fb = check("position.move", {**state("position"), T.PS_PERM: order, T.PS_D_KEY: 8})
        assert ok(fb) and fb.values["diff"] < 1e-5 < fb.values["diff_pe"]
    assert ok(check("position.move", {**state("position"), T.PS_PERM: "3 2 1 0", T.PS_D_KEY: 4, "seed": 7}))
    assert wrong(check("position.move", {**state("position"), T.PS_PERM: "0 1 2 3"}), "position.move.same")
    for bad in ("0 0 1 2", "abc", "0 1 2", "", 5):
        assert wrong(check("position.move", {**state("position"), T.PS_PERM: bad}), "position.move.bad_perm")
    assert wrong(check("position.move", {**state("position", tokens="a b c d"), T.PS_PERM: "3 0 1 2"}), "common.wrong_tokens")


# ------------------------------------------------------------------ 9. cross attention
def test_cross_attention():
    mats = T.lesson("cross-attention").scenario["matrices"]
    Xt, Xs = np.array(mats["X"]), np.array(mats["X_src"])
    A = weights(Xt, Xs)
    assert A.shape == (3, 4)
    assert ok(check("cross-attention.shape", "x".join(map(str, A.shape))))
    assert ok(check("cross-attention.outputs", str((A @ Xs).shape[0])))
    assert wrong(check("cross-attention.outputs", "4"), "cross-attention.outputs.keys")
    assert wrong(check("cross-attention.outputs", "12"), "cross-attention.outputs.pairs")
    assert wrong(check("cross-attention.outputs", "0"), "common.out_of_range")
    assert wrong(check("cross-attention.outputs", "7"), "cross-attention.outputs.wrong")
    assert ok(check("cross-attention.cielo", int(np.argmax(A[2]))))
    assert ok(check("cross-attention.cielo", "sky"))
    assert wrong(check("cross-attention.cielo", 0), "cross-attention.cielo.wrong")
    tied = [j for j in range(4) if A[0, j] >= A[0].max() - 1e-9]
    assert tied == [0, 1]  # vediamo = "we see": We and see tie
    for j in tied:
        assert check("cross-attention.vediamo", j).message_key == "cross-attention.vediamo.ok_tie"
    assert wrong(check("cross-attention.vediamo", 2), "cross-attention.vediamo.wrong")


def test_model_writing_against_the_model():
    """The language-model lesson's truths, from SmolLM2-135M's own numbers (numpy on its trace)."""
    pytest.importorskip("tokenizers")
    from core import pretrained
    from core.models import decoder

    try:
        m = pretrained.smollm2()
    except decoder.ModelNotInstalled:
        pytest.skip("the language model package is not installed")
    tr = m.trace(T.L12_PROMPT)
    p = np.exp(tr.logits[-1].numpy().astype(np.float64) - tr.logits[-1].numpy().max())
    p /= p.sum()
    truth = 100 * p.max()
    assert ok(check("model-writing.paris", f"{truth:.1f}"))
    assert wrong(check("model-writing.paris", f"{truth - 10:.1f}"), "model-writing.paris.wrong")
    assert wrong(check("model-writing.paris", "150"), "common.out_of_range")
    assert ok(check("model-writing.temperature", "no"))  # z / T keeps the order of z for every T > 0
    assert wrong(check("model-writing.temperature", "yes"), "model-writing.temperature.why.yes")
    A = tr.attentions.numpy()  # (30, 9, n, n)
    n = A.shape[-1]
    previous = np.stack([A[:, :, i, i - 1] for i in range(1, n)], -1).mean(-1)  # (30, 9): mean share on the token before
    l, h = np.unravel_index(np.argmax(previous), previous.shape)
    share, first = 100 * A[l, h, -1, -2], 100 * A[l, h, -1, 0]  # the last query's weight on the token before / the first
    assert abs(share - first) > 2 * 3.0  # the two answers are told apart at the ±3 tolerance
    assert ok(check("model-writing.previous", f"{share:.1f}"))
    assert wrong(check("model-writing.previous", f"{first:.1f}"), "model-writing.previous.first")
    assert wrong(check("model-writing.previous", "150"), "common.out_of_range")
    assert wrong(check("model-writing.previous", f"{(share + first) / 2:.1f}"), "model-writing.previous.wrong")


# ------------------------------------------------------------------ reveals
@pytest.mark.parametrize("ex", ALL, ids=lambda e: e.id)
def test_reveal_passes_its_own_check(ex):
    r = ex.reveal()
    assert_has_text(r)
    assert r.message_key == ex.reveal_key
    lesson_id = T.lesson_of(ex.id).id
    if ex.kind == "make_it_so":
        st = {**state(lesson_id, matrices=r.answer.get("matrices", {})),
              **{k: v for k, v in r.answer.items() if k != "matrices"}}
        assert ok(check(ex.id, st))
    else:
        assert ok(check(ex.id, r.answer if ex.kind != "number" else str(r.answer)))


# ------------------------------------------------------------------ progress in the URL
ALL_IDS = [lesson.id for lesson in T.LESSONS] + [ex.id for ex in ALL]


def test_progress_order_lists_every_id_once():
    """Every lesson and exercise once; retired exercises keep their places (old links decode) and are dropped."""
    assert sorted(T.PROGRESS_ORDER) == sorted(ALL_IDS + sorted(T.RETIRED))
    assert len(set(T.PROGRESS_ORDER)) == len(T.PROGRESS_ORDER) and not T.RETIRED & set(ALL_IDS)


def test_a_link_with_a_retired_exercise_keeps_the_rest_of_its_progress():
    order = T.PROGRESS_ORDER
    bits = sum(1 << order.index(name) for name in ("rope", "rope.shift", "rope.angle", "model-writing.sink"))
    raw = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
    code = "1" + __import__("base64").urlsafe_b64encode(raw).decode().rstrip("=")
    assert T.decode_progress(code) == {"rope", "rope.angle"}
    assert T.decode_progress(T.encode_progress({"rope.shift", "rope.shift-score"})) == {"rope.shift-score"}


def test_progress_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(50):
        done = {i for i in ALL_IDS if rng.random() < 0.4}
        code = T.encode_progress(done)
        assert re.fullmatch(r"[A-Za-z0-9_-]*", code) and len(code) <= T.MAX_PROGRESS_CHARS
        assert T.decode_progress(code) == done
    assert T.encode_progress(set()) == "" and T.decode_progress("") == set()
    assert T.decode_progress(T.encode_progress(set(ALL_IDS))) == set(ALL_IDS)
    assert T.decode_progress(T.encode_progress({"masks", "no-such-lesson", 7})) == {"masks"}


def test_progress_garbage_never_raises():
    for code in [None, 123, b"1AAA", [], "x", "1!!!", "2AAAA", "1" + "A" * 200, "1A", "1A=", "1 AB", "1\n", "１AB",
                 "%%%", "1" + "_" * 63]:
        got = T.decode_progress(code)
        assert isinstance(got, set) and got <= set(ALL_IDS)
    assert T.decode_progress("1" + "_" * 63) <= set(ALL_IDS)  # every bit set, past the known ids too: only known ids
    assert T.decode_progress("1" + "A" * 200) == set()  # too long


# ------------------------------------------------------------------ every feedback message is reachable
LESSON_TESTS = [
    test_model_writing_against_the_model,
    test_weighted_average_weight, test_weighted_average_top_accepts_either_tied_key, test_dot_product_score,
    test_dot_product_top_score, test_dot_product_edit_k_solved_by_search, test_dot_product_edit_k_wrong_states,
    test_softmax_no_scale, test_softmax_sharp_solved_by_a_temperature_search, test_weighted_sum_output,
    test_weighted_sum_convex_and_edit_v, test_masks_causal_by_toggle_or_by_clicking_cells, test_masks_weight_and_order,
    test_projections_score_top_and_shape, test_projections_symmetric, test_multi_head, test_position, test_cross_attention,
]


# ------------------------------------------------------------------ lessons 10–11 (issue 22): KV cache with GQA, RoPE
def test_kv_cache_bytes_per_token_by_hand():
    ex = T.exercise("kv-cache.bytes")
    assert ok(check(ex.id, "128"))  # 2 × 32 × 8 × 128 × 2 bytes = 131072 B = 128 KiB
    assert check(ex.id, "512").message_key == "kv-cache.bytes.mha"  # G = H = 32
    assert check(ex.id, "64").message_key == "kv-cache.bytes.keys_only"
    assert check(ex.id, "256").message_key == "kv-cache.bytes.fp32"
    assert check(ex.id, "100").message_key == "kv-cache.bytes.wrong"
    assert ex.reveal().answer == 2 * 32 * 8 * 128 * 2 / 1024


def test_kv_cache_group_and_keys():
    ex = T.exercise("kv-cache.group")
    assert ok(check(ex.id, "1"))  # H = 8, G = 2: heads 4–7 read K/V head 1
    assert check(ex.id, "5").message_key == "kv-cache.group.why.5"
    keys = T.exercise("kv-cache.keys")
    assert ok(check(keys.id, "3"))  # token 2 (counted from 0) sees tokens 0, 1, 2
    assert check(keys.id, "4").message_key == "kv-cache.keys.all" and check(keys.id, "2").message_key == "kv-cache.keys.before"
    assert check(keys.id, "7").message_key == "kv-cache.keys.wrong"


def test_kv_cache_size_on_the_panel_by_hand():
    """The panel's cache (G = 1 K/V head of d_head = 8 / 2) after token 2 is fed in: 3 keys and 3 values of 4 numbers."""
    ex = T.exercise("kv-cache.size")
    assert ok(check(ex.id, "24"))
    assert check(ex.id, "12").message_key == "kv-cache.size.keys_only"
    assert check(ex.id, "16").message_key == "kv-cache.size.before"
    assert check(ex.id, "32").message_key == "kv-cache.size.all"
    assert check(ex.id, "20").message_key == "kv-cache.size.wrong"


def test_delta_rule_erase_in_numpy():
    """Token 1 written by the delta rule with β = 1 into the panel's state (numpy from the same projections): S₁ᵀk₁ is
    v₁ itself; the old reading S₀ᵀk₁ is erased."""
    import numpy as np

    X = core.tokens.embed(list(core.tokens.C18_TOKENS), 8, seed=0).numpy().astype(np.float64)
    q, k, v = (X @ core.tokens.projection(8, 4, seed=0, name=f"dr.{w}").numpy() for w in ("W_q", "W_k", "W_v"))
    k = k / np.linalg.norm(k, axis=1, keepdims=True)
    S = np.zeros((4, 4))
    for t in range(2):
        before = S.T @ k[t]
        S = S + np.outer(k[t], v[t] - before)
    ex = T.exercise("delta-rule.erase")
    assert abs((S.T @ k[1])[0] - v[1, 0]) < 1e-9
    assert ok(check(ex.id, f"{v[1, 0]:.3f}"))
    assert check(ex.id, f"{before[0]:.3f}").message_key == "delta-rule.erase.before"
    assert check(ex.id, f"{before[0] + v[1, 0]:.3f}").message_key == "delta-rule.erase.add"
    assert check(ex.id, f"{v[1, 0] + 1:.3f}").message_key == "delta-rule.erase.wrong"


def test_rope_exercises_against_numpy():
    import numpy as np

    theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    ex = T.exercise("rope.angle")
    assert ok(check(ex.id, f"{theta[1]:.3f}")) and abs(theta[1] - 0.1) < 1e-12
    assert check(ex.id, "1").message_key == "rope.angle.pair0"
    assert check(ex.id, f"{10000 ** (-1 / 8):.3f}").message_key == "rope.angle.odd"
    # the predictions: a rotation in numpy of each pair (2i, 2i + 1) by position · θ_i
    def rot(x, m):
        out = x.copy()
        c, s = np.cos(m * theta), np.sin(m * theta)
        out[0::2], out[1::2] = x[0::2] * c - x[1::2] * s, x[0::2] * s + x[1::2] * c
        return out

    # one pair (d = 2: θ₀ = 1 radian per position), q = (1, 0) at 12 and k = (2, 0) at 10: the score is 1 · 2 · cos(2),
    # computed by the learner (the prompt prints no score); only the distance counts
    def turn(x, m):
        return np.array([x[0] * np.cos(m) - x[1] * np.sin(m), x[0] * np.sin(m) + x[1] * np.cos(m)])

    q, k = np.array([1.0, 0.0]), np.array([2.0, 0.0])
    moved = turn(q, 12) @ turn(k, 10)
    assert abs(moved - 2 * np.cos(2)) < 1e-12 and abs(moved - turn(q, 2) @ turn(k, 0)) < 1e-12
    assert ok(check("rope.shift-score", f"{moved:.4f}"))
    assert "score" not in T.text("rope.shift-score.prompt", "en").split("What")[0]  # no score to copy
    assert check("rope.shift-score", f"{q @ k:.4f}").message_key == "rope.shift-score.no_rope"
    assert check("rope.shift-score", f"{turn(q, 12) @ k:.4f}").message_key == "rope.shift-score.only_q"
    assert check("rope.shift-score", f"{moved + 0.5:.4f}").message_key == "rope.shift-score.wrong"
    # q = (2, 1, 2, 4): ‖q‖ = 5 before and after the turn (the prompt gives q, not its length)
    q4 = np.array([2.0, 1.0, 2.0, 4.0])
    norm = float(np.linalg.norm(q4))
    assert abs(norm - 5.0) < 1e-12 and "‖q‖ =" not in T.text("rope.length-value.prompt", "en").split("What")[0]
    assert ok(check("rope.length-value", f"{norm:.3f}"))
    assert check("rope.length-value", f"{norm * 10:.3f}").message_key == "rope.length-value.grows"
    assert check("rope.length-value", "25").message_key == "rope.length-value.squared"
    assert check("rope.length-value", "9").message_key == "rope.length-value.sum"
    assert check("rope.length-value", f"{norm / 2:.3f}").message_key == "rope.length-value.wrong"
    assert check(ex.id, "0.001").message_key == "rope.angle.last" and check(ex.id, "0.5").message_key == "rope.angle.wrong"


def test_old_progress_links_keep_their_meaning():
    """The new ids are appended: a code written before them decodes to the same ids."""
    old = T.PROGRESS_ORDER[:T.PROGRESS_ORDER.index("cross-attention.outputs") + 1]
    done = {"weighted-average", "masks.causal", "cross-attention.outputs"}
    bits = sum(1 << old.index(name) for name in done)
    raw = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
    code = "1" + __import__("base64").urlsafe_b64encode(raw).decode().rstrip("=")
    assert T.decode_progress(code) == done
    assert T.decode_progress(T.encode_progress(done | {"rope.angle"})) == done | {"rope.angle"}


def test_mla_cache_exercises_by_hand():
    """DeepSeek-V3 (config.json: 128 heads, d_h 128, kv_lora_rank 512, qk_rope_head_dim 64): 2·128·128 = 32768
    numbers per token and layer with multi-head attention, 576 with MLA, 56.9× fewer."""
    ex = T.exercise("mla-cache.mha")
    assert ok(check(ex.id, "32768"))
    assert check(ex.id, "16384").message_key == "mla-cache.mha.keys_only"
    assert check(ex.id, "576").message_key == "mla-cache.mha.latent"
    assert check(ex.id, "1000").message_key == "mla-cache.mha.wrong"
    ratio = T.exercise("mla-cache.ratio")
    assert ok(check(ratio.id, "56.9")) and abs(32768 / 576 - 56.89) < 0.01
    assert check(ratio.id, "64").message_key == "mla-cache.ratio.no_rope"  # 32768 / 512
    assert check(ratio.id, "10").message_key == "mla-cache.ratio.wrong"
    # the absorbed query q_C W_UKᵀ reads the latent: d_c = 576 − 64 = 512 entries (the prompt gives 576 and 64, not 512)
    absorbed = T.exercise("mla-cache.absorbed-width")
    assert ok(check(absorbed.id, "512")) and "512" not in T.text(absorbed.prompt_key, "en", **absorbed.prompt_values)
    assert check(absorbed.id, "128").message_key == "mla-cache.absorbed-width.not_absorbed"
    assert check(absorbed.id, "576").message_key == "mla-cache.absorbed-width.whole_row"
    assert check(absorbed.id, "500").message_key == "mla-cache.absorbed-width.wrong"
    # the panel's layer (d_model 8, H 2, d_h 4, d_c 4, d_R 2): keys 2·(4 + 2) = 12 numbers a token against 4 + 2 cached
    panel = T.exercise("mla-cache.panel")
    assert ok(check(panel.id, "2")) and check(panel.id, "3").message_key == "mla-cache.panel.latent_only"
    assert check(panel.id, f"{(12 + 8) / 6:.2f}").message_key == "mla-cache.panel.with_values"
    assert check(panel.id, "1").message_key == "mla-cache.panel.wrong"


def test_delta_rule_exercises_by_hand():
    """Qwen3-Next's Gated DeltaNet: 32 value heads × 128 × 128; the read-back after two writes worked out by hand:
    S = 2 after the first write (β = 1), then 2 + ½ (6 − 2) = 4; linear attention would give 2 + ½·6 = 5."""
    ex = T.exercise("delta-rule.state")
    assert ok(check(ex.id, "524288"))
    assert check(ex.id, "16384").message_key == "delta-rule.state.one_head"
    assert check(ex.id, "4096").message_key == "delta-rule.state.vector"
    assert check(ex.id, "7").message_key == "delta-rule.state.wrong"
    read = T.exercise("delta-rule.read")
    assert ok(check(read.id, "4"))
    assert check(read.id, "6").message_key == "delta-rule.read.replace"
    assert check(read.id, "5").message_key == "delta-rule.read.add"
    assert check(read.id, "3").message_key == "delta-rule.read.wrong"
    special = T.exercise("delta-rule.special")
    assert ok(check(special.id, "linear")) and special.reveal().answer == "linear"
    assert check(special.id, "softmax").message_key == "delta-rule.special.why.softmax"


def test_kept_per_token_exercises_by_hand():
    """DeepSeek-V4-Flash's CSA beyond the window: 512/4 + 128/4 = 160 a token and layer (128 without the indexer's key,
    4 for HCA, 512 for a whole entry); only Mamba-2 of the choices stays flat; Qwen3.5-27B's head state 128 × 128."""
    ex = T.exercise("kept-per-token.csa")
    assert ok(check(ex.id, "160"))
    assert check(ex.id, "128").message_key == "kept-per-token.csa.no_index"
    assert check(ex.id, "4").message_key == "kept-per-token.csa.hca"
    assert check(ex.id, "512").message_key == "kept-per-token.csa.whole"
    assert check(ex.id, "7").message_key == "kept-per-token.csa.wrong"
    flat = T.exercise("kept-per-token.flat")
    assert ok(check(flat.id, "mamba2")) and flat.reveal().answer == "mamba2"
    assert check(flat.id, "qwen3.5-27b").message_key == "kept-per-token.flat.why.qwen3.5-27b"
    head = T.exercise("kept-per-token.head-state")
    assert ok(check(head.id, "16384"))
    assert check(head.id, "256").message_key == "kept-per-token.head-state.sum"
    assert check(head.id, str(16 * 2 * 128 * 128)).message_key == "kept-per-token.head-state.all_heads"  # 32 value heads
    assert check(head.id, "7").message_key == "kept-per-token.head-state.wrong"


LESSON_TESTS += [test_kv_cache_bytes_per_token_by_hand, test_kv_cache_group_and_keys, test_rope_exercises_against_numpy]
LESSON_TESTS += [test_mla_cache_exercises_by_hand, test_delta_rule_exercises_by_hand, test_kv_cache_size_on_the_panel_by_hand,
                 test_delta_rule_erase_in_numpy, test_kept_per_token_exercises_by_hand]


def test_every_declared_feedback_is_produced_by_some_answer():
    SEEN.clear()
    for f in LESSON_TESTS:
        f()
    for ex in ALL:
        if ex.kind in ("predict", "choice"):
            for a in range(4) if ex.kind == "predict" else ex.options:
                check(ex.id, a)
    for ex in ALL:
        if ex.kind == "predict":  # right answers: "ok" where the top key is unique, "ok_tie" where keys tie
            assert f"{ex.id}.ok" in SEEN or f"{ex.id}.ok_tie" in SEEN
    declared = {k for ex in ALL for k in ex.message_keys
                if ".opt." not in k and ".why." not in k and not (ex.kind == "predict" and k.endswith((".ok", ".ok_tie")))}
    missing = declared - set(SEEN) - {"position.move.no_set"}  # no_set: self-attention never breaks equivariance
    assert not missing, missing
    for ex in ALL:  # the prompt, hint and options format with the prompt values
        for k in (ex.prompt_key, ex.hint_key, *(ex.option_key(o) for o in ex.options)):
            EN[k].format(**ex.prompt_values)
            KO[k].format(**ex.prompt_values)


def test_a_make_it_so_names_the_other_control_that_changed():
    ex = T.exercise("softmax-temperature.sharp")
    # exercise 2 done as told (scale "none"), left on the panel: exercise 3's right temperature is refused, naming the scale
    fb = check(ex.id, state("softmax-temperature", scale="none", temperature=0.1))
    assert wrong(fb, "common.changed_other") and fb.values["changed"] == ("scale",)
    fb = check(ex.id, state("softmax-temperature", temperature=0.1, matrices={"X": [[9.0, 0, 0]] * 4}))
    assert wrong(fb, "common.changed_other") and fb.values["changed"] == ("matrices.X",)
    assert check(ex.id, state("softmax-temperature", temperature=0.1, query=0)).ok  # the picked query changes no number


def test_the_multi_head_shape_options_are_explained_by_what_makes_them():
    right, vals = T.lessons._l7_shape()
    assert right == "1x2x4x4"
    assert vals["heads_last"] == "(1, 4, 2, 4)" and vals["no_transpose"] == "(1, 4, 2, 2)"
    assert vals["averaged"] == "(1, 4, 4)" and vals["view_only"] == "(1, 2, 4, 4)" and vals["view_gap"] > 1e-3
    text = T.text("multi-head.weights-shape.why.1x4x2x4", "en", **vals)
    assert "(1, 4, 2, 2)" in text and "missing transpose gives something else" in text


def test_the_teachers_table_lists_what_the_lessons_cover():
    from ui import nav

    assert set(T.CURRICULUM) == {lesson.id for lesson in T.LESSONS}
    listed = nav.PAGE_BY_NAME["tutorial"].curriculum
    assert listed == nav.id_ranges(c for ids in T.CURRICULUM.values() for c in ids)
    for missing in ("C7", "C8", "C9", "C14", "C17", "C19", "C22", "C25", "C26"):  # the list: not taught
        assert missing not in {c for ids in T.CURRICULUM.values() for c in ids}
    assert "C1–C27" not in listed and nav.id_ranges(["C1", "C2", "C3", "C5", "C7", "C8"]) == "C1–C3, C5, C7–C8"


def test_a_lesson_shows_no_two_way_particle():
    """The lesson files write a particle after a name with a digit two-way (Qwen3-Next이(가)); the text a learner
    reads has it chosen by how the name reads (Qwen3-Next가, DeepSeek-V2와, Kimi K2가)."""
    two_way = re.compile(r"은\(는\)|이\(가\)|과\(와\)|을\(를\)|\(으\)로")
    for lesson in T.LESSONS:
        for lang in ("en", "ko"):
            assert not two_way.search(T.lesson_markdown(lesson.id, lang)), (lesson.id, lang)
    text = T.lesson_markdown("delta-rule", "ko")
    assert "Qwen3-Next가 네 층 중" in text
    mla_text = T.lesson_markdown("mla-cache", "ko")
    assert "DeepSeek-V2와 함께" in mla_text and "Kimi K2가 쓰는" in mla_text
