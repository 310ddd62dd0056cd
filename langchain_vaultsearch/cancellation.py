"""Stopping a search whose caller stopped waiting.

A Python thread cannot be killed, so a search run in a worker thread for a client that
went away (or whose deadline passed) would otherwise keep its thread, and the cores,
busy to the end. The caller hands the work a flag; the pipeline looks at it between its
stages (each side of a merged search, each hybrid stage, each reranker batch, the filter
and the context) and gives up there. Shared work that the next caller needs, such as
scanning the vault or loading the model, is not cut short. A call its caller may stop
waiting for altogether (a deadline) runs in `in_daemon_thread`.
"""

from __future__ import annotations

import atexit
import contextvars
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

__all__ = ["SearchCancelled", "in_daemon_thread", "raise_if_cancelled", "run_cancellable"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

_flag: ContextVar[threading.Event | None] = ContextVar("vaultsearch_cancelled", default=None)

logger = logging.getLogger(__name__)

EXIT_WAIT_S = 10.0
"""Seconds an ending process waits, in all, for the calls its callers stopped waiting for:
a model's batch or first load ends well within it, a model or server that hangs does not
hold the exit much longer."""
_running: set[threading.Thread] = set()
_running_lock = threading.Lock()


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


def in_daemon_thread(
    function: Callable[[], _T], *, name: str, then: Callable[[], None] | None = None
) -> Future[_T]:
    """Run `function` in a daemon thread, in a copy of the caller's context; its future.

    For a call its caller may stop waiting for (a deadline): an executor would not do, as
    its threads are joined at interpreter exit, so a model or store that never answers
    would keep the process from exiting. An ending process still waits for such calls,
    up to `EXIT_WAIT_S` (`_wait_at_exit`). The copy carries the caller's cancellation
    flag and LangChain callbacks, so tracing still nests under the caller's run. `then`
    runs after the call, however it ended.
    """
    future: Future[_T] = Future()
    future.set_running_or_notify_cancel()  # running: a caller's cancel cannot orphan it
    context = contextvars.copy_context()

    def work() -> None:
        try:
            result = context.run(function)
        except BaseException as exc:  # handed to whoever waits, who raises it
            future.set_exception(exc)
        else:
            future.set_result(result)
        finally:
            try:
                if then is not None:
                    then()
            finally:
                with _running_lock:
                    _running.discard(threading.current_thread())

    thread = threading.Thread(target=work, name=name, daemon=True)
    with _running_lock:
        _running.add(thread)
    thread.start()
    return future


@atexit.register
def _wait_at_exit() -> None:
    """Let the calls still running end before the interpreter does, for a while.

    A daemon thread still inside a model or a store's native code when the interpreter
    finalizes aborts the process ("terminate called without an active exception", exit
    134): a one-shot script whose semantic side passed its deadline ended that way after
    printing its lexical results.
    """
    with _running_lock:
        running = list(_running)
    deadline = time.monotonic() + EXIT_WAIT_S
    for thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [thread.name for thread in running if thread.is_alive()]
    if left:
        logger.warning(
            "Exiting while %d call(s) past their deadline still run (%s); the process may abort",
            len(left),
            ", ".join(left),
        )
