"""`KeywordScorer`: BM25 and TF-IDF of a query against every chunk, from postings alone.

Both formulas are kept exactly as the seed's libraries compute them (the tests check
them against those two libraries on the same terms) and laid out as term-major postings,
so a query touches only the chunks that hold its terms:

- BM25 Okapi as rank-bm25 computes it: k1 1.5, b 0.75, idf `ln((N - df + 0.5) / (df +
  0.5))`, a negative idf replaced by 0.25 x the mean idf; each query token counts each
  time it occurs. rank-bm25 scores every chunk in Python per query token.
- TF-IDF as scikit-learn computes it: raw counts, smooth idf `ln((1 + N) / (1 + df)) + 1`,
  L2-normalised rows, the 5,000 most frequent unigrams and bigrams (`keyword_build` picks
  them).

`benchmarks/keyword_speed.py` measures both against the libraries on 100,000 chunks.
The scorer knows chunks by number only: where their lines lie and what they say is
`keyword_chunks`' job, so scoring never reads a file.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.chunk_store.analysis import (
    Tokenizer,
    bm25_terms,
    tfidf_terms,
    tfidf_words,
)
from langchain_vaultsearch.chunk_store.boosts import QueryBoosts

BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Postings:
    """Term-major postings: term t's chunks are `docs[offsets[t]:offsets[t + 1]]`.

    Attributes:
        offsets: int64, one more than there are terms.
        docs: int32 chunk numbers, ascending within a term.
        values: per posting: term counts (BM25), normalised weights (TF-IDF), or none.
    """

    offsets: npt.NDArray[np.int64]
    docs: npt.NDArray[np.int32]
    values: npt.NDArray[Any]

    def of(self, term: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[Any]]:
        """The chunks holding a term, and its values there."""
        start, end = int(self.offsets[term]), int(self.offsets[term + 1])
        return self.docs[start:end], self.values[start:end]

    def check(self, terms: int, chunks: int) -> None:
        """Refuse postings that do not describe `terms` terms over `chunks` chunks."""
        offsets = self.offsets
        if len(offsets) != terms + 1 or offsets[0] != 0 or offsets[-1] != len(self.docs):
            msg = "postings offsets do not match the terms"
            raise ValueError(msg)
        if len(self.values) != len(self.docs) or bool(np.any(np.diff(offsets) < 0)):
            msg = "postings are out of order"
            raise ValueError(msg)
        if len(self.docs) and (int(self.docs.min()) < 0 or int(self.docs.max()) >= chunks):
            msg = "postings name chunks that do not exist"
            raise ValueError(msg)


def okapi_idf(df: Ints, n: int) -> npt.NDArray[np.float64]:
    """rank-bm25's `BM25Okapi` idf, its floor for very common terms included."""
    idf = np.log(n - df + 0.5) - np.log(df + 0.5)
    if len(idf):
        floor = BM25_EPSILON * float(idf.mean())
        idf = np.where(idf < 0, floor, idf)
    return idf.astype(np.float64)


def smooth_idf(df: Ints, n: int) -> npt.NDArray[np.float64]:
    """scikit-learn's smooth idf, `ln((1 + N) / (1 + df)) + 1`."""
    return np.log((1 + n) / (1 + df)) + 1.0


@dataclass(frozen=True)
class KeywordScorer:
    """The postings and weights a query is scored with, chunks known by number.

    Attributes:
        tokenizer: how texts became terms.
        bm25_terms: BM25 term -> term number.
        bm25: BM25 postings (term counts, uint16).
        lengths: chunk lengths in BM25 terms.
        bm25_idf: per BM25 term.
        features: TF-IDF feature -> feature number.
        tfidf: TF-IDF postings (L2-normalised weights, float32).
        tfidf_idf: per feature.
        form_numbers: `form_key` of a chunk's `form_number` -> form number.
        forms: the chunks of each form number (postings without values).
    """

    tokenizer: Tokenizer
    bm25_terms: dict[str, int]
    bm25: Postings
    lengths: npt.NDArray[np.int32]
    bm25_idf: npt.NDArray[np.float64]
    features: dict[str, int]
    tfidf: Postings
    tfidf_idf: npt.NDArray[np.float64]
    form_numbers: dict[str, int]
    forms: Postings

    def __len__(self) -> int:
        return len(self.lengths)

    def bm25_scores(self, query: str) -> npt.NDArray[np.float64]:
        """Raw BM25 Okapi of every chunk (each query token counted each time it occurs)."""
        scores = np.zeros(len(self), dtype=np.float64)
        if not len(self):
            return scores
        average = float(self.lengths.mean()) or 1.0
        for token in bm25_terms(query, self.tokenizer):
            term = self.bm25_terms.get(token)
            if term is None:
                continue
            docs, counts = self.bm25.of(term)
            tf = counts.astype(np.float64)
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self.lengths[docs] / average)
            scores[docs] += self.bm25_idf[term] * tf * (BM25_K1 + 1) / (tf + norm)
        return scores

    def tfidf_scores(self, query: str) -> npt.NDArray[np.float64]:
        """TF-IDF cosine of every chunk with the query."""
        scores = np.zeros(len(self), dtype=np.float64)
        counts: dict[int, int] = {}
        for feature in tfidf_terms(query, self.tokenizer):
            number = self.features.get(feature)
            if number is not None:
                counts[number] = counts.get(number, 0) + 1
        if not counts:
            return scores
        weights = {f: c * float(self.tfidf_idf[f]) for f, c in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        for number, weight in weights.items():
            docs, values = self.tfidf.of(number)
            scores[docs] += (weight / norm) * values
        return scores

    def scaled_scores(
        self, query: str, allowed: Mask | None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """BM25 scaled to [0, 1] and TF-IDF cosine, 0 for chunks not `allowed`.

        Args:
            query: the query.
            allowed: which chunks the filters let through (None: all of them).
        """
        bm25 = self.bm25_scores(query)
        tfidf = self.tfidf_scores(query)
        if allowed is not None:
            bm25[~allowed] = 0.0
            tfidf[~allowed] = 0.0
        # rank-bm25's idf floor is negative in a small store where most terms are in most
        # chunks; no match counts against a chunk, so a negative sum is taken as 0.
        np.maximum(bm25, 0.0, out=bm25)
        best = float(bm25.max()) if len(bm25) else 0.0
        if best > 0:
            bm25 /= best
        return bm25, tfidf

    def boost_chances(self, wants: QueryBoosts, candidates: Ints) -> tuple[Mask, Mask, Mask]:
        """Which candidates may earn the exact-match, quoted-term and form-number boosts.

        The form-number boost is decided here; the other two are only ruled out here, and
        a chunk they are not ruled out for has its text read to decide.
        """
        phrase = self._may_hold(wants.phrase, candidates)
        quoted = np.zeros(len(candidates), dtype=bool)
        for term in wants.quoted_terms:
            quoted |= self._may_hold(term, candidates)
        form = np.zeros(len(candidates), dtype=bool)
        for key in wants.form_numbers:
            number = self.form_numbers.get(key)
            if number is not None:
                form |= np.isin(candidates, self.forms.of(number)[0])
        return phrase, quoted, form

    def _may_hold(self, phrase: str, candidates: Ints) -> Mask:
        """Which candidates may hold a phrase: all its terms and its frequent word pairs.

        Adjacent words of the phrase are adjacent TF-IDF words of any text holding it, so
        a pair that is a TF-IDF feature must be one of the chunk's features too.
        """
        holding = self._holding_all(bm25_terms(phrase, self.tokenizer), candidates)
        words = tfidf_words(phrase, self.tokenizer)
        for pair in (f"{a} {b}" for a, b in itertools.pairwise(words)):
            feature = self.features.get(pair)
            if feature is not None and holding.any():
                holding &= np.isin(candidates, self.tfidf.of(feature)[0], assume_unique=True)
        return holding

    def _holding_all(self, terms: Sequence[str], candidates: Ints) -> Mask:
        """Which candidates hold every one of the terms (False for all when there are none)."""
        holding = np.ones(len(candidates), dtype=bool) if terms else np.zeros(0, bool)
        for term in dict.fromkeys(terms):
            number = self.bm25_terms.get(term)
            if number is None:
                return np.zeros(len(candidates), dtype=bool)
            holding &= np.isin(candidates, self.bm25.of(number)[0], assume_unique=True)
        return holding if len(holding) else np.zeros(len(candidates), dtype=bool)
