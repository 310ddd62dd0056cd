"""`JsonlChunkStore`: `*.jsonl` files of chunks, read line by line and never trusted.

One JSON object a line: `{"id": "...", "text": "...", "metadata": {...}}`. `metadata` is
optional and free-form; `form_number`, `title`, `source` and `path` have a meaning to the
keyword retriever. Files come from other pipelines, so a bad line (not JSON, not an
object, no text, an id seen before) is reported with its file and line, logged, and
skipped: one broken export never takes the store down.

Records keep where they came from (file, byte offset, length) rather than their text: a
100,000-chunk store is a few hundred MB of text, and a query needs a few dozen of them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from langchain_vaultsearch.vault.watcher import FolderChanges, FolderWatcher

logger = logging.getLogger(__name__)

STORE_SUFFIX = ".jsonl"
STORE_PATTERN = f"*{STORE_SUFFIX}"
MAX_LINE_BYTES = 16 * 1024 * 1024
"""A longer line is not a chunk (a runaway export); it is reported and skipped."""
SKIP_PIECE_BYTES = 64 * 1024
"""The rest of a line over the limit is read past this much at a time, never held."""


@dataclass(frozen=True)
class ChunkLocation:
    """Where one chunk's line lies: enough to read it again without holding its text.

    Attributes:
        file: the file's path relative to the store's folder (posix).
        line: 1-based line number, for messages.
        offset: byte offset of the line in the file.
        length: the line's length in bytes.
    """

    file: str
    line: int
    offset: int
    length: int


@dataclass(frozen=True)
class ChunkRecord:
    """One valid chunk of the store.

    Attributes:
        id: the chunk's id, unique in the store.
        text: the text that is searched and shown.
        metadata: the line's `metadata` object (`{}` when absent).
        location: where the line lies.
    """

    id: str
    text: str
    metadata: dict[str, Any]
    location: ChunkLocation


@dataclass(frozen=True)
class StoreProblem:
    """A line that was skipped, and why.

    Attributes:
        file: the file, relative to the store's folder.
        line: 1-based line number.
        reason: what is wrong with it.
    """

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


FileStamp = tuple[str, int, int]
"""(file relative to the folder, st_mtime_ns, st_size): what says a file changed."""


class JsonlChunkStore:
    """The chunk files under one folder (subfolders included, hidden ones not).

    Args:
        chunk_dir: the folder holding `*.jsonl` files.

    Raises:
        FileNotFoundError: the folder does not exist or is not a folder.
    """

    def __init__(self, chunk_dir: str | os.PathLike[str], *, watch: bool = True) -> None:
        folder = Path(os.path.expanduser(os.fspath(chunk_dir)))
        if not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            msg = f"chunk folder {folder} {what}: pass a folder of *.jsonl files"
            raise FileNotFoundError(msg)
        self.root = folder.resolve()
        self.problems: list[StoreProblem] = []
        self._outside: set[Path] = set()  # links out of the folder, reported once each
        self._watcher: FolderWatcher | None = None
        self._watching = watch
        self._watched_stamps: list[FileStamp] | None = None
        self._watch_lock = threading.Lock()

    def files(self) -> list[Path]:
        """The store's files, sorted, so ids that repeat across files resolve the same way.

        A link to a file outside the folder is not the store's, as a vault skips notes
        linked from outside it: whoever can write the folder could otherwise make every
        search read any file this process can.
        """
        found = []
        for path in self.root.rglob(STORE_PATTERN):
            relative = path.relative_to(self.root)
            if any(part.startswith(".") for part in relative.parts) or not path.is_file():
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(self.root):
                if relative not in self._outside:
                    self._outside.add(relative)
                    logger.warning("Skipping %s: it links outside the chunk folder", relative)
                continue
            found.append(path)
        return sorted(found, key=lambda p: p.relative_to(self.root).as_posix())

    def stamps(self) -> list[FileStamp]:
        """Every file's name, mtime and size: equal stamps mean an index is still current."""
        stamps = []
        for path in self.files():
            stat = path.stat()
            stamps.append((self._name(path), stat.st_mtime_ns, stat.st_size))
        return stamps

    def current_stamps(self) -> list[FileStamp]:
        """`stamps()`, kept while the folder watcher reports no change: no stat per file.

        A store of 10,000 files stat-ed every file before every query; the vault's folder
        watcher (inotify, or watchfiles on macOS and Windows) says instead whether anything
        changed, and it reports every edit completed before this call. Where no watcher
        can be trusted (a network or FUSE mount, a symlinked folder inside the store, a
        watch limit reached), every call stats every file, as before.
        """
        if not self._watching:
            return self.stamps()
        with self._watch_lock:
            watcher = self._watcher
            changes = None if watcher is None else watcher.drain()
            kept = self._watched_stamps
            if changes is not None and kept is not None and not self._concerns_listing(changes):
                return kept
            if watcher is None or changes is None:  # the first look, or events were lost
                if watcher is not None:
                    watcher.close()
                watcher = self._watcher = FolderWatcher.open(self.root, suffixes=(STORE_SUFFIX,))
            if watcher is None or not self._watch_folders(watcher):
                if watcher is not None:
                    watcher.close()
                self._watcher, self._watching = None, False
                return self.stamps()
            self._watched_stamps = self.stamps()
            return self._watched_stamps

    def _concerns_listing(self, changes: FolderChanges) -> bool:
        """Whether a change can touch what `files()` lists: not only dot-folders' entries.

        The store's own saved index lives in `.vaultsearch/`; writing it must not make
        the next query stat every file again.
        """

        def hidden(path: str) -> bool:
            relative = os.path.relpath(path, self.root)
            return any(part.startswith(".") for part in Path(relative).parts)

        shown = [path for path in changes.paths if not hidden(path)]
        explained = {os.path.dirname(path) for path in changes.paths if hidden(path)}
        return bool(shown) or bool(changes.folders - explained)

    def _watch_folders(self, watcher: FolderWatcher) -> bool:
        """Watch every folder the listing reads; False when one cannot be watched."""
        for folder, folders, _files in os.walk(self.root):
            folders[:] = [name for name in folders if not name.startswith(".")]
            if any(os.path.islink(os.path.join(folder, name)) for name in folders):
                return False  # the listing follows the link, a watch would not
            if not watcher.add(folder):
                return False
        return True

    def records(self) -> Iterator[ChunkRecord]:
        """Every valid chunk, file by file; skipped lines are in `problems` afterwards.

        The first line with an id wins; a later one with the same id is a problem.
        """
        self.problems = []
        seen: set[str] = set()
        for path in self.files():
            name = self._name(path)
            try:
                with path.open("rb") as handle:
                    yield from self._file_records(handle, name, seen)
            except OSError as exc:
                self._problem(name, 0, f"cannot be read ({exc.strerror or exc})")

    def get_chunks(self, filters: Mapping[str, Any] | None = None) -> list[ChunkRecord]:
        """The valid chunks whose metadata matches `filters` (see `matches_filters`).

        Args:
            filters: metadata key -> wanted value (or a list of accepted values).
        """
        return [r for r in self.records() if matches_filters(r.metadata, filters)]

    def read(self, location: ChunkLocation) -> ChunkRecord | None:
        """Read one chunk again from where it was; None when the file changed under it."""
        with self.reader() as reader:
            raw = reader.raw(location)
        return None if raw is None else parse_line(raw, location)

    def reader(self) -> ChunkReader:
        """A reader of many chunks that opens each file once (close it, or use `with`)."""
        return ChunkReader(self.root)

    def _file_records(
        self,
        handle: BinaryIO,
        name: str,
        seen: set[str],
    ) -> Iterator[ChunkRecord]:
        offset = 0
        # The line limit caps each read: iterating the file read a whole line first, so
        # a 3 GB file without a newline took 3.3 GB before its length was checked.
        lines = iter(lambda: handle.readline(MAX_LINE_BYTES + 2), b"")  # + b"\r\n"
        for number, raw in enumerate(lines, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.endswith(b"\n") and len(raw) == MAX_LINE_BYTES + 2:
                offset += _skip_line(handle)
                self._problem(name, number, f"longer than {MAX_LINE_BYTES:,} bytes")
                continue
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            if len(line) > MAX_LINE_BYTES:
                self._problem(name, number, f"longer than {MAX_LINE_BYTES:,} bytes")
                continue
            parsed = _parse(line)
            if isinstance(parsed, str):
                self._problem(name, number, parsed)
                continue
            record_id, text, metadata = parsed
            if record_id in seen:
                self._problem(name, number, f"duplicate id {record_id!r} (the first one is kept)")
                continue
            seen.add(record_id)
            yield ChunkRecord(
                record_id, text, metadata, ChunkLocation(name, number, start, len(line))
            )

    def _problem(self, name: str, line: int, reason: str) -> None:
        problem = StoreProblem(name, line, reason)
        self.problems.append(problem)
        logger.warning("Skipping %s in the chunk store %s", problem, self.root)

    def _name(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


def _skip_line(handle: BinaryIO) -> int:
    """Read past the rest of a line in pieces of `SKIP_PIECE_BYTES`; the bytes skipped."""
    skipped = 0
    while piece := handle.readline(SKIP_PIECE_BYTES):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped


def matches_filters(metadata: Mapping[str, Any], filters: Mapping[str, Any] | None) -> bool:
    """Whether a chunk's metadata passes every filter.

    A filter value that is a list accepts any of its values; a metadata value that is a
    list (tags) passes when it holds the wanted value. A chunk without the key does not
    pass: the seed let it through, so a `doc_type: form` filter returned chunks that say
    nothing about their type.

    Args:
        metadata: the chunk's metadata.
        filters: key -> value or list of values; None or empty passes everything.
    """
    for key, wanted in (filters or {}).items():
        if key not in metadata:
            return False
        have = metadata[key]
        accepted = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
        values = have if isinstance(have, list) else [have]
        if not any(_equal(v, a) for v in values for a in accepted):
            return False
    return True


def check_filters(filters: Mapping[str, Any] | None) -> dict[str, Any]:
    """Filters as a plain dict, or a `ValueError` saying which one is malformed."""
    if filters is None:
        return {}
    if not isinstance(filters, Mapping):
        msg = f"filters must be a mapping of metadata key to value, not {type(filters).__name__}"
        raise ValueError(msg)
    for key, value in filters.items():
        if not isinstance(key, str):
            msg = f"filter keys are metadata keys (strings), not {key!r}"
            raise ValueError(msg)
        if isinstance(value, Mapping):
            msg = f"filter {key!r}: a value or a list of values, not a mapping"
            raise ValueError(msg)
    return dict(filters)


def _equal(value: object, wanted: object) -> bool:
    if isinstance(value, bool) or isinstance(wanted, bool):
        return value is wanted  # 1 == True in Python; a filter for True is not a count of 1
    return value == wanted


class ChunkReader:
    """Reads chunk lines by location, keeping each file open until closed.

    A query may look at thousands of candidates' lines: opening the file for each one
    cost more than reading it.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._handles: dict[str, BinaryIO] = {}

    def raw(self, location: ChunkLocation) -> bytes | None:
        """The line's bytes, None when the file cannot be read."""
        try:
            handle = self._handles.get(location.file)
            if handle is None:
                handle = self._handles[location.file] = (self.root / location.file).open("rb")
            handle.seek(location.offset)
            return handle.read(location.length)
        except OSError:
            return None

    def close(self) -> None:
        """Close the files."""
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()

    def __enter__(self) -> ChunkReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def parse_line(raw: bytes, location: ChunkLocation) -> ChunkRecord | None:
    """The chunk a line read back holds, None when it is no longer a valid chunk."""
    parsed = _parse(raw)
    if isinstance(parsed, str):
        return None
    record_id, text, metadata = parsed
    return ChunkRecord(record_id, text, metadata, location)


def _parse(line: bytes) -> tuple[str, str, dict[str, Any]] | str:
    """(id, text, metadata) of one line, or why it is not a chunk."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return f"not valid JSON ({str(exc)[:80]})"
    if not isinstance(value, dict):
        return "not a JSON object"
    record_id, text, metadata = value.get("id"), value.get("text"), value.get("metadata", {})
    if isinstance(record_id, int) and not isinstance(record_id, bool):
        record_id = str(record_id)
    if not isinstance(record_id, str) or not record_id:
        return "no id (a non-empty string)"
    if not isinstance(text, str) or not text.strip():
        return "no text"
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        return "metadata is not a JSON object"
    return record_id, text, metadata
