"""NoteFiles: a vault's note files and their stamps, walked once, then kept by a watcher.

The searches made while a large vault's first index builds scan the notes' text, and
each must see the notes as they are now: listing 100,480 notes stats every one (0.8 s a
search on help x16, a third of it, and CPU the build's workers wanted). The vault's own
watcher serves `Vault.refresh`, whose records the scan does not use, and draining its
events here would hide them from the refresh; a `NoteFiles` has a watcher of its own,
which goes when the scan does.
"""

from __future__ import annotations

import os
import threading

from langchain_vaultsearch.vault.note_records import Stamp, file_stamp
from langchain_vaultsearch.vault.vault import Vault
from langchain_vaultsearch.vault.watcher import FolderWatcher

Files = dict[str, tuple[str, Stamp]]
"""Vault-relative path -> (absolute path, (mtime_ns, size, ctime_ns)), as `list_files`."""
Listing = tuple[int, Files]
"""Note files and the `NoteFiles.generation` they are current for."""


class NoteFiles:
    """Every note file of a vault with its stamp, current at each `listing()`.

    After the first walk, a listing stats only the notes an event named. It walks the
    whole vault again when any folder gained, lost or renamed an entry (an editor's swap
    file too: rare while an index builds, and what `Vault.refresh` does folder by folder is
    not worth repeating for those minutes), when events were lost or a listing was
    interrupted, and every time when the events cannot cover the vault: no watcher (a vault
    opened with `watch=False` or on a network filesystem), the watch limit reached, symlinks,
    hard links.
    """

    def __init__(self, vault: Vault) -> None:
        """List nothing yet; the first `listing()` walks."""
        self._vault = vault
        self._watcher = FolderWatcher.open(vault.root) if vault.watching else None
        self._files: Files | None = None
        self._by_file: dict[str, str] = {}  # absolute path -> vault-relative path
        self._covered = False
        self._lock = threading.Lock()
        self.generation = 0
        """Counts the changes listings found (each note an event named, each walk)."""

    def listing(self) -> Listing:
        """The note files now, with the generation they are current for.

        The files are a new dict each call: the caller may keep it.
        """
        with self._lock:
            files = self._listed()
            return self.generation, dict(files)

    def changed_since(self, generation: int) -> tuple[int, Files | None]:
        """Like `listing`, with None for the files when they are still as at `generation`.

        A scan searching 100,480 notes compared each one's stamp with the one it held
        (~55 ms of every search made while help x16's index built) though most searches
        come with nothing changed.
        """
        with self._lock:
            files = self._listed()
            return self.generation, None if generation == self.generation else dict(files)

    def _listed(self) -> Files:
        try:
            return self._update()
        except BaseException:
            # The events drained for this listing would be lost: walk next time.
            self._files = None
            raise

    def _update(self) -> Files:
        files = self._files
        changes = self._watcher.drain() if self._watcher is not None else None
        if changes is None and self._watcher is not None and files is not None:
            # Events were lost (an overflow, a fork sharing the queue): a new watcher.
            self._watcher.close()
            self._watcher = FolderWatcher.open(self._vault.root)
        if files is None or not self._covered or changes is None or changes.folders:
            files, self._covered = self._vault.walk_files(self._watcher)
            self._files = files
            self.generation += 1
            self._by_file = {abs_path: rel for rel, (abs_path, _stamp) in files.items()}
            return files
        for abs_path in changes.paths:
            rel = self._by_file.get(abs_path)
            if rel is None:
                continue  # not a note: an attachment, or a folder's own event
            self.generation += 1
            try:
                stat = os.stat(abs_path)
            except OSError:
                # Gone: its folder's event comes with it, so the next listing walks.
                del files[rel]
                continue
            files[rel] = (abs_path, file_stamp(stat))
        return files
