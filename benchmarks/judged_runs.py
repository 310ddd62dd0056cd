"""Judged query sets run through several systems: the part every ranking benchmark shares.

A system is `query -> note paths, best first`; the scores are nDCG@10 and recall@10 over
distinct notes, per query kind and overall, printed as one table.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from langchain_core.documents import Document

from benchmarks.common import format_table, normalize_note_path
from benchmarks.metrics import distinct, ndcg_at_k, recall_at_k
from benchmarks.quality import CUTOFF, JudgedQuery, load_judged_queries

System = Callable[[str], list[str]]
Scores = dict[str, dict[str, list[tuple[float, float]]]]
"""Kind (and "overall") -> system -> [(nDCG@10, R@10) per query]."""


def judged_sets(pairs: Sequence[str]) -> Iterator[tuple[list[JudgedQuery], Path]]:
    """Each `QUERIES.json=VAULT` argument's queries and vault folder."""
    for pair in pairs:
        queries_file, _, vault = pair.partition("=")
        if not vault or not Path(vault).is_dir():
            raise SystemExit(f"error: --set {pair}: expected QUERIES.json=VAULT_FOLDER")
        _meta, queries = load_judged_queries(Path(queries_file))
        yield queries, Path(vault)


def note_paths(invoke: Callable[[str], list[Document]]) -> System:
    """A retriever's `invoke` as a system: the notes of its documents, in order."""

    def ranked(query: str) -> list[str]:
        return [normalize_note_path(str(doc.metadata["path"])) for doc in invoke(query)]

    return ranked


def score(queries: list[JudgedQuery], systems: dict[str, System], into: Scores) -> None:
    """Add every system's nDCG@10 and recall@10 on each query to `into`."""
    for query in queries:
        for name, run in systems.items():
            top = distinct(run(query.query), CUTOFF)
            metrics = (ndcg_at_k(top, query.relevant, CUTOFF), recall_at_k(top, query.relevant))
            for kind in (query.kind, "overall"):
                into.setdefault(kind, {}).setdefault(name, []).append(metrics)


def kind_table(scores: Scores) -> tuple[str, dict[str, dict[str, float]]]:
    """The table (kinds, then overall) and each kind's mean nDCG@10 per system."""
    ordered = {kind: scores[kind] for kind in scores if kind != "overall"}
    ordered["overall"] = scores["overall"]
    names = list(scores["overall"])
    headers = ["kind", "n", *[f"{n} nDCG" for n in names], *[f"{n} R@10" for n in names]]
    rows = []
    means: dict[str, dict[str, float]] = {}
    for kind, systems in ordered.items():
        means[kind] = {name: statistics.fmean(v[0] for v in systems[name]) for name in names}
        recalls = [statistics.fmean(v[1] for v in systems[name]) for name in names]
        rows.append(
            [
                kind,
                str(len(systems[names[0]])),
                *[f"{means[kind][name]:.3f}" for name in names],
                *[f"{recall:.3f}" for recall in recalls],
            ]
        )
    return format_table(headers, rows), means
