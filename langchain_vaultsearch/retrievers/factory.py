"""RetrieverFactory: the one retriever a chain needs, choosing the right search per query.

Priority, as in the original: a self-hosted retriever of the user's when its health
check passes, then merged lexical + semantic search when a vector index is given, then
lexical search. Tag queries (`#project`) and time queries ("last week") always go
lexical: tags are exact terms that embeddings blur, and a period is answered by the
filter's notes of that period, not by the meaning of "last week".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from langchain_vaultsearch.expansion.terms import QueryExpanderLike
from langchain_vaultsearch.fusion import FusionMethod
from langchain_vaultsearch.query_syntax import parse_query
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.search.core import MAX_RESULTS_RANGE
from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)

RetrieverType = Literal["self-host", "merged", "lexical"]


class RetrieverFactory(BaseRetriever):
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

    model_config = ConfigDict(arbitrary_types_allowed=True)

    vault_path: str | None = None
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
    k: int = Field(default=30, ge=MAX_RESULTS_RANGE[0], le=MAX_RESULTS_RANGE[1], strict=True)
    """Results per query."""
    fusion: FusionMethod = "calibrated"
    """Fusion of merged search."""
    query_expander: QueryExpanderLike | None = Field(default=None, exclude=True, repr=False)
    """An LLM query expander for lexical search."""

    _lexical: TieredLexicalRetriever = PrivateAttr()
    _merged: MergedSemanticRetriever | None = PrivateAttr(default=None)
    _last_type: RetrieverType | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _build(self) -> RetrieverFactory:
        vault = self.vault
        if self.semantic_index is not None:
            if vault is not None and vault is not self.semantic_index.vault:
                msg = "pass the index's own vault (semantic_index.vault), or none"
                raise ValueError(msg)
            vault = self.semantic_index.vault
        if vault is None:
            if not self.vault_path:
                msg = "RetrieverFactory needs vault_path, vault or semantic_index"
                raise ValueError(msg)
            vault = Vault(self.vault_path)
        self.vault = vault
        self._lexical = TieredLexicalRetriever(vault=vault, query_expander=self.query_expander)
        if self.semantic_index is not None:
            self._merged = MergedSemanticRetriever(
                semantic_index=self.semantic_index,
                k=self.k,
                fusion=self.fusion,
                lexical_retriever=self._lexical,
            )
        return self

    @property
    def retriever_type(self) -> RetrieverType:
        """The retriever the last query ran (before any query: what a plain query would)."""
        return self._last_type or self.choose("")

    @property
    def lexical_retriever(self) -> TieredLexicalRetriever:
        """The lexical retriever every choice falls back to (shared with merged search)."""
        return self._lexical

    def choose(self, query: str, salient_terms: Sequence[str] | None = None) -> RetrieverType:
        """Which retriever a query runs, without running it.

        Args:
            query: the query.
            salient_terms: terms a caller picked; a `#tag` among them forces lexical
                search as a tag in the query does.
        """
        if parse_query(query, salient_terms=salient_terms).needs_lexical:
            return "lexical"
        if self.self_host_retriever is not None and self._self_host_healthy():
            return "self-host"
        return "merged" if self._merged is not None else "lexical"

    def _self_host_healthy(self) -> bool:
        check = self.self_host_health_check
        if check is None:
            return True
        try:
            return bool(check())
        except Exception:
            logger.warning("The self-hosted retriever's health check failed", exc_info=True)
            return False

    def _pick(
        self, query: str, salient_terms: Sequence[str] | None
    ) -> tuple[RetrieverType, BaseRetriever]:
        kind = self.choose(query, salient_terms)
        with self._lock:
            self._last_type = kind
        if kind == "self-host" and self.self_host_retriever is not None:
            return kind, self.self_host_retriever
        if kind == "merged" and self._merged is not None:
            return kind, self._merged
        return "lexical", self._lexical

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        salient_terms: Sequence[str] | None = None,
    ) -> list[Document]:
        kind, retriever = self._pick(query, salient_terms)
        config: Any = {"callbacks": run_manager.get_child()}
        return retriever.invoke(
            query, config, **_kwargs(kind, self.k if k is None else k, salient_terms)
        )

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        salient_terms: Sequence[str] | None = None,
    ) -> list[Document]:
        kind, retriever = self._pick(query, salient_terms)
        config: Any = {"callbacks": run_manager.get_child()}
        return await retriever.ainvoke(
            query, config, **_kwargs(kind, self.k if k is None else k, salient_terms)
        )


def _kwargs(kind: RetrieverType, k: int, salient_terms: Sequence[str] | None) -> dict[str, Any]:
    """Per-call options each retriever takes (a user's retriever takes none)."""
    if kind == "self-host":
        return {}
    return {"k": k, "salient_terms": list(salient_terms or ())}
