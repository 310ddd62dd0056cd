"""The learned per-query weight of `benchmarks.fusion_headroom` takes a weight only when its
predicted gain clears the margin, from what it learned on other queries."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# `benchmarks` is a top-level folder of the repo, not part of the installed package.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import fusion_headroom
from benchmarks.fusion_lovo import Query
from benchmarks.quality import JudgedQuery
from langchain_vaultsearch.query_plan import Route

HEAVY = f"weight {fusion_headroom.WEIGHTS[-1]}"


def _query(signal: float, heavy_gain: float, route: Route = "merged") -> Query:
    """A query whose only feature is `signal` and whose heavy lexical weight gains `heavy_gain`."""
    q = Query(
        vault="v",
        judged=JudgedQuery(id="q", kind="keyword", query="q", relevant={}),
        lexical=[],
        semantic=[],
        semantic_corrected=[],
        default=[],
        hybrid=[],
        langchain=[],
        chain=[],
        carried_tag=False,
        words="q",
        terms=(),
        rarity=None,
        route=route,
        tags=frozenset(),
        tagged=frozenset(),
        named=frozenset(),
    )
    q.scores = {"default": 0.5, "signal": signal}
    for weight in fusion_headroom.WEIGHTS:
        q.scores[f"weight {weight}"] = 0.5
    q.scores[HEAVY] = 0.5 + heavy_gain
    return q


@pytest.fixture(autouse=True)
def _one_feature(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fusion_headroom, "FEATURES", {"signal": lambda q: q.scores["signal"]})


def _train() -> list[Query]:
    """The heavy weight wins by 0.4 where the signal is 1 and loses 0.4 where it is 0."""
    return [_query(1.0, 0.4) for _ in range(20)] + [_query(0.0, -0.4) for _ in range(20)]


def test_a_weight_the_features_predict_is_taken_and_others_keep_the_default() -> None:
    test = [_query(1.0, 0.3), _query(0.0, -0.3)]

    scores = fusion_headroom.learned_scores(_train(), test, margin=0.0)

    assert scores == [pytest.approx(0.8), pytest.approx(0.5)]


def test_a_predicted_gain_below_the_margin_keeps_the_default() -> None:
    test = [_query(1.0, 0.3)]

    assert fusion_headroom.learned_scores(_train(), test, margin=0.5) == [0.5]


def test_a_query_not_sent_to_merged_search_keeps_its_answer() -> None:
    test = [_query(1.0, 0.3, route="lexical")]

    assert fusion_headroom.learned_scores(_train(), test, margin=0.0) == [0.5]
