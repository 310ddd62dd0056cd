"""`local_search`: one question, the notes it names and the chunks that answer it.

The orchestration layer of the original's `localSearch` tool, over LangChain retrievers:

1. `FilterRetriever` always runs: the `[[notes]]` the question names, its `#tags`, or the
   notes of its time range. Its documents are never cut.
2. The main retriever (any `BaseRetriever`; by default a `RetrieverFactory` over the
   same `Vault`, merged search when it has a vector index) runs unless the caller gave a
   time range (`time_range`, as an LLM's tool call does): then, as in the original, that
   period's notes answer alone. A period read from the question's words is a guess ("push
   a task I could not do today onto tomorrow" names no period of notes; answered by the
   filter alone it got the notes edited today), so the search runs too. A question with a
   carried `#tag` runs the search its plan names: merged search when the main retriever
   has a vector index, else lexical search (also beside a retriever of the user's, which
   need not know tags). The filter's tagged notes and the notes of a period read from the
   question then come in the search's order, chosen before the filter cuts them to its
   limit (`FilterRetriever.run`'s `first`, so the search runs first): newest first, as the
   filter returned them, the notes that answer could fall outside the 30 the context
   shows with their text, or outside the 100 the filter keeps (judged: 0.538 to 0.886
   nDCG@10 on 28 carried-tag questions, `fusion/asked_first.py`).
3. Search documents of notes a filter document already covers are dropped
   (`merge_filter_and_search_results`), then the search documents are cut to one chunk per
   note (the best scored): the context shows more notes instead of more chunks of one.
4. Filter documents come first, then search documents, at most 30, or 100 for tag and
   time queries, which ask for "all of them".

Every returned document carries `isFilterResult` and `matchType` (how a filter document
matched; for a search document its `source`, e.g. `lexical`), so the context can split
`<filterResults>` from `<searchResults>`.

`alocal_search` runs the filter and the main retriever concurrently (the search first when
it orders a tag's or a period's notes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig

from langchain_vaultsearch.cancellation import raise_if_cancelled
from langchain_vaultsearch.context.builder import (
    ContextOptions,
    LocalSearchContext,
    build_local_search_context,
)
from langchain_vaultsearch.documents import document_score
from langchain_vaultsearch.filters import FilterResult, FilterRetriever
from langchain_vaultsearch.fusion.merge import merge_filter_and_search_results
from langchain_vaultsearch.limits import DEFAULT_K, result_limit
from langchain_vaultsearch.query_plan import Available, QueryPlan, plan_query
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.retrievers.keyword import KeywordDocumentRetriever
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.time_ranges import TimeRange
from langchain_vaultsearch.vault.vault import Vault

__all__ = ["LocalSearchResult", "alocal_search", "local_search"]

VAULT_RETRIEVERS = (TieredLexicalRetriever, MergedSemanticRetriever, RetrieverFactory)
"""Retrievers that take `k` and `salient_terms` per call."""


@dataclass(frozen=True)
class LocalSearchResult:
    """What `local_search` found for one question.

    Attributes:
        documents: filter documents (whole notes, in the filter's order), then search
            documents (one chunk per note, best first); at most `limit`.
        filter_result: the filter's report: mentions and how they resolved, the tags and
            time range applied, whether matches were left out.
        time_range: the time range searched, if any.
        limit: the cap that applied: `k`, or 100 for tag and time queries.
        searched: whether the main (or forced lexical) retriever ran; it does not with a
            given time range.
    """

    documents: list[Document]
    filter_result: FilterResult
    time_range: TimeRange | None
    limit: int
    searched: bool

    @property
    def filter_documents(self) -> list[Document]:
        """The documents the question named (`isFilterResult` true)."""
        return [doc for doc in self.documents if doc.metadata["isFilterResult"]]

    @property
    def search_documents(self) -> list[Document]:
        """The ranked documents (`isFilterResult` false)."""
        return [doc for doc in self.documents if not doc.metadata["isFilterResult"]]

    def build_context(self, options: ContextOptions | None = None) -> LocalSearchContext:
        """The `<localSearch>` context a chat model answers from, with its sources.

        Args:
            options: limits and wording of the context; defaults match the original.
        """
        label = self.time_range.label if self.time_range is not None else None
        # Beside a search (a period read from the question), the search's order stands.
        order = False if self.searched else None
        return build_local_search_context(
            self.documents, time_range_label=label, options=options, time_order=order
        )


def local_search(
    query: str,
    *,
    vault: Vault | None = None,
    vault_path: str | None = None,
    filter_retriever: FilterRetriever | None = None,
    retriever: BaseRetriever | None = None,
    lexical_retriever: TieredLexicalRetriever | None = None,
    time_range: TimeRange | str | None = None,
    read_period: bool = True,
    salient_terms: Sequence[str] | None = None,
    k: int = DEFAULT_K,
    now: datetime | None = None,
    config: RunnableConfig | None = None,
) -> LocalSearchResult:
    """Search a vault for a question: the notes it names, then the chunks that answer it.

    Pass the retrievers once made to reuse their scan and index across questions; with
    only `vault` or `vault_path`, both are made for this call (fine for one question,
    slow for many).

    Args:
        query: the question; `[[mentions]]`, `#tags` and a period ("last week") are
            read from it.
        vault: the vault the default retrievers share.
        vault_path: the vault folder, when neither `vault` nor a retriever with a vault
            is given.
        filter_retriever: the filter to use; its vault is the shared one.
        retriever: the main retriever, any `BaseRetriever`; defaults to a
            `RetrieverFactory` over the shared vault (lexical search; pass a factory or a
            `MergedSemanticRetriever` with a `VaultIndex` for merged search).
        lexical_retriever: the retriever of carried-tag questions when their plan says
            lexical (no vector index, or a retriever of your own); by default the lexical
            side of `retriever`, or one made over the shared vault.
        time_range: a `TimeRange`, or an expression such as "last week", instead of the
            period the question names; only the filter answers it.
        read_period: read the period from the question when `time_range` is None: its
            notes come first, ranked by the search, and the search fills the rest.
        salient_terms: the question's salient terms (e.g. from an LLM tool call); terms
            starting with `#` are the tag filters, and a lexical retriever ranks with
            them.
        k: documents without tags or time range (1..100, default 30).
        now: the current time, for reading the period and for recency scores.
        config: LangChain config (callbacks, tags) for the main retriever's run.

    Returns:
        The documents and what the filter found.

    Raises:
        ValueError: no vault to search, both `vault` and `vault_path`, a `k`
            out of range, a non-string query, or a time expression that cannot be read.
    """
    retrievers = search_retrievers(
        vault=vault,
        vault_path=vault_path,
        filter_retriever=filter_retriever,
        retriever=retriever,
        lexical_retriever=lexical_retriever,
    )
    plan = plan_for(
        query,
        retrievers,
        time_range=time_range,
        read_period=read_period,
        salient_terms=salient_terms,
        k=k,
        now=now,
    )
    return run_plan(plan, retrievers, now=now, config=config)


async def alocal_search(
    query: str,
    *,
    vault: Vault | None = None,
    vault_path: str | None = None,
    filter_retriever: FilterRetriever | None = None,
    retriever: BaseRetriever | None = None,
    lexical_retriever: TieredLexicalRetriever | None = None,
    time_range: TimeRange | str | None = None,
    read_period: bool = True,
    salient_terms: Sequence[str] | None = None,
    k: int = DEFAULT_K,
    now: datetime | None = None,
    config: RunnableConfig | None = None,
) -> LocalSearchResult:
    """Async twin of `local_search`: the filter and the main retriever run concurrently."""
    retrievers = search_retrievers(
        vault=vault,
        vault_path=vault_path,
        filter_retriever=filter_retriever,
        retriever=retriever,
        lexical_retriever=lexical_retriever,
    )
    plan = plan_for(
        query,
        retrievers,
        time_range=time_range,
        read_period=read_period,
        salient_terms=salient_terms,
        k=k,
        now=now,
    )
    return await arun_plan(plan, retrievers, now=now, config=config)


def run_plan(
    plan: QueryPlan,
    retrievers: SearchRetrievers,
    *,
    now: datetime | None = None,
    config: RunnableConfig | None = None,
) -> LocalSearchResult:
    """`local_search` of a planned question (`plan_for`, or `plan_query` with `filtering=True`).

    For a caller that planned the question to choose its retrievers (`VaultSearch`): the
    question is read once, and the plan that chose them is the plan that runs.
    """
    run = _Run.of(plan, retrievers)
    searched: list[Document] = []
    if run.retriever is not None and run.ranks_filter:
        # The search's order picks the tag's or the period's notes the filter keeps.
        searched = run.retriever.invoke(plan.query, config, **run.retriever_kwargs)
        raise_if_cancelled()
        return run.result(
            run.filter_retriever.run(plan, now=now, first=run.first(searched)), searched
        )
    found = run.filter_retriever.run(plan, now=now)
    if run.retriever is not None:
        raise_if_cancelled()
        searched = run.retriever.invoke(plan.query, config, **run.retriever_kwargs)
    return run.result(found, searched)


async def arun_plan(
    plan: QueryPlan,
    retrievers: SearchRetrievers,
    *,
    now: datetime | None = None,
    config: RunnableConfig | None = None,
) -> LocalSearchResult:
    """Async twin of `run_plan`: the filter and the main retriever run concurrently.

    Unless the filter's tag or period matches are to follow the search's order: then the
    search runs first, as the filter keeps the notes it ranked.
    """
    run = _Run.of(plan, retrievers)
    if run.retriever is None:
        return run.result(await asyncio.to_thread(run.filter_retriever.run, plan, now=now), [])
    searching = run.retriever.ainvoke(plan.query, config, **run.retriever_kwargs)
    if run.ranks_filter:
        searched = await searching
        first = run.first(searched)
        found = await asyncio.to_thread(run.filter_retriever.run, plan, now=now, first=first)
    else:
        filtering = asyncio.to_thread(run.filter_retriever.run, plan, now=now)
        found, searched = await asyncio.gather(filtering, searching)
    return run.result(found, searched)


@dataclass(frozen=True)
class _Run:
    """What one question runs, decided before anything runs (so async can run it at once)."""

    plan: QueryPlan
    filter_retriever: FilterRetriever
    retriever: BaseRetriever | None
    retriever_kwargs: dict[str, Any]

    @classmethod
    def of(cls, plan: QueryPlan, retrievers: SearchRetrievers) -> _Run:
        chosen: BaseRetriever | None = None
        if plan.searches:
            # The plan decides: with a vector index a carried tag's notes are ranked by
            # the merged score; without one (or beside a retriever of the user's, which
            # need not know tags), lexical search ranks them.
            lexical = bool(plan.tags) and plan.route == "lexical"
            chosen = retrievers.lexical_retriever if lexical else retrievers.retriever
        # A tag asks for all its notes, ranked; a period read from the words is a guess,
        # so the search is the one the words would get without it (its fusion is tuned
        # at k), and only the filter keeps up to `plan.limit` of the period's notes.
        wanted = plan.limit if plan.tags else plan.k
        kwargs: dict[str, Any] = {}
        if isinstance(chosen, VAULT_RETRIEVERS):
            kwargs = {"k": wanted, "salient_terms": list(plan.salient_terms)}
        elif isinstance(chosen, KeywordDocumentRetriever):
            kwargs = {"k": wanted}
        return cls(plan, retrievers.filter_retriever, chosen, kwargs)

    @property
    def ranks_filter(self) -> bool:
        """Whether the search orders the filter's matches (a tag's or a period's notes)."""
        return self.retriever is not None and bool(self.plan.tags or self.plan.time_range)

    @staticmethod
    def first(searched: Sequence[Document]) -> list[str]:
        """The searched notes, best first, for the filter to put its matches in order."""
        return [str(doc.metadata.get("path")) for doc in searched]

    def result(self, found: FilterResult, searched: Sequence[Document]) -> LocalSearchResult:
        merged = merge_filter_and_search_results(found.documents, searched)
        filter_docs = [_marked(doc, is_filter=True) for doc in merged.filter_results]
        search_docs = [
            _marked(doc, is_filter=False) for doc in _best_chunk_per_note(merged.search_results)
        ]
        # The filter asked for at most `limit`, so only search documents can be cut here.
        limit = self.plan.limit
        documents = [*filter_docs, *search_docs][: max(limit, len(filter_docs))]
        return LocalSearchResult(
            documents=documents,
            filter_result=found,
            time_range=self.plan.time_range,
            limit=limit,
            searched=self.retriever is not None,
        )


def plan_for(
    query: str,
    retrievers: SearchRetrievers,
    *,
    time_range: TimeRange | str | None = None,
    read_period: bool = True,
    salient_terms: Sequence[str] | None = None,
    k: int = DEFAULT_K,
    now: datetime | None = None,
) -> QueryPlan:
    """The plan `local_search` runs for a question over these retrievers (see there).

    Raises:
        ValueError: a non-string query, a `k` out of range or an unreadable period.
    """
    if not isinstance(query, str):
        msg = f"query must be a string, got {type(query).__name__}"
        raise ValueError(msg)
    result_limit(k, "k")
    return plan_query(
        query,
        k=k,
        available=_available(retrievers.retriever, retrievers.filter_retriever),
        time_range=time_range,
        read_period=read_period,
        salient_terms=salient_terms,
        filtering=True,
        now=now,
    )


def _available(retriever: BaseRetriever, filter_retriever: FilterRetriever) -> Available:
    """What the main retriever searches with, so the plan's route names what runs."""
    if isinstance(retriever, RetrieverFactory):
        return retriever.available
    carried = filter_retriever.tag_catalog.carried
    if isinstance(retriever, MergedSemanticRetriever):
        return Available(semantic=True, hybrid=retriever.stages is not None, tag_carried=carried)
    return Available(tag_carried=carried)


class SearchRetrievers(NamedTuple):
    """The retrievers `local_search` runs, over one shared `Vault`.

    Attributes:
        filter_retriever: the `[[mentions]]`, `#tags` and time-range filter.
        retriever: the main retriever for questions without a given time range.
        lexical_retriever: the retriever of carried-tag questions planned lexical:
            `retriever` itself when it is a `TieredLexicalRetriever`, else its lexical
            side.
    """

    filter_retriever: FilterRetriever
    retriever: BaseRetriever
    lexical_retriever: TieredLexicalRetriever


def search_retrievers(
    *,
    vault: Vault | None = None,
    vault_path: str | None = None,
    filter_retriever: FilterRetriever | None = None,
    retriever: BaseRetriever | None = None,
    lexical_retriever: TieredLexicalRetriever | None = None,
) -> SearchRetrievers:
    """The given retrievers, and defaults over one vault for those not given.

    The vault is `vault`, else the vault of a given filter or lexical retriever, else a
    new `Vault(vault_path)`: one scan serves every retriever made here. Making a
    `TieredLexicalRetriever` is cheap; its index is built by its first query.

    Raises:
        ValueError: both `vault` and `vault_path`, or no vault at all.
    """
    if vault is not None and vault_path:
        msg = "pass vault or vault_path, not both"
        raise ValueError(msg)
    shared = vault
    for given in (filter_retriever, retriever, lexical_retriever):
        if shared is None:
            shared = _vault_of(given)
    if shared is None:
        if not vault_path:
            msg = "local_search needs vault, vault_path or a retriever with a vault"
            raise ValueError(msg)
        shared = Vault(vault_path)
    main = retriever or lexical_retriever or RetrieverFactory(vault=shared)
    if isinstance(main, TieredLexicalRetriever):
        lexical = main
    elif (
        isinstance(main, (RetrieverFactory, MergedSemanticRetriever)) and lexical_retriever is None
    ):
        lexical = _lexical_of(main)
    else:
        lexical = lexical_retriever or TieredLexicalRetriever(vault=shared)
    return SearchRetrievers(filter_retriever or FilterRetriever(vault=shared), main, lexical)


def _vault_of(retriever: object) -> Vault | None:
    """The vault a retriever of this package searches (None for anyone else's)."""
    if isinstance(retriever, (FilterRetriever, TieredLexicalRetriever, RetrieverFactory)):
        return retriever.vault
    if isinstance(retriever, MergedSemanticRetriever):
        return retriever.semantic_index.vault
    return None


def _lexical_of(retriever: RetrieverFactory | MergedSemanticRetriever) -> TieredLexicalRetriever:
    """The lexical side a factory or merged retriever already holds (shares its index)."""
    lexical = retriever.lexical_retriever
    if lexical is None:  # their validators always set it
        msg = f"{type(retriever).__name__} has no lexical retriever"
        raise RuntimeError(msg)
    return lexical


def _best_chunk_per_note(search_docs: Sequence[Document]) -> list[Document]:
    """The best scored search document of each note, best first (ties keep their order).

    A note is its `path`; a document without one is its own note, since nothing says
    which note it belongs to.
    """
    best: dict[object, Document] = {}
    for index, doc in enumerate(search_docs):
        path = doc.metadata.get("path")
        key: object = path if isinstance(path, str) and path else index
        kept = best.get(key)
        if kept is None or document_score(doc.metadata) > document_score(kept.metadata):
            best[key] = doc
    order = {id(doc): index for index, doc in enumerate(search_docs)}
    return sorted(best.values(), key=lambda doc: (-document_score(doc.metadata), order[id(doc)]))


def _marked(doc: Document, *, is_filter: bool) -> Document:
    """A copy of `doc` with `isFilterResult` and `matchType` (the retriever's own is kept)."""
    metadata = dict(doc.metadata)
    source = metadata.get("source")
    metadata["isFilterResult"] = is_filter
    metadata["matchType"] = (
        metadata.get("matchType")
        or (source if isinstance(source, str) and source else None)
        or ("filter" if is_filter else "search")
    )
    return Document(page_content=doc.page_content, metadata=metadata, id=doc.id)
