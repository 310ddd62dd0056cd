"""The one error the semantic side fails with, so callers can keep lexical search running.

The vector index is optional: a model that cannot load, a key that is missing, a store
that is damaged or read-only must cost the user the semantic results, never the vault or
its lexical search. Every such failure is a `SemanticIndexUnavailable` whose message is
one line naming the cause and the fix, which a facade can show in its status as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from langchain_vaultsearch.cancellation import SearchCancelled

SEMANTIC_SEARCH = "semantic search"
"""What a failed semantic search says it was doing: "semantic search failed: <cause>"."""
CAUSE_CHARS = 200
"""The longest cause quoted from a third-party error (their messages can run for pages)."""


class SemanticIndexUnavailable(RuntimeError):  # noqa: N818 - it names a state, not an error kind
    """The vector index or its embedding model cannot be used; the message is the fix.

    A subclass of `RuntimeError`: code that caught the index's runtime failures before
    keeps catching them.
    """


class SemanticIndexBusy(SemanticIndexUnavailable):
    """Another process is writing the vector index; it can be opened again when that ends.

    Unlike the other causes it passes by itself, so a long-running caller should try
    opening the index again later rather than keep semantic search off.
    """


class SemanticIndexTimeout(SemanticIndexUnavailable):
    """The semantic side did not answer in time, or is still stuck on earlier calls.

    Like `SemanticIndexBusy` it may pass by itself (a server that answers again); the
    call it cut short may still be running (`semantic.deadline`).
    """


def cause(exc: BaseException) -> str:
    """A third-party error as a short line: its first line, or its class when it says nothing.

    Args:
        exc: the error to quote.

    Returns:
        At most `CAUSE_CHARS` characters, whitespace collapsed, with no line breaks.
    """
    lines = [" ".join(line.split()) for line in str(exc).splitlines()]
    text = next((line for line in lines if line), type(exc).__name__)
    return text if len(text) <= CAUSE_CHARS else f"{text[: CAUSE_CHARS - 3]}..."


@contextmanager
def failures_as_unavailable(doing: str) -> Iterator[None]:
    """Any failure of a third party inside (model, store) as one `SemanticIndexUnavailable`.

    A semantic-only search has no lexical answer to fall back on, so its caller shows the
    error: one line naming what failed, not a model's or Chroma's traceback.

    Args:
        doing: what was being done, for the message ("semantic search").
    """
    try:
        yield
    except (SemanticIndexUnavailable, SearchCancelled):
        raise
    except Exception as exc:
        msg = f"{doing} failed: {cause(exc)}"
        raise SemanticIndexUnavailable(msg) from exc
