"""QueryExpander: a chat model turns a query into ranking terms and recall-only extras.

Seed 001's split: the model picks the salient terms of the query (they rank), and adds
alternative phrasings and related terms (they only widen recall). A search box must keep
working when the model is slow, down, absent or rambling, so every failure (timeout,
exception, empty answer, answer without the XML) returns the no-LLM expansion of the
lexical core instead, marked `source="fallback"`. The prompt and the parsing are pure
functions in `search/expansion_prompt.py`; this module holds the model, the deadline and
the cache.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass
from typing import TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from langchain_vaultsearch.cancellation import in_daemon_thread
from langchain_vaultsearch.expansion.prompt import (
    MAX_VARIANTS_RANGE,
    build_expansion_prompt,
    parse_expansion_response,
)
from langchain_vaultsearch.expansion.terms import (
    EMPTY_EXPANSION,
    MIN_TERM_LENGTH,
    ExpandedQuery,
    fallback_expansion,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class _CacheEntry:
    expansion: ExpandedQuery
    expires_at: float | None  # monotonic seconds; None keeps it until evicted


class QueryExpander:
    """Expand queries with a chat model, within a deadline, with an LRU cache.

    Setup:
        Any LangChain chat model; `pip install "langchain-vaultsearch[openai]"` for the
        default one used by `vaultsearch search --expand`.

    Instantiate:
        .. code-block:: python

            from langchain_openai import ChatOpenAI
            from langchain_vaultsearch import QueryExpander, TieredLexicalRetriever

            expander = QueryExpander(ChatOpenAI(model="gpt-4.1-mini"), timeout_s=4.0)
            retriever = TieredLexicalRetriever(vault_path="~/notes", query_expander=expander)

    Usage:
        .. code-block:: python

            expanded = expander.expand("find my piano notes")
            expanded.salient_terms  # ("piano", "notes"): ranking
            expanded.expanded_queries, expanded.expanded_terms  # recall only
            expanded.source  # "llm", or "fallback" when the model failed

    `expand` and `aexpand` never raise. Successful expansions are cached by query (LRU);
    fallbacks caused by a failure are cached for `failure_ttl_s` only, so a model that
    recovers is asked again, while a burst of the same query does not wait out the
    deadline again and again. The cache is shared by threads (`batch`) safely.
    """

    def __init__(
        self,
        llm: BaseChatModel | None,
        *,
        max_variants: int = 3,
        timeout_s: float = 4.0,
        cache_size: int = 100,
        min_term_length: int = MIN_TERM_LENGTH,
        failure_ttl_s: float = 30.0,
    ) -> None:
        """Create an expander.

        Args:
            llm: the chat model; None always uses the no-LLM expansion.
            max_variants: alternative phrasings kept per query (0..10; the original keeps 3).
            timeout_s: seconds to wait for the model (the original's 4 s); `expand` returns by then
                even if the model never answers.
            cache_size: queries remembered (0 turns the cache off).
            min_term_length: shortest salient or related term kept (at least 1).
            failure_ttl_s: seconds a failure's fallback is reused before the model is
                asked again (0: never reused).

        Raises:
            ValueError: for an option out of range.
        """
        low, high = MAX_VARIANTS_RANGE
        if not low <= max_variants <= high:
            msg = f"max_variants must be between {low} and {high}, got {max_variants}"
            raise ValueError(msg)
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            msg = f"timeout_s must be a positive number of seconds, got {timeout_s}"
            raise ValueError(msg)
        if cache_size < 0:
            msg = f"cache_size must be 0 or more, got {cache_size}"
            raise ValueError(msg)
        if min_term_length < 1:
            msg = f"min_term_length must be at least 1, got {min_term_length}"
            raise ValueError(msg)
        if not (math.isfinite(failure_ttl_s) and failure_ttl_s >= 0):
            msg = f"failure_ttl_s must be 0 or more seconds, got {failure_ttl_s}"
            raise ValueError(msg)
        self.llm = llm
        self.max_variants = max_variants
        self.timeout_s = timeout_s
        self.cache_size = cache_size
        self.min_term_length = min_term_length
        self.failure_ttl_s = failure_ttl_s
        self._cache: OrderedDict[str, _CacheEntry] = OrderedDict()
        self._lock = threading.Lock()
        # Model calls abandoned at the deadline; referenced until they end.
        self._abandoned: set[asyncio.Task[AIMessage]] = set()

    def __repr__(self) -> str:
        model = type(self.llm).__name__ if self.llm is not None else None
        return (
            f"QueryExpander(llm={model}, max_variants={self.max_variants}, "
            f"timeout_s={self.timeout_s}, cache_size={self.cache_size})"
        )

    def expand(self, query: str) -> ExpandedQuery:
        """Expand a query, waiting at most `timeout_s` for the model.

        Args:
            query: the user's query (trimmed before use and as the cache key).

        Returns:
            The model's expansion (`source="llm"`), or the no-LLM one (`"fallback"`);
            `EMPTY_EXPANSION` for a blank query.
        """
        key = query.strip()
        known = self._known(key)
        if isinstance(known, ExpandedQuery):
            return known
        prompt = build_expansion_prompt(key, self.max_variants)
        try:
            message = _call_within(lambda: known.invoke(prompt), self.timeout_s)
        except FutureTimeoutError:
            return self._fail(key, f"got no answer within {self.timeout_s:g} s")
        except Exception as exc:
            return self._fail(key, f"failed ({type(exc).__name__}: {exc})")
        return self._read(key, message)

    async def aexpand(self, query: str) -> ExpandedQuery:
        """Async twin of `expand`: the model call is awaited, not run in a thread.

        Args:
            query: the user's query.

        Returns:
            As `expand`.
        """
        key = query.strip()
        known = self._known(key)
        if isinstance(known, ExpandedQuery):
            return known
        task = asyncio.ensure_future(known.ainvoke(build_expansion_prompt(key, self.max_variants)))
        try:
            # asyncio.wait, unlike wait_for, returns at the deadline even if the model
            # ignores its cancellation.
            done, _pending = await asyncio.wait({task}, timeout=self.timeout_s)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            self._abandon(task)
            return self._fail(key, f"got no answer within {self.timeout_s:g} s")
        try:
            message = task.result()
        except Exception as exc:
            return self._fail(key, f"failed ({type(exc).__name__}: {exc})")
        return self._read(key, message)

    def _known(self, key: str) -> ExpandedQuery | BaseChatModel:
        """What needs no model call (a blank query, a cached key, no model), else the model."""
        if not key:
            return EMPTY_EXPANSION
        cached = self._cached(key)
        if cached is not None:
            return cached
        if self.llm is None:
            return fallback_expansion(key, self.min_term_length)
        return self.llm

    def clear_cache(self) -> None:
        """Forget every cached expansion (e.g. after switching models)."""
        with self._lock:
            self._cache.clear()

    def _read(self, key: str, message: AIMessage) -> ExpandedQuery:
        expansion = parse_expansion_response(
            key,
            str(message.text),
            max_variants=self.max_variants,
            min_term_length=self.min_term_length,
        )
        if expansion is None:
            return self._fail(key, "answered without the expected XML")
        self._store(key, expansion, expires_at=None)
        return expansion

    def _fail(self, key: str, reason: str) -> ExpandedQuery:
        logger.warning("Query expansion %s; using the query's own terms for %r", reason, key)
        expansion = fallback_expansion(key, self.min_term_length)
        if self.failure_ttl_s > 0:
            self._store(key, expansion, expires_at=time.monotonic() + self.failure_ttl_s)
        return expansion

    def _cached(self, key: str) -> ExpandedQuery | None:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return None
            if entry.expires_at is not None and time.monotonic() >= entry.expires_at:
                del self._cache[key]
                return None
            self._cache.move_to_end(key)
            return entry.expansion

    def _store(self, key: str, expansion: ExpandedQuery, expires_at: float | None) -> None:
        if self.cache_size == 0:
            return
        with self._lock:
            self._cache[key] = _CacheEntry(expansion, expires_at)
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def _abandon(self, task: asyncio.Task[AIMessage]) -> None:
        task.cancel()
        self._abandoned.add(task)
        task.add_done_callback(_forget(self._abandoned))


def _forget(tasks: set[asyncio.Task[AIMessage]]) -> Callable[[asyncio.Task[AIMessage]], None]:
    def done(task: asyncio.Task[AIMessage]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved, so asyncio does not log it as lost

    return done


def _call_within(call: Callable[[], T], timeout_s: float) -> T:
    """Run a blocking call in a daemon thread and stop waiting for it at the deadline.

    A model that never answers keeps its thread until it returns (`in_daemon_thread`);
    the short failure cache stops a burst of the same query from starting more.

    Raises:
        concurrent.futures.TimeoutError: when the deadline passes first.
    """
    return in_daemon_thread(call, name="vaultsearch-query-expansion").result(timeout=timeout_s)
