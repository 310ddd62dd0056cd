"""SavedNotes: the note records of a saved index, opened rather than parsed.

A restart used to parse every note's record out of one JSON document and turn it into
objects: at 100,000 notes 7.4 s and most of a gigabyte, for a query that looks at a few
hundred notes. Here each record stays the UTF-8 JSON it was saved as (`note_records`),
one after the other in a buffer that is memory-mapped from the index file, and is decoded
when its note is looked up; the stamps every refresh compares are one int64 array.
Decoded records are kept in a small cache, so a query's notes are decoded once.
"""

from __future__ import annotations

import json
import logging
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.vault.markdown import ParsedNote
from langchain_vaultsearch.vault.note_info import NoteInfo
from langchain_vaultsearch.vault.note_records import (
    NotPortableError,
    Stamp,
    note_record,
    parse_record,
)

logger = logging.getLogger(__name__)

DECODED_CACHE_BYTES = 16 * 1024 * 1024
"""Decoded records kept by default, by estimated size (`MemoryBudget.decoded_records_bytes`
at the default budget): the notes a few dozen queries chunk, boost and return. Candidates
whose chunks are cached are not decoded at all (`Vault.content_stamp`)."""
_DECODED_PER_BYTE = 6
"""A decoded record's size per byte of its JSON (tuples, dataclasses, strings)."""

SavedRow = tuple[Stamp, float, float, bytes]
"""What is saved of one note: stamp, mtime_ms, ctime_ms and its JSON record (b"": none)."""


class SavedNotes:
    """The saved records of one vault's notes, by row; decoded one at a time.

    Rows whose record is empty (frontmatter JSON cannot carry) are not live: their notes
    are read again. The vault marks a row dead when its note is read again or removed.
    """

    def __init__(
        self,
        paths: Sequence[str],
        stamps: npt.NDArray[np.int64],
        times: npt.NDArray[np.float64],
        records: npt.NDArray[np.uint8],
        offsets: npt.NDArray[np.int64],
        *,
        decoded_cache_bytes: int = DECODED_CACHE_BYTES,
        read_records: Callable[[int, int], bytes] | None = None,
    ) -> None:
        """Wrap the arrays of a saved index (see `pack`); nothing is decoded.

        Args:
            paths: each row's note path.
            stamps: `(mtime_ns, size, ctime_ns)` of each row, flattened.
            times: `(mtime_ms, ctime_ms)` of each row, flattened.
            records: every row's JSON record, one after the other.
            offsets: where each row's record starts in `records`, and where the last ends.
            decoded_cache_bytes: how much memory decoded records may keep, by estimate.
            read_records: reads `size` bytes of `records` at an offset without touching
                the array (`MappedArchive.bytes_reader`); None slices the array.

        Raises:
            ValueError: when the arrays do not fit each other (a damaged file).
        """
        count = len(paths)
        if stamps.shape != (3 * count,) or times.shape != (2 * count,):
            msg = "the saved stamps do not match the notes"
            raise ValueError(msg)
        if offsets.shape != (count + 1,) or offsets[0] != 0 or offsets[-1] != records.size:
            msg = "the saved record offsets do not match the records"
            raise ValueError(msg)
        sizes = np.diff(offsets)
        if np.any(sizes < 0):
            msg = "the saved record offsets do not ascend"
            raise ValueError(msg)
        self.paths = list(paths)
        self.rows = {path: row for row, path in enumerate(self.paths)}
        if len(self.rows) != count:
            msg = "a note is saved twice"
            raise ValueError(msg)
        # Copied: a refresh updates a stamp when only a note's attributes changed.
        self._stamps = np.array(stamps.reshape(count, 3))
        self._times = times.reshape(count, 2)
        self._read = read_records or (lambda at, size: records[at : at + size].tobytes())
        self._offsets = offsets
        self.live = sizes > 0
        self.verified = np.zeros(count, dtype=np.bool_)
        self._decoded: OrderedDict[int, tuple[ParsedNote, int]] = OrderedDict()
        self._decoded_bytes = 0
        self._decoded_limit = decoded_cache_bytes
        self._lock = threading.Lock()

    def row(self, path: str) -> int | None:
        """The live row of a note, or None."""
        row = self.rows.get(path)
        return row if row is not None and self.live[row] else None

    def live_paths(self) -> list[str]:
        """The paths of the live rows."""
        return [self.paths[row] for row in np.flatnonzero(self.live).tolist()]

    def stamp(self, row: int) -> Stamp:
        """`(mtime_ns, size, ctime_ns)` of the file a row's record was made from."""
        mtime_ns, size, ctime_ns = self._stamps[row].tolist()
        return mtime_ns, size, ctime_ns

    def moved(self, rows: array[int], stamps: array[int]) -> list[int]:
        """Where the given stamps differ from their rows' (positions in `rows`).

        Args:
            rows: row numbers (typecode `q`).
            stamps: each row's stamp now, flattened (three `q` items a row).
        """
        if not rows:
            return []
        held = self._stamps[np.frombuffer(rows, dtype=np.int64)]
        given = np.frombuffer(stamps, dtype=np.int64).reshape(len(rows), 3)
        return np.flatnonzero((held != given).any(axis=1)).tolist()

    def set_stamp(self, row: int, stamp: Stamp) -> None:
        """A note's attributes changed but not its text: its record stays."""
        self._stamps[row] = stamp

    def times(self, row: int) -> tuple[float, float]:
        """`(mtime_ms, ctime_ms)` of a row's note."""
        mtime_ms, ctime_ms = self._times[row].tolist()
        return mtime_ms, ctime_ms

    def raw(self, row: int) -> bytes:
        """A row's record as saved (copied as is into the next save)."""
        start, end = self._offsets[row : row + 2].tolist()
        return self._read(start, end - start)

    def parsed(self, row: int) -> ParsedNote:
        """What a row's note parsed to when it was saved.

        Raises:
            ValueError: when the record is damaged, or names another note or file.
        """
        with self._lock:
            found = self._decoded.get(row)
            if found is not None:
                self._decoded.move_to_end(row)
                return found[0]
        raw = self.raw(row)
        try:
            record: Any = json.loads(raw)
        except (RecursionError, UnicodeDecodeError) as exc:
            msg = f"unreadable record: {exc!r}"
            raise ValueError(msg) from exc
        if not isinstance(record, dict):
            msg = "the record is not a JSON object"
            raise ValueError(msg)
        path, stamp, _mtime, _ctime, parsed = parse_record(record)
        # mtime and size only: a chmod or a new hard link moves the row's inode change
        # time (`set_stamp`) and is saved so, while the record keeps the stamp it was
        # made from. The text itself is checked against the note on first lookup.
        if path != self.paths[row] or stamp[:2] != self.stamp(row)[:2]:
            msg = "the record belongs to another note or file"
            raise ValueError(msg)
        cost = _DECODED_PER_BYTE * len(raw)
        with self._lock:
            if row not in self._decoded:
                self._decoded[row] = (parsed, cost)
                self._decoded_bytes += cost
            while self._decoded_bytes > self._decoded_limit and self._decoded:
                self._decoded_bytes -= self._decoded.popitem(last=False)[1][1]
        return parsed


def encode_row(info: NoteInfo, stamp: Stamp) -> SavedRow:
    """What a saved index keeps of a note read from the file `stamp` describes.

    A note whose frontmatter cannot round-trip through JSON gets an empty record, so the
    process adopting the rows reads it again.
    """
    try:
        record = note_record(info.path, stamp, info.mtime_ms, info.ctime_ms, info.parsed)
    except NotPortableError as exc:
        logger.debug("Not saving the record of %s: %s", info.path, exc)
        return stamp, info.mtime_ms, info.ctime_ms, b""
    return stamp, info.mtime_ms, info.ctime_ms, json.dumps(record).encode()


def pack(rows: Iterable[SavedRow], count: int) -> dict[str, npt.NDArray[Any]]:
    """The arrays `SavedNotes` opens, from each note's saved row, in note order.

    Args:
        rows: one per note, in the order of the index's paths.
        count: how many rows there are.

    Returns:
        `note_stamps`, `note_times`, `note_records` and `note_record_offsets`.
    """
    stamps = np.zeros(3 * count, dtype=np.int64)
    times = np.zeros(2 * count, dtype=np.float64)
    offsets = np.zeros(count + 1, dtype=np.int64)
    blobs = bytearray()
    for row, (stamp, mtime_ms, ctime_ms, record) in enumerate(rows):
        stamps[3 * row : 3 * row + 3] = stamp
        times[2 * row : 2 * row + 2] = (mtime_ms, ctime_ms)
        blobs += record
        offsets[row + 1] = len(blobs)
    return {
        "note_stamps": stamps,
        "note_times": times,
        "note_records": np.frombuffer(blobs, dtype=np.uint8),
        "note_record_offsets": offsets,
    }
