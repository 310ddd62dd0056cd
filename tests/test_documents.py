"""The metadata contract and the result order shared by every retriever."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

from langchain_core.documents import Document

from langchain_vaultsearch.documents import (
    chunk_document,
    document_score,
    note_document,
    result_order,
)
from langchain_vaultsearch.text.chunking import Chunk
from langchain_vaultsearch.vault.vault import Vault


def _doc(chunk_id: str, score: float) -> Document:
    path = chunk_id.rsplit("#", 1)[0]
    return Document(
        page_content=chunk_id,
        metadata={"path": path, "chunkId": chunk_id, "score": score, "rerank_score": score},
        id=chunk_id,
    )


def test_the_non_transitive_triple_sorts_one_way_from_every_input_order() -> None:
    # X#2 .500, Y#0 .495, X#0 .491: the original's 0.01 same-note window sorted these
    # three ways depending on the input order.
    docs = [_doc("X.md#2", 0.500), _doc("Y.md#0", 0.495), _doc("X.md#0", 0.491)]
    orders = {
        tuple(d.id for d in sorted(perm, key=result_order)) for perm in itertools.permutations(docs)
    }
    assert orders == {("X.md#2", "Y.md#0", "X.md#0")}


def test_order_is_total_and_scores_descend_for_shuffled_inputs() -> None:
    rng = random.Random(7)
    docs = [
        _doc(f"{note}.md#{index}", round(rng.choice([0.2, 0.5, 0.5, 0.9, rng.random()]), 3))
        for note in "abcde"
        for index in range(4)
    ]
    expected = [d.id for d in sorted(docs, key=result_order)]
    for _ in range(50):
        rng.shuffle(docs)
        ordered = sorted(docs, key=result_order)
        assert [d.id for d in ordered] == expected
        scores = [d.metadata["score"] for d in ordered]
        assert scores == sorted(scores, reverse=True)


def test_equal_scores_keep_a_notes_chunks_in_reading_order() -> None:
    docs = [_doc("n.md#10", 0.5), _doc("n.md#2", 0.5), _doc("m.md#0", 0.5)]
    assert [d.id for d in sorted(docs, key=result_order)] == ["m.md#0", "n.md#2", "n.md#10"]


def test_document_score_prefers_rerank_score_and_ignores_non_numbers() -> None:
    assert document_score({"rerank_score": 0.7, "score": 0.2}) == 0.7
    assert document_score({"rerank_score": "high", "score": 0.2}) == 0.2
    assert document_score({"rerank_score": True, "score": float("nan")}) == 0.0
    assert document_score({}) == 0.0


def test_chunk_and_note_documents_carry_the_contract(vault_dir: Path) -> None:
    vault = Vault(vault_dir)
    vault.refresh()
    info = vault.get("Projects/Alpha/Deployment.md")
    assert info is not None
    chunk = Chunk("Projects/Alpha/Deployment.md#1", info.path, 1, "text", "Rollback", info.title)
    doc = chunk_document(info, chunk, score=0.4, source="semantic", engine="vector")
    assert doc.id == "Projects/Alpha/Deployment.md#1"
    assert doc.page_content == "text"
    assert doc.metadata == {
        "path": info.path,
        "title": "Deployment",
        "chunkId": chunk.id,
        "heading": "Rollback",
        "score": 0.4,
        "rerank_score": 0.4,
        "source": "semantic",
        "engine": "vector",
        "includeInContext": True,
        "mtime": info.mtime_ms,
        "ctime": info.ctime_ms,
        "tags": ["#project/alpha", "#ops"],
        "isChunk": True,
        "explanation": {},
    }
    whole = note_document(info, "whole", score=1.0, source="tag-match", engine="filter")
    assert whole.id == info.path
    assert whole.metadata["isChunk"] is False
    assert whole.metadata["isFilterResult"] is True
    assert whole.metadata["matchType"] == "tag-match"
    json.dumps([doc.metadata, whole.metadata])  # values stay JSON-serialisable
