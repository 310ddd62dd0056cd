"""VaultIndex: the vault's chunks as vectors, kept in step with the vault.

The vector index follows the same `Vault` as the lexical index, through its own
`ChangeFeed`, and cuts notes with the same chunker, so a chunk id means the same chunk on
both sides and fusion can dedupe on it. What it adds is what embedding costs demand:

- **Incremental and honest.** Each note's chunk texts are hashed; a refresh embeds only
  notes whose hash changed, and only texts the records' cache has not embedded before
  (a rename or a move embeds nothing). Deleted notes' vectors are deleted.
- **Crash-safe.** Ids about to be written are recorded as pending first and cleared only
  with the finished record, so a killed refresh is repaired by the next one (see
  `records.IndexRecords`). One writer process at a time holds an `flock` on a lock file;
  the kernel drops it when that process dies, so a stale lock cannot block anyone.
- **One process per embedded store.** Embedded Chroma writes its files even to read, so
  a process holds it (shared, see `lock.ClientsLock`) while its client is open, and a
  writer holds it alone: a process that opens it while another writes gets a
  `SemanticIndexBusy` line (lexical search goes on), and a refresh waits for other
  processes' searches to close it. A Chroma server is shared by design and needs none
  of this.
- **Never mixed.** The embedding model's identity is stored; another model is refused
  with the command that rebuilds.
- **Optional.** A new index embeds one text before it writes anything, so a model that
  cannot load or embed leaves the vault as it was; an existing index loads its model
  only when it first embeds. Whatever stops it opening (records naming no model, a
  damaged or read-only store, a model that will not load) is one
  `SemanticIndexUnavailable` line with the fix, and lexical search goes on without it.
- **Fresh.** `ensure_fresh()`, called before each semantic query, embeds a handful of
  changed notes inline and hands larger changes to a background thread while lexical
  search covers them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_vaultsearch.search.chunk_cache import ChunkCache
from langchain_vaultsearch.semantic.cached_embeddings import (
    CachedEmbeddings,
)
from langchain_vaultsearch.semantic.concepts import ConceptVocabulary, vocabulary_key
from langchain_vaultsearch.semantic.embeddings import (
    check_spec,
    load_embeddings,
    model_identity,
    require_extra,
    spec_of,
)
from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable, cause
from langchain_vaultsearch.semantic.lock import (
    ClientsLock,
    IndexLockedError,
    lock_file,
)
from langchain_vaultsearch.semantic.records import holds_records
from langchain_vaultsearch.semantic.reports import IndexProgress, RefreshReport, VerifyReport
from langchain_vaultsearch.semantic.store_search import (
    asimilarity,
    best_per_chunk,
    fetch_k,
    similarity,
)
from langchain_vaultsearch.semantic.store_setup import (
    check_writable,
    chroma_store,
    collection_name_of,
    delete_records,
    embeddings_id,
    existing_records,
    first_dimension,
    guess_multilingual,
    hold_embedded_clients,
    missing_paths,
    open_records,
    read_only_records,
    recorded_spec,
    remove_created,
)
from langchain_vaultsearch.semantic.vector_writer import VectorWriter
from langchain_vaultsearch.semantic.windows import (
    WINDOW_CHARS,
    WINDOW_OVERLAP,
    check_window_options,
)
from langchain_vaultsearch.text.tokenize import CJK_RUN
from langchain_vaultsearch.vault.vault import Vault

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.client import Client

    from langchain_vaultsearch.semantic.retriever import VaultSemanticRetriever

logger = logging.getLogger(__name__)

INLINE_REFRESH_NOTES = 8
"""Changed notes a query waits for; more are embedded in the background."""
READERS_WAIT_S = 10.0
"""How long a refresh waits for other processes (a search) to close embedded Chroma."""
CLOSE_WAIT_S = 30.0
"""How long `close` waits for the batch a write is in (a local model: a few seconds)."""
_CHUNK_CACHE_BYTES = 16 * 1024 * 1024
_catching_up: weakref.WeakSet[VaultIndex] = weakref.WeakSet()
"""Indexes that started a background catch-up: closed when the interpreter exits."""
_READS_CJK = "reads_cjk"
"""The records' setting that says whether the model reads CJK (`yes` or `no`)."""
_COLLECTION = "collection"
"""The records' setting naming the collection of a vault's own embedded store."""


class EmbeddingModelMismatchError(ValueError):
    """The index was built with another embedding model."""


class VaultIndex:
    """The vault's chunks embedded with any LangChain `Embeddings` in any `VectorStore`.

    Setup:
        `pip install "langchain-vaultsearch[chroma,local]"` for the default store and a
        local model (or `[chroma,openai]`).

    Instantiate:
        .. code-block:: python

            from langchain_vaultsearch import VaultIndex

            index = VaultIndex(
                vault_path="~/notes",
                embeddings="huggingface:sentence-transformers/all-MiniLM-L6-v2",
            )
            index.refresh()  # embeds what is new or changed
            retriever = index.as_retriever(k=10)

    Stores: by default Chroma, embedded, persisted in `<vault>/.vaultsearch/semantic/`
    (`persist_directory` moves it); `chroma_host`/`chroma_port` or `chroma_client` use a
    Chroma server, which is what several processes sharing one index need (embedded
    Chroma is thread-safe but not process-safe, so processes take turns: see the module
    docstring); `vectorstore` takes any LangChain store that accepts ids, or a function
    building one from the index's (caching) embeddings.

    What is written, and how it is checked, is `VectorWriter`'s; opening a store's parts is
    `store_setup`'s. The class stays near 500 lines because its constructor is one
    sequence on purpose: records, locks, model and store open in an order that lets a
    failed open remove exactly what it created, and splitting it would spread that order
    over several places.
    """

    def __init__(  # noqa: PLR0915 - one validation step per option
        self,
        vault_path: str | os.PathLike[str] | None = None,
        *,
        vault: Vault | None = None,
        embeddings: Embeddings | str | None = None,
        embedding_id: str | None = None,
        persist_directory: str | os.PathLike[str] | None = None,
        vectorstore: VectorStore | Callable[[Embeddings], VectorStore] | None = None,
        chroma_client: ClientAPI | None = None,
        chroma_host: str | None = None,
        chroma_port: int = 8000,
        collection_name: str | None = None,
        records_path: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        requests_per_minute: float | None = None,
        window_chars: int = WINDOW_CHARS,
        window_overlap: int = WINDOW_OVERLAP,
        multilingual: bool | None = None,
        inline_refresh_notes: int = INLINE_REFRESH_NOTES,
        catch_up_in_background: bool = True,
        rebuild: bool = False,
    ) -> None:
        """Open (or create) the vector index of a vault.

        Args:
            vault_path: the vault folder; or pass a shared `vault`.
            vault: a `Vault` shared with the lexical retriever and the filter.
            embeddings: the model, or a spec (`huggingface:NAME_OR_FOLDER`,
                `openai:MODEL`, `fake:SIZE`); None reuses the spec the index was built
                with.
            embedding_id: the model's identity in the records; derived from the spec or
                the model's class and name when omitted.
            persist_directory: where embedded Chroma and the records live.
            vectorstore: any LangChain vector store that accepts ids, instead of Chroma;
                or a function that builds one from an `Embeddings`, which is better: the
                store then embeds through the index's cache, so renames embed nothing.
            chroma_client: a `chromadb` client (e.g. `chromadb.HttpClient(...)`).
            chroma_host: a Chroma server's host (with `chroma_port`).
            chroma_port: the Chroma server's port.
            collection_name: the Chroma collection; one per vault by default.
            records_path: the records file; next to the store by default.
            batch_size: texts per embedding call (and per progress report: at a local
                model's ~5 texts a second on two cores, 64 moves the bar every ~13 s).
            requests_per_minute: cap on embedding calls a minute (paid APIs).
            window_chars: body characters per embedded window.
            window_overlap: characters consecutive windows share.
            multilingual: whether the model reads CJK text. A query with a CJK character
                skips a model that does not. None: the choice recorded with the index, else a
                guess from the model's name (`guess_multilingual`); a choice given is
                recorded, so later opens (a CLI search, the MCP server) keep it.
            inline_refresh_notes: changed notes a query waits for before searching.
            catch_up_in_background: embed more changed notes than that in a thread (a
                server, a notebook). False for a process that ends after its query (a
                one-shot command): a query embeds the first `inline_refresh_notes` of them
                and leaves the rest to the next, as a thread would be cut short at exit.
            rebuild: drop every vector and record first (e.g. after changing the model).

        Raises:
            ValueError: bad options, a bad spec, no vault, or no model for a new index.
            EmbeddingModelMismatchError: the index was built with another model.
            MissingExtraError: the default store's or the model's extra is not installed
                (the message names the pip command).
            SemanticIndexUnavailable: the model cannot load or embed, or the records or the
                store cannot be opened (damaged, read-only, unreachable, recording no
                model); one line with the fix. A failed open of a new index leaves nothing
                on disk. `SemanticIndexBusy` when another process is writing embedded Chroma.
            IndexLockedError: this open writes (a new index, a rebuild) while another
                process writes the index or has embedded Chroma open.
        """
        if vault is None:
            if vault_path is None:
                msg = "VaultIndex needs vault_path or vault"
                raise ValueError(msg)
            vault = Vault(vault_path)
        if batch_size < 1 or inline_refresh_notes < 0:
            msg = "batch_size must be >= 1 and inline_refresh_notes >= 0"
            raise ValueError(msg)
        check_window_options(window_chars, window_overlap)
        if isinstance(embeddings, str):
            check_spec(embeddings)
        elif embeddings is not None and not isinstance(embeddings, Embeddings):
            kind = type(embeddings).__name__
            msg = f"embeddings must be an Embeddings or a spec string, got {kind}"
            raise ValueError(msg)
        if vectorstore is None:
            require_extra("langchain_chroma", "chroma")  # before a model loads for nothing
        self.vault = vault
        self.inline_refresh_notes = inline_refresh_notes
        self.catch_up_in_background = catch_up_in_background
        home = (
            Path(os.path.expanduser(os.fspath(persist_directory)))
            if persist_directory is not None
            else vault.root / ".vaultsearch" / "semantic"
        )
        self.collection_name = collection_name or collection_name_of(vault.root)
        remote = chroma_client is not None or chroma_host is not None
        if records_path is not None:
            path = Path(os.path.expanduser(os.fspath(records_path)))
        elif vectorstore is not None or remote:
            where = "custom" if vectorstore is not None else f"chroma-{chroma_host or 'client'}"
            path = home / f"records-{where}-{self.collection_name}.sqlite3"
        else:
            path = home / "records.sqlite3"
        self._lock_path = path.with_suffix(".lock")
        clients_path = path.with_name(f"{path.stem}-clients.lock")
        self._concepts_path = path.with_name(f"{path.stem}-concepts.npz")
        self._concepts: ConceptVocabulary | None = None
        self._concepts_lock = threading.Lock()
        chroma_folder = None if vectorstore is not None or remote else home / "chroma"
        self._own_store = chroma_folder is not None and collection_name is None
        self._files = [path] if chroma_folder is None else [path, chroma_folder]
        """What a user deleting the index folder under a running process removes."""
        self._identities: list[tuple[int, int]] = []
        """Those files' (device, inode) once open: a folder deleted and made again by
        another process is not this index's any more."""
        records, stored = existing_records(
            path, rebuild=rebuild, model_given=embeddings is not None
        )
        # What this open may create, to be removed if it fails: the vault stays as it was.
        created = missing_paths(
            [chroma_folder] if chroma_folder is not None else [],
            [] if records is not None else [path, self._lock_path, clients_path],
        )
        self._chroma_client: Client | None = None
        """The embedded Chroma client this index opened, and closes."""
        self._clients: ClientsLock | None = None
        """This process's shared hold on embedded Chroma while its client is open."""
        self._write_lock = threading.Lock()
        self._background: threading.Thread | None = None
        self._closing = threading.Event()
        """Set by `close`: writes in this process end after the batch they are in, and the
        index is not used again."""
        owned = False  # whether this open holds the writer: only then may it remove files
        writing = contextlib.ExitStack()
        try:
            if embeddings is None:
                # The index's own folder, or just the records when they live elsewhere.
                disposable = home if path.parent == home else path
                embeddings = recorded_spec(records, stored, disposable)
            if chroma_folder is not None:
                self._clients = hold_embedded_clients(clients_path, self._lock_path, chroma_folder)
            if rebuild or stored is None:
                # This open writes (it records a model, or drops every vector): as the
                # writer, so no other process opens a store being made or emptied.
                if records is not None:
                    check_writable(records)
                elif path.exists() and not os.access(path.parent, os.W_OK):
                    raise SemanticIndexUnavailable(read_only_records(path))
                writing.enter_context(self._exclusive())
                owned = True
                if records is None and holds_records(path) and not rebuild:
                    records = open_records(path)  # made by another process meanwhile
                    created = [p for p in created if not p.exists()]
                stored = None if records is None else records.get_meta("model")
            model: Embeddings | Callable[[], Embeddings]
            if isinstance(embeddings, str):
                self._spec: str | None = embeddings
                model = functools.partial(load_embeddings, embeddings)
            else:
                self._spec, model = spec_of(embeddings), embeddings
            object_id = "" if isinstance(embeddings, str) else embeddings_id(embeddings)
            if embedding_id:
                self.model_id = embedding_id
            elif self._spec is None:
                self.model_id = object_id
            elif stored is not None and stored in (self._spec, object_id):
                # Built before identities were the model's own (its id was the spec), or
                # from this object before `load_embeddings` named its spec.
                self.model_id = stored
            else:
                self.model_id = model_identity(self._spec)
            if not rebuild and stored is not None and stored != self.model_id:
                msg = (
                    f"This vector index was built with {stored!r}, not {self.model_id!r}; "
                    "vectors of two models cannot be compared. Rebuild it with "
                    "VaultIndex(..., rebuild=True) or `vaultsearch index --rebuild`, or pass "
                    "the original model."
                )
                raise EmbeddingModelMismatchError(msg)
            dimension = None
            if rebuild or stored is None:  # a model is about to be recorded: it must work
                model = model if isinstance(model, Embeddings) else model()
                dimension = first_dimension(model, self.model_id)
            if records is None:
                if path.exists():
                    # Only now that the model works: a damaged file a rebuild replaces,
                    # or a 0-byte one, which holds nothing.
                    delete_records(path)
                records = open_records(path)
            self.records = records
            if self._own_store:
                # The store travels with the vault: a vault moved or copied keeps finding
                # its vectors under the name they were written with, not its new path's.
                self.collection_name = records.get_meta(_COLLECTION) or self.collection_name
            self.cached_embeddings = CachedEmbeddings(
                model,
                self.records,
                self.model_id,
                batch_size=batch_size,
                requests_per_minute=requests_per_minute,
            )
            if vectorstore is None:
                self.store, self._chroma_client = chroma_store(
                    self.collection_name,
                    self.cached_embeddings,
                    folder=chroma_folder,
                    client=chroma_client,
                    host=chroma_host,
                    port=chroma_port,
                    rebuild=rebuild,
                )
            elif isinstance(vectorstore, VectorStore):
                self.store = vectorstore
            else:
                self.store = vectorstore(self.cached_embeddings)
            self.writer = VectorWriter(
                vault=vault,
                records=self.records,
                store=self.store,
                cached_embeddings=self.cached_embeddings,
                window_chars=window_chars,
                window_overlap=window_overlap,
            )
            # Results show chunks; only the concept vocabulary needs their terms.
            self.chunks = ChunkCache(vault, budget_bytes=_CHUNK_CACHE_BYTES, terms=False)
            if rebuild:
                self._clear()
            elif stored is None:  # new records, or records of a run that never finished
                self.records.clear()
                self._record_model()
            else:
                self._record_collection()  # records made before the name was recorded
            if dimension is not None:
                self.cached_embeddings.record_dimension(dimension)
            self.multilingual = self._reads_cjk(multilingual)
        except BaseException:
            if records is not None:
                records.close()
            if self._chroma_client is not None:
                self._chroma_client.close()
            if owned:  # else another process may be making these very files
                remove_created(created, chroma_folder)
            writing.close()  # the writer goes before the shared hold it was taken from
            if self._clients is not None:
                self._clients.close()
            raise
        writing.close()
        self._identities = [_identity(path) for path in self._files]

    @property
    def embeddings(self) -> Embeddings:
        """The embedding model, loaded by its first use: opening an index does not load it."""
        return self.cached_embeddings.embeddings

    # ------------------------------------------------------------------ setup

    def _record_model(self) -> None:
        """Record this index's model: later opens find it, and refuse any other."""
        self.records.set_meta("model", self.model_id)
        if self._spec is not None:
            self.records.set_meta("embedding_spec", self._spec)
        self._record_collection()

    def _record_collection(self) -> None:
        """Record the collection of the vault's own embedded store, which a move keeps."""
        if (
            self._own_store
            and not self.records.read_only
            and self.records.get_meta(_COLLECTION) is None
        ):
            self.records.set_meta(_COLLECTION, self.collection_name)

    def _reads_cjk(self, given: bool | None) -> bool:
        """Whether the model reads CJK: as given (and recorded), as recorded, or guessed.

        Recorded beside the model, so a user who said once that a model the name does not
        give away reads Chinese (`--multilingual`) is not silently answered lexically by
        the next command; a rebuild, which records the model afresh, forgets it.
        """
        stored = self.records.get_meta(_READS_CJK)
        if given is None:
            return stored == "yes" if stored in ("yes", "no") else guess_multilingual(self.model_id)
        wanted = "yes" if given else "no"
        if stored != wanted and not self.records.read_only:
            self.records.set_meta(_READS_CJK, wanted)
        return given

    def clear(self) -> None:
        """Delete every vector this index wrote, its records and its cached embeddings.

        The index stays this model's, and keeps whether the model reads CJK. A Chroma
        collection is recreated instead, since it keeps the dimension of the first vectors
        it stored and a new model's would be refused. The cache and the concept vocabulary
        built from it go too: a rebuild is how bad vectors from a broken model are got rid
        of.

        Raises:
            IndexLockedError: another process is writing this index, or has embedded Chroma
                open for longer than `READERS_WAIT_S`.
            SemanticIndexUnavailable: the index is read-only.
        """
        with self._writer():
            kept = self.records.get_meta(_READS_CJK)
            self._clear()
            if kept is not None:
                self.records.set_meta(_READS_CJK, kept)

    def _clear(self) -> None:
        """`clear`, for a caller that holds the writer (a rebuilding open)."""
        reset = getattr(self.store, "reset_collection", None)
        if callable(reset):
            reset()
        else:
            ids = [i for r in self.records.notes() for i in (*r.vector_ids, *r.pending_ids)]
            self.writer.delete(ids)
        self.records.clear()
        self._record_model()
        with self._concepts_lock:
            self._concepts_path.unlink(missing_ok=True)
            self._concepts = None
        self.writer.restart()

    # ------------------------------------------------------------------ writing

    def refresh(self, on_progress: Callable[[IndexProgress], None] | None = None) -> RefreshReport:
        """Embed what is new or changed in the vault and delete what is gone.

        Args:
            on_progress: called after each batch with where the refresh is.

        Returns:
            What was added, updated, removed and embedded; `stopped` when `close`, from
            another thread, ended it after a batch.

        Raises:
            IndexLockedError: another process is writing this index, or has embedded Chroma
                open for longer than `READERS_WAIT_S` (a server, say).
        """
        self._raise_if_unusable()
        if self._background is not None:
            self._background.join()
        with self._writer():
            return self.writer.write(self.writer.pull(), on_progress, self._closing)

    async def arefresh(
        self, on_progress: Callable[[IndexProgress], None] | None = None
    ) -> RefreshReport:
        """Async `refresh`, in a worker thread so the event loop keeps serving meanwhile.

        A thread, not the model's `aembed_documents`: the records, the lock and most
        stores are synchronous, and a local model computes on the CPU either way.

        Args:
            on_progress: called after each batch (from the worker thread).

        Returns:
            What was added, updated, removed and embedded.

        Raises:
            IndexLockedError: another process is writing this index.
        """
        return await asyncio.to_thread(self.refresh, on_progress)

    def ensure_fresh(self) -> RefreshReport | None:
        """Catch up with edits before a query, without making the query wait long.

        A few changed notes are embedded now; more are embedded in a background thread
        (searches meanwhile see the previous vectors, and lexical search sees the edits),
        or, without `catch_up_in_background`, left to the next query after the first few.
        Nothing is written, and the log says why, while another thread or process is
        writing, or while another process has embedded Chroma open (a process must not
        write a store another one reads).

        Returns:
            What was done, or None when a writer was busy, the store was open elsewhere,
            or the index is read-only.
        """
        self._raise_if_unusable()
        if self.records.read_only:
            self.vault.refresh()  # results are built from the vault's notes: see them
            return None
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(self._writer(blocking=False))
            except IndexLockedError as exc:
                logger.info("Vector index not refreshed before this query: %s", exc)
                # Another writer (a `vaultsearch index`, another thread) has the vectors;
                # this process must still see the notes it builds results from, or a
                # semantic search in a fresh process finds hits and drops them all.
                self.vault.refresh()
                return None
            pending = self.writer.pull()
            if len(pending.updated) <= self.inline_refresh_notes:
                return self.writer.write(pending, None)
            if not self.catch_up_in_background:
                return self.writer.write(pending, None, limit=self.inline_refresh_notes)
            writer = stack.pop_all()  # the background thread releases the writer

        def run() -> None:
            with writer:
                try:
                    self.writer.write(pending, None, self._closing)
                except Exception as exc:  # one line, as every semantic failure; resumed later
                    logger.warning(
                        "Background embedding of %s failed (%s); the next refresh resumes it",
                        self.vault.root,
                        cause(exc),
                    )
                    logger.debug("Background embedding failed", exc_info=exc)

        self._background = threading.Thread(target=run, name="vaultsearch-embed", daemon=True)
        _catching_up.add(self)
        self._background.start()
        return RefreshReport(background=True)

    @property
    def progress(self) -> IndexProgress | None:
        """Where a write this process runs is (a refresh, a background catch-up), else None.

        Searches meanwhile use the vectors already written: a first index of a large vault
        is searchable, partly, from its first batch on.
        """
        return self.writer.progress

    @property
    def notes_unembedded(self) -> int:
        """Searchable notes the store holds no finished vectors of: semantic search misses them.

        New notes a background catch-up has not reached, or a one-shot command left to the
        next, or a store emptied behind the records' back: results that leave notes out
        look complete, so a one-shot command says how many. Cheap, as it reads only the
        records (a changed note's previous vectors count as embedded).
        """
        hashes = self.records.hashes()
        return sum(1 for path in self.vault.searchable_paths() if not hashes.get(path))

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background refresh; True when none is running any more."""
        background = self._background
        if background is not None:
            background.join(timeout)
            return not background.is_alive()
        return True

    @contextlib.contextmanager
    def _writer(self, blocking: bool = True) -> Iterator[None]:
        """This thread and process as the only writer, on records that can be written."""
        check_writable(self.records)
        with self._exclusive(blocking):
            yield

    @contextlib.contextmanager
    def _exclusive(self, blocking: bool = True) -> Iterator[None]:
        """The writer lock, then embedded Chroma to this process alone (kernel-freed `flock`s).

        Args:
            blocking: wait for this process's other writing thread, and up to
                `READERS_WAIT_S` for other processes to close embedded Chroma; False gives
                up at once (a query's refresh).
        """
        if not self._write_lock.acquire(blocking=blocking):
            msg = "another thread is writing this vector index"
            raise IndexLockedError(msg)
        try:
            with lock_file(self._lock_path), contextlib.ExitStack() as alone:
                if self._clients is not None:  # released first: the writer lock guards it
                    alone.enter_context(self._clients.exclusive(READERS_WAIT_S if blocking else 0))
                yield
        finally:
            self._write_lock.release()

    def _raise_if_unusable(self) -> None:
        """A clear error when the index was closed, or its files deleted under this process.

        Open handles keep an unlinked SQLite file readable, so nothing else notices: status
        went on reporting a healthy index, and the first write failed on "attempt to write
        a readonly database", until the process was restarted. A closed index raised
        whatever its closed files raised.

        Raises:
            SemanticIndexUnavailable: the index is closed, or the records file or the
                embedded store's folder is gone or was made again by another process.
        """
        if self._closing.is_set():
            msg = "the vector index was closed: open it again"
            raise SemanticIndexUnavailable(msg)
        for path, known in zip(self._files, self._identities, strict=False):
            if _identity(path) != known:  # gone, or made again by another process
                msg = (
                    f"the vector index's {path} was deleted while this process had it open:"
                    " restart it (`vaultsearch index` builds the index again)"
                )
                raise SemanticIndexUnavailable(msg)

    def verify(self) -> VerifyReport:
        """Compare vault, records and store: what is missing, orphaned or not indexed."""
        self._raise_if_unusable()
        return self.writer.verify()

    # ------------------------------------------------------------------ reading

    def covers(self, query: str) -> bool:
        """Whether the model can read the query: an English-only model cannot read CJK.

        A query with any CJK character is left to lexical search: the model would rank by
        the Latin words it can read alone, which are often not what the question is about
        ("import a Notion 数据库"), or return neighbours of nothing ("睡 觉"). A query of
        no letter or digit at all (only punctuation) has nothing for any model to read.
        """
        if not any(ch.isalnum() for ch in query):
            return False
        return self.multilingual or CJK_RUN.search(query) is None

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Chunk ids most similar to the query, best window per chunk, similarity in [0, 1].

        Args:
            query: the query text.
            k: chunks wanted (more windows are fetched, as a chunk may have several).
        """
        self._raise_if_unusable()
        hits = similarity(self.store, query, fetch_k(k))
        return best_per_chunk(hits, k)

    async def asearch(self, query: str, k: int) -> list[tuple[str, float]]:
        """Async twin of `search`."""
        self._raise_if_unusable()
        hits = await asimilarity(self.store, query, fetch_k(k))
        return best_per_chunk(hits, k)

    def concepts(self) -> ConceptVocabulary:
        """The vault's concept vocabulary, current for what is indexed now.

        Loaded from beside the records, else built (a term already embedded once costs
        nothing); a refresh that changed notes makes the next call rebuild it.
        """
        key = vocabulary_key(self.model_id, self.records.hashes().items())
        with self._concepts_lock:
            if self._concepts is not None and self._concepts.key == key:
                return self._concepts
            loaded = ConceptVocabulary.load(self._concepts_path, key)
            if loaded is None:
                vault = self.vault
                vault.refresh(keep_text=False)
                # One pass over every note: nothing worth keeping, so nothing is cached.
                tokenized = ChunkCache(vault, budget_bytes=0)
                notes = (
                    frozenset(t for c in tokenized.chunks_for(info) for t in c.terms["body"])
                    for info in list(vault.notes.values())
                    if info.searchable
                )
                loaded = ConceptVocabulary.build(notes, self.cached_embeddings, key)
                loaded.save(self._concepts_path)
            self._concepts = loaded
            return loaded

    def as_retriever(self, **kwargs: Any) -> VaultSemanticRetriever:  # noqa: ANN401
        """This index as a LangChain retriever (`VaultSemanticRetriever`).

        Args:
            **kwargs: the retriever's fields (`k`, `min_similarity_score`, ...).
        """
        from langchain_vaultsearch.semantic.retriever import VaultSemanticRetriever

        return VaultSemanticRetriever(index=self, **kwargs)

    def close(self) -> None:
        """Stop writes after their batch, then close the records and embedded Chroma.

        Other processes may write embedded Chroma only once its client here is closed. A
        catch-up is not waited for to its end (a server stopped after many edits would
        outlive its clients by minutes), nor left running: an embedding thread killed at
        interpreter exit aborts the process and leaves its batch half-written. What it did
        not reach, the next refresh writes. Used after this, the index says it is closed.
        """
        if self._closing.is_set():
            return
        self._closing.set()
        # A refresh in another thread (a server's) ends after its batch too. A batch that
        # does not end in time (a model that hangs) keeps the files it writes: closing them
        # under it would fail its write, and the process ends either way.
        if not self.wait(CLOSE_WAIT_S) or not self._write_lock.acquire(timeout=CLOSE_WAIT_S):
            logger.warning(
                "Closing the vector index of %s while a write goes on (over %g s); the next"
                " refresh repairs what it leaves half-written",
                self.vault.root,
                CLOSE_WAIT_S,
            )
            return
        try:
            self.records.close()
            if self._chroma_client is not None:
                self._chroma_client.close()
            if self._clients is not None:
                self._clients.close()
        finally:
            self._write_lock.release()


@atexit.register
def _close_at_exit() -> None:
    """Close the indexes a catch-up may still be writing: it stops after its batch.

    A script that searched a vault once and ended left the catch-up's thread inside the
    model as the interpreter finalized: "terminate called without an active exception",
    exit 134, and a batch half-written.
    """
    for index in list(_catching_up):
        index.close()


def _identity(path: Path) -> tuple[int, int]:
    """A file's (device, inode); (0, 0) when it is gone."""
    try:
        stat = path.stat()
    except OSError:
        return (0, 0)
    return (stat.st_dev, stat.st_ino)
