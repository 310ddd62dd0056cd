"""Vault: the only code that touches the filesystem (with the parts it owns).

A long-lived retriever must see notes that were added, edited, renamed or deleted since
its last query without being rebuilt, and must not re-read 6,000 unchanged notes to do
so. `Vault.refresh` therefore walks the folder tree (`folder_walk.FolderWalk`), compares
each note's mtime and size with what it saw last time, and reads only what changed
(docs/design.md, decision 3). The walk watches the folders it listed
(`watcher.FolderWatcher`), so that a refresh stats only what the system reported as
changed, and nothing at all when the vault is unchanged.
Everything else in the package works on the `NoteInfo` records and the change sets it
returns. The vault answers for its parts: `note_reader.NoteReader` reads the files
(`Vault.reader`), `note_store.NoteStore` keeps the records, and the link graph
(`Vault.link_graph`) is made from them.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Annotated

from pydantic import BeforeValidator

from langchain_vaultsearch.vault.folder_walk import FolderWalk
from langchain_vaultsearch.vault.link_graph import LinkGraph
from langchain_vaultsearch.vault.note_info import NoteInfo, VaultChanges
from langchain_vaultsearch.vault.note_reader import MAX_NOTE_BYTES, NoteReader
from langchain_vaultsearch.vault.note_records import Stamp
from langchain_vaultsearch.vault.note_store import NoteStore
from langchain_vaultsearch.vault.patterns import PathPattern, parse_patterns
from langchain_vaultsearch.vault.saved_notes import SavedNotes, SavedRow
from langchain_vaultsearch.vault.tag_catalog import TagCatalog
from langchain_vaultsearch.vault.watcher import FolderChanges, FolderWatcher


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
        self._lock = threading.RLock()
        self.refresh_interval = refresh_interval
        self._last_refresh = -math.inf
        self._folders = FolderWalk(self.root, include_hidden=self.include_hidden, watch=watch)
        self.reader = NoteReader(
            self.root,
            self._folders.inside_root,
            inclusions=self.inclusions,
            exclusions=self.exclusions,
            max_note_bytes=max_note_bytes,
        )
        """Reads the notes' files (`read_text`, `peek`), never one outside the vault."""
        self._records = NoteStore(self.reader, self._lock)
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
                return self._records.apply(folders.walk(events), keep_text)
            except BaseException:
                # The events drained for this walk would be lost.
                folders.restart()
                raise

    @property
    def version(self) -> int:
        """Grows by one with every refresh or adoption that changed the note records.

        Several indexes may share a vault, and a refresh hands its change set only to
        the caller; the others see the version move and reconcile with `notes`.
        """
        return self._records.version

    def revision(self, path: str) -> int:
        """A note's revision (`NoteStore.revision`); -1 for an unknown note."""
        return self._records.revision(path)

    def revisions(self) -> Iterator[tuple[str, int]]:
        """Each note's path and revision, for the indexes that follow the vault.

        See `NoteStore.revisions`.
        """
        return self._records.revisions()

    def snapshot(self) -> tuple[int, dict[str, int]]:
        """The version and each note's revision, for an index starting from a saved state.

        Taken before the index decides which notes it is current for
        (`ChangeFeed.start_from`): a refresh by another reader after it leaves a changed
        note's revision differing from the snapshot's, so the index reads it again. The
        version is read first, so a refresh between the two reads is reconciled too.
        """
        version = self.version
        return version, dict(self.revisions())

    def adopted_revisions(self, saved: SavedNotes, paths: Iterable[str]) -> dict[str, int]:
        """The revisions adopted rows were given (`NoteStore.adopted_revisions`)."""
        return self._records.adopted_revisions(saved, paths)

    def saved_row(self, path: str) -> SavedRow | None:
        """What a saved index keeps of a note (`NoteStore.saved_row`), or None if unknown."""
        return self._records.saved_row(path)

    def adopt(self, saved: SavedNotes, graph: LinkGraph | None = None) -> int:
        """Take note records saved by an earlier process (`NoteStore.adopt`).

        Returns:
            How many records were adopted (0 when the vault was already scanned).
        """
        return self._records.adopt(saved, graph)

    def unchanged_notes(self, saved: SavedNotes) -> list[str]:
        """The notes held now whose file is the one a saved row was made from.

        See `NoteStore.unchanged_notes`.
        """
        return self._records.unchanged_notes(saved)

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

    # ----------------------------------------------------------------- queries

    @property
    def notes(self) -> Mapping[str, NoteInfo]:
        """Notes known after the last refresh, by path (searchable or not).

        Passes over the whole vault iterate paths, not records, where they can (`NoteStore.notes`).
        """
        return self._records.notes

    def searchable_paths(self) -> list[str]:
        """Paths of the notes the inclusions and exclusions leave searchable.

        Without rules that is every note, listed without decoding the records a saved
        index adopted: decoding them all took about 1 s on the 6,280-note help vault.
        """
        if not (self.inclusions or self.exclusions):
            return list(self.notes)
        return [path for path, info in self.notes.items() if info.searchable]

    def get(self, path: str) -> NoteInfo | None:
        """The record of one note, or None (checked against the note if it was adopted)."""
        return self._records.get(path)

    def content_stamp(self, path: str) -> tuple[float, int, int] | None:
        """`(mtime_ms, size, changed_ns)` of a known note, read without decoding its record.

        See `NoteStore.content_stamp`.
        """
        return self._records.content_stamp(path)

    def record(self, path: str) -> NoteInfo | None:
        """The record of one note as held, unchecked: for passes over every note.

        See `NoteStore.record`.
        """
        return self._records.record(path)

    def folder_sizes(self) -> Counter[str]:
        """Number of notes directly in each folder (the folder boost's denominator)."""
        return self.link_graph().folder_sizes

    def backlinks(self, path: str) -> frozenset[str]:
        """Paths of the notes that link to `path` (the graph boost's `NoteGraph`)."""
        return self.link_graph().backlinks(path)

    def tags(self, path: str) -> tuple[str, ...]:
        """A note's tags (inline and frontmatter, `#`-prefixed), empty for an unknown note.

        As recorded (`record`): the graph boost asks this of many notes per query.
        """
        info = self.record(path)
        return info.parsed.tags if info is not None else ()

    def co_cited(self, path: str, among: Collection[str]) -> set[str]:
        """The notes of `among` that a note linking to `path` also links to (`NoteGraph`)."""
        return self.link_graph().co_cited(path, among)

    def link_graph(self) -> LinkGraph:
        """The notes' links (`resolve`, `neighbours`, `outlinks`), as of the records now.

        Made again only after the records changed; a saved index keeps its rows.
        """
        return self._records.link_graph()


def _path_as_text(value: object) -> object:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


VaultPathOption = Annotated[str | Path | None, BeforeValidator(_path_as_text)]
"""A retriever's `vault_path` option: a string or a `Path` (as `Vault` and `VaultIndex`
take, and a pydantic `str` refused), kept as the string."""


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
        vault: a `Vault` shared with other retrievers (`vault_path`, if given too, must
            name its folder).
        vault_path: the vault folder.
        owner: who asks, for the error message (e.g. "FilterRetriever").
        needs: what the owner takes instead, for the error message.
        inclusions: rules a note must match one of, for a vault opened here.
        exclusions: rules that leave notes out, for a vault opened here.

    Raises:
        ValueError: neither is given, the folder does not exist, rules or another
            folder come with a shared vault (whose own folder and rules apply: silently
            ignoring them would search notes the caller did not mean).
    """
    if vault is not None:
        if inclusions or exclusions:
            msg = (
                f"{owner}: inclusions and exclusions apply to a vault opened from vault_path;"
                " a shared vault has its own (Vault(path, inclusions=..., exclusions=...))"
            )
            raise ValueError(msg)
        if vault_path and Path(vault_path).expanduser().resolve() != vault.root.resolve():
            msg = (
                f"{owner}: vault_path {str(vault_path)!r} is not the shared vault's folder"
                f" ({vault.root}); give one of the two"
            )
            raise ValueError(msg)
        return vault
    if not vault_path:
        msg = f"{owner} needs {needs}"
        raise ValueError(msg)
    return Vault(vault_path, inclusions=inclusions, exclusions=exclusions)
