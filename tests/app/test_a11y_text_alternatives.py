"""Text alternatives beyond the small maps (WCAG 1.1.1, 1.3.1, 2.1.1): a large map's (over 64 tokens)
accessible name, summary table, CSV of every value and cell picker; the query inspector's bars as
tables; the high-contrast setting's cell text. Numbers are checked against core (the browser side:
tests/browser/test_a11y_*)."""

from __future__ import annotations

import base64
import csv
import io
import json

import numpy as np

import core
from attention_lab import colours
from attention_lab.bars_spec import TABLE_KEYS, stacked_contributions, weight_bars
from attention_lab.heatmap_spec import SUMMARY_TOP, TABLE_LIMIT, heatmap, map_csv, top_columns
from core import tokens
from ui import state
from ui.i18n import table

from .helpers import PG_WEIGHTS, element_of, inspector, no_errors, open_tab, page, panels, spec


def _tokens(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def _core_weights(n: int, **kw) -> np.ndarray:
    X, _ = core.lab.c18_lookup([f"w{i}" for i in range(n)], fallback_seed=0)
    return core.attention(X, X, X, **kw).weights.numpy()


def _companion(at, key: str) -> dict:
    return json.loads(element_of(at, state.item(key, "a11y"))[1].proto.json)


def test_top_columns_is_a_stable_sort_cut_to_k_including_ties_and_infinities():
    """The summary's top-k (a partition, whole-row sorts only where ties reach the k-th value) equals the
    stable full sort: ties by the first column first, −∞ (masked) last, +∞ first."""
    rng = np.random.default_rng(11)
    for trial in range(800):
        r, c, k = int(rng.integers(1, 30)), int(rng.integers(1, 50)), int(rng.integers(1, 5))
        kind = trial % 4
        if kind == 0:
            a = rng.normal(size=(r, c))
        elif kind == 1:  # rounded: ties
            a = np.round(rng.normal(size=(r, c)), 1)
        elif kind == 2:  # few values: many ties
            a = rng.integers(0, 3, size=(r, c)).astype(float)
        else:  # masked cells, and a few infinite scores
            a = rng.normal(size=(r, c))
            a[rng.random((r, c)) < 0.6] = -np.inf
            a[rng.random((r, c)) < 0.05] = np.inf
        np.testing.assert_array_equal(top_columns(a, k), np.argsort(-a, axis=1, kind="stable")[:, :k])


def test_a_large_maps_summary_is_each_rows_largest_values_as_core_computes_them():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(70, 90))
    z[5, 7] = z[5, 8] = z[5].max() + 1  # a tie: the first column comes first
    neg = np.zeros(z.shape, dtype=bool)
    neg[2, :88] = True  # only two finite cells left in row 2: −∞ fills its third place
    spec = heatmap(z, x_labels=[f"k{j}" for j in range(90)], y_labels=[f"q{i}" for i in range(70)],
                   x_title="key", y_title="query", neg_inf=neg, decimals=3)
    s = spec["summary"]
    assert not s["all"] and len(s["cols"]) == 70 and all(len(r) == SUMMARY_TOP for r in s["cols"])
    shown = np.round(z, 3)
    for i in (0, 1, 40, 69):
        want = np.argsort(-shown[i], kind="stable")[:SUMMARY_TOP]
        assert s["cols"][i] == want.tolist()
        assert s["text"][i] == [f"{shown[i, j]:.3f}" for j in want]
    assert s["cols"][5][:2] == [7, 8]
    assert s["text"][2][2] == "−∞" and s["masked"][2] == 88 and s["masked"][0] == 0
    narrow = heatmap(z[:, :3].repeat(30, axis=0), x_labels=["v0", "v1", "v2"], y_labels=[str(i) for i in range(2100)],
                     x_title="dim", y_title="query")
    assert narrow["summary"]["all"] and narrow["summary"]["cols"] is None
    assert narrow["summary"]["text"][1] == [f"{v:.3f}" for v in np.round(z[0, :3], 3)]
    small = heatmap(z[:TABLE_LIMIT, :TABLE_LIMIT], x_labels=[str(j) for j in range(64)],
                    y_labels=[str(i) for i in range(64)], x_title="k", y_title="q")
    assert "summary" not in small  # a canvas map has its full table already


def test_a_large_maps_csv_holds_every_value_as_shown():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(66, 70))
    neg = np.triu(np.ones(z.shape, dtype=bool), 1)
    ys, xs = [f"{i} q,{i}" for i in range(66)], [f"k{j}" for j in range(70)]
    spec = heatmap(np.where(neg, 0.0, z), x_labels=xs, y_labels=ys, x_title="key", y_title="query", neg_inf=neg,
                   decimals=2)
    rows = list(csv.reader(io.StringIO(map_csv(spec))))
    assert rows[0] == ["query \\ key", *xs]
    assert [r[0] for r in rows[1:]] == ys  # a comma in a label stays in its cell
    got = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    np.testing.assert_array_equal(np.isneginf(got), neg)
    np.testing.assert_allclose(got[~neg], np.round(z, 2)[~neg], atol=1e-12)


def test_the_playground_at_80_tokens_names_its_large_maps_and_offers_summary_csv_and_a_cell_picker():
    at = page()
    at.text_input(key=state.SCENARIO.tokens).input(_tokens(80)).run()
    no_errors(at)
    W = _core_weights(80)
    plot = element_of(at, PG_WEIGHTS)[1]
    assert "80 × 80" in plot.proto.alt and table("en")["step.weights"] in plot.proto.alt  # role=figure's name
    data = _companion(at, PG_WEIGHTS)
    assert data["large"] and data["clickable"]  # a click on the weights picks a query: the picker does it
    shown = np.round(W, 6)
    for i in (0, 17, 79):
        top = np.argsort(-shown[i], kind="stable")[:SUMMARY_TOP]
        assert data["summary"]["cols"][i] == top.tolist()
        np.testing.assert_allclose([float(v) for v in data["summary"]["text"][i]], W[i, top], atol=6e-7)
    assert "z" not in data and "rgb" not in data  # the values themselves are the plotly image's and the CSV's
    downloads = [d for d in at.get("download_button") if d.proto.id.endswith(state.item(PG_WEIGHTS, "csv"))]
    assert len(downloads) == 1
    scores = _companion(at, state.item(state.PLAYGROUND.pipeline, "scores"))
    assert not scores["clickable"]  # a map that takes no clicks has no picker
    open_tab(at, "mask")
    mask = _companion(at, state.PLAYGROUND.chart_mask)
    assert mask["clickable"] and mask["summary"]["masked"] == [0] * 80


def test_the_payload_of_a_large_maps_text_alternative_is_bounded_at_512_tokens():
    at = page()
    at.text_input(key=state.SCENARIO.tokens).input(_tokens(512)).run()
    no_errors(at)
    sizes = {}
    for step in ("scores", "scaled", "masked", "weights", "output"):
        key = state.item(state.PLAYGROUND.pipeline, step)
        sizes[step] = (len(element_of(at, state.item(key, "a11y"))[1].proto.json), len(element_of(at, key)[1].proto.spec))
    # a 512 × 512 map's summary with its labels: under 48 kB, against about 1.5 MB for its plotly image
    for step, (alt, image) in sizes.items():
        assert alt < 48_000, (step, alt)
        assert alt < 0.05 * image or step == "output", (step, alt, image)
    assert sizes["output"][0] < 48_000  # 512 × 3: every value (a narrow map's summary is the whole map)


def test_the_inspectors_bars_are_tables_of_the_weights_and_of_the_outputs_terms():
    at = page(query={"lang": "ko"})
    no_errors(at)
    data = inspector(at)
    alpha, terms = (s["bars"]["table"] for s in data["sections"])
    words = table("ko")
    q = data["options"][data["chosen"]]
    assert alpha["head"] == [words["a11y.bars.key"], words["a11y.bars.weight"]]
    assert words["pg.inspector.alpha"].format(q=q) in alpha["caption"]
    X = tokens.c18_embedding()
    A = core.attention(X, X, X)
    np.testing.assert_allclose([float(r[1]) for r in alpha["rows"]], A.weights[0].numpy(), atol=6e-7)
    top = int(np.argmax(A.weights[0].numpy()))
    assert f"{alpha['rows'][top][0]} {alpha['rows'][top][1]}" in alpha["caption"]  # the largest weight is named
    contrib, out = A.contributions(0).numpy(), A.output[0].numpy()
    assert terms["head"][:2] == [words["a11y.bars.dim"], words["pg.inspector.sum"]]
    for d, row in enumerate(terms["rows"]):
        assert row[0] == f"v{d}"
        np.testing.assert_allclose([float(v) for v in row[1:]], [out[d], *contrib[:, d]], atol=6e-7)


def test_the_output_table_of_many_keys_lists_the_largest_terms_and_sums_the_rest():
    rng = np.random.default_rng(5)
    n, d = 40, 3
    contrib = rng.normal(size=(n, d)) * rng.uniform(0, 1, size=(n, 1))
    labels = [f"k{i}" for i in range(n)]
    spec = stacked_contributions(labels, contrib, contrib.sum(axis=0), 4, total_label="sum", heading="Out", lang="en")
    t = spec["table"]
    keep = sorted(np.argsort(-np.abs(contrib).sum(axis=1), kind="stable")[:TABLE_KEYS].tolist())
    assert t["head"] == ["dimension", "sum", *(labels[i] for i in keep), "the other 24 keys"]
    assert "24" in t["caption"] and "16" in t["caption"]
    rest = [i for i in range(n) if i not in keep]
    for k, row in enumerate(t["rows"]):
        np.testing.assert_allclose(float(row[-1]), contrib[rest, k].sum(), atol=6e-5)
        np.testing.assert_allclose(float(row[1]), contrib[:, k].sum(), atol=6e-5)
    assert "table" not in weight_bars(labels, np.full(n, 1 / n), 3)  # other pages' bars (probabilities) unchanged


def test_high_contrast_makes_every_number_in_a_cell_pure_black_or_white():
    at = page(query={"hc": "1", "causal": "1"})
    no_errors(at)
    for key, p in panels(at).items():
        for row in p["map"]["fg"] or []:
            assert set(row) <= {colours.DARK, colours.LIGHT}, key
    masked = spec(at, state.item(state.PLAYGROUND.pipeline, "masked"))
    assert "−∞" in sum(masked["text"], [])  # the causal mask is on: masked cells are there, in black
    assert masked["hc"] is True


def test_a_canvas_map_gets_the_high_contrast_setting():
    at = page(query={"hc": "1"})
    at.text_input(key=state.SCENARIO.tokens).input(_tokens(20)).run()
    m = panels(at)[PG_WEIGHTS]["map"]
    assert m["hc"] is True and isinstance(m["rgb"], str) and base64.b64decode(m["rgb"])  # drawn on a canvas, in black
