"""What a vector index tells its caller: where a refresh is, what it did, what a check found."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class IndexProgress:
    """Where a refresh is, for progress bars and `on_progress` callbacks.

    Texts (the windows of each chunk) are what costs: a note of 40 chunks takes 40 times
    as long as a note of one, so a bar of notes jumps and stalls; `texts_done` of
    `texts_total` moves at the model's own pace, and its rate gives an honest time left.

    Attributes:
        notes_done: changed notes processed so far.
        notes_total: changed notes this refresh processes.
        chunks_done: chunks written so far.
        texts_embedded: texts the model embedded so far (cache hits excluded).
        elapsed_s: seconds since the refresh started.
        texts_done: texts written so far (embedded, or reused from the cache).
        texts_total: texts of the notes whose vectors this refresh writes.
    """

    notes_done: int
    notes_total: int
    chunks_done: int
    texts_embedded: int
    elapsed_s: float
    texts_done: int = 0
    texts_total: int = 0


@dataclass
class RefreshReport:
    """What one refresh did.

    Attributes:
        added: notes embedded for the first time.
        updated: notes whose changed text was embedded again.
        removed: notes whose vectors were deleted.
        unchanged: notes looked at whose chunks were already indexed (a touch, a restart).
        chunks_written: chunks written to the store.
        texts_embedded: texts sent to the model (windows; cache hits not counted).
        repaired: notes whose interrupted write was cleaned up first.
        background: True when the work was handed to a background thread.
        stopped: True when the write ended before every note was written (a stop request,
            a limit); the next refresh writes the rest.
    """

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    chunks_written: int = 0
    texts_embedded: int = 0
    repaired: list[str] = field(default_factory=list)
    background: bool = False
    stopped: bool = False


@dataclass(frozen=True)
class VerifyReport:
    """How vault, records and store agree.

    Attributes:
        missing: vector ids the records list that the store does not have.
        orphans: vector ids in the store that no record lists (None: the store cannot
            list its ids, so orphans cannot be counted).
        unindexed: searchable notes with no finished record, or whose chunks changed.
        pending: notes with an interrupted write.
    """

    missing: list[str]
    orphans: list[str] | None
    unindexed: list[str]
    pending: list[str]

    @property
    def ok(self) -> bool:
        """Everything agrees."""
        return not (self.missing or self.orphans or self.unindexed or self.pending)
