"""The query plan: what a query asks for and which search answers it, decided once.

A query says more than its words. `[[Note]]` mentions name notes to return whole,
`#tags` and periods ("last week") ask for every matching note, and together with what the
vault has (a vector index, hybrid stages, a user's own retriever) they decide which search
runs. When each front read them itself the fronts disagreed: only the QA chain read the
period a question named, so `vaultsearch context` filtered by it while the MCP tool did
not. Every front, chain and retriever now builds its plan with `plan_query`, and no other
module reads query syntax.

```
plan_query(query, k, time_range, mode, available)
  -> QueryPlan(query cut to 1,000 chars, mentions, tags, period, k, limit, route, reason)
```

Routing, in order (the first rule that applies):

1. `filter-only`: the caller runs the filter (`local_search`) and was given a period
   (`time_range`, an LLM tool call's `timeRange`, `--time`): the notes of that period
   answer, as in the original.
2. the mode asked for, when it is not `auto`;
3. `lexical`: a tag some note carries and there is no vector index. With one, a
   carried tag puts its notes first in the merged list (`merged` or `hybrid`), ranked
   by the merged score, and the other notes fill the places they leave. A `#tag` no
   note carries orders nothing: it stays a word of the query.
4. `self-host`: a user's own retriever, while its health check passes;
5. `hybrid` or `merged` when a vector index is there (`hybrid` when stages are set up);
6. `lexical`.

A period read from the query's words ("what did I change last week") routes nothing:
`local_search` puts that period's notes first, ranked by the search, and the search fills
the rest. Words are a guess at a period: "push a task I could not do today onto
tomorrow" and "the 2008 crisis" name no period of notes, and answered by the filter alone
they showed the notes edited today, or none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from langchain_vaultsearch.limits import (
    DEFAULT_K,
    RETURN_ALL_LIMIT,
    checked_terms,
    clamp_query,
    result_limit,
)
from langchain_vaultsearch.time_ranges import TimeRange, find_time_expression, resolve_time_range
from langchain_vaultsearch.vault.markdown import extract_tags_from_query, tag_hierarchy
from langchain_vaultsearch.vault.markdown_syntax import (
    TAG_PATTERN,
    WIKILINK_PATTERN,
    wikilink_target,
)

__all__ = ["Available", "QueryPlan", "Route", "SearchMode", "plan_query"]

SearchMode = Literal["auto", "lexical", "semantic", "merged", "hybrid"]
"""What a caller asks for: `auto` lets the plan choose."""
SEARCH_MODES: tuple[SearchMode, ...] = ("auto", "lexical", "semantic", "merged", "hybrid")
Route = Literal["filter-only", "lexical", "semantic", "merged", "hybrid", "self-host"]
"""What runs: the filter alone, or the filter and one retriever."""


@dataclass(frozen=True)
class Available:
    """What a vault can search with, for `plan_query` to choose among.

    Attributes:
        semantic: a vector index is open.
        hybrid: hybrid stages (graph, recency, reranker) follow fusion.
        self_host: the health check of a user's own retriever (None: there is none);
            called only when the plan would otherwise pick merged or lexical search.
        tag_carried: whether some note carries a tag (None: assume every tag is). A
            `#tag` no note carries filters nothing, so it is read as a word: a question
            asking how tags work is not forced lexical.
    """

    semantic: bool = False
    hybrid: bool = False
    self_host: Callable[[], bool] | None = None
    tag_carried: Callable[[str], bool] | None = None


LEXICAL_ONLY = Available()


@dataclass(frozen=True)
class QueryPlan:
    """One query, read once: what it names and which search answers it.

    Attributes:
        query: the query as every part reads it (trimmed, at most 1,000 characters).
        mentions: the notes it names as `[[Note#Heading|alias]]`, as `Note`.
        tags: the tags it filters on, lowercased with `#` (the caller's `#` salient terms
            when there are any, else the tags typed in the query), those some note
            carries when the vault was asked.
        time_range: the period: the one given, else the one the query names (which
            orders the filter's notes first but routes nothing).
        salient_terms: ranking terms a caller picked (e.g. an LLM tool call).
        k: the documents asked for.
        limit: `k`, or 100 when a tag or a period asks for "all of them".
        route: what runs (see the module's routing rules).
        reason: why, in a few words, for `--explain` and logs.
        decided_by_query: the route follows from the query alone (a given period or an
            asked mode), whatever the vault has: a caller need not open a vector index
            to run it.
    """

    query: str
    mentions: tuple[str, ...]
    tags: tuple[str, ...]
    time_range: TimeRange | None
    salient_terms: tuple[str, ...]
    k: int
    limit: int
    route: Route
    reason: str
    decided_by_query: bool

    @property
    def searches(self) -> bool:
        """Whether a retriever runs (the filter always does in `local_search`)."""
        return self.route != "filter-only"


def plan_query(
    query: object,
    *,
    k: int = DEFAULT_K,
    mode: SearchMode = "auto",
    available: Available = LEXICAL_ONLY,
    time_range: TimeRange | str | None = None,
    read_period: bool = True,
    salient_terms: Sequence[str] | None = None,
    filtering: bool = False,
    now: datetime | None = None,
) -> QueryPlan:
    """Read a query and decide what runs for it.

    Args:
        query: the query (None reads as empty).
        k: documents asked for (1..100).
        mode: `auto`, or the search a caller insists on (a given period is still
            answered by the filter alone when `filtering`).
        available: what the vault can search with.
        time_range: a period that replaces the one the query names (a `TimeRange` or an
            expression such as "last week"); a caller that filters answers it with the
            filter alone.
        read_period: read a period from the query when none is given (it orders the
            filter's notes first; the search still runs).
        salient_terms: ranking terms a caller picked; `#` terms among them are the tags.
        filtering: the caller runs the filter, so a given period needs no search.
        now: the current time, for reading relative periods.

    Raises:
        ValueError: a query that is not a string, a `k` out of range, an unknown mode,
            a `time_range` expression that cannot be read, or salient terms that are
            not a list of strings.
    """
    text = clamp_query(query)
    result_limit(k)
    salient_terms = checked_terms(salient_terms)
    if mode not in SEARCH_MODES:
        msg = f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}"
        raise ValueError(msg)
    given = resolve_time_range(time_range, now) if time_range is not None else None
    period = given
    if period is None and read_period:
        period = find_time_expression(text, now)
    tags = tag_filters(text, salient_terms)
    if tags and available.tag_carried is not None:
        tags = tuple(tag for tag in tags if available.tag_carried(tag))
    route, reason, decided = _route(
        mode, available, tags=bool(tags), given_period=given is not None, filtering=filtering
    )
    return QueryPlan(
        query=text,
        mentions=tuple(note_mentions(text)),
        tags=tags,
        time_range=period,
        salient_terms=tuple(salient_terms or ()),
        k=k,
        limit=RETURN_ALL_LIMIT if tags or period is not None else k,
        route=route,
        reason=reason,
        decided_by_query=decided,
    )


def _route(
    mode: SearchMode, available: Available, *, tags: bool, given_period: bool, filtering: bool
) -> tuple[Route, str, bool]:
    if given_period and filtering:
        return "filter-only", "a given period is answered by the notes of that period", True
    if mode != "auto":
        return mode, f"{mode} search was asked for", True
    if tags:
        # The tagged notes are wanted first; with a vector index the merged score ranks
        # them (the retriever puts them first in its fused list: `fusion.asked_first`).
        if available.semantic:
            route: Route = "hybrid" if available.hybrid else "merged"
            return route, "a tag's notes first, ranked by merged scores", False
        return "lexical", "a tag is an exact term (no vector index to rank by)", False
    if available.self_host is not None and available.self_host():
        return "self-host", "the self-hosted retriever is healthy", False
    if available.semantic:
        if available.hybrid:
            return "hybrid", "a vector index and hybrid stages are set up", False
        return "merged", "a vector index is open", False
    return "lexical", "there is no vector index", False


def note_mentions(query: str) -> list[str]:
    """Names of the notes a query mentions as `[[Note#Heading|alias]]`, without heading or alias.

    Read from the query as every part reads it (`clamp_query`): a retriever that reads its
    mentions here finds what the plan found, not a `[[Note]]` past the first 1,000
    characters.
    """
    text = clamp_query(query)
    names = (wikilink_target(match.group(1)) for match in WIKILINK_PATTERN.finditer(text))
    return list(dict.fromkeys(name for name in names if name))


def uncarried_tags_as_words(text: str, carried: Callable[[str], bool]) -> str:
    """The text with every `#tag` no note carries written as its words (`#scrum` -> `scrum`).

    As a tag term such a tag matches nothing (no note is indexed under it), so a user who
    types `#scrum` into a vault that never tagged scrum would get no results at all; as
    words it finds the notes about scrum, which is what the plan already routes it as.
    """

    def spelled(match: re.Match[str]) -> str:
        tag = match.group(0).rstrip("/")
        return match.group(0) if carried(tag) else tag.lstrip("#").replace("/", " ")

    return TAG_PATTERN.sub(spelled, text)


def without_carried_tags(text: str, tags: Collection[str]) -> str:
    """The text with the carried `#tags` taken out, for the embedding model to read.

    Every note ranked first carries those tags, so the tag tells the model nothing about
    which of them answers; the rest of the query does ("#Multithreading
    attesa attiva" is about "attesa attiva"). Embedded with the tag, the query leaned
    towards notes about the tag's topic in general. Without it, the carried-tag
    questions' nDCG@10 rose on three of four judged vaults (Italian 0.708 to 0.762, the
    English garden 0.855 to 0.927, brain 0.876 to 0.887, Spanish unchanged;
    `benchmarks/fusion_lovo.py`); where the model knows none of the rest (Italian words
    to an English model), its list misses the tagged notes and the lexical order stands.
    A query that is only tags comes back unchanged.

    Args:
        text: the query as the lexical side searched it.
        tags: the carried tags, normalised as `tag_filters` gives them.
    """
    if not tags:
        return text

    def kept(match: re.Match[str]) -> str:
        levels = tag_hierarchy(match.group(0).rstrip("/"))
        return "" if levels and levels[-1] in tags else match.group(0)

    rest = " ".join(TAG_PATTERN.sub(kept, text).split())
    return rest or text


def tag_filters(query: str, salient_terms: Sequence[str] | None) -> tuple[str, ...]:
    """Tags to filter on: the `#` salient terms, else the tags typed in the query.

    Lowercased, `#`-prefixed and deduplicated; the query read as `clamp_query` cuts it.
    """
    typed = [term for term in salient_terms or () if term.strip().startswith("#")]
    raw = typed or extract_tags_from_query(clamp_query(query))
    normalized = (tag_hierarchy(tag) for tag in raw)
    return tuple(dict.fromkeys(levels[-1] for levels in normalized if levels))
