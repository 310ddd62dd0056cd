"""How much a query may say and how many results it may ask for: one home for each number.

Every front (the retrievers, `local_search`, the chains, the CLI, the MCP tools) checks a
result count and cuts a query the same way, so the same question gets the same answer
whichever door it came through. The numbers are the seed's.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Sequence
from typing import Any

from pydantic import Field

MAX_QUERY_CHARS = 1000
"""A query is cut to this many characters before anything reads it (the seed's clamp):
reading a period out of a 32,000-word query took 7.7 s when the cut came later."""
DEFAULT_K = 30
"""Documents per question for a chain or a model's context (the seed's maxResults)."""
DEFAULT_SHOWN_K = 10
"""Results a person is shown by `vaultsearch search` and the MCP `search` tool: a screen."""
RETURN_ALL_LIMIT = 100
"""Documents for a question that asks for "all of them": a tag or a period."""
MAX_RESULTS_RANGE = (1, 100)
"""The result counts any call may ask for."""


def result_limit(value: object, name: str = "k") -> int:
    """A per-call result count, checked the one way every retriever checks it.

    Raises:
        ValueError: not an integer (a bool is not one), or outside 1..100; the message
            names the option as the caller spells it (`k`, `limit`, `top_n`).
    """
    low, high = MAX_RESULTS_RANGE
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an integer, got {value!r}"
        raise ValueError(msg)
    if not low <= value <= high:
        msg = f"{name} must be between {low} and {high}, got {value}"
        raise ValueError(msg)
    return value


def checked_terms(value: object, name: str = "salient_terms") -> tuple[str, ...] | None:
    """Salient terms as a caller gave them, checked the one way every front checks them.

    A string is refused rather than read letter by letter: `"#project/alpha"` given as one
    term searched for `#`, `p`, `r`, ... and lost the tag filter it named.

    Raises:
        ValueError: not a list (or tuple) of strings; None is no terms.
    """
    if value is None:
        return None
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(term, str) for term in value)
    ):
        msg = f"{name} must be a list of strings, got {reprlib.repr(value)}"
        raise ValueError(msg)
    return tuple(value)


_FULL_WIDTH_MENTION = re.compile("\u3010\u3010(.+?)\u3011\u3011")
"""`【【Note】】`: `[[Note]]` as a Chinese input method types it, which Obsidian's editor
turns into a link as it is typed."""
_FULL_WIDTH_HASH = str.maketrans({"\uff03": "#"})
"""`＃tag`: the input method's `#`."""


def clamp_query(query: object) -> str:
    """The query as every part reads it: a string, trimmed, at most `MAX_QUERY_CHARS`.

    A Chinese input method types `[[` and `#` full-width (`【【皮质醇】】`, `\uff03标签`);
    they are read as the mention and the tag they stand for (Obsidian turns a typed
    `【【` into `[[` itself).

    Raises:
        ValueError: the query is not a string (None reads as empty).
    """
    if query is None:
        return ""
    if not isinstance(query, str):
        msg = f"query must be a string, got {type(query).__name__}"
        raise ValueError(msg)
    text = query.strip()[:MAX_QUERY_CHARS].strip()
    return _FULL_WIDTH_MENTION.sub(r"[[\1]]", text.translate(_FULL_WIDTH_HASH))


def result_count_field() -> Any:  # noqa: ANN401 - pydantic's Field is typed as Any
    """The `k` (or `limit`) field every retriever declares: `DEFAULT_K`, strictly 1..100."""
    return Field(default=DEFAULT_K, ge=MAX_RESULTS_RANGE[0], le=MAX_RESULTS_RANGE[1], strict=True)
