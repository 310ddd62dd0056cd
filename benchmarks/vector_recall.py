"""How widely Chroma's HNSW should search: recall, stability and latency per `ef_search`.

The semantic side asks Chroma for up to 300 windows (`fetch_k`); HNSW is approximate and
keeps `ef_search` candidates while it walks its graph (Chroma's default: 100). This prints,
for each breadth, over a copy of a built index (the index itself is never touched):

- recall: the share of the exact nearest windows (brute force over every stored vector)
  the search returns, on average and for the worst query;
- unstable: queries whose list differs between two opens of the same index. Chroma
  re-inserts, in parallel, the vectors its saved graph lags behind whenever it opens, so
  each open searches a slightly different graph;
- the search's p50 and p95 over three warm rounds (the query's embedding excluded).

Chroma's default is the baseline row, measured in the same run. `SEARCH_EF` in
`langchain_vaultsearch/semantic/store_setup.py` is the breadth the package sets.

Usage:
    python -m benchmarks.vector_recall --vault PATH [--index FOLDER] [--queries 60]
        [--ef 100 200 400 800]

`--index` is the index's folder (`persist_directory`; default `<vault>/.vaultsearch`),
built with `vaultsearch index`; its model must be installed (`--embeddings`, default the
bundled all-MiniLM-L6-v2). A vault of a few hundred windows shows nothing: HNSW is close to
exact there. The help vault (6,280 notes, 48,525 windows) is the one in
`docs/benchmarks.md`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import chromadb
import numpy as np
from chromadb.api.client import Client
from chromadb.api.models.Collection import Collection

from benchmarks.common import derive_queries
from benchmarks.semantic_quality import default_embeddings
from langchain_vaultsearch.semantic.embeddings import load_embeddings
from langchain_vaultsearch.semantic.store_search import fetch_k
from langchain_vaultsearch.semantic.store_setup import SEARCH_EF

WINDOWS = fetch_k(60)
"""Windows a merged search's semantic side asks for (k 30, twice over for fusion)."""
ROUNDS = 3


@dataclass(frozen=True)
class Row:
    """One breadth's figures."""

    ef: int
    recall: float
    worst: float
    unstable: int
    p50_ms: float
    p95_ms: float


def opened_copy(chroma: Path, into: Path, ef: int) -> tuple[Client, Collection]:
    """A fresh client of a copy of the Chroma folder, its collection set to search at `ef`.

    The breadth is set before the first search, which loads the graph with it.
    """
    shutil.copytree(chroma, into)
    client = cast("Client", chromadb.PersistentClient(path=str(into)))
    collection = client.list_collections()[0]
    collection.modify(configuration={"hnsw": {"ef_search": ef}})
    return client, client.get_collection(collection.name)


def nearest(collection: Collection, queries: np.ndarray) -> list[list[str]]:
    """Each query's nearest windows, as the collection's search returns them."""
    found = collection.query(query_embeddings=queries.tolist(), n_results=WINDOWS, include=[])
    return [list(ids) for ids in found["ids"]]


def exact(chroma: Path, queries: np.ndarray, into: Path) -> list[set[str]]:
    """Each query's truly nearest windows: cosine against every stored vector."""
    client, collection = opened_copy(chroma, into, 100)
    try:
        stored = collection.get(include=["embeddings"])
    finally:
        client.close()
        shutil.rmtree(into)
    vectors = np.asarray(stored["embeddings"], dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = np.asarray(stored["ids"])
    unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    return [set(ids[np.argsort(-(vectors @ q))[:WINDOWS]]) for q in unit]


def measure(chroma: Path, queries: np.ndarray, truth: list[set[str]], ef: int, work: Path) -> Row:
    """One breadth: recall against `truth`, stability across two opens, latency."""
    lists = []
    for open_no in (1, 2):
        copy = work / f"ef{ef}-{open_no}"
        client, collection = opened_copy(chroma, copy, ef)
        try:
            lists.append(nearest(collection, queries))
            if open_no == 1:
                times = []
                for _ in range(ROUNDS):
                    for query in queries:
                        start = time.perf_counter()
                        collection.query(
                            query_embeddings=[query.tolist()], n_results=WINDOWS, include=[]
                        )
                        times.append((time.perf_counter() - start) * 1000)
        finally:
            client.close()
            shutil.rmtree(copy)  # a large index's copies would add up otherwise
    recalls = [len(set(got) & want) / len(want) for got, want in zip(lists[0], truth, strict=True)]
    times.sort()
    return Row(
        ef=ef,
        recall=statistics.fmean(recalls),
        worst=min(recalls),
        unstable=sum(a != b for a, b in zip(lists[0], lists[1], strict=True)),
        p50_ms=statistics.median(times),
        p95_ms=times[int(0.95 * len(times))],
    )


def main(argv: list[str] | None = None) -> int:
    """Measure each breadth on a copy of the index and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index", type=Path, help="the index folder (<vault>/.vaultsearch)")
    parser.add_argument("--embeddings", default=None, help="the index's model spec")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--ef", type=int, nargs="+", default=[100, 200, 400, SEARCH_EF])
    args = parser.parse_args(argv)
    chroma = (args.index or args.vault / ".vaultsearch") / "chroma"
    if not (chroma / "chroma.sqlite3").is_file():
        parser.error(f"no Chroma index in {chroma}: run `vaultsearch index` first")
    model = load_embeddings(args.embeddings or default_embeddings())
    texts = derive_queries(args.vault, n=args.queries)
    queries = np.asarray(model.embed_documents(texts), dtype=np.float64)
    with tempfile.TemporaryDirectory(prefix="vector-recall-") as tmp:
        work = Path(tmp)
        truth = exact(chroma, queries, work / "exact")
        rows = [measure(chroma, queries, truth, ef, work) for ef in args.ef]
    print(f"{len(texts)} queries, nearest {WINDOWS} windows, {ROUNDS} warm rounds")
    print("ef_search  recall  worst  unstable  p50 ms  p95 ms")
    for row in rows:
        note = "  (Chroma's default: baseline)" if row.ef == 100 else ""
        note += "  (SEARCH_EF)" if row.ef == SEARCH_EF else ""
        print(
            f"{row.ef:>9}  {row.recall:.3f}  {row.worst:.3f}  {row.unstable:>8}  "
            f"{row.p50_ms:6.2f}  {row.p95_ms:6.2f}{note}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
