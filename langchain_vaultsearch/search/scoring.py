"""Score normalisation and the note-diverse top-K.

Raw BM25+ sums are unbounded and incomparable across queries; users and the chain
runner want a score in a fixed range that never claims certainty, hence [0.02, 0.98].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

NormalizationMethod = Literal["minmax", "zscore-tanh", "percentile"]
CLIP_MIN = 0.02
CLIP_MAX = 0.98
TANH_SCALE = 2.5

T = TypeVar("T")


def normalize_scores(
    scores: Sequence[float],
    method: NormalizationMethod = "minmax",
    clip: tuple[float, float] = (CLIP_MIN, CLIP_MAX),
) -> list[float]:
    """Map raw scores into `clip`, keeping their order.

    Args:
        scores: raw scores.
        method: `minmax` (the original's default: best 0.98, worst 0.02), `zscore-tanh`
            (robust to one outlier), or `percentile` (rank-based, evenly spaced).
        clip: output range.

    Returns:
        Normalised scores; all equal scores (or a single one) become 0.5.
    """
    low, high = clip
    count = len(scores)
    if count == 0:
        return []
    if method == "minmax":
        smallest, largest = min(scores), max(scores)
        if largest == smallest:
            return [0.5] * count
        return [low + (s - smallest) / (largest - smallest) * (high - low) for s in scores]
    if method == "zscore-tanh":
        mean = sum(scores) / count
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / count)
        if std == 0:
            return [0.5] * count
        return [
            min(max(0.5 + 0.5 * math.tanh((s - mean) / std / TANH_SCALE), low), high)
            for s in scores
        ]
    if count == 1:
        return [0.5]
    order = sorted(range(count), key=lambda i: scores[i])
    result = [0.0] * count
    for rank, index in enumerate(order):
        result[index] = low + rank / (count - 1) * (high - low)
    return result


def adaptive_cutoff(
    items: Sequence[T],
    score: Callable[[T], float],
    note: Callable[[T], str],
    *,
    floor: int = 3,
    ceiling: int = 30,
    relative_threshold: float = 0.3,
    absolute_min_score: float = 0.01,
    ensure_diversity: bool = True,
) -> tuple[list[T], float | None]:
    """Keep the items that stand out, first chunk of each note first.

    Args:
        items: scored items in any order.
        score: an item's score.
        note: an item's note path (chunks of one note share it).
        floor: always keep at least this many, whatever their score.
        ceiling: never keep more.
        relative_threshold: drop items below this share of the best score...
        absolute_min_score: ...or below this score.
        ensure_diversity: take every note's best chunk before second chunks.

    Returns:
        The kept items sorted by score, and the threshold if anything was dropped.
    """
    if not items:
        return [], None
    ranked = sorted(items, key=score, reverse=True)
    threshold = max(score(ranked[0]) * relative_threshold, absolute_min_score)
    selected: list[T] = []
    if not ensure_diversity:
        for item in ranked:
            if len(selected) >= ceiling or (len(selected) >= floor and score(item) < threshold):
                break
            selected.append(item)
    else:
        seen: set[str] = set()
        remaining: list[T] = []
        for item in ranked:
            if len(selected) >= ceiling:
                break
            key = note(item)
            if key not in seen and (len(selected) < floor or score(item) >= threshold):
                seen.add(key)
                selected.append(item)
            else:
                remaining.append(item)
        for item in remaining:
            if len(selected) >= ceiling or (score(item) < threshold and len(selected) >= floor):
                break
            selected.append(item)
        selected.sort(key=score, reverse=True)
    dropped = len(selected) < len(items)
    return selected, threshold if dropped else None


def select_diverse_top_k(
    items: Sequence[T], limit: int, score: Callable[[T], float], note: Callable[[T], str]
) -> list[T]:
    """The top `limit` items with as many distinct notes as the scores allow.

    Without it, one long note's twelve chunks can fill the whole result list.

    Args:
        items: scored items.
        limit: how many to return.
        score: an item's score.
        note: an item's note path.

    Returns:
        At most `limit` items sorted by score; the input unchanged when it fits.
    """
    if len(items) <= limit:
        return list(items)
    kept, _threshold = adaptive_cutoff(
        items,
        score,
        note,
        floor=0,
        ceiling=limit,
        relative_threshold=0.0,
        absolute_min_score=0.0,
    )
    return kept
