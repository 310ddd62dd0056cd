"""Ranking metrics for the quality benchmark, kept pure so they can be tested exactly.

Both systems return chunks, but judges grade whole notes, so rankings here are lists of note
paths. Every function counts only a path's first occurrence: a note retrieved through three
chunks must not earn three gains.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from scipy.stats import bootstrap


def distinct(paths: Iterable[str], n: int | None = None) -> list[str]:
    """Keep each path's first occurrence, in rank order, optionally only the first ``n``.

    Args:
        paths: Paths in rank order, possibly repeated (one per retrieved chunk).
        n: Stop after this many distinct paths; ``None`` keeps them all.

    Returns:
        Distinct paths in the order they were first seen.
    """
    seen: set[str] = set()
    out: list[str] = []
    for path in paths:
        if n is not None and len(out) >= n:
            break
        if path not in seen:
            seen.add(path)
            out.append(path)
    return out


def gain(grade: int) -> float:
    """Exponential gain ``2^grade - 1``, so a grade-2 note is worth three grade-1 notes.

    Args:
        grade: The judged grade (0 = not relevant).

    Returns:
        The gain; 0.0 for grades of 0 or below.
    """
    return float(2**grade - 1) if grade > 0 else 0.0


def dcg(grades: Sequence[int]) -> float:
    """Discounted cumulative gain of grades in rank order (rank 1 has discount log2(2) = 1).

    Args:
        grades: The grade at each rank, best rank first.

    Returns:
        ``sum((2^g - 1) / log2(rank + 1))``.
    """
    return sum(gain(g) / math.log2(rank + 2) for rank, g in enumerate(grades))


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """Normalised DCG of the top ``k`` distinct notes against graded judgements.

    The ideal ranking is built from *all* judged notes, not only those retrieved, so a system
    is penalised for relevant notes it never found. Unjudged notes count as grade 0.

    Args:
        ranked: Note paths in rank order (duplicates are ignored after their first rank).
        relevant: Judged grade per note path.
        k: Cut-off rank.

    Returns:
        nDCG@k in [0, 1]; 0.0 when no note has a positive grade (nothing can be found).
    """
    ideal = dcg(sorted((g for g in relevant.values() if g > 0), reverse=True)[:k])
    if ideal == 0.0:
        return 0.0
    return dcg([relevant.get(path, 0) for path in distinct(ranked, k)]) / ideal


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """Fraction of the notes with grade >= 1 that appear among the top ``k`` distinct notes.

    Not capped at ``k``: a query with 15 relevant notes can reach at most 10/15, which keeps
    the number comparable between systems rather than flattering both.

    Args:
        ranked: Note paths in rank order (duplicates are ignored after their first rank).
        relevant: Judged grade per note path.
        k: Cut-off rank.

    Returns:
        Recall@k in [0, 1]; 0.0 when no note has a positive grade.
    """
    wanted = {path for path, grade in relevant.items() if grade >= 1}
    if not wanted:
        return 0.0
    return sum(1 for path in distinct(ranked, k) if path in wanted) / len(wanted)


def mean_interval(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 10_000
) -> tuple[float, float]:
    """A percentile bootstrap interval of the mean of per-query values (seeded: reruns agree).

    A vault's gain is a mean over its 50-84 judged queries; how far it would move over
    another draw of as many queries is what says whether a bar missed by 0.001 was missed
    at all.

    Args:
        values: one value per query, e.g. a system's nDCG@10 minus another's.
        confidence: the interval's coverage.
        resamples: bootstrap resamples.

    Returns:
        (low, high); the mean twice when fewer than two distinct values leave nothing to
        resample.
    """
    if len(set(values)) < 2:
        mean = statistics.fmean(values) if values else 0.0
        return mean, mean
    result = bootstrap(
        (np.asarray(values, dtype=float),),
        np.mean,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        rng=np.random.default_rng(0),
    )
    interval = result.confidence_interval
    return float(interval.low), float(interval.high)
