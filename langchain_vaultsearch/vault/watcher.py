"""Folder watchers: a refresh asks the system what changed instead of stat-ing every note.

Stat-ing every note before every query is what keeps answers fresh, and it grows with the
vault: a third of a warm query at 6,000 notes, 1.3 s of 1.4 s at 100,000. A watcher tells
`Vault.refresh` which folders and entries changed, so an unchanged vault costs no stat call.
Two backends sit behind `FolderWatcher`, and both keep what stat-ing gave: an edit that
completed before a query began is seen by that query.

- `InotifyWatcher` (Linux, ctypes; the default there). The kernel queues an event while the
  writer's system call runs, so draining the queue at query start is as exact as stat-ing.
  No thread and no write: it measured faster than the other backend on Linux
  (`benchmarks/watch_speed.py`).
- `portable_watcher.WatchfilesWatcher` (macOS FSEvents, Windows ReadDirectoryChangesW, the BSDs'
  kqueue; Linux when asked). Its events arrive late, from a thread; each drain waits for a
  marker file of its own to come through first (see that module).

`FolderWatcher.open` picks one; `VAULTSEARCH_WATCHER=inotify|watchfiles` forces one (the
benchmark and the tests run both on Linux). It gives None, so that every refresh stats every
note as with `Vault(path, watch=False)`, where events cannot be trusted: on a network
filesystem or a FUSE mount (NFS, SMB, sshfs, a WSL2 `/mnt/c`, a VM's shared folder), an edit
made by another machine or on the far side raises no event here (logged once per vault).

A watcher knows nothing about notes; it tells the vault which folders and entries to look at
again, and returns None when it lost track (queue overflow, a read error, a fork) so that the
vault walks everything.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import os
import re
import struct
import subprocess
import sys
import weakref
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

BACKEND_VARIABLE = "VAULTSEARCH_WATCHER"
"""Environment variable that forces a backend: `inotify` or `watchfiles`."""
BACKENDS = ("inotify", "watchfiles")

# Filesystems whose changes may not raise an event here: what another machine, a host or a
# FUSE daemon's far side writes goes around this kernel's change notification. (`fuseblk`,
# a local disk through FUSE such as ntfs-3g, is not among them: every write goes through it.)
_REMOTE_FILESYSTEMS = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb3", "smbfs", "afs", "ceph", "glusterfs", "lustre", "gpfs",
        "beegfs", "9p", "drvfs", "virtiofs", "vboxsf", "vmhgfs", "davfs", "afpfs", "webdav",
        "fuse", "macfuse", "osxfuse",
    }
)  # fmt: skip
_MOUNTINFO = "/proc/self/mountinfo"
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")
_MACOS_MOUNT = re.compile(r"^(?P<device>.+?) on (?P<point>.+) \((?P<options>[^()]*)\)$")
_reported: set[tuple[str, str]] = set()  # (folder, filesystem) already logged: once each

Mount = tuple[str, str, bool]
"""A mount point, its filesystem type, and whether its events cannot be trusted."""

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


class FolderWatcher(ABC):
    """What a vault asks of a watcher: watch folders as it lists them, then say what changed.

    The vault walks its folders, calling `add` on each before listing it (so no change can
    fall between the two), `remove` when a folder's listing is dropped, and `drain` at the
    start of each refresh.
    """

    @classmethod
    def open(
        cls, root: str | os.PathLike[str], *, suffixes: tuple[str, ...] = (".md",)
    ) -> FolderWatcher | None:
        """The watcher for a vault folder on this system, or None where none can be trusted.

        Args:
            root: the vault folder, resolved (its sub-folders are `add`ed by the vault).
            suffixes: the files whose edits matter (a vault's notes; a chunk store's
                `.jsonl`): a backend may skip the rest's content changes.

        Returns:
            The backend `VAULTSEARCH_WATCHER` names, else inotify on Linux and watchfiles
            elsewhere; None (logged) on a network or FUSE filesystem, or when the backend
            cannot start, so that every refresh stats every note.
        """
        root = os.fspath(root)
        filesystem = unwatchable_filesystem(root)
        if filesystem is not None:
            if (root, filesystem) not in _reported:
                _reported.add((root, filesystem))
                logger.info(
                    "%s is on a %s filesystem, where changes made elsewhere may raise no event"
                    " here: every refresh stats every note instead of watching folders",
                    root,
                    filesystem,
                )
            return None
        name = _backend_name()
        try:
            if name == "inotify":
                return InotifyWatcher()
            # Imported here: watchfiles (and anyio) cost an import that inotify does not need.
            from langchain_vaultsearch.vault.portable_watcher import WatchfilesWatcher

            return WatchfilesWatcher(root, suffixes)
        except (OSError, ImportError) as exc:
            logger.debug("Not watching folders, every refresh walks the vault: %s", exc)
            return None

    @abstractmethod
    def add(self, folder: str) -> bool:
        """Watch a folder before it is listed, so no change can fall between the two.

        Args:
            folder: absolute path of a real folder inside the vault (folders reached through
                a symlink are not added: a watch follows the folder, not the link).

        Returns:
            False when the folder cannot be watched (gone, unreadable, a limit reached); the
            caller then checks it the old way on every refresh.
        """

    @abstractmethod
    def remove(self, folder: str) -> None:
        """Stop reporting on a folder whose listing the caller dropped."""

    @abstractmethod
    def drain(self) -> FolderChanges | None:
        """What changed since the last drain, including every edit completed before this call.

        Returns:
            What to look at again (empty when nothing happened), or None when events may
            have been lost (an overflow, an error, a fork). The caller then walks the whole
            vault with a new watcher.
        """

    @abstractmethod
    def close(self) -> None:
        """Release the watches; idempotent (garbage collection does it too)."""


def _backend_name() -> str:
    forced = os.environ.get(BACKEND_VARIABLE, "").strip().lower()
    if forced in BACKENDS:
        return forced
    if forced:
        logger.warning(
            "%s=%s is not one of %s; using this system's default",
            BACKEND_VARIABLE,
            forced,
            ", ".join(BACKENDS),
        )
    return "inotify" if sys.platform.startswith("linux") else "watchfiles"


def unwatchable_filesystem(root: str) -> str | None:
    """The type of the filesystem holding `root` when its events cannot be trusted, else None.

    Read from `/proc/self/mountinfo` on Linux and from `mount` on macOS (a mount that is not
    `local` there: network shares, macFUSE). Elsewhere, or when the table cannot be read,
    None: Windows reports changes on SMB shares itself, from the server.
    """
    if sys.platform.startswith("linux"):
        try:
            with open(_MOUNTINFO, encoding="utf-8", errors="surrogateescape") as handle:
                mounts = parse_mountinfo(handle.read())
        except OSError:
            return None
    elif sys.platform == "darwin":
        try:
            listed = subprocess.run(
                ["/sbin/mount"], capture_output=True, text=True, timeout=5, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        mounts = parse_macos_mounts(listed.stdout)
    else:
        return None
    mount = _mount_of(root, mounts)
    return mount[1] if mount is not None and mount[2] else None


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a Linux `/proc/<pid>/mountinfo`, in mount order."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        kind = fields[fields.index("-", 6) + 1]
        point = _OCTAL_ESCAPE.sub(lambda octal: chr(int(octal[1], 8)), fields[4])
        remote = kind in _REMOTE_FILESYSTEMS or kind.startswith("fuse.")
        mounts.append((point, kind, remote))
    return mounts


def parse_macos_mounts(text: str) -> list[Mount]:
    """The mounts `mount` lists on macOS; one without the `local` flag is a remote one."""
    mounts = []
    for line in text.splitlines():
        match = _MACOS_MOUNT.match(line)
        if match is None:
            continue
        options = match["options"].split(", ")
        kind = options[0]
        mounts.append((match["point"], kind, kind in _REMOTE_FILESYSTEMS or "local" not in options))
    return mounts


def _mount_of(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount holding `path`: the deepest mount point above it, the last mounted on a tie."""
    found: Mount | None = None
    for mount in mounts:
        point = mount[0]
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (found is None or len(point) >= len(found[0])):
            found = mount
    return found


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


class InotifyWatcher(FolderWatcher):
    """One inotify instance watching the folders a vault walked (Linux).

    Watches are kept per folder path; a path maps to the watch descriptor the kernel gave
    for the folder's inode, and several paths can share one descriptor (bind mounts). There
    is no thread: the descriptor is non-blocking and read only when a refresh runs.
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
