"""A live class: the server's one store of classes, and the questions and students' work computed from a scenario."""

from __future__ import annotations

import streamlit as st

from attention_lab import scenario

from .. import memo
from .common import HOUR


@st.cache_resource(show_spinner=False)
def class_store():
    """The live classes' store, once per server: SQLite (a file, the default) or Redis (``ATTN_LAB_STORE``)."""
    from attention_lab.live.store import open_store

    return open_store()


@memo.cached(max_entries=64, ttl=HOUR)
def class_question(qid: str, kind: str, state: dict, seed: int, query: int, key: int) -> dict:
    """A question about the scenario ``state`` (the teacher's), with its right answer from core's weights."""
    from attention_lab import tutorial
    from attention_lab.live import classes

    return classes.question(qid, kind, tutorial.scenario_trace(state, seed=seed), query, key)


@memo.cached(max_entries=64, ttl=HOUR)
def class_work(query: dict, seed: int):
    """A student's work (their Playground scenario's link parameters and seed) → its numbers, as the Playground
    computes them (``attention_lab.tutorial.scenario_trace``: a LessonTrace, weights (n_q, n_k)).

    Raises ValueError when core cannot compute the scenario."""
    from attention_lab import tutorial

    values, matrices, _ = scenario.from_query(query)
    return tutorial.scenario_trace(values | {"matrices": matrices, "seed": seed}, seed=seed)
