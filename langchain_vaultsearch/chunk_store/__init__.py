"""A second document source: chunks cut by another pipeline, stored as JSON lines (seed 004).

`jsonl_store` reads and validates the files, `export` writes a vault's chunks in the same
shape, `analysis` turns text into the terms both scorers count, `keyword_index` searches
them (BM25 + TF-IDF and the seed's boosts): `keyword_scoring` scores, `keyword_chunks`
reads the chunks back, `keyword_build` builds, `keyword_file` saves beside the store.
"""

from langchain_vaultsearch.chunk_store.boosts import QueryBoosts
from langchain_vaultsearch.chunk_store.export import ExportReport, export_vault_chunks
from langchain_vaultsearch.chunk_store.jsonl_store import (
    ChunkLocation,
    ChunkReader,
    ChunkRecord,
    JsonlChunkStore,
    StoreProblem,
)
from langchain_vaultsearch.chunk_store.keyword_chunks import IndexedChunks
from langchain_vaultsearch.chunk_store.keyword_index import KeywordHit, KeywordIndex
from langchain_vaultsearch.chunk_store.keyword_scoring import KeywordScorer, Postings
from langchain_vaultsearch.chunk_store.profile import RetrievalProfile

__all__ = [
    "ChunkLocation",
    "ChunkReader",
    "ChunkRecord",
    "ExportReport",
    "IndexedChunks",
    "JsonlChunkStore",
    "KeywordHit",
    "KeywordIndex",
    "KeywordScorer",
    "Postings",
    "QueryBoosts",
    "RetrievalProfile",
    "StoreProblem",
    "export_vault_chunks",
]
