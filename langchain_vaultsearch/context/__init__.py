"""The `<localSearch>` XML context a chat model answers from, and its sources.

Public: `ContextOptions` (limits and wording), `LocalSearchContext` and `ContextSource`
(what `build_local_search_context` returns), `format_local_search_context` (documents to
XML, for an LCEL chain), `sanitize_for_citations`.
"""

from langchain_vaultsearch.context.builder import (
    ContextOptions,
    ContextSource,
    LocalSearchContext,
    build_local_search_context,
    format_local_search_context,
)
from langchain_vaultsearch.context.citations import sanitize_for_citations

__all__ = [
    "ContextOptions",
    "ContextSource",
    "LocalSearchContext",
    "build_local_search_context",
    "format_local_search_context",
    "sanitize_for_citations",
]
