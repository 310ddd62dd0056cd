"""`KeywordIndex`: BM25 and TF-IDF over a chunk store, combined and boosted (seed 004).

The seed built `rank_bm25.BM25Okapi` and scikit-learn's `TfidfVectorizer` in memory at
every start and transformed every chunk again on every query. Both formulas are kept
exactly (the tests check them against those two libraries on the same terms) and laid
out as term-major postings, so a query touches only the chunks that hold its terms:

- BM25 Okapi as rank-bm25 computes it: k1 1.5, b 0.75, idf `ln((N - df + 0.5) / (df +
  0.5))`, a negative idf replaced by 0.25 x the mean idf; each query token counts each
  time it occurs. rank-bm25 scores every chunk in Python per query token (~40 ms per token
  at 32,000 chunks) and its constructor walks every chunk in Python.
- TF-IDF as scikit-learn computes it: raw counts, smooth idf `ln((1 + N) / (1 + df)) + 1`,
  L2-normalised rows, the 5,000 most frequent unigrams and bigrams. scikit-learn builds
  every distinct bigram before keeping 5,000 (14 s and millions of strings for 32,000
  chunks); here a bigram is counted only when both its words are among the 5,000 most
  frequent unigrams, which is exact: a bigram occurs at most as often as either word,
  and the 5,000th feature occurs at least as often as the 5,000th unigram.

`benchmarks/keyword_speed.py` measures both against the libraries on 100,000 chunks.

Scores: BM25, negative sums taken as 0, is divided by the query's best BM25 among the
chunks the filters allow (min-max with a floor of 0; the seed divided by the maximum), TF-IDF
cosine is in [0, 1] already; `combined = bm25_weight x bm25 + tfidf_weight x tfidf`,
times the boosts a chunk earns. A chunk that matches no query term is not a result (the
seed returned the first chunks at score 0 when nothing matched).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
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
from langchain_vaultsearch.chunk_store.boosts import QueryBoosts
from langchain_vaultsearch.chunk_store.jsonl_store import (
    ChunkLocation,
    ChunkRecord,
    FileStamp,
    JsonlChunkStore,
    matches_filters,
)
from langchain_vaultsearch.chunk_store.profile import RetrievalProfile
from langchain_vaultsearch.expansion import terms as stop_word_source
from langchain_vaultsearch.safe_archive import (
    HEADER,
    check_sizes,
    refused_folder,
    typed_array,
    write_npz,
)
from langchain_vaultsearch.text import tokenize

logger = logging.getLogger(__name__)

BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25
TFIDF_FEATURES = 5000
INDEX_FILE = "keyword-index.npz"

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Postings:
    """Term-major postings: term t's chunks are `docs[offsets[t]:offsets[t + 1]]`.

    Attributes:
        offsets: int64, one more than there are terms.
        docs: int32 chunk numbers, ascending within a term.
        values: per posting: term counts (BM25) or normalised weights (TF-IDF).
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
        record: the chunk (read again from its file).
        bm25: BM25 scaled to [0, 1].
        tfidf: TF-IDF cosine.
        combined: the weighted sum.
        boosts: the boosts earned, by name.
        final: combined times the boosts.
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
        metadata: chunk metadata, by chunk number (filters and form numbers).
        lines: per chunk (file number, line, byte offset, byte length), int64.
        bm25_terms: BM25 term -> term number.
        bm25: BM25 postings (term counts, int32).
        lengths: chunk lengths in BM25 terms.
        bm25_idf: per BM25 term.
        features: TF-IDF feature -> feature number.
        tfidf: TF-IDF postings (L2-normalised weights, float32).
        tfidf_idf: per feature.
    """

    tokenizer: Tokenizer
    stamps: list[FileStamp]
    files: list[str]
    ids: list[str]
    metadata: list[dict[str, Any]]
    lines: npt.NDArray[np.int64]
    bm25_terms: dict[str, int]
    bm25: Postings
    lengths: npt.NDArray[np.int32]
    bm25_idf: npt.NDArray[np.float64]
    features: dict[str, int]
    tfidf: Postings
    tfidf_idf: npt.NDArray[np.float64]

    # ------------------------------------------------------------------ building

    @classmethod
    def build(cls, store: JsonlChunkStore, tokenizer: Tokenizer) -> KeywordIndex:
        """Index every valid chunk of a store, streaming its files once."""
        stamps = store.stamps()
        files = [name for name, _, _ in stamps]
        file_numbers = {name: number for number, name in enumerate(files)}
        ids: list[str] = []
        metadata: list[dict[str, Any]] = []
        lines: list[tuple[int, int, int, int]] = []
        vocabulary: dict[str, int] = {}
        words: dict[str, int] = {}
        bm25_docs: list[IntArray] = []
        bm25_counts: list[IntArray] = []
        unigram_ids: list[IntArray] = []
        for record in store.records():
            ids.append(record.id)
            metadata.append(record.metadata)
            where = record.location
            lines.append((file_numbers[where.file], where.line, where.offset, where.length))
            terms = np.fromiter(
                (
                    vocabulary.setdefault(t, len(vocabulary))
                    for t in bm25_terms(record.text, tokenizer)
                ),
                dtype=np.int64,
            )
            unique, counts = np.unique(terms, return_counts=True)
            bm25_docs.append(unique)
            bm25_counts.append(counts)
            unigram_ids.append(
                np.fromiter(
                    (words.setdefault(t, len(words)) for t in tfidf_words(record.text, tokenizer)),
                    dtype=np.int64,
                )
            )
        n = len(ids)
        bm25, lengths = _bm25_postings(bm25_docs, bm25_counts, len(vocabulary))
        del bm25_docs, bm25_counts
        features, tfidf, tfidf_idf = _tfidf_postings(unigram_ids, words, n)
        return cls(
            tokenizer=tokenizer,
            stamps=stamps,
            files=files,
            ids=ids,
            metadata=metadata,
            lines=np.array(lines, dtype=np.int64).reshape(-1, 4),
            bm25_terms=vocabulary,
            bm25=bm25,
            lengths=lengths,
            bm25_idf=_okapi_idf(np.diff(bm25.offsets), n),
            features=features,
            tfidf=tfidf,
            tfidf_idf=tfidf_idf,
        )

    # ------------------------------------------------------------------ scoring

    def __len__(self) -> int:
        return len(self.ids)

    def allowed(self, filters: Mapping[str, Any] | None) -> npt.NDArray[np.bool_] | None:
        """Which chunks pass the metadata filters (None: all of them)."""
        if not filters:
            return None
        return np.fromiter((matches_filters(m, filters) for m in self.metadata), bool, len(self))

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

    def search(
        self,
        query: str,
        store: JsonlChunkStore,
        profile: RetrievalProfile,
        *,
        k: int,
        filters: Mapping[str, Any] | None = None,
    ) -> list[KeywordHit]:
        """The best `k` chunks for a query, boosted, best first.

        Args:
            query: the query.
            store: the store the index was built from (to read the candidates' text).
            profile: weights and boosts.
            k: how many chunks at most.
            filters: metadata filters, applied before anything is scored or cut.
        """
        bm25 = self.bm25_scores(query)
        tfidf = self.tfidf_scores(query)
        allowed = self.allowed(filters)
        if allowed is not None:
            bm25[~allowed] = 0.0
            tfidf[~allowed] = 0.0
        # rank-bm25's idf floor is negative in a small store where most terms are in most
        # chunks; no match counts against a chunk, so a negative sum is taken as 0.
        np.maximum(bm25, 0.0, out=bm25)
        best = float(bm25.max()) if len(bm25) else 0.0
        if best > 0:
            bm25 /= best
        combined = profile.bm25_weight * bm25 + profile.tfidf_weight * tfidf
        candidates = np.flatnonzero(combined > 0)
        if not len(candidates):
            return []
        # Boosts only multiply, so a chunk whose best possible boosted score is below the
        # k-th unboosted one cannot make the cut: its text need not be read.
        order = candidates[np.argsort(-combined[candidates], kind="stable")]
        if len(order) > k:
            floor = combined[order[k - 1]]
            order = order[combined[order] * profile.max_boost >= floor]
        query_boosts = QueryBoosts.of(query)
        hits = []
        for number in order.tolist():
            record = self._read(store, number)
            if record is None:
                continue
            hit = KeywordHit(
                record, float(bm25[number]), float(tfidf[number]), float(combined[number])
            )
            hit.boosts = query_boosts.factors(record.text, record.metadata, profile)
            hits.append(hit)
        hits.sort(key=lambda h: (-h.final, h.record.id))
        return hits[:k]

    def _read(self, store: JsonlChunkStore, number: int) -> ChunkRecord | None:
        file, line, offset, length = (int(v) for v in self.lines[number])
        record = store.read(ChunkLocation(self.files[file], line, offset, length))
        if record is None or record.id != self.ids[number]:
            logger.warning(
                "Chunk %s changed under the keyword index of %s; it is rebuilt on the next query",
                self.ids[number],
                store.root,
            )
            return None
        return record

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
            "metadata": self.metadata,
            "bm25_terms": list(self.bm25_terms),
            "features": list(self.features),
        }
        arrays: dict[str, npt.NDArray[Any]] = {
            "lines": self.lines.reshape(-1),
            "bm25_offsets": self.bm25.offsets,
            "bm25_docs": self.bm25.docs,
            "bm25_counts": self.bm25.values,
            "lengths": self.lengths,
            "bm25_idf": self.bm25_idf,
            "tfidf_offsets": self.tfidf.offsets,
            "tfidf_docs": self.tfidf.docs,
            "tfidf_weights": self.tfidf.values,
            "tfidf_idf": self.tfidf_idf,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as out:
                    write_npz(out, header, arrays)
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except (OSError, ValueError) as exc:
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
        except (
            OSError,
            ValueError,
            KeyError,
            TypeError,
            EOFError,
            zipfile.BadZipFile,
            RecursionError,
            MemoryError,
        ) as exc:
            reason = str(exc)[:200] or type(exc).__name__
            logger.warning(
                "Ignoring the keyword index %s: %s (removed; it is rebuilt)", path, reason
            )
            path.unlink(missing_ok=True)
            return None
        return index

    @classmethod
    def _from_saved(cls, header: dict[str, Any], data: Mapping[str, Any]) -> KeywordIndex:
        files = _strings(header["files"], "files")
        ids = _strings(header["ids"], "ids")
        metadata = header["metadata"]
        if not isinstance(metadata, list) or not all(isinstance(m, dict) for m in metadata):
            msg = "metadata is not a list of objects"
            raise ValueError(msg)
        n = len(ids)
        if len(metadata) != n or len(set(ids)) != n:
            msg = "ids and metadata do not match"
            raise ValueError(msg)
        lines = typed_array(data, "lines", np.int64)
        if len(lines) != 4 * n:
            msg = "chunk locations do not match the ids"
            raise ValueError(msg)
        lines = lines.reshape(-1, 4)
        if n and (lines.min() < 0 or int(lines[:, 0].max()) >= len(files)):
            msg = "chunk locations name files that do not exist"
            raise ValueError(msg)
        bm25_names = _strings(header["bm25_terms"], "bm25_terms")
        feature_names = _strings(header["features"], "features")
        bm25 = Postings(
            typed_array(data, "bm25_offsets", np.int64),
            typed_array(data, "bm25_docs", np.int32),
            typed_array(data, "bm25_counts", np.int32),
        )
        bm25.check(len(bm25_names), n)
        tfidf = Postings(
            typed_array(data, "tfidf_offsets", np.int64),
            typed_array(data, "tfidf_docs", np.int32),
            typed_array(data, "tfidf_weights", np.float32),
        )
        tfidf.check(len(feature_names), n)
        lengths = typed_array(data, "lengths", np.int32)
        bm25_idf = typed_array(data, "bm25_idf", np.float64)
        tfidf_idf = typed_array(data, "tfidf_idf", np.float64)
        if (
            len(lengths) != n
            or len(bm25_idf) != len(bm25_names)
            or len(tfidf_idf) != len(feature_names)
        ):
            msg = "array lengths do not match"
            raise ValueError(msg)
        return cls(
            tokenizer=analysis.check_tokenizer(str(header["tokenizer"])),
            stamps=[(str(a), int(b), int(c)) for a, b, c in header["stamps"]],
            files=files,
            ids=ids,
            metadata=metadata,
            lines=lines,
            bm25_terms={t: i for i, t in enumerate(bm25_names)},
            bm25=bm25,
            lengths=lengths,
            bm25_idf=bm25_idf,
            features={t: i for i, t in enumerate(feature_names)},
            tfidf=tfidf,
            tfidf_idf=tfidf_idf,
        )


def format_key() -> str:
    """A hash of the code that decides what the saved keyword index holds."""
    digest = hashlib.sha256(b"keyword-index-v1")
    for module in (analysis, tokenize, stop_word_source):
        source = getattr(module, "__file__", None)
        digest.update(Path(source).read_bytes() if source else module.__name__.encode())
    digest.update(f"{BM25_K1} {BM25_B} {BM25_EPSILON} {TFIDF_FEATURES}".encode())
    return digest.hexdigest()[:16]


def _strings(value: object, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        msg = f"{name} is not a list of strings"
        raise ValueError(msg)
    return value


def _okapi_idf(df: IntArray, n: int) -> npt.NDArray[np.float64]:
    """rank-bm25's `BM25Okapi` idf, its floor for very common terms included."""
    idf = np.log(n - df + 0.5) - np.log(df + 0.5)
    if len(idf):
        floor = BM25_EPSILON * float(idf.mean())
        idf = np.where(idf < 0, floor, idf)
    return idf.astype(np.float64)


def _bm25_postings(
    docs_terms: list[IntArray], docs_counts: list[IntArray], terms: int
) -> tuple[Postings, npt.NDArray[np.int32]]:
    """Chunk-major (terms, counts) lists turned term-major, and each chunk's length."""
    lengths = np.array([int(c.sum()) for c in docs_counts], dtype=np.int32)
    return _term_major(docs_terms, docs_counts, terms, np.int32), lengths


def _term_major(
    docs_terms: list[IntArray],
    docs_values: list[npt.NDArray[Any]],
    terms: int,
    dtype: Any,  # noqa: ANN401
) -> Postings:
    if not docs_terms:
        return Postings(np.zeros(terms + 1, np.int64), np.zeros(0, np.int32), np.zeros(0, dtype))
    term_of = np.concatenate(docs_terms)
    values = np.concatenate(docs_values).astype(dtype)
    doc_of = np.repeat(np.arange(len(docs_terms), dtype=np.int32), [len(t) for t in docs_terms])
    order = np.argsort(term_of, kind="stable")  # stable: chunks stay ascending per term
    offsets = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_of, minlength=terms), out=offsets[1:])
    return Postings(offsets, doc_of[order], values[order])


def _tfidf_postings(
    unigram_ids: list[IntArray], words: dict[str, int], n: int
) -> tuple[dict[str, int], Postings, npt.NDArray[np.float64]]:
    """scikit-learn's TF-IDF (5,000 features, unigrams and bigrams) from unigram numbers."""
    names = list(words)
    if not names:
        return {}, _term_major([], [], 0, np.float32), np.zeros(0)
    word_counts = (
        np.bincount(np.concatenate(unigram_ids), minlength=len(names))
        if unigram_ids
        else np.zeros(len(names), np.int64)
    )
    # Only bigrams of frequent words can be among the most frequent features.
    by_count = np.argsort(-word_counts, kind="stable")
    cutoff = word_counts[by_count[min(TFIDF_FEATURES, len(names)) - 1]]
    frequent = np.flatnonzero(word_counts >= max(cutoff, 1))
    rank = np.full(len(names), -1, dtype=np.int64)
    rank[frequent] = np.arange(len(frequent))
    width = len(frequent)
    pair_codes = [_pairs(ids, rank, width) for ids in unigram_ids]
    all_pairs = np.concatenate(pair_codes) if pair_codes else np.zeros(0, np.int64)
    pair_values, pair_counts = np.unique(all_pairs, return_counts=True)
    del all_pairs
    # Candidates: every word and every frequent-word bigram, by corpus count, then name;
    # names are made only for those at or above the count of the 5,000th.
    candidate_counts = np.concatenate([word_counts, pair_counts])
    limit = min(TFIDF_FEATURES, len(candidate_counts))
    threshold = max(int(np.partition(-candidate_counts, limit - 1)[limit - 1]) * -1, 1)
    contenders = np.flatnonzero(candidate_counts >= threshold).tolist()

    def name(i: int) -> str:
        if i < len(names):
            return names[i]
        code = int(pair_values[i - len(names)])
        return f"{names[frequent[code // width]]} {names[frequent[code % width]]}"

    ranked = sorted(contenders, key=lambda i: (-int(candidate_counts[i]), name(i)))
    kept = ranked[:TFIDF_FEATURES]
    kept_names = {i: name(i) for i in kept}
    features = {n: number for number, n in enumerate(sorted(kept_names.values()))}
    # Map word numbers and pair codes to feature numbers (-1: not a feature).
    word_feature = np.full(len(names), -1, dtype=np.int64)
    pair_feature = np.full(len(pair_values), -1, dtype=np.int64)
    for i in kept:
        number = features[kept_names[i]]
        if i < len(names):
            word_feature[i] = number
        else:
            pair_feature[i - len(names)] = number
    doc_features: list[IntArray] = []
    doc_counts: list[IntArray] = []
    for ids, pairs in zip(unigram_ids, pair_codes, strict=True):
        mapped = word_feature[ids] if len(ids) else np.zeros(0, np.int64)
        if len(pairs):
            mapped = np.concatenate([mapped, pair_feature[np.searchsorted(pair_values, pairs)]])
        unique, counts = np.unique(mapped[mapped >= 0], return_counts=True)
        doc_features.append(unique)
        doc_counts.append(counts)
    df = np.zeros(len(features), dtype=np.int64)
    for unique in doc_features:
        df[unique] += 1
    idf = np.log((1 + n) / (1 + df)) + 1.0
    weights = []
    for unique, counts in zip(doc_features, doc_counts, strict=True):
        row = counts * idf[unique]
        norm = float(np.sqrt(np.dot(row, row)))
        weights.append(row / norm if norm > 0 else row)
    return features, _term_major(doc_features, weights, len(features), np.float32), idf


def _pairs(ids: IntArray, rank: IntArray, width: int) -> IntArray:
    """Codes of a chunk's adjacent word pairs whose words are both frequent."""
    if len(ids) < 2:
        return np.zeros(0, dtype=np.int64)
    first, second = rank[ids[:-1]], rank[ids[1:]]
    both = (first >= 0) & (second >= 0)
    return first[both] * width + second[both]


def index_file(folder: Path) -> Path:
    """Where a store's keyword index is saved inside `folder`."""
    return folder / INDEX_FILE
