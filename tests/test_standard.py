"""LangChain's standard retriever tests, run network-free against the sample vault."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_vaultsearch import (
    KeywordDocumentRetriever,
    MergedSemanticRetriever,
    RetrieverFactory,
    TieredLexicalRetriever,
    VaultIndex,
    VaultSemanticRetriever,
)
from langchain_vaultsearch.chunk_store import export_vault_chunks
from tests.conftest import SAMPLE_VAULT
from tests.fake_embeddings import WordBagEmbedding


class TestTieredLexicalRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[TieredLexicalRetriever]:
        return TieredLexicalRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"vault_path": str(SAMPLE_VAULT)}

    @property
    def retriever_query_example(self) -> str:
        return "OAuth login in Next.js"


@functools.cache
def sample_index() -> VaultIndex:
    """One vector index of the sample vault for every standard test (fake model, in memory)."""
    records = Path(tempfile.mkdtemp(prefix="vaultsearch-standard-")) / "records.sqlite3"
    index = VaultIndex(
        vault_path=SAMPLE_VAULT,
        embeddings=WordBagEmbedding(),
        vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
        records_path=records,
    )
    index.refresh()
    return index


class TestVaultSemanticRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[VaultSemanticRetriever]:
        return VaultSemanticRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"index": sample_index(), "min_similarity_score": 0.0}

    @property
    def retriever_query_example(self) -> str:
        return "OAuth login in Next.js"


class TestMergedSemanticRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[MergedSemanticRetriever]:
        return MergedSemanticRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"semantic_index": sample_index()}

    @property
    def retriever_query_example(self) -> str:
        return "OAuth login in Next.js"


class TestRetrieverFactoryStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[RetrieverFactory]:
        return RetrieverFactory

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"semantic_index": sample_index()}

    @property
    def retriever_query_example(self) -> str:
        return "OAuth login in Next.js"


@functools.cache
def sample_chunk_store() -> str:
    """The sample vault exported as a JSONL chunk store, once for every standard test."""
    folder = Path(tempfile.mkdtemp(prefix="vaultsearch-chunks-"))
    return str(export_vault_chunks(SAMPLE_VAULT, folder).path.parent)


class TestKeywordDocumentRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[KeywordDocumentRetriever]:
        return KeywordDocumentRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"chunk_dir": sample_chunk_store()}

    @property
    def retriever_query_example(self) -> str:
        return "OAuth login in Next.js"
