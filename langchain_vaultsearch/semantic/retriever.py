"""VaultSemanticRetriever: a `VaultIndex` as a LangChain retriever.

Documents are the same chunks, with the same ids and metadata, as the lexical
retriever's: only `source` ("semantic"), `engine` ("vector") and the score differ, so
fusion can dedupe on chunk ids and the context builder cannot tell them apart. Text,
`mtime` and `tags` are read from the vault at query time, never from what the store
kept, so a result is never staler than the note.
"""

from __future__ import annotations

import asyncio
import logging

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from langchain_vaultsearch.documents import chunk_document
from langchain_vaultsearch.limits import (
    clamp_query,
    result_count_field,
    result_limit,
)
from langchain_vaultsearch.query_plan import note_mentions
from langchain_vaultsearch.semantic.errors import SEMANTIC_SEARCH, failures_as_unavailable
from langchain_vaultsearch.semantic.index import IndexProgress, VaultIndex
from langchain_vaultsearch.text.chunking import note_path_from_chunk_id
from langchain_vaultsearch.text.tokenize import tokenize_mixed

logger = logging.getLogger(__name__)


class VaultSemanticRetriever(BaseRetriever):
    """Search a vault by meaning: the chunks whose embeddings are nearest the query's.

    Setup:
        `pip install "langchain-vaultsearch[chroma,local]"`; build the index once with
        `vaultsearch index --vault PATH --embeddings SPEC` or `VaultIndex(...).refresh()`.

    Key init args:
        index: the `VaultIndex` to search.
        k: results per query (1..100); also `invoke(query, k=5)`.
        min_similarity_score: cosine similarity a chunk needs (0..1).

    Instantiate:
        .. code-block:: python

            retriever = VaultIndex(vault_path="~/notes", embeddings=model).as_retriever(k=10)

    Usage:
        .. code-block:: python

            docs = retriever.invoke("speed up slow database lookups")

    Chunks of notes the query names as `[[Note]]` come first with score 1.0. A query
    written mostly in a script the model does not read (CJK with an English-only model)
    returns no vector matches rather than random ones.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    index: VaultIndex = Field(exclude=True, repr=False)
    """The vector index."""
    k: int = result_count_field()
    """Results per query."""
    min_similarity_score: float = Field(default=0.1, ge=0.0, le=1.0)
    """Cosine similarity a chunk needs to be returned."""
    refresh: bool = True
    """Catch up with vault edits before each query (`VaultIndex.ensure_fresh`); off, the
    notes are still read once, at the first query of a process that never read them."""
    concept_terms: int = Field(default=0, ge=0, le=10)
    """Terms of the vault's concept vocabulary nearest the query that extend it (0: off)."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        query, limit = self._prepared(query, k)
        if not query:
            return []
        with failures_as_unavailable(SEMANTIC_SEARCH):
            if self.refresh:
                self.index.ensure_fresh()
            else:
                self._read_notes_once()
            if not self.index.covers(query):
                return self._documents(query, [], limit)
            searched = self._with_concepts(query)
            return self._documents(query, self.index.search(searched, limit), limit)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        query, limit = self._prepared(query, k)
        if not query:
            return []
        with failures_as_unavailable(SEMANTIC_SEARCH):
            if self.refresh:
                await asyncio.to_thread(self.index.ensure_fresh)
            else:
                await asyncio.to_thread(self._read_notes_once)
            if not self.index.covers(query):
                return await asyncio.to_thread(self._documents, query, [], limit)
            searched = await asyncio.to_thread(self._with_concepts, query)
            hits = await self.index.asearch(searched, limit)
            return await asyncio.to_thread(self._documents, query, hits, limit)

    def model_words(self, query: str) -> str:
        """What the embedding model is asked for a query: the query as every part reads it."""
        return clamp_query(query)

    def _read_notes_once(self) -> None:
        """Read the vault's notes if this process never has, even with `refresh` off.

        Results are built from the note records: a process that opened a saved index
        without reading the vault found hits and dropped them all, answering nothing.
        """
        if self.index.vault.version == 0:
            self.index.vault.refresh()

    def _with_concepts(self, query: str) -> str:
        """The query, extended by the vault's terms nearest it (seed 002 §6.4.1)."""
        if not self.concept_terms:
            return query
        vector = self.index.cached_embeddings.embed_query(query)
        own = tokenize_mixed(query)
        nearest = self.index.concepts().nearest(vector, self.concept_terms, exclude=own)
        return f"{query} {' '.join(nearest)}" if nearest else query

    def _prepared(self, query: str, k: int | None) -> tuple[str, int]:
        """The query as every part reads it (`clamp_query`), and the result count."""
        return clamp_query(query), self.k if k is None else result_limit(k)

    def _documents(self, query: str, hits: list[tuple[str, float]], limit: int) -> list[Document]:
        documents: list[Document] = []
        seen_ids: set[str] = set()
        seen_texts: set[str] = set()

        def add(chunk_id: str, score: float, explanation: dict[str, object]) -> None:
            info = self.index.vault.get(note_path_from_chunk_id(chunk_id))
            chunk = None if info is None else self.index.chunks.get_chunk(chunk_id, info)
            if info is None or chunk is None or not chunk.content:
                return  # deleted or shortened since it was embedded
            if chunk.id in seen_ids or chunk.content in seen_texts:
                return
            seen_ids.add(chunk.id)
            seen_texts.add(chunk.content)
            documents.append(
                chunk_document(
                    info,
                    chunk,
                    score=score,
                    source="semantic",
                    engine="vector",
                    explanation=dict(explanation),
                )
            )

        vault = self.index.vault
        for name in note_mentions(query):
            path = vault.link_graph().resolve(name)
            info = None if path is None else vault.get(path)
            if info is not None:
                for chunk in self.index.chunks.chunks_for(info):
                    add(chunk.chunk.id, 1.0, {"mentioned": True})
        for chunk_id, similarity in hits:
            if similarity >= self.min_similarity_score:
                add(chunk_id, similarity, {"similarity": similarity})
        if not hits and not self.index.covers(query):
            logger.debug("Query %r is in a script the embedding model does not read", query)
        return with_index_progress(documents[:limit], self.index.progress)


def with_index_progress(docs: list[Document], progress: IndexProgress | None) -> list[Document]:
    """The documents, each saying how far the vector index is while it is being written.

    A result list made while a first index is embedded covers only the notes embedded so
    far; `metadata["vectorIndexProgress"]` (texts and notes done of their totals) says so,
    so a caller (or a model reading the context) knows the list may grow.
    """
    if progress is None:
        return docs
    stamp = {
        "textsDone": progress.texts_done,
        "textsTotal": progress.texts_total,
        "notesDone": progress.notes_done,
        "notesTotal": progress.notes_total,
    }
    return [
        Document(
            page_content=doc.page_content,
            metadata={**doc.metadata, "vectorIndexProgress": stamp},
            id=doc.id,
        )
        for doc in docs
    ]
