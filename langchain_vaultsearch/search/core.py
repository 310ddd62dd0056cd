"""SearchCore: one lexical query, end to end, with no LangChain types.

expand -> recall (whole vault; the query's own terms, then the expansion's extras) ->
chunks -> BM25+ per field with the salient terms -> folder/graph boost -> normalise ->
note-diverse top-K. Any failure inside falls back to recall-only ranking, logged, never
raised: a search box that throws is worse than one that ranks plainly.

The index the query runs over, and its life (opening, catching up, the background first
build, saving), is a `LexicalIndex`; this module is only the query. While a large vault's
first index builds, recall comes from scanning the notes' text and the graph boost is
skipped, as it needs every note parsed.
"""

from __future__ import annotations

import asyncio
import logging
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_vaultsearch.expansion.terms import (
    EMPTY_EXPANSION,
    AsyncQueryExpanderLike,
    ExpandedQuery,
    QueryExpanderLike,
    extract_salient_terms,
    fallback_expansion,
)
from langchain_vaultsearch.limits import (
    DEFAULT_K,
    MAX_RESULTS_RANGE,
    RETURN_ALL_LIMIT,
    clamp_query,
)
from langchain_vaultsearch.search.bm25 import LexicalHit, rank_chunks
from langchain_vaultsearch.search.boosts import apply_folder_boost, apply_graph_boost
from langchain_vaultsearch.search.chunk_cache import ChunkCache, IndexedChunk
from langchain_vaultsearch.search.lexical_index import IndexPolicy, LexicalIndex
from langchain_vaultsearch.search.memory_budget import MemoryBudget
from langchain_vaultsearch.search.recall import SortedTerms, Vocabulary
from langchain_vaultsearch.search.scoring import (
    NormalizationMethod,
    normalize_scores,
    select_diverse_top_k,
)
from langchain_vaultsearch.text.chunking import Chunk, note_path_from_chunk_id
from langchain_vaultsearch.vault.note_info import NoteInfo, folder_of
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)

CANDIDATE_LIMIT_RANGE = (10, 1000)
# Notes only the expansion found score at most this share of the weakest note the query's
# own terms found: they are leads, not matches.
EXPANSION_ONLY_CEILING = 0.5


@dataclass(frozen=True)
class SearchOptions:
    """Per-query options, clamped to the original's ranges by `clamped()`.

    Attributes:
        max_results: results to return (1..100).
        candidate_limit: notes recall hands to ranking (10..1000).
        salient_terms: extra ranking terms from the caller (e.g. `[[mentions]]`).
        enable_lexical_boosts: apply the folder and graph boosts.
        return_all: tag/time style queries: up to 100 results.
        pre_expanded_query: skip expansion and use this.
        normalization: how raw scores map into [0.02, 0.98].
    """

    max_results: int = DEFAULT_K
    candidate_limit: int = 200
    salient_terms: tuple[str, ...] = ()
    enable_lexical_boosts: bool = True
    return_all: bool = False
    pre_expanded_query: ExpandedQuery | None = None
    normalization: NormalizationMethod = "minmax"

    def clamped(self) -> SearchOptions:
        """The options with counts forced into their ranges."""
        max_results = (
            RETURN_ALL_LIMIT if self.return_all else _clamp(self.max_results, *MAX_RESULTS_RANGE)
        )
        return replace(
            self,
            max_results=max_results,
            candidate_limit=_clamp(self.candidate_limit, *CANDIDATE_LIMIT_RANGE),
        )


@dataclass
class RankedChunk:
    """One ranked chunk, as in the original's `RankedChunk`.

    Attributes:
        id: chunk id `path#index`.
        score: normalised score.
        engine: `fulltext`, or `grep` for the fallback.
        explanation: `lexicalMatches`, `folderBoost`, `graphConnections`, `baseScore`,
            `finalScore`.
    """

    id: str
    score: float
    engine: str
    explanation: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchResult:
    """Ranked chunks and the expansion that produced them."""

    results: list[RankedChunk]
    expansion: ExpandedQuery


class SearchCore:
    """The lexical query pipeline over one vault's `LexicalIndex`."""

    def __init__(
        self,
        vault: Vault,
        *,
        query_expander: QueryExpanderLike | None = None,
        chunk_cache: ChunkCache | None = None,
        policy: IndexPolicy | None = None,
        memory_budget: MemoryBudget | None = None,
    ) -> None:
        """Create the pipeline.

        Args:
            vault: the notes; may be shared with other indexes and retrievers.
            query_expander: an LLM expander; without one the fallback terms are used.
            chunk_cache: a shared chunk cache; one is made (within the budget) when omitted.
            policy: when the index is saved to `<vault>/.vaultsearch/` (so a new process
                starts from it), built in the background, and frozen.
            memory_budget: what the scan, the chunk cache and the saved index's pages
                may hold (`MemoryBudget.from_mb()`, 512 MB, by default).
        """
        budget = memory_budget or MemoryBudget.from_mb()
        self.vault = vault
        self.query_expander = query_expander
        self.chunks = chunk_cache or ChunkCache(vault, budget_bytes=budget.chunk_cache_bytes)
        self.index = LexicalIndex(vault, policy, budget)

    def expand(self, query: str, options: SearchOptions) -> ExpandedQuery:
        """The expansion a query will use: given, from the expander, or the fallback."""
        if options.pre_expanded_query is not None:
            return replace(options.pre_expanded_query, source="pre-expanded")
        if self.query_expander is not None:
            return self.query_expander.expand(query)
        return fallback_expansion(query)

    async def aexpand(self, query: str, options: SearchOptions) -> ExpandedQuery:
        """Async twin of `expand`: an expander's `aexpand` is awaited when it has one."""
        expander = self.query_expander
        if options.pre_expanded_query is not None or expander is None:
            return self.expand(query, options)
        if isinstance(expander, AsyncQueryExpanderLike):
            return await expander.aexpand(query)
        return await asyncio.to_thread(expander.expand, query)

    def retrieve(self, query: str, options: SearchOptions | None = None) -> SearchResult:
        """Rank the vault's chunks for a query.

        Args:
            query: the query; blank gives no results, longer than 1000 characters is cut.
            options: per-query options (clamped).

        Returns:
            Ranked chunks, best first, and the expansion used.
        """
        query = _clean_query(query)
        if not query:
            return SearchResult([], EMPTY_EXPANSION)
        opts = (options or SearchOptions()).clamped()
        try:
            expansion = self.expand(query, opts)
        except Exception:
            logger.exception("Query expansion failed for %r; using the query's own terms", query)
            expansion = fallback_expansion(query)
        return self.retrieve_expanded(query, expansion, opts)

    async def aretrieve(self, query: str, options: SearchOptions | None = None) -> SearchResult:
        """Async twin of `retrieve`: the expansion is awaited, ranking runs in a thread.

        Args:
            query: the query, as for `retrieve`.
            options: per-query options (clamped).

        Returns:
            As `retrieve`.
        """
        query = _clean_query(query)
        if not query:
            return SearchResult([], EMPTY_EXPANSION)
        opts = (options or SearchOptions()).clamped()
        try:
            expansion = await self.aexpand(query, opts)
        except Exception:
            logger.exception("Query expansion failed for %r; using the query's own terms", query)
            expansion = fallback_expansion(query)
        # Scanning and ranking are CPU and file work: keep them off the event loop.
        return await asyncio.to_thread(self.retrieve_expanded, query, expansion, opts)

    def retrieve_expanded(
        self, query: str, expansion: ExpandedQuery, options: SearchOptions
    ) -> SearchResult:
        """Rank with an expansion already made (the step after `expand`/`aexpand`).

        Args:
            query: the trimmed query.
            expansion: its expansion.
            options: clamped options.

        Returns:
            Ranked chunks, best first, and the expansion.
        """
        try:
            self.index.sync()
            ranked = self._rank(query, expansion, options)
            # Not worth waiting for: the lock may be held through a handover's load.
            if self.index.lock.acquire(blocking=False):
                try:
                    self.index.trim_pages()
                finally:
                    self.index.lock.release()
            return SearchResult(ranked, expansion)
        except Exception:
            logger.exception("Lexical search failed for %r; falling back to recall order", query)
        try:
            hits = self.index.recall_fallback(query, options.max_results)
        except Exception:
            logger.exception("Recall fallback failed for %r", query)
            return SearchResult([], expansion)
        return SearchResult(
            [
                RankedChunk(f"{path}#0", 1.0 / (rank + 1), "grep")
                for rank, (path, _score) in enumerate(hits)
            ],
            expansion,
        )

    def _rank(self, query: str, expansion: ExpandedQuery, opts: SearchOptions) -> list[RankedChunk]:
        """Two tiers: notes recalled by the query itself, then notes only the expansion found.

        Tier one is exactly the search the salient terms make on their own: recalled with
        the query and its salient terms, ranked by the salient terms. Tier two
        holds the notes only the alternative phrasings or related terms recalled; most of
        them contain no salient term and would score nothing, so they are ranked by the
        expansion's terms and placed below tier one. The expansion can thus add notes
        but never reorder or crowd out the notes the query's own terms find.
        """
        salient = list(dict.fromkeys([*expansion.salient_terms, *opts.salient_terms]))
        found, widened = self._recall(query, expansion, salient, opts.candidate_limit)
        # Enough hits that one long note cannot fill the list before note diversity applies.
        limit = max(3 * RETURN_ALL_LIMIT, opts.max_results * 3)
        tier_one = self._score(found, salient or [query], limit, opts)
        variant_terms = [t for q in expansion.expanded_queries for t in extract_salient_terms(q)]
        expansion_terms = [*salient, *expansion.expanded_terms, *variant_terms]
        tier_two = self._score(widened, expansion_terms, limit, opts)
        for _hit, explanation in tier_two:
            explanation["expansionOnly"] = True
        if tier_one and tier_two:
            ceiling = EXPANSION_ONLY_CEILING * min(hit.score for hit, _ in tier_one)
            top = max(hit.score for hit, _ in tier_two)
            for hit, _explanation in tier_two:
                hit.score *= ceiling / top
        scored = [*tier_one, *tier_two]
        if not scored:
            return []
        normalised = normalize_scores([hit.score for hit, _ in scored], opts.normalization)
        ranked = []
        for (hit, explanation), final in zip(scored, normalised, strict=True):
            explanation["baseScore"] = hit.score
            explanation["finalScore"] = final
            ranked.append(RankedChunk(hit.id, final, "fulltext", explanation))
        ranked.sort(key=lambda r: r.score, reverse=True)
        return select_diverse_top_k(
            ranked,
            opts.max_results,
            score=lambda r: r.score,
            note=lambda r: note_path_from_chunk_id(r.id),
        )

    def _recall(
        self, query: str, expansion: ExpandedQuery, salient: list[str], limit: int
    ) -> tuple[list[str], list[str]]:
        """Notes the query's own terms recall, and the further notes only the expansion does.

        The expansion only gets the candidate slots the query's own terms leave free.
        """
        own_terms = _lowered([query, *salient])
        all_terms = _lowered([*expansion.recall_terms(), *salient])
        with self.index.lock:
            found = self.index.candidates(own_terms, limit)
            room = limit - len(found)
            if room <= 0 or not set(all_terms) - set(own_terms):
                return found, []
            widened = self.index.candidates(all_terms, limit)
        known = set(found)
        return found, [path for path in widened if path not in known][:room]

    def chunk(self, chunk_id: str) -> tuple[NoteInfo, Chunk] | None:
        """A chunk by id with its note's record, None when the note or chunk is gone."""
        info = self.index.note(note_path_from_chunk_id(chunk_id))
        chunk = None if info is None else self.chunks.get_chunk(chunk_id, info)
        return None if info is None or chunk is None else (info, chunk)

    def _score(
        self, paths: list[str], terms: list[str], limit: int, opts: SearchOptions
    ) -> list[tuple[LexicalHit, dict[str, Any]]]:
        """BM25+ over the notes' chunks, then the folder and graph boosts among them."""
        index = self.index
        chunks = []
        for path in paths:
            stamp = self.vault.content_stamp(path)
            cached = None if stamp is None else self.chunks.cached(path, stamp)
            if cached is not None:
                chunks.extend(cached)
            elif (info := index.note(path)) is not None:
                chunks.extend(self.chunks.chunks_for(info))
        vocabulary = index.recall.vocabulary if index.index_ready else _vocabulary_of(chunks)
        hits = rank_chunks(chunks, terms, vocabulary, limit)
        explanations: list[dict[str, Any]] = [{"lexicalMatches": hit.matches} for hit in hits]
        if hits and opts.enable_lexical_boosts:
            folder_boosts = apply_folder_boost(hits, index.folder_sizes())
            # Links are known once every note is parsed: no graph boost while scanning.
            graph_boosts = apply_graph_boost(hits, self.vault) if index.has_links else {}
            for hit, explanation in zip(hits, explanations, strict=True):
                folder = folder_of(hit.note_path)
                if folder in folder_boosts:
                    explanation["folderBoost"] = folder_boosts[folder]
                if hit.note_path in graph_boosts:
                    explanation["graphConnections"] = graph_boosts[hit.note_path]
        return list(zip(hits, explanations, strict=True))


def _vocabulary_of(chunks: list[IndexedChunk]) -> Vocabulary:
    """The terms of some chunks, for prefix matching among them while there is no index."""
    terms = {term for chunk in chunks for held in chunk.terms.values() for term in held}
    return Vocabulary(SortedTerms.from_sorted(sorted(terms)))


def _clean_query(query: str) -> str:
    """The query trimmed and composed (NFC): `re\u0301sume\u0301` is the word `résumé`."""
    query = clamp_query(query)
    return query if query.isascii() else unicodedata.normalize("NFC", query)


def _lowered(terms: list[str]) -> list[str]:
    return list(dict.fromkeys(t.strip().lower() for t in terms if t.strip()))


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))
