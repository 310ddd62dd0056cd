"""VaultSearch: one vault with its indexes, filter and retrievers: the one pipeline.

The terminal (`vaultsearch`), the MCP server and the notebooks need the same wiring: one
shared `Vault`, the lexical index, the vector index when there is one, the filter, the
factory that picks between them. This object builds it once, so a front end is an
adapter that parses its input and prints or returns what `search`, `local_search`,
`context`, `qa_chain`, `index`, `status` and `note` give, and the same question gets
the same documents and the same period filter through every front.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import LanguageModelInput
from langchain_core.prompts import BasePromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable

from langchain_vaultsearch.cancellation import in_daemon_thread, raise_if_cancelled
from langchain_vaultsearch.chunk_store.export import ExportReport, export_vault_chunks
from langchain_vaultsearch.context.builder import ContextOptions, LocalSearchContext
from langchain_vaultsearch.documents import note_document
from langchain_vaultsearch.expansion.terms import QueryExpanderLike
from langchain_vaultsearch.filters import FilterRetriever, note_matches
from langchain_vaultsearch.limits import DEFAULT_K, DEFAULT_SHOWN_K, RETURN_ALL_LIMIT, clamp_query
from langchain_vaultsearch.local_search import (
    LocalSearchResult,
    SearchRetrievers,
    plan_for,
    run_plan,
)
from langchain_vaultsearch.qa_chain import create_vault_context_chain, create_vault_qa_chain
from langchain_vaultsearch.query_plan import (
    SEARCH_MODES,
    Available,
    QueryPlan,
    SearchMode,
    plan_query,
    tag_filters,
)
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.search.index_cache import CACHE_FOLDER
from langchain_vaultsearch.semantic.deadline import SEMANTIC_TIMEOUT_S
from langchain_vaultsearch.semantic.errors import SemanticIndexTimeout
from langchain_vaultsearch.semantic.index import IndexProgress, RefreshReport, VaultIndex
from langchain_vaultsearch.semantic.records import holds_records
from langchain_vaultsearch.time_ranges import TimeRange, resolve_time_range
from langchain_vaultsearch.vault.vault import Vault

__all__ = ["HybridOptions", "IndexSummary", "VaultSearch"]

logger = logging.getLogger(__name__)

SEMANTIC_RETRY_S = 30.0
"""Seconds before a vector index that failed to open is tried again."""


@dataclass(frozen=True)
class IndexSummary:
    """What `VaultSearch.index` did.

    Attributes:
        notes: notes in the lexical index.
        lexical_seconds: time to build (or load) and save the lexical index.
        saved_to: the lexical index file, None when it could not be saved.
        semantic: what the vector index refresh did, None without embeddings.
        semantic_seconds: time the vector refresh took.
        semantic_problem: why the vector index was not refreshed, in one line (None when
            it was, or when there is none).
    """

    notes: int
    lexical_seconds: float
    saved_to: Path | None
    semantic: RefreshReport | None
    semantic_seconds: float
    semantic_problem: str | None = None


@dataclass(frozen=True)
class HybridOptions:
    """The stages `hybrid` mode runs after fusion (see `RetrieverFactory`)."""

    graph: bool = True
    recency: bool = True
    reranker: BaseDocumentCompressor | None = None


@runtime_checkable
class _AsksModel(Protocol):
    """A retriever that can say what its embedding model is asked (None: nothing)."""

    def model_words(self, query: str) -> str | None: ...


class VaultSearch:
    """A vault ready to search: lexical always, semantic when an embedding model is known.

    The one pipeline every front calls: the CLI, the MCP server and the notebooks open a
    `VaultSearch` and ask it; each question is planned once (`query_plan.plan_query`).

    Instantiate:
        .. code-block:: python

            from langchain_vaultsearch import VaultSearch

            service = VaultSearch("~/notes", embeddings="openai:text-embedding-3-small")
            service.index()                      # lexical index saved, vectors refreshed
            service.search("speed up slow database lookups", mode="merged")

    The vector index is used when `embeddings` (or a Chroma server) is given, or when a
    vector index built earlier is found in `<vault>/.vaultsearch/semantic/`: an index
    remembers the model it was built with. It is opened when a search first needs it,
    so lexical search never waits for a model; and it is optional: if it cannot be
    opened (a missing extra, a model that does not load, a damaged store), lexical search
    goes on, `semantic_problem` and `status()` say why in one line, and only the
    semantic modes and `index()` report the failure.

    Near 450 lines because it is the facade: one short method per thing a front does
    (search, context, local search, chains, index, status, a note, tags), each handing on
    to the part that does it. Split, a front would have to know which part to ask.
    """

    def __init__(
        self,
        vault_path: str | os.PathLike[str],
        *,
        inclusions: Sequence[str] | str | None = None,
        exclusions: Sequence[str] | str | None = None,
        embeddings: Embeddings | str | None = None,
        chroma_host: str | None = None,
        chroma_port: int = 8000,
        persist_directory: str | os.PathLike[str] | None = None,
        multilingual: bool | None = None,
        query_expander: QueryExpanderLike | None = None,
        watch: bool = True,
        catch_up_in_background: bool = True,
        rebuild: bool = False,
        graph: bool = True,
        recency: bool = True,
        reranker: BaseDocumentCompressor | None = None,
    ) -> None:
        """Open a vault.

        Args:
            vault_path: the vault folder.
            inclusions: rules a note must match one of to be searched.
            exclusions: rules that leave notes out.
            embeddings: an embedding model or spec; enables semantic and merged search.
            chroma_host: a Chroma server for the vectors (with `chroma_port`).
            chroma_port: the Chroma server's port.
            persist_directory: where embedded Chroma and the vector records live.
            multilingual: whether the model reads CJK text (`VaultIndex`): None keeps the
                index's recorded choice, else guesses from the model's name.
            query_expander: an LLM query expander for lexical search.
            watch: watch the folders for changes (a one-shot command passes False).
            catch_up_in_background: embed many changed notes in a thread while queries
                answer (`VaultIndex`); a one-shot command passes False, as its exit would
                cut the thread short, and embeds a few before each query instead.
            rebuild: drop the vector index first (after changing the model).
            graph: `hybrid`: graph neighbours join the results.
            recency: `hybrid`: recency tiers.
            reranker: `hybrid`: a document compressor that re-sorts the top 10.

        Raises:
            ValueError: the folder does not exist, or a bad option.
        """
        self.vault = Vault(vault_path, inclusions=inclusions, exclusions=exclusions, watch=watch)
        # The rules hold for mentions too: an MCP client's [[Private/diary]] is refused.
        self.filter = FilterRetriever(vault=self.vault, mentions_override_rules=False)
        self.lexical = TieredLexicalRetriever(vault=self.vault, query_expander=query_expander)
        self._hybrid = HybridOptions(graph=graph, recency=recency, reranker=reranker)
        self._semantic_options: dict[str, Any] = {
            "embeddings": embeddings,
            "chroma_host": chroma_host,
            "chroma_port": chroma_port,
            "persist_directory": persist_directory,
            "multilingual": multilingual,
            "catch_up_in_background": catch_up_in_background,
            "rebuild": rebuild,
        }
        home = (
            Path(persist_directory)
            if persist_directory is not None
            else self.vault.root / CACHE_FOLDER / "semantic"
        )
        wanted = embeddings is not None or chroma_host is not None or rebuild
        self._semantic_wanted = wanted or holds_records(home / "records.sqlite3")
        self._semantic: VaultIndex | None = None
        self._semantic_error: Exception | None = None
        self._failed_at = -math.inf
        self._opening: Future[VaultIndex] | None = None
        self._opening_ends = -math.inf
        self._retrievers: dict[SearchMode, BaseRetriever] = {"lexical": self.lexical}
        self._lock = threading.RLock()
        self._closed = False
        self.last_index: IndexSummary | None = None
        """What the last `index_in_background` run ended with (None before one ends)."""

    @property
    def _vault_tags(self) -> Available:
        """What a plan may know before the vector index opens: the tags notes carry."""
        return Available(tag_carried=self.vault.tag_catalog.carried)

    @property
    def uses_vectors(self) -> bool:
        """Whether a vector index is given (a model, a Chroma server) or already on disk."""
        return self._semantic_wanted

    @property
    def semantic_index(self) -> VaultIndex | None:
        """The vector index, opened on first use; None without one or when it failed.

        A failed open is tried again after `SEMANTIC_RETRY_S`: a long-running server
        whose index was being written by another process, or was repaired meanwhile,
        gets semantic search back without a restart. The open runs in a thread of its
        own, and callers wait for it until `SEMANTIC_TIMEOUT_S` after it started: a
        Chroma server that accepts connections and never answers would otherwise hold
        every search, lexical ones too, for good. One still running past that is not
        started again; its index is taken when it ends.
        """
        with self._lock:
            retry = time.monotonic() - self._failed_at >= SEMANTIC_RETRY_S
            opens = self._semantic is None and self._opening is None and not self._closed
            if self._semantic_wanted and opens and retry:
                opened = partial(VaultIndex, vault=self.vault, **self._semantic_options)
                self._opening = in_daemon_thread(opened, name="vaultsearch-open")
                self._opening_ends = time.monotonic() + SEMANTIC_TIMEOUT_S
            opening, ends = self._opening, self._opening_ends
        if opening is not None:
            self._settle(opening, ends)
        return self._semantic

    def _settle(self, opening: Future[VaultIndex], ends: float) -> None:
        """Take the open's index or error, waiting for it at most until `ends`."""
        try:
            index = opening.result(max(ends - time.monotonic(), 0.0))
        except FutureTimeout:
            with self._lock:
                first = not isinstance(self._semantic_error, SemanticIndexTimeout)
                self._semantic_error = SemanticIndexTimeout(
                    f"the vector index did not open within {SEMANTIC_TIMEOUT_S:g} s (a Chroma "
                    "server that does not answer?); searching lexically until it does"
                )
            if first:  # said once, not at every search while the open is stuck
                logger.warning("Semantic search is off for now: %s", self.semantic_problem)
            return
        except Exception as exc:  # optional: any failure leaves lexical search working
            with self._lock:
                if self._opening is opening:
                    self._opening = None
                    self._semantic_error = exc
                    self._failed_at = time.monotonic()
                    logger.warning("Semantic search is off: %s", self.semantic_problem)
            return
        with self._lock:
            if self._opening is opening:
                self._opening = None
                self._semantic = index
                self._semantic_error = None

    @property
    def semantic_problem(self) -> str | None:
        """Why the vector index could not be opened, in one line (None: no failure)."""
        error = self._semantic_error
        if error is None:
            return None
        text = " ".join(str(error).split()) or type(error).__name__
        return text if len(text) <= 500 else text[:499] + "…"

    @property
    def notes_unembedded(self) -> int:
        """Searchable notes the vector index holds no vectors of yet (see `VaultIndex`).

        0 before the index is opened: asking never opens it (a lexical search must not pay
        for that). 0 too when the records cannot be read: the search that came first has
        already said why semantic search failed, and a count must not fail a command.
        """
        index = self._semantic
        if index is None:
            return 0
        try:
            return index.notes_unembedded
        except Exception as exc:  # damaged records: said by the search itself
            logger.debug("Cannot count the notes without vectors: %s", exc)
            return 0

    def model_skips(self, query: str, mode: SearchMode = "auto") -> bool:
        """Whether the open vector index's model cannot read the query, so skips it.

        An English-only model and a Chinese, Japanese or Korean query (`VaultIndex.covers`),
        read as the search of `mode` gives it to the model (a carried `#tag` left out, one
        no note carries as its word); False when that search asks the model nothing, and
        before the index is opened, as `notes_unembedded` is: asking never opens it.
        """
        index = self._semantic
        if index is None or mode == "lexical":
            return False
        retriever = self._retriever_for(self.plan(query, mode=mode))
        words = retriever.model_words(query) if isinstance(retriever, _AsksModel) else None
        return words is not None and not index.covers(words)

    @property
    def factory(self) -> RetrieverFactory:
        """The `auto` retriever: merged search when the vector index opens, else lexical."""
        return cast(RetrieverFactory, self.retriever("auto"))

    def retriever(self, mode: SearchMode = "auto") -> BaseRetriever:
        """The retriever of a mode, made once: `auto` is the query plan's choice per query.

        Args:
            mode: `auto`, `lexical`, `semantic`, `merged` or `hybrid`.

        Raises:
            ValueError: an unknown mode, or `semantic`/`merged` without a vector index.
        """
        if mode not in SEARCH_MODES:
            msg = f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}"
            raise ValueError(msg)
        # Outside the lock: waiting for the index to open must not hold lexical searches.
        index = None if mode == "lexical" else self.semantic_index
        with self._lock:
            made = self._retrievers.get(mode)
            stale = (
                isinstance(made, RetrieverFactory)
                and made.semantic_index is None
                and index is not None
            )
            if made is None or stale:  # a factory made while the vector index was off
                made = self._retrievers[mode] = self._make(mode)
            return made

    def _make(self, mode: SearchMode) -> BaseRetriever:
        if mode == "auto":
            return RetrieverFactory(
                vault=self.vault, semantic_index=self.semantic_index, lexical_side=self.lexical
            )
        if mode == "hybrid":
            # Lexical, semantic when there is an index, then the stages.
            return RetrieverFactory(
                vault=self.vault,
                semantic_index=self.semantic_index,
                lexical_side=self.lexical,
                mode="hybrid",
                graph=self._hybrid.graph,
                recency=self._hybrid.recency,
                reranker=self._hybrid.reranker,
            )
        index = self._index_or_error(mode)
        if mode == "semantic":
            return index.as_retriever()
        return MergedSemanticRetriever(semantic_index=index, lexical_retriever=self.lexical)

    def _index_or_error(self, mode: str) -> VaultIndex:
        index = self.semantic_index
        if index is not None:
            return index
        if self.semantic_problem is not None:
            msg = f"{mode} search is off: {self.semantic_problem}"
        else:
            msg = (
                f"{mode} search needs a vector index: build one with `vaultsearch index "
                "--embeddings huggingface:sentence-transformers/all-MiniLM-L6-v2` (or pass "
                "embeddings=...)"
            )
        raise ValueError(msg)

    def plan(self, query: str, *, mode: SearchMode = "auto", k: int = DEFAULT_K) -> QueryPlan:
        """What a search of `query` would read from it and run, without running it."""
        if mode == "auto":
            return self.factory.plan(query, k=k)
        return plan_query(query, k=k, mode=mode, available=self._vault_tags)

    def search(
        self,
        query: str,
        *,
        mode: SearchMode = "auto",
        k: int = DEFAULT_SHOWN_K,
        tags: Sequence[str] | None = None,
        time_range: TimeRange | str | None = None,
    ) -> list[Document]:
        """Ranked chunks for a query, optionally of notes with given tags or dates.

        Args:
            query: the query.
            mode: `auto`, `lexical`, `semantic`, `merged` or `hybrid`.
            k: results (1..100).
            tags: keep chunks of notes carrying one of these tags or a descendant
                (`project` keeps `#project/alpha`).
            time_range: keep chunks of notes with a date in this range (a `TimeRange` or
                an expression such as "last week"), as the filter reads dates.

        With tags or a range the filters apply to the best 100 chunks, so fewer than `k`
        may come back.

        Raises:
            ValueError: a blank query (it matches nothing, whatever the vault holds: the
                notes of a tag or period are `local_search`'s), a bad mode, `k`, tag
                (a blank one would filter nothing out) or time expression.
        """
        if not query.strip():
            msg = "the query is empty: give words, [[note]] names or #tags"
            raise ValueError(msg)
        plan = plan_query(query, k=k, mode=mode, available=self._vault_tags)
        retriever = self._retriever_for(plan)
        raise_if_cancelled()
        if not tags and time_range is None:
            return retriever.invoke(query, k=k)
        # A tag as the query's tags are read: an input method's full-width # (U+FF03) is `#`.
        read: list[str] = []
        for given in tags or ():
            filters = tag_filters("", [f"#{clamp_query(given).lstrip('#')}"])
            if not filters:  # "" or "#": it would filter nothing out
                msg = f"not a tag: {given!r} (a tag is a word such as project or #project/alpha)"
                raise ValueError(msg)
            read.extend(filters)
        wanted = frozenset(read)
        window = resolve_time_range(time_range)
        kept = [
            doc
            for doc in retriever.invoke(query, k=RETURN_ALL_LIMIT)
            if note_matches(self.vault.get(str(doc.metadata.get("path"))), wanted, window)
        ]
        return kept[:k]

    def tags(self) -> dict[str, int]:
        """Every tag of the searchable notes, with how many notes carry it, most used first."""
        return self.vault.tag_catalog.counts()

    def context(
        self,
        question: str,
        *,
        mode: SearchMode = "auto",
        time_range: TimeRange | str | None = None,
        k: int = DEFAULT_K,
        options: ContextOptions | None = None,
    ) -> LocalSearchContext:
        """The XML context a chat model would answer the question from, with its sources."""
        found = self.local_search(question, mode=mode, time_range=time_range, k=k)
        raise_if_cancelled()
        return found.build_context(options)

    def local_search(
        self,
        question: str,
        *,
        mode: SearchMode = "auto",
        time_range: TimeRange | str | None = None,
        k: int = DEFAULT_K,
    ) -> LocalSearchResult:
        """Filter documents and search documents for a question (see `local_search`).

        The period is `time_range`, else the one the question names ("last week").
        """
        plan = plan_query(
            question,
            k=k,
            mode=mode,
            available=self._vault_tags,
            time_range=time_range,
            filtering=True,
        )
        retrievers = SearchRetrievers(self.filter, self._retriever_for(plan), self.lexical)
        if not plan.decided_by_query:
            # Planned before the vector index was opened, a carried tag's question read
            # as lexical; the retriever chosen knows what it searches with.
            plan = plan_for(question, retrievers, time_range=time_range, k=k)
        return run_plan(plan, retrievers)

    def _retriever_for(self, plan: QueryPlan) -> BaseRetriever:
        """The retriever of a plan's mode; lexical when the query alone routes `auto` there.

        A given period or an asked mode decides the route whatever the vault has, so
        such a query never waits for the vector index (or its model) to open.
        """
        if plan.decided_by_query and plan.route in ("lexical", "filter-only"):
            return self.lexical
        return self.retriever(plan.route if plan.decided_by_query else "auto")  # type: ignore[arg-type]

    def context_chain(
        self,
        *,
        mode: SearchMode = "auto",
        k: int = DEFAULT_K,
        context_options: ContextOptions | None = None,
    ) -> Runnable[Any, dict[str, Any]]:
        """`create_vault_context_chain` over this vault's retrievers (see there)."""
        return create_vault_context_chain(
            **self._search_retrievers(mode), k=k, context_options=context_options
        )

    def qa_chain(
        self,
        llm: Runnable[LanguageModelInput, Any],
        *,
        mode: SearchMode = "auto",
        k: int = DEFAULT_K,
        context_options: ContextOptions | None = None,
        prompt: BasePromptTemplate | None = None,
    ) -> Runnable[Any, dict[str, Any]]:
        """`create_vault_qa_chain` over this vault's retrievers (see there)."""
        return create_vault_qa_chain(
            llm=llm,
            **self._search_retrievers(mode),
            k=k,
            context_options=context_options,
            prompt=prompt,
        )

    def _search_retrievers(self, mode: SearchMode) -> dict[str, Any]:
        return {
            "filter_retriever": self.filter,
            "retriever": self.retriever(mode),
            "lexical_retriever": self.lexical,
        }

    def index(
        self,
        *,
        semantic: bool = True,
        on_progress: Callable[[IndexProgress], None] | None = None,
    ) -> IndexSummary:
        """Build and save the lexical index, and refresh the vector index when there is one.

        Args:
            semantic: also refresh the vector index (when one is configured).
            on_progress: progress of the vector refresh.

        The lexical index is saved whatever the vector side does; a vector index that
        cannot be opened or refreshed (a missing extra, a model that does not load or
        fails midway, another model's index, a damaged store, another process writing)
        is `semantic_problem`, one line, and the refresh can be run again: it is
        crash-safe and resumes where it stopped.
        """
        start = time.perf_counter()
        saved = self.lexical.save_index()
        lexical_seconds = time.perf_counter() - start
        report = None
        problem = None
        start = time.perf_counter()
        if semantic and self._semantic_wanted:
            vectors = self.semantic_index
            problem = self.semantic_problem if vectors is None else None
            if vectors is not None:
                try:
                    report = vectors.refresh(on_progress=on_progress)
                except Exception as exc:  # the semantic side may fail; lexical was saved
                    problem = " ".join(str(exc).split()) or type(exc).__name__
        return IndexSummary(
            notes=self.lexical.indexed_notes,
            lexical_seconds=lexical_seconds,
            saved_to=saved,
            semantic=report,
            semantic_seconds=time.perf_counter() - start,
            semantic_problem=problem,
        )

    def index_in_background(
        self, *, on_progress: Callable[[IndexProgress], None] | None = None
    ) -> threading.Thread:
        """Run `index()` in a thread and return at once.

        Searches meanwhile answer at once: lexically, and merged with the vectors written
        so far (each result's `vectorIndexProgress` says how far the index is, and so does
        `status()`). A stopped run resumes where it stopped on the next `index()`. What the
        run ends with is `last_index`.

        Args:
            on_progress: progress of the vector refresh (called from the thread).
        """

        def run() -> None:
            try:
                self.last_index = self.index(on_progress=on_progress)
            except Exception:  # the lexical side failing too: logged, searches go on
                logger.exception("Indexing %s in the background failed", self.vault.root)

        thread = threading.Thread(target=run, name="vaultsearch-index", daemon=True)
        thread.start()
        return thread

    def status(self) -> dict[str, Any]:
        """What is indexed: notes, whether the lexical index is ready, the vector index."""
        self.vault.refresh()
        status: dict[str, Any] = {
            "vault": str(self.vault.root),
            "notes": len(self.vault.searchable_paths()),
            "lexical_index_ready": self.lexical.index_ready,
            "semantic": None,
        }
        index = self.semantic_index
        if self.semantic_problem is not None:
            status["semantic"] = {"error": self.semantic_problem}
        if index is None:
            return status
        try:
            check = index.verify()
        except Exception as exc:  # a damaged store is reported, not raised
            status["semantic"] = {"model": index.model_id, "error": " ".join(str(exc).split())}
            return status
        status["semantic"] = {
            "model": index.model_id,
            "reads_cjk": index.multilingual,
            "collection": index.collection_name,
            "notes_indexed": sum(1 for r in index.records.notes() if r.text_hash),
            "unindexed_notes": len(check.unindexed),
            "missing_vectors": len(check.missing),
            "orphan_vectors": None if check.orphans is None else len(check.orphans),
            "interrupted_notes": len(check.pending),
        }
        progress = index.progress
        if progress is not None:  # a write in this process: searches use what it wrote
            status["semantic"]["indexing"] = {
                "notes_done": progress.notes_done,
                "notes_total": progress.notes_total,
                "texts_done": progress.texts_done,
                "texts_total": progress.texts_total,
            }
        return status

    def export_chunks(self, out_dir: str | os.PathLike[str]) -> ExportReport:
        """Write the searchable notes' chunks as a JSONL chunk store (see `export_vault_chunks`).

        The same notes and chunks search sees, so keyword search over the store and vault
        search agree on what a chunk is.
        """
        return export_vault_chunks(self.vault, out_dir)

    def note(self, path: str) -> Document | None:
        """One note, whole, by its vault-relative path (None when there is no such note).

        A note the inclusion and exclusion rules leave out is not there: what search
        cannot show, reading cannot either.

        Raises:
            ValueError: the note is over the vault's note size limit (neither searched nor
                read), which "no such note" would hide.
        """
        self.vault.refresh()
        info = self.vault.get(path)
        if info is None and self.vault.reader.skipped_for_size(path):
            limit = self.vault.reader.max_note_bytes / (1024 * 1024)
            msg = f"{path!r} is over the {limit:g} MB note limit: it is neither searched nor read"
            raise ValueError(msg)
        text = None if info is None or not info.searchable else self.vault.reader.read_text(path)
        if info is None or text is None:
            return None
        return note_document(info, text, score=1.0, source="note", engine="vault")

    def close(self) -> None:
        """Stop watching the vault and close the vector index's records.

        Writes to the vector index end after their batch (`VaultIndex.close`), and none
        opens it again: a server's background index that reaches the vectors after this
        would write them all and hold the store from other processes.
        """
        with self._lock:
            self._closed = True
        opening = self._opening
        if opening is not None:  # an open still running closes what it opens when it ends
            opening.add_done_callback(_close_opened)
        if self._semantic is not None:
            self._semantic.close()
        self.vault.close()


def _close_opened(opening: Future[VaultIndex]) -> None:
    if opening.exception() is None:
        opening.result().close()
