"""What a vector index is made of, opened safely: records, locks, embedded Chroma.

Opening a `VaultIndex` touches files a user, a sync tool or another process may have
left in any state: a records file damaged or empty, a lock held elsewhere, a Chroma folder
that is a file, read-only or half written. Each helper here either returns the part or
raises `SemanticIndexUnavailable` with one line that names the fix; `VaultIndex.__init__`
only sequences them (and removes what a failed open created).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_vaultsearch.safe_archive import refused_folder
from langchain_vaultsearch.semantic.cached_embeddings import PROBE_TEXT, check_vectors
from langchain_vaultsearch.semantic.embeddings import check_spec
from langchain_vaultsearch.semantic.errors import (
    SemanticIndexBusy,
    SemanticIndexUnavailable,
    cause,
)
from langchain_vaultsearch.semantic.first_read import guarded_first_read
from langchain_vaultsearch.semantic.lock import ClientsLock, IndexLockedError, hold_clients, holder
from langchain_vaultsearch.semantic.records import IndexRecords, holds_records

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.client import Client
    from langchain_chroma import Chroma

logger = logging.getLogger(__name__)

SEARCH_EF = 800
"""Candidates Chroma's HNSW search keeps (its `ef_search`; Chroma's default is 100).

A search here asks for up to 300 windows (`fetch_k`), and with 100 the help vault's real
all-MiniLM-L6-v2 vectors (48,525 windows) kept 92% of the true nearest 180 on average and
49% for the worst query. The lists also changed from one open to the next (30 of 60 of
brain's), since an index re-inserts, in parallel, the vectors it had not yet saved when it
opens. 800 keeps 99% (94% for the worst), and 1 list in 60 changes, for about 1.5 ms more
per search: `python -m benchmarks.vector_recall`."""


def existing_records(
    path: Path, *, rebuild: bool, model_given: bool
) -> tuple[IndexRecords | None, str | None]:
    """The records file already there and the model it records, if any.

    A rebuild replaces the file, so one too damaged to read is no obstacle to it: the
    rebuild goes on as for a new index, provided it is told the model (a damaged file
    may not say which). A 0-byte file (`touch`, an interrupted copy) holds no index.

    Raises:
        SemanticIndexUnavailable: the file cannot be used, and this is not a rebuild
            that can replace it.
    """
    if not holds_records(path):
        return None, None
    records: IndexRecords | None = None
    spec = None
    try:
        records = open_records(path)
        stored = records.get_meta("model")
        spec = records.get_meta("embedding_spec")
        problem = records.damage() if rebuild else None
        if problem is None:
            return records, stored
        raise SemanticIndexUnavailable(f"the vector index records {path} are damaged ({problem})")
    except SemanticIndexUnavailable as exc:
        if records is not None:
            records.close()
        if not rebuild:
            raise
        if not model_given:
            built = "" if spec is None else f" (it was built with {spec[:100]!r})"
            msg = (
                f"{exc}; a rebuild replaces it once told the model{built}: "
                "`vaultsearch index --embeddings SPEC --rebuild`"
            )
            raise SemanticIndexUnavailable(msg) from exc
        logger.warning("Replacing the damaged vector index records %s: %s", path, exc)
        return None, None


def delete_records(path: Path) -> None:
    """Remove a records file and SQLite's files beside it, for a rebuild to start afresh.

    Raises:
        SemanticIndexUnavailable: they cannot be removed.
    """
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            part.unlink(missing_ok=True)
        except OSError as exc:
            msg = f"the vector index records {part} cannot be replaced ({cause(exc)})"
            raise SemanticIndexUnavailable(msg) from exc


def read_only_records(path: Path) -> str:
    """Why read-only records cannot be refreshed, and what would let them."""
    return (
        f"the vector index {path} is read-only: it can be searched, but "
        f"refreshing or rebuilding it needs write access to {path.parent}"
    )


def open_records(path: Path) -> IndexRecords:
    """The records file, or one line saying why it cannot be used and what to do."""
    try:
        return IndexRecords(path)
    except ValueError as exc:
        raise SemanticIndexUnavailable(cause(exc)) from exc
    except OSError as exc:
        msg = (
            f"the vector index records {path} cannot be created ({cause(exc)}): "
            f"{path.parent} must be a folder this process can write"
        )
        raise SemanticIndexUnavailable(msg) from exc


def hold_embedded_clients(path: Path, writer_lock: Path, chroma: Path) -> ClientsLock | None:
    """This process's shared hold on embedded Chroma, or one line saying why it cannot open.

    Raises:
        SemanticIndexBusy: another process is writing the index.
        SemanticIndexUnavailable: the lock cannot be made (a read-only folder).
    """
    try:
        return hold_clients(path, writer_lock)
    except IndexLockedError:
        msg = (
            f"the vector index in {chroma.parent} is being written by {holder(writer_lock)} (e.g. "
            "`vaultsearch index`): semantic search can use it once that finishes, lexical "
            "search is unaffected; processes that search while another indexes need a "
            "Chroma server (chroma_host)"
        )
        raise SemanticIndexBusy(msg) from None
    except OSError as exc:
        if chroma.is_dir() and not os.access(chroma, os.W_OK):
            raise SemanticIndexUnavailable(read_only_chroma(chroma)) from exc
        msg = (
            f"the vector index lock {path} cannot be created ({cause(exc)}): {path.parent} "
            "must be a folder this process can write"
        )
        raise SemanticIndexUnavailable(msg) from exc


def check_writable(records: IndexRecords) -> None:
    """Refuse to write read-only records, in one line.

    Raises:
        SemanticIndexUnavailable: the records were opened read-only.
    """
    if records.read_only:
        raise SemanticIndexUnavailable(read_only_records(records.path))


def recorded_spec(records: IndexRecords | None, model_id: str | None, where: Path) -> str:
    """The spec the records name, for an index opened without a model.

    Args:
        records: the index's records, if it has any.
        model_id: the model they record.
        where: what to delete to start over (the index's folder, or its records file).

    Raises:
        ValueError: there are no records: a new index needs a model.
        SemanticIndexUnavailable: the records name no model (a run that failed before it
            finished, or an older version's), a model no spec can load, or a bad spec.
    """
    if records is None:
        msg = (
            "VaultIndex needs embeddings: an Embeddings object or a spec such as "
            "'huggingface:sentence-transformers/all-MiniLM-L6-v2' or "
            "'openai:text-embedding-3-small'"
        )
        raise ValueError(msg)
    fix = f"run `vaultsearch index --embeddings SPEC --rebuild`, or delete {where}"
    spec = records.get_meta("embedding_spec")
    if model_id is None:
        problem = "records no embedding model (an earlier index run failed)"
    elif spec is None:
        problem = f"was built with {model_id}, a model object no spec names"
        fix = f"pass that model (embeddings=...), or {fix}"
    else:
        try:
            check_spec(spec)
        except ValueError as exc:
            problem = f"records an unusable embedding spec ({exc})"
        else:
            return spec
    msg = f"the vector index in {where} {problem}: {fix}"
    raise SemanticIndexUnavailable(msg)


def first_dimension(model: Embeddings, model_id: str) -> int:
    """Embed one text before anything is written; its vector sets the index's size.

    A model that loads but cannot embed (a wrong API key, no quota, a broken download)
    then leaves no index behind whose every later run would fail.
    """
    try:
        vector = model.embed_query(PROBE_TEXT)
    except Exception as exc:
        msg = (
            f"the embedding model {model_id} cannot embed ({cause(exc)}): nothing was "
            "written; check the model (or its API key and quota) and index again"
        )
        raise SemanticIndexUnavailable(msg) from exc
    return check_vectors([vector], 1, None, model_id)


def chroma_store(
    collection_name: str,
    embeddings: Embeddings,
    *,
    folder: Path | None,
    client: ClientAPI | None,
    host: str | None,
    port: int,
    rebuild: bool,
) -> tuple[VectorStore, Client | None]:
    """Chroma: embedded in `folder`, or on a server (a client, or `host` and `port`).

    Returns:
        The store, and the embedded client the index must close (None for a server).

    Raises:
        SemanticIndexUnavailable: the folder cannot be opened (see `embedded_chroma`), or
            the server cannot be reached.
    """
    from langchain_chroma import Chroma

    options: dict[str, Any] = {
        "collection_name": collection_name,
        "embedding_function": embeddings,
        # Cosine distance: relevance = 1 - distance is the cosine similarity.
        "collection_metadata": {"hnsw:space": "cosine", "hnsw:search_ef": SEARCH_EF},
    }
    if folder is not None:
        return embedded_chroma(folder, options, rebuild)
    try:
        if client is None and host is not None:
            import chromadb

            client = chromadb.HttpClient(host=host, port=port)
        store = Chroma(client=client, **options)
    except Exception as exc:
        where = "the given Chroma client" if host is None else f"the Chroma server {host}:{port}"
        msg = (
            f"cannot open the vector collection {collection_name} on {where} "
            f"({cause(exc)}): check that the server is running and reachable"
        )
        raise SemanticIndexUnavailable(msg) from exc
    widen_search(store)
    return store, None


def widen_search(store: Chroma) -> None:
    """Give a collection made before `SEARCH_EF` (or by someone else) that search breadth.

    A new collection gets it from its metadata; an existing one keeps the configuration it
    was created with, so it is raised here, before the first search loads the index (a
    loaded index keeps the breadth it was loaded with). A collection whose configuration
    cannot be changed (a server that refuses it) is still searched, with its own breadth.
    """
    collection = store._collection
    try:
        hnsw = collection.configuration_json.get("hnsw") or {}
        if hnsw.get("ef_search", SEARCH_EF) < SEARCH_EF:
            collection.modify(configuration={"hnsw": {"ef_search": SEARCH_EF}})
    except Exception as exc:
        logger.warning(
            "the vector collection %s keeps its own search breadth (%s): semantic results "
            "may miss some near neighbours",
            collection.name,
            cause(exc),
        )


def embedded_chroma(
    folder: Path, options: dict[str, Any], rebuild: bool
) -> tuple[VectorStore, Client]:
    """Chroma embedded in `folder`; a damaged folder is replaced on rebuild, else explained.

    Returns:
        The store and its client, which `VaultIndex.close` closes to free the files.

    Raises:
        SemanticIndexUnavailable: the folder is damaged, not a folder, or read-only (Chroma
            writes to open it, even to search).
    """
    problem = refused_folder(folder)
    if problem is None:
        try:
            return open_chroma(folder, options)
        except SemanticIndexUnavailable as exc:  # said in full (a first read that crashed)
            if not rebuild:
                raise
            problem = cause(exc)
        except Exception as exc:
            problem = cause(exc)
    if folder.is_dir() and not os.access(folder, os.W_OK):
        raise SemanticIndexUnavailable(read_only_chroma(folder))
    fix = f"run `vaultsearch index --rebuild`, or delete {folder}"
    if rebuild:
        try:
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder)
            else:
                folder.unlink()
            return open_chroma(folder, options)
        except Exception as exc:
            problem, fix = f"{problem}; then {cause(exc)}", f"delete {folder}"
    msg = f"the vector store {folder} cannot be opened ({problem}): {fix}"
    raise SemanticIndexUnavailable(msg)


def _load(store: Chroma) -> None:
    """Load the collection (its first read), its search breadth raised first (`widen_search`)."""
    widen_search(store)
    store._collection.count()


def read_only_chroma(folder: Path) -> str:
    """Why embedded Chroma in a read-only `folder` cannot be searched, and what to do."""
    return (
        f"the vector store {folder} is read-only, and Chroma writes to open it even to "
        "search: make it writable, or copy the index folder somewhere writable and "
        "open it there (persist_directory)"
    )


def open_chroma(folder: Path, options: dict[str, Any]) -> tuple[VectorStore, Client]:
    """Embedded Chroma in `folder`; on failure nothing of it stays open or cached."""
    import chromadb
    from langchain_chroma import Chroma

    try:
        # Typed as the ClientAPI protocol, which lacks the close() of its class.
        client = cast("Client", chromadb.PersistentClient(path=str(folder)))
    except Exception:
        forget_chroma(folder)
        raise
    try:
        store = Chroma(client=client, **options)
        guarded_first_read(folder, partial(_load, store))
    except Exception:
        client.close()
        raise
    return store, client


def forget_chroma(folder: Path) -> None:
    """Drop what chromadb keeps of a folder it failed to open.

    chromadb caches a folder's system before starting it, so after a failed start every
    later open of that folder in the process fails with an `AttributeError` instead of
    the real cause, and a rebuild could not open the folder it recreated.
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    key = str(folder)
    if key not in SharedSystemClient._identifier_to_refcount:  # no client uses it
        SharedSystemClient._identifier_to_system.pop(key, None)


def missing_paths(*groups: Iterable[Path]) -> list[Path]:
    """The paths, and the folders above them, that do not exist yet, deepest first."""
    found: set[Path] = set()
    for path in (p for group in groups for p in group):
        for candidate in (path, *path.parents):
            if candidate.exists() or candidate.is_symlink():
                break
            found.add(candidate)
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def remove_created(paths: Iterable[Path], tree: Path | None) -> None:
    """Remove what a failed open created (`missing_paths` before it), deepest first.

    Folders go only when empty, since another process (the lexical index) may have
    written into them meanwhile; the Chroma folder `tree` holds only what Chroma wrote.
    """
    for path in paths:
        with contextlib.suppress(OSError):
            if path == tree and path.is_dir():
                shutil.rmtree(path)
            elif path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink()


def collection_name_of(root: Path) -> str:
    """A Chroma collection name of this vault: readable, unique per folder, valid.

    Chroma takes ASCII letters, digits, `.`, `_` and `-` only, so a folder named `笔记库`
    or `Notizen-Ü` keeps only its ASCII letters and digits; the digest of the whole path
    keeps the name unique.
    """
    kept = (ch if ch.isascii() and ch.isalnum() else "-" for ch in root.name.lower())
    stem = "".join(kept)[:40].strip("-")
    digest = hashlib.sha1(str(root).encode(), usedforsecurity=False).hexdigest()[:10]
    return f"vaultsearch-{stem or 'vault'}-{digest}"


def embeddings_id(model: Embeddings) -> str:
    """The identity of a model object no spec names: its class and its model's name."""
    name = next(
        (
            value
            for attr in ("model_name", "model", "size")
            if isinstance(value := getattr(model, attr, None), (str, int))
        ),
        "",
    )
    return f"{type(model).__module__}.{type(model).__qualname__}:{name}"


_MULTILINGUAL_HINTS = (
    "multilingual",
    "labse",
    "bge-m3",
    "e5",
    "openai:",
    "gte-",
    "jina",
    "qwen",
    "text2vec",
    "m3e",
    "chinese",
    "japanese",
    "korean",
)
# A CJK language code as a part of the name: `bge-small-zh-v1.5`, `GLuCoSE-base-ja`,
# `ko-sroberta-multitask` (not the letters inside a word or a user name).
_CJK_LANGUAGE = re.compile(r"(?:^|[-_/.:])(?:zh|cn|ja|jp|ko|kr)(?=$|[-_/.])")


def guess_multilingual(model_id: str) -> bool:
    """Whether a model's name says it reads more than English (CJK queries go to it).

    A Chinese, Japanese or Korean model counts: an index of a CJK vault made with one must
    not skip the very queries it was made for.
    """
    lowered = model_id.lower()
    return any(hint in lowered for hint in _MULTILINGUAL_HINTS) or bool(
        _CJK_LANGUAGE.search(lowered)
    )
