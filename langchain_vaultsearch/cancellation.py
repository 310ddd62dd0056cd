"""Stopping a search whose caller stopped waiting.

A Python thread cannot be killed, so a search run in a worker thread for a client that
went away (or whose deadline passed) would otherwise keep its thread, and the cores,
busy to the end. The caller hands the work a flag; the pipeline looks at it between its
stages (each side of a merged search, each hybrid stage, each reranker batch, the filter
and the context) and gives up there. Shared work that the next caller needs, such as
scanning the vault or loading the model, is not cut short.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

__all__ = ["SearchCancelled", "raise_if_cancelled", "run_cancellable"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

_flag: ContextVar[threading.Event | None] = ContextVar("vaultsearch_cancelled", default=None)


class SearchCancelled(Exception):  # noqa: N818 - it names what happened, as `TimeoutError` does
    """The caller of this search stopped waiting for it (a deadline, or the client went)."""


def raise_if_cancelled() -> None:
    """Give up here if the caller has stopped waiting; a no-op outside `run_cancellable`.

    Raises:
        SearchCancelled: the flag of the running call is set.
    """
    flag = _flag.get()
    if flag is not None and flag.is_set():
        msg = "the search was cancelled: its caller stopped waiting"
        raise SearchCancelled(msg)


def run_cancellable(
    flag: threading.Event, function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """Run `function` so that setting `flag` (from any thread) stops it at its next stage.

    Args:
        flag: set it to cancel the call.
        function: the work, usually a `VaultSearch` method.
        *args: its positional arguments.
        **kwargs: its keyword arguments.
    """
    token = _flag.set(flag)
    try:
        raise_if_cancelled()
        return function(*args, **kwargs)
    finally:
        _flag.reset(token)
