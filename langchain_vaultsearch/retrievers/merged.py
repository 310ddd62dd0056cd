"""MergedSemanticRetriever: lexical and semantic search run together and fused.

Words a note contains are lexical search's strength; questions in other words are the
embedding model's. Both run on every query (concurrently with `ainvoke`), each asked for
about twice the results wanted, and `fusion.fuse` makes one list. If the semantic side
fails (a model error, a Chroma server down), the lexical results still come back and
the failure is logged: semantic search is an improvement, never a dependency. A side
that does not answer within `semantic_timeout` counts as failed (`semantic.deadline`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path

from langchain_core.documents import Document
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from langchain_vaultsearch.cancellation import SearchCancelled, raise_if_cancelled
from langchain_vaultsearch.expansion.terms import QueryExpanderLike, fallback_expansion
from langchain_vaultsearch.filters import note_matches
from langchain_vaultsearch.fusion.asked_first import named_notes, ranked_asked_first
from langchain_vaultsearch.fusion.hybrid import HybridStages, diverse_top, top_k_for
from langchain_vaultsearch.fusion.scores import FusionMethod, FusionWeights, coverage_terms, fuse
from langchain_vaultsearch.fusion.typos import corrected_query
from langchain_vaultsearch.limits import (
    RETURN_ALL_LIMIT,
    clamp_query,
    result_count_field,
    result_limit,
)
from langchain_vaultsearch.query_plan import tag_filters, without_carried_tags
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.retrievers.vault_retriever import SearchCall, VaultRetriever
from langchain_vaultsearch.semantic.deadline import SEMANTIC_TIMEOUT_S, acall_within, call_within
from langchain_vaultsearch.semantic.errors import SEMANTIC_SEARCH
from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.semantic.retriever import VaultSemanticRetriever, with_index_progress
from langchain_vaultsearch.vault.vault import VaultPathOption

logger = logging.getLogger(__name__)


class MergedSemanticRetriever(VaultRetriever):
    """Search a vault lexically and semantically at once and fuse the two rankings.

    Setup:
        `pip install "langchain-vaultsearch[chroma,local]"` and a `VaultIndex`.

    Key init args:
        semantic_index: the vault's `VaultIndex`; its vault is shared with the lexical side.
        k: results per query (1..100); `return_all` returns up to 100.
        fusion: `calibrated` (default), `blend` (the original's) or `rrf`.
        lexical_weight / semantic_weight: each side's weight in the fusion.

    Instantiate:
        .. code-block:: python

            from langchain_vaultsearch import MergedSemanticRetriever, VaultIndex

            index = VaultIndex(vault_path="~/notes", embeddings=embeddings)
            retriever = MergedSemanticRetriever(semantic_index=index, k=10)

    Usage:
        .. code-block:: python

            docs = retriever.invoke("speed up slow database lookups")
            docs[0].metadata["source"]  # "lexical" or "semantic"

    Where both sides found a chunk, the lexical document is kept (it carries the term
    explanation); `score` and `rerank_score` hold the fused score, and
    `explanation["fusion"]` each side's part.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    semantic_index: VaultIndex = Field(exclude=True, repr=False)
    """The vector index of the vault."""
    vault_path: VaultPathOption = None
    """The vault folder; must be the index's when given."""
    k: int = result_count_field()
    """Results per query."""
    return_all: bool = False
    """Up to 100 results, each side asked for 100."""
    fusion: FusionMethod = "calibrated"
    """How the two rankings are combined."""
    lexical_weight: float = Field(default=1.0, ge=0.0)
    """Weight of the lexical ranking."""
    semantic_weight: float = Field(default=1.0, ge=0.0)
    """Weight of the semantic ranking."""
    tag_match_boost: float = Field(default=1.1, gt=0.0)
    """`blend`: factor for lexical chunks that matched a tag."""
    rrf_k: int = Field(default=60, ge=1)
    """`rrf`: the rank constant."""
    diverse_notes: bool = True
    """A list cut to k keeps every note's best chunk before any note's second, as lexical
    results do: without it one long note's chunks can fill the list (False: cut by score
    alone). What is kept stays in score order."""
    min_similarity_score: float = Field(default=0.1, ge=0.0, le=1.0)
    """Cosine similarity a semantic chunk needs."""
    concept_terms: int = Field(default=0, ge=0, le=10)
    """Concept-vocabulary terms that extend the semantic query (0: off)."""
    query_expander: QueryExpanderLike | None = Field(default=None, exclude=True, repr=False)
    """An LLM query expander for the lexical side."""
    lexical_retriever: TieredLexicalRetriever | None = Field(default=None, exclude=True, repr=False)
    """The lexical side; one over the index's vault is made when omitted."""

    semantic_timeout: float | None = Field(default=SEMANTIC_TIMEOUT_S, gt=0)
    """Seconds a query waits for the semantic side before answering with the lexical
    results alone (None: no limit); a stuck model or Chroma server costs the semantic
    results, never the answer."""

    stages: HybridStages | None = Field(default=None, exclude=True, repr=False)
    """Hybrid search: graph neighbours, recency tiers and a reranker after the fusion."""

    _semantic: VaultSemanticRetriever = PrivateAttr()
    _weights: FusionWeights = PrivateAttr()

    @model_validator(mode="after")
    def _build_sides(self) -> MergedSemanticRetriever:
        vault = self.semantic_index.vault
        if self.vault_path is not None and _resolved(self.vault_path) != vault.root:
            msg = f"vault_path {self.vault_path} is not the index's vault {vault.root}"
            raise ValueError(msg)
        if self.lexical_retriever is None:
            self.lexical_retriever = TieredLexicalRetriever(
                vault=vault, query_expander=self.query_expander
            )
        self._semantic = VaultSemanticRetriever(
            index=self.semantic_index,
            min_similarity_score=self.min_similarity_score,
            concept_terms=self.concept_terms,
        )
        self._weights = FusionWeights(
            lexical=self.lexical_weight,
            semantic=self.semantic_weight,
            tag_match_boost=self.tag_match_boost,
            rrf_k=self.rrf_k,
        )
        return self

    def _limits(self, k: int | None) -> tuple[int, int]:
        """(results returned, results asked of each side)."""
        wanted = self.k if k is None else result_limit(k)
        if self.return_all:
            return RETURN_ALL_LIMIT, RETURN_ALL_LIMIT
        return wanted, min(top_k_for(wanted), RETURN_ALL_LIMIT)

    def _lexical(self) -> TieredLexicalRetriever:
        if self.lexical_retriever is None:  # the validator always sets it
            msg = "MergedSemanticRetriever has no lexical retriever"
            raise RuntimeError(msg)
        return self.lexical_retriever

    def model_words(self, query: str, salient_terms: Sequence[str] | None = None) -> str:
        """What the embedding model is asked for a query, before typos are put right.

        A `#tag` no note carries as the word the lexical side searched, and not the
        carried tags, whose notes come first anyway (`without_carried_tags`). A caller
        that says the model skipped a query (`VaultSearch.model_skips`) reads it here,
        where the search reads it.
        """
        return without_carried_tags(*self._words_and_tags(clamp_query(query), salient_terms))

    def _words_and_tags(
        self, query: str, salient_terms: Sequence[str] | None
    ) -> tuple[str, frozenset[str]]:
        """The query as the lexical side searches it, and its tags some note carries."""
        return self._lexical().searched_words(query), self._carried_tags(query, salient_terms)

    def _search(self, query: str, call: SearchCall) -> list[Document]:
        limit, each = self._limits(call.k)
        config, salient_terms = call.config, call.salient_terms
        lexical = self._lexical().invoke(
            query, config, k=each, salient_terms=list(salient_terms or ())
        )
        raise_if_cancelled()
        words, tags = self._words_and_tags(query, salient_terms)
        try:
            # The model reads the words the lexical side corrected, not the typos.
            embedded = corrected_query(without_carried_tags(words, tags), lexical)
            semantic = call_within(
                self.semantic_timeout, partial(self._semantic.invoke, embedded, config, k=each)
            )
        except SearchCancelled:
            raise
        except Exception as exc:
            semantic = _without_semantic(query, exc)
        return self._fuse(query, words, lexical, semantic, limit=limit, tags=tags)

    async def _asearch(self, query: str, call: SearchCall) -> list[Document]:
        limit, each = self._limits(call.k)
        config, salient_terms = call.config, call.salient_terms
        # Which tags notes carry is read from the vault (a refresh may walk it): off the loop.
        words, tags = await asyncio.to_thread(self._words_and_tags, query, salient_terms)
        model_words = without_carried_tags(words, tags)

        def semantic_of(words: str) -> Awaitable[list[Document]]:
            # In a thread of its own, not the loop's executor: a stuck model or store must
            # neither hold the lexical results past the deadline nor fill the executor.
            search = partial(self._semantic.invoke, words, config, k=each)
            return acall_within(self.semantic_timeout, search)

        lexical, semantic = await asyncio.gather(
            self._lexical().ainvoke(query, config, k=each, salient_terms=list(salient_terms or ())),
            semantic_of(model_words),
            return_exceptions=True,
        )
        if isinstance(lexical, BaseException):
            raise lexical
        if isinstance(semantic, SearchCancelled):
            raise semantic
        corrected = corrected_query(model_words, lexical)
        if corrected != model_words and not isinstance(semantic, BaseException):
            # Both sides ran at once; a query with a typo asks the model again, corrected.
            try:
                semantic = await semantic_of(corrected)
            except SearchCancelled:
                raise
            except Exception as exc:
                semantic = exc
        if isinstance(semantic, BaseException):
            semantic = _without_semantic(query, semantic)
        return self._fuse(query, words, lexical, semantic, limit=limit, tags=tags)

    def _fuse(
        self,
        query: str,
        words: str,
        lexical: list[Document],
        semantic: list[Document],
        *,
        limit: int,
        tags: frozenset[str],
    ) -> list[Document]:
        # The query's own words (not an LLM's expansion): how much of what the user typed
        # lexical search found is what its weight should follow, each word as far as it
        # is rare in the vault.
        raise_if_cancelled()
        terms = fallback_expansion(words).salient_terms
        rarity = self._lexical().term_rarity(coverage_terms(terms)) if terms else None
        fused = fuse(
            lexical,
            semantic,
            # The hybrid stages see the whole pool (recency may lift a result from below),
            # and so do the diversity rule (a note's first chunk may come from below) and
            # the notes asked for first (a tagged note may come from below).
            limit=limit
            if self.stages is None and not self.diverse_notes and not tags
            else max(len(lexical) + len(semantic), 1),
            method=self.fusion,
            weights=self._weights,
            query_terms=terms,
            term_weights=rarity,
            depth=limit,
            context_share=self._lexical().min_similarity_score,
        )
        vault = self.semantic_index.vault

        def carries(doc: Document) -> bool:
            return note_matches(vault.get(_path(doc)), tags, None)

        def top(docs: list[Document], n: int, keep: Callable[[Document], bool]) -> list[Document]:
            return self._top(docs, query, n, keep)

        found = ranked_asked_first(
            fused,
            limit,
            top=top,
            carries=carries if tags else None,
            named=named_notes(query, vault),
        )
        return with_index_progress(found, self.semantic_index.progress)

    def _top(
        self, fused: list[Document], query: str, limit: int, keep: Callable[[Document], bool]
    ) -> list[Document]:
        """The best `limit` of a fused list: the hybrid stages, else each note's best first.

        Hybrid stages may bring in graph neighbours: `keep` says which of them a list takes.
        """
        if self.stages is None:
            return diverse_top(fused, limit) if self.diverse_notes else fused[:limit]
        found = self.stages.apply(fused, query, self.semantic_index.vault, top_n=limit)
        return [doc for doc in found if keep(doc)]

    def _carried_tags(self, query: str, salient_terms: Sequence[str] | None) -> frozenset[str]:
        """The query's `#tags` some note carries: their notes come first, merged scores rank.

        A tag is an exact term, so its notes are what is asked for first; among them,
        the order is the merged one (judged on three vaults, ranking tagged notes by the
        fused score instead of the lexical one raised tag queries by up to 0.17
        nDCG@10; see `benchmarks/fusion_lovo.py`). The places they leave go to the other
        notes (`fusion.asked_first`). A tag no note carries is a word and orders nothing.
        """
        typed = tag_filters(query, salient_terms)
        if not typed:
            return frozenset()
        carried = self.semantic_index.vault.tag_catalog.carried
        return frozenset(tag for tag in typed if carried(tag))


def _path(doc: Document) -> str:
    return str(doc.metadata.get("path", ""))


def _resolved(path: str | Path) -> Path:
    return Path(os.path.expanduser(path)).resolve()


def _without_semantic(query: str, error: BaseException) -> list[Document]:
    """No semantic results, and one line saying why (the traceback only at debug level).

    The semantic side is optional: its failure is the user's to hear about in a line
    they can act on, not a traceback over the lexical results that did come back.
    """
    # The semantic retriever's own errors already say what failed (`failures_as_unavailable`).
    reason = " ".join(str(error).split()).removeprefix(f"{SEMANTIC_SEARCH} failed: ")
    logger.warning(
        "Semantic search failed (%s); returning lexical results", reason or type(error).__name__
    )
    logger.debug("Semantic search failed for %r", query, exc_info=error)
    return []
