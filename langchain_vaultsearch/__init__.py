"""langchain-vaultsearch: search an Obsidian-style markdown vault from LangChain."""

from langchain_vaultsearch.query_expander import QueryExpander
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.search.core import SearchCore, SearchOptions
from langchain_vaultsearch.search.expansion import ExpandedQuery, fallback_expansion
from langchain_vaultsearch.text.tokenize import tokenize_mixed
from langchain_vaultsearch.vault.vault import Vault

__all__ = [
    "ExpandedQuery",
    "QueryExpander",
    "SearchCore",
    "SearchOptions",
    "TieredLexicalRetriever",
    "Vault",
    "fallback_expansion",
    "tokenize_mixed",
]
