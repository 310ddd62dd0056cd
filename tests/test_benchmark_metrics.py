"""Exact-value tests of the benchmark's ranking metrics (hand-computed cases)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

# `benchmarks` is a top-level folder of the repo, not part of the installed package.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.metrics import dcg, distinct, gain, mean_interval, ndcg_at_k, recall_at_k

LOG2_3 = math.log2(3)


def test_gain_is_exponential_in_grade() -> None:
    assert [gain(g) for g in (0, 1, 2, 3)] == [0.0, 1.0, 3.0, 7.0]
    assert gain(-1) == 0.0


def test_dcg_hand_computed() -> None:
    # 3/log2(2) + 0/log2(3) + 1/log2(4) = 3 + 0 + 0.5
    assert dcg([2, 0, 1]) == pytest.approx(3.5)
    assert dcg([]) == 0.0


def test_ndcg_hand_computed() -> None:
    # DCG = 3/1 + 0 + 1/2 = 3.5; ideal = [2, 1] -> 3/1 + 1/log2(3)
    value = ndcg_at_k(["a", "b", "c"], {"a": 2, "c": 1}, k=10)
    assert value == pytest.approx(3.5 / (3 + 1 / LOG2_3))
    assert value == pytest.approx(0.9639404, abs=1e-7)


def test_ndcg_perfect_ranking_is_one() -> None:
    assert ndcg_at_k(["a", "c", "x"], {"a": 2, "c": 1}, k=10) == pytest.approx(1.0)


def test_ndcg_reversed_ranking() -> None:
    # DCG = 1/1 + 3/log2(3); ideal = 3/1 + 1/log2(3)
    value = ndcg_at_k(["c", "a"], {"a": 2, "c": 1}, k=10)
    assert value == pytest.approx((1 + 3 / LOG2_3) / (3 + 1 / LOG2_3))


def test_ndcg_nothing_relevant_found_is_zero() -> None:
    assert ndcg_at_k(["x", "y"], {"a": 2}, k=10) == 0.0
    assert ndcg_at_k([], {"a": 1}, k=10) == 0.0


def test_ndcg_ignores_hits_beyond_cutoff() -> None:
    ranked = [f"n{i}" for i in range(10)] + ["a"]
    assert ndcg_at_k(ranked, {"a": 3}, k=10) == 0.0
    # k=1: only rank 1 counts; ideal is the single best grade.
    assert ndcg_at_k(["b", "a"], {"a": 3, "b": 1}, k=1) == pytest.approx(1 / 7)


def test_ndcg_ideal_uses_all_judged_notes() -> None:
    # 12 relevant notes of grade 1, the top 10 are all relevant: ideal is also ten 1s -> 1.0.
    relevant = {f"r{i}": 1 for i in range(12)}
    assert ndcg_at_k([f"r{i}" for i in range(10)], relevant, k=10) == pytest.approx(1.0)
    # A grade-2 note never retrieved still lowers the score: ideal = 3 + 1/log2(3).
    value = ndcg_at_k(["a"], {"a": 1, "b": 2}, k=10)
    assert value == pytest.approx(1 / (3 + 1 / LOG2_3))


def test_ndcg_counts_duplicate_paths_once() -> None:
    # Deduplicated ranking is [a, b]: b sits at rank 2 -> 1/log2(3); ideal = 1.
    assert ndcg_at_k(["a", "a", "b"], {"b": 1}, k=10) == pytest.approx(1 / LOG2_3)
    # Duplicates must not push a note out of the top k either.
    assert ndcg_at_k(["x", "x", "b"], {"b": 1}, k=2) == pytest.approx(1 / LOG2_3)


def test_ndcg_grade_zero_judgements_do_not_count() -> None:
    assert ndcg_at_k(["z", "a"], {"z": 0, "a": 1}, k=10) == pytest.approx(1 / LOG2_3)
    assert ndcg_at_k(["z"], {"z": 0}, k=10) == 0.0
    assert ndcg_at_k(["a"], {}, k=10) == 0.0


def test_recall_hand_computed() -> None:
    # Relevant (grade >= 1) = {a, b}; only a is found.
    assert recall_at_k(["x", "a", "y"], {"a": 1, "b": 3, "c": 0}, k=10) == 0.5
    assert recall_at_k(["b", "a"], {"a": 1, "b": 3, "c": 0}, k=10) == 1.0
    assert recall_at_k(["c"], {"a": 1, "b": 3, "c": 0}, k=10) == 0.0


def test_recall_cutoff_and_more_relevant_than_k() -> None:
    relevant = {f"r{i}": 1 for i in range(12)}
    assert recall_at_k([f"r{i}" for i in range(12)], relevant, k=10) == pytest.approx(10 / 12)
    assert recall_at_k(["x", "r0"], relevant, k=1) == 0.0


def test_recall_counts_duplicates_once() -> None:
    assert recall_at_k(["a", "a", "a"], {"a": 1, "b": 1}, k=10) == 0.5
    assert recall_at_k(["a", "a", "b"], {"a": 1, "b": 1}, k=2) == 1.0


def test_recall_without_relevant_notes_is_zero() -> None:
    assert recall_at_k(["a"], {}, k=10) == 0.0
    assert recall_at_k(["a"], {"a": 0}, k=10) == 0.0


def test_distinct_keeps_first_occurrence_order() -> None:
    assert distinct(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert distinct(["b", "a", "b", "c"], 2) == ["b", "a"]
    assert distinct([], 3) == []


def test_the_bootstrap_interval_holds_the_mean_and_narrows_with_more_queries() -> None:
    few = [0.0, 0.1, -0.05, 0.2, 0.03, -0.1, 0.15, 0.02]
    low, high = mean_interval(few)
    assert low < sum(few) / len(few) < high
    assert mean_interval(few) == (low, high)  # seeded: a rerun prints the same interval
    more_low, more_high = mean_interval(few * 10)
    assert more_high - more_low < (high - low) / 2
    assert mean_interval([0.02] * 6) == (0.02, 0.02)
    assert mean_interval([]) == (0.0, 0.0)
