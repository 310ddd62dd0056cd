"""The vault's folders, walked and watched: which note files exist and which may have changed.

`Vault.refresh` asks this for the note files to compare with its records. A walk lists a
folder again only when it may have changed (its mtime moved, or, with a watcher, an event
named it), and stats only the notes that may have changed, so an unchanged vault costs
one stat per folder and note, or nothing while a watcher reports every change. Symlinks
that leave the root, hidden folders and names a vault path cannot address are left out
here, once, for every caller.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from langchain_vaultsearch.vault.note_records import Stamp, file_stamp
from langchain_vaultsearch.vault.watcher import FolderChanges, FolderWatcher

logger = logging.getLogger("langchain_vaultsearch.vault.vault")


class _Listing(NamedTuple):
    """One folder's entries as last listed.

    Attributes:
        mtime_ns: the folder's mtime then; an unwatched folder is listed again when it moves.
        watched: a watch was on the folder before it was listed, so events cover changes.
        folders: (absolute path, vault-relative path, is a symlink) of each sub-folder.
        files: the names of its markdown files (a 100,000-note vault's paths, absolute
            and relative, took 40 MB as strings held here; they are joined when walked).
        linked: the names of those that are symlinks.
    """

    mtime_ns: int
    watched: bool
    folders: list[tuple[str, str, bool]]
    files: tuple[str, ...]
    linked: frozenset[str]


class FolderWalk:
    """One vault root's folder listings, its watcher, and what each walk must still check."""

    def __init__(self, root: Path, *, include_hidden: bool, watch: bool) -> None:
        """Start with nothing listed; a watch goes on each folder as it is first listed.

        Args:
            root: the vault's resolved root.
            include_hidden: walk dot-folders and dot-files too.
            watch: watch the folders (`FolderWatcher.open`), else every walk stats.
        """
        self.root = root
        self.include_hidden = include_hidden
        self.watcher = FolderWatcher.open(root) if watch else None
        self._listings: dict[str, _Listing] = {}
        # Set by each walk: notes and folders whose changes no event reports, which every
        # refresh must therefore check (True until the first walk).
        self.walk_needed = True
        self._polled_notes: set[str] = set()
        self._stat_all = False
        self._unaddressable: set[str] = set()  # names with a backslash, reported once each

    def stop_watching(self) -> None:
        """Close the watcher; later walks stat every note and folder."""
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None

    def restart(self) -> None:
        """Start over when events were lost: a new watcher, every folder listed again."""
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = FolderWatcher.open(self.root)
        self._listings.clear()
        self.walk_needed = True

    def walk(self, events: FolderChanges) -> Iterator[tuple[str, str, os.stat_result | None]]:
        """Yield every markdown file under the root that stays inside the root.

        Without a watcher a folder is listed again only when its mtime changed (adding,
        deleting or renaming a file changes it), so an unchanged vault costs one stat per
        note and per folder. A watched folder is listed again only when an event says its
        entries changed, and its notes are stat-ed only when an event named them; the others
        are yielded with stat None, "unchanged". A watch follows an inode, not a path, so
        folders reached through a symlink (and everything below a folder that could not be
        watched) are checked as without a watcher, and so are symlinked and hard-linked
        notes, whose edits are reported for another path.
        """
        self._forget(events.paths)
        stat_all, self._stat_all = self._stat_all, False
        polled_notes: set[str] = set()
        polled_folders = False
        root = str(self.root)
        visited = {root}
        stack = [(root, "", self.watcher is None)]
        while stack:
            abs_dir, rel_dir, polled = stack.pop()
            known = abs_dir in self._listings
            listing = self._listing(abs_dir, rel_dir, polled, events)
            if listing is None:
                # Unreadable or gone: no watch reports its return, so look again next time.
                self._forget({abs_dir})
                polled_folders = True
                continue
            polled = not listing.watched
            polled_folders = polled_folders or polled
            stat_every_note = polled or stat_all or not known
            # Joined by hand: `os.path.join` per note took ~55 ms of a restart's first
            # refresh at 100,480 notes.
            rel_prefix = f"{rel_dir}/" if rel_dir else ""
            abs_prefix = abs_dir if abs_dir.endswith(os.sep) else abs_dir + os.sep
            for name in listing.files:
                rel = rel_prefix + name
                abs_path = abs_prefix + name
                is_link = name in listing.linked
                if not (
                    stat_every_note or abs_path in events.paths or abs_path in self._polled_notes
                ):
                    yield rel, abs_path, None
                    continue
                try:
                    stat = os.stat(abs_path)
                except OSError as exc:
                    logger.warning("Cannot stat %s: %s", rel, exc)
                    continue
                if not polled and (is_link or stat.st_nlink > 1):
                    polled_notes.add(abs_path)
                    # A new hard link: its other paths may be notes that no event will name.
                    self._stat_all |= not is_link and abs_path not in self._polled_notes
                yield rel, abs_path, stat
            for abs_sub, rel_sub, is_link in listing.folders:
                real = os.path.realpath(abs_sub) if is_link else abs_sub
                if real not in visited:
                    visited.add(real)
                    stack.append((abs_sub, rel_sub, polled or is_link))
        self._polled_notes = polled_notes
        self.walk_needed = polled_folders or bool(polled_notes) or self._stat_all

    def _listing(
        self, abs_dir: str, rel_dir: str, polled: bool, events: FolderChanges
    ) -> _Listing | None:
        """A folder's entries: from the cache when events or its mtime say they are current."""
        cached = self._listings.get(abs_dir)
        if not polled and cached is not None and cached.watched:
            if abs_dir in events.folders:
                return self._list_folder(abs_dir, rel_dir, True)
            return cached
        # The watch goes on before the listing, so no change can fall between the two.
        watched = (
            not polled and cached is None and self.watcher is not None and self.watcher.add(abs_dir)
        )
        if cached is None or cached.watched or watched:
            return self._list_folder(abs_dir, rel_dir, watched)
        try:
            mtime = os.stat(abs_dir).st_mtime_ns
        except OSError as exc:
            logger.warning("Cannot read folder %s: %s", abs_dir, exc)
            return None
        return cached if cached.mtime_ns == mtime else self._list_folder(abs_dir, rel_dir, False)

    def _forget(self, paths: set[str]) -> None:
        """Drop cached listings at or below paths events named: a different folder may be there."""
        gone = {path for path in paths if path in self._listings}
        if not gone:
            return
        below = tuple(path + os.sep for path in gone)
        for abs_dir in [d for d in self._listings if d in gone or d.startswith(below)]:
            if self._listings.pop(abs_dir).watched and self.watcher is not None:
                self.watcher.remove(abs_dir)

    def _list_folder(self, abs_dir: str, rel_dir: str, watched: bool) -> _Listing | None:
        """List and cache a folder's sub-folders and notes; symlinks out of the vault dropped."""
        try:
            mtime = os.stat(abs_dir).st_mtime_ns
        except OSError as exc:
            logger.warning("Cannot read folder %s: %s", abs_dir, exc)
            return None
        folders, files = self._folder_entries(abs_dir, rel_dir)
        names = tuple(abs_path.rsplit(os.sep, 1)[-1] for _rel, abs_path, _link in files)
        linked = frozenset(name for name, (_r, _a, link) in zip(names, files, strict=True) if link)
        listing = _Listing(mtime, watched, folders, names, linked)
        self._listings[abs_dir] = listing
        return listing

    def _folder_entries(
        self, abs_dir: str, rel_dir: str
    ) -> tuple[list[tuple[str, str, bool]], list[tuple[str, str, bool]]]:
        """A folder's sub-folders and notes, as in `_Listing`; symlinks out of the vault dropped."""
        folders: list[tuple[str, str, bool]] = []
        files: list[tuple[str, str, bool]] = []
        try:
            entries = list(os.scandir(abs_dir))
        except OSError as exc:
            logger.warning("Cannot list %s: %s", abs_dir, exc)
            entries = []
        for entry in entries:
            name = entry.name
            if name.startswith(".") and not self.include_hidden:
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if "\\" in name and os.sep == "/":
                # A vault path reads `\` as a folder separator (a Windows path, a link typed
                # on Windows), so such a note could be listed but never read: skip it, once.
                if rel not in self._unaddressable:
                    self._unaddressable.add(rel)
                    logger.warning("Skipping %s: a backslash in a name reads as a folder", rel)
                continue
            try:
                is_link = entry.is_symlink()
                if is_link and not self.inside_root(os.path.realpath(entry.path)):
                    logger.debug("Skipping symlink that leaves the vault: %s", rel)
                    continue
                if entry.is_dir():
                    if is_link and self._walked_anyway(os.path.realpath(entry.path)):
                        # Its notes are listed once, under their real path, whichever of
                        # the link and the folder a listing reaches first.
                        logger.debug("Skipping %s: a link to a folder of the vault", rel)
                        continue
                    folders.append((entry.path, rel, is_link))
                elif name.lower().endswith(".md") and entry.is_file():
                    files.append((rel, entry.path, is_link))
            except OSError as exc:
                logger.warning("Cannot stat %s: %s", rel, exc)
        return folders, files

    def _walked_anyway(self, real: str) -> bool:
        """Whether a folder inside the vault is reached by its own path (not hidden)."""
        rel = os.path.relpath(real, self.root)
        parts = [] if rel == "." else rel.split(os.sep)
        return bool(parts) and (self.include_hidden or not any(p.startswith(".") for p in parts))

    def walk_files(
        self, watcher: FolderWatcher | None
    ) -> tuple[dict[str, tuple[str, Stamp]], bool]:
        """`list_files`, putting a watch on each folder before listing it.

        Args:
            watcher: where the watches go (`note_files.NoteFiles`); None sets none.

        Returns:
            The files, and whether the watcher's events report every change to them:
            False when a watch could not be set, or a folder or note is a symlink or a
            note has other hard links (an edit made through another path is reported
            for that path, if at all).
        """
        root = str(self.root)
        visited = {root}
        stack = [(root, "")]
        found: dict[str, tuple[str, Stamp]] = {}
        covered = watcher is not None
        while stack:
            abs_dir, rel_dir = stack.pop()
            covered = covered and watcher is not None and watcher.add(abs_dir)
            folders, files = self._folder_entries(abs_dir, rel_dir)
            for rel, abs_path, is_link in files:
                try:
                    stat = os.stat(abs_path)
                except OSError:
                    continue
                covered = covered and not is_link and stat.st_nlink == 1
                found[rel] = (abs_path, file_stamp(stat))
            for abs_sub, rel_sub, is_link in folders:
                covered = covered and not is_link
                real = os.path.realpath(abs_sub) if is_link else abs_sub
                if real not in visited:
                    visited.add(real)
                    stack.append((abs_sub, rel_sub))
        return found, covered

    def inside_root(self, real_path: str) -> bool:
        """Whether a resolved path is the root or below it."""
        root = str(self.root)
        return real_path == root or real_path.startswith(root + os.sep)
