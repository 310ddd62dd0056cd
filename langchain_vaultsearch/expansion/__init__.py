"""Query expansion: a chat model's alternative phrasings and terms widen lexical recall.

Public: `QueryExpander` (the LLM expander), `ExpandedQuery` (what it gives),
`QueryExpanderLike` (anything the retrievers accept as an expander).
"""

from langchain_vaultsearch.expansion.expander import QueryExpander
from langchain_vaultsearch.expansion.terms import ExpandedQuery, QueryExpanderLike

__all__ = ["ExpandedQuery", "QueryExpander", "QueryExpanderLike"]
