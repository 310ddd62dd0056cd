"""langchain-vaultsearch: search an Obsidian-style markdown vault from LangChain.

Here is what a user types in the first hour: the facade, the vault, the retrievers, the
filter and its merge, the chains, the expander, the time range and the errors. Everything
else a public signature uses is importable from a documented submodule:
`langchain_vaultsearch.context` (the XML context), `.chunk_store` (JSONL keyword search),
`.semantic` (the vector index), `.expansion`, `.time_ranges`, `.filters`, `.local_search`,
`.query_plan`, `.service`, `.fusion` (merge, fusion, hybrid stages, rerankers), `.vault`,
`.search`, `.text`. Other modules are internal.
"""

from importlib.metadata import PackageNotFoundError, version

from langchain_vaultsearch.expansion import QueryExpander
from langchain_vaultsearch.filters import FilterRetriever
from langchain_vaultsearch.fusion.merge import merge_filter_and_search_results
from langchain_vaultsearch.local_search import alocal_search, local_search
from langchain_vaultsearch.mcp_server import create_mcp_server
from langchain_vaultsearch.qa_chain import create_vault_context_chain, create_vault_qa_chain
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.retrievers.keyword import KeywordDocumentRetriever
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.semantic import (
    EmbeddingModelMismatchError,
    IndexLockedError,
    MissingExtraError,
    SemanticIndexUnavailable,
    VaultIndex,
)
from langchain_vaultsearch.semantic.retriever import VaultSemanticRetriever
from langchain_vaultsearch.service import VaultSearch
from langchain_vaultsearch.time_ranges import TimeRange
from langchain_vaultsearch.vault.vault import Vault

try:
    __version__ = version("langchain-vaultsearch")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "EmbeddingModelMismatchError",
    "FilterRetriever",
    "IndexLockedError",
    "KeywordDocumentRetriever",
    "MergedSemanticRetriever",
    "MissingExtraError",
    "QueryExpander",
    "RetrieverFactory",
    "SemanticIndexUnavailable",
    "TieredLexicalRetriever",
    "TimeRange",
    "Vault",
    "VaultIndex",
    "VaultSearch",
    "VaultSemanticRetriever",
    "__version__",
    "alocal_search",
    "create_mcp_server",
    "create_vault_context_chain",
    "create_vault_qa_chain",
    "local_search",
    "merge_filter_and_search_results",
]
