"""RetrieverFactory: the one retriever a chain needs, choosing the right search per query.

The choice is the query plan's (`query_plan.plan_query`, the one place queries are read):
as in the original, a self-hosted retriever of the user's when its health check passes,
then merged lexical + semantic search when a vector index is given, then lexical search.
A `#tag` some note carries puts its notes first, ranked by merged scores when there is a
vector index (the other notes fill the places they leave). A period in the query's words
("last week") routes nothing: a retriever has no filter to answer it, and words are a
guess at a period ("push a task I could not do today onto tomorrow").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from langchain_vaultsearch.expansion.terms import QueryExpanderLike
from langchain_vaultsearch.fusion.asked_first import named_first, named_notes
from langchain_vaultsearch.fusion.hybrid import (
    GraphExpansion,
    HybridStages,
    RecencyTiers,
    top_k_for,
)
from langchain_vaultsearch.fusion.scores import FusionMethod
from langchain_vaultsearch.limits import MAX_RESULTS_RANGE, result_count_field, result_limit
from langchain_vaultsearch.query_plan import Available, QueryPlan, Route, plan_query
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.retrievers.vault_retriever import SearchCall, VaultRetriever
from langchain_vaultsearch.semantic.deadline import SEMANTIC_TIMEOUT_S
from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.vault.vault import Vault, VaultPathOption, open_vault

logger = logging.getLogger(__name__)

FactoryMode = Literal["auto", "hybrid"]


class RetrieverFactory(VaultRetriever):
    """Pick, per query, the best retriever available for a vault, and run it.

    Key init args:
        vault_path / vault: the vault.
        semantic_index: a `VaultIndex`; with it, queries run merged search.
        self_host_retriever: any retriever of the user's (e.g. a hosted search service),
            used first when `self_host_health_check` passes (or when there is no check).
        k: results per query (1..100).

    Instantiate:
        .. code-block:: python

            from langchain_vaultsearch import RetrieverFactory

            retriever = RetrieverFactory(vault_path="~/notes", semantic_index=index)
            docs = retriever.invoke("what did we decide about auth?")
            retriever.retriever_type  # "merged"

    `retriever_type` says which retriever ran last; `choose(query)` says which one a
    query would run without running it.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    vault_path: VaultPathOption = None
    """The vault folder (or pass `vault`, or a `semantic_index`)."""
    vault: Vault | None = Field(default=None, exclude=True, repr=False)
    """A `Vault` shared with other retrievers."""
    semantic_index: VaultIndex | None = Field(default=None, exclude=True, repr=False)
    """The vault's vector index; enables merged search."""
    self_host_retriever: BaseRetriever | None = Field(default=None, exclude=True, repr=False)
    """A retriever of the user's, preferred while healthy."""
    self_host_health_check: Callable[[], bool] | None = Field(
        default=None, exclude=True, repr=False
    )
    """Returns True while the self-hosted retriever can serve; errors count as False."""
    k: int = result_count_field()
    """Results per query."""
    fusion: FusionMethod = "calibrated"
    """Fusion of merged search."""
    diverse_notes: bool = True
    """Merged and hybrid lists cut to k keep every note's best chunk before any note's
    second, as lexical lists do, in score order (False: cut by score alone)."""
    mode: FactoryMode = "auto"
    """`hybrid` adds seed 002's stages after fusion: graph neighbours, recency, a reranker."""
    graph: bool = True
    """`hybrid`: graph neighbours of the best results join them."""
    graph_expansion: GraphExpansion = Field(default_factory=GraphExpansion)
    """`hybrid`: how many neighbours join, and at what share of their seed's score."""
    recency: bool = True
    """`hybrid`: recently changed notes score x1.2 (7 days) and x1.1 (30 days)."""
    reranker: BaseDocumentCompressor | None = Field(default=None, exclude=True, repr=False)
    """`hybrid`: re-sorts the top `rerank_top_n` results (off by default)."""
    rerank_top_n: int = Field(default=10, ge=1, le=MAX_RESULTS_RANGE[1])
    """`hybrid`: results the reranker re-sorts."""
    query_expander: QueryExpanderLike | None = Field(default=None, exclude=True, repr=False)
    """An LLM query expander for lexical search."""
    semantic_timeout: float | None = Field(default=SEMANTIC_TIMEOUT_S, gt=0)
    """Merged and hybrid search: seconds a query waits for the semantic side before
    answering with the lexical results alone (None: no limit)."""
    lexical_side: TieredLexicalRetriever | None = Field(default=None, exclude=True, repr=False)
    """A lexical retriever over the same vault to share (its index is built once)."""

    _lexical: TieredLexicalRetriever = PrivateAttr()
    _merged: MergedSemanticRetriever | None = PrivateAttr(default=None)
    _stages: HybridStages | None = PrivateAttr(default=None)
    _notes: Vault = PrivateAttr()
    _last_type: Route | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _build(self) -> RetrieverFactory:
        vault = self.vault
        if self.semantic_index is not None:
            if vault is not None and vault is not self.semantic_index.vault:
                msg = "pass the index's own vault (semantic_index.vault), or none"
                raise ValueError(msg)
            vault = self.semantic_index.vault
        vault = open_vault(
            vault,
            self.vault_path,
            owner="RetrieverFactory",
            needs="vault_path, vault or semantic_index",
        )
        self.vault = self._notes = vault
        shared = self.lexical_side
        if shared is not None and shared.vault is not vault:
            msg = "lexical_side must search the factory's vault"
            raise ValueError(msg)
        self._lexical = shared or TieredLexicalRetriever(
            vault=vault, query_expander=self.query_expander
        )
        if self.mode == "hybrid":
            self._stages = HybridStages(
                graph=self.graph_expansion if self.graph else None,
                recency=RecencyTiers() if self.recency else None,
                reranker=self.reranker,
                rerank_top_n=self.rerank_top_n,
                diverse_notes=self.diverse_notes,
            )
        elif self.reranker is not None:
            msg = 'a reranker runs in mode="hybrid"; pass mode="hybrid" too'
            raise ValueError(msg)
        if self.semantic_index is not None:
            self._merged = MergedSemanticRetriever(
                semantic_index=self.semantic_index,
                k=self.k,
                fusion=self.fusion,
                lexical_retriever=self._lexical,
                stages=self._stages,
                diverse_notes=self.diverse_notes,
                semantic_timeout=self.semantic_timeout,
            )
        return self

    @property
    def retriever_type(self) -> Route:
        """The retriever the last query ran (before any query: what a plain query would)."""
        return self._last_type or self.choose("")

    @property
    def lexical_retriever(self) -> TieredLexicalRetriever:
        """The lexical retriever every choice falls back to (shared with merged search)."""
        return self._lexical

    def choose(self, query: str, salient_terms: Sequence[str] | None = None) -> Route:
        """Which retriever a query runs (`self-host`, `hybrid`, `merged` or `lexical`).

        Args:
            query: the query.
            salient_terms: terms a caller picked; a carried `#tag` among them counts as
                a tag in the query does.
        """
        return self.plan(query, salient_terms=salient_terms).route

    def plan(
        self, query: str, *, k: int | None = None, salient_terms: Sequence[str] | None = None
    ) -> QueryPlan:
        """The query's plan over what this factory can search with, without running it."""
        wanted = self.k if k is None else result_limit(k)
        return plan_query(query, k=wanted, available=self.available, salient_terms=salient_terms)

    def model_words(self, query: str, salient_terms: Sequence[str] | None = None) -> str | None:
        """What the embedding model is asked for a query, or None when its plan asks none."""
        if self._merged is None or self.choose(query, salient_terms) not in ("hybrid", "merged"):
            return None
        return self._merged.model_words(query, salient_terms)

    @property
    def available(self) -> Available:
        """What this factory can search with, for the query plan to choose among."""
        return Available(
            semantic=self._merged is not None,
            hybrid=self._stages is not None,
            self_host=None if self.self_host_retriever is None else self._self_host_healthy,
            tag_carried=self._notes.tag_catalog.carried,
        )

    def _self_host_healthy(self) -> bool:
        check = self.self_host_health_check
        if check is None:
            return True
        try:
            return bool(check())
        except Exception:
            logger.warning("The self-hosted retriever's health check failed", exc_info=True)
            return False

    def _route(self, query: str, k: int | None, salient_terms: Sequence[str] | None) -> _Routed:
        """The retriever a query runs and its arguments, decided by the query's plan."""
        wanted = self.k if k is None else result_limit(k)
        kind = self.choose(query, salient_terms)
        with self._lock:
            self._last_type = kind
        if kind == "self-host" and self.self_host_retriever is not None:
            return _Routed(self.self_host_retriever, {}, wanted, None, names_first=False)
        if kind in ("hybrid", "merged") and self._merged is not None:
            # Merged search puts the named notes first itself.
            kwargs = _kwargs(wanted, salient_terms)
            return _Routed(self._merged, kwargs, wanted, None, names_first=False)
        if self._stages is not None:
            # Hybrid without a vector index: the stages over lexical search.
            pool = _kwargs(top_k_for(wanted), salient_terms)
            return _Routed(self._lexical, pool, wanted, self._stages, names_first=True)
        return _Routed(
            self._lexical, _kwargs(wanted, salient_terms), wanted, None, names_first=True
        )

    def _search(self, query: str, call: SearchCall) -> list[Document]:
        routed = self._route(query, call.k, call.salient_terms)
        found = routed.retriever.invoke(query, call.config, **routed.kwargs)
        return routed.finish(found, query, self._notes)

    async def _asearch(self, query: str, call: SearchCall) -> list[Document]:
        routed = self._route(query, call.k, call.salient_terms)
        found = await routed.retriever.ainvoke(query, call.config, **routed.kwargs)
        return routed.finish(found, query, self._notes)


@dataclass(frozen=True)
class _Routed:
    """One run of a chosen retriever: the sync and async paths share everything but the call.

    Attributes:
        retriever: what runs.
        kwargs: its per-call options (a user's retriever takes none).
        wanted: the documents asked for.
        stages: hybrid stages to apply to the pool it returns, if any.
        names_first: put the `[[named]]` notes first (a user's retriever is left as it
            answers; merged search does it itself).
    """

    retriever: BaseRetriever
    kwargs: dict[str, Any]
    wanted: int
    stages: HybridStages | None
    names_first: bool

    def finish(self, found: list[Document], query: str, vault: Vault) -> list[Document]:
        if self.stages is not None:
            found = self.stages.apply(found, query, vault, top_n=self.wanted)
        return named_first(found, named_notes(query, vault)) if self.names_first else found


def _kwargs(k: int, salient_terms: Sequence[str] | None) -> dict[str, Any]:
    """Per-call options of this package's retrievers."""
    return {"k": min(k, MAX_RESULTS_RANGE[1]), "salient_terms": list(salient_terms or ())}
