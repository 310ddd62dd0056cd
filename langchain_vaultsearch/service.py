"""VaultSearch: one vault with its indexes, filter and retrievers, behind five verbs.

The terminal (`vaultsearch`) and the MCP server need the same wiring: one shared `Vault`,
the lexical index, the vector index when there is one, the filter, the factory that
picks between them. Each front end used to build that by hand; this object builds it
once, so a front end is an adapter that parses its input and prints or returns what
`search`, `context`, `index`, `status` and `note` give.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever

from langchain_vaultsearch.context.builder import ContextOptions, LocalSearchContext
from langchain_vaultsearch.documents import note_document
from langchain_vaultsearch.expansion.terms import QueryExpanderLike
from langchain_vaultsearch.filters import (
    MAX_DAILY_NOTE_DAYS,
    FilterRetriever,
    note_has_tag,
    note_moment,
)
from langchain_vaultsearch.local_search import DEFAULT_MAX_RESULTS, LocalSearchResult, local_search
from langchain_vaultsearch.query_syntax import tag_filters
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.search.core import RETURN_ALL_LIMIT, result_limit
from langchain_vaultsearch.semantic.index import IndexProgress, RefreshReport, VaultIndex
from langchain_vaultsearch.time_ranges import TimeRange, resolve_time_range
from langchain_vaultsearch.vault.vault import Vault

SearchMode = Literal["auto", "lexical", "semantic", "merged", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("auto", "lexical", "semantic", "merged", "hybrid")


@dataclass(frozen=True)
class IndexSummary:
    """What `VaultSearch.index` did.

    Attributes:
        notes: notes in the lexical index.
        lexical_seconds: time to build (or load) and save the lexical index.
        saved_to: the lexical index file, None when it could not be saved.
        semantic: what the vector index refresh did, None without embeddings.
        semantic_seconds: time the vector refresh took.
    """

    notes: int
    lexical_seconds: float
    saved_to: Path | None
    semantic: RefreshReport | None
    semantic_seconds: float


class VaultSearch:
    """A vault ready to search: lexical always, semantic when an embedding model is known.

    Instantiate:
        .. code-block:: python

            from langchain_vaultsearch.service import VaultSearch

            service = VaultSearch("~/notes", embeddings="openai:text-embedding-3-small")
            service.index()                      # lexical index saved, vectors refreshed
            service.search("speed up slow database lookups", mode="merged")

    The vector index is opened when `embeddings` (or a Chroma server) is given, or when a
    vector index built earlier is found in `<vault>/.vaultsearch/semantic/`: an index
    remembers the model it was built with.
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
        query_expander: QueryExpanderLike | None = None,
        watch: bool = True,
        rebuild: bool = False,
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
            query_expander: an LLM query expander for lexical search.
            watch: watch the folders for changes (a one-shot command passes False).
            rebuild: drop the vector index first (after changing the model).

        Raises:
            ValueError: the folder does not exist, or a bad option.
        """
        self.vault = Vault(vault_path, inclusions=inclusions, exclusions=exclusions, watch=watch)
        self.filter = FilterRetriever(vault=self.vault)
        self.semantic_index: VaultIndex | None = None
        semantic_home = (
            Path(persist_directory)
            if persist_directory is not None
            else self.vault.root / ".vaultsearch" / "semantic"
        )
        wanted = embeddings is not None or chroma_host is not None or rebuild
        if wanted or (semantic_home / "records.sqlite3").exists():
            self.semantic_index = VaultIndex(
                vault=self.vault,
                embeddings=embeddings,
                chroma_host=chroma_host,
                chroma_port=chroma_port,
                persist_directory=persist_directory,
                rebuild=rebuild,
            )
        self.factory = RetrieverFactory(
            vault=self.vault, semantic_index=self.semantic_index, query_expander=query_expander
        )
        self.lexical = self.factory.lexical_retriever

    def retriever(
        self,
        mode: SearchMode = "auto",
        *,
        graph: bool = True,
        recency: bool = True,
        reranker: BaseDocumentCompressor | None = None,
    ) -> BaseRetriever:
        """The retriever of a mode: `auto` is the factory's choice per query.

        Args:
            mode: `auto`, `lexical`, `semantic`, `merged` or `hybrid`.
            graph: `hybrid`: graph neighbours join the results.
            recency: `hybrid`: recency tiers.
            reranker: `hybrid`: a document compressor that re-sorts the top 10.

        Raises:
            ValueError: an unknown mode, or `semantic`/`merged` without a vector index.
        """
        if mode not in SEARCH_MODES:
            msg = f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}"
            raise ValueError(msg)
        if mode == "auto":
            return self.factory
        if mode == "hybrid":
            # Lexical, semantic when there is an index, then the stages; one fusion path.
            return RetrieverFactory(
                vault=self.vault,
                semantic_index=self.semantic_index,
                mode="hybrid",
                graph=graph,
                recency=recency,
                reranker=reranker,
                lexical_side=self.lexical,
            )
        if mode == "lexical":
            return self.lexical
        index = self._index_or_error(mode)
        if mode == "semantic":
            return index.as_retriever()
        return MergedSemanticRetriever(semantic_index=index, lexical_retriever=self.lexical)

    def _index_or_error(self, mode: str) -> VaultIndex:
        if self.semantic_index is None:
            msg = (
                f"{mode} search needs a vector index: build one with `vaultsearch index "
                "--embeddings huggingface:sentence-transformers/all-MiniLM-L6-v2` (or pass "
                "embeddings=...)"
            )
            raise ValueError(msg)
        return self.semantic_index

    def search(
        self,
        query: str,
        *,
        mode: SearchMode = "auto",
        k: int = 10,
        tags: Sequence[str] | None = None,
        time_range: TimeRange | str | None = None,
    ) -> list[Document]:
        """Ranked chunks for a query, optionally of notes with given tags or dates.

        Args:
            query: the query.
            mode: `auto`, `lexical`, `semantic` or `merged`.
            k: results (1..100).
            tags: keep chunks of notes carrying one of these tags or a descendant
                (`project` keeps `#project/alpha`).
            time_range: keep chunks of notes with a date in this range (a `TimeRange` or
                an expression such as "last week"), as the filter reads dates.

        With tags or a range the filters apply to the best 100 chunks, so fewer than `k`
        may come back.

        Raises:
            ValueError: a bad mode, `k` or time expression.
        """
        retriever = self.retriever(mode)
        if not tags and time_range is None:
            return retriever.invoke(query, k=k)
        result_limit(k)
        wanted = frozenset(tag_filters("", [f"#{tag.lstrip('#')}" for tag in tags or ()]))
        window = resolve_time_range(time_range)
        daily = None if window is None else window.last_days(MAX_DAILY_NOTE_DAYS)
        kept = []
        for doc in retriever.invoke(query, k=RETURN_ALL_LIMIT):
            info = self.vault.get(str(doc.metadata.get("path")))
            if info is None or not note_has_tag(info, wanted):
                continue
            if (
                window is not None
                and daily is not None
                and note_moment(info, window, daily) is None
            ):
                continue
            kept.append(doc)
        return kept[:k]

    def tags(self) -> dict[str, int]:
        """Every tag of the searchable notes, with how many notes carry it, most used first."""
        self.vault.refresh()
        counts: dict[str, int] = {}
        for info in self.vault.notes.values():
            if info.searchable:
                for tag in dict.fromkeys(info.parsed.tags):
                    counts[tag] = counts.get(tag, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    def context(
        self,
        question: str,
        *,
        mode: SearchMode = "auto",
        time_range: TimeRange | str | None = None,
        k: int = DEFAULT_MAX_RESULTS,
        options: ContextOptions | None = None,
    ) -> LocalSearchContext:
        """The XML context a chat model would answer the question from, with its sources."""
        return self.local_search(question, mode=mode, time_range=time_range, k=k).build_context(
            options
        )

    def local_search(
        self,
        question: str,
        *,
        mode: SearchMode = "auto",
        time_range: TimeRange | str | None = None,
        k: int = DEFAULT_MAX_RESULTS,
    ) -> LocalSearchResult:
        """Filter documents and search documents for a question (see `local_search`)."""
        return local_search(
            question,
            vault=self.vault,
            filter_retriever=self.filter,
            retriever=self.retriever(mode),
            lexical_retriever=self.lexical,
            time_range=time_range,
            max_results=k,
        )

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
        """
        start = time.perf_counter()
        index = self.lexical.core.index
        index.wait_for_index()
        saved = index.save()
        lexical_seconds = time.perf_counter() - start
        report = None
        start = time.perf_counter()
        if semantic and self.semantic_index is not None:
            report = self.semantic_index.refresh(on_progress=on_progress)
        return IndexSummary(
            notes=index.recall.size,
            lexical_seconds=lexical_seconds,
            saved_to=saved,
            semantic=report,
            semantic_seconds=time.perf_counter() - start,
        )

    def status(self) -> dict[str, Any]:
        """What is indexed: notes, whether the lexical index is ready, the vector index."""
        self.vault.refresh()
        status: dict[str, Any] = {
            "vault": str(self.vault.root),
            "notes": sum(1 for info in self.vault.notes.values() if info.searchable),
            "lexical_index_ready": self.lexical.index_ready,
            "semantic": None,
        }
        index = self.semantic_index
        if index is not None:
            check = index.verify()
            status["semantic"] = {
                "model": index.model_id,
                "collection": index.collection_name,
                "notes_indexed": sum(1 for r in index.records.notes() if r.text_hash),
                "unindexed_notes": len(check.unindexed),
                "missing_vectors": len(check.missing),
                "orphan_vectors": None if check.orphans is None else len(check.orphans),
                "interrupted_notes": len(check.pending),
            }
        return status

    def note(self, path: str) -> Document | None:
        """One note, whole, by its vault-relative path (None when there is no such note)."""
        self.vault.refresh()
        info = self.vault.get(path)
        text = None if info is None else self.vault.read_text(path)
        if info is None or text is None:
            return None
        return note_document(info, text, score=1.0, source="note", engine="vault")

    def close(self) -> None:
        """Stop watching the vault and close the vector index's records."""
        if self.semantic_index is not None:
            self.semantic_index.close()
        self.vault.close()
