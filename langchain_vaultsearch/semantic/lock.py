"""The locks of a vector index: one process writes, and a dead one never blocks.

Two `flock` files sit beside the records:

- the **writer lock** (`records.lock`): held exclusively by the one process writing; the
  file records who holds it for the messages others get.
- the **clients lock** (`records-clients.lock`), for embedded Chroma only. Embedded
  Chroma is single-process: a process's first read replays Chroma's write-ahead log into
  its own copy of the HNSW graph and may save that copy over the files (or re-create
  them, before the first save), and the copy is never reloaded, so a client left open
  across another process's write later saves a stale graph. So every process with a
  Chroma client open holds the clients lock shared, and a writer holds it exclusively
  while it writes: readers stay out while a writer writes, and a writer waits for (or
  gives up on) processes that have the store open.

`flock` is held by an open file and released by the kernel when the process dies, so a
process killed with -9 leaves no stale lock to clean up.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable

_RETRY_S = 0.05
"""How often a writer waiting for readers to close the store tries again."""


class IndexLockedError(RuntimeError):
    """Another process is writing this vector index, or has it open while one would write."""


def lock_file(path: Path) -> IO[str]:
    """Open and `flock` the lock file; raise `IndexLockedError` when another process has it."""
    import fcntl

    handle = _open_lock(path)
    advice = " Several processes sharing one index should use a Chroma server."
    _flock_at_once(handle, fcntl.LOCK_EX, path, advice)
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def holder(path: Path) -> str:
    """Who took the writer lock `path` last, as it recorded ("pid 123"), for messages."""
    try:
        return path.read_text(encoding="utf-8").strip() or "another process"
    except OSError:
        return "another process"


def hold_clients(path: Path, writer_lock: Path) -> ClientsLock | None:
    """This process's shared hold on the clients lock `path` (see `ClientsLock`).

    Returns:
        The hold, or None where the system has no `flock` (Windows): embedded Chroma
        is unguarded there, as it always was.

    Raises:
        IndexLockedError: a writer in another process holds it.
        OSError: the lock file cannot be created or opened (a read-only folder).
    """
    if importlib.util.find_spec("fcntl") is None:
        return None
    return ClientsLock(path, writer_lock)


class ClientsLock:
    """This process's shared hold on a clients lock, while one of its indexes has a client open.

    Held through one open file per process and counted across the indexes that use it:
    `flock` treats two files of one process as strangers, so a second index of the same
    store would otherwise keep the first from ever writing. Indexes of one process share
    Chroma's in-process state, which is safe; the lock only keeps other processes out.
    """

    _holds: dict[tuple[int, int], tuple[IO[str], int]] = {}  # noqa: RUF012 - shared by design
    """Per lock file (device, inode): the open file holding the lock, and its users."""
    _holds_lock = threading.Lock()

    def __init__(self, path: Path, writer_lock: Path) -> None:
        """Hold `path` shared, or fail at once when another process is writing.

        Args:
            path: the clients lock file (created if missing).
            writer_lock: the writer lock file, which names the writer for the message.

        Raises:
            IndexLockedError: a writer in another process holds it.
            OSError: the lock file cannot be created or opened (a read-only folder).
        """
        import fcntl

        self._closed = False
        handle = _open_lock(path)
        stat = os.fstat(handle.fileno())
        self._key = (stat.st_dev, stat.st_ino)
        with self._holds_lock:
            held = self._holds.get(self._key)
            if held is not None:
                handle.close()
                self._holds[self._key] = (held[0], held[1] + 1)
                self._handle = held[0]
                return
            _flock_at_once(handle, fcntl.LOCK_SH, writer_lock)
            self._holds[self._key] = (handle, 1)
            self._handle = handle

    @contextlib.contextmanager
    def exclusive(self, wait_s: float) -> Iterator[None]:
        """Hold the lock alone while writing; the caller must hold the writer lock.

        Only writer-lock holders take the clients lock exclusively, which is what makes
        this safe: a failed conversion drops the shared hold (`flock` removes the old lock
        before it tries the new one), and no other process can take it in between.

        Args:
            wait_s: how long to wait for other processes to close the store (0: fail at once).

        Raises:
            IndexLockedError: other processes kept the store open for `wait_s` seconds.
        """
        import fcntl

        fd = self._handle.fileno()
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                fcntl.flock(fd, fcntl.LOCK_SH)  # back to shared: no one else can be exclusive
                if time.monotonic() >= deadline:
                    msg = (
                        "The vector index is open in another process (a search, or a server "
                        "such as `vaultsearch mcp`), and embedded Chroma cannot be written while "
                        "another process reads it: wait for it to finish or stop it. Several "
                        "processes sharing one index should use a Chroma server."
                    )
                    raise IndexLockedError(msg) from None
                time.sleep(_RETRY_S)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_SH)

    def close(self) -> None:
        """Let go of this index's hold; the file is closed (and unlocked) with the last one."""
        with self._holds_lock:
            if self._closed:
                return
            self._closed = True
            handle, users = self._holds[self._key]
            if users > 1:
                self._holds[self._key] = (handle, users - 1)
                return
            del self._holds[self._key]
            handle.close()


def _flock_at_once(handle: IO[str], mode: int, writer_lock: Path, advice: str = "") -> None:
    """`flock` without waiting; when another process has it, close `handle` and say who.

    Raises:
        IndexLockedError: naming the writer's pid from `writer_lock`, then `advice`.
    """
    import fcntl

    try:
        fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        msg = (
            f"The vector index is being written by {holder(writer_lock)} (lock "
            f"{writer_lock}); wait for it to finish.{advice}"
        )
        raise IndexLockedError(msg) from None


def _open_lock(path: Path) -> IO[str]:
    """A lock file, open; one line with the fix when a folder or a file is in the way.

    A read-only folder stays an `OSError`: its callers say what that means for them.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("a+", encoding="utf-8")
    except (IsADirectoryError, NotADirectoryError) as exc:
        msg = f"cannot open the vector index's lock file {path} ({exc.strerror}): delete it"
        raise SemanticIndexUnavailable(msg) from exc
