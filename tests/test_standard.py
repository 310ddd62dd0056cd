"""LangChain's standard retriever tests, run network-free against the sample vault."""

from __future__ import annotations

from typing import Any

from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_vaultsearch import TieredLexicalRetriever
from tests.conftest import SAMPLE_VAULT


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
