"""`IndexedChunks`: where an index's chunks lie in the store, and what their lines say.

The index holds no chunk's text or metadata: a 100,000-chunk store is a few hundred MB of
text and a query needs a few dozen lines. Each chunk is its id and its line's place; its
text is read back for the results and the phrase boosts, its metadata once per key a
query filters on. A line read back may no longer be the chunk (the store changed under
the index): that is logged, and the chunk left out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.chunk_store.boosts import QueryBoosts
from langchain_vaultsearch.chunk_store.jsonl_store import (
    ChunkLocation,
    ChunkReader,
    ChunkRecord,
    FileStamp,
    JsonlChunkStore,
    parse_line,
)
from langchain_vaultsearch.chunk_store.profile import RetrievalProfile

logger = logging.getLogger(__name__)

_MISSING = object()


@dataclass
class IndexedChunks:
    """The chunks an index was built from, by chunk number.

    Attributes:
        stamps: the store's files when it was built (a change means rebuild).
        files: the files chunk locations refer to.
        ids: chunk ids, by chunk number.
        lines: per chunk (file number, line, byte offset, byte length), int64.
    """

    stamps: list[FileStamp]
    files: list[str]
    ids: list[str]
    lines: npt.NDArray[np.int64]
    _filter_values: dict[str, dict[tuple[bool, Any], npt.NDArray[np.int32]]] = field(
        default_factory=dict, repr=False
    )

    def __len__(self) -> int:
        return len(self.ids)

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

    def text_boosts(
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

    def record(self, reader: ChunkReader, number: int) -> ChunkRecord | None:
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


def _hashable(value: object) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _value_key(value: object) -> tuple[bool, Any]:
    # 1 == True in Python; a filter for True must not match a count of 1.
    return isinstance(value, bool), value
