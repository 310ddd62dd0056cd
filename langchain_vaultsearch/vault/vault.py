"""Vault: the only code that touches the filesystem (with the folder walk it owns).

A long-lived retriever must see notes that were added, edited, renamed or deleted since
its last query without being rebuilt, and must not re-read 6,000 unchanged notes to do
so. `Vault.refresh` therefore walks the folder tree (`folder_walk.FolderWalk`), compares
each note's mtime and size with what it saw last time, and reads only what changed
(docs/design.md, decision 3). The walk watches the folders it listed
(`watcher.FolderWatcher`), so that a refresh stats only what the system reported as
changed, and nothing at all when the vault is unchanged.
Everything else in the package works on the `NoteInfo` records and the change sets it
returns.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
import time
from array import array
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType

import numpy as np

from langchain_vaultsearch.vault.folder_walk import FolderWalk
from langchain_vaultsearch.vault.link_graph import LinkGraph
from langchain_vaultsearch.vault.markdown import ParsedNote, parse_note
from langchain_vaultsearch.vault.note_info import NoteInfo, VaultChanges, note_title
from langchain_vaultsearch.vault.note_records import Stamp, file_stamp
from langchain_vaultsearch.vault.patterns import PathPattern, is_allowed, parse_patterns
from langchain_vaultsearch.vault.saved_notes import SavedNotes, SavedRow, encode_row
from langchain_vaultsearch.vault.tag_catalog import TagCatalog
from langchain_vaultsearch.vault.watcher import FolderChanges, FolderWatcher

logger = logging.getLogger(__name__)

MAX_NOTE_BYTES = 10 * 1024 * 1024
# A Windows drive (`C:`) as a path's first part: absolute, so refused. A colon elsewhere
# in a name (`Re: budget.md`, `Meetings: 2024/`) is an ordinary file name on POSIX.
_DRIVE = re.compile(r"[A-Za-z]:")


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def decode_note(data: bytes) -> str:
    r"""Decode note bytes so a bad byte or a Windows editor never hides a note.

    Args:
        data: raw file content.

    Returns:
        The text with invalid bytes replaced, the BOM dropped and line endings `\\n`.
        UTF-8 unless a UTF-16 byte order mark says otherwise (Windows tools write those).
    """
    encoding = "utf-16" if data.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8"
    text = data.decode(encoding, errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


class Vault:
    """A folder of markdown notes, watched by mtime and size, and by a folder watcher.

    Thread-safe: the async retriever path runs refreshes in worker threads. A context
    manager: leaving it (or `close`) releases the folder watch, as garbage
    collection does.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        inclusions: str | Sequence[str] | None = None,
        exclusions: str | Sequence[str] | None = None,
        include_hidden: bool = False,
        max_note_bytes: int = MAX_NOTE_BYTES,
        refresh_interval: float = 0.0,
        watch: bool = True,
    ) -> None:
        """Open a vault folder.

        Args:
            root: the vault folder; `~` is expanded.
            inclusions: rules (see `patterns.parse_patterns`) a note must match one of.
            exclusions: rules that remove notes from search.
            include_hidden: also search dot-folders such as `.obsidian/` and `.trash/`.
            max_note_bytes: notes larger than this are skipped with a warning.
            refresh_interval: seconds during which a refresh trusts the previous scan.
                0 (the default) checks the disk on every refresh; a few seconds saves the
                stat calls on very large vaults at the cost of seeing edits that late.
            watch: watch the folders (inotify on Linux, watchfiles elsewhere: see
                `watcher.FolderWatcher.open`) so that a refresh of an unchanged vault stats
                no note; where no watcher can start, every refresh walks the vault. A refresh
                still sees every edit completed before it began. On a network filesystem or
                a FUSE mount, whose edits made elsewhere may raise no event, the vault is not
                watched (logged once); False does the same anywhere.

        Raises:
            ValueError: when the folder does not exist or a limit is not positive.
        """
        path = Path(os.path.expanduser(os.fspath(root)))
        if not path.is_dir():
            msg = f"Vault folder does not exist or is not a directory: {path}"
            raise ValueError(msg)
        if max_note_bytes <= 0:
            msg = f"max_note_bytes must be positive, got {max_note_bytes}"
            raise ValueError(msg)
        if refresh_interval < 0:
            msg = f"refresh_interval must not be negative, got {refresh_interval}"
            raise ValueError(msg)
        self.root = path.resolve()
        self.inclusions: tuple[PathPattern, ...] = parse_patterns(inclusions)
        self.exclusions: tuple[PathPattern, ...] = parse_patterns(exclusions)
        self.include_hidden = include_hidden
        self.max_note_bytes = max_note_bytes
        # Notes read (or re-derived) in this process; the others are rows of `_saved`.
        self._notes: dict[str, NoteInfo] = {}
        self._stamps: dict[str, Stamp] = {}
        # Records adopted from a saved index, decoded when looked up. The file is anyone's
        # input, so a row is checked against its note the first time `get` returns it
        # (`SavedNotes.verified`), and a mismatch is logged and re-derived.
        self._saved: SavedNotes | None = None
        # Grows with each record change; what `ChangeFeed` compares (saved rows: -2 - row).
        self._revisions: dict[str, int] = {}
        self._next_revision = 0
        # A digest of each note's text read in this process: tells a change of the file's
        # attributes only (chmod, a new hard link: the inode change time moves) from an
        # edit that kept its size and restored its mtime.
        self._digests: dict[str, bytes] = {}
        self._oversized: set[tuple[str, int]] = set()
        self._lock = threading.RLock()
        self._graph: LinkGraph | None = None
        self.refresh_interval = refresh_interval
        self._last_refresh = -math.inf
        self._version = 0
        self._folders = FolderWalk(self.root, include_hidden=self.include_hidden, watch=watch)
        self.tag_catalog = TagCatalog(self)
        """The tags the notes carry (counted once per version; see `TagCatalog`)."""

    @property
    def watching(self) -> bool:
        """True while a watcher tells refreshes what changed (False: every refresh walks)."""
        return self._folders.watcher is not None

    @property
    def watcher(self) -> FolderWatcher | None:
        """The watcher refreshes drain (`inotify`, `watchfiles`), None when they walk."""
        return self._folders.watcher

    def close(self) -> None:
        """Stop watching; later refreshes walk the vault as with `watch=False`."""
        with self._lock:
            self._folders.stop_watching()

    def __enter__(self) -> Vault:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ----------------------------------------------------------------- scanning

    def refresh(self, *, keep_text: bool = True) -> VaultChanges:
        """Bring the note records up to date with the disk.

        Args:
            keep_text: False leaves the change set's texts empty, for a caller that reads
                notes again one at a time (a first index build): the text of 6,000 notes
                is then never held at once.

        Returns:
            The notes added, changed or removed since the previous refresh.
        """
        with self._lock:
            now = time.monotonic()
            if now - self._last_refresh < self.refresh_interval:
                return VaultChanges()
            self._last_refresh = now
            folders = self._folders
            events = folders.watcher.drain() if folders.watcher is not None else FolderChanges()
            if events is None:
                folders.restart()
                events = FolderChanges()
            elif folders.watcher is not None and not events and not folders.walk_needed:
                return VaultChanges()
            try:
                return self._apply(folders.walk(events), keep_text)
            except BaseException:
                # The events drained for this walk would be lost.
                folders.restart()
                raise

    def _apply(
        self, walked: Iterator[tuple[str, str, os.stat_result | None]], keep_text: bool
    ) -> VaultChanges:
        """Load what changed and drop what is gone (`stat` None: known unchanged)."""
        # Only the paths are kept of notes whose stamp did not move: holding every note's
        # stat result and absolute path until the walk ended left ~120 MB of freed but
        # scattered heap in a process that adopted 100,480 saved notes. The stamps of
        # adopted rows are compared in one step after the walk.
        seen: set[str] = set()
        moved: dict[str, tuple[str, os.stat_result, Stamp]] = {}
        saved = self._saved
        adopted: list[str] = []
        rows: array[int] = array("q")
        stamps: array[int] = array("q")
        for rel, abs_path, stat in walked:
            seen.add(rel)
            if stat is None:
                continue
            stamp = file_stamp(stat)
            row = None if saved is None or rel in self._stamps else saved.row(rel)
            if row is not None:
                adopted.append(rel)
                rows.append(row)
                stamps.extend(stamp)
            elif self._stamp_of(rel) != stamp:
                moved[rel] = (abs_path, stat, stamp)
        updated: list[tuple[NoteInfo, str]] = []
        unreadable: set[str] = set()
        for position in [] if saved is None else saved.moved(rows, stamps):
            rel = adopted[position]
            abs_path = os.path.join(self.root, rel)
            try:
                stat = os.stat(abs_path)
            except OSError:
                unreadable.add(rel)
                continue
            moved[rel] = (abs_path, stat, file_stamp(stat))
        for rel, (abs_path, stat, stamp) in moved.items():
            known = self._stamp_of(rel)
            if known is not None and known[:2] == stamp[:2] and self._same_text(rel, abs_path):
                self._restamp(rel, stamp)  # its attributes changed, not its text
                continue
            loaded = self._load(rel, abs_path, stat)
            if loaded is None:
                unreadable.add(rel)
                continue
            self._keep(loaded[0], stamp)
            self._digests[rel] = _digest(loaded[1])
            updated.append(loaded if keep_text else (loaded[0], ""))
        removed = [rel for rel in self.notes if rel not in seen or rel in unreadable]
        for rel in removed:
            self._forget_note(rel)
        if updated or removed:
            self._graph = None
            self._version += 1
        return VaultChanges(tuple(updated), tuple(removed))

    def _stamp_of(self, path: str) -> Stamp | None:
        stamp = self._stamps.get(path)
        if stamp is None and self._saved is not None:
            row = self._saved.row(path)
            return None if row is None else self._saved.stamp(row)
        return stamp

    def _restamp(self, path: str, stamp: Stamp) -> None:
        """Record a note's new stamp when only its attributes changed (lock held)."""
        info = self._notes.get(path)
        if info is not None:
            self._stamps[path] = stamp
            self._notes[path] = replace(info, changed_ns=stamp[2])
        elif self._saved is not None and (row := self._saved.row(path)) is not None:
            self._saved.set_stamp(row, stamp)

    def _keep(self, info: NoteInfo, stamp: Stamp) -> None:
        """Hold a note's record as read in this process (lock held); its saved row retires."""
        self._forget_note(info.path)
        self._notes[info.path] = info
        self._stamps[info.path] = stamp
        self._revisions[info.path] = self._next_revision
        self._next_revision += 1

    def _forget_note(self, path: str) -> None:
        self._notes.pop(path, None)
        self._stamps.pop(path, None)
        self._digests.pop(path, None)
        self._revisions.pop(path, None)
        if self._saved is not None and (row := self._saved.row(path)) is not None:
            self._saved.live[row] = False

    def revision(self, path: str) -> int:
        """A note's revision (see `revisions`); -1 for an unknown note."""
        with self._lock:
            revision = self._revisions.get(path)
            if revision is not None:
                return revision
            row = None if self._saved is None else self._saved.row(path)
            return -1 if row is None else _saved_revision(row)

    def revisions(self) -> Iterator[tuple[str, int]]:
        """Each note's path and revision: a revision changes whenever the note's record does.

        What an index that follows the vault compares (`ChangeFeed`), without decoding
        the records of a saved index.
        """
        with self._lock:
            current = list(self._revisions.items())
            saved = self._saved
            rows = [] if saved is None else np.flatnonzero(saved.live).tolist()
        yield from current
        if saved is not None:
            for row in rows:
                yield saved.paths[row], _saved_revision(row)

    @property
    def version(self) -> int:
        """Grows by one with every refresh or adoption that changed the note records.

        Several indexes may share a vault, and a refresh hands its change set only to
        the caller; the others see the version move and reconcile with `notes`.
        """
        return self._version

    def saved_row(self, path: str) -> SavedRow | None:
        """What a saved index keeps of a note (see `saved_notes.pack`), or None if unknown.

        A note whose frontmatter cannot round-trip through JSON gets an empty record, so
        a process adopting the rows reads it again. Rows adopted and unchanged are copied
        as saved, without decoding.
        """
        with self._lock:
            info = self._notes.get(path)
            if info is None:
                saved = self._saved
                row = None if saved is None else saved.row(path)
                if saved is None or row is None:
                    return None
                return (saved.stamp(row), *saved.times(row), saved.raw(row))
            stamp = self._stamps[path]
        return encode_row(info, stamp)

    def adopt(self, saved: SavedNotes, graph: LinkGraph | None = None) -> int:
        """Take note records saved by an earlier process as if they had been read.

        Only a vault that has not been refreshed yet adopts records; the next refresh
        then reads just the notes whose stamp differs from their row's, and reports rows
        of vanished notes as removed.

        Args:
            saved: the rows of a saved index, decoded when looked up.
            graph: the link graph saved with them, used until the notes change.

        Returns:
            How many records were adopted (0 when the vault was already scanned).
        """
        with self._lock:
            if self._notes or self._saved is not None:
                return 0
            paths = saved.live_paths()
            # Lexical check only: the next refresh drops records of paths its walk does
            # not find, symlinks that leave the vault included.
            for path in paths if _may_climb_out(paths) else ():
                if _relative_parts(path) is None:
                    saved.live[saved.rows[path]] = False
            self._saved = saved
            self._graph = graph
            self._version += 1
            return int(saved.live.sum())

    def unchanged_notes(self, saved: SavedNotes) -> list[str]:
        """The notes held now whose file is the one a saved row was made from.

        For an index saved with this vault's rows that the vault could not adopt (it had
        been refreshed already): the index is current for these notes only.
        """
        with self._lock:
            return [
                path
                for path in saved.live_paths()
                if (row := saved.row(path)) is not None and self._stamp_of(path) == saved.stamp(row)
            ]

    def list_files(self) -> dict[str, tuple[str, Stamp]]:
        """Every note file on disk now, without reading, parsing or recording any of them.

        For a first search over a vault that was never indexed: finding the files costs
        one stat each, where `refresh` also reads and parses every note (seconds for
        thousands of notes). The same rules as `refresh` apply: hidden folders, symlinks
        that leave the vault, a folder reached twice.

        Returns:
            Vault-relative path -> (absolute path, (mtime_ns, size, ctime_ns)).
        """
        return self.walk_files(None)[0]

    def walk_files(
        self, watcher: FolderWatcher | None
    ) -> tuple[dict[str, tuple[str, Stamp]], bool]:
        """`list_files` with a watch put on each folder first: `FolderWalk.walk_files`."""
        return self._folders.walk_files(watcher)

    def _inside_root(self, real_path: str) -> bool:
        return self._folders.inside_root(real_path)

    def peek(self, path: str) -> NoteInfo | None:
        """Parse one note from disk without adding it to the records `refresh` keeps.

        Args:
            path: vault-relative posix path.

        Returns:
            The note's record, or None when the path is unsafe, missing, unreadable or
            over the size limit.
        """
        read = self.read_note(path)
        return None if read is None else read[0]

    def read_note(self, path: str) -> tuple[NoteInfo, str, Stamp] | None:
        """`peek`, with the note's text and the stamp of the file it was read from."""
        abs_path = self.safe_path(path)
        return None if abs_path is None else self.read_listed(path, str(abs_path))

    def read_listed(self, path: str, abs_path: str) -> tuple[NoteInfo, str, Stamp] | None:
        """`read_note` for a note as `list_files` gave it, its path not resolved again.

        The listing's walk already kept out what leads outside the vault; resolving each
        path again (`safe_path`, a `realpath` per note) was a tenth of an index build.

        Args:
            path: the note's vault-relative path.
            abs_path: its file, from the same listing: never a path from elsewhere (a
                link, a query), which `read_note` checks.
        """
        try:
            stat = os.stat(abs_path)
        except OSError:
            return None
        loaded = self._load(path, abs_path, stat)
        if loaded is None:
            return None
        return loaded[0], loaded[1], file_stamp(stat)

    def _same_text(self, rel: str, abs_path: str) -> bool:
        """Whether a note's file still holds the text read before (False when unknown)."""
        known = self._digests.get(rel)
        if known is None:
            return False  # never read here (an adopted record): read it again
        try:
            with open(abs_path, "rb") as handle:
                text = decode_note(handle.read(self.max_note_bytes + 1))
        except OSError:
            return False
        return _digest(text) == known

    def _load(self, rel: str, abs_path: str, stat: os.stat_result) -> tuple[NoteInfo, str] | None:
        if stat.st_size > self.max_note_bytes:
            key = (rel, stat.st_mtime_ns)
            if key not in self._oversized:
                self._oversized.add(key)
                logger.warning(
                    "Skipping %s: %d bytes is over the %d-byte note limit",
                    rel,
                    stat.st_size,
                    self.max_note_bytes,
                )
            return None
        try:
            with open(abs_path, "rb") as handle:
                text = decode_note(handle.read(self.max_note_bytes + 1))
        except OSError as exc:
            logger.warning("Cannot read %s: %s", rel, exc)
            return None
        parsed = parse_note(text)
        if parsed.frontmatter_error:
            logger.warning(
                "Ignoring the frontmatter of %s (%s); the note stays searchable",
                rel,
                parsed.frontmatter_error,
            )
        ctime = getattr(stat, "st_birthtime", stat.st_ctime)
        # The times of the stamp, clamped as saved: `read_recorded` compares the two.
        mtime_ns, size, changed_ns = file_stamp(stat)
        info = self._note_info(
            rel, mtime_ns / 1e6, ctime * 1000.0, size, parsed, changed_ns=changed_ns
        )
        return info, text

    def _note_info(
        self,
        rel: str,
        mtime_ms: float,
        ctime_ms: float,
        size: int,
        parsed: ParsedNote,
        *,
        changed_ns: int,
    ) -> NoteInfo:
        return NoteInfo(
            path=rel,
            title=note_title(rel),
            mtime_ms=mtime_ms,
            ctime_ms=ctime_ms,
            size=size,
            parsed=parsed,
            changed_ns=changed_ns,
            searchable=self._allowed(rel, parsed),
        )

    def _allowed(self, path: str, parsed: ParsedNote) -> bool:
        if not (self.inclusions or self.exclusions):
            return True
        return is_allowed(self.inclusions, self.exclusions, path, parsed.tags, parsed.frontmatter)

    # ----------------------------------------------------------------- reading

    def read_text(self, path: str) -> str | None:
        """Read a note by its vault-relative path, refusing anything outside the vault.

        Args:
            path: vault-relative posix path.

        Returns:
            The decoded text, or None when the path is unsafe, missing or unreadable.
        """
        read = self._read_stamped(path)
        return None if read is None else read[0]

    def read_recorded(self, info: NoteInfo) -> tuple[str, bool] | None:
        """Read a note and tell whether the file is still the one `info` was parsed from.

        Chunking needs heading offsets; when the file's mtime and size still match the
        record, `info.parsed` describes this very text and need not be parsed again.

        Args:
            info: the note's record.

        Returns:
            `(text, unchanged)`, or None when the note cannot be read.
        """
        read = self._read_stamped(info.path)
        if read is None:
            return None
        text, (mtime_ns, size, ctime_ns) = read
        # `info` may not be in the records (see `peek`): its own stamp tells.
        return text, (mtime_ns / 1e6, size, ctime_ns) == info.content_stamp

    def _read_stamped(self, path: str) -> tuple[str, Stamp] | None:
        """A note's text and the `(mtime_ns, size, ctime_ns)` of the file it was read from."""
        abs_path = self.safe_path(path)
        if abs_path is None:
            return None
        try:
            with open(abs_path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                text = decode_note(handle.read(self.max_note_bytes + 1))
        except OSError:
            return None
        return text, file_stamp(stat)

    def safe_path(self, path: str) -> Path | None:
        """Map a vault-relative path to a file path only if it stays inside the vault.

        Args:
            path: a path as it appears in a chunk id or a link.

        Returns:
            The absolute path, or None for absolute paths, `..` escapes and symlinks
            that lead outside the root.
        """
        parts = _relative_parts(path)
        if parts is None:
            return None
        candidate = self.root.joinpath(*parts)
        if not self._inside_root(os.path.realpath(candidate)):
            return None
        return candidate

    # ----------------------------------------------------------------- queries

    @property
    def notes(self) -> Mapping[str, NoteInfo]:
        """Notes known after the last refresh, by path (searchable or not).

        Records adopted from a saved index are decoded as they are looked up: iterating
        the values of a large vault decodes every record, so passes over the whole vault
        iterate paths where they can.
        """
        return _KnownNotes(self)

    def get(self, path: str) -> NoteInfo | None:
        """The record of one note, or None (checked against the note if it was adopted)."""
        info = self._notes.get(path)
        saved = self._saved
        if info is not None or saved is None:
            return info
        row = saved.row(path)
        if row is None:
            return None
        info = self._decoded(saved, row)
        if info is None or saved.verified[row]:
            return info
        return self._verified(info, saved, row)

    def content_stamp(self, path: str) -> tuple[float, int, int] | None:
        """`(mtime_ms, size, changed_ns)` of a known note, read without decoding its record.

        What a cache of a note's derived data is keyed by (`ChunkCache`): a query's
        candidates whose chunks are cached need nothing else of their record. On the
        100,480-note help x16 vault, decoding the saved records of a query's 200
        candidates was half of a warm query, and the decoded records that outgrew their
        cache set off a full garbage collection (~270 ms) every few dozen queries.
        """
        info = self._notes.get(path)
        if info is not None:
            return info.content_stamp
        saved = self._saved
        row = None if saved is None else saved.row(path)
        if saved is None or row is None:
            return None
        _mtime_ns, size, changed_ns = saved.stamp(row)
        return saved.times(row)[0], size, changed_ns

    def record(self, path: str) -> NoteInfo | None:
        """The record of one note as held, unchecked: for passes over every note.

        `get` checks a record adopted from a saved index against its note the first time
        it is asked for it; a pass over the whole vault would read the whole vault.
        """
        info = self._notes.get(path)
        saved = self._saved
        if info is not None or saved is None:
            return info
        row = saved.row(path)
        return None if row is None else self._decoded(saved, row)

    def _decoded(self, saved: SavedNotes, row: int) -> NoteInfo | None:
        """A saved row as a record; a damaged row is read again from its note (logged)."""
        path = saved.paths[row]
        mtime_ms, ctime_ms = saved.times(row)
        stamp = saved.stamp(row)
        try:
            parsed = saved.parsed(row)
        except ValueError as exc:
            logger.warning("The saved record of %s is damaged (%s); it is read again", path, exc)
            return self._reread(path)
        return self._note_info(path, mtime_ms, ctime_ms, stamp[1], parsed, changed_ns=stamp[2])

    def _reread(self, path: str) -> NoteInfo | None:
        """Read a note whose saved row cannot be trusted; the next refresh reports it."""
        read = self.read_note(path)
        with self._lock:
            if read is None:
                self._forget_note(path)
            else:
                self._keep(read[0], read[2])
                self._digests[path] = _digest(read[1])
            self._graph = None
            self._version += 1
        return None if read is None else read[0]

    def _verified(self, info: NoteInfo, saved: SavedNotes, row: int) -> NoteInfo:
        """An adopted record, or the one its note parses to when they differ (logged)."""
        read = self._read_stamped(info.path)
        if read is None or read[1] != saved.stamp(row):
            return info  # changed since: the next refresh reads it anyway
        text = read[0]
        parsed = parse_note(text)
        digest = _digest(text)
        with self._lock:
            if saved.row(info.path) != row:
                return self._notes.get(info.path) or info
            saved.verified[row] = True
            self._digests[info.path] = digest
            if parsed == info.parsed:
                return info
            logger.warning(
                "The saved record of %s does not match the note (a stale or altered index"
                " file); it is re-derived from the note",
                info.path,
            )
            fixed = replace(info, parsed=parsed, searchable=self._allowed(info.path, parsed))
            self._keep(fixed, read[1])  # forgets the digest with the saved row
            self._digests[info.path] = digest
            self._graph = None
            self._version += 1
            return fixed

    def folder_sizes(self) -> Counter[str]:
        """Number of notes directly in each folder (the folder boost's denominator)."""
        return self._link_graph().folder_sizes

    def backlinks(self, path: str) -> frozenset[str]:
        """Paths of the notes that link to `path`."""
        return self._link_graph().backlinks(path)

    def tags(self, path: str) -> tuple[str, ...]:
        """A note's tags (inline and frontmatter, `#`-prefixed), empty for an unknown note.

        As recorded (`record`): the graph boost asks this of many notes per query.
        """
        info = self.record(path)
        return info.parsed.tags if info is not None else ()

    def outlinks(self, path: str) -> frozenset[str]:
        """Paths of the notes `path` links to (resolved; unresolved links dropped)."""
        return self._link_graph().outlinks(path)

    def neighbours(
        self, path: str, limit: int, exclude: Collection[str] = ()
    ) -> list[tuple[str, int]]:
        """Up to `limit` notes one link away, most linked first (`LinkGraph.neighbours`)."""
        return self._link_graph().neighbours(path, limit, exclude)

    def co_cited(self, path: str, among: Collection[str]) -> set[str]:
        """The notes of `among` that a note linking to `path` also links to."""
        return self._link_graph().co_cited(path, among)

    def resolve(self, name: str) -> str | None:
        """Resolve a link target to a note path the way Obsidian does.

        Exact vault paths win (with or without `.md`), then file names compared
        case-insensitively, then frontmatter aliases. An ambiguous name picks the
        shortest path and says so in the log (docs/design.md, decision 4).

        Args:
            name: the link target, heading and alias already stripped.

        Returns:
            The note path, or None.
        """
        return self._link_graph().resolve(name)

    def _link_graph(self) -> LinkGraph:
        with self._lock:
            if self._graph is None:
                self._graph = LinkGraph.from_notes(self.notes)
            return self._graph

    def link_graph(self) -> LinkGraph:
        """The notes' links as rows over paths (what a saved index keeps)."""
        return self._link_graph()


def open_vault(
    vault: Vault | None,
    vault_path: str | os.PathLike[str] | None,
    *,
    owner: str,
    needs: str = "vault_path or vault",
    inclusions: Sequence[str] | str | None = None,
    exclusions: Sequence[str] | str | None = None,
) -> Vault:
    """The vault a retriever searches: the shared one given, else one opened at `vault_path`.

    Every retriever takes either, so that several can share one scan; this is the one
    place that says so and opens the folder.

    Args:
        vault: a `Vault` shared with other retrievers (wins over `vault_path`).
        vault_path: the vault folder.
        owner: who asks, for the error message (e.g. "FilterRetriever").
        needs: what the owner takes instead, for the error message.
        inclusions: rules a note must match one of, for a vault opened here.
        exclusions: rules that leave notes out, for a vault opened here.

    Raises:
        ValueError: neither is given, the folder does not exist, or rules come with a
            shared vault (whose own rules apply: silently ignoring them would search
            notes the caller meant to leave out).
    """
    if vault is not None:
        if inclusions or exclusions:
            msg = (
                f"{owner}: inclusions and exclusions apply to a vault opened from vault_path;"
                " a shared vault has its own (Vault(path, inclusions=..., exclusions=...))"
            )
            raise ValueError(msg)
        return vault
    if not vault_path:
        msg = f"{owner} needs {needs}"
        raise ValueError(msg)
    return Vault(vault_path, inclusions=inclusions, exclusions=exclusions)


def _saved_revision(row: int) -> int:
    """The revision of an adopted row: negative, apart from read notes' and from -1."""
    return -2 - row


def _may_climb_out(paths: list[str]) -> bool:
    """Whether any of the paths needs `_relative_parts`' check, seen in one pass.

    Paths with no backslash, NUL, `..` or `:`, none empty and none starting with `/`, all
    pass it: checking 100,000 saved paths one by one was 0.4 s of a restart's first query.
    """
    joined = "\n" + "\n".join(paths) + "\n"
    return any(mark in joined for mark in ("\\", "\x00", "..", ":", "\n/", "\n\n"))


def _relative_parts(path: str) -> tuple[str, ...] | None:
    """The parts of a vault-relative path, None when it is absolute or climbs out.

    String operations only (the parts `PurePosixPath` gives: empty and `.` parts
    dropped): adopting a saved index checks every note's path with it.
    """
    if not path or path.startswith(("/", "\\")) or "\x00" in path:
        return None
    parts = tuple(part for part in path.replace("\\", "/").split("/") if part not in ("", "."))
    if any(part == ".." for part in parts) or (parts and _DRIVE.fullmatch(parts[0])):
        return None
    return parts


class _KnownNotes(Mapping[str, NoteInfo]):
    """The vault's notes by path; adopted records are decoded as they are looked up."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault

    def __getitem__(self, path: str) -> NoteInfo:
        info = self._vault.record(path)
        if info is None:
            raise KeyError(path)
        return info

    def __contains__(self, path: object) -> bool:
        vault = self._vault
        if path in vault._notes:
            return True
        saved = vault._saved
        return isinstance(path, str) and saved is not None and saved.row(path) is not None

    def __iter__(self) -> Iterator[str]:
        return (path for path, _revision in self._vault.revisions())

    def __len__(self) -> int:
        vault = self._vault
        saved = vault._saved
        return len(vault._notes) + (0 if saved is None else int(saved.live.sum()))
