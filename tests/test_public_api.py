"""The public API is what `__init__` names: pinned, so a change to it is a decision."""

from __future__ import annotations

import re
from importlib.metadata import version

import langchain_vaultsearch

PUBLIC_NAMES = {
    "VaultSearch",
    "create_mcp_server",
    "ChunkRecord",
    "ExportReport",
    "JsonlChunkStore",
    "KeywordDocumentRetriever",
    "RetrievalProfile",
    "StoreProblem",
    "export_vault_chunks",
    "EmbeddingModelMismatchError",
    "IndexLockedError",
    "MergedSemanticRetriever",
    "MissingExtraError",
    "RetrieverFactory",
    "VaultIndex",
    "VaultSemanticRetriever",
    "load_embeddings",
    "__version__",
    "ContextOptions",
    "ContextSource",
    "ExpandedQuery",
    "FilterResult",
    "FilterRetriever",
    "LocalSearchContext",
    "LocalSearchResult",
    "MergedResults",
    "QueryExpander",
    "TieredLexicalRetriever",
    "TimeRange",
    "Vault",
    "alocal_search",
    "build_local_search_context",
    "create_vault_context_chain",
    "create_vault_qa_chain",
    "find_time_expression",
    "format_local_search_context",
    "local_search",
    "merge_filter_and_search_results",
    "parse_time_expression",
    "sanitize_for_citations",
}


def test_all_is_exactly_the_public_names_and_each_resolves() -> None:
    assert set(langchain_vaultsearch.__all__) == PUBLIC_NAMES
    assert len(langchain_vaultsearch.__all__) == len(PUBLIC_NAMES)
    for name in PUBLIC_NAMES:
        assert getattr(langchain_vaultsearch, name) is not None


def test_version_is_the_installed_distributions() -> None:
    assert langchain_vaultsearch.__version__ == version("langchain-vaultsearch")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", langchain_vaultsearch.__version__)
