"""Folder watcher: Linux inotify through ctypes, so an unchanged vault costs no stat calls.

Stat-ing every note before every query is what keeps answers fresh, and on a 6,000-note vault
it is a third of a warm query. inotify lets `Vault.refresh` ask the kernel instead: the kernel
queues an event while the writer's system call runs, so an edit that has completed is already
in the queue when a query drains it. Draining at query start is therefore as exact as stat-ing,
on local filesystems. Network filesystems (NFS, SMB, sshfs) and FUSE mounts may not report
changes made by other machines or by the remote side; open such a vault with
`Vault(path, watch=False)`.

There is no thread: the descriptor is non-blocking and read only when a refresh runs. The
watcher knows nothing about notes; it tells the vault which folders and entries to look at
again, and returns None when it lost track (queue overflow, a read error, a fork) so that the
vault walks everything.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import os
import struct
import sys
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

# From <sys/inotify.h>.
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000

ENTRIES_CHANGED = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
"""Events after which a folder's listing is out of date."""
WATCH_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | ENTRIES_CHANGED
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of NUL-padded name
_READ_SIZE = 64 * 1024


@dataclass
class FolderChanges:
    """What the events since the last drain say must be looked at again.

    Attributes:
        folders: folders that gained, lost or renamed an entry: list them again.
        paths: entries named by an event (notes to stat again, sub-folders whose cached
            listings no longer describe what is at that path), plus folders whose watch
            reported on the folder itself (changed, moved, deleted, or the watch ended).
    """

    folders: set[str] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.folders or self.paths)


class _Inotify:
    """The three libc calls, bound once per process."""

    def __init__(self) -> None:
        if not sys.platform.startswith("linux"):
            msg = "inotify is Linux-only"
            raise OSError(errno.ENOSYS, msg)
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            init1, add_watch, rm_watch = (
                libc.inotify_init1,
                libc.inotify_add_watch,
                libc.inotify_rm_watch,
            )
        except AttributeError as exc:
            msg = "libc has no inotify"
            raise OSError(errno.ENOSYS, msg) from exc
        init1.argtypes = [ctypes.c_int]
        add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        self.init1: Callable[[int], int] = init1
        self.add_watch: Callable[[int, bytes, int], int] = add_watch
        self.rm_watch: Callable[[int, int], int] = rm_watch


@functools.cache
def _libc() -> _Inotify:
    return _Inotify()


class FolderWatcher:
    """One inotify instance watching the folders a vault walked.

    Watches are kept per folder path; a path maps to the watch descriptor the kernel gave
    for the folder's inode, and several paths can share one descriptor (bind mounts).
    """

    def __init__(self) -> None:
        """Open a non-blocking inotify descriptor.

        Raises:
            OSError: when inotify is unavailable (not Linux, no libc support) or the
                per-user instance limit is reached.
        """
        self._libc = _libc()
        fd = self._libc.init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_init1: {os.strerror(code)}")
        self._fd = fd
        self._pid = os.getpid()
        self._wd_by_folder: dict[str, int] = {}
        self._folders_by_wd: defaultdict[int, set[str]] = defaultdict(set)
        self._warned: set[int] = set()
        self._close = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls) -> FolderWatcher | None:
        """A watcher, or None (logged at debug) where inotify cannot be used."""
        try:
            return cls()
        except OSError as exc:
            logger.debug("Not watching folders, every refresh walks the vault: %s", exc)
            return None

    def close(self) -> None:
        """Release the descriptor (and with it every watch); idempotent."""
        self._close()

    def add(self, folder: str) -> bool:
        """Watch a folder before it is listed, so no change can fall between the two.

        Args:
            folder: absolute path of a real folder (symlinked folders are not watched: a
                watch follows the inode, not the path through the link).

        Returns:
            False when the folder cannot be watched (gone, unreadable, watch limit); the
            caller then checks it the old way on every refresh.
        """
        wd = self._libc.add_watch(self._fd, os.fsencode(folder), WATCH_MASK)
        if wd < 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC and code not in self._warned:
                self._warned.add(code)
                logger.warning(
                    "inotify watch limit reached (fs.inotify.max_user_watches); folders "
                    "beyond it are checked by stat-ing their notes on every refresh"
                )
            else:
                logger.debug("Cannot watch %s: %s", folder, os.strerror(code))
            return False
        self._wd_by_folder[folder] = wd
        self._folders_by_wd[wd].add(folder)
        return True

    def remove(self, folder: str) -> None:
        """Stop watching a folder path, and its inode once no other path needs it."""
        wd = self._wd_by_folder.pop(folder, None)
        if wd is None:
            return
        folders = self._folders_by_wd[wd]
        folders.discard(folder)
        if not folders:
            del self._folders_by_wd[wd]
            # Fails harmlessly when the kernel already dropped the watch (folder deleted).
            self._libc.rm_watch(self._fd, wd)

    def drain(self) -> FolderChanges | None:
        """Read every queued event without blocking.

        Returns:
            What to look at again (empty when nothing happened), or None when events may
            have been lost: the queue overflowed, the read failed, or this process is a
            fork sharing the parent's queue. The caller then walks the whole vault with a
            new watcher.
        """
        if os.getpid() != self._pid:
            logger.debug("Forked: the inotify queue belongs to the parent; starting afresh")
            return None
        changes = FolderChanges()
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return changes
            except OSError as exc:
                logger.debug("Reading inotify events failed (%s); walking the vault", exc)
                return None
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                name = data[offset : offset + size].rstrip(b"\0")
                offset += size
                if mask & IN_Q_OVERFLOW:
                    logger.debug("inotify queue overflowed; walking the vault")
                    return None
                self._record(changes, wd, mask, os.fsdecode(name))

    def _record(self, changes: FolderChanges, wd: int, mask: int, name: str) -> None:
        folders = self._folders_by_wd.get(wd, ())
        for folder in folders:
            if name:
                changes.paths.add(os.path.join(folder, name))
                if mask & ENTRIES_CHANGED:
                    changes.folders.add(folder)
            else:
                changes.paths.add(folder)
        if mask & IN_IGNORED:
            # The kernel dropped this watch (folder deleted or unmounted): the folders it
            # covered were reported above and will be watched again if they still exist.
            for folder in self._folders_by_wd.pop(wd, ()):
                self._wd_by_folder.pop(folder, None)
