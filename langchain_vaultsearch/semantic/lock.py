"""The writer lock of a vector index: one process writes, and a dead one never blocks.

`flock` is held by an open file and released by the kernel when the process dies, so a
writer killed with -9 leaves no stale lock to clean up; the file records who holds it for
the error message the next writer gets.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO


class IndexLockedError(RuntimeError):
    """Another process is writing this vector index."""


def lock_file(path: Path) -> IO[str]:
    """Open and `flock` the lock file; raise `IndexLockedError` when another process has it."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        msg = (
            f"The vector index is being written by {holder} (lock {path}); wait for it to "
            "finish. Several processes sharing one index should use a Chroma server."
        )
        raise IndexLockedError(msg) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle
