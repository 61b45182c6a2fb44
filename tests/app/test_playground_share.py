"""AppTest: the configuration lives in the URL; links and scenario files restore it."""

from __future__ import annotations

import re

import numpy as np

import core
from attention_lab import scenario
from core import masks, tokens
from ui import state

from .helpers import PG_WEIGHTS, address, close, edit, heat, open_tab, page, pg_map

C18_X = tokens.c18_embedding().numpy()


def test_settings_and_scenario_are_mirrored_into_the_url():
    at = page()
    open_tab(at, "mask")
    at.checkbox(key=state.SCENARIO.causal).check().run()
    open_tab(at, "score")
    at.radio(key=state.SCENARIO.score).set_value("cosine").run()
    open_tab(at, "embed")
    edit(at, "X", {0: {"d0": 2.0}})
    q = address(at)
    assert q["causal"] == "1"
    assert q["score"] == "cosine"
    assert "m_X" in q and "lang" in q and "seed" in q


def test_a_shared_link_reproduces_the_view():
    src = page()
    open_tab(src, "qkv")
    src.radio(key=state.SCENARIO.qkv).set_value("projection").run()
    src.slider(key=state.SCENARIO.d_k).set_value(2).run()
    open_tab(src, "mask")
    src.checkbox(key=state.SCENARIO.causal).check().run()
    open_tab(src, "embed")
    edit(src, "X", {1: {"d2": -1.0}})
    dst = page(query=address(src))
    assert not dst.exception and not dst.warning
    for key in (pg_map("scores"), PG_WEIGHTS, pg_map("output")):
        close(heat(dst, key), heat(src, key), tol=1e-9)
    # and the numbers are core's
    X = C18_X.copy()
    X[1, 2] = -1.0
    W_q, W_k, W_v = (tokens.projection(3, d, seed=0, name=n) for d, n in ((2, "W_q"), (2, "W_k"), (3, "W_v")))
    ref = core.attention(X @ W_q.numpy(), X @ W_k.numpy(), X @ W_v.numpy(), mask=masks.causal(4))
    close(heat(dst, PG_WEIGHTS), ref.weights)


def test_scenario_json_round_trip_restores_values_and_matrices():
    values = dict(scenario.DEFAULTS, score="general", causal=True, pad=[1], blocked=[[3, 0]], temperature=0.5)
    mats = {"X": [[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]], "w_a": [[0.5], [1.0]]}
    text = scenario.to_json(values, mats, {"lang": "ko"})
    v2, m2, s2, refused = scenario.from_json(text.encode())
    assert refused == [] and s2 == {"lang": "ko"}
    assert v2 == values and m2 == mats


def test_the_url_form_round_trips():
    values = dict(scenario.DEFAULTS, tokens="a <b> c", mode="cross", blocked=[[0, 1], [2, 2]], pad=[0, 3])
    mats = {"W_q": [[1.5, -2.0]]}
    v2, m2, refused = scenario.from_query(scenario.to_query(values, mats))
    assert refused == [] and v2 == values and m2 == mats


def test_malformed_scenario_files_are_refused_with_reasons():
    import pytest

    for data, key in [(b"\xff\xfe", "err.upload_json"), (b"{not json", "err.upload_json"),
                      (b'{"app": "other"}', "err.upload_kind"), (b"[]", "err.upload_kind"),
                      (b" " * (scenario.MAX_JSON_BYTES + 1), "err.upload_size")]:
        with pytest.raises(scenario.ScenarioError, match=f"^{re.escape(key)}$") as err:  # the message is the i18n key
            scenario.from_json(data)
        assert err.value.key == key
    doc = b'{"app": "attention-lab", "playground": {"d_k": 99, "score": "evil", "matrices": {"X": [[1, "a"]], "Z": [[1]]}}}'
    values, mats, _, refused = scenario.from_json(doc)
    assert set(refused) == {"d_k", "score", "matrices.X", "matrices.Z"}
    assert values["d_k"] == scenario.DEFAULTS["d_k"] and mats == {}


def test_validate_matrix_rejects_ragged_nonfinite_and_huge():
    assert scenario.validate_matrix([[1, 2], [3]]) is None
    assert scenario.validate_matrix([[1, float("nan")]]) is None
    assert scenario.validate_matrix([[1e7]]) is None
    assert scenario.validate_matrix([[True]]) is None
    assert scenario.validate_matrix([1, 2]) == [[1.0], [2.0]]


def test_csv_export_holds_cores_numbers():
    import io

    import pandas as pd

    from ui.export import tidy_csv as _csv

    tr = core.lab.playground(C18_X, mask=masks.causal(4))
    df = pd.read_csv(io.StringIO(_csv(tr, ["0 a", "1 b", "2 c", "3 d"], ["0 a", "1 b", "2 c", "3 d"])))
    w = df[df.matrix == "weights"].pivot(index="row", columns="column", values="value").to_numpy(dtype=float)
    close(w, tr.attn.weights)
    logits = df[(df.matrix == "logits") & (df.row == "0 a") & (df.column == "1 b")].value.iloc[0]
    assert np.isneginf(float(logits))
