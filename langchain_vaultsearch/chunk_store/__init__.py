"""A second document source: chunks cut by another pipeline, stored as JSON lines (seed 004).

`jsonl_store` reads and validates the files, `export` writes a vault's chunks in the same
shape, `analysis` turns text into the terms both scorers count, `keyword_index` scores
them (BM25 + TF-IDF and the seed's boosts) and saves itself beside the store.
"""
