"""FullTextEngine: multi-field BM25+ over the candidates' chunks, built per query.

The scorer is rank-bm25's `BM25Plus`, one per field. Handing it every term of every
chunk would make it count them all in Python on every query, although only the query's
terms can score; so each field's corpus holds just the query terms a chunk contains
(document frequency, and so IDF, is identical for those terms) and the field lengths
are set to the chunks' real term counts, which BM25's length normalisation needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from rank_bm25 import BM25Plus

from langchain_vaultsearch.search.chunk_store import FIELDS, IndexedChunk
from langchain_vaultsearch.search.recall import Vocabulary
from langchain_vaultsearch.text.tokenize import tokenize_mixed

FIELD_WEIGHTS: dict[str, float] = {
    "title": 5.0,
    "tags": 4.0,
    "heading": 2.5,
    "path": 1.5,
    "body": 1.0,
}
BM25_K1 = 1.2
BM25_B = 0.7
BM25_DELTA = 0.5


@dataclass
class LexicalHit:
    """One scored chunk.

    Attributes:
        indexed: the chunk and its terms.
        score: BM25+ sum over fields and terms, times the number of query terms matched.
        matches: `{"field", "query", "weight"}` per matched (field, index term): the
            `lexicalMatches` explanation of the seed contract.
    """

    indexed: IndexedChunk
    score: float
    matches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The chunk id, `path#index`."""
        return self.indexed.chunk.id

    @property
    def note_path(self) -> str:
        """The note the chunk belongs to."""
        return self.indexed.chunk.note_path


class _FieldBM25Plus(BM25Plus):
    """BM25Plus over a reduced corpus, normalised with the fields' true lengths."""

    def __init__(self, corpus: list[list[str]], lengths: npt.NDArray[np.float64]) -> None:
        super().__init__(corpus, k1=BM25_K1, b=BM25_B, delta=BM25_DELTA)
        self.doc_len = lengths
        self.avgdl = float(lengths.mean())


def rank_chunks(
    chunks: Sequence[IndexedChunk],
    ranking_terms: Sequence[str],
    vocabulary: Vocabulary,
    limit: int,
) -> list[LexicalHit]:
    """Score chunks against the ranking terms, best first.

    Args:
        chunks: the candidates' chunks.
        ranking_terms: the salient terms (or the original query); expanded variants never
            reach ranking (seed 001: recall and ranking stay separate).
        vocabulary: the vault's terms, for prefix matching.
        limit: how many hits to return.

    Returns:
        Hits with a positive score, sorted by score (ties keep chunk order).
    """
    query_terms = tokenize_mixed(" ".join(ranking_terms))
    if not chunks or not query_terms or limit <= 0:
        return []
    expansions = {term: vocabulary.expand(term) for term in query_terms}
    wanted = {t for expanded in expansions.values() for t, _w in expanded}
    count = len(chunks)
    scores = np.zeros(count, dtype=np.float64)
    matched_terms: list[set[str]] = [set() for _ in range(count)]
    matches: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    for name in FIELDS:
        term_sets = [c.terms[name] for c in chunks]
        corpus = [list(wanted.intersection(s)) for s in term_sets]
        holders: dict[str, list[int]] = {}
        for index, present in enumerate(corpus):
            for term in present:
                holders.setdefault(term, []).append(index)
        if not holders:
            continue
        lengths = np.fromiter((len(s) for s in term_sets), dtype=np.float64, count=count)
        bm25 = _FieldBM25Plus(corpus, lengths)
        weight = FIELD_WEIGHTS[name]
        for query_term, expanded in expansions.items():
            for term, prefix_weight in expanded:
                docs = holders.get(term)
                if docs is None:
                    continue
                batch = np.asarray(bm25.get_batch_scores([term], docs), dtype=np.float64)
                scores[docs] += weight * prefix_weight * batch
                for index in docs:
                    matched_terms[index].add(query_term)
                    matches[index].append({"field": name, "query": term, "weight": weight})
    quality = np.fromiter((len(m) for m in matched_terms), dtype=np.float64, count=count)
    final = scores * quality
    order = np.argsort(-final, kind="stable")
    hits: list[LexicalHit] = []
    for index in order[:limit]:
        if final[index] <= 0.0:
            break
        hits.append(LexicalHit(chunks[index], float(final[index]), matches[index]))
    return hits
