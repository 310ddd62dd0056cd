"""Speed and memory of keyword document search on 100,000 chunks, beside the libraries.

A synthetic vault (32,000 notes) is exported with `export_vault_chunks` and cut to its
first 100,000 chunks. Each system runs in a fresh subprocess (so peak RSS is its own):

- **ours**: `KeywordDocumentRetriever` (BM25 + TF-IDF + boosts): index build, peak RSS
  growth, warm query p50/p95, and a restart from the saved index;
- **BM25Retriever** (langchain-community, rank-bm25's `BM25Okapi`) over the same chunks:
  the baseline the issue names;
- **the seed's libraries**: `rank_bm25.BM25Okapi` and scikit-learn's `TfidfVectorizer`
  (5,000 features, unigrams and bigrams) built on the same texts: why the keyword index
  computes both formulas itself.

Bars: build <= 30 s, warm p95 <= 50 ms, RSS growth <= 400 MB.

Usage (from the repository root, dev install)::

    python -m benchmarks.keyword_speed [--chunks 100000] [--queries 30]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import format_table, run_worker
from benchmarks.speed import (
    DEFAULT_CACHE,
    _current_rss_kb,
    _peak_rss_kb,
    _percentile,
    _reset_peak_rss,
    synthetic_vault_path,
)
from benchmarks.synthetic_vault import SYNTHETIC_QUERIES

BAR_BUILD_S = 30.0
BAR_P95_MS = 50.0
BAR_RSS_MB = 400.0
NOTES = 32_000
K = 30


def chunk_store(chunks: int) -> Path:
    """The synthetic vault's first `chunks` chunks as a JSONL store (cached)."""
    from langchain_vaultsearch.chunk_store import export_vault_chunks

    folder = DEFAULT_CACHE / f"keyword-store-{chunks}"
    if (folder / "vault-chunks.jsonl").is_file():
        return folder
    vault = synthetic_vault_path(DEFAULT_CACHE, NOTES, 0)
    staging = DEFAULT_CACHE / "keyword-store-export"
    report = export_vault_chunks(vault, staging)
    if report.chunks < chunks:
        raise SystemExit(f"the vault has only {report.chunks:,} chunks")
    folder.mkdir(parents=True, exist_ok=True)
    with (
        report.path.open(encoding="utf-8") as source,
        (folder / "vault-chunks.jsonl").open("w", encoding="utf-8") as out,
    ):
        for _, line in zip(range(chunks), source, strict=False):
            out.write(line)
    report.path.unlink()
    return folder


# ------------------------------------------------------------------- worker side


def _texts(folder: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with (folder / "vault-chunks.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            ids.append(record["id"])
            texts.append(record["text"])
    return ids, texts


def work(system: str, folder: str, queries: list[str]) -> dict[str, Any]:
    """Build one system over the store and time its queries.

    RSS growth is counted from after the system's imports, as in the other benchmarks:
    what the index costs, not the libraries.
    """
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document
    from rank_bm25 import BM25Okapi
    from sklearn.feature_extraction.text import TfidfVectorizer

    from langchain_vaultsearch import KeywordDocumentRetriever
    from langchain_vaultsearch.expansion.terms import STOP_WORDS

    base_kb = _current_rss_kb() or 0
    _reset_peak_rss()
    store = Path(folder)
    result: dict[str, Any] = {}
    start = time.perf_counter()
    if system in ("ours", "ours-restart"):
        retriever = KeywordDocumentRetriever(chunk_dir=folder, k=K, persist=system != "ours")
        retriever.index()
        invoke: Any = retriever.invoke
    elif system == "bm25retriever":
        ids, texts = _texts(store)
        docs = [Document(page_content=t, id=i) for i, t in zip(ids, texts, strict=True)]
        del texts
        bm25 = BM25Retriever.from_documents(docs, k=K)
        invoke = bm25.invoke
    elif system == "rank-bm25":
        okapi = BM25Okapi([t.lower().split() for t in _texts(store)[1]])

        def invoke(query: str) -> Any:  # noqa: ANN401 - the scores array
            return okapi.get_scores(query.lower().split())
    else:
        vectorizer = TfidfVectorizer(
            stop_words=list(STOP_WORDS), ngram_range=(1, 2), max_features=5000
        )
        matrix = vectorizer.fit_transform(_texts(store)[1])

        def invoke(query: str) -> Any:  # noqa: ANN401 - the scores array
            return matrix @ vectorizer.transform([query]).T

    result["build_s"] = time.perf_counter() - start
    invoke(queries[0])  # warm
    times = []
    for query in queries:
        began = time.perf_counter()
        invoke(query)
        times.append((time.perf_counter() - began) * 1000)
    result["p50_ms"] = _percentile(times, 50)
    result["p95_ms"] = _percentile(times, 95)
    result["rss_growth_mb"] = (_peak_rss_kb() - base_kb) / 1024
    return result


def run(system: str, folder: Path, queries: list[str]) -> dict[str, Any]:
    """One system in a fresh interpreter."""
    spec = {"system": system, "folder": str(folder), "queries": queries}
    return run_worker("benchmarks.keyword_speed", spec, system)


def main(argv: list[str] | None = None) -> int:
    """Run every system and print the figures with PASS/FAIL lines."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks in the store")
    parser.add_argument("--queries", type=int, default=30, help="queries timed per system")
    parser.add_argument(
        "--skip-libraries", action="store_true", help="skip the rank-bm25 / scikit-learn runs"
    )
    args = parser.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(work(spec["system"], spec["folder"], spec["queries"])))
        return 0
    folder = chunk_store(args.chunks)
    queries = SYNTHETIC_QUERIES[: args.queries]
    systems = ["ours", "ours-restart", "bm25retriever"]
    if not args.skip_libraries:
        systems += ["rank-bm25", "sklearn-tfidf"]
    results = {}
    for system in systems:
        if system == "ours-restart":  # a saved index to restart from
            from langchain_vaultsearch import KeywordDocumentRetriever

            KeywordDocumentRetriever(chunk_dir=str(folder)).index()
        results[system] = run(system, folder, queries)
    rows = [
        [
            name,
            f"{r['build_s']:.1f}",
            f"{r['p50_ms']:.1f}",
            f"{r['p95_ms']:.1f}",
            f"{r['rss_growth_mb']:.0f}",
        ]
        for name, r in results.items()
    ]
    print(f"{args.chunks:,} chunks of a {NOTES:,}-note synthetic vault, {len(queries)} queries")
    print(format_table(["system", "build s", "p50 ms", "p95 ms", "RSS+ MB (after imports)"], rows))
    ours = results["ours"]
    print(
        "\n".join(
            [
                f"{'PASS' if ours['build_s'] <= BAR_BUILD_S else 'FAIL'} index build"
                f" {ours['build_s']:.1f} s (bar <= {BAR_BUILD_S:.0f})",
                f"{'PASS' if ours['p95_ms'] <= BAR_P95_MS else 'FAIL'} warm p95"
                f" {ours['p95_ms']:.1f} ms (bar <= {BAR_P95_MS:.0f})",
                f"{'PASS' if ours['rss_growth_mb'] <= BAR_RSS_MB else 'FAIL'} RSS growth"
                f" {ours['rss_growth_mb']:.0f} MB (bar <= {BAR_RSS_MB:.0f})",
            ]
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
