"""`KeywordIndex`: BM25 and TF-IDF over a chunk store, combined and boosted (seed 004).

The seed built `rank_bm25.BM25Okapi` and scikit-learn's `TfidfVectorizer` in memory at
every start and transformed every chunk again on every query. Here both formulas are kept
exactly and laid out as term-major postings, in parts with one job each:

- `keyword_scoring`: the postings and weights, and the scores of a query from them;
- `keyword_chunks`: where each chunk's line lies, read back for its text and metadata;
- `keyword_build`: a store's files streamed once into those arrays;
- `keyword_file`: the arrays saved beside the store and loaded when still current.

This module joins them into a search. Scores: BM25, negative sums taken as 0, is divided
by the query's best BM25 among the chunks the filters allow (min-max with a floor of 0;
the seed divided by the maximum), TF-IDF cosine is in [0, 1] already; `combined =
bm25_weight x bm25 + tfidf_weight x tfidf`, times the boosts a chunk earns. A chunk that
matches no query term is not a result (the seed returned the first chunks at score 0
when nothing matched).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from langchain_vaultsearch.chunk_store import keyword_file
from langchain_vaultsearch.chunk_store.analysis import Tokenizer
from langchain_vaultsearch.chunk_store.boosts import QueryBoosts
from langchain_vaultsearch.chunk_store.jsonl_store import ChunkRecord, FileStamp, JsonlChunkStore
from langchain_vaultsearch.chunk_store.keyword_build import build_parts
from langchain_vaultsearch.chunk_store.keyword_chunks import IndexedChunks
from langchain_vaultsearch.chunk_store.keyword_scoring import KeywordScorer
from langchain_vaultsearch.chunk_store.profile import RetrievalProfile


@dataclass
class KeywordHit:
    """One scored chunk.

    Attributes:
        record: the chunk, read from its file.
        bm25: BM25 scaled to [0, 1].
        tfidf: TF-IDF cosine.
        combined: the weighted sum.
        boosts: the boosts earned, by name.
    """

    record: ChunkRecord
    bm25: float
    tfidf: float
    combined: float
    boosts: dict[str, float] = field(default_factory=dict)

    @property
    def final(self) -> float:
        """The score the ranking uses."""
        return self.combined * math.prod(self.boosts.values())


@dataclass
class KeywordIndex:
    """A chunk store's keyword index: built, saved and loaded whole.

    Attributes:
        chunks: where the chunks lie in the store, by chunk number.
        scorer: the postings and weights their terms were counted into.
    """

    chunks: IndexedChunks
    scorer: KeywordScorer

    @classmethod
    def build(cls, store: JsonlChunkStore, tokenizer: Tokenizer) -> KeywordIndex:
        """Index every valid chunk of a store, streaming its files once."""
        return cls(*build_parts(store, tokenizer))

    @classmethod
    def load(
        cls, path: Path, stamps: Sequence[FileStamp], tokenizer: Tokenizer
    ) -> KeywordIndex | None:
        """The saved index when it is current for these files and this tokenizer, else None.

        A damaged or forged file is logged, removed, and None (see `keyword_file.load`).
        """
        parts = keyword_file.load(path, stamps, tokenizer)
        return None if parts is None else cls(*parts)

    def save(self, path: Path) -> bool:
        """Write the index to `path` atomically; False (logged) when it cannot be."""
        return keyword_file.save(path, self.chunks, self.scorer)

    @property
    def stamps(self) -> list[FileStamp]:
        """The store's files when it was built: the index is current while they are."""
        return self.chunks.stamps

    def __len__(self) -> int:
        return len(self.chunks)

    def search(
        self,
        query: str,
        store: JsonlChunkStore,
        profile: RetrievalProfile,
        *,
        k: int,
        filters: Mapping[str, Any] | None = None,
    ) -> list[KeywordHit]:
        """The best `k` chunks for a query, boosted, best first, their records read.

        Boosts only multiply, and whether a chunk can earn one is known from the index
        (it holds every term and frequent word pair of the phrase, its form number is the
        query's), so chunks are taken by the most they could score and a line is read
        only while it could still change the top `k`.

        Args:
            query: the query.
            store: the store the index was built from (to read the candidates' text).
            profile: weights and boosts.
            k: how many chunks at most.
            filters: metadata filters, applied before anything is scored or cut.
        """
        allowed = self.chunks.allowed(store, filters)
        bm25, tfidf = self.scorer.scaled_scores(query, allowed)
        combined = profile.bm25_weight * bm25 + profile.tfidf_weight * tfidf
        candidates = np.flatnonzero(combined > 0)
        if not len(candidates):
            return []
        wants = QueryBoosts.of(query)
        phrase, quoted, form = self.scorer.boost_chances(wants, candidates)
        bound = (
            combined[candidates]
            * np.where(phrase, profile.doc_boost_exact_match, 1.0)
            * np.where(quoted, profile.doc_boost_defined_term, 1.0)
            * np.where(form, profile.doc_boost_form_number, 1.0)
        )
        # A min-heap of the best k so far: (final, -number, boosts, record); of equal
        # scores the later chunk goes first, so the cut is the same on every run.
        top: list[tuple[float, int, dict[str, float], ChunkRecord | None]] = []
        with store.reader() as reader:
            for position in np.argsort(-bound, kind="stable").tolist():
                if len(top) == k and bound[position] < top[0][0]:
                    break  # nothing further down can reach the top k
                number = int(candidates[position])
                boosts = {"formNumber": profile.doc_boost_form_number} if form[position] else {}
                record = None
                if phrase[position] or quoted[position]:
                    possible = (bool(phrase[position]), bool(quoted[position]))
                    earned = self.chunks.text_boosts(reader, number, wants, possible, profile)
                    if earned is None:
                        continue
                    record, text_boosts = earned
                    boosts.update(text_boosts)
                final = float(combined[number]) * math.prod(boosts.values())
                entry = (final, -number, boosts, record)
                if len(top) < k:
                    heapq.heappush(top, entry)
                elif entry[:2] > top[0][:2]:
                    heapq.heapreplace(top, entry)
            hits = []
            kept = sorted(top, key=lambda e: (-e[0], self.chunks.ids[-e[1]]))
            for _, negative, boosts, record in kept:
                number = -negative
                read = record or self.chunks.record(reader, number)
                if read is not None:
                    scores = float(bm25[number]), float(tfidf[number]), float(combined[number])
                    hits.append(KeywordHit(read, *scores, boosts))
        return hits
