"""A second document source: chunks cut by another pipeline, stored as JSON lines (seed 004).

`jsonl_store` reads and validates the files, `export` writes a vault's chunks in the same
shape, `analysis` turns text into the terms both scorers count, `keyword_index` scores
them (BM25 + TF-IDF and the seed's boosts) and saves itself beside the store.
"""

from langchain_vaultsearch.chunk_store.export import ExportReport, export_vault_chunks
from langchain_vaultsearch.chunk_store.jsonl_store import (
    ChunkLocation,
    ChunkReader,
    ChunkRecord,
    JsonlChunkStore,
    StoreProblem,
)
from langchain_vaultsearch.chunk_store.keyword_index import KeywordHit, KeywordIndex, Postings
from langchain_vaultsearch.chunk_store.profile import RetrievalProfile

__all__ = [
    "ChunkLocation",
    "ChunkReader",
    "ChunkRecord",
    "ExportReport",
    "JsonlChunkStore",
    "KeywordHit",
    "KeywordIndex",
    "Postings",
    "RetrievalProfile",
    "StoreProblem",
    "export_vault_chunks",
]
