"""KeywordDocumentRetriever: seed 004's keyword document search as a LangChain retriever."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_vaultsearch.chunk_store.analysis import Tokenizer
from langchain_vaultsearch.chunk_store.jsonl_store import (
    JsonlChunkStore,
    StoreProblem,
    check_filters,
)
from langchain_vaultsearch.chunk_store.keyword_file import INDEX_FILE
from langchain_vaultsearch.chunk_store.keyword_index import KeywordHit, KeywordIndex
from langchain_vaultsearch.chunk_store.profile import RetrievalProfile
from langchain_vaultsearch.documents import store_chunk_document
from langchain_vaultsearch.limits import MAX_RESULTS_RANGE, result_limit
from langchain_vaultsearch.search.index_cache import CACHE_FOLDER


class KeywordDocumentRetriever(BaseRetriever):
    """Keyword search (BM25 + TF-IDF, no embeddings) over a folder of JSONL chunks.

    Setup:
        `pip install langchain-vaultsearch`; nothing else (no scikit-learn, no model).
        Chunks are `*.jsonl` lines `{"id", "text", "metadata"}`; `vaultsearch
        export-chunks` writes a vault's chunks in that shape.

    Key init args:
        chunk_dir: the folder of `*.jsonl` files.
        k: chunks per query (1..100); `profile.doc_k` when not given; also per call.
        profile: a `RetrievalProfile` (weights and the three boosts).
        filters: metadata filters every query applies (`{"doc_type": "form"}`; a list
            value accepts any of its values); `invoke(query, filters=...)` adds to them.
        tokenizer: `"unicode"` (the package's tokenizer) or `"whitespace"` (the seed's
            `text.lower().split()`, for parity).
        persist_directory: where the index is saved (default `<chunk_dir>/.vaultsearch`);
            `persist=False` keeps it in memory only.

    Instantiate:
        .. code-block:: python

            from langchain_vaultsearch import KeywordDocumentRetriever
            from langchain_vaultsearch.chunk_store import RetrievalProfile

            retriever = KeywordDocumentRetriever(
                chunk_dir="data/chunks", profile=RetrievalProfile(doc_k=30)
            )

    Usage:
        .. code-block:: python

            docs = retriever.invoke('Form 1040-ES "safe harbor"', filters={"doc_type": "form"})
            docs[0].metadata["explanation"]  # bm25, tfidf, boosts, finalScore

    The index is built on the first query and rebuilt only when a file's mtime or size
    changed; it is saved beside the chunks so the next process loads it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    chunk_dir: str
    k: int | None = Field(
        default=None, ge=MAX_RESULTS_RANGE[0], le=MAX_RESULTS_RANGE[1], strict=True
    )
    profile: RetrievalProfile = Field(default_factory=RetrievalProfile)
    filters: dict[str, Any] | None = None
    tokenizer: Tokenizer = "unicode"
    persist: bool = True
    persist_directory: str | None = None

    _store: JsonlChunkStore = PrivateAttr()
    _index: KeywordIndex | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @field_validator("filters", mode="before")
    @classmethod
    def _valid_filters(cls, value: object) -> dict[str, Any] | None:
        return None if value is None else check_filters(value)  # type: ignore[arg-type]

    @model_validator(mode="after")
    def _open_store(self) -> KeywordDocumentRetriever:
        self._store = JsonlChunkStore(self.chunk_dir)
        return self

    @property
    def index_path(self) -> Path | None:
        """Where the index is saved (None when `persist` is off)."""
        if not self.persist:
            return None
        if self.persist_directory is not None:
            folder = Path(os.path.expanduser(self.persist_directory))
        else:
            folder = self._store.root / CACHE_FOLDER
        return folder / INDEX_FILE

    @property
    def problems(self) -> list[StoreProblem]:
        """Lines skipped when the index was last built (file, line, reason)."""
        return list(self._store.problems)

    def index(self) -> KeywordIndex:
        """The current index: loaded, or built when a file changed since it was saved."""
        with self._lock:
            stamps = self._store.current_stamps()
            if self._index is not None and self._index.stamps == stamps:
                return self._index
            path = self.index_path
            index = None if path is None else KeywordIndex.load(path, stamps, self.tokenizer)
            if index is None:
                index = KeywordIndex.build(self._store, self.tokenizer)
                if path is not None:
                    index.save(path)
            self._index = index
            return index

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[Document]:
        limit = result_limit(k) if k is not None else (self.k or self.profile.doc_k)
        wanted = {**(self.filters or {}), **check_filters(filters)}
        if not query.strip():
            return []
        index = self.index()
        hits = index.search(query, self._store, self.profile, k=limit, filters=wanted)
        if not hits:
            return []
        best = hits[0].final
        return [self._document(index, hit, best) for hit in hits]

    def _document(self, index: KeywordIndex, hit: KeywordHit, best: float) -> Document:
        record = hit.record
        file_mtime_ns = next(m for name, m, _ in index.stamps if name == record.location.file)
        score = hit.final / best if best > 0 else 0.0
        # finalScore is the document's score, as for every retriever; the boosted score
        # it was scaled from (by the best result's) stays beside it for --explain.
        explanation = {
            "bm25": hit.bm25,
            "tfidf": hit.tfidf,
            "baseScore": hit.combined,
            "boosts": dict(hit.boosts),
            "boostedScore": hit.final,
            "bestScore": best,
            "finalScore": score,
        }
        return store_chunk_document(
            record.id,
            record.text,
            record.metadata,
            fallback_path=record.location.file,
            fallback_mtime_ms=file_mtime_ns / 1e6,
            score=score,
            explanation=explanation,
        )
