"""langchain-vaultsearch: search an Obsidian-style markdown vault from LangChain.

Everything a user imports is named here; every other module is internal and may change.
"""

from importlib.metadata import PackageNotFoundError, version

from langchain_vaultsearch.chunk_store.export import ExportReport, export_vault_chunks
from langchain_vaultsearch.chunk_store.jsonl_store import ChunkRecord, JsonlChunkStore, StoreProblem
from langchain_vaultsearch.chunk_store.profile import RetrievalProfile
from langchain_vaultsearch.context.builder import (
    ContextOptions,
    ContextSource,
    LocalSearchContext,
    build_local_search_context,
    format_local_search_context,
)
from langchain_vaultsearch.context.citations import sanitize_for_citations
from langchain_vaultsearch.expansion.expander import QueryExpander
from langchain_vaultsearch.expansion.terms import ExpandedQuery
from langchain_vaultsearch.filters import FilterResult, FilterRetriever
from langchain_vaultsearch.local_search import LocalSearchResult, alocal_search, local_search
from langchain_vaultsearch.mcp_server import create_mcp_server
from langchain_vaultsearch.merge import MergedResults, merge_filter_and_search_results
from langchain_vaultsearch.qa_chain import create_vault_context_chain, create_vault_qa_chain
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.retrievers.keyword import KeywordDocumentRetriever
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.retrievers.semantic import VaultSemanticRetriever
from langchain_vaultsearch.semantic.embeddings import MissingExtraError, load_embeddings
from langchain_vaultsearch.semantic.index import EmbeddingModelMismatchError, VaultIndex
from langchain_vaultsearch.semantic.lock import IndexLockedError
from langchain_vaultsearch.service import VaultSearch
from langchain_vaultsearch.time_ranges import (
    TimeRange,
    find_time_expression,
    parse_time_expression,
)
from langchain_vaultsearch.vault.vault import Vault

try:
    __version__ = version("langchain-vaultsearch")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "ChunkRecord",
    "ContextOptions",
    "ContextSource",
    "EmbeddingModelMismatchError",
    "ExpandedQuery",
    "ExportReport",
    "FilterResult",
    "FilterRetriever",
    "IndexLockedError",
    "JsonlChunkStore",
    "KeywordDocumentRetriever",
    "LocalSearchContext",
    "LocalSearchResult",
    "MergedResults",
    "MergedSemanticRetriever",
    "MissingExtraError",
    "QueryExpander",
    "RetrievalProfile",
    "RetrieverFactory",
    "StoreProblem",
    "TieredLexicalRetriever",
    "TimeRange",
    "Vault",
    "VaultIndex",
    "VaultSearch",
    "VaultSemanticRetriever",
    "__version__",
    "alocal_search",
    "build_local_search_context",
    "create_mcp_server",
    "create_vault_context_chain",
    "create_vault_qa_chain",
    "export_vault_chunks",
    "find_time_expression",
    "format_local_search_context",
    "load_embeddings",
    "local_search",
    "merge_filter_and_search_results",
    "parse_time_expression",
    "sanitize_for_citations",
]
