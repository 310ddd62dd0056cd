"""Writing a vault's notes into a vector store, and checking that the two agree.

Apart from `VaultIndex`, which opens the store and decides when to write: this is what is
written and in what order, so that a write killed at any point is repaired by the next
one. Every method but `verify` expects the caller to hold the index's writer lock.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_vaultsearch.search.chunk_cache import read_chunks
from langchain_vaultsearch.semantic.cached_embeddings import CachedEmbeddings
from langchain_vaultsearch.semantic.records import IndexRecords, text_hash
from langchain_vaultsearch.semantic.reports import IndexProgress, RefreshReport, VerifyReport
from langchain_vaultsearch.semantic.windows import embedding_windows
from langchain_vaultsearch.text.chunking import CHUNK_SIZE, Chunk
from langchain_vaultsearch.vault.change_feed import ChangeFeed
from langchain_vaultsearch.vault.note_info import NoteInfo
from langchain_vaultsearch.vault.vault import Vault

INDEX_FORMAT = "vaultsearch-vectors-1"
"""Part of every note's hash and stamp: a new chunking or windowing scheme re-embeds once.

Change it with the chunking: a new process reads again only the notes whose file or stamp
changed (`stamp`), so a chunker that cuts unchanged files differently is not seen without it.
"""
SETTLE_S = 2.0
"""How long before a write began a file must have last changed for its stamp to be kept."""
wall_clock = time.time
"""The clock `SETTLE_S` is measured on (the files' times are wall-clock times)."""
_STAMPS_PER_WRITE = 256
"""Stamps of notes found unchanged, written together (one transaction each)."""
# The ids this index gives vectors: `<chunk id>~<window>`; others in a shared store are
# left alone.
_VECTOR_ID = re.compile(r"#\d+~\d+$")


@dataclass(frozen=True)
class Pending:
    """Notes to write and notes to delete, pulled from the feed."""

    updated: tuple[NoteInfo, ...]
    removed: tuple[str, ...]


@dataclass(eq=False)
class VectorWriter:
    """Keeps a store's vectors, and the records of what they are made of, in step with a vault.

    The records are written around the store (pending ids first, finished records after),
    which is what makes a killed write repairable; the feed remembers what was applied and
    starts over from the records after any failure.
    """

    vault: Vault
    records: IndexRecords
    store: VectorStore
    cached_embeddings: CachedEmbeddings
    window_chars: int
    window_overlap: int
    progress: IndexProgress | None = field(default=None, init=False)
    """Where the running write is (None when none runs)."""
    feed: ChangeFeed = field(init=False)
    """What the vault changed since the last pull."""

    def __post_init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Forget what the feed counted as applied: the next pull starts from the records."""
        self.feed = ChangeFeed(self.vault, with_text=False)

    def pull(self) -> Pending:
        """The notes to (re)write and delete since the last refresh (writer held).

        A new process starts from the notes whose file is the one their vectors were made
        from (same stamp), so that it reads only the others: without the stamps, its
        first pull read and chunked every note of the vault to find the few that changed.
        """
        first = not self.feed.started
        if first:
            self.vault.refresh(keep_text=False)
            as_of = self.vault.snapshot()  # before the notes are looked at
            changes = self.feed.start_from(self._current_notes(), as_of=as_of)
        else:
            changes = self.feed.pull()
        removed = set(changes.removed)
        updated = []
        for info, _text in changes.updated:
            if info.searchable:
                updated.append(info)
            else:
                removed.add(info.path)
        if first:
            updated.extend(self._reconcile_store(removed, {info.path for info in updated}))
        return Pending(tuple(updated), tuple(sorted(removed)))

    def stamp(self, content_stamp: tuple[float, int, int]) -> str:
        """What tells that a note's vectors were made from this file, chunked as now.

        Args:
            content_stamp: the file's `NoteInfo.content_stamp`.
        """
        mtime_ms, size, changed_ns = content_stamp
        settings = f"{INDEX_FORMAT}/{CHUNK_SIZE}/{self.window_chars}/{self.window_overlap}"
        return f"{settings}|{mtime_ms!r}|{size}|{changed_ns}"

    def _current_notes(self) -> list[str]:
        """Searchable notes whose finished vectors were made from the file as it is now.

        A stamp counts only beside the text hash it was written with: a writer that does
        not keep stamps (an earlier version of this package) changes the hash, not the
        stamp, and the note is read again.
        """
        stamps = self.records.stamps()
        finished = self.records.hashes()
        current = []
        for path in self.vault.searchable_paths():
            digest = finished.get(path)
            content = self.vault.content_stamp(path)  # not the record: nothing is decoded
            if digest and content and stamps.get(path) == (self.stamp(content), digest):
                current.append(path)
        return current

    def _settled(self, info: NoteInfo, since_ms: float) -> bool:
        """Whether a file last changed before `since_ms`, so that any later write restamps it.

        On a clock of coarse ticks (FAT: 2 s, HFS+: 1 s) a second write of the same size
        within the tick of the one read keeps the stamp: a file changed that recently is
        left unstamped, and the next process reads it again.
        """
        return max(info.mtime_ms, info.changed_ns / 1e6) < since_ms

    def _reconcile_store(self, removed: set[str], queued: set[str]) -> list[NoteInfo]:
        """Once per process: records of deleted notes, half-written notes, lost vectors.

        Notes deleted while no process ran are added to `removed`. Notes left half-written
        by a killed refresh, or whose vectors the store no longer has (a store emptied or
        replaced behind the records' back), are returned to be written again: their
        vectors come from the cache, so this costs no model calls. Vectors in the store
        that no record lists and whose ids are this index's are deleted.
        """
        known = self.vault.notes
        stored = self.store_ids()
        recorded: set[str] = set()
        redo = []
        for record in self.records.notes():
            recorded.update(record.vector_ids)
            if record.path not in known:
                removed.add(record.path)
                continue
            lost = stored is not None and not stored.issuperset(record.vector_ids)
            if (record.pending_ids or lost) and record.path not in queued:
                redo.append(known[record.path])
            if lost:
                self.records.forget([record.path])
        if stored is not None:
            self.delete(sorted(i for i in stored - recorded if _VECTOR_ID.search(i)))
        return redo

    def write(
        self,
        pending: Pending,
        on_progress: Callable[[IndexProgress], None] | None,
        stop: threading.Event | None = None,
        limit: int | None = None,
    ) -> RefreshReport:
        """Apply pulled changes to the store and the records (writer held).

        Args:
            pending: what `pull` found.
            on_progress: called after each batch with where the write is.
            stop: once set, the write ends before its next batch (`RefreshReport.stopped`).
                A process that is ending sets it: a batch cut off mid-write leaves notes
                half-written, and the embedding thread killed at exit aborts the process.
            limit: embed at most this many notes (those unchanged are still confirmed);
                the next refresh writes the rest (`RefreshReport.stopped`).
        """
        report = RefreshReport()
        started = time.monotonic()
        since_ms = (wall_clock() - SETTLE_S) * 1000.0  # before any file is read
        embedded_before = self.cached_embeddings.texts_embedded
        total = len(pending.updated)
        try:
            self._remove(pending.removed, report)
            todo, texts_total = self._to_write(pending, report, since_ms, stop)
            if limit is not None and len(todo) > limit:
                todo = todo[:limit]
                report.stopped = True
            texts_done = 0

            def progress(notes_done: int) -> None:
                self.progress = IndexProgress(
                    notes_done=notes_done,
                    notes_total=total,
                    chunks_done=report.chunks_written,
                    texts_embedded=self.cached_embeddings.texts_embedded - embedded_before,
                    elapsed_s=time.monotonic() - started,
                    texts_done=texts_done,
                    texts_total=max(texts_total, texts_done),
                )
                if on_progress is not None:
                    on_progress(self.progress)

            progress(total - len(todo))
            batch: list[tuple[NoteInfo, str, list[Chunk]]] = []
            windows = 0
            for done, info in enumerate(todo, 1):
                if stop is not None and stop.is_set() and not batch:
                    break
                read = read_chunks(self.vault, info)
                if read is not None:
                    chunks = read[1]
                    batch.append((info, self.digest(chunks), chunks))
                    windows += sum(len(self.windows(c)) for c in chunks)
                if windows >= self.cached_embeddings.batch_size or done == len(todo):
                    self._store_batch(batch, report, since_ms)
                    texts_done += windows
                    batch, windows = [], 0
                    progress(total - len(todo) + done)
        except BaseException:
            # The feed counted these changes as applied: start over from the records, which
            # know exactly what was finished.
            self.restart()
            raise
        finally:
            self.progress = None
        if stop is not None and stop.is_set():
            report.stopped = True
        if report.stopped:
            self.restart()  # as after a failure: the next pull lists what was left
        report.texts_embedded = self.cached_embeddings.texts_embedded - embedded_before
        return report

    def _to_write(
        self,
        pending: Pending,
        report: RefreshReport,
        since_ms: float,
        stop: threading.Event | None,
    ) -> tuple[list[NoteInfo], int]:
        """The notes whose vectors need writing, and how many texts that is.

        Known first, so that progress counts texts of a known total from the start; the
        chunks are read again when written (not held: a first index of a large vault would
        hold all its text). Notes read again and found as their vectors knew them are
        stamped as they go: a one-shot command may end before this pass does, and the next
        keeps its work.
        """
        todo: list[NoteInfo] = []
        texts_total = 0
        confirmed: dict[str, tuple[str, str]] = {}
        for info in pending.updated:
            if stop is not None and stop.is_set():
                break
            changed = self._changed_windows(info)
            if changed is None:
                report.unchanged += 1
                record = self.records.note(info.path)
                if record is not None and record.text_hash and self._settled(info, since_ms):
                    confirmed[info.path] = (self.stamp(info.content_stamp), record.text_hash)
                if len(confirmed) >= _STAMPS_PER_WRITE:
                    self.records.set_stamps(confirmed)
                    confirmed.clear()
            elif changed:
                todo.append(info)
                texts_total += changed
        self.records.set_stamps(confirmed)
        return todo, texts_total

    def _changed_windows(self, info: NoteInfo) -> int | None:
        """The texts a note's vectors need, or None when its finished record is current.

        0 for a note that can no longer be read (deleted since the feed listed it).
        """
        read = read_chunks(self.vault, info)
        if read is None:
            return 0
        chunks = read[1]
        record = self.records.note(info.path)
        current = record is not None and not record.pending_ids
        if current and record is not None and record.text_hash == self.digest(chunks):
            return None
        return sum(len(self.windows(chunk)) for chunk in chunks)

    def _remove(self, paths: Sequence[str], report: RefreshReport) -> None:
        records = [r for r in map(self.records.note, paths) if r is not None]
        self.delete([i for r in records for i in (*r.vector_ids, *r.pending_ids)])
        self.records.forget(r.path for r in records)
        report.removed.extend(r.path for r in records)

    def _store_batch(
        self,
        batch: list[tuple[NoteInfo, str, list[Chunk]]],
        report: RefreshReport,
        since_ms: float,
    ) -> None:
        """Write a batch of notes: pending ids first, then the store, then the records."""
        if not batch:
            return
        documents: list[Document] = []
        new_ids: dict[str, list[str]] = {}
        old_ids: dict[str, tuple[str, ...]] = {}
        for info, _digest, chunks in batch:
            record = self.records.note(info.path)
            old_ids[info.path] = () if record is None else (*record.vector_ids, *record.pending_ids)
            if record is not None and record.pending_ids:
                report.repaired.append(info.path)
            (report.updated if record is not None and record.text_hash else report.added).append(
                info.path
            )
            ids = new_ids.setdefault(info.path, [])
            for chunk in chunks:
                for window, text in enumerate(self.windows(chunk)):
                    vector_id = f"{chunk.id}~{window}"
                    ids.append(vector_id)
                    documents.append(
                        Document(
                            page_content=text,
                            metadata={"chunkId": chunk.id, "path": info.path, "window": window},
                            id=vector_id,
                        )
                    )
            report.chunks_written += len(chunks)
        self.records.begin_write({path: [*ids, *old_ids[path]] for path, ids in new_ids.items()})
        stale = [i for path, ids in old_ids.items() for i in ids if i not in set(new_ids[path])]
        self.delete(stale)
        if documents:
            self.store.add_documents(documents, ids=[doc.id for doc in documents])
        self.records.finish_write(
            {info.path: (digest, new_ids[info.path]) for info, digest, _c in batch},
            {
                info.path: self.stamp(info.content_stamp)
                for info, _d, _c in batch
                if self._settled(info, since_ms)
            },
        )

    def delete(self, ids: Sequence[str]) -> None:
        """Delete vectors by id, 500 a call: stores cap how many ids one request may name."""
        for start in range(0, len(ids), 500):
            self.store.delete(list(ids[start : start + 500]))

    def windows(self, chunk: Chunk) -> list[str]:
        """The texts embedded for a chunk, as this index's window options cut them."""
        return embedding_windows(chunk, self.window_chars, self.window_overlap)

    def digest(self, chunks: list[Chunk]) -> str:
        """The identity of what a note's vectors are made of (format, windows, chunks)."""
        parts = [INDEX_FORMAT, str(self.window_chars), str(self.window_overlap)]
        parts.extend(f"{c.id}\x00{c.heading}\x00{c.content}" for c in chunks)
        return text_hash("\x01".join(parts))

    def verify(self) -> VerifyReport:
        """Compare vault, records and store: what is missing, orphaned or not indexed."""
        recorded: set[str] = set()
        pending = []
        hashes = {}
        for record in self.records.notes():
            recorded.update(record.vector_ids)
            hashes[record.path] = record.text_hash
            if record.pending_ids:
                pending.append(record.path)
        stored = self.store_ids()
        if stored is not None:
            missing = sorted(recorded - stored)
            orphans: list[str] | None = sorted(stored - recorded)
        else:
            found = {doc.id for doc in self.store.get_by_ids(sorted(recorded))}
            missing, orphans = sorted(recorded - found), None
        self.vault.refresh()
        unindexed = []
        for path, info in self.vault.notes.items():
            if not info.searchable:
                continue
            read = read_chunks(self.vault, info)
            if read is not None and hashes.get(path) != self.digest(read[1]):
                unindexed.append(path)
        return VerifyReport(missing, orphans, sorted(unindexed), sorted(pending))

    def store_ids(self) -> set[str] | None:
        """Every id in the store, where the store can list them (Chroma, in-memory)."""
        if isinstance(self.store, InMemoryVectorStore):
            return set(self.store.store)
        get = getattr(self.store, "get", None)
        if callable(get) and hasattr(self.store, "_collection"):
            return set(get(include=[])["ids"])
        return None
