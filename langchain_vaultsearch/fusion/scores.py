"""Fusion: one ranked list from a lexical and a semantic one.

The one place results of different retrievers are combined, so every fused list keeps the
same invariants: at most `limit` documents, unique chunk ids, scores in [0, 1], scores
descending (`result_order`). Three methods, chosen per call:

- `blend`, the original's: each side's own score times its weight (lexical tag matches
  x1.1), the higher one wins a collision, lexical first. Lexical scores are min-max
  normalised (the top one is 0.98) while cosine similarities of a small model sit around
  0.3-0.7, so lexical nearly always wins and the semantic side rarely adds anything.
- `rrf`, reciprocal rank fusion: sum of weight / (k + rank); it ignores score scales
  entirely, at the cost of ignoring how much better the first hit is than the tenth.
- `calibrated`: each side's scores min-max normalised over its own list, then a weighted
  sum, so a chunk both sides found rises above chunks only one side found, and each
  side's confidence still counts. Given the query's terms, the lexical weight is also
  scaled by their coverage: the share of them the best lexical hits contain. A question in
  other words than the notes' ("stop two writers changing the same row") matches a few
  common words lexically, and min-max would still crown the best of those weak hits 1.0.
  `benchmarks/semantic_quality.py` measures all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_core.documents import Document

from langchain_vaultsearch.documents import document_score, lexical_matches, result_order
from langchain_vaultsearch.fusion.typos import covers
from langchain_vaultsearch.text.tokenize import tokenize_mixed

FusionMethod = Literal["calibrated", "blend", "rrf"]
COVERAGE_HITS = 3
"""Lexical hits whose matched terms count for the coverage."""
MIN_COVERAGE = 0.05
"""A lexical side matching none of the query's terms still breaks the semantic side's ties."""
FUSION_METHODS: tuple[FusionMethod, ...] = ("calibrated", "blend", "rrf")


@dataclass(frozen=True)
class FusionWeights:
    """How much each side counts.

    Attributes:
        lexical: weight of the lexical list.
        semantic: weight of the semantic list.
        tag_match_boost: `blend` only: factor for lexical chunks that matched a tag.
        rrf_k: `rrf` only: the rank constant (60 in the literature and the original).
    """

    lexical: float = 1.0
    semantic: float = 1.0
    tag_match_boost: float = 1.1
    rrf_k: int = 60

    def __post_init__(self) -> None:
        if self.lexical < 0 or self.semantic < 0 or self.lexical + self.semantic <= 0:
            msg = f"weights must be >= 0 and not both 0, got {self.lexical}, {self.semantic}"
            raise ValueError(msg)
        if self.tag_match_boost <= 0 or self.rrf_k < 1:
            msg = "tag_match_boost must be > 0 and rrf_k >= 1"
            raise ValueError(msg)


def fuse(
    lexical: Sequence[Document],
    semantic: Sequence[Document],
    *,
    limit: int,
    method: FusionMethod = "calibrated",
    weights: FusionWeights | None = None,
    query_terms: Sequence[str] = (),
) -> list[Document]:
    """Fuse two ranked lists into one.

    Args:
        lexical: lexical documents, best first.
        semantic: semantic documents, best first.
        limit: documents to return at most.
        method: `calibrated`, `blend` or `rrf`.
        weights: side weights and method constants.
        query_terms: `calibrated` only: the query's own terms; the lexical weight is
            scaled by how many of them the best lexical hits contain.

    Returns:
        New documents (inputs are not modified) with the fused score in `score` and
        `rerank_score`, each side's contribution under `explanation["fusion"]`; where
        both sides found a chunk, the lexical document is kept.
    """
    if method not in FUSION_METHODS:
        msg = f"fusion must be one of {', '.join(FUSION_METHODS)}, got {method!r}"
        raise ValueError(msg)
    if limit < 1:
        msg = f"limit must be at least 1, got {limit}"
        raise ValueError(msg)
    weights = weights or FusionWeights()
    lexical, semantic = _unique(lexical), _unique(semantic)
    if method == "calibrated" and query_terms:
        coverage = max(lexical_coverage(lexical, query_terms), MIN_COVERAGE)
        weights = replace(weights, lexical=weights.lexical * coverage)
    if method == "blend":
        fused = _blend(lexical, semantic, weights)
    else:
        side_scores = (
            (_rrf_scores(lexical, weights.rrf_k), _rrf_scores(semantic, weights.rrf_k))
            if method == "rrf"
            else (_minmax(lexical), _minmax(semantic))
        )
        fused = _weighted_sum(lexical, semantic, side_scores, weights, method)
    fused.sort(key=result_order)
    return fused[:limit]


def lexical_coverage(lexical: Sequence[Document], query_terms: Sequence[str]) -> float:
    """The share of the query's terms the best of the top lexical hits contains (0..1).

    Terms are compared as index terms (`tokenize_mixed`: words, CJK bigrams), a matched
    term counting for the query terms it starts with (prefix matching), and a word the
    lexical side matched as a typo's correction for the typo (`typos.covers`); tags are
    left out, as tags filter. No terms: full coverage.
    """
    words = " ".join(term for term in query_terms if not term.startswith("#"))
    terms = list(dict.fromkeys(tokenize_mixed(words)))
    if not terms:
        return 1.0
    best = 0
    for doc in lexical[:COVERAGE_HITS]:
        matches = lexical_matches(doc)
        best = max(best, sum(1 for term in terms if any(covers(m, term) for m in matches)))
    return best / len(terms)


def _key(doc: Document) -> str:
    """What identifies a chunk across retrievers (the original's key order)."""
    meta = doc.metadata
    for name in ("chunkId", "path"):
        value = meta.get(name)
        if isinstance(value, str) and value:
            return value
    if doc.id:
        return doc.id
    return f"{doc.page_content[:64]}::{len(doc.page_content)}"


def _unique(docs: Sequence[Document]) -> list[Document]:
    """Each chunk once, its best-scored copy, in the list's order."""
    best: dict[str, Document] = {}
    for doc in docs:
        key = _key(doc)
        if key not in best or document_score(doc.metadata) > document_score(best[key].metadata):
            best[key] = doc
    return list(best.values())


def _scored(doc: Document, score: float, fusion: dict[str, Any]) -> Document:
    metadata = dict(doc.metadata)
    score = min(1.0, max(0.0, score))
    metadata["score"] = score
    metadata["rerank_score"] = score
    explanation = metadata.get("explanation")
    metadata["explanation"] = {
        **(explanation if isinstance(explanation, dict) else {}),
        "fusion": fusion,
    }
    return Document(page_content=doc.page_content, metadata=metadata, id=doc.id)


def _blend(
    lexical: list[Document], semantic: list[Document], weights: FusionWeights
) -> list[Document]:
    """The original's blend: weighted own scores, lexical wins ties and collisions."""
    chosen: dict[str, tuple[Document, float, str]] = {}
    for doc in lexical:
        score = document_score(doc.metadata) * weights.lexical
        if _matched_a_tag(doc):
            score *= weights.tag_match_boost
        key = _key(doc)
        kept = chosen.get(key)
        if kept is None or kept[2] != "lexical" or score > kept[1]:
            chosen[key] = (doc, score, "lexical")
    for doc in semantic:
        score = document_score(doc.metadata) * weights.semantic
        key = _key(doc)
        kept = chosen.get(key)
        if kept is None or (kept[2] != "lexical" and kept[1] < score):
            chosen[key] = (doc, score, "semantic")
    return [
        _scored(doc, score, {"method": "blend", "from": side})
        for doc, score, side in chosen.values()
    ]


def _matched_a_tag(doc: Document) -> bool:
    return any(m.get("field") == "tags" for m in lexical_matches(doc))


def _rrf_scores(docs: list[Document], rrf_k: int) -> dict[str, float]:
    """1 / (k + rank), scaled so the first rank is 1.0 (so sums stay within [0, 1])."""
    return {_key(doc): (rrf_k + 1) / (rrf_k + rank) for rank, doc in enumerate(docs, 1)}


def _minmax(docs: list[Document]) -> dict[str, float]:
    """Scores rescaled over the list: best 1.0, worst 0.0 (all 1.0 when they are equal)."""
    scores = {_key(doc): document_score(doc.metadata) for doc in docs}
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low <= 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {key: (score - low) / (high - low) for key, score in scores.items()}


def _weighted_sum(
    lexical: list[Document],
    semantic: list[Document],
    side_scores: tuple[dict[str, float], dict[str, float]],
    weights: FusionWeights,
    method: FusionMethod,
) -> list[Document]:
    """Sum of weighted side scores over the weight of the sides that found anything."""
    lexical_scores, semantic_scores = side_scores
    # A side that returned nothing (skipped or failed) does not halve the other's scores.
    total = weights.lexical * bool(lexical) + weights.semantic * bool(semantic) or 1.0
    docs = {_key(doc): doc for doc in semantic}
    docs.update((_key(doc), doc) for doc in lexical)  # lexical wins the collision
    fused = []
    for key, doc in docs.items():
        from_lexical = lexical_scores.get(key, 0.0)
        from_semantic = semantic_scores.get(key, 0.0)
        score = (weights.lexical * from_lexical + weights.semantic * from_semantic) / total
        fusion = {"method": method, "lexical": from_lexical, "semantic": from_semantic}
        fused.append(_scored(doc, score, fusion))
    return fused
