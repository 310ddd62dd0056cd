"""Similarity search over any LangChain vector store, as chunk ids and scores in [0, 1].

Stores return distances or similarities, on scales of their own, one row per embedded
window; the index wants the best window of each chunk as a similarity. This is the
translation, kept apart from the index's bookkeeping.
"""

from __future__ import annotations

import warnings

from langchain_core.documents import Document
from langchain_core.vectorstores import VectorStore


def fetch_k(k: int) -> int:
    """Windows to fetch for k chunks: long chunks hold several windows."""
    return min(max(3 * k, 20), 300)


def similarity(store: VectorStore, query: str, k: int) -> list[tuple[Document, float]]:
    """The `k` windows nearest the query, each with its similarity in [0, 1]."""
    hits = store.similarity_search_with_score(query, k=k)
    return _relevance(store, hits)


async def asimilarity(store: VectorStore, query: str, k: int) -> list[tuple[Document, float]]:
    """Async twin of `similarity` (the store's own async path, or its executor)."""
    hits = await store.asimilarity_search_with_score(query, k=k)
    return _relevance(store, hits)


def _relevance(
    store: VectorStore, hits: list[tuple[Document, float]]
) -> list[tuple[Document, float]]:
    """Scores as similarities in [0, 1], whatever the store returns.

    Stores return distances or similarities; the store's own relevance function says
    which. A store without one (the in-memory store) returns cosine similarity.
    """
    try:
        to_relevance = store._select_relevance_score_fn()
    except NotImplementedError:

        def to_relevance(score: float) -> float:
            return score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [(doc, min(1.0, max(0.0, float(to_relevance(score))))) for doc, score in hits]


def best_per_chunk(hits: list[tuple[Document, float]], k: int) -> list[tuple[str, float]]:
    """A chunk scores as its best window: `(chunk id, similarity)`, best first, at most k."""
    best: dict[str, float] = {}
    for doc, score in hits:
        chunk_id = doc.metadata.get("chunkId")
        if isinstance(chunk_id, str) and score > best.get(chunk_id, -1.0):
            best[chunk_id] = score
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:k]
