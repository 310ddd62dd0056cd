"""The lexical engine behind `TieredLexicalRetriever`; no LangChain types inside.

Public: `SearchCore` (the retriever's `core`: recall, BM25+, boosts), its `SearchOptions`
and `SearchResult` (of `RankedChunk`s), the `ChunkCache` (of `IndexedChunk`s) it reads
chunks through, `IndexPolicy` (when the index is saved and how large vaults are first
searched) and `MemoryBudget`.
"""

from langchain_vaultsearch.search.chunk_cache import ChunkCache, IndexedChunk
from langchain_vaultsearch.search.core import RankedChunk, SearchCore, SearchOptions, SearchResult
from langchain_vaultsearch.search.lexical_index import IndexPolicy
from langchain_vaultsearch.search.memory_budget import MemoryBudget

__all__ = [
    "ChunkCache",
    "IndexPolicy",
    "IndexedChunk",
    "MemoryBudget",
    "RankedChunk",
    "SearchCore",
    "SearchOptions",
    "SearchResult",
]
