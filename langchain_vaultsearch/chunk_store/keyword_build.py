"""Building a keyword index: a chunk store's files streamed once into numpy arrays.

Nothing per chunk is a Python object but its id: terms, counts and postings are numpy
arrays built in blocks of chunks, so 100,000 chunks build within the memory bar
(`benchmarks/keyword_speed.py`); metadata stays in the files.

The TF-IDF features are scikit-learn's: the 5,000 most frequent unigrams and bigrams.
scikit-learn builds every distinct bigram before keeping 5,000; here a bigram is counted
only when both its words are among the 5,000 most frequent unigrams, which is exact: a
bigram occurs at most as often as either word, and the 5,000th feature occurs at least as
often as the 5,000th unigram.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.chunk_store.analysis import Tokenizer, bm25_terms, tfidf_words
from langchain_vaultsearch.chunk_store.boosts import form_key
from langchain_vaultsearch.chunk_store.jsonl_store import JsonlChunkStore
from langchain_vaultsearch.chunk_store.keyword_chunks import IndexedChunks
from langchain_vaultsearch.chunk_store.keyword_scoring import (
    Ints,
    KeywordScorer,
    Postings,
    okapi_idf,
    smooth_idf,
)
from langchain_vaultsearch.expansion.terms import STOP_WORDS

TFIDF_FEATURES = 5000
BLOCK_CHUNKS = 4096
"""Chunks counted together: big enough for numpy, small enough to keep temporaries small."""
PAIR_COUNTER_LIMIT = 40_000_000
"""Frequent-word pairs counted in one array up to this many possible pairs (160 MB)."""


def build_parts(
    store: JsonlChunkStore, tokenizer: Tokenizer
) -> tuple[IndexedChunks, KeywordScorer]:
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
    chunks = IndexedChunks(
        stamps=stamps,
        files=files,
        ids=ids,
        lines=np.frombuffer(lines, dtype=np.int64).reshape(-1, 4).copy(),
    )
    scorer = KeywordScorer(
        tokenizer=tokenizer,
        bm25_terms=vocabulary,
        bm25=postings,
        lengths=lengths,
        bm25_idf=okapi_idf(np.diff(postings.offsets), n),
        features=features,
        tfidf=tfidf,
        tfidf_idf=tfidf_idf,
        form_numbers={name: i for i, name in enumerate(form_names)},
        forms=_value_postings([forms[name] for name in form_names]),
    )
    return chunks, scorer


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
    idf = smooth_idf(_bincount(feature_of, features), n)
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
