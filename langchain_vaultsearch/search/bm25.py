"""FullTextEngine: multi-field BM25+ over the candidates' chunks, built per query.

The formula is rank-bm25's `BM25Plus` (IDF `ln((N + 1) / df)`, k1 1.2, b 0.7, delta 0.5),
one index per field, computed here with numpy over only the chunks that hold each term.
rank-bm25 itself was measured too slow for the latency bar: its constructor walks every
chunk of every field in Python on every query (33 ms of a 76 ms query over the 6,815
chunks of 200 candidate notes in a real 6,280-note vault, even when given only the
query's terms); scoring only the chunks that hold a term costs a few milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.search.chunk_cache import FIELDS, IndexedChunk
from langchain_vaultsearch.search.recall import FUZZY_WEIGHT, Vocabulary
from langchain_vaultsearch.text.chunking import is_title_only
from langchain_vaultsearch.text.homophones import looks_for_slips
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
TITLE_ONLY_FACTOR = 0.25
"""Score share of a body-less note's title-only chunk (see `chunking.title_only_chunk`)."""


@dataclass
class LexicalHit:
    """One scored chunk.

    Attributes:
        indexed: the chunk and its terms.
        score: BM25+ sum over fields and terms, times the number of query terms matched.
        matches: `{"field", "query", "weight"}` per matched (field, index term): the
            `lexicalMatches` explanation of the metadata contract (`documents.py`).
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


def bm25_plus(
    document_frequency: int,
    corpus_size: int,
    lengths: npt.NDArray[np.float64],
    average_length: float,
) -> npt.NDArray[np.float64]:
    """BM25+ weight of one term in the documents that contain it once (tf = 1).

    Terms are unique per field (see `tokenize_mixed`), so tf is always 1 and BM25+ reduces
    to IDF times a length-normalised constant, plus the delta floor that keeps long
    documents from scoring near zero.

    Args:
        document_frequency: documents containing the term.
        corpus_size: all documents (chunks) ranked for this query.
        lengths: the field length of each document that contains the term.
        average_length: the mean field length over all documents.

    Returns:
        The term's score in each of those documents.
    """
    idf = math.log((corpus_size + 1) / document_frequency)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths / average_length)
    return idf * (BM25_DELTA + (BM25_K1 + 1) / (norm + 1))


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
            reach ranking (recall and ranking stay separate).
        vocabulary: the vault's terms, for prefix matching.
        limit: how many hits to return.

    Returns:
        Hits with a positive score, sorted by score (ties keep chunk order).
    """
    query_terms = tokenize_mixed(" ".join(ranking_terms))
    if not chunks or not query_terms or limit <= 0:
        return []
    by_sound = looks_for_slips(query_terms)
    expansions = {term: vocabulary.expand(term, by_sound=by_sound) for term in query_terms}
    wanted = {t for expanded in expansions.values() for t, _w in expanded}
    count = len(chunks)
    scores = np.zeros(count, dtype=np.float64)
    # Which query terms each chunk matched (the "quality" factor), and which (field, term)
    # pairs matched which chunks: explanations are built for the returned hits only, since
    # a query of many common terms matches tens of thousands of (chunk, term) pairs.
    matched = np.zeros((len(expansions), count), dtype=np.bool_)
    field_matches: list[tuple[str, str, float, list[int]]] = []
    for name in FIELDS:
        term_sets = [c.terms[name] for c in chunks]
        holders: dict[str, list[int]] = {}
        for index, present in enumerate(map(wanted.intersection, term_sets)):
            for term in present:
                holders.setdefault(term, []).append(index)
        if not holders:
            continue
        lengths = np.fromiter((len(s) for s in term_sets), dtype=np.float64, count=count)
        average = float(lengths.mean())
        weight = FIELD_WEIGHTS[name]
        for query_index, (query_term, expanded) in enumerate(expansions.items()):
            if query_term.startswith("#") and name != "tags":
                # A `#tag` is matched where tags live: an inline `#tag` in the text is
                # already in the tags field, and counted again it ranks a note that
                # repeats the tag above one about the query's words. Its bare word
                # (`tag`) still matches anywhere.
                continue
            for term, prefix_weight in expanded:
                docs = holders.get(term)
                if docs is None:
                    continue
                batch = bm25_plus(len(docs), count, lengths[docs], average)
                scores[docs] += weight * prefix_weight * batch
                matched[query_index, docs] = True
                field_matches.append((name, term, weight, docs))
    final = scores * matched.sum(axis=0)
    # A body-less note matches on its name and tags alone, where every word weighs most:
    # it ranks below notes whose text matches as well.
    title_only = np.fromiter((is_title_only(c.chunk) for c in chunks), dtype=bool, count=count)
    final[title_only] *= TITLE_ONLY_FACTOR
    order = np.argsort(-final, kind="stable")[:limit]
    order = order[final[order] > 0.0]
    position = np.full(count, -1, dtype=np.int64)
    position[order] = np.arange(len(order))
    matches: list[list[dict[str, Any]]] = [[] for _ in order]
    fuzzy = {
        other
        for term, expanded in expansions.items()
        for other, weight in expanded
        if weight == FUZZY_WEIGHT and other != term
    }
    for name, term, weight, docs in field_matches:
        hit_positions = position[docs]
        match: dict[str, Any] = {"field": name, "query": term, "weight": weight}
        if term in fuzzy:
            match["fuzzy"] = True  # the query had a typo; this is the word it was near
        for hit_position in hit_positions[hit_positions >= 0].tolist():
            matches[hit_position].append(dict(match))
    return [
        LexicalHit(chunks[index], float(final[index]), hit_matches)
        for index, hit_matches in zip(order.tolist(), matches, strict=True)
    ]
