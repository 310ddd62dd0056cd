"""The per-call arguments every vault retriever takes, read in one place.

LangChain hands `invoke(query, k=..., salient_terms=...)` keyword arguments on to
`_get_relevant_documents`; the lexical, merged and `auto` retrievers all take the same two,
and pass child callbacks to the retrievers they call. Reading them once here keeps the
three in step: a subclass writes `_search` and `_asearch` over a `SearchCall`, and the
query as every part reads it (`clamp_query`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from langchain_vaultsearch.limits import checked_terms, clamp_query


@dataclass(frozen=True)
class SearchCall:
    """What one call asks for beyond the query.

    Attributes:
        k: results wanted; None is the retriever's own `k`.
        salient_terms: the query's salient terms (e.g. from an LLM tool call), if given.
        config: the config for the retrievers this one calls (its run's child callbacks).
    """

    k: int | None
    salient_terms: Sequence[str] | None
    config: Any


class VaultRetriever(BaseRetriever):
    """A `BaseRetriever` whose calls take `k` and `salient_terms` (see the module)."""

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        salient_terms: Sequence[str] | None = None,
    ) -> list[Document]:
        call = SearchCall(k, checked_terms(salient_terms), {"callbacks": run_manager.get_child()})
        return self._search(clamp_query(query), call)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        salient_terms: Sequence[str] | None = None,
    ) -> list[Document]:
        call = SearchCall(k, checked_terms(salient_terms), {"callbacks": run_manager.get_child()})
        return await self._asearch(clamp_query(query), call)

    def _search(self, query: str, call: SearchCall) -> list[Document]:
        raise NotImplementedError

    async def _asearch(self, query: str, call: SearchCall) -> list[Document]:
        raise NotImplementedError
