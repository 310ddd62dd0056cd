"""NoteStore: the vault's note records, read in this process or adopted from a saved index.

Apart from `Vault` because keeping the records is its own job: a refresh hands it what a
walk found (`apply`), and it decides what to read again, keeps each note's revision for
the indexes that follow the vault, and checks a record adopted from a saved index against
its note the first time it is asked for it. The vault walks and watches the folders and
answers its callers; `NoteReader` reads the files.
"""

from __future__ import annotations

import logging
import os
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace

import numpy as np

from langchain_vaultsearch.vault.link_graph import LinkGraph
from langchain_vaultsearch.vault.markdown import parse_note
from langchain_vaultsearch.vault.note_info import NoteInfo, VaultChanges
from langchain_vaultsearch.vault.note_reader import NoteReader, relative_parts, text_digest
from langchain_vaultsearch.vault.note_records import Stamp, file_stamp
from langchain_vaultsearch.vault.saved_notes import SavedNotes, SavedRow, encode_row

# The name `Vault` logged under before the split (as `folder_walk`): logging settings
# and filters written for it still apply.
logger = logging.getLogger("langchain_vaultsearch.vault.vault")


class NoteStore:
    """Every known note's record and stamp, and the link graph made from them.

    Shares the vault's lock: a refresh applies its walk under it.
    """

    def __init__(self, reader: NoteReader, lock: threading.RLock) -> None:
        self._reader = reader
        self._lock = lock
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
        self._graph: LinkGraph | None = None
        self.version = 0
        """Grows by one with every change of the records (`Vault.version`)."""

    def apply(
        self, walked: Iterator[tuple[str, str, os.stat_result | None]], keep_text: bool
    ) -> VaultChanges:
        """Load what changed and drop what is gone (`stat` None: known unchanged; lock held)."""
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
            abs_path = os.path.join(self._reader.root, rel)
            try:
                stat = os.stat(abs_path)
            except OSError:
                unreadable.add(rel)
                continue
            moved[rel] = (abs_path, stat, file_stamp(stat))
        for rel, (abs_path, stat, stamp) in moved.items():
            known = self._stamp_of(rel)
            if (
                known is not None
                and known[:2] == stamp[:2]
                and self._reader.same_text(abs_path, self._digests.get(rel))
            ):
                self._restamp(rel, stamp)  # its attributes changed, not its text
                continue
            loaded = self._reader.load(rel, abs_path, stat)
            if loaded is None:
                unreadable.add(rel)
                continue
            self._keep(loaded[0], stamp)
            self._digests[rel] = text_digest(loaded[1])
            updated.append(loaded if keep_text else (loaded[0], ""))
        removed = [rel for rel in self.notes if rel not in seen or rel in unreadable]
        for rel in removed:
            self._forget_note(rel)
        if updated or removed:
            self._graph = None
            self.version += 1
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
                if relative_parts(path) is None:
                    saved.live[saved.rows[path]] = False
            self._saved = saved
            self._graph = graph
            self.version += 1
            return int(saved.live.sum())

    def adopted_revisions(self, saved: SavedNotes, paths: Iterable[str]) -> dict[str, int]:
        """The revisions `adopt` gave these rows, whatever a refresh changed since.

        What an index loaded with the rows is current at: a note another reader's refresh
        read again meanwhile has another revision now, and the index reads it again.
        """
        return {path: _saved_revision(saved.rows[path]) for path in paths}

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
        return self._reader.note_info(
            path, mtime_ms, ctime_ms, stamp[1], parsed, changed_ns=stamp[2]
        )

    def _reread(self, path: str) -> NoteInfo | None:
        """Read a note whose saved row cannot be trusted; the next refresh reports it."""
        read = self._reader.read_note(path)
        with self._lock:
            if read is None:
                self._forget_note(path)
            else:
                self._keep(read[0], read[2])
                self._digests[path] = text_digest(read[1])
            self._graph = None
            self.version += 1
        return None if read is None else read[0]

    def _verified(self, info: NoteInfo, saved: SavedNotes, row: int) -> NoteInfo:
        """An adopted record, or the one its note parses to when they differ (logged)."""
        read = self._reader.read_stamped(info.path)
        if read is None or read[1] != saved.stamp(row):
            return info  # changed since: the next refresh reads it anyway
        text = read[0]
        parsed = parse_note(text)
        digest = text_digest(text)
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
            fixed = replace(info, parsed=parsed, searchable=self._reader.allowed(info.path, parsed))
            self._keep(fixed, read[1])  # forgets the digest with the saved row
            self._digests[info.path] = digest
            self._graph = None
            self.version += 1
            return fixed

    def link_graph(self) -> LinkGraph:
        """The notes' links, resolved once per change of the records."""
        with self._lock:
            if self._graph is None:
                self._graph = LinkGraph.from_notes(self.notes)
            return self._graph


def _saved_revision(row: int) -> int:
    """The revision of an adopted row: negative, apart from read notes' and from -1."""
    return -2 - row


def _may_climb_out(paths: list[str]) -> bool:
    """Whether any of the paths needs `relative_parts`' check, seen in one pass.

    Paths with no backslash, NUL, `..` or `:`, none empty and none starting with `/`, all
    pass it: checking 100,000 saved paths one by one was 0.4 s of a restart's first query.
    """
    joined = "\n" + "\n".join(paths) + "\n"
    return any(mark in joined for mark in ("\\", "\x00", "..", ":", "\n/", "\n\n"))


class _KnownNotes(Mapping[str, NoteInfo]):
    """The vault's notes by path; adopted records are decoded as they are looked up."""

    def __init__(self, store: NoteStore) -> None:
        self._store = store

    def __getitem__(self, path: str) -> NoteInfo:
        info = self._store.record(path)
        if info is None:
            raise KeyError(path)
        return info

    def __contains__(self, path: object) -> bool:
        store = self._store
        if path in store._notes:
            return True
        saved = store._saved
        return isinstance(path, str) and saved is not None and saved.row(path) is not None

    def __iter__(self) -> Iterator[str]:
        return (path for path, _revision in self._store.revisions())

    def __len__(self) -> int:
        store = self._store
        saved = store._saved
        return len(store._notes) + (0 if saved is None else int(saved.live.sum()))
