"""Seed 002's hybrid stages, after fusion: graph neighbours, recency tiers, a reranker.

Fusion (`fusion.py`) makes one ranked list from the lexical and semantic ones; these
stages then reshape it, each switchable, in this order:

1. **Graph neighbours** (seed 002 §6.3.3): notes one link away (out-links and
   backlinks) from the best few results join the pool "with a slightly lower score than
   the directly retrieved documents", each saying which results brought it in. By
   default below every direct result (ordered by the results that brought them): scored
   instead at a share of their seed's score (`below_direct=False`), they pushed direct
   results out of the top 10 and cost 0.006-0.027 nDCG@10 on the judged queries
   (`benchmarks/semantic_quality.py --hybrid`), so they fill lists the direct results
   leave short rather than reorder them. Bounded twice: a few seeds, and a
   few neighbours per seed, so a hub note with 2,000 backlinks adds a handful, not 2,000,
   and costs no more time than any other note: only its `NEIGHBOURS_CONSIDERED` most
   linked neighbours are ranked, chosen on the link graph's rows without a lookup.
   While a large vault's first index is still building (searches scan meanwhile), its
   link graph is not known and no neighbours join.
2. **Recency tiers** (§6.3.4): a result whose note changed within 7 days is multiplied by
   1.2, within 30 days by 1.1 (configurable); a note's date is its latest of mtime,
   `created`/`date` properties and a daily note's day, as the time filters read them. A
   note dated more than a day ahead of now earns no tier.
3. **Reranker** (§6.4.2): any LangChain `BaseDocumentCompressor` re-sorts the top
   `rerank_top_n`; a failure or a timeout keeps the order and is logged.

Then the list is cut to `top_n` and scaled so the best scores 1.0: seed 002's invariants
(at most `top_n`, unique chunk ids, scores in [0, 1] with the best at 1.0, descending).
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor

from langchain_vaultsearch.cancellation import raise_if_cancelled
from langchain_vaultsearch.documents import (
    chunk_document,
    document_score,
    lexical_matches,
    rescored,
    result_order,
)
from langchain_vaultsearch.expansion.terms import fallback_expansion
from langchain_vaultsearch.filters import latest_note_date
from langchain_vaultsearch.search.chunk_cache import read_chunks
from langchain_vaultsearch.search.scoring import select_diverse_top_k
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)


def top_k_for(top_n: int) -> int:
    """Results asked of each strategy for `top_n` results: `max(10, 2 x top_n)` (§6.4.3)."""
    return max(10, 2 * top_n)


FUTURE_GRACE_DAYS = 1.0
"""How far ahead of now a note's date may be and still earn a recency tier: today's
daily note is dated the end of its day, and a synced device's clock may run ahead."""


@dataclass(frozen=True)
class RecencyTiers:
    """Score factors by how recently a note changed.

    Attributes:
        tiers: (days, factor) pairs; the first tier a note's age fits applies.
    """

    tiers: tuple[tuple[float, float], ...] = ((7.0, 1.2), (30.0, 1.1))

    def __post_init__(self) -> None:
        for days, factor in self.tiers:
            if days <= 0 or factor <= 0:
                msg = f"recency tiers need days > 0 and factor > 0, got ({days}, {factor})"
                raise ValueError(msg)

    def factor(self, moment: datetime, now: datetime) -> float:
        """The factor of a note last dated `moment`; 1.0 for a note dated in the future.

        A date ahead of now is no evidence of recent work (`touch -d 2300-01-01`, a
        `created: 2099-01-01` property) and would otherwise rank that note first for
        good. Up to `FUTURE_GRACE_DAYS` ahead still counts as now.
        """
        age_days = (now - moment).total_seconds() / 86400.0
        if age_days < -FUTURE_GRACE_DAYS:
            return 1.0
        for days, factor in sorted(self.tiers):
            if age_days <= days:
                return factor
        return 1.0


NEIGHBOURS_CONSIDERED = 100
"""Neighbours of one seed ranked for graph expansion, the most linked first (ties: the
first in note order). Ranking a hub's whole neighbourhood decoded every neighbour's
record: 14-39 s a query at a hub of 50,000 backlinks; the newest of a hub's equally
linked notes is a tie-break, not worth a lookup per note."""


@dataclass(frozen=True)
class GraphExpansion:
    """How graph neighbours join the results.

    Attributes:
        seeds: how many of the best results lend their neighbours.
        per_seed: neighbours one seed may bring (a hub's most connected ones).
        weight: a neighbour's score as a share of the best result that brought it in.
        below_direct: scale neighbours below the weakest direct result.
    """

    seeds: int = 5
    per_seed: int = 3
    weight: float = 0.5
    below_direct: bool = True

    def __post_init__(self) -> None:
        if self.seeds < 1 or self.per_seed < 1 or not 0 < self.weight < 1:
            msg = "graph expansion needs seeds >= 1, per_seed >= 1 and 0 < weight < 1"
            raise ValueError(msg)


@dataclass
class HybridStages:
    """The stages after fusion, each off when None.

    Attributes:
        graph: graph neighbours.
        recency: recency tiers.
        reranker: a LangChain document compressor that re-sorts the top results.
        rerank_top_n: results the reranker re-sorts.
        rerank_timeout_s: time the reranker has before the order is kept.
        diverse_notes: a list cut to `top_n` keeps every note's best chunk before any
            note's second (as lexical results), so one long note cannot fill it; what
            is kept stays in score order.
    """

    graph: GraphExpansion | None = field(default_factory=GraphExpansion)
    recency: RecencyTiers | None = field(default_factory=RecencyTiers)
    reranker: BaseDocumentCompressor | None = None
    rerank_top_n: int = 10
    rerank_timeout_s: float = 10.0
    diverse_notes: bool = True

    def apply(
        self,
        docs: Sequence[Document],
        query: str,
        vault: Vault,
        *,
        top_n: int,
        now: datetime | None = None,
    ) -> list[Document]:
        """Run the stages over a fused list and cut it to `top_n`, the best at 1.0."""
        raise_if_cancelled()
        ranked = sorted(docs, key=result_order)
        if self.graph is not None and ranked:
            ranked = _with_neighbours(ranked, vault, self.graph)
            raise_if_cancelled()
        if self.recency is not None:
            ranked = _with_recency(ranked, vault, self.recency, now or datetime.now().astimezone())
        ranked.sort(key=result_order)
        if self.reranker is not None:
            raise_if_cancelled()
            ranked = _reranked(
                ranked, query, self.reranker, self.rerank_top_n, self.rerank_timeout_s
            )
        return _normalized(diverse_top(ranked, top_n) if self.diverse_notes else ranked[:top_n])


def diverse_top(docs: Sequence[Document], limit: int) -> list[Document]:
    """The best `limit` chunks with as many notes as the scores allow, best first."""
    kept = select_diverse_top_k(
        docs,
        limit,
        lambda doc: document_score(doc.metadata),
        lambda doc: str(doc.metadata.get("path")),
    )
    return sorted(kept, key=result_order)


def _with_neighbours(ranked: list[Document], vault: Vault, graph: GraphExpansion) -> list[Document]:
    """The results, then neighbours of the best `graph.seeds` notes below the weakest one."""
    present = {str(doc.metadata.get("path")) for doc in ranked}
    seeds: list[str] = []
    for doc in ranked:
        path = str(doc.metadata.get("path"))
        if path not in seeds:
            seeds.append(path)
        if len(seeds) == graph.seeds:
            break
    connections: Counter[str] = Counter()
    brought_by: dict[str, list[str]] = {}
    for seed in seeds:
        # A hub's neighbours: those linked to most of the seeds first, then the newest.
        for neighbour in _most_connected(seed, present, vault, graph.per_seed):
            connections[neighbour] += 1
            brought_by.setdefault(neighbour, []).append(seed)
    floor = min(document_score(doc.metadata) for doc in ranked)
    top = max(document_score(doc.metadata) for doc in ranked)
    seed_scores: dict[str, float] = {}
    for doc in ranked:
        path = str(doc.metadata.get("path"))
        seed_scores.setdefault(path, document_score(doc.metadata))
    added = []
    for neighbour, count in connections.most_common():
        info = vault.get(neighbour)
        read = None if info is None or not info.searchable else read_chunks(vault, info)
        if info is None or read is None or not read[1]:
            continue
        score = graph.weight * max(seed_scores[seed] for seed in brought_by[neighbour])
        if graph.below_direct:
            score *= floor / top if top > 0 else 0.0
        explanation = {"graphNeighbour": {"via": brought_by[neighbour], "links": count}}
        added.append(
            chunk_document(
                info,
                read[1][0],
                score=score,
                source="graph",
                engine="graph",
                explanation=explanation,
            )
        )
    return ranked + added


def _most_connected(seed: str, present: set[str], vault: Vault, limit: int) -> list[str]:
    """Up to `limit` of a seed's neighbours not in `present`: most links first, then newest.

    Only the `NEIGHBOURS_CONSIDERED` most linked are ranked, by their stamps: no record
    is decoded to rank them.
    """
    linked = vault.link_graph().neighbours(seed, NEIGHBOURS_CONSIDERED, exclude=present)
    if len(linked) <= limit:
        return sorted(path for path, _links in linked)

    def rank(neighbour: tuple[str, int]) -> tuple[int, float, str]:
        path, links = neighbour
        stamp = vault.content_stamp(path)
        return (-links, -(stamp[0] if stamp is not None else 0.0), path)

    return [path for path, _links in sorted(linked, key=rank)[:limit]]


def _with_recency(
    ranked: list[Document], vault: Vault, tiers: RecencyTiers, now: datetime
) -> list[Document]:
    boosted = []
    for doc in ranked:
        info = vault.get(str(doc.metadata.get("path")))
        factor = 1.0 if info is None else tiers.factor(latest_note_date(info), now)
        if factor == 1.0:
            boosted.append(doc)
            continue
        score = document_score(doc.metadata) * factor
        explanation = dict(doc.metadata.get("explanation") or {})
        explanation["recency"] = factor
        boosted.append(rescored(doc, score, explanation=explanation))
    return boosted


def _reranked(
    ranked: list[Document],
    query: str,
    reranker: BaseDocumentCompressor,
    top_n: int,
    timeout_s: float,
) -> list[Document]:
    """The top `top_n` re-sorted by the fused score blended with the reranker's, by position.

    The reranker's score (its `relevance_score`, else its order) is blended with the fused
    one, the fused one counting most at the top (`_retrieval_share`), as qmd does; a note
    the query names or an exact title match at the top stays there.
    """
    head, tail = ranked[:top_n], ranked[top_n:]
    if len(head) < 2:
        return ranked
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        future = pool.submit(reranker.compress_documents, head, query)
        result = list(future.result(timeout=timeout_s))
    except concurrent.futures.TimeoutError:
        logger.warning("The reranker took over %.1f s; keeping the fused order", timeout_s)
        return ranked
    except Exception:
        logger.exception("The reranker failed; keeping the fused order")
        return ranked
    finally:
        pool.shutdown(wait=False)
    by_id = {doc.id: doc for doc in head}
    relevance = _relevance(result, by_id)
    top = document_score(head[0].metadata)
    blended = {
        doc.id: _retrieval_share(position) * document_score(doc.metadata) / (top or 1.0)
        + (1.0 - _retrieval_share(position)) * relevance.get(doc.id, 0.0)
        for position, doc in enumerate(head)
    }
    order = sorted(head, key=lambda doc: -blended[doc.id])
    if _protected(head[0], query):  # a named note or an exact title stays first
        order = [head[0], *(doc for doc in order if doc.id != head[0].id)]
    reranked = []
    for position, original in enumerate(order):
        # The blended order wins; the fused scores are kept in that order's shape. A
        # result the reranker read is shown: a search side's verdict (includeInContext)
        # hid the results it moved up.
        score = top * (1.0 - position / (2 * len(order)))
        known = (
            {"relevance_score": relevance[original.id], "includeInContext": True}
            if original.id in relevance
            else {}
        )
        reranked.append(rescored(original, score, **known))
    floor = reranked[-1].metadata["score"]
    return reranked + [_capped(doc, floor) for doc in tail]


def _retrieval_share(position: int) -> float:
    """How much the fused score counts against the reranker's at a fused position (qmd's).

    The top of a fused list is where both retrievers agreed: the reranker may reorder it,
    but less than the results further down, where a cross-encoder knows better.
    """
    if position < 3:
        return 0.75
    return 0.60 if position < 10 else 0.40


def _relevance(
    result: Sequence[Document], by_id: dict[str | None, Document]
) -> dict[str | None, float]:
    """Each reranked document's relevance in [0, 1].

    Its `relevance_score` rescaled over the list, or, from a reranker that sets none, its
    place in the reranker's order.
    """
    kept = [doc for doc in result if doc.id in by_id]
    scores = [doc.metadata.get("relevance_score") for doc in kept]
    if kept and all(isinstance(score, (int, float)) for score in scores):
        values = [float(score) for score in scores]  # type: ignore[arg-type]
        low, high = min(values), max(values)
        spread = high - low or 1.0
        return {doc.id: (value - low) / spread for doc, value in zip(kept, values, strict=True)}
    return {doc.id: 1.0 - rank / max(len(kept), 1) for rank, doc in enumerate(kept)}


def _protected(doc: Document, query: str) -> bool:
    """A note the query names, or a lexical hit with every query word in its title."""
    explanation = doc.metadata.get("explanation")
    if isinstance(explanation, dict) and explanation.get("mentioned"):
        return True
    words = [t for t in fallback_expansion(query).salient_terms if not t.startswith("#")]
    titled = {
        str(match.get("query", ""))
        for match in lexical_matches(doc)
        if match.get("field") in ("title", "aliases")
    }
    return bool(words) and all(any(t.startswith(w) for t in titled) for w in words)


def _capped(doc: Document, ceiling: float) -> Document:
    return rescored(doc, min(document_score(doc.metadata), ceiling))


def _normalized(docs: list[Document]) -> list[Document]:
    """Unique chunk ids, best first, scaled so the best is 1.0."""
    seen: set[str] = set()
    unique = []
    for doc in sorted(docs, key=result_order):
        key = str(doc.id or doc.metadata.get("chunkId") or doc.metadata.get("path"))
        if key not in seen:
            seen.add(key)
            unique.append(doc)
    best = document_score(unique[0].metadata) if unique else 0.0
    return [
        rescored(doc, min(max(document_score(doc.metadata) / best, 0.0), 1.0) if best > 0 else 0.0)
        for doc in unique
    ]
