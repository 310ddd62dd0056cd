"""Ranking quality of keyword document search on an exported vault, beside BM25Retriever.

Each `--set` vault is exported with `export_vault_chunks` (kept in
`benchmarks/.cache/keyword/`), then every judged query runs through:

- `keyword`: `KeywordDocumentRetriever` as shipped (package tokenizer, seed boosts);
- `keyword-no-boosts`: the same with the three boosts at 1.0;
- `keyword-seed-tokens`: the seed's tokenization (`tokenizer="whitespace"`);
- `BM25Retriever`: langchain-community's, as users build it, over the same chunks.

nDCG@10 and recall@10 over distinct notes, per query kind and overall. The bar (issue:
keyword document search): `keyword` at least `BM25Retriever`'s overall nDCG@10.

Usage (from the repository root, dev install; vaults as in `benchmarks/queries/README.md`)::

    python -m benchmarks.keyword_quality \
        --set benchmarks/queries/dwarvesf-brain.json=/path/to/brain \
        --set benchmarks/queries/obsidian-help-zh.json=/path/to/obsidian-help/zh
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from langchain_core.documents import Document

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.judged_runs import Scores, System, judged_sets, kind_table, note_paths, score

CACHE = Path(__file__).resolve().parent / ".cache" / "keyword"
K = 30


def systems_for(vault: Path) -> dict[str, System]:
    """Each system as query -> ranked note paths over the vault's exported chunks."""
    from langchain_community.retrievers import BM25Retriever

    from langchain_vaultsearch import KeywordDocumentRetriever
    from langchain_vaultsearch.chunk_store import RetrievalProfile, export_vault_chunks

    store = CACHE / vault.resolve().name
    report = export_vault_chunks(vault, store)
    print(f"  exported {report.chunks:,} chunks of {vault}", file=sys.stderr)
    no_boosts = RetrievalProfile(
        doc_boost_exact_match=1.0, doc_boost_form_number=1.0, doc_boost_defined_term=1.0
    )
    docs = []
    with report.path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            docs.append(Document(record["text"], metadata=record["metadata"], id=record["id"]))
    return {
        "keyword": note_paths(KeywordDocumentRetriever(chunk_dir=str(store), k=K).invoke),
        "keyword-no-boosts": note_paths(
            KeywordDocumentRetriever(chunk_dir=str(store), k=K, profile=no_boosts).invoke
        ),
        "keyword-seed-tokens": note_paths(
            KeywordDocumentRetriever(chunk_dir=str(store), k=K, tokenizer="whitespace").invoke
        ),
        "BM25Retriever": note_paths(BM25Retriever.from_documents(docs, k=K).invoke),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table and the bar."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--set",
        action="append",
        required=True,
        metavar="QUERIES.json=VAULT",
        help="a judged query file and the vault root it was judged on (repeatable)",
    )
    args = parser.parse_args(argv)
    scores: Scores = {}
    for queries, vault in judged_sets(args.set):
        score(queries, systems_for(vault), scores)
    table, means = kind_table(scores)
    print(table)
    ours, base = means["overall"]["keyword"], means["overall"]["BM25Retriever"]
    print(
        f"{'PASS' if ours >= base else 'FAIL'} keyword overall nDCG@10 {ours:.3f} vs"
        f" BM25Retriever {base:.3f} on the same chunks"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
