"""`KeywordIndex`: BM25 and TF-IDF over a chunk store, combined and boosted (seed 004).

The seed built `rank_bm25.BM25Okapi` and scikit-learn's `TfidfVectorizer` in memory at
every start and transformed every chunk again on every query. Both formulas are kept
exactly (the tests check them against those two libraries on the same terms) and laid
out as term-major postings, so a query touches only the chunks that hold its terms:

- BM25 Okapi as rank-bm25 computes it: k1 1.5, b 0.75, idf `ln((N - df + 0.5) / (df +
  0.5))`, a negative idf replaced by 0.25 x the mean idf; each query token counts each
  time it occurs. rank-bm25 scores every chunk in Python per query token.
- TF-IDF as scikit-learn computes it: raw counts, smooth idf `ln((1 + N) / (1 + df)) + 1`,
  L2-normalised rows, the 5,000 most frequent unigrams and bigrams. scikit-learn builds
  every distinct bigram before keeping 5,000; here a bigram is counted only when both its
  words are among the 5,000 most frequent unigrams, which is exact: a bigram occurs at
  most as often as either word, and the 5,000th feature occurs at least as often as the
  5,000th unigram.

`benchmarks/keyword_speed.py` measures both against the libraries on 100,000 chunks.
Nothing per chunk is a Python object but its id: terms, counts and postings are numpy
arrays built in blocks of chunks, metadata stays in the files (read back for the results,
and once per key a query filters on).

Scores: BM25, negative sums taken as 0, is divided by the query's best BM25 among the
chunks the filters allow (min-max with a floor of 0; the seed divided by the maximum),
TF-IDF cosine is in [0, 1] already; `combined = bm25_weight x bm25 + tfidf_weight x
tfidf`, times the boosts a chunk earns. A chunk that matches no query term is not a result
(the seed returned the first chunks at score 0 when nothing matched).
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.chunk_store import analysis
from langchain_vaultsearch.chunk_store.analysis import (
    Tokenizer,
    bm25_terms,
    tfidf_terms,
    tfidf_words,
)
from langchain_vaultsearch.chunk_store.boosts import QueryBoosts, form_key
from langchain_vaultsearch.chunk_store.jsonl_store import (
    MAX_LINE_BYTES,
    ChunkLocation,
    ChunkReader,
    ChunkRecord,
    FileStamp,
    JsonlChunkStore,
    parse_line,
)
from langchain_vaultsearch.chunk_store.profile import RetrievalProfile
from langchain_vaultsearch.expansion import terms as stop_word_source
from langchain_vaultsearch.expansion.terms import STOP_WORDS
from langchain_vaultsearch.safe_archive import (
    HEADER,
    UNREADABLE,
    check_sizes,
    code_key,
    discard,
    refused_folder,
    typed_array,
    write_atomically,
)
from langchain_vaultsearch.text import tokenize

logger = logging.getLogger(__name__)

BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25
TFIDF_FEATURES = 5000
INDEX_FILE = "keyword-index.npz"
BLOCK_CHUNKS = 4096
"""Chunks counted together: big enough for numpy, small enough to keep temporaries small."""
PAIR_COUNTER_LIMIT = 40_000_000
"""Frequent-word pairs counted in one array up to this many possible pairs (160 MB)."""
_MISSING = object()

Ints = npt.NDArray[np.int64]


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
        tokenizer: how texts became terms.
        stamps: the store's files when it was built (a change means rebuild).
        files: the files chunk locations refer to.
        ids: chunk ids, by chunk number.
        lines: per chunk (file number, line, byte offset, byte length), int64.
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
    stamps: list[FileStamp]
    files: list[str]
    ids: list[str]
    lines: npt.NDArray[np.int64]
    bm25_terms: dict[str, int]
    bm25: Postings
    lengths: npt.NDArray[np.int32]
    bm25_idf: npt.NDArray[np.float64]
    features: dict[str, int]
    tfidf: Postings
    tfidf_idf: npt.NDArray[np.float64]
    form_numbers: dict[str, int]
    forms: Postings
    _filter_values: dict[str, dict[tuple[bool, Any], npt.NDArray[np.int32]]] = field(
        default_factory=dict, repr=False
    )

    # ------------------------------------------------------------------ building

    @classmethod
    def build(cls, store: JsonlChunkStore, tokenizer: Tokenizer) -> KeywordIndex:
        """Index every valid chunk of a store, streaming its files once."""
        stamps = store.stamps()
        files = [name for name, _, _ in stamps]
        file_numbers = {name: number for number, name in enumerate(files)}
        ids: list[str] = []
        lines = array("q")
        vocabulary: dict[str, int] = {}
        words: dict[str, int] = vocabulary if tokenizer == "unicode" else {}
        bm25 = _ChunkTerms()
        word_stream, word_starts = array("i"), array("q", [0])
        forms: dict[str, list[int]] = {}
        for number, record in enumerate(store.records()):
            ids.append(record.id)
            where = record.location
            lines.extend((file_numbers[where.file], where.line, where.offset, where.length))
            terms = bm25_terms(record.text, tokenizer)
            bm25.add(np.fromiter(_numbers(terms, vocabulary), np.int32, len(terms)))
            kept = (
                tfidf_words(record.text, tokenizer)
                if tokenizer == "whitespace"
                else [t for t in terms if t not in STOP_WORDS]
            )
            word_stream.extend(_numbers(kept, words))
            word_starts.append(len(word_stream))
            key = form_key(record.metadata.get("form_number"))
            if key is not None:
                forms.setdefault(key, []).append(number)
        n = len(ids)
        # BM25 first: its chunk-major input is freed before the TF-IDF arrays exist.
        postings, lengths = bm25.postings(len(vocabulary))
        del bm25
        word_numbers = np.frombuffer(word_stream, dtype=np.int32)
        starts = np.frombuffer(word_starts, dtype=np.int64)
        features, mapping = _tfidf_features(word_numbers, starts, list(words))
        counted = mapping.counts(word_numbers, starts)
        del word_numbers, word_stream  # the largest array of the build, done with
        tfidf, tfidf_idf = _tfidf_weights(*counted, len(features), n)
        form_names = sorted(forms)
        return cls(
            tokenizer=tokenizer,
            stamps=stamps,
            files=files,
            ids=ids,
            lines=np.frombuffer(lines, dtype=np.int64).reshape(-1, 4).copy(),
            bm25_terms=vocabulary,
            bm25=postings,
            lengths=lengths,
            bm25_idf=_okapi_idf(np.diff(postings.offsets), n),
            features=features,
            tfidf=tfidf,
            tfidf_idf=tfidf_idf,
            form_numbers={name: i for i, name in enumerate(form_names)},
            forms=_value_postings([forms[name] for name in form_names]),
        )

    # ------------------------------------------------------------------ scoring

    def __len__(self) -> int:
        return len(self.ids)

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

    def allowed(
        self, store: JsonlChunkStore, filters: Mapping[str, Any] | None
    ) -> npt.NDArray[np.bool_] | None:
        """Which chunks pass the metadata filters (None: all of them).

        The first query that filters on a key reads that key of every chunk from the
        files once; later ones look the values up.
        """
        if not filters:
            return None
        mask = np.ones(len(self), dtype=bool)
        for key, wanted in filters.items():
            values = self._values_of(store, key)
            accepted = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
            passing = np.zeros(len(self), dtype=bool)
            for value in accepted:
                chunks = values.get(_value_key(value)) if _hashable(value) else None
                if chunks is not None:
                    passing[chunks] = True
            mask &= passing
        return mask

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
        bm25, tfidf = self._scaled_scores(query, store, filters)
        combined = profile.bm25_weight * bm25 + profile.tfidf_weight * tfidf
        candidates = np.flatnonzero(combined > 0)
        if not len(candidates):
            return []
        wants = QueryBoosts.of(query)
        phrase = self._may_hold(wants.phrase, candidates)
        quoted = np.zeros(len(candidates), dtype=bool)
        for term in wants.quoted_terms:
            quoted |= self._may_hold(term, candidates)
        form = np.zeros(len(candidates), dtype=bool)
        for key in wants.form_numbers:
            number = self.form_numbers.get(key)
            if number is not None:
                form |= np.isin(candidates, self.forms.of(number)[0])
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
                    earned = self._text_boosts(reader, number, wants, possible, profile)
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
            kept = sorted(top, key=lambda e: (-e[0], self.ids[-e[1]]))
            for _, negative, boosts, record in kept:
                number = -negative
                read = record or self._record(reader, number)
                if read is not None:
                    scores = float(bm25[number]), float(tfidf[number]), float(combined[number])
                    hits.append(KeywordHit(read, *scores, boosts))
        return hits

    def _scaled_scores(
        self, query: str, store: JsonlChunkStore, filters: Mapping[str, Any] | None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """BM25 scaled to [0, 1] and TF-IDF cosine, 0 for chunks the filters leave out."""
        bm25 = self.bm25_scores(query)
        tfidf = self.tfidf_scores(query)
        allowed = self.allowed(store, filters)
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

    def _text_boosts(
        self,
        reader: ChunkReader,
        number: int,
        wants: QueryBoosts,
        possible: tuple[bool, bool],
        profile: RetrievalProfile,
    ) -> tuple[ChunkRecord | None, dict[str, float]] | None:
        """The boosts a chunk's text earns, and its record when it had to be parsed.

        None when the line is no longer the chunk (the store changed under the index).
        """
        location = self._location(number)
        raw = reader.raw(location)
        if raw is None:
            self._gone(number, reader)
            return None
        if not wants.may_match_line(raw, phrase=possible[0], quoted=possible[1]):
            return None, {}
        record = parse_line(raw, location)
        if record is None or record.id != self.ids[number]:
            self._gone(number, reader)
            return None
        earned = wants.text_factors(
            record.text, phrase_possible=possible[0], quoted_possible=possible[1], profile=profile
        )
        return record, earned

    def _record(self, reader: ChunkReader, number: int) -> ChunkRecord | None:
        """A chunk's record read back, None (logged) when the line is no longer it."""
        location = self._location(number)
        raw = reader.raw(location)
        record = None if raw is None else parse_line(raw, location)
        if record is None or record.id != self.ids[number]:
            self._gone(number, reader)
            return None
        return record

    def _gone(self, number: int, reader: ChunkReader) -> None:
        logger.warning(
            "Chunk %s changed under the keyword index of %s; it is rebuilt on the next query",
            self.ids[number],
            reader.root,
        )

    def _may_hold(self, phrase: str, candidates: Ints) -> npt.NDArray[np.bool_]:
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

    def _holding_all(self, terms: Sequence[str], candidates: Ints) -> npt.NDArray[np.bool_]:
        """Which candidates hold every one of the terms (False for all when there are none)."""
        holding = np.ones(len(candidates), dtype=bool) if terms else np.zeros(0, bool)
        for term in dict.fromkeys(terms):
            number = self.bm25_terms.get(term)
            if number is None:
                return np.zeros(len(candidates), dtype=bool)
            holding &= np.isin(candidates, self.bm25.of(number)[0], assume_unique=True)
        return holding if len(holding) else np.zeros(len(candidates), dtype=bool)

    def _location(self, number: int) -> ChunkLocation:
        file, line, offset, length = (int(v) for v in self.lines[number])
        return ChunkLocation(self.files[file], line, offset, length)

    def _values_of(
        self, store: JsonlChunkStore, key: str
    ) -> dict[tuple[bool, Any], npt.NDArray[np.int32]]:
        """Metadata value -> the chunks that have it under `key` (read once per key)."""
        known = self._filter_values.get(key)
        if known is not None:
            return known
        numbers = {chunk_id: number for number, chunk_id in enumerate(self.ids)}
        found: dict[tuple[bool, Any], list[int]] = {}
        for record in store.records():
            number = numbers.get(record.id)
            value = record.metadata.get(key, _MISSING)
            if number is None or value is _MISSING:
                continue
            for item in value if isinstance(value, list) else [value]:
                if _hashable(item):
                    found.setdefault(_value_key(item), []).append(number)
        index = {value: np.array(chunks, dtype=np.int32) for value, chunks in found.items()}
        self._filter_values[key] = index
        return index

    # ------------------------------------------------------------------ saving

    def save(self, path: Path) -> bool:
        """Write the index to `path` atomically; False (logged) when it cannot be."""
        refused = refused_folder(path.parent)
        if refused is not None:
            logger.warning("Not saving the keyword index in %s: %s", path.parent, refused)
            return False
        header = {
            "format": format_key(),
            "tokenizer": self.tokenizer,
            "stamps": self.stamps,
            "files": self.files,
            "ids": self.ids,
            "bm25_terms": list(self.bm25_terms),
            "features": list(self.features),
            "form_numbers": list(self.form_numbers),
        }
        arrays: dict[str, npt.NDArray[Any]] = {
            "lines": self.lines.reshape(-1),
            "bm25_offsets": self.bm25.offsets,
            "bm25_docs": self.bm25.docs,
            "bm25_counts": self.bm25.values,
            "lengths": self.lengths,
            "tfidf_offsets": self.tfidf.offsets,
            "tfidf_docs": self.tfidf.docs,
            "tfidf_weights": self.tfidf.values,
            "form_offsets": self.forms.offsets,
            "form_docs": self.forms.docs,
        }
        try:
            write_atomically(path, header, arrays)
        except OSError as exc:
            logger.info("Not saving the keyword index to %s: %s", path, exc)
            return False
        return True

    @classmethod
    def load(
        cls, path: Path, stamps: Sequence[FileStamp], tokenizer: Tokenizer
    ) -> KeywordIndex | None:
        """The saved index when it is current for these files and this tokenizer, else None.

        The file is input (anyone with the folder can change it): a damaged or forged one
        is logged at WARNING, removed, and rebuilt by the caller; never trusted.
        """
        if refused_folder(path.parent) is not None or not path.is_file():
            return None
        try:
            check_sizes(path)
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(data[HEADER]) if HEADER in data.files else None
                if not isinstance(header, dict) or header.get("format") != format_key():
                    logger.info("Ignoring %s: saved by another version", path)
                    return None
                if header.get("tokenizer") != tokenizer:
                    return None
                if [tuple(s) for s in header["stamps"]] != [tuple(s) for s in stamps]:
                    return None
                index = cls._from_saved(header, data)
        except UNREADABLE as exc:
            discard(path, "the keyword index", exc)
            return None
        return index

    @classmethod
    def _from_saved(cls, header: dict[str, Any], data: Mapping[str, Any]) -> KeywordIndex:
        """The index a saved file holds, checked against the store it was loaded for.

        `header["stamps"]` already equals the store's own listing (`load`): the files a
        query opens must be those, and each chunk's line must lie within its file, or a
        forged file would have queries read a FIFO (forever), `/dev/zero` or a file
        outside the store. The idf of every term follows from the postings and is
        computed again, not read: a saved NaN or huge value made every query find nothing.
        """
        stamps = [(str(a), int(b), int(c)) for a, b, c in header["stamps"]]
        files = _strings(header["files"], "files")
        if files != [name for name, _, _ in stamps]:
            msg = "the saved file list is not the store's files"
            raise ValueError(msg)
        ids = _strings(header["ids"], "ids")
        n = len(ids)
        if len(set(ids)) != n:
            msg = "chunk ids repeat"
            raise ValueError(msg)
        lines = typed_array(data, "lines", np.int64)
        if len(lines) != 4 * n:
            msg = "chunk locations do not match the ids"
            raise ValueError(msg)
        lines = lines.reshape(-1, 4)
        if n and (lines.min() < 0 or int(lines[:, 0].max()) >= len(files)):
            msg = "chunk locations name files that do not exist"
            raise ValueError(msg)
        file_sizes = np.array([size for _, _, size in stamps], dtype=np.int64)
        offsets, lengths = lines[:, 2], lines[:, 3]
        if np.any(lengths > MAX_LINE_BYTES) or np.any(offsets > file_sizes[lines[:, 0]] - lengths):
            msg = "chunk locations lie outside their files"
            raise ValueError(msg)
        bm25_names = _strings(header["bm25_terms"], "bm25_terms")
        feature_names = _strings(header["features"], "features")
        form_names = _strings(header["form_numbers"], "form_numbers")
        bm25 = Postings(
            typed_array(data, "bm25_offsets", np.int64),
            typed_array(data, "bm25_docs", np.int32),
            typed_array(data, "bm25_counts", np.uint16),
        )
        bm25.check(len(bm25_names), n)
        tfidf = Postings(
            typed_array(data, "tfidf_offsets", np.int64),
            typed_array(data, "tfidf_docs", np.int32),
            typed_array(data, "tfidf_weights", np.float32),
        )
        tfidf.check(len(feature_names), n)
        if not np.all(np.isfinite(tfidf.values)):
            msg = "TF-IDF weights are not finite"
            raise ValueError(msg)
        form_docs = typed_array(data, "form_docs", np.int32)
        forms = Postings(typed_array(data, "form_offsets", np.int64), form_docs, form_docs)
        forms.check(len(form_names), n)
        chunk_lengths = typed_array(data, "lengths", np.int32)
        if len(chunk_lengths) != n or np.any(chunk_lengths < 0):
            msg = "chunk lengths do not match the chunks"
            raise ValueError(msg)
        return cls(
            tokenizer=analysis.check_tokenizer(str(header["tokenizer"])),
            stamps=stamps,
            files=files,
            ids=ids,
            lines=lines,
            bm25_terms={t: i for i, t in enumerate(bm25_names)},
            bm25=bm25,
            lengths=chunk_lengths,
            bm25_idf=_okapi_idf(np.diff(bm25.offsets), n),
            features={t: i for i, t in enumerate(feature_names)},
            tfidf=tfidf,
            tfidf_idf=_smooth_idf(np.diff(tfidf.offsets), n),
            form_numbers={t: i for i, t in enumerate(form_names)},
            forms=forms,
        )


def format_key() -> str:
    """A hash of the code that decides what the saved keyword index holds."""
    return code_key(
        "keyword-index-v1",
        (analysis, tokenize, stop_word_source),
        f"{BM25_K1} {BM25_B} {BM25_EPSILON} {TFIDF_FEATURES}",
    )


class _ChunkTerms:
    """Each chunk's distinct terms and their counts, appended chunk by chunk."""

    def __init__(self) -> None:
        self.terms = array("i")
        self.counts = array("H")
        self.sizes = array("i")
        self.lengths = array("i")

    def add(self, numbers: npt.NDArray[np.int32]) -> None:
        unique, counts = np.unique(numbers, return_counts=True)
        self.terms.frombytes(unique.astype(np.int32).tobytes())
        self.counts.frombytes(np.minimum(counts, 65535).astype(np.uint16).tobytes())
        self.sizes.append(len(unique))
        self.lengths.append(len(numbers))

    def postings(self, terms: int) -> tuple[Postings, npt.NDArray[np.int32]]:
        """Term-major postings, and each chunk's length in terms."""
        term_of = np.frombuffer(self.terms, dtype=np.int32)
        counts = np.frombuffer(self.counts, dtype=np.uint16)
        sizes = np.frombuffer(self.sizes, dtype=np.int32)
        postings = _term_major(term_of, sizes, counts, terms)
        lengths = np.frombuffer(self.lengths, dtype=np.int32).copy()
        self.terms, self.counts = array("i"), array("H")
        return postings, lengths


def _numbers(terms: Iterable[str], vocabulary: dict[str, int]) -> Iterable[int]:
    """Each term's number, new terms numbered as they come."""
    return (vocabulary.setdefault(t, len(vocabulary)) for t in terms)


def _strings(value: object, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        msg = f"{name} is not a list of strings"
        raise ValueError(msg)
    return value


def _hashable(value: object) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _value_key(value: object) -> tuple[bool, Any]:
    # 1 == True in Python; a filter for True must not match a count of 1.
    return isinstance(value, bool), value


def _bincount(values: npt.NDArray[Any], length: int) -> Ints:
    """`np.bincount` of values below `length`, a slice at a time.

    `np.bincount` copies an int32 array to int64 first: 110 MB for the postings of
    100,000 chunks, more than anything else the build holds at that moment.
    """
    total = np.zeros(length, dtype=np.int64)
    step = 1 << 20
    for start in range(0, len(values), step):
        total += np.bincount(values[start : start + step], minlength=length)
    return total


def _okapi_idf(df: Ints, n: int) -> npt.NDArray[np.float64]:
    """rank-bm25's `BM25Okapi` idf, its floor for very common terms included."""
    idf = np.log(n - df + 0.5) - np.log(df + 0.5)
    if len(idf):
        floor = BM25_EPSILON * float(idf.mean())
        idf = np.where(idf < 0, floor, idf)
    return idf.astype(np.float64)


def _smooth_idf(df: Ints, n: int) -> npt.NDArray[np.float64]:
    """scikit-learn's smooth idf, `ln((1 + N) / (1 + df)) + 1`."""
    return np.log((1 + n) / (1 + df)) + 1.0


def _term_major(
    term_of: npt.NDArray[Any], sizes: npt.NDArray[Any], values: npt.NDArray[Any], terms: int
) -> Postings:
    """Chunk-major (term, value) runs, `sizes[c]` for chunk c, turned term-major.

    A counting sort a block of chunks at a time: each block's postings go straight to
    their place after the term's earlier ones, so chunks stay ascending per term and no
    temporary is larger than a block (100,000 chunks hold ~15 million postings, whose
    int64 sort order alone would be 110 MB).
    """
    offsets = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(_bincount(term_of, terms), out=offsets[1:])
    cursor = offsets[:-1].copy()
    docs = np.empty(len(term_of), dtype=np.int32)
    ordered = np.empty(len(term_of), dtype=values.dtype)
    ends = np.cumsum(sizes)
    for c0 in range(0, len(sizes), BLOCK_CHUNKS):
        c1 = min(c0 + BLOCK_CHUNKS, len(sizes))
        low, high = (int(ends[c0 - 1]) if c0 else 0), int(ends[c1 - 1])
        if high <= low:
            continue
        order = np.argsort(term_of[low:high], kind="stable")
        sorted_terms = term_of[low:high][order]
        run_starts = np.flatnonzero(np.diff(sorted_terms, prepend=-1))
        run_sizes = np.diff(run_starts, append=len(sorted_terms))
        within = np.arange(len(sorted_terms)) - np.repeat(run_starts, run_sizes)
        places = cursor[sorted_terms] + within
        owners = np.repeat(np.arange(c0, c1, dtype=np.int32), sizes[c0:c1])
        docs[places] = owners[order]
        ordered[places] = values[low:high][order]
        cursor[sorted_terms[run_starts]] += run_sizes
    return Postings(offsets, docs, ordered)


def _value_postings(chunk_lists: list[list[int]]) -> Postings:
    """Postings without values (form number -> chunks)."""
    offsets = np.zeros(len(chunk_lists) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chunk_lists], out=offsets[1:])
    docs = np.array([n for chunks in chunk_lists for n in chunks], dtype=np.int32)
    return Postings(offsets, docs, docs)


def _tfidf_features(
    words: npt.NDArray[np.int32], starts: npt.NDArray[np.int64], names: list[str]
) -> tuple[dict[str, int], _FeatureMap]:
    """scikit-learn's TF-IDF features (the 5,000 most frequent unigrams and bigrams).

    Args:
        words: every chunk's TF-IDF words (stop words gone), as numbers, one after another.
        starts: where each chunk's words start in `words` (one more than chunks).
        names: the word of each number.

    Returns:
        Feature name -> number, and how word numbers and pairs map to features.
    """
    if not len(words):
        none = np.zeros(0, np.int64)
        return {}, _FeatureMap(np.full(len(names), -1, np.int64), 1, none, none, none, 0)
    counts = _bincount(words, len(names))
    # Bigrams of two frequent words only: no other can be among the most frequent features.
    order = np.argsort(-counts, kind="stable")
    enough = len(order) >= TFIDF_FEATURES  # else every pair may be a feature
    cutoff = max(int(counts[order[TFIDF_FEATURES - 1]]), 1) if enough else 1
    frequent = np.flatnonzero(counts >= cutoff)
    rank = np.full(len(names), -1, dtype=np.int64)
    rank[frequent] = np.arange(len(frequent))
    width = max(len(frequent), 1)
    # Only pairs as frequent as the 5,000th word can be among the features.
    pair_values, pair_counts = _count_pairs(words, starts, rank, width, cutoff)
    # Candidates: every word and those pairs; by corpus count, then name.
    candidate_counts = np.concatenate([counts, pair_counts])
    limit = min(TFIDF_FEATURES, len(candidate_counts))
    threshold = max(-int(np.partition(-candidate_counts, limit - 1)[limit - 1]), 1)

    def name(i: int) -> str:
        if i < len(names):
            return names[i]
        code = int(pair_values[i - len(names)])
        return f"{names[frequent[code // width]]} {names[frequent[code % width]]}"

    contenders = np.flatnonzero(candidate_counts >= threshold).tolist()
    kept = sorted(contenders, key=lambda i: (-int(candidate_counts[i]), name(i)))[:TFIDF_FEATURES]
    kept_names = {i: name(i) for i in kept}
    features = {text: number for number, text in enumerate(sorted(kept_names.values()))}
    word_feature = np.full(len(names), -1, dtype=np.int64)
    pair_feature = np.full(len(pair_values), -1, dtype=np.int64)
    for i, text in kept_names.items():
        if i < len(names):
            word_feature[i] = features[text]
        else:
            pair_feature[i - len(names)] = features[text]
    mapping = _FeatureMap(rank, width, word_feature, pair_values, pair_feature, len(features))
    return features, mapping


def _tfidf_weights(
    feature_of: npt.NDArray[np.int32],
    chunk_sizes: Ints,
    weights: npt.NDArray[np.float32],
    features: int,
    n: int,
) -> tuple[Postings, npt.NDArray[np.float64]]:
    """TF-IDF postings from each chunk's feature counts (turned into weights in place).

    Args:
        feature_of: per (chunk, feature), chunk-major: the feature.
        chunk_sizes: how many features each chunk has.
        weights: per (chunk, feature): its count.
        features: how many features.
        n: chunks.

    Returns:
        The postings (L2-normalised tf x idf) and the idf of each feature.
    """
    idf = _smooth_idf(_bincount(feature_of, features), n)
    idf32 = idf.astype(np.float32)
    row_ends = np.cumsum(chunk_sizes)
    # In place, a block of chunks at a time: one value per (chunk, feature) is the
    # largest array here, and no temporary of its size is made.
    for c0 in range(0, n, BLOCK_CHUNKS):
        c1 = min(c0 + BLOCK_CHUNKS, n)
        low = int(row_ends[c0 - 1]) if c0 else 0
        block = weights[low : int(row_ends[c1 - 1])]
        if not len(block):
            continue
        block *= idf32[feature_of[low : low + len(block)]]
        sizes = chunk_sizes[c0:c1]
        filled = sizes > 0
        local_starts = (np.cumsum(sizes) - sizes)[filled]
        norms = np.ones(c1 - c0, dtype=np.float32)
        norms[filled] = np.sqrt(np.add.reduceat(block * block, local_starts))
        block /= np.repeat(norms, sizes)  # every counted feature weighs > 0
    return _term_major(feature_of, chunk_sizes, weights, features), idf


def _count_pairs(
    words: npt.NDArray[np.int32],
    starts: npt.NDArray[np.int64],
    rank: Ints,
    width: int,
    minimum: int,
) -> tuple[Ints, Ints]:
    """The frequent-word pair codes seen at least `minimum` times, and how often.

    Counted a block of chunks at a time into one counter per possible pair (100 MB for
    5,000 frequent words), so no list of every pair occurrence is ever held; a small
    store with many frequent words (ties at a low count) counts by sorting instead.
    """
    n = len(starts) - 1
    blocks = (
        _frequent_pairs(
            words[int(starts[c0]) : int(starts[min(c0 + BLOCK_CHUNKS, n)])],
            starts[c0 : min(c0 + BLOCK_CHUNKS, n) + 1] - starts[c0],
            rank,
            width,
        )[0]
        for c0 in range(0, n, BLOCK_CHUNKS)
    )
    if width * width > PAIR_COUNTER_LIMIT:
        values, counts = np.unique(
            np.concatenate([*blocks, np.zeros(0, np.int64)]), return_counts=True
        )
        keep = counts >= minimum
        return values[keep], counts[keep].astype(np.int64)
    counter = np.zeros(width * width, dtype=np.uint32)
    for found in blocks:
        unique, seen = np.unique(found, return_counts=True)
        counter[unique] += seen.astype(np.uint32)
    values = np.flatnonzero(counter >= minimum)
    return values.astype(np.int64), counter[values].astype(np.int64)


def _frequent_pairs(
    words: npt.NDArray[np.int32], starts: npt.NDArray[np.int64], rank: Ints, width: int
) -> tuple[Ints, npt.NDArray[np.bool_]]:
    """Codes of adjacent word pairs within a chunk whose words are both frequent.

    Returns:
        The codes (`rank(first) x width + rank(second)`), and which of the positions
        `0 .. len(words) - 2` start such a pair.
    """
    if len(words) < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(max(len(words) - 1, 0), dtype=bool)
    first, second = rank[words[:-1]], rank[words[1:]]
    valid = (first >= 0) & (second >= 0)
    last = starts[1:] - 1  # a chunk's last word pairs with nothing
    valid[last[(last >= 0) & (last < len(valid))]] = False
    return first[valid] * width + second[valid], valid


@dataclass(frozen=True)
class _FeatureMap:
    """How words and frequent-word pairs map to TF-IDF feature numbers (-1: not one).

    Attributes:
        rank: word number -> rank among the frequent words (-1: not frequent).
        width: how many frequent words (pair codes are `rank x width + rank`).
        word_feature: word number -> feature number.
        pair_values: the pair codes seen, sorted.
        pair_feature: per pair code in `pair_values`, its feature number.
        features: how many features.
    """

    rank: Ints
    width: int
    word_feature: Ints
    pair_values: Ints
    pair_feature: Ints
    features: int

    def _pair_features(self, codes: Ints) -> Ints:
        """Each pair code's feature number, -1 for pairs that are not features."""
        if not len(self.pair_values):
            return np.full(len(codes), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.pair_values, codes), len(self.pair_values) - 1)
        return np.where(self.pair_values[at] == codes, self.pair_feature[at], -1)

    def counts(
        self, words: npt.NDArray[np.int32], starts: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int32], Ints, npt.NDArray[np.float32]]:
        """Per chunk its features and their counts (chunk-major), a block at a time.

        Returns:
            Feature numbers, how many each chunk has, and their counts.
        """
        # Grown in place (array), not concatenated at the end: no second copy of the
        # largest arrays of the build.
        feature_of, counts_of, sizes = array("i"), array("f"), array("q")
        n = len(starts) - 1
        for c0 in range(0, n, BLOCK_CHUNKS):
            c1 = min(c0 + BLOCK_CHUNKS, n)
            low, high = int(starts[c0]), int(starts[c1])
            block = words[low:high]
            local_starts = starts[c0 : c1 + 1] - low
            chunk = np.repeat(np.arange(c1 - c0, dtype=np.int64), np.diff(local_starts))
            codes, valid = _frequent_pairs(block, local_starts, self.rank, self.width)
            bigram = self._pair_features(codes)
            feature = np.concatenate([self.word_feature[block], bigram])
            owner = np.concatenate([chunk, chunk[:-1][valid]])
            keep = feature >= 0
            keys, counts = np.unique(
                owner[keep] * self.features + feature[keep], return_counts=True
            )
            feature_of.frombytes((keys % self.features).astype(np.int32).tobytes())
            counts_of.frombytes(counts.astype(np.float32).tobytes())
            sizes.frombytes(np.bincount(keys // self.features, minlength=c1 - c0).tobytes())
        return (
            np.frombuffer(feature_of, dtype=np.int32),
            np.frombuffer(sizes, dtype=np.int64),
            np.frombuffer(counts_of, dtype=np.float32),
        )
