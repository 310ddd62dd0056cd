"""An embedded Chroma store's first read, guarded: a damaged store crashes one process, not all.

Chroma loads a collection's HNSW files on its first operation, in native code. A damaged
file (a disk error, an interrupted copy) ends the process there with a segmentation
fault, which no Python code can catch, and every later process that opens the index
crashes the same way: the MCP server at each start, taking its lexical tools with it. So
the index reads its store once when it opens it, with a marker beside the store naming
this process. A crash leaves the marker behind; the next open that finds the marker of a
process that is gone refuses the store in one line instead of crashing again, and
lexical search goes on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable

__all__ = ["READING_MARKER", "guarded_first_read"]

READING_MARKER = "vaultsearch-reading.pid"
"""The marker's name, in the store's folder (a rebuild, which deletes the folder, clears it)."""


def guarded_first_read(folder: Path, read: Callable[[], object]) -> None:
    """Run `read` (the store's first read) unless it already crashed a process.

    Args:
        folder: the embedded store's folder.
        read: what loads the store (a count of the collection).

    Raises:
        SemanticIndexUnavailable: the last process that first read the store died doing it.
    """
    marker = folder / READING_MARKER
    crashed = _crashed_reader(marker)
    if crashed is not None:
        msg = (
            f"the vector store {folder} ended process {crashed} as it was first read, so it "
            f"is likely damaged: run `vaultsearch index --rebuild`, or delete {folder} (if "
            f"that process was stopped for another reason, delete {marker} to try again)"
        )
        raise SemanticIndexUnavailable(msg)
    try:
        marker.write_text(str(os.getpid()), encoding="ascii")
    except OSError:  # a read-only store: read it unguarded
        read()
        return
    try:
        read()
    finally:
        marker.unlink(missing_ok=True)


def _crashed_reader(marker: Path) -> int | None:
    """The process a marker names when that process is gone (None: no marker, or alive)."""
    try:
        pid = int(marker.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    if pid == os.getpid() or _alive(pid):
        return None
    return pid


def _alive(pid: int) -> bool:
    """Whether a process is running; True when that cannot be told.

    On Windows `os.kill` would end the process rather than probe it, so there every
    marker counts as alive: the guard never refuses a store there.
    """
    if sys.platform == "win32" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, and is another user's
        return True
    return True
