"""Score normalisation and note-diverse cut-offs: the reference's §8.1, §11, §22.6, §22.7, §22.9."""

from __future__ import annotations

import itertools

import pytest

from langchain_vaultsearch.search.scoring import (
    adaptive_cutoff,
    normalize_scores,
    select_diverse_top_k,
)

Item = tuple[str, float]


def score(item: Item) -> float:
    return item[1]


def note(item: Item) -> str:
    return item[0].rsplit("#", 1)[0]


def cutoff(items: list[Item], **options: object) -> tuple[list[Item], float | None]:
    return adaptive_cutoff(items, score, note, **options)  # type: ignore[arg-type]


def notes_of(items: list[Item]) -> set[str]:
    return {note(item) for item in items}


def ids(items: list[Item]) -> list[str]:
    return [item[0] for item in items]


# ------------------------------------------------------------------ normalize_scores (§11, §22.9)


def test_minmax_reference_row() -> None:
    assert normalize_scores([10, 5, 0]) == pytest.approx([0.98, 0.5, 0.02])


def test_minmax_is_the_default_and_keeps_order_with_outlier() -> None:
    result = normalize_scores([33.7378, 1.3114, 0.5])
    assert result == pytest.approx([0.98, 0.0434355, 0.02], abs=1e-6)
    assert result[0] > result[1] > result[2]


def test_minmax_extremes_are_exactly_the_clip_bounds() -> None:
    result = normalize_scores([3.0, 7.0, 5.0])
    assert result[1] == 0.98
    assert result[0] == 0.02


@pytest.mark.parametrize("method", ["minmax", "zscore-tanh", "percentile"])
def test_single_score_becomes_half(method: str) -> None:
    assert normalize_scores([7.0], method) == [0.5]  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["minmax", "zscore-tanh"])
def test_equal_scores_become_half(method: str) -> None:
    assert normalize_scores([0.5, 0.5, 0.5], method) == [0.5, 0.5, 0.5]  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["minmax", "zscore-tanh", "percentile"])
def test_empty_input(method: str) -> None:
    assert normalize_scores([], method) == []  # type: ignore[arg-type]


def test_zscore_tanh_reference_row() -> None:
    result = normalize_scores([10, 5, 2, 1, 0.5], "zscore-tanh")
    assert result == pytest.approx([0.8075, 0.5734, 0.4045, 0.3511, 0.3256], abs=5e-5)
    assert 0.7 < result[0] < 0.98
    assert 0.02 < result[-1] < 0.4
    assert all(a > b for a, b in itertools.pairwise(result))


def test_zscore_tanh_respects_clip() -> None:
    result = normalize_scores([10, 0.1], "zscore-tanh", clip=(0.1, 0.9))
    assert result == pytest.approx([0.68997448, 0.31002552])
    assert all(0.1 <= value <= 0.9 for value in result)


def test_zscore_tanh_clips_extreme_outlier() -> None:
    result = normalize_scores([1000.0] + [0.0] * 99, "zscore-tanh", clip=(0.3, 0.7))
    assert result[0] == 0.7
    # mean 10, population std sqrt(9900): z = -10 / 99.4987, tanh(z / 2.5).
    assert result[1] == pytest.approx(0.47991007, abs=1e-7)


def test_percentile_is_evenly_spaced_by_rank() -> None:
    # The reference table lists .755/.245 for the middle ranks, which its own formula
    # (clipMin + i/(n-1) * (clipMax - clipMin)) does not give; the formula gives .74/.26.
    result = normalize_scores([100, 50, 25, 10, 1], "percentile")
    assert result == pytest.approx([0.98, 0.74, 0.5, 0.26, 0.02])


def test_percentile_maps_back_to_input_positions() -> None:
    assert normalize_scores([1, 100, 10], "percentile") == pytest.approx([0.02, 0.98, 0.5])


def test_minmax_custom_clip() -> None:
    assert normalize_scores([0, 1, 2], clip=(0.0, 1.0)) == pytest.approx([0.0, 0.5, 1.0])


# ------------------------------------------------------------------------ adaptive_cutoff (§22.7)


def test_all_above_threshold_kept() -> None:
    items = [("a#0", 0.9), ("b#0", 0.8), ("c#0", 0.7), ("d#0", 0.5)]
    assert cutoff(items, relative_threshold=0.3) == (items, None)


def test_low_scores_dropped_above_floor() -> None:
    kept, threshold = cutoff(
        [("a#0", 0.9), ("b#0", 0.8), ("c#0", 0.1), ("d#0", 0.05)],
        relative_threshold=0.3,
        floor=1,
    )
    assert ids(kept) == ["a#0", "b#0"]
    assert threshold == pytest.approx(0.27)


def test_floor_keeps_low_scores() -> None:
    items = [("a#0", 0.9), ("b#0", 0.1), ("c#0", 0.05)]
    assert cutoff(items) == (items, None)


def test_ceiling_limits_count() -> None:
    items = [(f"n{i}#0", 0.9 - 0.01 * i) for i in range(20)]
    kept, threshold = cutoff(items, ceiling=5)
    assert ids(kept) == ["n0#0", "n1#0", "n2#0", "n3#0", "n4#0"]
    assert threshold == pytest.approx(0.27)


def test_nothing_dropped_gives_no_cutoff_score() -> None:
    assert cutoff([("a#0", 0.9), ("b#0", 0.8)], ceiling=30) == (
        [("a#0", 0.9), ("b#0", 0.8)],
        None,
    )


def test_cutoff_of_empty_input() -> None:
    assert cutoff([]) == ([], None)


def test_second_chunks_after_all_notes_unique_notes_three() -> None:
    items = [("A#0", 0.95), ("A#1", 0.9), ("A#2", 0.85), ("A#3", 0.8), ("B#0", 0.5), ("C#0", 0.45)]
    kept, threshold = cutoff(items, relative_threshold=0.3)
    assert kept == items
    assert threshold is None
    assert notes_of(kept) == {"A", "B", "C"}


def test_low_note_dropped_with_floor_two() -> None:
    kept, threshold = cutoff([("A#0", 0.9), ("A#1", 0.85), ("B#0", 0.8), ("C#0", 0.05)], floor=2)
    assert kept == [("A#0", 0.9), ("A#1", 0.85), ("B#0", 0.8)]
    assert notes_of(kept) == {"A", "B"}
    assert threshold == pytest.approx(0.27)


def test_five_chunks_of_two_notes_kept() -> None:
    items = [("A#0", 0.95), ("A#1", 0.9), ("A#2", 0.85), ("B#0", 0.7), ("B#1", 0.65)]
    assert cutoff(items) == (items, None)


def test_without_diversity_low_note_dropped() -> None:
    kept, threshold = cutoff(
        [("A#0", 0.9), ("A#1", 0.85), ("A#2", 0.8), ("B#0", 0.1)],
        floor=1,
        ensure_diversity=False,
    )
    assert ids(kept) == ["A#0", "A#1", "A#2"]
    assert threshold == pytest.approx(0.27)


def test_with_diversity_floor_pulls_in_second_note() -> None:
    items = [("A#0", 0.9), ("A#1", 0.85), ("A#2", 0.8), ("B#0", 0.1)]
    kept, threshold = cutoff(items, floor=3)
    assert kept == items
    assert notes_of(kept) == {"A", "B"}
    assert threshold is None


def test_diverse_selection_is_re_sorted_by_score() -> None:
    kept, _ = cutoff([("A#0", 0.95), ("A#1", 0.8), ("B#0", 0.9), ("C#0", 0.85)])
    assert ids(kept) == ["A#0", "B#0", "C#0", "A#1"]


def test_defaults_keep_two_notes_of_three_items() -> None:
    items = [("A#0", 0.9), ("A#1", 0.8), ("B#0", 0.7)]
    kept, threshold = cutoff(items)
    assert kept == items
    assert notes_of(kept) == {"A", "B"}
    assert threshold is None


def test_eight_notes_two_chunks_each_all_kept() -> None:
    items = [
        item
        for i in range(8)
        for item in [(f"n{i}#0", 0.8 - 0.03 * i), (f"n{i}#1", 0.7 - 0.03 * i)]
    ]
    kept, threshold = cutoff(items, relative_threshold=0.3, ceiling=30)
    assert len(kept) == 16
    assert len(notes_of(kept)) == 8
    assert threshold is None


def test_quantum_physics_reference_row() -> None:
    kept, threshold = cutoff(
        [
            ("quantum#0", 0.95),
            ("quantum#1", 0.88),
            ("physics#0", 0.82),
            ("r1#0", 0.15),
            ("r2#0", 0.10),
            ("r3#0", 0.08),
            ("r4#0", 0.05),
        ],
        floor=3,
    )
    assert ids(kept) == ["quantum#0", "quantum#1", "physics#0", "r1#0"]
    assert notes_of(kept) == {"quantum", "physics", "r1"}
    assert threshold == pytest.approx(0.285)


def test_absolute_min_score_wins_over_relative_threshold() -> None:
    kept, threshold = cutoff(
        [("a#0", 0.02), ("b#0", 0.015), ("c#0", 0.005)],
        floor=1,
        absolute_min_score=0.01,
    )
    assert ids(kept) == ["a#0", "b#0"]
    assert threshold == 0.01


def test_diversity_takes_first_chunk_of_every_note_before_second_chunks() -> None:
    items = [("A#0", 0.9), ("A#1", 0.89), ("A#2", 0.88), ("B#0", 0.5), ("C#0", 0.4)]
    kept, threshold = cutoff(items, ceiling=3)
    assert ids(kept) == ["A#0", "B#0", "C#0"]
    assert threshold == pytest.approx(0.27)


def test_without_diversity_ceiling_takes_top_scores() -> None:
    items = [("A#0", 0.9), ("A#1", 0.89), ("A#2", 0.88), ("B#0", 0.5), ("C#0", 0.4)]
    kept, _ = cutoff(items, ceiling=3, ensure_diversity=False)
    assert ids(kept) == ["A#0", "A#1", "A#2"]


def test_input_order_is_irrelevant() -> None:
    items = [("b#0", 0.1), ("a#0", 0.9), ("c#0", 0.5)]
    kept, _ = cutoff(items)
    assert ids(kept) == ["a#0", "c#0", "b#0"]


# ------------------------------------------------------------- select_diverse_top_k (§8.1, §22.6)


def test_thirty_chunks_over_three_notes_limit_fifteen() -> None:
    items = [(f"note{n}#{c}", 1 - 0.1 * (n - 1) - 0.01 * c) for n in (1, 2, 3) for c in range(10)]
    result = select_diverse_top_k(items, 15, score, note)
    assert len(result) == 15
    assert notes_of(result) == {"note1", "note2", "note3"}
    assert [s for _, s in result] == sorted((s for _, s in result), reverse=True)
    # Every note's best chunk, then the best remaining chunks by score.
    assert ids(result) == [
        *(f"note1#{c}" for c in range(10)),
        *(f"note2#{c}" for c in range(4)),
        "note3#0",
    ]


def test_twenty_single_chunk_notes_limit_ten() -> None:
    items = [(f"note{i + 1}#0", 1 - 0.05 * i) for i in range(20)]
    assert ids(select_diverse_top_k(items, 10, score, note)) == [f"note{i}#0" for i in range(1, 11)]


def test_fitting_input_returned_unchanged_in_its_order() -> None:
    items = [("b#0", 0.1), ("a#0", 0.9)]
    result = select_diverse_top_k(items, 10, score, note)
    assert result == items
    assert result is not items


def test_limit_three_keeps_second_note() -> None:
    items = [("a#0", 0.95), ("a#1", 0.9), ("a#2", 0.85), ("b#0", 0.5), ("b#1", 0.45)]
    assert select_diverse_top_k(items, 3, score, note) == [
        ("a#0", 0.95),
        ("a#1", 0.9),
        ("b#0", 0.5),
    ]


def test_limit_zero_returns_nothing() -> None:
    assert select_diverse_top_k([("a#0", 0.9)], 0, score, note) == []


def test_select_keeps_low_scores_because_no_threshold() -> None:
    items = [("a#0", 1.0), ("a#1", 0.9), ("b#0", 0.001), ("c#0", 0.0)]
    assert ids(select_diverse_top_k(items, 3, score, note)) == ["a#0", "b#0", "c#0"]
