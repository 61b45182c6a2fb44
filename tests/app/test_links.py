"""Links the app writes stay under what the project's nginx accepts (issue 27): the scenario is packed
into one parameter once it is long, old plain links still read, and a scenario too large for a link
says so instead of writing one a proxy refuses."""

from __future__ import annotations

import base64
import zlib
from urllib.parse import urlencode

import numpy as np

from attention_lab import scenario as sc

RNG = np.random.default_rng(0)
W16 = np.round(RNG.standard_normal((16, 16)), 2).tolist()


def largest() -> tuple[dict, dict]:
    """The largest scenario a link carries: 512 tokens, every value changed, 4,096 clicked cells (a 64 × 64
    block), every other key padded, and W_Q, W_K, W_V (16 × 16, two decimals) edited."""
    values = dict(sc.DEFAULTS, tokens=" ".join(f"w{i}" for i in range(512)), source="a b c", mode="self",
                  embedding="random", d_model=16, qkv="projection", d_k=16, d_v=16, score="general", d_a=16,
                  scale="none", temperature=2.5, causal=True, pad=list(range(0, 512, 2)),
                  blocked=[[i, j] for i in range(64) for j in range(64)], convention="column", query=511)
    return values, {"W_q": W16, "W_k": W16, "W_v": W16}


def test_a_short_scenario_is_written_plainly_as_before():
    q = sc.to_query(dict(sc.DEFAULTS, tokens="a b c", causal=True), {"W_q": [[1.0, 2.0]]})
    assert set(q) == {"tok", "causal", "m_W_q"}
    assert sc.from_query(q)[2] == []


def test_the_largest_scenario_packs_into_one_parameter_under_the_link_budget_and_round_trips():
    values, mats = largest()
    q = sc.to_query(values, mats)
    assert list(q) == ["z"] and sc.link_size(q) <= sc.LINK_BYTES
    assert sc.link_fits(values, mats)
    back, back_m, refused = sc.from_query(q)
    assert refused == [] and back == values and back_m == mats
    plain = urlencode(sc._plain_query(values, mats))
    assert len(plain) > 8192  # the plain form would have been refused by nginx (414)


def test_old_plain_links_still_read_even_long_ones():
    values, mats = largest()
    old = sc._plain_query(values, mats)  # what the app wrote before links were packed
    back, back_m, refused = sc.from_query(old)
    assert refused == [] and back == values and back_m == mats


def test_matrices_too_large_for_a_link_are_left_out_and_the_app_knows():
    values = dict(sc.DEFAULTS, tokens=" ".join(f"t{i}" for i in range(64)), embedding="random", d_model=16)
    X = np.round(RNG.standard_normal((64, 16)), 3).tolist()
    big = {"X": X, "W_q": np.round(RNG.standard_normal((16, 16)), 6).tolist(),
           "Q": np.round(RNG.standard_normal((64, 16)), 6).tolist()}
    q = sc.to_query(values, big)
    assert sc.link_size(q) <= sc.LINK_BYTES
    assert not sc.link_fits(values, big)
    back, back_m, _ = sc.from_query(q)
    assert back == values and back_m == {}


def test_a_broken_or_inflating_packed_link_is_refused_by_name():
    good = sc.pack({"tok": "a b"})
    bomb = base64.urlsafe_b64encode(zlib.compress(b'{"tok": "' + b"a" * 20_000_000 + b'"}', 9)).decode()
    for z in ("!!!", good[:-4], bomb, sc.pack({"blk": "[[1,2]]"}).replace("A", "B", 3),
              base64.urlsafe_b64encode(zlib.compress(b'{"blkd": "1,x"}')).decode()):
        values, _, refused = sc.from_query({"z": z})
        assert "z" in refused and values["tokens"] == sc.DEFAULTS["tokens"]
    assert sc.from_query({"z": good})[0]["tokens"] == "a b"
