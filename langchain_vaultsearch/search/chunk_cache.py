"""Chunks of candidate notes and their index terms, cached across queries.

Every query ranks the chunks of up to a few hundred candidate notes. Splitting and
tokenizing them is the expensive part, and most candidates recur from one query to the
next, so each note's chunks and per-field terms are kept until the note changes (mtime
and size) or the memory budget pushes them out, least recently used first.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass

from langchain_vaultsearch.text.chunking import (
    CHUNK_SIZE,
    Chunk,
    chunk_header,
    chunk_index_from_chunk_id,
    chunk_note,
    note_path_from_chunk_id,
    title_only_chunk,
)
from langchain_vaultsearch.text.tokenize import tokenize_mixed
from langchain_vaultsearch.vault.markdown import ParsedNote, parse_note
from langchain_vaultsearch.vault.note_info import NoteInfo
from langchain_vaultsearch.vault.vault import Vault

DEFAULT_BUDGET_BYTES = 96 * 1024 * 1024
# Cost of one body term: a tuple slot (terms are interned, so the strings are shared).
_TERM_BYTES = 8
# A chunk's objects besides its text and body terms: the chunk, its id, heading, the
# field dict and the heading's term set (measured with tracemalloc on the help vault).
_CHUNK_BYTES = 900

FIELDS = ("title", "tags", "heading", "path", "body")


@dataclass(frozen=True)
class IndexedChunk:
    """A chunk with the terms of each field the lexical engine scores.

    Attributes:
        chunk: the chunk (id, note path, text with header, heading).
        terms: field name -> distinct terms. `title` holds the file name, frontmatter
            title and aliases; `body` the chunk text (without the synthetic header, so
            "note title block content" does not match every chunk) plus frontmatter
            values, so `author: Alice` makes every chunk of the note findable by "Alice".
            Body terms are a tuple, not a set: a set costs six times the memory, and the
            cache must hold the chunks of thousands of notes to keep queries warm.
    """

    chunk: Chunk
    terms: dict[str, frozenset[str] | tuple[str, ...]]


class ChunkCache:
    """Chunks per note, built on demand and cached within a byte budget."""

    def __init__(
        self,
        vault: Vault,
        *,
        max_chars: int = CHUNK_SIZE,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
        terms: bool = True,
    ) -> None:
        """Create a store over a vault.

        Args:
            vault: where notes are read from.
            max_chars: chunk size in characters.
            budget_bytes: approximate memory the cache may hold.
            terms: whether chunks carry their fields' terms. Tokenizing is most of what
                a note costs (about 7 ms a note on the help vault, ten times the reading
                and cutting); a caller that only shows chunks (semantic search) passes
                False, and its `IndexedChunk.terms` are empty.
        """
        self._vault = vault
        self._max_chars = max_chars
        self._budget = budget_bytes
        self._terms = terms
        self._used = 0
        self._cache: OrderedDict[str, tuple[tuple[float, int, int], list[IndexedChunk], int]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def cached(self, path: str, stamp: tuple[float, int, int]) -> list[IndexedChunk] | None:
        """A note's chunks if cached for the note in this state (`Vault.content_stamp`).

        The chunks were made from a record checked against the note, or from the note
        itself, in this state: its record need not be decoded again to use them.
        """
        with self._lock:
            cached = self._cache.get(path)
            if cached is None or cached[0] != stamp:
                return None
            self._cache.move_to_end(path)
            return cached[1]

    def chunks_for(self, info: NoteInfo) -> list[IndexedChunk]:
        """The indexed chunks of a note, from cache when the note has not changed."""
        stamp = info.content_stamp
        cached = self.cached(info.path, stamp)
        if cached is not None:
            return cached
        read = read_chunks(self._vault, info, self._max_chars)
        chunks = [] if read is None else self._index(info, *read)
        cost = sum(_cost(indexed) for indexed in chunks)
        with self._lock:
            previous = self._cache.pop(info.path, None)
            if previous is not None:
                self._used -= previous[2]
            if cost <= self._budget:
                self._cache[info.path] = (stamp, chunks, cost)
                self._used += cost
                self._evict()
        return chunks

    def _evict(self) -> None:
        """Drop least recently used notes until the cache fits its budget (lock held)."""
        while self._used > self._budget and self._cache:
            _path, (_stamp, _chunks, evicted) = self._cache.popitem(last=False)
            self._used -= evicted

    def _index(self, info: NoteInfo, parsed: ParsedNote, chunks: list[Chunk]) -> list[IndexedChunk]:
        if not self._terms:
            return [IndexedChunk(chunk=chunk, terms={}) for chunk in chunks]
        if not chunks:
            return []
        title_text = " ".join([info.title, *parsed.aliases, _frontmatter_title(parsed.frontmatter)])
        title = frozenset(tokenize_mixed(title_text))
        path = frozenset(tokenize_mixed(info.path[:-3].replace("/", " ")))
        tags = frozenset(t for tag in parsed.tags for t in tokenize_mixed(tag))
        props = " ".join(parsed.property_values)
        header = chunk_header(info.title)
        indexed = []
        for chunk in chunks:
            body_text = chunk.content.removeprefix(header)
            indexed.append(
                IndexedChunk(
                    chunk=chunk,
                    terms={
                        "title": title,
                        "tags": tags,
                        "heading": frozenset(tokenize_mixed(chunk.heading)),
                        "path": path,
                        "body": tuple(tokenize_mixed(f"{body_text} {props}")),
                    },
                )
            )
        return indexed

    def get_chunk(self, chunk_id: str, info: NoteInfo | None = None) -> Chunk | None:
        """A chunk by id, None when the id is malformed or the note or chunk is gone.

        The note path is everything before the last `#`, so file names that contain `#`
        (`C# Notes.md#0`) work, unlike the original.

        Args:
            chunk_id: `path#index`.
            info: the note's record when the caller has one the vault has not recorded
                (a note parsed for a search made before the first index, see `NoteReader.peek`).
        """
        index = chunk_index_from_chunk_id(chunk_id)
        if info is None:
            info = self._vault.get(note_path_from_chunk_id(chunk_id))
        if index is None or info is None:
            return None
        chunks = self.chunks_for(info)
        return chunks[index].chunk if 0 <= index < len(chunks) else None

    def get_chunk_text(self, chunk_id: str) -> str:
        """The text of a chunk by id (with its header), `""` when there is none."""
        chunk = self.get_chunk(chunk_id)
        return chunk.content if chunk else ""


def read_chunks(
    vault: Vault, info: NoteInfo, max_chars: int = CHUNK_SIZE
) -> tuple[ParsedNote, list[Chunk]] | None:
    """Read a note and cut it into chunks: the one way every index gets a note's chunks.

    Chunk ids are what the lexical and the vector index share, so both must cut the same
    text the same way. The record's parse is reused while the file is unchanged.

    Returns:
        The parse and the chunks of the note as it is on disk now, None when unreadable.
    """
    read = vault.reader.read_recorded(info)
    if read is None:
        return None
    text, unchanged = read
    parsed = info.parsed if unchanged and _fits(info.parsed, text) else parse_note(text)
    chunks = chunk_note(info.path, text, parsed.headings, parsed.body_start, max_chars)
    # A note with no body is still found by its name and tags.
    return parsed, chunks or [title_only_chunk(info.path)]


def _fits(parsed: ParsedNote, text: str) -> bool:
    """Whether a record's offsets can describe this text (a saved record may be forged).

    A record adopted from a saved index says where the note's headings are; offsets past
    the text, or a heading that is not where it says, would cut the note wrongly or not at
    all. Checking costs a comparison per heading; a mismatch parses the note again.
    """
    if not 0 <= parsed.body_start <= len(text):
        return False
    return all(
        0 <= heading.start < len(text)
        and text.startswith("#", heading.start + _indent(text, heading.start))
        for heading in parsed.headings
    )


def _indent(text: str, start: int) -> int:
    """Spaces before a heading's `#` (markdown allows up to three)."""
    end = start
    while end < len(text) and end - start < 3 and text[end] == " ":
        end += 1
    return end - start


def _frontmatter_title(frontmatter: dict[str, object]) -> str:
    title = frontmatter.get("title")
    return title if isinstance(title, str) else ""


def _cost(indexed: IndexedChunk) -> int:
    """What a cached chunk holds, in bytes: its text (1-4 bytes a character) and terms."""
    body = indexed.terms.get("body", ())
    return sys.getsizeof(indexed.chunk.content) + _TERM_BYTES * len(body) + _CHUNK_BYTES
