"""MemoryBudget: how much memory one vault's lexical search may hold, and who gets what.

A server serving several vaults cannot give each a gigabyte, and a 100,000-note vault
would take that unbounded: ~500 MB of text while searches scan before the first index
exists, the saved index's pages as queries touch them, the chunks of every note ever
ranked. One number (`memory_budget_mb`, 512 by default) is split between them here, so
each holder is bounded by its share and the benchmark can show the whole stays under it.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MEMORY_BUDGET_MB = 512
MIN_MEMORY_BUDGET_MB = 64
"""Below this the shares are too small to keep a warm query warm."""

_MB = 1024 * 1024
_STATM = Path("/proc/self/statm")


@dataclass(frozen=True)
class MemoryBudget:
    """Shares of one budget, in bytes.

    Attributes:
        total_bytes: the whole budget.
        scan_text_bytes: lowercased note text held while searches scan (an eighth): the
            notes beyond it go to a temporary file each search reads back until the index
            is ready. Reading a run back costs about what finding a term in it does
            (~0.06 s a search for 360 MB at help x16), while a quarter, beside the
            chunks the scan's searches rank, took help x16's search process to 518 MB.
        chunk_cache_bytes: chunks and terms of ranked notes (three eighths: 192 MB of
            512). Thirty queries over 100,000 notes rank ~6,000 notes; with a cache smaller
            than those, repeating the queries chunks them all again (warm p95 480 ms at 128
            MB, 50 ms at 192 MB on the help vault copied 16 times).
        decoded_records_bytes: note records of the saved index decoded for the notes a
            query must chunk, boost or return (a thirty-second: 16 MB of 512). Candidates
            whose chunks are cached are not decoded (`Vault.content_stamp`); 48 MB, which
            the candidates needed before, held 3,492 records nothing read again (restart
            peak at 100,480 notes 386 -> 359 MB, warm p95 the same).
        mapped_bytes: pages of the saved index a process may keep resident before it lets
            them go (a sixteenth); they stay in the page cache, so reading them again
            costs no disk access.

    The rest is for what every index holds (paths, note numbers, the vault's listing:
    ~170 MB at 100,000 notes) and for the interpreter's own slack.
    """

    total_bytes: int
    scan_text_bytes: int
    chunk_cache_bytes: int
    decoded_records_bytes: int
    mapped_bytes: int

    @classmethod
    def from_mb(cls, megabytes: int = DEFAULT_MEMORY_BUDGET_MB) -> MemoryBudget:
        """Split a budget in megabytes.

        Raises:
            ValueError: below `MIN_MEMORY_BUDGET_MB`.
        """
        if isinstance(megabytes, bool) or not isinstance(megabytes, int):
            msg = f"memory_budget_mb must be an integer, got {megabytes!r}"
            raise TypeError(msg)
        if megabytes < MIN_MEMORY_BUDGET_MB:
            msg = f"memory_budget_mb must be at least {MIN_MEMORY_BUDGET_MB}, got {megabytes}"
            raise ValueError(msg)
        total = megabytes * _MB
        return cls(total, total // 8, total * 3 // 8, total // 32, total // 16)


class ResidentPages:
    """Watches how much mapped file memory the process holds, to release it past a share.

    Reads the shared-pages count of `/proc/self/statm` (file-backed pages, a read of a
    few bytes); where there is no `/proc`, nothing is watched and the kernel alone decides.
    """

    def __init__(self, limit_bytes: int) -> None:
        """Watch from now on, allowing `limit_bytes` of growth."""
        self._limit = limit_bytes
        self._since = _shared_bytes()

    def over_limit(self) -> bool:
        """Whether file pages grew past the limit since the last `reset`."""
        now = _shared_bytes()
        return now is not None and self._since is not None and now - self._since > self._limit

    def reset(self) -> None:
        """Count growth from now (after the pages were released)."""
        self._since = _shared_bytes()


def _shared_bytes() -> int | None:
    try:
        fields = _STATM.read_text(encoding="ascii").split()
    except OSError:
        return None
    return int(fields[2]) * mmap.PAGESIZE
