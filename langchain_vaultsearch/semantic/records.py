"""IndexRecords: what the vector store holds for each note, kept where a crash cannot lie.

A vector store cannot say which note a vector came from or whether a note's vectors are
complete, and LangChain's record managers hash metadata too (a rename re-embeds) and can
silently disagree with the store. So the vector index keeps its own records in SQLite,
beside the store:

- per note: the hash of the text that was embedded and the vector ids written for it;
- pending ids: written *before* the store is touched and cleared in the same transaction
  that records the finished note, so after a kill -9 the next refresh knows exactly which
  vectors may be half-written and deletes them first (no duplicates, no note with a mix
  of old and new chunks);
- the embedding model's identity: another model's vectors are never mixed in;
- an embedding cache keyed by the hash of the embedded text, so a rename, a move or a
  note whose chunks shifted embeds nothing new.

SQLite in WAL mode commits atomically and survives a killed writer; it is in the
standard library.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (
    path TEXT PRIMARY KEY,
    text_hash TEXT,
    vector_ids TEXT NOT NULL DEFAULT '[]',
    pending_ids TEXT
);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
);
"""

_STAMPS = """
CREATE TABLE IF NOT EXISTS stamps (
    path TEXT PRIMARY KEY, stamp TEXT NOT NULL, text_hash TEXT NOT NULL
);
"""
"""Which file each finished note's vectors were made from, so a new process reads only the
notes whose file changed; with the text hash it was recorded beside, as a writer that does
not keep stamps (an earlier version) changes the hash and leaves the stamp. A table of its
own: a file an earlier version wrote gains it when next opened for writing, and one opened
read-only is read without it."""


def holds_records(path: Path) -> bool:
    """Whether a records file is there to open.

    A 0-byte one (`touch`, an interrupted copy) holds no index, and opening it would make
    it an empty records database that later opens read as a failed index run. One this
    user may not even look at may hold one: opening it then says so, where "no index"
    would send the user to build a second one.
    """
    try:
        return path.stat().st_size > 0
    except PermissionError:
        return True
    except OSError:
        return False


def text_hash(text: str) -> str:
    """A stable hash of a text (hex sha256), the identity of embedded content."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class NoteRecord:
    """What the store holds for one note.

    Attributes:
        path: vault-relative path.
        text_hash: hash of the note text the vectors were made from; None while the note
            has never been finished.
        vector_ids: ids of its vectors in the store.
        pending_ids: ids a write in progress may have left in the store; not empty only
            after an interrupted refresh.
    """

    path: str
    text_hash: str | None
    vector_ids: tuple[str, ...]
    pending_ids: tuple[str, ...]


class IndexRecords:
    """The SQLite file of one vector index (thread-safe; one writer process at a time)."""

    def __init__(self, path: Path) -> None:
        """Open or create the records file; read-only when the file or its folder is.

        SQLite in WAL mode needs to write beside the file even to read it, so an existing
        file this process cannot write is opened as immutable: searches of a read-only
        vault still find the model and the notes, and `read_only` tells writers to stop.

        Raises:
            ValueError: the file belongs to a newer version of this package, is not a
                records file, or cannot be created.
            OSError: its folder cannot be created.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        existed = path.exists()
        if existed and not os.access(path, os.R_OK):
            msg = (
                f"{path} cannot be read by this user (permission denied): give it read "
                "access; it is not damaged, so do not delete it"
            )
            raise ValueError(msg)
        self.read_only = existed and not (
            os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
        )
        """True when the file was opened as immutable: nothing can be written."""
        self._lock = threading.Lock()
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(
                f"{path.resolve().as_uri()}?immutable=1" if self.read_only else path,
                uri=self.read_only,
                check_same_thread=False,
                isolation_level=None,
            )
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA if self.read_only else _SCHEMA + _STAMPS)
            self._db = _Checked(db, path)
            stored = self.get_meta("schema")
            if stored is None:
                self.set_meta("schema", str(SCHEMA_VERSION))
        except sqlite3.DatabaseError as exc:  # damaged, another kind of file, or a folder
            if db is not None:
                db.close()
            msg = (
                f"{path} is not a vaultsearch records file ({exc}); delete it to rebuild"
                if existed
                else f"{path} cannot be created ({exc}); its folder must be writable"
            )
            raise ValueError(msg) from exc
        if stored not in (None, str(SCHEMA_VERSION)):
            self._db.close()
            msg = (
                f"{path} has records format {stored}, this version reads {SCHEMA_VERSION}; "
                "upgrade langchain-vaultsearch, or delete it to rebuild"
            )
            raise ValueError(msg)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()

    def get_meta(self, key: str) -> str | None:
        """A stored setting (e.g. the embedding model's identity), None when unset."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def damage(self) -> str | None:
        """What SQLite's quick check finds wrong with the file, None when it is sound.

        It reads every page, so it runs where the cost is small beside the work: before a
        rebuild, which must not trip over a page a disk error or a sync tool broke.
        """
        try:
            with self._lock:
                found = [str(row[0]) for row in self._db.execute("PRAGMA quick_check")]
        except (SemanticIndexUnavailable, sqlite3.DatabaseError) as exc:  # met while reading
            return str(exc)
        return None if found == ["ok"] else "; ".join(found[:3])

    def set_meta(self, key: str, value: str) -> None:
        """Store a setting."""
        with self._lock:
            self._db.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def note(self, path: str) -> NoteRecord | None:
        """The record of one note."""
        with self._lock:
            row = self._db.execute(
                "SELECT path, text_hash, vector_ids, pending_ids FROM notes WHERE path = ?",
                (path,),
            ).fetchone()
        return None if row is None else _record(row)

    def notes(self) -> Iterator[NoteRecord]:
        """Every note record (read in one go: records are small)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT path, text_hash, vector_ids, pending_ids FROM notes"
            ).fetchall()
        return (_record(row) for row in rows)

    def hashes(self) -> dict[str, str | None]:
        """Path -> embedded text hash of every note record."""
        with self._lock:
            rows = self._db.execute("SELECT path, text_hash FROM notes").fetchall()
        return {str(path): digest for path, digest in rows}

    def stamps(self) -> dict[str, tuple[str, str]]:
        """Path -> (stamp, text hash): the file a finished note's vectors were made from.

        Empty for a read-only file an earlier version wrote (it has no stamps): every
        note is then read again, as before stamps.
        """
        with self._lock:
            try:
                rows = self._db.execute("SELECT path, stamp, text_hash FROM stamps").fetchall()
            except sqlite3.OperationalError:  # no such table: not written since stamps
                return {}
        return {str(path): (str(stamp), str(digest)) for path, stamp, digest in rows}

    def set_stamps(self, stamps: Mapping[str, tuple[str, str]]) -> None:
        """Record the files notes' current vectors were made from: (stamp, text hash).

        Nothing when read-only.
        """
        if self.read_only or not stamps:
            return
        with self._lock, self._transaction():
            self._set_stamps(stamps)

    def _set_stamps(self, stamps: Mapping[str, tuple[str, str]]) -> None:
        self._db.executemany(
            "INSERT INTO stamps(path, stamp, text_hash) VALUES (?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET "
            "stamp = excluded.stamp, text_hash = excluded.text_hash",
            [(path, stamp, digest) for path, (stamp, digest) in stamps.items()],
        )

    def begin_write(self, pending: dict[str, Sequence[str]]) -> None:
        """Record the ids a write is about to put in the store, before it touches it."""
        with self._lock, self._transaction():
            for path, ids in pending.items():
                self._db.execute(
                    "INSERT INTO notes(path, pending_ids) VALUES (?, ?) "
                    "ON CONFLICT(path) DO UPDATE SET pending_ids = excluded.pending_ids",
                    (path, json.dumps(list(ids))),
                )

    def finish_write(
        self, done: dict[str, tuple[str, Sequence[str]]], stamps: Mapping[str, str]
    ) -> None:
        """Record notes whose vectors are all in the store: (text hash, vector ids).

        With the stamps of the files they were made from (of the notes that have one), in
        the same transaction: a note's stamp never outlives the vectors it describes.
        """
        with self._lock, self._transaction():
            for path, (digest, ids) in done.items():
                self._db.execute(
                    "INSERT INTO notes(path, text_hash, vector_ids, pending_ids) "
                    "VALUES (?, ?, ?, NULL) ON CONFLICT(path) DO UPDATE SET "
                    "text_hash = excluded.text_hash, vector_ids = excluded.vector_ids, "
                    "pending_ids = NULL",
                    (path, digest, json.dumps(list(ids))),
                )
            self._set_stamps({path: (stamp, done[path][0]) for path, stamp in stamps.items()})

    def forget(self, paths: Iterable[str]) -> None:
        """Drop the records of notes whose vectors were deleted."""
        rows = [(p,) for p in paths]
        with self._lock, self._transaction():
            self._db.executemany("DELETE FROM notes WHERE path = ?", rows)
            self._db.executemany("DELETE FROM stamps WHERE path = ?", rows)

    def clear(self) -> None:
        """Drop every note record, the model identity and the embedding cache (a rebuild).

        The cache goes too: a rebuild is how a user recovers from a model that returned
        bad vectors, and those must not be served again.
        """
        with self._lock, self._transaction():
            self._db.execute("DELETE FROM notes")
            self._db.execute("DELETE FROM stamps")
            self._db.execute("DELETE FROM meta WHERE key != 'schema'")
            self._db.execute("DELETE FROM embeddings")

    def cached_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Embeddings already made by `model` for texts with these hashes."""
        found: dict[str, list[float]] = {}
        with self._lock:
            for start in range(0, len(hashes), 500):
                part = list(hashes[start : start + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_hash, vector FROM embeddings "  # noqa: S608 - only '?' marks
                    f"WHERE model = ? AND text_hash IN ({marks})",
                    (model, *part),
                ).fetchall()
                for digest, blob in rows:
                    vector = array("f")
                    vector.frombytes(blob)
                    found[str(digest)] = vector.tolist()
        return found

    def cache_vectors(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Keep embeddings for later refreshes (as float32: what the stores keep too).

        A read-only file keeps nothing: caching saves work, it is never needed.
        """
        if self.read_only:
            return
        with self._lock, self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO embeddings(model, text_hash, vector) VALUES (?, ?, ?)",
                [(model, digest, array("f", v).tobytes()) for digest, v in vectors.items()],
            )

    def prune_cache(self, model: str, keep: set[str]) -> int:
        """Drop cached embeddings of texts no note holds any more; returns how many."""
        with self._lock:
            rows = self._db.execute(
                "SELECT text_hash FROM embeddings WHERE model = ?", (model,)
            ).fetchall()
            stale = [(model, str(digest)) for (digest,) in rows if digest not in keep]
            with self._transaction():
                self._db.executemany(
                    "DELETE FROM embeddings WHERE model = ? AND text_hash = ?", stale
                )
        return len(stale)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """Commit on success, roll back on error (the caller holds the lock)."""
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


class _Checked:
    """The records' connection, whose damage is one line with the fix, not a traceback.

    A records file damaged after it opened (a disk error, a sync tool writing half a page)
    fails on some later statement with `sqlite3.DatabaseError` ("database disk image is
    malformed"): that becomes `SemanticIndexUnavailable`, which the facade reports in one
    line while lexical search goes on. Locking and constraint errors (its subclasses) are
    not damage and pass through.
    """

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = path

    def execute(self, sql: str, parameters: Sequence[object] = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, parameters)
        except sqlite3.DatabaseError as exc:
            if type(exc) is not sqlite3.DatabaseError:
                raise  # locked, a constraint: not damage
            raise self._damaged(exc) from exc

    def executemany(self, sql: str, rows: Iterable[Sequence[object]]) -> sqlite3.Cursor:
        try:
            return self._db.executemany(sql, rows)
        except sqlite3.DatabaseError as exc:
            if type(exc) is not sqlite3.DatabaseError:
                raise
            raise self._damaged(exc) from exc

    def close(self) -> None:
        self._db.close()

    def _damaged(self, exc: sqlite3.DatabaseError) -> SemanticIndexUnavailable:
        return SemanticIndexUnavailable(
            f"the vector index records {self._path} are damaged ({exc}): delete"
            f" {self._path.parent} and run `vaultsearch index --embeddings SPEC` to rebuild"
        )


def _record(row: tuple[object, ...]) -> NoteRecord:
    path, digest, ids, pending = row
    return NoteRecord(
        path=str(path),
        text_hash=None if digest is None else str(digest),
        vector_ids=_ids(ids, path),
        pending_ids=() if pending is None else _ids(pending, path),
    )


def _ids(stored: object, path: object) -> tuple[str, ...]:
    """A record's vector ids, which must be a JSON list of strings.

    The records file lives inside the vault, so anyone who can write a note can write
    it: anything else is damage, reported in one line, not a traceback deep in a refresh.
    """
    try:
        ids = json.loads(str(stored))
    except ValueError:
        ids = None
    if not isinstance(ids, list) or not all(isinstance(item, str) for item in ids):
        msg = (
            f"the vector index records are damaged (the vector ids of {path} are not a list"
            " of strings): delete the index folder and run `vaultsearch index --embeddings"
            " SPEC` to rebuild"
        )
        raise SemanticIndexUnavailable(msg)
    return tuple(ids)
