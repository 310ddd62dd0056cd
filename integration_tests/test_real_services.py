"""The real parts under the semantic side, on their own: the model, embedded Chroma, a server.

These prove the fixtures and the extras work before any vault code is involved, so a failure
in `test_semantic_real.py` can be told apart from a broken install or a server that is down.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import chromadb
import pytest
from chromadb.errors import NotFoundError
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from integration_tests.conftest import ChromaServer

PARAPHRASE = "speed up slow database lookups"
POSTGRES = "A B-tree index on the filtered column makes PostgreSQL queries fast."
UNRELATED = "Water the tomato plants every morning before it gets hot."

DOCUMENTS = {
    "postgres": POSTGRES,
    "garden": UNRELATED,
    "piano": "Practise scales and arpeggios slowly, then raise the metronome.",
    "oauth": "Configure the OAuth provider and the callback URL of the Next.js app.",
}


def documents() -> list[Document]:
    return [Document(page_content=text, metadata={"key": key}) for key, text in DOCUMENTS.items()]


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_real_model_gives_384_unit_vectors_and_ranks_a_paraphrase_first(
    minilm_embeddings: Embeddings,
) -> None:
    query = minilm_embeddings.embed_query(PARAPHRASE)
    postgres, unrelated = minilm_embeddings.embed_documents([POSTGRES, UNRELATED])
    assert len(query) == len(postgres) == len(unrelated) == 384
    # Normalised, so the dot product is the cosine similarity.
    for vector in (query, postgres, unrelated):
        assert math.isclose(math.sqrt(dot(vector, vector)), 1.0, abs_tol=1e-4)
    # No word in common with the PostgreSQL sentence, yet it is the nearer one, clearly.
    assert dot(query, postgres) > dot(query, unrelated) + 0.2
    assert dot(query, postgres) > 0.3


def test_embedded_chroma_with_the_real_model_persists_and_finds(
    minilm_embeddings: Embeddings, tmp_path: Path
) -> None:
    folder = str(tmp_path / "chroma")
    options = {
        "collection_name": "notes",
        "embedding_function": minilm_embeddings,
        "persist_directory": folder,
        "collection_metadata": {"hnsw:space": "cosine"},
    }
    store = Chroma(**options)  # type: ignore[arg-type]
    ids = store.add_documents(documents(), ids=list(DOCUMENTS))
    assert ids == list(DOCUMENTS)
    hits = store.similarity_search_with_relevance_scores(PARAPHRASE, k=2)
    assert hits[0][0].id == "postgres"
    assert hits[0][0].metadata == {"key": "postgres"}
    assert hits[0][1] > hits[1][1]
    assert (tmp_path / "chroma" / "chroma.sqlite3").is_file()
    # Another store over the same folder reads what the first one wrote.
    again = Chroma(**options)  # type: ignore[arg-type]
    assert sorted(again.get()["ids"]) == sorted(DOCUMENTS)
    assert again.similarity_search("tomatoes in the garden", k=1)[0].id == "garden"


def test_chroma_server_round_trip_with_the_real_model(
    minilm_embeddings: Embeddings, chroma_server: ChromaServer
) -> None:
    client = chromadb.HttpClient(host=chroma_server.host, port=chroma_server.port)
    assert client.heartbeat() > 0
    name = f"notes-{uuid.uuid4().hex[:8]}"
    writer = Chroma(
        collection_name=name,
        embedding_function=minilm_embeddings,
        client=client,
        collection_metadata={"hnsw:space": "cosine"},
    )
    writer.add_documents(documents(), ids=list(DOCUMENTS))
    try:
        # A second client, as another process would have, sees the same vectors.
        other = chromadb.HttpClient(host=chroma_server.host, port=chroma_server.port)
        assert other.get_collection(name).count() == len(DOCUMENTS)
        reader = Chroma(collection_name=name, embedding_function=minilm_embeddings, client=other)
        found = reader.similarity_search(PARAPHRASE, k=1)
        assert found[0].id == "postgres"
        assert found[0].page_content == POSTGRES
        writer.delete(ids=["postgres"])
        assert reader.similarity_search(PARAPHRASE, k=1)[0].id != "postgres"
    finally:
        writer.delete_collection()
    with pytest.raises(NotFoundError, match=name):
        other.get_collection(name)
