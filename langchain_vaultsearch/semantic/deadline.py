"""A deadline for the semantic side: lexical results never wait on a stuck model or store.

A semantic search or index open that hangs (a Chroma server that accepts connections and
never answers, an embedding API that stalls) would hold the lexical results it is fused
with, and in a server the worker it sits on, for good. Such a call runs in a daemon
thread instead, and its caller waits for it only so long; past that, the caller goes on
without it. A thread cannot be killed, so the call is left to finish; a daemon thread
does not hold the process at exit, where a worker of an executor would. A store that
hangs every call would gather one such thread per query: while `MAX_STRAGGLERS` of them
are still running past their deadline, new calls are refused at once instead.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Generic, TypeVar

from langchain_vaultsearch.cancellation import in_daemon_thread
from langchain_vaultsearch.semantic.errors import SemanticIndexTimeout

__all__ = [
    "MAX_STRAGGLERS",
    "SEMANTIC_TIMEOUT_S",
    "acall_within",
    "call_within",
]

_T = TypeVar("_T")

SEMANTIC_TIMEOUT_S = 30.0
"""How long merged search waits for the semantic side by default: far above a warm query
(tens of milliseconds) and a first one that loads a local model (seconds), and half the
MCP server's tool deadline, so a stuck side still leaves time for the lexical answer."""
MAX_STRAGGLERS = 4
"""Calls past their deadline that may still be running before new ones are refused."""

_lock = threading.Lock()
_stragglers = 0


class _Call(Generic[_T]):
    """One deadline-bound call: its future, and whether its caller gave up on it."""

    def __init__(self, function: Callable[[], _T]) -> None:
        with _lock:
            stuck = _stragglers
        if stuck >= MAX_STRAGGLERS:
            msg = (
                f"the semantic side is still stuck on {stuck} earlier calls (a model or "
                "Chroma server that does not answer?)"
            )
            raise SemanticIndexTimeout(msg)
        self._abandoned = False
        self._done = False
        self.future = in_daemon_thread(function, name="vaultsearch-semantic", then=self._end)

    def _end(self) -> None:
        global _stragglers  # noqa: PLW0603 - one count for the process, as the threads are
        with _lock:
            self._done = True
            if self._abandoned:
                _stragglers -= 1

    def abandon(self) -> None:
        """The caller stopped waiting: the call counts as a straggler while it runs."""
        global _stragglers  # noqa: PLW0603
        with _lock:
            if not self._done and not self._abandoned:
                self._abandoned = True
                _stragglers += 1


def call_within(timeout: float | None, function: Callable[[], _T]) -> _T:
    """`function()`, or `SemanticIndexTimeout` once `timeout` seconds pass (None: no deadline).

    Raises:
        SemanticIndexTimeout: the deadline passed, or earlier calls are still stuck.
    """
    if timeout is None:
        return function()
    call = _Call(function)
    try:
        return call.future.result(timeout)
    except FutureTimeout:
        call.abandon()
        raise SemanticIndexTimeout(_late(timeout)) from None


async def acall_within(timeout: float | None, function: Callable[[], _T]) -> _T:
    """Async twin of `call_within`; neither the loop nor its executor holds the call."""
    call = _Call(function)
    try:
        return await asyncio.wait_for(asyncio.wrap_future(call.future), timeout)
    except asyncio.TimeoutError:  # not yet the builtin TimeoutError on Python 3.10
        call.abandon()
        raise SemanticIndexTimeout(_late(timeout or 0.0)) from None
    except asyncio.CancelledError:
        call.abandon()
        raise


def _late(timeout: float) -> str:
    return f"the semantic side did not answer within {timeout:g} s"
