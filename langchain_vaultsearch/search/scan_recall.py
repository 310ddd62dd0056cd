"""ScanRecall: recall by reading the notes, for the searches made before the index is ready.

A vault that was never indexed must be read, parsed and tokenized whole before
`RecallIndex` can answer: ~12 s for the 6,280 notes (31 MB, 34 languages) of the Obsidian
help vault on a 2-core machine, most of it tokenizing. A first search cannot wait that
long, so until the index is built (in the background, see `SearchCore`) recall works the
way the original's GrepScanner does: it looks for the recall terms in the notes' text.
Reading and lowercasing every note takes ~0.5 s there, and C substring search finds a
term in 20-40 ms. Only the notes that reach ranking are parsed. The text is kept as UTF-8
(32 MB there, where `str` took 47 MB), in one buffer per refresh rather than a `bytes`
per note: freed, 6,000 small objects left ~30 MB of holes in the heap that the process
kept, where one large buffer goes back to the system whole.

Candidates are scored as `RecallIndex.candidates` scores them (IDF-weighted terms, a path
hit counting twice), so ranking downstream is the same. What differs: a term matches
where a word starts with it rather than as an index token (no accent folding, no NFKC;
word characters are ASCII ones, so a non-ASCII letter before a term does not hide it),
and aliases and tags count as body text, since they are known only once a note is parsed.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from langchain_vaultsearch.text.tokenize import contains_cjk, tokenize_mixed
from langchain_vaultsearch.vault.note_info import NoteInfo, folder_of
from langchain_vaultsearch.vault.note_records import Stamp
from langchain_vaultsearch.vault.vault import Vault, decode_note

# Shorter terms match whole words only, as `Vocabulary.expand` does not expand them.
_MIN_PREFIX = 3

# A text to search: `(buffer, start, end)`.
_Span = tuple[bytes | bytearray, int, int]


@dataclass(frozen=True)
class _ScannedNote:
    """One note as the scan sees it: lowercased text and path (without `.md`).

    The text is `buffer[start:end]`, never sliced out: searches take the bounds. A note
    read after the text budget was spent keeps no text (`buffer` None): each search reads
    it again from `file`.
    """

    stamp: Stamp
    buffer: bytearray | None
    start: int
    end: int
    meta: bytes
    file: str


class _Needle:
    """One index term to find: plain substring search first, then a word-start check."""

    def __init__(self, token: str) -> None:
        self.token = token.encode()
        if contains_cjk(token):
            # No spaces between CJK words: a bigram may start anywhere.
            self._word: re.Pattern[bytes] | None = None
        else:
            # The literal comes first so the regex engine searches for it at C speed;
            # a leading lookbehind made it test every position (3-14x slower, measured).
            literal = re.escape(self.token)
            end = b"" if len(token) >= _MIN_PREFIX else rb"(?!\w)"
            self._word = re.compile(rb"%s(?<!\w%s)%s" % (literal, literal, end))

    def found_in(self, span: _Span) -> bool:
        text, start, end = span
        return text.find(self.token, start, end) >= 0 and (
            self._word is None or self._word.search(text, start, end) is not None
        )


class ScanRecall:
    """The notes' text, lowercased, kept current by `refresh`, searched per query."""

    def __init__(
        self,
        vault: Vault,
        files: dict[str, tuple[str, Stamp]] | None = None,
        text_budget_bytes: int | None = None,
    ) -> None:
        """Read every note of the vault (no parsing).

        Args:
            vault: the notes; it is not refreshed, so its records stay as they were.
            files: `vault.list_files()` when the caller has just listed them.
            text_budget_bytes: how much lowercased text to hold; the notes beyond it are
                read again by every search (a 100,000-note vault has ~500 MB of text).
                None holds all of it.
        """
        self._vault = vault
        self._text_budget = text_budget_bytes
        self._held_bytes = 0
        self._notes: dict[str, _ScannedNote] = {}
        self._peeked: dict[str, NoteInfo] = {}
        self._lock = threading.Lock()
        self.refresh(files)

    def __len__(self) -> int:
        return len(self._notes)

    def refresh(self, files: dict[str, tuple[str, Stamp]] | None = None) -> None:
        """Read the notes added or changed since the last refresh and forget removed ones.

        Args:
            files: `vault.list_files()` when the caller has just listed them.
        """
        if files is None:
            files = self._vault.list_files()
        with self._lock:
            for gone in self._notes.keys() - files.keys():
                self._forget(gone)
            # Grown only here, under the lock, before any search can see a note in it.
            buffer = bytearray()
            for path, (abs_path, stamp) in files.items():
                known = self._notes.get(path)
                if known is not None and known.stamp == stamp:
                    continue
                self._forget(path)
                meta = path[:-3].lower().encode()
                budget = self._text_budget
                if budget is not None and self._held_bytes + stamp[1] > budget:
                    # Not read now: the search that follows reads it (once, not twice).
                    if stamp[1] <= self._vault.max_note_bytes:
                        self._notes[path] = _ScannedNote(stamp, None, 0, 0, meta, abs_path)
                    continue
                text = self._read(abs_path, stamp)
                if text is None:
                    continue
                # A newline before each note: a word-start check never sees the previous one.
                buffer += b"\n"
                start = len(buffer)
                buffer += text
                self._held_bytes += len(text)
                self._notes[path] = _ScannedNote(stamp, buffer, start, len(buffer), meta, abs_path)

    def _forget(self, path: str) -> None:
        """Drop a note (lock held); its text stays in its buffer until the buffer goes."""
        known = self._notes.pop(path, None)
        self._peeked.pop(path, None)
        if known is not None and known.buffer is not None:
            self._held_bytes -= known.end - known.start

    def _read(self, abs_path: str, stamp: Stamp) -> bytes | None:
        """A note's text lowercased, as UTF-8; None when over the size limit or unreadable.

        ASCII notes are lowercased as bytes, without decoding (a third of the time it took
        to read 10,000 synthetic notes). The vault warns about oversized notes.
        """
        limit = self._vault.max_note_bytes
        if stamp[1] > limit:
            return None
        try:
            with open(abs_path, "rb") as handle:
                data = handle.read(limit + 1)
        except OSError:
            return None
        return data.lower() if data.isascii() else decode_note(data).lower().encode()

    def note(self, path: str) -> NoteInfo | None:
        """A scanned note's record, parsed on first use (None when it is not a note here)."""
        with self._lock:
            if path not in self._notes:
                return None
            info = self._peeked.get(path)
        if info is None:
            info = self._vault.peek(path)
            if info is not None:
                with self._lock:
                    self._peeked[path] = info
        return info

    def folder_sizes(self) -> Counter[str]:
        """Number of notes directly in each folder (the folder boost's denominator)."""
        with self._lock:
            return Counter(folder_of(path) for path in self._notes)

    def candidates(self, recall_terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """Rank notes by the recall terms they contain, as `RecallIndex.candidates` does.

        Notes are not parsed here, so inclusion rules on tags or properties are not
        applied: callers check `note(path).searchable`.

        Args:
            recall_terms: the query, its variants and its salient terms.
            limit: how many candidates to return.

        Returns:
            `(path, recall score)` pairs, best first.
        """
        with self._lock:
            paths = list(self._notes)
            notes = list(self._notes.values())
        if not paths or limit <= 0:
            return []
        searches = []
        for term in dict.fromkeys(t.strip().lower() for t in recall_terms if t.strip()):
            needles = [_Needle(token) for token in tokenize_mixed(term)]
            if needles:
                # A joined word ("next.js" -> next, js, nextjs) is also found as typed.
                searches.append((needles, [_Needle(term)] if len(needles) > 1 else []))
        bodies = np.zeros((len(searches), len(paths)), dtype=np.bool_)
        for first, spans in _text_batches(notes, self._read):
            for row, (needles, as_typed) in enumerate(searches):
                held = _holding_all(spans, needles)
                if as_typed:
                    held |= _holding_all(spans, as_typed)
                bodies[row, first : first + len(spans)] = held
        metas = [(note.meta, 0, len(note.meta)) for note in notes]
        scores = np.zeros(len(paths), dtype=np.float64)
        for (needles, as_typed), body in zip(searches, bodies, strict=True):
            meta = _holding_all(metas, needles)
            if as_typed:
                meta |= _holding_all(metas, as_typed)
            either = body | meta
            found = int(either.sum())
            if found == 0:
                continue
            idf = math.log(1.0 + (len(paths) - found + 0.5) / (found + 0.5))
            scores += idf * either + idf * meta
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(paths[i], float(scores[i])) for i in order.tolist() if scores[i] > 0.0]


STREAM_BATCH_BYTES = 8 * 1024 * 1024
"""Text of notes beyond the budget read per step of a search."""


def _text_batches(
    notes: list[_ScannedNote], read: Callable[[str, Stamp], bytes | None]
) -> Iterator[tuple[int, list[_Span]]]:
    """The notes' texts as spans, in order, in batches: `(first note's index, spans)`.

    Held texts are spans of their buffers; the others are read into a batch buffer of
    about `STREAM_BATCH_BYTES` that the next batch replaces.
    """
    first = 0
    spans: list[_Span] = []
    batch = bytearray()
    for note in notes:
        if note.buffer is not None:
            spans.append((note.buffer, note.start, note.end))
        else:
            text = read(note.file, note.stamp) or b""
            batch += b"\n"
            spans.append((batch, len(batch), len(batch) + len(text)))
            batch += text
        if len(batch) >= STREAM_BATCH_BYTES:
            yield first, spans
            first += len(spans)
            spans, batch = [], bytearray()
    if spans:
        yield first, spans


def _holding_all(texts: Sequence[_Span], needles: list[_Needle]) -> np.ndarray:
    """Which texts contain every needle (a phrase's words; a single term's one needle)."""
    mask = np.ones(len(texts), dtype=np.bool_)
    for needle in needles:
        mask &= np.fromiter(map(needle.found_in, texts), dtype=np.bool_, count=len(texts))
    return mask
