"""ScanRecall: recall by reading the notes, for the searches made before the index is ready.

A vault that was never indexed must be read, parsed and tokenized whole before
`RecallIndex` can answer: ~12 s for the 6,280 notes (31 MB, 34 languages) of the Obsidian
help vault on a 2-core machine, most of it tokenizing. A first search cannot wait that
long, so until the index is built (in the background, see `SearchCore`) recall works the
way the original's GrepScanner does: it looks for the recall terms in the notes' text.
Reading and lowercasing every note takes ~0.5 s there, and StringZilla's SIMD substring
search finds a term in 3-4 ms. Only the notes that reach ranking are parsed. The text is
kept as UTF-8 (32 MB there, where `str` took 47 MB), in one buffer per refresh rather than
a `bytes` per note: freed, 6,000 small objects left ~30 MB of holes in the heap that the
process kept, where one large buffer goes back to the system whole.

Candidates are scored as `RecallIndex.candidates` scores them (IDF-weighted terms, a path
hit counting twice), so ranking downstream is the same. What differs: a term matches
where a word starts with it rather than as an index token (no accent folding, no NFKC;
word characters are ASCII ones, so a non-ASCII letter before a term does not hide it),
and aliases and tags count as body text, since they are known only once a note is parsed.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import math
import os
import re
import tempfile
import threading
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import stringzilla

from langchain_vaultsearch.text.han_forms import spellings
from langchain_vaultsearch.text.tokenize import contains_cjk, tokenize_mixed
from langchain_vaultsearch.vault.note_files import Listing, NoteFiles
from langchain_vaultsearch.vault.note_info import NoteInfo, folder_of
from langchain_vaultsearch.vault.note_reader import decode_note
from langchain_vaultsearch.vault.note_records import Stamp
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)

# Shorter terms match whole words only, as `Vocabulary.expand` does not expand them.
_MIN_PREFIX = 3
# What may stand before or after a word in a query but is not part of it.
_OUTER_PUNCTUATION = "?!,;:()[]{}\"'“”‘’«»¿¡…"

# A text to search: `(buffer, start, end)`.
_Span = tuple[bytes | bytearray, int, int]
# Reads notes' lowercased texts, in order (`ScanRecall._read_all`).
_ReadAll = Callable[[Iterable[tuple[str, Stamp]]], Iterator[bytes | None]]


@dataclass(frozen=True, slots=True)
class _ScannedNote:
    """One note as the scan sees it: lowercased text and path (without `.md`).

    The text is `buffer[start:end]`, never sliced out: searches take the bounds. A note
    read after the text budget was spent keeps no text (`buffer` None): its text is at
    `start:end` of the scan's spill file (`spilled`), or, where there is none, each search
    reads it again from `file`.
    """

    stamp: Stamp
    buffer: bytearray | None
    start: int
    end: int
    meta: bytes
    file: str
    spilled: bool = False


class _Needle:
    """One index term to find: SIMD substring search first, then a word-start check."""

    def __init__(self, token: str) -> None:
        self.token = token.encode()
        # A short term must also end a word, as `Vocabulary.expand` does not expand it.
        self._whole = len(token) < _MIN_PREFIX
        # The index folds Chinese to its simplified form; the scanned text is as written.
        self._spellings = [self.token]
        if contains_cjk(token):
            if len(token) <= 2 and not token.startswith("#"):  # a bigram or a character
                self._spellings = [spelling.encode() for spelling in spellings(token)]
            # No spaces between CJK words: a bigram may start anywhere.
            self._word: re.Pattern[bytes] | None = None
        else:
            # The literal comes first so the regex engine searches for it at C speed;
            # a leading lookbehind made it test every position (3-14x slower, measured).
            literal = re.escape(self.token)
            end = rb"(?!\w)" if self._whole else b""
            self._word = re.compile(rb"%s(?<!\w%s)%s" % (literal, literal, end))

    def holds(self, buffer: bytes | bytearray, start: int, end: int) -> bool:
        """Whether the text `buffer[start:end]` holds the term."""
        if self._word is None:
            return any(buffer.find(spelling, start, end) >= 0 for spelling in self._spellings)
        return self._word.search(buffer, start, end) is not None

    def mark(self, run: _Run, found: npt.NDArray[np.bool_]) -> None:
        """Set `found` at each text of the run holding the term.

        One search per text that holds it, not one per text: a search jumps to the end
        of the text it hit, so a rare term costs a few searches over the whole run. The
        search is StringZilla's (~10 GB/s here, where `bytes.find` and the regex engine
        find a literal at ~1.4 GB/s: scanning was 60% of a search made while help x16's
        index built); the word-start check it leaves to Python is the regex's, which
        takes over once a run has shown `_REGEX_AFTER_MISSES` hits inside words.
        """
        for spelling in self._spellings:
            self._mark_spelling(run, found, spelling)

    def _mark_spelling(self, run: _Run, found: npt.NDArray[np.bool_], token: bytes) -> None:
        buffer, starts, ends = run.buffer, run.starts, run.ends
        # Through a memoryview, which the Str keeps: the buffer cannot be resized under it.
        find = stringzilla.Str(memoryview(buffer)).find
        size, word, whole = len(token), self._word, self._whole
        misses = 0
        pos, stop = starts[0], ends[-1]
        while pos < stop:
            hit = find(token, pos, stop)
            if hit < 0:
                return
            if word is not None and (
                (hit and _WORD_BYTE[buffer[hit - 1]])
                or (whole and hit + size < stop and _WORD_BYTE[buffer[hit + size]])
            ):
                misses += 1
                if misses < _REGEX_AFTER_MISSES:
                    pos = hit + 1
                    continue
                match = word.search(buffer, hit + 1, stop)
                if match is None:
                    return
                hit = match.start()
            i = bisect.bisect_right(starts, hit) - 1
            if hit + size <= ends[i]:
                found[run.first + i] = True
                pos = ends[i]
            elif hit >= ends[i]:  # text of a note no longer listed, between two
                if i + 1 == len(starts):
                    return
                pos = starts[i + 1]
            else:
                pos = hit + 1  # a term spanning two texts


# What `\w` matches in a bytes pattern: 1 at the ASCII letters, digits and `_`.
_WORD_BYTE = bytes(int(c < 128 and (chr(c).isalnum() or chr(c) == "_")) for c in range(256))
# Hits inside words (`data` in `metadata`) a search skips one by one in Python before the
# regex, which skips them in C, finds the rest of the run's.
_REGEX_AFTER_MISSES = 16


class _Texts:
    """Texts given by their start and end offsets, one pair a text."""

    starts: array[int]
    ends: array[int]

    @property
    def size(self) -> int:
        """How many texts it holds."""
        return len(self.starts)


@dataclass(frozen=True)
class _Run(_Texts):
    """Texts laid out in order in one buffer: text `i` is `buffer[starts[i]:ends[i]]`."""

    buffer: bytes | bytearray
    first: int
    """The index of its first text among all the texts searched."""
    starts: array[int]
    ends: array[int]


def _runs(spans: Iterable[_Span], first: int = 0) -> list[_Run]:
    """Spans grouped into runs of consecutive texts of one buffer; the first is text `first`."""
    runs: list[_Run] = []
    starts = ends = array("q")
    for index, (buffer, start, end) in enumerate(spans, first):
        if not runs or runs[-1].buffer is not buffer or start < ends[-1]:
            starts, ends = array("q"), array("q")
            runs.append(_Run(buffer, index, starts, ends))
        starts.append(start)
        ends.append(end)
    return runs


@dataclass(frozen=True)
class _SpilledRun(_Texts):
    """Consecutive notes whose texts lie one after the other in the spill file.

    Read as one block per search; `starts` and `ends` are offsets in that block.
    """

    low: int
    first: int
    starts: array[int]
    ends: array[int]

    def read(self, spill: SpillFile) -> _Run:
        """The texts, read back from the spill file."""
        return _Run(spill.read(self.low, self.ends[-1]), self.first, self.starts, self.ends)


@dataclass(frozen=True)
class _UnheldRun:
    """Consecutive notes no text of which is kept: each search reads them from the vault."""

    first: int
    files: list[tuple[str, Stamp]]

    @property
    def size(self) -> int:
        """How many texts it holds."""
        return len(self.files)

    def read(self, read_all: _ReadAll) -> _Run:
        """The texts, read from the vault (an unreadable note's text is empty)."""
        (run,) = _runs(_laid_out(text or b"" for text in read_all(self.files)), self.first)
        return run


_Piece = _Run | _SpilledRun | _UnheldRun
"""Part of the notes' texts as a search takes them: held, in the spill file, or in the vault."""


def _pieces(notes: Sequence[_ScannedNote]) -> list[_Piece]:
    """The notes' texts as runs of consecutive notes kept alike, in order.

    Made once per layout: grouping 100,480 notes' texts anew took ~0.18 s of every search
    made while help x16's index built. A run ends after about `RUN_BYTES` of text.
    """
    pieces: list[_Piece] = []
    batch = 0  # bytes of the last piece, when it is read per search
    for index, note in enumerate(notes):
        last = pieces[-1] if pieces else None
        if note.buffer is not None:
            if not (
                isinstance(last, _Run)
                and last.buffer is note.buffer
                and last.ends[-1] <= note.start
                and note.end - last.starts[0] <= RUN_BYTES
            ):
                last = _Run(note.buffer, index, array("q"), array("q"))
                pieces.append(last)
            last.starts.append(note.start)
            last.ends.append(note.end)
        elif note.spilled:
            if not (
                isinstance(last, _SpilledRun)
                and last.low + last.ends[-1] <= note.start
                and note.end - last.low <= RUN_BYTES
            ):
                last = _SpilledRun(note.start, index, array("q"), array("q"))
                pieces.append(last)
            last.starts.append(note.start - last.low)
            last.ends.append(note.end - last.low)
        else:
            size = note.stamp[1] + 1
            if not isinstance(last, _UnheldRun) or batch + size > RUN_BYTES:
                last, batch = _UnheldRun(index, []), 0
                pieces.append(last)
            last.files.append((note.file, note.stamp))
            batch += size
    return pieces


@dataclass(frozen=True)
class _Layout:
    """The notes as each search takes them, made again only once a refresh changed them.

    Laying out 100,480 notes' paths for the path search and counting their folders took
    0.17 s of every search made while help x16's index built, grouping their texts into
    runs 0.18 s more. Which notes hold a term is kept too (`found`), as long as the
    layout: a term of an earlier search is not looked for again while it is kept.
    """

    paths: list[str]
    texts: list[_Piece]
    metas: list[_Run]
    folder_sizes: Counter[str]
    found: dict[tuple[bool, str], npt.NDArray[np.bool_]] = field(default_factory=dict)
    """`(in the text, term)` -> which notes hold it, the oldest first (`remember`)."""

    @classmethod
    def of(cls, notes: dict[str, _ScannedNote]) -> _Layout:
        """The layout of the notes as they are (the caller holds the scan's lock)."""
        return cls(
            list(notes),
            _pieces(list(notes.values())),
            _runs(_laid_out(note.meta for note in notes.values())),
            Counter(map(folder_of, notes)),
        )

    def text_runs(
        self,
        read_all: _ReadAll,
        spill: SpillFile | None,
        among: npt.NDArray[np.bool_] | None = None,
    ) -> Iterator[_Run]:
        """The notes' texts, those not held read back a run at a time.

        Args:
            read_all: reads the notes kept neither in memory nor in the spill file.
            spill: the spill file, if any.
            among: when given, only the runs holding one of these notes.
        """
        for piece in self.texts:
            if among is not None and not among[piece.first : piece.first + piece.size].any():
                continue
            if isinstance(piece, _Run):
                yield piece
            elif isinstance(piece, _SpilledRun):
                if spill is not None:  # there is one once a note is spilled
                    yield piece.read(spill)
            else:
                yield piece.read(read_all)

    def remember(self, in_text: bool, found: dict[str, npt.NDArray[np.bool_]]) -> None:
        """Keep which notes hold each term, dropping the oldest beyond `FOUND_CACHE_BYTES`."""
        for token, notes in found.items():
            self.found[(in_text, token)] = notes
        while len(self.found) > 1 and len(self.found) * len(self.paths) > FOUND_CACHE_BYTES:
            del self.found[next(iter(self.found))]


FOUND_CACHE_BYTES = 8 * 1024 * 1024
"""What a layout keeps of which notes hold the terms of earlier searches: 40 terms at
100,000 notes, each in the texts and the paths. The queries of one topic share words, and
each word looked for again took ~0.25 s over help x16's 490 MB while its index built."""


class ScanRecall:
    """The notes' text, lowercased, kept current by `refresh`, searched per query."""

    def __init__(
        self,
        vault: Vault,
        files: NoteFiles | None = None,
        text_budget_bytes: int | None = None,
        listed: Listing | None = None,
    ) -> None:
        """Read every note of the vault (no parsing).

        Args:
            vault: the notes; it is not refreshed, so its records stay as they were.
            files: the vault's note files, when the caller has listed them already.
            text_budget_bytes: how much lowercased text to hold in memory; the notes
                beyond it go to a temporary file (`SpillFile`) every search reads back (a
                100,000-note vault has ~500 MB of text). None holds all of it.
            listed: what `files.listing()` just returned, so it is not listed twice.
        """
        self._vault = vault
        self._text_budget = text_budget_bytes
        self._spill: SpillFile | None = None
        self._held_bytes = 0
        self._notes: dict[str, _ScannedNote] = {}
        self._peeked: dict[str, NoteInfo] = {}
        self._lock = threading.Lock()
        self._layout: _Layout | None = None
        self._files = files or NoteFiles(vault)
        self._generation: int | None = None  # of the listing last refreshed from
        self.refresh(listed)

    def __len__(self) -> int:
        return len(self._notes)

    def refresh(self, listed: Listing | None = None) -> None:
        """Read the notes added or changed since the last refresh and forget removed ones.

        Args:
            listed: `NoteFiles.listing()` when the caller has just called it.
        """
        listing = listed or self._changed_listing()
        if listing is None:
            return  # nothing listed has changed since the last refresh
        generation, files = listing
        with self._lock:
            unread = False  # a note that could not be read is tried again next time
            gone = self._notes.keys() - files.keys()
            if gone:
                self._layout = None  # first: an error midway must not leave it stale
            for path in gone:
                self._forget(path)
            wanted: list[tuple[str, str, Stamp, bytes]] = []
            beyond: list[str] = []
            # In path order at first, as the index numbers them, so that a note ties in
            # recall as it will once the index is in: otherwise many of the first searches'
            # candidates after the handover were notes the scan never had ranked (at 6,280
            # notes, 458 more notes read and chunked, queries of 70-140 ms).
            in_order = files.items() if self._notes else sorted(files.items())
            for path, (abs_path, stamp) in in_order:
                known = self._notes.get(path)
                if known is not None and known.stamp == stamp:
                    continue
                self._layout = None
                self._forget(path)
                if stamp[1] > self._vault.max_note_bytes:
                    continue  # never read: no room is made for it
                meta = path[:-3].lower().encode()
                # Its place in the listing's order, which ties in ranking follow; its text
                # is placed below, once read.
                self._notes[path] = _ScannedNote(stamp, None, 0, 0, meta, abs_path)
                budget = self._text_budget
                if budget is not None and self._held_bytes + stamp[1] > budget:
                    beyond.append(path)
                    continue
                self._held_bytes += stamp[1]  # what it will hold, corrected once read
                wanted.append((path, abs_path, stamp, meta))
            # Made at its full size at once: grown note by note, among each note's freed
            # reads, it left ~45 MB of heap the process kept (6,280 notes, 32 MB of text).
            # Each note comes after a newline: a word-start check never sees the one before.
            buffer = bytearray(sum(stamp[1] + 1 for _, _, stamp, _ in wanted))
            used = 0
            texts = self._read_all((abs_path, stamp) for _, abs_path, stamp, _ in wanted)
            for (path, abs_path, stamp, meta), text in zip(wanted, texts, strict=True):
                self._held_bytes -= stamp[1]
                if text is None:
                    del self._notes[path]
                    unread = True
                    continue
                start, end = used + 1, used + 1 + len(text)
                if end > len(buffer):
                    beyond.append(path)  # lowercasing lengthened it, or it grew since listed
                    continue
                buffer[used] = ord("\n")
                buffer[start:end] = text
                used = end
                self._held_bytes += len(text)
                self._notes[path] = _ScannedNote(stamp, buffer, start, end, meta, abs_path)
            if beyond:
                unread = not self._spill_notes(beyond) or unread
            # The listing applied last, once all of it was read: a refresh that raised
            # midway, or read an older listing than one applied meanwhile, is made again.
            self._generation = None if unread else generation

    def _changed_listing(self) -> Listing | None:
        """The note files, or None when none changed since the listing last refreshed from."""
        if self._generation is None:
            return self._files.listing()
        generation, files = self._files.changed_since(self._generation)
        return None if files is None else (generation, files)

    def _spill_notes(self, paths: list[str]) -> bool:
        """Read notes beyond the text budget into the spill file (lock held).

        Where the file cannot be made or written (logged), the notes stay as they are:
        each search reads them from the vault.

        Returns:
            False when a note could not be read (it is left out).
        """
        notes = [self._notes[path] for path in paths]
        texts = self._read_all((note.file, note.stamp) for note in notes)
        placed: list[tuple[int, int] | None] = []
        try:
            if self._spill is None:
                self._spill = SpillFile()
            spill = self._spill
            placed.extend(None if text is None else spill.append(text) for text in texts)
            spill.flush()
        except OSError as exc:
            # Notes spilled before stay readable; these are read from the vault per search.
            logger.warning(
                "Could not keep the scanned text of %d notes in a temporary file (%s);"
                " each search reads them from the vault until the index is built",
                len(paths),
                exc,
            )
            return True
        # Made anew rather than `dataclasses.replace`d: 0.6 s of a first search at 100,000 notes.
        complete = True
        for note, path, where in zip(notes, paths, placed, strict=True):
            if where is None:
                del self._notes[path]  # gone or unreadable since it was listed
                complete = False
            else:
                start, end = where
                self._notes[path] = _ScannedNote(
                    note.stamp, None, start, end, note.meta, note.file, spilled=True
                )
        return complete

    def _forget(self, path: str) -> None:
        """Drop a note (lock held); its text stays in its buffer until the buffer goes."""
        known = self._notes.pop(path, None)
        self._peeked.pop(path, None)
        if known is not None and known.buffer is not None:
            self._held_bytes -= known.end - known.start

    def _read_all(self, files: Iterable[tuple[str, Stamp]]) -> Iterator[bytes | None]:
        """Each note's text lowercased, as UTF-8; None when over the size limit or unreadable.

        The files are opened a few dozen ahead of the one read, with a hint that they
        will be read (`read_ahead`): the disk reads them while this thread lowercases and
        searches. ASCII notes are lowercased as bytes, without decoding (a third of the
        time it took to read 10,000 synthetic notes). The vault warns about oversized notes.
        """
        limit = self._vault.max_note_bytes
        for handle in read_ahead(files, limit):
            if handle is None:
                yield None
                continue
            try:
                data = _read_whole(handle, limit)
            except OSError:
                yield None
                continue
            finally:
                os.close(handle)
            yield data.lower() if data.isascii() else decode_note(data).lower().encode()

    def note(self, path: str) -> NoteInfo | None:
        """A scanned note's record, parsed on first use (None when it is not a note here)."""
        with self._lock:
            if path not in self._notes:
                return None
            info = self._peeked.get(path)
        if info is None:
            info = self._vault.reader.peek(path)
            if info is not None:
                with self._lock:
                    self._peeked[path] = info
        return info

    def folder_sizes(self) -> Counter[str]:
        """Number of notes directly in each folder (the folder boost's denominator)."""
        return self._laid_out_notes().folder_sizes

    def _laid_out_notes(self) -> _Layout:
        with self._lock:
            if self._layout is None:
                self._layout = _Layout.of(self._notes)
            return self._layout

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
        layout = self._laid_out_notes()
        paths = layout.paths
        if not paths or limit <= 0:
            return []
        searches = [
            search
            for term in dict.fromkeys(t.strip().lower() for t in recall_terms if t.strip())
            if (search := _Search.of(term)).parts
        ]
        if not searches:
            return []
        # The query, its variants and its salient terms share words: each is searched for
        # once (a three-word query searched the text 14 times for 4 words).
        needles = {token: _Needle(token) for search in searches for token in search.tokens}
        with self._lock:
            cached = {token for in_text, token in layout.found if in_text}
        whole = _searched_whole(searches, cached)
        bodies = self._found(layout, True, {token: needles[token] for token in whole})
        metas = self._found(layout, False, needles)
        held_by_body = [_held_where_found(search, whole, bodies, len(paths)) for search in searches]
        self._held_among(layout, [held for held in held_by_body if held.parts], needles)
        scores = np.zeros(len(paths), dtype=np.float64)
        for search, held in zip(searches, held_by_body, strict=True):
            body = held.notes
            meta = search.held(metas)
            either = body | meta
            found_in = int(either.sum())
            if found_in == 0:
                continue
            idf = math.log(1.0 + (len(paths) - found_in + 0.5) / (found_in + 0.5))
            scores += idf * either + idf * meta
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(paths[i], float(scores[i])) for i in order.tolist() if scores[i] > 0.0]

    def _found(
        self, layout: _Layout, in_text: bool, needles: dict[str, _Needle]
    ) -> dict[str, npt.NDArray[np.bool_]]:
        """Which notes hold each needle in their text, or in their path; kept per layout."""
        with self._lock:
            # Taken again, a term goes to the end: the oldest taken leaves first.
            found = {
                token: layout.found.pop((in_text, token))
                for token in needles
                if (in_text, token) in layout.found
            }
            layout.remember(in_text, found)
        missing = {token: needle for token, needle in needles.items() if token not in found}
        if missing:
            runs = layout.text_runs(self._read_all, self._spill) if in_text else layout.metas
            searched = _found(runs, len(layout.paths), missing)
            with self._lock:
                layout.remember(in_text, searched)
            found.update(searched)
        return found

    def _held_among(
        self, layout: _Layout, pending: list[_BodyMatches], needles: dict[str, _Needle]
    ) -> None:
        """Finish each search's matches: its other parts looked for in its notes alone.

        A question's words ("how", "do", "i") matter only in the notes that hold its other
        words, found first: searched in every note as well, they took half of each
        question's search while help x16's index built. The notes of every search are
        read in one pass, so the spill file is read back once per query at most.
        """
        if not pending:
            return
        among = np.logical_or.reduce([held.notes for held in pending])
        for run in layout.text_runs(self._read_all, self._spill, among):
            for i in np.flatnonzero(among[run.first : run.first + run.size]).tolist():
                note, start, end = run.first + i, run.starts[i], run.ends[i]
                for held in pending:
                    if held.notes[note]:
                        held.notes[note] = all(
                            part.holds(run.buffer, start, end, needles) for part in held.parts
                        )


@dataclass(frozen=True)
class _BodyMatches:
    """A search's matches in the notes' text, `notes`, made final by `ScanRecall._held_among`.

    Until then `notes` holds the notes matching the parts found in every note, of which
    those also holding `parts` (searched in those notes alone) match.
    """

    notes: npt.NDArray[np.bool_]
    parts: list[_Part]


def _held_where_found(
    search: _Search, whole: set[str], bodies: dict[str, npt.NDArray[np.bool_]], count: int
) -> _BodyMatches:
    """A search's matches as far as the tokens found in every note's text say."""
    known = [part for part in search.parts if part.tokens <= whole]
    notes = np.ones(count, dtype=np.bool_)
    for part in known:
        notes &= part.held(bodies)
    return _BodyMatches(notes, [part for part in search.parts if part not in known])


def _searched_whole(searches: list[_Search], cached: set[str]) -> set[str]:
    """The tokens every note's text is searched for; the others are looked for only in some.

    A search of one part needs its tokens found in every note. A search of more needs one
    part found everywhere, and the others only in the notes that hold it
    (`ScanRecall._held_among`): a part found already (`cached`) or to be, else the one of
    a single token, the longest (the likeliest rare).
    """
    whole: set[str] = set()
    for search in sorted(searches, key=lambda search: len(search.parts)):
        if not any(part.tokens <= whole | cached for part in search.parts):
            whole |= max(search.parts, key=_likely_rare).tokens
    return whole | (cached & set().union(*(search.tokens for search in searches)))


def _likely_rare(part: _Part) -> tuple[bool, int]:
    return len(part.tokens) == 1, max(map(len, part.tokens))


RUN_BYTES = 1024 * 1024
"""Text searched for every term of a query before the next is taken: it stays in the
core's cache between the terms, instead of each term reading ~500 MB from memory (the
index build's workers, meanwhile, wait on memory less), and it is what a search holds at
once of the text read back from the spill file or the vault."""


class SpillFile:
    """The lowercased text of the notes beyond the scan's text budget, kept on disk.

    Read and lowercased once, when the scan lists a note, and read back by every search in
    blocks of `RUN_BYTES`, instead of every search opening, reading and
    lowercasing each of those notes again (5-6 s a search on the 100,480-note help x16
    vault, 360 MB beyond the budget; the searches made while the index builds also
    took the build's cores). The file has no name (`tempfile.TemporaryFile`), so the
    system removes it when the process ends, however it ends. A note's text is written
    after a newline, as in the scan's buffers, and a changed note's earlier text stays
    until the file goes with the scan.
    """

    def __init__(self) -> None:
        """Create the file in the system's temporary folder.

        Raises:
            OSError: when it cannot be created.
        """
        self._file = tempfile.TemporaryFile(prefix="vaultsearch-scan-")  # noqa: SIM115
        self._written = 0
        self._pending = bytearray()
        self._lock = threading.Lock()

    def append(self, text: bytes) -> tuple[int, int]:
        """Add a text; returns where it will be, once `flush`ed."""
        self._pending += b"\n"
        start = self._written + len(self._pending)
        self._pending += text
        if len(self._pending) >= RUN_BYTES:
            self.flush()
        return start, start + len(text)

    def flush(self) -> None:
        """Write what was appended.

        Raises:
            OSError: when the disk refuses it.
        """
        with self._lock:
            self._file.seek(self._written)
            self._file.write(self._pending)
            self._file.flush()
        self._written += len(self._pending)
        self._pending = bytearray()

    def read(self, low: int, size: int) -> bytes:
        """The `size` bytes written at `low` (texts are searched where they lie in them)."""
        with self._lock:
            self._file.seek(low)
            return self._file.read(size)


READ_AHEAD_NOTES = 64
"""Notes opened, and hinted to the kernel, ahead of the one read. Reading 490 MB of notes
not in the page cache takes ~8 s on the test machine whatever the number of threads (and
threads waiting for the GIL after each read slowed a scan 2x); a hint lets the disk work
while the scan's thread lowercases and searches, with no thread at all."""


def read_ahead(files: Iterable[tuple[str, Stamp]], limit: int) -> Iterator[int | None]:
    """Each file opened, in order, `READ_AHEAD_NOTES` ahead of the caller.

    None stands for a file too large or that cannot be opened. The caller closes each
    descriptor it gets; those not yet handed over are closed when it stops early.
    """
    ahead: deque[int | None] = deque()
    pending = iter(files)
    try:
        while True:
            while len(ahead) < READ_AHEAD_NOTES and (following := next(pending, None)):
                ahead.append(_open_hinted(*following, limit))
            if not ahead:
                return
            yield ahead.popleft()
    finally:
        for handle in ahead:
            if handle is not None:
                os.close(handle)


def _open_hinted(file: str, stamp: Stamp, limit: int) -> int | None:
    """A note opened for reading, the kernel told to fetch it now; None if not to be read."""
    if stamp[1] > limit:
        return None
    try:
        handle = os.open(file, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    if hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):
            os.posix_fadvise(handle, 0, 0, os.POSIX_FADV_WILLNEED)
    return handle


def _read_whole(handle: int, limit: int) -> bytes:
    """Up to `limit + 1` bytes of an open file (its size may have changed since its stamp)."""
    parts = []
    remaining = limit + 1
    while remaining > 0 and (part := os.read(handle, min(remaining, 1 << 24))):
        parts.append(part)
        remaining -= len(part)
    return b"".join(parts)


def _laid_out(texts: Iterable[bytes]) -> Iterator[_Span]:
    """Texts as spans of one buffer, each after a newline (the word-start checks' edge)."""
    buffer = bytearray()
    bounds = []
    for text in texts:
        buffer += b"\n"
        bounds.append((len(buffer), len(buffer) + len(text)))
        buffer += text
    return ((buffer, start, end) for start, end in bounds)


@dataclass(frozen=True)
class _Part:
    """One word of a recall term: texts holding all its tokens match, or, when set, `as_typed`.

    A joined word ("next.js" -> next, js, nextjs) is also found as typed, since its
    joined token ("nextjs") is rarely in the text.
    """

    words: list[str]
    as_typed: str | None

    @classmethod
    def of(cls, word: str) -> _Part | None:
        """The part of one word of a term; None when it has no token (a lone `-`)."""
        tokens = tokenize_mixed(word)
        if not tokens:
            return None
        typed = word.strip(_OUTER_PUNCTUATION)  # "next.js?" is in texts as next.js
        if len(tokens) == 1 or not typed:
            return cls(tokens, None)
        if typed in tokens:
            # A tag ("#a/b": #a/b, a/b, #a, a, b): the texts holding all its tokens hold it.
            return cls([typed], None)
        if all(contains_cjk(token) and token in typed for token in tokens):
            # CJK bigrams match anywhere: the texts holding the word as typed hold them all.
            return cls(tokens, None)
        return cls(tokens, typed)

    @property
    def tokens(self) -> set[str]:
        """Every string searched for."""
        return {*self.words, *([] if self.as_typed is None else [self.as_typed])}

    def held(self, found: dict[str, npt.NDArray[np.bool_]]) -> npt.NDArray[np.bool_]:
        """Which texts match, from which texts hold each token (`_found`)."""
        held = np.logical_and.reduce([found[word] for word in self.words])
        return held if self.as_typed is None else held | found[self.as_typed]

    def holds(
        self, buffer: bytes | bytearray, start: int, end: int, needles: dict[str, _Needle]
    ) -> bool:
        """Whether the text `buffer[start:end]` matches, each token found by its needle."""
        if all(needles[word].holds(buffer, start, end) for word in self.words):
            return True
        return self.as_typed is not None and needles[self.as_typed].holds(buffer, start, end)


@dataclass(frozen=True)
class _Search:
    """One recall term: the texts where each of its space-separated parts matches.

    Parts, not the whole term, are what a joined word's as-typed form stands for: a
    three-word query searched as typed too cost a fifth of every search on help x16, and
    could only find texts that hold each word already.
    """

    parts: list[_Part]

    @classmethod
    def of(cls, term: str) -> _Search:
        """The term's parts; the words with no token (a lone `-`) are left out."""
        return cls([part for word in term.split() if (part := _Part.of(word)) is not None])

    @property
    def tokens(self) -> set[str]:
        """Every string searched for."""
        return set().union(*(part.tokens for part in self.parts))

    def held(self, found: dict[str, npt.NDArray[np.bool_]]) -> npt.NDArray[np.bool_]:
        """Which texts match, from which texts hold each token (`_found`)."""
        return np.logical_and.reduce([part.held(found) for part in self.parts])


def _found(
    runs: Iterable[_Run], count: int, needles: dict[str, _Needle]
) -> dict[str, npt.NDArray[np.bool_]]:
    """Which of `count` texts hold each needle, by its token.

    Each run is searched for every needle before the next is taken, so a run read back
    from the spill file is read once per search.
    """
    found = {token: np.zeros(count, dtype=np.bool_) for token in needles}
    for run in runs:
        for token, needle in needles.items():
            needle.mark(run, found[token])
    return found
