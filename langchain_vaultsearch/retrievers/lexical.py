"""TieredLexicalRetriever: the lexical core as a LangChain `BaseRetriever`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from langchain_core.documents import Document
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from langchain_vaultsearch.documents import chunk_document, result_order
from langchain_vaultsearch.expansion.terms import ExpandedQuery, QueryExpanderLike
from langchain_vaultsearch.limits import result_count_field, result_limit
from langchain_vaultsearch.query_plan import note_mentions, uncarried_tags_as_words
from langchain_vaultsearch.retrievers.vault_retriever import SearchCall, VaultRetriever
from langchain_vaultsearch.search.core import (
    CANDIDATE_LIMIT_RANGE,
    RankedChunk,
    SearchCore,
    SearchOptions,
    SearchResult,
)
from langchain_vaultsearch.search.lexical_index import IndexPolicy
from langchain_vaultsearch.search.memory_budget import (
    DEFAULT_MEMORY_BUDGET_MB,
    MIN_MEMORY_BUDGET_MB,
    MemoryBudget,
)
from langchain_vaultsearch.search.scoring import NormalizationMethod
from langchain_vaultsearch.vault.vault import Vault, VaultPathOption, open_vault


class TieredLexicalRetriever(VaultRetriever):
    """Search an Obsidian-style vault lexically: recall, BM25+ over chunks, boosts.

    Setup:
        `pip install langchain-vaultsearch`; no API key, no index to build: a large vault
        is indexed in the background after the first search, which scans meanwhile.

    Key init args:
        vault_path: the vault folder (or pass a shared `vault`).
        k: results per query (1..100, default 30); also `invoke(query, k=5)`.
        min_similarity_score: a result is `includeInContext` when its raw score is at
            least this share of the best raw score (0 keeps every result).
        query_expander: a `QueryExpander` (chat model) for recall from alternative
            phrasings and related terms; ranking stays with the query's salient terms.

    Instantiate:
        .. code-block:: python

            from langchain_vaultsearch import TieredLexicalRetriever

            retriever = TieredLexicalRetriever(vault_path="~/notes", k=10)

    Usage:
        .. code-block:: python

            docs = retriever.invoke("how do I set up OAuth in Next.js?")
            docs[0].metadata["path"], docs[0].metadata["score"]

    Each document is one chunk (`Document.id` = `"path#index"`) with the original's metadata
    keys: `path`, `title`, `chunkId`, `score`, `rerank_score`, `source`, `engine`,
    `includeInContext`, `mtime`, `ctime`, `tags`, `isChunk`, `explanation`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    vault_path: VaultPathOption = None
    """Vault folder; `~` is expanded. Ignored when `vault` is given."""
    vault: Vault | None = Field(default=None, exclude=True, repr=False)
    """A `Vault` shared with other retrievers, so the vault is scanned once."""
    k: int = result_count_field()
    """Results per query (the original's maxK)."""
    salient_terms: list[str] = Field(default_factory=list)
    """Extra ranking terms added to every query's salient terms."""
    min_similarity_score: float = Field(default=0.1, ge=0.0, le=1.0)
    """Share of the best raw score a result needs to be `includeInContext`."""
    enable_lexical_boosts: bool = True
    """Folder and graph boosts."""
    candidate_limit: int = Field(
        default=200, ge=CANDIDATE_LIMIT_RANGE[0], le=CANDIDATE_LIMIT_RANGE[1]
    )
    """Notes recall hands to ranking."""
    return_all: bool = False
    """Return up to 100 results (tag and time style queries)."""
    inclusions: list[str] | str | None = None
    """Only search notes matching one of these rules (`Folder`, `#tag`, `[[Note]]`, ...)."""
    exclusions: list[str] | str | None = None
    """Never search notes matching these rules."""
    normalization: NormalizationMethod = "minmax"
    """How raw scores map into [0.02, 0.98]."""
    pre_expanded_query: ExpandedQuery | None = Field(default=None, exclude=True)
    """Use this expansion instead of expanding each query."""
    query_expander: QueryExpanderLike | None = Field(default=None, exclude=True, repr=False)
    """An LLM query expander (e.g. `QueryExpander`): its salient terms rank, its
    alternative phrasings and related terms only add notes below those the query's own
    terms find. Without one, salient terms come from the query itself."""
    persist_index: bool = True
    """Save the index in `<vault>/.vaultsearch/` (vaults of 500+ notes) for fast restarts."""
    index_policy: IndexPolicy | None = Field(default=None, exclude=True)
    """When the index is saved, built in the background and frozen (`persist_index` wins
    over its `persist`)."""
    memory_budget_mb: int = Field(default=DEFAULT_MEMORY_BUDGET_MB, ge=MIN_MEMORY_BUDGET_MB)
    """Memory the search may hold for this vault besides the interpreter: the text it
    scans before the first index exists, cached chunks and the saved index's pages (see
    `MemoryBudget`). Measured at 100,000 notes in `benchmarks/`."""

    _core: SearchCore = PrivateAttr()
    _last_expansion: ExpandedQuery | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _open_vault(self) -> TieredLexicalRetriever:
        self.vault = open_vault(
            self.vault,
            self.vault_path,
            owner="TieredLexicalRetriever",
            inclusions=self.inclusions,
            exclusions=self.exclusions,
        )
        policy = replace(self.index_policy or IndexPolicy(), persist=self.persist_index)
        self._core = SearchCore(
            self.vault,
            query_expander=self.query_expander,
            policy=policy,
            memory_budget=MemoryBudget.from_mb(self.memory_budget_mb),
        )
        return self

    @property
    def last_query_expansion(self) -> ExpandedQuery | None:
        """The expansion of the most recent query (for `--explain` and debugging)."""
        return self._last_expansion

    @property
    def core(self) -> SearchCore:
        """The underlying pipeline, shared with the other retrievers of this package."""
        return self._core

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Index the vault now, or wait for the index the first search started building.

        The first search over a vault of 1,000+ notes with no saved index does not wait
        for the index: it scans the notes' text and starts indexing in the background.
        Call this to have every later search use the index (e.g. before timing them).

        Args:
            timeout: seconds to wait at most; None waits until the index is ready.

        Returns:
            True when searches use the index, False when the timeout came first.
        """
        return self._core.index.wait_for_index(timeout)

    def save_index(self) -> Path | None:
        """Index the vault now and save the index in `<vault>/.vaultsearch/`.

        Every later search, in this process or the next, starts from it: a one-shot
        command over a large vault then answers in milliseconds instead of scanning.

        Returns:
            The saved file, or None when it could not be saved (the reason is logged).
        """
        index = self._core.index
        index.wait_for_index()
        return index.save()

    @property
    def indexed_notes(self) -> int:
        """Notes the lexical index holds."""
        return self._core.index.recall.size

    @property
    def index_ready(self) -> bool:
        """False while searches scan because a large vault's first index is still building."""
        return self._core.index.index_ready

    def term_rarity(self, terms: Sequence[str]) -> dict[str, float] | None:
        """How rare each index term is in the vault (its IDF; 0 when no note holds it).

        None while a large vault's first index builds. Merged search weighs the share of
        the query the lexical side matched by it (`fusion.scores.lexical_coverage`).
        """
        return self._core.index.term_rarity(list(terms))

    def _search(self, query: str, call: SearchCall) -> list[Document]:
        query, terms = self._as_searched(query, call.salient_terms)
        result = self._core.retrieve(query, self._options(query, call.k, terms))
        if not result.results and (as_words := self._tags_as_words(query, terms)) is not None:
            query, terms = as_words
            result = self._core.retrieve(query, self._options(query, call.k, terms))
        return self._documents(result)

    async def _asearch(self, query: str, call: SearchCall) -> list[Document]:
        # The expander's model call is awaited; file and CPU work runs in threads.
        query, terms = await asyncio.to_thread(self._as_searched, query, call.salient_terms)
        result = await self._core.aretrieve(query, self._options(query, call.k, terms))
        if not result.results and (as_words := self._tags_as_words(query, terms)) is not None:
            query, terms = as_words
            result = await self._core.aretrieve(query, self._options(query, call.k, terms))
        return await asyncio.to_thread(self._documents, result)

    def searched_words(self, query: str) -> str:
        """The query as this retriever searches it: a `#tag` no note carries as its words.

        Merged search gives the model the same text, so both sides read `#scrum` alike.
        """
        return self._as_searched(query, None)[0]

    def _as_searched(
        self, query: str, salient_terms: Sequence[str] | None
    ) -> tuple[str, list[str]]:
        """The query and terms with each `#tag` no note carries as words, not a tag term.

        Which tags notes carry is known once the vault's notes are read: while a large
        vault's first index builds (searches scan), tags stay tags rather than have this
        query read every note first.
        """
        terms = list(salient_terms or ())
        if "#" not in query and not any("#" in term for term in terms):
            return query, terms
        index = self._core.index
        if not index.feed.started:
            # The first search decides whether a large vault is scanned while it builds:
            # let it decide before the tags are read (the search itself syncs again).
            index.sync()
        if not index.index_ready:
            return query, terms
        carried = self._core.vault.tag_catalog.carried
        words = [uncarried_tags_as_words(term, carried) for term in terms]
        return uncarried_tags_as_words(query, carried), words

    def _tags_as_words(self, query: str, terms: Sequence[str]) -> tuple[str, list[str]] | None:
        """The query and terms with every `#tag` as its words, after a scan found nothing.

        While a large vault's first index builds, which tags notes carry is not known
        (`_as_searched`), and a tag no note carries found nothing at all (`#咖啡` over a
        Chinese vault of 3,176 notes, for the first 10 s): a tag search that found
        nothing then is one no note matched as a tag, and its words are searched instead.
        None when the index is ready (the tags were decided) or nothing would change.
        """
        if self._core.index.index_ready:
            return None
        as_words = uncarried_tags_as_words(query, _carried_by_none)
        if as_words == query:
            return None
        return as_words, [uncarried_tags_as_words(term, _carried_by_none) for term in terms]

    def _options(
        self, query: str, k: int | None, salient_terms: Sequence[str] | None
    ) -> SearchOptions:
        k = self.k if k is None else result_limit(k)
        extra = [*self.salient_terms, *(salient_terms or ()), *note_mentions(query or "")]
        return SearchOptions(
            max_results=k,
            candidate_limit=self.candidate_limit,
            salient_terms=tuple(dict.fromkeys(extra)),
            enable_lexical_boosts=self.enable_lexical_boosts,
            return_all=self.return_all,
            pre_expanded_query=self.pre_expanded_query,
            normalization=self.normalization,
        )

    def _documents(self, result: SearchResult) -> list[Document]:
        with self._lock:
            self._last_expansion = result.expansion
        documents = self._to_documents(result.results)
        documents.sort(key=result_order)
        return documents

    def _to_documents(self, results: list[RankedChunk]) -> list[Document]:
        best = max((r.explanation.get("baseScore", r.score) for r in results), default=0.0)
        documents = []
        for result in results:
            found = self._core.chunk(result.id)
            if found is None or not found[1].content:
                continue
            info, chunk = found
            raw = result.explanation.get("baseScore", result.score)
            documents.append(
                chunk_document(
                    info,
                    chunk,
                    score=result.score,
                    source="lexical",
                    engine=result.engine,
                    include_in_context=raw >= self.min_similarity_score * best,
                    explanation=result.explanation,
                )
            )
        return documents


def _carried_by_none(_tag: str) -> bool:
    return False
