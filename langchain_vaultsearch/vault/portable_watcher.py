"""The watcher for every platform: watchfiles, kept exact by a marker file per drain.

macOS and Windows have no inotify. `watchfiles` (the Rust `notify` crate) watches the vault
folder recursively with what each system has: FSEvents, ReadDirectoryChangesW, kqueue, and
inotify on Linux. Its events come late: through `fseventsd` on macOS, and always from a
thread of its own, so a drain that took only what had arrived could miss an edit saved just
before the query. Each drain therefore makes and deletes a marker file (a "cookie", as
Watchman calls it) in `<vault>/.vaultsearch/` and waits until its event comes through. One
watch delivers its events in order on every one of these systems, so once the cookie is
back, so is the event of every edit that completed before the query began: a query still
sees every edit made before it, whatever the lag. The wait is the events' round trip (0.04
ms at the median on Linux, a few ms when the cores are busy: the watch's thread must be
scheduled); a cookie that is not back within `SYNC_TIMEOUT` means the watch died (notify
stops watching on some Windows errors), and the drain reports lost track.

What watchfiles does not pass on is the system saying it dropped events (inotify's queue
overflow, FSEvents' MustScanSubDirs, a Windows buffer overrun: watchfiles issue 348). Those
happen in bursts, so a drain that finds more than `BURST` changed entries reports lost
track too, and the vault walks once.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import time

from watchfiles import Change
from watchfiles._rust_notify import RustNotify

from langchain_vaultsearch.vault.watcher import FolderChanges, FolderWatcher

logger = logging.getLogger(__name__)

SYNC_TIMEOUT = 1.0
"""Seconds a drain waits for its cookie. Past it the vault walks, which is exact too, so this
only weighs one slow query against hanging on a watch that died."""
BURST = 256
"""Changed entries in one drain beyond which events may have been dropped unseen: notify's
Windows buffer (16 KiB) holds 150-250 entries of a vault's paths."""
COOKIE_FOLDER = ".vaultsearch"
"""The package's own folder in the vault (where the lexical index is saved)."""
COOKIE_PREFIX = "watch-sync-"
_DEBOUNCE_MS = 50
"""How long `RustNotify.watch` keeps gathering a burst before returning part of it."""
_SPIN = 3e-4
"""Seconds a drain spins before it sleeps between looks (see `_Wait`)."""
_forked_notifiers: list[RustNotify] = []
"""A parent's notifiers seen in a forked child: never dropped there (see `_stop`)."""


class WatchfilesWatcher(FolderWatcher):
    """One recursive watchfiles watch of the vault folder, reporting on the folders added.

    A single watch covers every sub-folder, so `add` sets nothing per folder: it records
    which folders the vault lists, and only events about those (or their entries) are
    reported, as inotify reports only the folders it was given. The watch starts with the
    first `add` of the vault folder, so a vault whose folder is gone and comes back is
    watched again.
    """

    def __init__(self, root: str, suffixes: tuple[str, ...] = (".md",)) -> None:
        """Watch nothing yet; the vault's first `add(root)` starts the watch.

        Args:
            root: the vault folder.
            suffixes: files whose content changes are reported (lowercase); others'
                are skipped (Obsidian rewrites its workspace file constantly).
        """
        self._root = root
        self._suffixes = tuple(suffix.lower() for suffix in suffixes)
        self._cookies = os.path.join(root, COOKIE_FOLDER)
        self._notify: RustNotify | None = None
        # How the backend spells the vault folder (macOS gives its real case, Windows may
        # add `\\?\`), learned from the first cookie back; events are translated to `root`.
        self._spelled_root: str | None = None
        self._watched: set[str] = set()
        self._litter: list[str] = []  # cookies a virus scanner kept from being deleted
        self._pid = os.getpid()
        self._lost = False

    def add(self, folder: str) -> bool:
        """Note a folder as listed; the vault folder itself starts the watch.

        Returns:
            False when the watch cannot start (the folder is gone, `.vaultsearch` cannot be
            a folder of ours, notify refuses) or `folder` is not inside the vault folder.
        """
        if self._notify is None and (folder != self._root or not self._start()):
            return False
        if folder != self._root and not folder.startswith(self._root + os.sep):
            return False
        self._watched.add(folder)
        return True

    def _start(self) -> bool:
        try:
            os.makedirs(self._cookies, exist_ok=True)
            if not stat.S_ISDIR(os.lstat(self._cookies).st_mode):
                msg = f"{self._cookies} is not a folder"
                raise NotADirectoryError(msg)
            notify = RustNotify([self._root], False, False, 0, True, False)
        except OSError as exc:
            logger.debug(
                "Cannot watch %s, its notes are stat-ed on every refresh: %s", self._root, exc
            )
            return False
        if repr(notify).startswith("RustNotify(Poll"):
            # notify falls back to polling where inotify is missing (ENOSYS); a poll pass
            # finds the cookie and the edits in the order it scans folders, not the order
            # they happened, so the cookie proves nothing.
            notify.close()
            logger.debug("notify can only poll here; stat-ing every note instead")
            return False
        self._notify = notify
        return True

    def remove(self, folder: str) -> None:
        """Stop reporting on a folder; the vault folder's removal ends the watch."""
        self._watched.discard(folder)
        if folder == self._root:
            self._stop()

    def close(self) -> None:
        """End the watch and delete any cookie left behind; idempotent."""
        self._stop()
        self._remove_litter()

    def _stop(self) -> None:
        notify, self._notify = self._notify, None
        self._spelled_root = None
        self._watched.clear()
        if notify is None:
            return
        if os.getpid() != self._pid:
            # The parent's watch has no thread here; closing it waits on one (FSEvents).
            _forked_notifiers.append(notify)
        else:
            notify.close()

    def drain(self) -> FolderChanges | None:
        """Everything the watch reported up to a cookie made now (see the module docstring).

        Returns:
            What to look at again, or None when track was lost: a fork, an error in the
            watch, a cookie not back in time or not writable, a burst over `BURST` entries.

        Raises:
            KeyboardInterrupt: when Ctrl-C came during the wait (watchfiles swallows it and
                drops what it held, so the next drain reports lost track).
        """
        if os.getpid() != self._pid or self._lost:
            return None
        notify = self._notify
        if notify is None:
            return FolderChanges()  # nothing watched: the vault checks every folder itself
        try:
            cookie = self._drop_cookie()
        except OSError as exc:
            logger.debug("Cannot write a sync cookie (%s); walking the vault", exc)
            return None
        name = os.path.basename(cookie)
        events: list[tuple[int, str]] = []
        wait = _Wait(SYNC_TIMEOUT)
        back: str | None = None
        while back is None:
            try:
                batch = notify.watch(_DEBOUNCE_MS, 0, 0, wait)
            except RuntimeError as exc:  # WatchfilesRustInternalError, or a closed watch
                logger.debug("The watch failed (%s); walking the vault", exc)
                return None
            if batch == "signal":
                self._lost = True
                raise KeyboardInterrupt
            if isinstance(batch, str):
                logger.debug("No sync cookie within %s s; walking the vault", SYNC_TIMEOUT)
                return None
            events.extend(batch)
            back = next((path for _change, path in batch if os.path.basename(path) == name), None)
        if self._spelled_root is None:
            self._spelled_root = os.path.dirname(os.path.dirname(back))
        return self._changes(events)

    def _drop_cookie(self) -> str:
        """Make and delete a uniquely named file; its events mark this moment in the stream."""
        handle, cookie = tempfile.mkstemp(prefix=COOKIE_PREFIX, dir=self._cookies)
        os.close(handle)
        self._litter.append(cookie)
        self._remove_litter()
        return cookie

    def _remove_litter(self) -> None:
        kept = []
        for cookie in self._litter:
            try:
                os.unlink(cookie)
            except FileNotFoundError:
                pass
            except OSError:
                kept.append(cookie)
        self._litter = kept

    def _changes(self, events: list[tuple[int, str]]) -> FolderChanges | None:
        """The events of a drain as `FolderChanges`, in the vault's spelling of its paths."""
        spelled = self._spelled_root or self._root
        changes = FolderChanges()
        for change, reported in events:
            if reported == spelled:
                path = self._root
            elif reported.startswith(spelled + os.sep):
                path = self._root + reported[len(spelled) :]
            else:
                continue  # outside the vault (notify follows symlinks on Linux)
            if os.path.basename(path).startswith(COOKIE_PREFIX):
                continue  # ours, or another vault's on the same folder
            self._record(changes, change, path)
        if len(changes.paths) > BURST:
            logger.debug("%d entries changed at once; walking the vault", len(changes.paths))
            return None
        return changes

    def _record(self, changes: FolderChanges, change: int, path: str) -> None:
        """Map one event to what inotify would have reported for the folders added."""
        parent = os.path.dirname(path)
        if change == Change.modified:
            if path in self._watched:
                changes.folders.add(path)  # its attributes or entries: list it again
            elif parent in self._watched and path.lower().endswith(self._suffixes):
                changes.paths.add(path)
            return
        if path in self._watched or parent in self._watched:
            changes.paths.add(path)
        if parent in self._watched:
            changes.folders.add(parent)


class _Wait:
    """`RustNotify.watch`'s stop event: ends the wait at a deadline, and paces it meanwhile.

    `watch` must be called with no timeout and a 0 ms step: its timeout and stop paths
    clear what it gathered, so a drain may only end one by a batch of changes (the cookie's)
    or give up; and its smallest sleeping step (1 ms) would add 2 ms to every drain. It asks
    this object on each turn. For the first `_SPIN` seconds the turns spin (the lock is
    released on each): a cookie is back in ~35 µs on Linux, and a sleep, however short,
    took ~180 µs to wake from. Then pauses of 20 µs, doubling to 1 ms, keep a slower system
    (FSEvents) from costing a core.
    """

    def __init__(self, seconds: float) -> None:
        self._start = time.monotonic()
        self._deadline = self._start + seconds
        self._pause = 0.0

    def is_set(self) -> bool:
        now = time.monotonic()
        if now >= self._deadline:
            return True
        if now - self._start >= _SPIN:
            time.sleep(self._pause)
            self._pause = min(self._pause * 2 or 2e-5, 1e-3)
        return False
