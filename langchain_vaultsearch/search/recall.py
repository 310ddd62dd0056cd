"""Recall: which notes are worth ranking at all.

The original greps note text for each recall term and keeps the first 200 hits in vault
order, so a common term fills the slots before relevant notes are reached. Here the whole
vault is considered (docs/design.md, decision 2) and candidates ranked by how many
distinct recall terms they match, path hits first. A literal substring scan of a 33 MB
vault costs 20-55 ms per term in Python (measured; see the README), so the scan is done
once: `RecallIndex` keeps postings of every note's index terms, updated from the vault's
change sets, and a query combines them with numpy in a few milliseconds.

The index stays resident for the life of a process, so it is kept compact: a 6,280-note
vault has 279,000 distinct terms and 1.9 million (term, note) postings. As a dict of
terms and sorted arrays with a term id per posting they took 62 MB; as one sorted UTF-8
buffer of terms and postings in compressed sparse rows they take 18 MB, and load from
disk without creating a Python object per term.
"""

from __future__ import annotations

import bisect
import codecs
import itertools
import math
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import InitVar, dataclass

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.text.homophones import has_reading, looks_for_slips, sound_alikes
from langchain_vaultsearch.text.tokenize import contains_cjk, tokenize_mixed

PREFIX_WEIGHT = 0.375
MAX_PREFIX_EXPANSIONS = 64
FUZZY_WEIGHT = 0.25
"""Weight of a vocabulary term a typo is close to: below any prefix match (>= 0.288)."""
MAX_FUZZY_EXPANSIONS = 8
SOUND_ALIKE_CACHE = 4096
"""Bigrams whose slips by sound a vocabulary remembers (about 1 MB)."""
FUZZY_MIN_LENGTH = 4
FUZZY_FAR_LENGTH = 8
"""Terms of 4-7 characters match words 1 edit away; from 8 characters, 2 edits."""
_MIN_PREFIX = 3
# From this many changed notes on, one update sorts them into the postings arrays in a
# single numpy pass (a cold build, a saved index catching up); fewer go to the delta.
BULK_NOTES = 64
# Notes indexed into the delta before it is folded into the arrays.
COMPACT_DELTA_NOTES = 2000

BoolMask = npt.NDArray[np.bool_]
TermIds = npt.NDArray[np.int32]
NoteIds = npt.NDArray[np.int32]
Offsets = npt.NDArray[np.int64]
# (note, term id) or (term id, note) pairs, one int64 each: high and low 32 bits.
PackedPairs = npt.NDArray[np.int64]

# Ends every term in a `SortedTerms` buffer; tokens never contain whitespace.
_SEPARATOR = b"\n"
# Never part of UTF-8: `key + _ABOVE_UTF8` sorts after every term that extends `key`.
_ABOVE_UTF8 = b"\xff"
_UTF8_CHECK_CHUNK = 1 << 20
# Terms joined per step when packing a buffer.
_PACK_TERMS = 4096
_SAMPLE_EVERY = 64
# Postings packed per step: mapping ids a part at a time keeps no full-size temporary.
_PACK_CHUNK = 1 << 16
# Packed pairs of retired notes are set to this, so sorting moves them to the end.
_RETIRED = np.iinfo(np.int64).max
_LOW_32 = 0xFFFFFFFF
_NO_PAIRS = np.zeros(0, dtype=np.int64)


class SortedTerms:
    """Distinct terms, sorted, in one UTF-8 buffer; a term's id is its rank.

    279,000 terms as `str` keys of a dict cost 36 MB (dict, strings, int ids); as one
    bytes object of newline-ended UTF-8 plus the start offset of each term they cost
    5 MB, and a saved index loads them without a Python object per term. A lookup
    bisects a sample of every 64th term in C, then the buffer in ~6 slice comparisons
    (~3 us); the terms a prefix begins are the run of ranks right after it. UTF-8 byte
    order is code point order, so the buffer sorts exactly as the `str` terms do. UTF-8
    rather than one `str`: a single character outside the Basic Multilingual Plane would
    make a `str` 4 bytes a letter.
    """

    def __init__(self, buffer: bytes = b"") -> None:
        """Wrap a buffer of sorted, distinct, newline-ended terms (see `check_terms`)."""
        self.buffer = buffer
        ends = np.flatnonzero(np.frombuffer(buffer, dtype=np.uint8) == _SEPARATOR[0])
        self._starts: Offsets = np.concatenate([np.zeros(1, dtype=np.int64), ends + 1])
        # Python ints from a memoryview read ~3x faster than numpy scalars in bisect.
        self._start = self._starts.data
        # Every 64th term: C-level `bisect` over them narrows a lookup to one block.
        self._samples = [self._key(rank) for rank in range(0, len(self), _SAMPLE_EVERY)]

    @classmethod
    def from_sorted(cls, terms: Sequence[str]) -> SortedTerms:
        """Pack terms that are already sorted and distinct."""
        # In pieces: one `str` of every term could take 4 bytes a character.
        pieces = range(0, len(terms), _PACK_TERMS)
        return cls(
            b"".join(("\n".join(terms[i : i + _PACK_TERMS]) + "\n").encode() for i in pieces)
        )

    def __len__(self) -> int:
        return len(self._starts) - 1

    def term(self, rank: int) -> str:
        """The term of a rank."""
        return self._key(rank).decode()

    def decode_range(self, ranks: range) -> list[str]:
        """The terms of a run of ranks (one decode and split in C)."""
        if not len(ranks):
            return []
        span = self.buffer[self._start[ranks.start] : self._start[ranks.stop]]
        return span.decode().split("\n")[:-1]

    def decode_all(self) -> list[str]:
        """Every term, in rank order (a Python object per term: for rebuilds only)."""
        return self.buffer.decode().split("\n")[:-1]

    def rank(self, term: str) -> int | None:
        """The rank of a term, or None when it is not here."""
        key = term.encode()
        found = self._bisect(key, 0)
        return found if found < len(self) and self._key(found) == key else None

    def prefixed(self, prefix: str) -> tuple[int | None, range]:
        """The rank of `prefix` (None when absent) and the ranks of the terms extending it."""
        key = prefix.encode()
        first = self._bisect(key, 0)
        own = first if first < len(self) and self._key(first) == key else None
        if own is not None:
            first += 1
        return own, range(first, self._bisect(key + _ABOVE_UTF8, first))

    def shortest(self, ranks: range, limit: int) -> list[tuple[str, int]]:
        """Up to `limit` terms of a run of ranks, shortest first, then in rank order.

        A three-letter prefix can begin thousands of terms; their lengths in characters
        come from counting UTF-8 lead bytes in numpy, so only the kept ones are decoded.
        """
        if len(ranks) > limit:
            lengths = self._lengths(ranks.start, ranks.stop)
            chosen = (ranks.start + np.argsort(lengths, kind="stable")[:limit]).tolist()
            return [(self.term(rank), rank) for rank in chosen]
        return [(self.term(rank), rank) for rank in ranks]

    def select(self, keep: BoolMask) -> SortedTerms:
        """The terms whose rank `keep` marks, in one numpy pass over the buffer."""
        if keep.all():
            return self
        byte_mask = np.repeat(keep, np.diff(self._starts))
        return SortedTerms(np.frombuffer(self.buffer, dtype=np.uint8)[byte_mask].tobytes())

    def _key(self, rank: int) -> bytes:
        return self.buffer[self._start[rank] : self._start[rank + 1] - 1]

    def _bisect(self, key: bytes, low: int) -> int:
        """The first rank from `low` on whose term is not below `key`."""
        block = bisect.bisect_left(self._samples, key)
        high = min(block * _SAMPLE_EVERY, len(self))
        low = max(low, (block - 1) * _SAMPLE_EVERY + 1)
        buffer, start = self.buffer, self._start
        while low < high:
            middle = (low + high) // 2
            if buffer[start[middle] : start[middle + 1] - 1] < key:
                low = middle + 1
            else:
                high = middle
        return low

    def _lengths(self, first: int, stop: int) -> npt.NDArray[np.int64]:
        """Length in characters of the terms of ranks [first, stop)."""
        begin = self._start[first]
        span = np.frombuffer(
            self.buffer, dtype=np.uint8, count=self._start[stop] - begin, offset=begin
        )
        lead_bytes = np.zeros(len(span) + 1, dtype=np.int64)
        np.cumsum((span & 0xC0) != 0x80, out=lead_bytes[1:])
        bounds = self._starts[first : stop + 1] - begin
        return np.diff(lead_bytes[bounds]) - 1  # each term's separator is one character


def check_terms(buffer: bytes) -> int:
    """Validate a `SortedTerms` buffer read from a file, and count its terms.

    Order is not checked (a misordered buffer only makes lookups miss); the structure
    and the encoding are, since a bad byte would otherwise raise inside a query.

    Raises:
        ValueError: empty terms, a missing final separator, or invalid UTF-8.
    """
    if buffer and (
        not buffer.endswith(_SEPARATOR) or buffer.startswith(_SEPARATOR) or _SEPARATOR * 2 in buffer
    ):
        msg = "the term list has an empty term or no final separator"
        raise ValueError(msg)
    # In 1 MB pieces: decoding the whole buffer would briefly hold up to 4x its size.
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(buffer)
    for begin in range(0, len(view), _UTF8_CHECK_CHUNK):
        decoder.decode(view[begin : begin + _UTF8_CHECK_CHUNK])
    decoder.decode(b"", final=True)
    return buffer.count(_SEPARATOR)


class Vocabulary:
    """Every index term seen in the vault, with its id, for lookups and prefix matching.

    Prefix matching (`deploy` finds `deployment`) needs the terms that start with a query
    term: in the sorted terms of the last bulk build or compaction they are one run of
    ranks. Terms first seen since then (edited notes, indexed one at a time) take the
    next ids in a small dict until the next compaction, so an edit never re-sorts the
    vocabulary.
    """

    def __init__(self, terms: SortedTerms | None = None) -> None:
        """Start from sorted terms (their ranks are their ids), or from none."""
        self.sorted = terms if terms is not None else SortedTerms()
        self._recent: dict[str, int] = {}
        self._recent_lock = threading.Lock()
        """Held to add to `_recent` and to copy it (`_recent_items`): searches read the
        vocabulary outside the index's lock while a sync adds terms, and a dict iterated
        while another thread adds to it raises (searches during edits fell back to recall
        order). A copy made in one C call is not enough: the garbage collector it may set
        off can run other threads."""
        self.frequency: Callable[[int], int] | None = None
        """How many notes hold a term id, when postings are at hand (`RecallIndex`)."""
        self._sound_alikes: dict[str, list[tuple[str, int | None]]] = {}

    def __len__(self) -> int:
        return len(self.sorted) + len(self._recent)

    @property
    def has_recent(self) -> bool:
        """Whether terms were added since the sorted terms were built."""
        return bool(self._recent)

    def add(self, term: str) -> int:
        """Remember a term, and return its id."""
        term_id = self.id_of(term)
        if term_id is None:
            with self._recent_lock:
                term_id = self._recent[term] = len(self)
            self._sound_alikes.clear()  # a new bigram may sound like a query's
        return term_id

    def _recent_items(self) -> list[tuple[str, int]]:
        with self._recent_lock:
            return list(self._recent.items())

    def id_of(self, term: str) -> int | None:
        """A term's id, or None when no note holds it."""
        term_id = self._recent.get(term)
        return self.sorted.rank(term) if term_id is None else term_id

    def terms(self) -> list[str]:
        """Every term, in id order."""
        return [*self.sorted.decode_all(), *self._recent]

    def fuzzy(self, term: str, *, by_sound: bool = True) -> list[tuple[str, int | None]]:
        """Vocabulary terms within a small edit distance of a term no note holds.

        1 edit for terms of 4-7 characters, 2 from 8 (typos in longer words are more
        often double), two neighbouring letters swapped counting as one edit ("machien",
        "standpu": the commonest slip, which plain Levenshtein counts as two). Words
        only: never a tag, a number or a code. Only terms with the same first character
        are compared: first letters are rarely the typo, and they narrow the vocabulary
        to one sorted run (a few thousand terms, compared in C by rapidfuzz in about a
        millisecond). A Chinese bigram is near the bigrams that sound the same
        (`sound_alike`): one character of two is a different word by edit distance, but
        a pinyin input method's slip by sound.

        Args:
            term: a query term no note holds, lowercase.
            by_sound: look for Chinese slips by sound; False for a query with kana, whose
                kanji are Japanese (their slips are not Mandarin homophones).

        Returns:
            `(term, id)` pairs, closest first, then in order.
        """
        if contains_cjk(term):
            return self.sound_alike(term) if by_sound else []
        if len(term) < FUZZY_MIN_LENGTH or not term.isalpha():
            return []  # tags, numbers and codes are exact or nothing
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        distance = 1 if len(term) < FUZZY_FAR_LENGTH else 2
        _own, ranks = self.sorted.prefixed(term[0])
        first = ranks.start - 1 if _own is not None else ranks.start
        run = range(max(first, 0), ranks.stop)
        choices = self.sorted.decode_range(run)
        recent = [other for other, _id in self._recent_items() if other[:1] == term[:1]]
        found = process.extract(
            term,
            [*choices, *recent],
            scorer=OSA.distance,
            score_cutoff=distance,
            limit=MAX_FUZZY_EXPANSIONS + 1,
        )
        matches = sorted((score, other) for other, score, _index in found if other != term)
        return [(other, self.id_of(other)) for _score, other in matches[:MAX_FUZZY_EXPANSIONS]]

    def sound_alike(self, term: str) -> list[tuple[str, int | None]]:
        """Vocabulary bigrams that are a Chinese bigram with one character that sounds alike.

        `清断` (in no note) finds `轻断`: both read `qing duan`. Only bigrams of two
        Chinese characters, the terms a Chinese run is indexed as; kana, hangul, a longer
        term find nothing. A vault's bigrams include every pair of neighbouring
        characters, so a common syllable finds many (`记意` finds `记一`, `记以`, ... as
        well as `记忆`): the ones the most notes hold come first, as the word meant is
        a common one. Remembered per term until the vocabulary gains a term.

        Returns:
            `(term, id)` pairs, most notes first (then in code point order), at most
            `MAX_FUZZY_EXPANSIONS`.
        """
        found = self._sound_alikes.get(term)
        if found is None:
            if len(self._sound_alikes) >= SOUND_ALIKE_CACHE:
                self._sound_alikes.clear()  # a server's queries must not grow it forever
            found = self._sound_alikes[term] = self._find_sound_alikes(term)
        return found

    def _find_sound_alikes(self, term: str) -> list[tuple[str, int | None]]:
        if len(term) != 2 or not (has_reading(term[0]) and has_reading(term[1])):
            return []
        first, second = term[0], term[1]
        candidates = itertools.chain(
            (first + other for other in sound_alikes(second)),
            (other + second for other in sound_alikes(first)),
        )
        found = [(c, i) for c in candidates if (i := self.id_of(c)) is not None]
        frequency = self.frequency
        if frequency is not None:
            found.sort(key=lambda pair: -frequency(pair[1]))
        return [(candidate, term_id) for candidate, term_id in found[:MAX_FUZZY_EXPANSIONS]]

    def expand(self, term: str, *, by_sound: bool = True) -> list[tuple[str, float]]:
        """The term itself and the terms it is a prefix of, with their weights.

        Two-character Latin prefixes such as `js` or `ai` are not expanded: they begin
        hundreds of unrelated words. A single CJK character is, since it is otherwise
        unreachable in a bigram index; a CJK bigram is not (it is a whole term).

        Args:
            term: a query term, lowercase.
            by_sound: look for Chinese slips by sound (see `fuzzy`).

        Returns:
            `(term, 1.0)` first, then up to 64 longer terms, closest in length first,
            weighted `0.375 * len(t) / (len(t) + 0.3 * (len(t) - len(term)))` as in
            MiniSearch, the original's engine. A term that is in no note and begins no
            term is taken for a typo: up to 8 terms close to it (`fuzzy`) follow, weighted
            0.25, below every exact and prefix match.
        """
        return [(other, weight) for other, weight, _id in self.expand_ids(term, by_sound=by_sound)]

    def expand_ids(
        self, term: str, *, by_sound: bool = True
    ) -> list[tuple[str, float, int | None]]:
        """`expand` with each term's id (None for the query term when no note holds it)."""
        if len(term) == 2 and contains_cjk(term):
            # A CJK bigram is a whole term, not a prefix; one no note holds may be a slip.
            own = self.id_of(term)
            if own is not None:
                return [(term, 1.0, own)]
            slips = self.fuzzy(term, by_sound=by_sound)
            return [(term, 1.0, None), *((other, FUZZY_WEIGHT, i) for other, i in slips)]
        if len(term) < _MIN_PREFIX and not contains_cjk(term):
            return [(term, 1.0, self.id_of(term))]
        own, ranks = self.sorted.prefixed(term)
        if own is None:
            own = self._recent.get(term)
        longer = self.sorted.shortest(ranks, MAX_PREFIX_EXPANSIONS)
        longer += [
            (other, other_id)
            for other, other_id in self._recent_items()
            if len(other) > len(term) and other.startswith(term)
        ]
        longer.sort(key=lambda item: (len(item[0]), item[0]))
        expanded: list[tuple[str, float, int | None]] = [(term, 1.0, own)]
        for other, other_id in longer[:MAX_PREFIX_EXPANSIONS]:
            extra = len(other) - len(term)
            weight = PREFIX_WEIGHT * len(other) / (len(other) + 0.3 * extra)
            expanded.append((other, weight, other_id))
        if own is None and not longer:  # in no note, as a word or a prefix: a typo?
            slips = self.fuzzy(term, by_sound=by_sound)
            expanded.extend((other, FUZZY_WEIGHT, other_id) for other, other_id in slips)
        return expanded


@dataclass(frozen=True)
class RecallDocument:
    """One document as recall sees it, whatever its source (a note, a JSONL chunk).

    Attributes:
        id: the document's id (a vault-relative note path for notes).
        body: its text.
        about: what it is about (title, path, aliases, tags): a hit here counts twice.
        searchable: False keeps it indexed but never returned (exclusion rules).
    """

    id: str
    body: str
    about: str
    searchable: bool = True


@dataclass
class Postings:
    """Term id -> note ids: compressed sparse rows for the bulk of the vault, a dict for edits.

    The notes holding term `t` are `note_ids[offsets[t]:offsets[t + 1]]`: 4 bytes per
    (note, term) pair and 8 per term, built by one numpy sort, read by two array lookups.
    A dict of per-term arrays would cost ~100 bytes of Python objects per term. Notes
    indexed one at a time after that go to `delta`, keyed by term id, until the next
    compaction.
    """

    offsets: Offsets
    note_ids: NoteIds
    delta: dict[int, array[int]]

    @classmethod
    def empty(cls) -> Postings:
        """No postings."""
        return cls(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32), {})

    @classmethod
    def from_pairs(
        cls,
        pairs: list[PackedPairs],
        terms: int,
        ranks: TermIds | None,
        renumber: NoteIds | None,
    ) -> Postings:
        """Sort (note, term id) pairs into rows, mapping ids on the way.

        Pairs arrive packed as `note << 32 | term` and are repacked in place, a part at
        a time, as `term << 32 | note`, then sorted in place: a 6,280-note vault's 1.9
        million pairs never take more than their 15 MB, where separate term and note
        arrays, an argsort and a gathered copy took twice that.

        Args:
            pairs: arrays of packed pairs, taken (the list is emptied and the arrays
                overwritten).
            terms: the number of term ids after mapping.
            ranks: old term id -> new one, or None to keep them.
            renumber: old note id -> new one, -1 for a retired note (its pairs are
                dropped), or None to keep them.

        Returns:
            The postings, each row's notes ascending, without a delta.
        """
        parts = [keys for keys in pairs if keys.size]
        pairs.clear()
        # One array (a cold build's) is repacked where it lies, not copied.
        keys = parts[0] if len(parts) == 1 else np.concatenate([_NO_PAIRS, *parts])
        del parts
        for begin in range(0, len(keys), _PACK_CHUNK):
            part = keys[begin : begin + _PACK_CHUNK]
            term_ids = part & _LOW_32
            note_ids = part >> 32
            if ranks is not None:
                term_ids = ranks[term_ids]
            if renumber is not None:
                note_ids = renumber[note_ids]
            np.left_shift(term_ids, 32, out=part, dtype=np.int64)
            part |= note_ids
            part[note_ids < 0] = _RETIRED
        keys.sort()
        keys = keys[: np.searchsorted(keys, _RETIRED)]
        offsets = np.searchsorted(keys, np.arange(terms + 1, dtype=np.int64) << 32)
        keys &= _LOW_32
        return cls(offsets.astype(np.int64, copy=False), keys.astype(np.int32), {})

    def keep_rows(self, keep: BoolMask) -> Postings:
        """The postings without the rows `keep` leaves out, which must be empty."""
        offsets = np.concatenate([self.offsets[:1], self.offsets[1:][keep]])
        return Postings(offsets, self.note_ids, self.delta)

    def packed(self) -> PackedPairs:
        """Every (note, term id) pair, the delta's included, packed as `note << 32 | term`."""
        rows = np.repeat(np.arange(len(self.offsets) - 1, dtype=np.int32), np.diff(self.offsets))
        delta_terms = np.fromiter(self.delta, dtype=np.int32, count=len(self.delta))
        delta_counts = np.fromiter(map(len, self.delta.values()), dtype=np.int64)
        delta_notes = np.frombuffer(b"".join(self.delta.values()), dtype=np.int32)
        keys = np.left_shift(np.concatenate([self.note_ids, delta_notes]), 32, dtype=np.int64)
        keys |= np.concatenate([rows, np.repeat(delta_terms, delta_counts)])
        return keys

    def lookup(self, term_id: int) -> NoteIds:
        """The notes holding a term (retired notes included; callers mask them)."""
        if term_id < len(self.offsets) - 1:
            found = self.note_ids[self.offsets[term_id] : self.offsets[term_id + 1]]
        else:
            found = self.note_ids[:0]
        extra = self.delta.get(term_id)
        if extra is None:
            return found
        return np.concatenate([found, np.frombuffer(extra, dtype=np.int32)])

    def count(self, term_id: int) -> int:
        """How many postings a term has (retired notes included), without copying them."""
        held = 0
        if term_id < len(self.offsets) - 1:
            held = int(self.offsets[term_id + 1] - self.offsets[term_id])
        extra = self.delta.get(term_id)
        return held if extra is None else held + len(extra)

    def add(self, note_id: int, term_ids: Sequence[int]) -> None:
        """Post one note's terms to the delta."""
        for term_id in term_ids:
            notes = self.delta.get(term_id)
            if notes is None:
                notes = self.delta[term_id] = array("i")
            notes.append(note_id)


class TermNumbering(dict[str, int]):
    """Term -> id, a new term taking the next id when first looked up.

    Most of a note's terms are known after the first notes: looking each up at C speed,
    and calling Python only for a new one, took a third less time than finding the new
    ones first with a set difference.
    """

    def __missing__(self, term: str) -> int:
        term_id = self[term] = len(self)
        return term_id

    def ranked(self) -> tuple[TermIds, SortedTerms]:
        """The rank of each term id among the terms sorted, and the terms; the dict is emptied."""
        ordered = sorted(self)
        ids_by_rank = np.fromiter(map(self.__getitem__, ordered), dtype=np.int32, count=len(self))
        self.clear()
        ranks = np.empty(len(ordered), dtype=np.int32)
        ranks[ids_by_rank] = np.arange(len(ordered), dtype=np.int32)
        return ranks, SortedTerms.from_sorted(ordered)


class _BulkPostings:
    """The postings of a bulk update or compaction, collected before the terms are sorted.

    A dict interns the terms at C speed (`TermNumbering`). Each field's term ids go into one
    growing array, with each note's id and count of terms beside, and are packed as
    `note << 32 | term id` at the end, in numpy. It starts from the vocabulary's terms,
    so they keep their ids, and lives only until the terms are sorted.
    """

    def __init__(self, known_terms: list[str]) -> None:
        """Start from the vocabulary's terms, in id order."""
        self._ids = TermNumbering(zip(known_terms, itertools.count()))
        # Per field (body, meta): term ids, then each note's id and its count of terms.
        self._fields = [(array("i"), array("i"), array("i")) for _ in range(2)]

    def add(self, note_id: int, body: list[str], meta: list[str]) -> None:
        """Collect one note's body and meta terms."""
        term_id = self._ids.__getitem__
        for (term_ids, notes, counts), terms in zip(self._fields, (body, meta), strict=True):
            term_ids.extend(map(term_id, terms))
            notes.append(note_id)
            counts.append(len(terms))

    def sort_terms(self) -> tuple[TermIds, SortedTerms]:
        """Every term sorted, and the rank of each term id; the dict is released."""
        ids, self._ids = self._ids, TermNumbering()
        return ids.ranked()

    def take_pairs(self) -> list[PackedPairs]:
        """Each field's packed pairs; the collecting arrays are handed over."""
        fields, self._fields = self._fields, []
        packed = []
        for term_ids, notes, counts in fields:
            note_bits = np.repeat(np.frombuffer(notes, dtype=np.int32), counts).astype(np.int64)
            note_bits <<= 32
            note_bits |= np.frombuffer(term_ids, dtype=np.int32)
            packed.append(note_bits)
        return packed


_CHECK_BLOCK = 4 * 1024 * 1024
"""Note ids checked between two releases of a mapped file's pages (16 MB)."""


@dataclass(frozen=True)
class RecallSnapshot:
    """A compacted `RecallIndex` as arrays and bytes, for saving to disk.

    Checked when made, so a damaged or hand-edited file is refused with a `ValueError`
    instead of failing inside a later query. Made from a mapped file, `release` lets go
    of the pages read so far after each block of postings checked: checking 100,480
    notes' postings read ~135 MB of them, all resident at once until the end, which was
    a restart's peak memory.

    Attributes:
        paths: note path of each note id.
        vocabulary: every term, sorted, each ended by a newline, UTF-8; a term's id is
            its rank (see `SortedTerms`).
        body: (offsets, note ids) postings of note text (see `Postings`).
        meta: (offsets, note ids) postings of titles, paths, aliases and tags.
    """

    paths: list[str]
    vocabulary: bytes
    body: tuple[Offsets, NoteIds]
    meta: tuple[Offsets, NoteIds]
    release: InitVar[Callable[[], None] | None] = None

    def __post_init__(self, release: Callable[[], None] | None) -> None:
        terms = check_terms(self.vocabulary)
        for offsets, note_ids in (self.body, self.meta):
            if offsets.shape != (terms + 1,) or note_ids.ndim != 1:
                msg = "postings offsets do not match the term list"
                raise ValueError(msg)
            if offsets[0] != 0 or offsets[-1] != note_ids.size or np.any(np.diff(offsets) < 0):
                msg = "postings offsets do not ascend from 0 to the number of postings"
                raise ValueError(msg)
            for begin in range(0, note_ids.size, _CHECK_BLOCK):
                block = note_ids[begin : begin + _CHECK_BLOCK]
                if block.min() < 0 or block.max() >= len(self.paths):
                    msg = "postings point at notes that do not exist"
                    raise ValueError(msg)
                if release is not None:
                    release()

    @property
    def terms(self) -> list[str]:
        """Every term, sorted (decodes them all)."""
        return SortedTerms(self.vocabulary).decode_all()


class RecallIndex:
    """Postings of every document's terms, kept current by `apply`.

    A changed note gets a new id and its old id is retired, so updates never rewrite
    postings; retired ids and edits made one at a time are folded away by a compaction
    once they outnumber what they would cost to sort in.
    """

    def __init__(self) -> None:
        self._body = Postings.empty()
        self._meta = Postings.empty()
        self.vocabulary = Vocabulary()
        self._paths: list[str] = []
        self._ids: dict[str, int] = {}
        self._live = np.zeros(0, dtype=np.bool_)
        self._searchable = np.zeros(0, dtype=np.bool_)
        self._delta_notes = 0

    @property
    def vocabulary(self) -> Vocabulary:
        """Every term of the index, which reads how many notes hold a term from here."""
        return self._vocabulary

    @vocabulary.setter
    def vocabulary(self, vocabulary: Vocabulary) -> None:
        vocabulary.frequency = self._notes_holding
        self._vocabulary = vocabulary

    def _notes_holding(self, term_id: int) -> int:
        """Postings of a term in text and metadata (retired notes included: a ranking).

        Read outside the index's lock, by ranking: counted without a view of the delta's
        buffers, which a sync may be growing (a view would make its append fail).
        """
        return self._body.count(term_id) + self._meta.count(term_id)

    @property
    def size(self) -> int:
        """Number of live notes."""
        return len(self._ids)

    def apply(self, updated: Sequence[RecallDocument] = (), removed: Iterable[str] = ()) -> None:
        """Index added and changed documents and retire removed ones (by id)."""
        for doc_id in removed:
            self._retire(doc_id)
        if updated:
            self._grow(len(self._paths) + len(updated))
            if len(updated) >= BULK_NOTES:
                self._index_bulk(updated)
            else:
                self._index_each(updated)
        retired = len(self._paths) - len(self._ids)
        if self._delta_notes >= COMPACT_DELTA_NOTES or (
            retired > 1000 and retired > len(self._ids)
        ):
            self.compact()

    def _new_note(self, doc: RecallDocument) -> int:
        self._retire(doc.id)
        note_id = len(self._paths)
        self._paths.append(doc.id)
        self._ids[doc.id] = note_id
        self._live[note_id] = True
        self._searchable[note_id] = doc.searchable
        return note_id

    @classmethod
    def from_documents(cls, documents: Iterable[RecallDocument], count: int) -> RecallIndex:
        """A new index over documents produced one at a time.

        A first build this way never holds every document's text at once: the 31 MB of a
        6,280-note vault took 46 MB as `str`, on top of the index being built.

        Args:
            documents: the documents, e.g. a generator reading notes one by one.
            count: how many there will be at most (to size the arrays once).

        Returns:
            The index, compacted.
        """
        index = cls()
        index._grow(count)
        index._index_bulk(documents)
        return index

    def holds(self, path: str) -> bool:
        """Whether a note is indexed."""
        return path in self._ids

    def _index_bulk(self, documents: Iterable[RecallDocument]) -> None:
        bulk = _BulkPostings(self.vocabulary.terms())
        for doc in documents:
            note_id = self._new_note(doc)
            bulk.add(note_id, tokenize_mixed(doc.body), tokenize_mixed(doc.about))
        self._rebuild(bulk)

    def _index_each(self, documents: Sequence[RecallDocument]) -> None:
        for doc in documents:
            note_id = self._new_note(doc)
            for postings, terms in (
                (self._body, tokenize_mixed(doc.body)),
                (self._meta, tokenize_mixed(doc.about)),
            ):
                postings.add(note_id, [self.vocabulary.add(term) for term in terms])
            self._delta_notes += 1

    def compact(self) -> None:
        """Drop retired notes and fold the delta into the sorted postings."""
        if self._delta_notes or len(self._ids) < len(self._paths):
            recent = self.vocabulary.has_recent
            self._rebuild(_BulkPostings(self.vocabulary.terms()) if recent else None)

    def _rebuild(self, bulk: _BulkPostings | None) -> None:
        """Sort every posting, the bulk's included, into fresh postings and vocabulary.

        Retired notes are dropped and the rest renumbered; terms that no remaining note
        holds leave the vocabulary.

        Args:
            bulk: new postings and terms; None when the terms are unchanged (a
                compaction after retirements only).
        """
        renumber = self._drop_retired_notes()
        if bulk is None:
            ranks, terms = None, self.vocabulary.sorted
            new_pairs = []
        else:
            ranks, terms = bulk.sort_terms()
            new_pairs = bulk.take_pairs()
        fields = []
        for postings in (self._body, self._meta):
            pairs = [postings.packed(), *new_pairs[:1]]
            del new_pairs[:1]  # from_pairs takes the arrays, so they go once repacked
            fields.append(Postings.from_pairs(pairs, len(terms), ranks, renumber))
        body, meta = fields
        held = (np.diff(body.offsets) > 0) | (np.diff(meta.offsets) > 0)
        if not held.all():
            terms = terms.select(held)
            body, meta = body.keep_rows(held), meta.keep_rows(held)
        self._body, self._meta = body, meta
        self.vocabulary = Vocabulary(terms)
        self._delta_notes = 0

    def _drop_retired_notes(self) -> NoteIds | None:
        """Renumber live notes from 0: old note id -> new one, -1 if retired; None if none is."""
        if len(self._ids) == len(self._paths):
            return None
        live = self._live[: len(self._paths)]
        renumber = np.full(len(self._paths), -1, dtype=np.int32)
        renumber[live] = np.arange(int(live.sum()), dtype=np.int32)
        self._paths = [path for path, alive in zip(self._paths, live, strict=True) if alive]
        self._ids = {path: note_id for note_id, path in enumerate(self._paths)}
        self._searchable = self._searchable[: len(live)][live]
        self._live = np.ones(len(self._paths), dtype=np.bool_)
        return renumber

    def _retire(self, path: str) -> None:
        old = self._ids.pop(path, None)
        if old is not None:
            self._live[old] = False

    def _grow(self, needed: int) -> None:
        if needed <= len(self._live):
            return
        capacity = max(needed, 2 * len(self._live), 1024)
        for name in ("_live", "_searchable"):
            grown = np.zeros(capacity, dtype=np.bool_)
            old = getattr(self, name)
            grown[: len(old)] = old
            setattr(self, name, grown)

    def snapshot(self) -> RecallSnapshot:
        """The index compacted, as arrays and bytes (see `RecallSnapshot`)."""
        self.compact()
        return RecallSnapshot(
            paths=list(self._paths),
            vocabulary=self.vocabulary.sorted.buffer,
            body=(self._body.offsets, self._body.note_ids),
            meta=(self._meta.offsets, self._meta.note_ids),
        )

    @classmethod
    def from_snapshot(cls, snapshot: RecallSnapshot, searchable: Sequence[bool]) -> RecallIndex:
        """An index over a saved snapshot.

        Args:
            snapshot: what `snapshot()` returned, possibly in an earlier process.
            searchable: per note id, whether today's inclusion rules let it be found.

        Returns:
            The index, ready for `apply` to bring it up to date.
        """
        index = cls()
        index.vocabulary = Vocabulary(SortedTerms(snapshot.vocabulary))
        index._body = Postings(*snapshot.body, {})
        index._meta = Postings(*snapshot.meta, {})
        index._paths = list(snapshot.paths)
        index._ids = {path: note_id for note_id, path in enumerate(index._paths)}
        index._live = np.ones(len(index._paths), dtype=np.bool_)
        index._searchable = np.array(searchable, dtype=np.bool_)
        return index

    def candidates(self, recall_terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """Rank searchable notes by the recall terms they contain.

        Each term counts with an IDF weight, so a rare term outweighs a common one, and
        counts twice when it is in the note's title, path, aliases or tags. A one-word
        term also matches the words it is a prefix of; a phrase matches notes that
        contain all of its words.

        Args:
            recall_terms: the query, its variants and its salient terms.
            limit: how many candidates to return.

        Returns:
            `(path, recall score)` pairs, best first.
        """
        count = len(self._paths)
        if count == 0 or limit <= 0:
            return []
        eligible = self._live[:count] & self._searchable[:count]
        total = int(eligible.sum())
        scores = np.zeros(count, dtype=np.float64)
        terms = dict.fromkeys(t.strip().lower() for t in recall_terms if t.strip())
        tokenized = {term: tokenize_mixed(term) for term in terms}
        by_sound = looks_for_slips(list(dict.fromkeys(itertools.chain(*tokenized.values()))))
        for tokens in tokenized.values():
            if not tokens:
                continue
            if len(tokens) == 1:
                expanded = self.vocabulary.expand_ids(tokens[0], by_sound=by_sound)
                term_ids = [term_id for _t, _w, term_id in expanded if term_id is not None]
                body = self._any_mask(self._body, term_ids, count)
                meta = self._any_mask(self._meta, term_ids, count)
            else:
                found_ids = map(self.vocabulary.id_of, tokens)
                word_ids = [term_id for term_id in found_ids if term_id is not None]
                if len(word_ids) < len(tokens):
                    continue  # a phrase with a word no note holds matches nothing
                body = self._all_mask(self._body, word_ids, count)
                meta = self._all_mask(self._meta, word_ids, count)
            either = (body | meta) & eligible
            found = int(either.sum())
            if found == 0:
                continue
            idf = math.log(1.0 + (total - found + 0.5) / (found + 0.5))
            scores += idf * either + idf * (meta & eligible)
        order = np.argsort(-scores, kind="stable")
        ranked: list[tuple[str, float]] = []
        for note_id in order[:limit]:
            score = float(scores[note_id])
            if score <= 0.0:
                break
            ranked.append((self._paths[note_id], score))
        return ranked

    def inverse_document_frequencies(self, terms: Sequence[str]) -> dict[str, float]:
        """How rare each term is among the searchable notes, as recall weighs it.

        A term counts the notes holding it or a word it begins (or, for a word no note
        holds, its close spellings), as `candidates` recalls them; the weight is the same
        BM25 IDF. A term no note holds in any of those ways weighs 0.

        Args:
            terms: index terms (`tokenize_mixed` output), lowercase.

        Returns:
            Each distinct term's IDF.
        """
        count = len(self._paths)
        eligible = self._live[:count] & self._searchable[:count]
        total = int(eligible.sum())
        weights: dict[str, float] = {}
        by_sound = looks_for_slips(terms)
        for term in dict.fromkeys(terms):
            expanded = self.vocabulary.expand_ids(term, by_sound=by_sound)
            term_ids = [i for _t, _w, i in expanded if i is not None]
            holders = self._any_mask(self._body, term_ids, count)
            holders |= self._any_mask(self._meta, term_ids, count)
            found = int((holders & eligible).sum())
            weights[term] = math.log(1.0 + (total - found + 0.5) / (found + 0.5)) if found else 0.0
        return weights

    @staticmethod
    def _any_mask(postings: Postings, term_ids: list[int], count: int) -> BoolMask:
        """Notes holding at least one of the terms (a word and its prefix expansions)."""
        mask = np.zeros(count, dtype=np.bool_)
        for term_id in term_ids:
            mask[postings.lookup(term_id)] = True
        return mask

    @staticmethod
    def _all_mask(postings: Postings, term_ids: list[int], count: int) -> BoolMask:
        """Notes holding every one of the terms (the words of a phrase)."""
        mask = np.ones(count, dtype=np.bool_)
        for term_id in term_ids:
            hit = np.zeros(count, dtype=np.bool_)
            hit[postings.lookup(term_id)] = True
            mask &= hit
        return mask
