r"""The guided tutorial: lessons, exercises and the checks that grade them — no Streamlit (the page is
``app_pages/tutorial.py``). Modules: :mod:`.exercises` (answers, exercise and lesson types, a panel
state's numbers), :mod:`.lessons` (the lessons and their judges, computed with core), :mod:`.text`
(strings, lesson markdown, the progress code).

Eleven lessons follow the self-study path (weighted average → scores → softmax and temperature →
output → masks → projections → multi-head → position → cross attention → the KV cache with
grouped-query attention → RoPE), then a real model writing, MLA's latent cache and the delta rule. Each :class:`Lesson`
names a scenario (a dict in the format of ``attention_lab.scenario.DEFAULTS``; only what differs from
the defaults), the live panel it wants (:data:`PANELS`) and its exercises.

Every :class:`Exercise` is graded by a function of its own that recomputes the truth with core
(:func:`scenario_trace`: ``attention_lab.scenario.build`` → :func:`core.lab.playground`;
:func:`core.multi_head_attention`, :func:`core.lab.permutation_check`, …), never by comparing text. ``exercise.check(answer)``
always returns a :class:`Feedback` — never raises — whatever the answer is:

* ``number``     answer: str | int | float (the learner's text; "0,21" is read as 0.21)
* ``predict``    answer: int key index (0-based; a digit string or the key's token also works)
* ``choice``     answer: str option id (one of ``exercise.options``)
* ``make_it_so`` answer: a mapping, the state of the live panel — the scenario values
  (``ui.scenario_state.values()``), ``"matrices"`` (the learner's edited matrices by name, as the share
  link carries them), ``"seed"`` (the settings seed) and the panel keys listed in
  ``exercise.needs`` that are not scenario names (:data:`MH_D_MODEL`, :data:`MH_HEADS`, :data:`PS_D_KEY`,
  :data:`PS_PERM`: the multi-head and position controls). ``needs`` names what the learner is meant
  to change; ``"matrices.K"`` means the K matrix. A state that changed anything else is answered ``common.changed_other``.

Text lives in ``assets/lessons``: ``<lesson-id>.<lang>.md`` and ``exercises.<lang>.json``
(prompts, hints, feedback; ``{placeholders}`` take the Feedback's ``values`` through
``str.format``). :func:`text` looks a key up with a fallback to English.
"""

from __future__ import annotations

from .exercises import (
    KINDS,
    MH_D_MODEL,
    MH_HEADS,
    PANELS,
    PS_D_KEY,
    PS_PERM,
    TEMPERATURE_GRID,
    Exercise,
    Feedback,
    Lesson,
    LessonTrace,
    Reveal,
    parse_index,
    parse_number,
    scenario_trace,
)
from .lessons import (
    CONCEPTS,
    CURRICULUM,
    DR_PANEL,
    KV_PANEL,
    L1,
    L2,
    L3,
    L4,
    L5,
    L6,
    L7,
    L8,
    L9,
    L10,
    L11,
    L12,
    L12_PRESET,
    L12_PROMPT,
    LESSONS,
    MH_D,
    MH_H,
    MLA_PANEL,
    PS_D,
    ROPE_BASE,
    ROPE_D,
    ROPE_PAIR,
    exercise,
    lesson,
    lesson_of,
)
from .text import (
    LANGS,
    MAX_PROGRESS_CHARS,
    PROGRESS_ORDER,
    RETIRED,
    decode_progress,
    encode_progress,
    lesson_markdown,
    lesson_title,
    placeholders,
    text,
)

__all__ = [
    "CONCEPTS", "CURRICULUM", "KINDS", "L1", "L2", "L3", "L4", "L5", "L6", "L7", "L8", "L9", "L10", "L11", "L12",
    "L12_PRESET", "L12_PROMPT", "KV_PANEL", "MLA_PANEL", "DR_PANEL",
    "ROPE_BASE", "ROPE_D", "ROPE_PAIR", "LANGS", "LESSONS", "MAX_PROGRESS_CHARS", "MH_D",
    "MH_D_MODEL", "MH_H", "MH_HEADS", "PANELS",
    "PROGRESS_ORDER", "RETIRED", "PS_D", "PS_D_KEY", "PS_PERM", "TEMPERATURE_GRID", "Exercise", "Feedback", "Lesson",
    "LessonTrace", "Reveal", "decode_progress", "encode_progress", "exercise", "lesson", "lesson_markdown", "lesson_of",
    "lesson_title", "parse_index", "parse_number", "placeholders", "scenario_trace", "text",
]
