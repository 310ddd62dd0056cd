"""langchain-vaultsearch: search an Obsidian-style markdown vault from LangChain.

Everything a user imports is named here; every other module is internal and may change.
"""

from importlib.metadata import PackageNotFoundError, version

from langchain_vaultsearch.context.citations import sanitize_for_citations
from langchain_vaultsearch.context.local_search import (
    ContextOptions,
    ContextSource,
    LocalSearchContext,
    build_local_search_context,
    format_local_search_context,
)
from langchain_vaultsearch.filters import FilterResult, FilterRetriever
from langchain_vaultsearch.local_search import LocalSearchResult, alocal_search, local_search
from langchain_vaultsearch.merge import MergedResults, merge_filter_and_search_results
from langchain_vaultsearch.qa_chain import create_vault_context_chain, create_vault_qa_chain
from langchain_vaultsearch.query_expander import QueryExpander
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.search.expansion import ExpandedQuery
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
    "__version__",
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
]
