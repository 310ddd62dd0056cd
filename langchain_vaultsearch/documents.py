"""The documents every retriever of this package returns: one metadata contract, one order.

Lexical, semantic, merged and filter results all reach the same context builder, merge
and citation code, so they must carry the same keys with the same meanings. Building them
here, and nowhere else, is what keeps a chunk found by embeddings interchangeable with the
same chunk found by words.

The keys are camelCase on purpose: they are the Obsidian Copilot contract, so a context
built from these documents reads the same as the original plugin's.
"""

from __future__ import annotations

import math
from typing import Any, Literal, TypedDict, TypeGuard

from langchain_core.documents import Document

from langchain_vaultsearch.text.chunking import Chunk, chunk_index_from_chunk_id
from langchain_vaultsearch.vault.note_info import NoteInfo

DocumentSource = Literal[
    "lexical",
    "semantic",
    "keyword",
    "graph",
    "title-match",
    "tag-match",
    "time-filtered",
    "note",
]


class VaultDocumentMetadata(TypedDict, total=False):
    """What `Document.metadata` holds for every document of this package.

    Attributes:
        path: vault-relative posix path of the note.
        title: the note's file name without `.md`.
        chunkId: `path#index` for a chunk; absent for a whole note.
        heading: the heading of the chunk's section (`""` when none).
        score: relevance in [0, 1], comparable within one result list.
        rerank_score: the score ranking used last (fusion and reranking write it).
        source: which retriever found it (`lexical`, `semantic`, `title-match`, ...).
        engine: how: `fulltext`, `grep` (recall fallback), `vector`, `filter`, `fusion`.
        includeInContext: whether the chain runner should show it to the model.
        mtime: modification time, epoch milliseconds.
        ctime: creation time, epoch milliseconds.
        tags: the note's tags with `#`.
        isChunk: a chunk (True) or the whole note (False).
        explanation: why it ranked where it did (per engine).
        isFilterResult: set by the orchestration layer: named by the question itself.
        matchType: set by the orchestration layer: how it matched.
    """

    path: str
    title: str
    chunkId: str
    heading: str
    score: float
    rerank_score: float
    source: str
    engine: str
    includeInContext: bool
    mtime: float
    ctime: float
    tags: list[str]
    isChunk: bool
    explanation: dict[str, Any]
    isFilterResult: bool
    matchType: str


def chunk_document(
    info: NoteInfo,
    chunk: Chunk,
    *,
    score: float,
    source: DocumentSource,
    engine: str,
    include_in_context: bool = True,
    explanation: dict[str, Any] | None = None,
) -> Document:
    """One chunk of a note as a `Document` (`id` = the chunk id).

    Args:
        info: the note's current record: `mtime` and `tags` are read from it, never from
            what an index stored, so results stay fresh after an edit.
        chunk: the chunk; its content is the page content.
        score: relevance in [0, 1]; written to `score` and `rerank_score`.
        source: the retriever that found it.
        engine: how it was found.
        include_in_context: whether the chain runner should show it.
        explanation: per-engine reasons for the score.
    """
    metadata: VaultDocumentMetadata = {
        "path": info.path,
        "title": info.title,
        "chunkId": chunk.id,
        "heading": chunk.heading,
        "score": score,
        "rerank_score": score,
        "source": source,
        "engine": engine,
        "includeInContext": include_in_context,
        "mtime": info.mtime_ms,
        "ctime": info.ctime_ms,
        "tags": list(info.parsed.tags),
        "isChunk": True,
        "explanation": explanation or {},
    }
    return Document(page_content=chunk.content, metadata=dict(metadata), id=chunk.id)


def store_chunk_document(
    chunk_id: str,
    text: str,
    store_metadata: dict[str, Any],
    *,
    fallback_path: str,
    fallback_mtime_ms: float,
    score: float,
    explanation: dict[str, Any],
) -> Document:
    """A chunk of a JSONL chunk store (seed 004) as a `Document` (`id` = the chunk id).

    The store's own metadata (`form_number`, `doc_type`, ...) is kept, except keys of this
    contract, which the retriever owns; the contract's keys are taken from the store where
    it has them with the right type (`path`, else the store's `source`; `title`,
    `heading`, `tags`, `mtime`, `ctime`), so chunks exported from a vault come back with
    their note's path and tags, and merge and context treat them like vault chunks.

    Args:
        chunk_id: the chunk's id in the store.
        text: its text (the page content).
        store_metadata: its metadata in the store.
        fallback_path: the path when the store gives none (the chunk's file).
        fallback_mtime_ms: the mtime when the store gives none (the file's).
        score: relevance in [0, 1]; written to `score` and `rerank_score`.
        explanation: bm25, tfidf, the boosts and the final score.
    """
    path = _text_of(store_metadata, "path") or _text_of(store_metadata, "source") or fallback_path
    title = _text_of(store_metadata, "title") or path.rsplit("/", 1)[-1].removesuffix(".md")
    tags = store_metadata.get("tags")
    mtime, ctime = store_metadata.get("mtime"), store_metadata.get("ctime")
    contract: VaultDocumentMetadata = {
        "path": path,
        "title": title,
        "chunkId": chunk_id,
        "heading": _text_of(store_metadata, "heading"),
        "score": score,
        "rerank_score": score,
        "source": "keyword",
        "engine": "keyword",
        "includeInContext": True,
        "mtime": float(mtime) if is_number(mtime) else fallback_mtime_ms,
        "ctime": float(ctime) if is_number(ctime) else fallback_mtime_ms,
        "tags": [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
        "isChunk": True,
        "explanation": explanation,
    }
    reserved = VaultDocumentMetadata.__annotations__
    own = {k: v for k, v in store_metadata.items() if k not in reserved}
    return Document(page_content=text, metadata={**own, **contract}, id=chunk_id)


def _text_of(metadata: dict[str, Any], key: str) -> str:
    value = metadata.get(key)
    return value if isinstance(value, str) else ""


def note_document(
    info: NoteInfo, text: str, *, score: float, source: DocumentSource, engine: str
) -> Document:
    """A whole note as a `Document` (`id` = the note path), e.g. a filter match.

    Whole notes are what the question named, so they are always `includeInContext`, and
    they carry `isFilterResult`/`matchType` themselves so that any context built from them
    shows them as `<filterResults>`, merged by `local_search` or not.
    """
    metadata: VaultDocumentMetadata = {
        "path": info.path,
        "title": info.title,
        "score": score,
        "rerank_score": score,
        "source": source,
        "engine": engine,
        "includeInContext": True,
        "mtime": info.mtime_ms,
        "ctime": info.ctime_ms,
        "tags": list(info.parsed.tags),
        "isChunk": False,
        "isFilterResult": True,
        "matchType": source,
    }
    return Document(page_content=text, metadata=dict(metadata), id=info.path)


def document_score(meta: dict[str, Any]) -> float:
    """A document's relevance: `rerank_score`, else `score`, else 0 (non-numbers ignored).

    One rule for fusion, the relevance header, the sources and the one-chunk-per-note
    choice, so they never disagree about which document scored higher.
    """
    for key in ("rerank_score", "score"):
        value = meta.get(key)
        if is_number(value) and math.isfinite(value):
            return float(value)
    return 0.0


def rescored(doc: Document, score: float, **metadata: Any) -> Document:  # noqa: ANN401
    """A copy of a document with a new `score` and `rerank_score` (inputs stay unchanged).

    Both keys change together: `document_score` reads `rerank_score` first, so a stage
    that moved only `score` would be ignored by every later one. So does
    `explanation["finalScore"]`, which is the document's score for every retriever
    (`--explain` prints it): a fused result kept the lexical side's there.
    """
    updated = {**doc.metadata, **metadata, "score": score, "rerank_score": score}
    explanation = updated.get("explanation")
    if isinstance(explanation, dict):
        updated["explanation"] = {**explanation, "finalScore": score}
    return Document(page_content=doc.page_content, metadata=updated, id=doc.id)


def lexical_matches(doc: Document) -> list[dict[str, Any]]:
    """What a lexical result matched: each term, its field, and whether it was a typo's.

    Read from `explanation["lexicalMatches"]`; a document of any other retriever has none.
    """
    explanation = doc.metadata.get("explanation")
    found = explanation.get("lexicalMatches") if isinstance(explanation, dict) else None
    if not isinstance(found, list):
        return []
    return [match for match in found if isinstance(match, dict)]


def is_number(value: object) -> TypeGuard[float]:
    """True for ints and floats, not for bools (which JSON and Python both allow)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def result_order(doc: Document) -> tuple[float, str, int, str]:
    """Sort key of a result list: best score first, then note path, then reading order.

    A total order, so the same documents come out in the same order whatever order they
    went in. The original kept chunks of one note within 0.01 of each other in reading
    order with a pairwise rule; that rule is not transitive (three documents could sort
    three ways) and put lower scores above higher ones, which the fused lists' "scores
    descend" invariant forbids. Equal scores still keep a note's chunks in reading order.
    """
    meta = doc.metadata
    path = meta.get("path")
    chunk_id = meta.get("chunkId")
    index = chunk_index_from_chunk_id(chunk_id) if isinstance(chunk_id, str) else None
    return (
        -document_score(meta),
        path if isinstance(path, str) else "",
        -1 if index is None else index,
        doc.id or "",
    )
