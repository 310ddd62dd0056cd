"""What a query says besides its words: the notes it names, its tags, its period.

`[[Note]]` mentions, `#tags` and time expressions ("last week") change what a search is:
the filter returns the named notes whole, tag and time queries go to lexical search with a
larger limit, mentioned notes' chunks rank first. Every part of the package reads them
here, so the filter, the factory, `local_search` and the retrievers never disagree about
what a query asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from langchain_vaultsearch.text.markdown_syntax import WIKILINK_PATTERN, wikilink_target
from langchain_vaultsearch.time_ranges import TimeRange, find_time_expression
from langchain_vaultsearch.vault.markdown import extract_tags_from_query, tag_hierarchy


@dataclass(frozen=True)
class ParsedQuery:
    """A query's syntax.

    Attributes:
        text: the query as given.
        mentions: names of the `[[notes]]` it mentions (heading and alias stripped).
        tags: the tags to filter on (see `tag_filters`).
        time_range: the period it names, if any.
    """

    text: str
    mentions: tuple[str, ...]
    tags: tuple[str, ...]
    time_range: TimeRange | None

    @property
    def needs_lexical(self) -> bool:
        """Tags are exact terms and periods are filters: neither is a meaning to embed."""
        return bool(self.tags) or self.time_range is not None


def parse_query(
    query: str, *, salient_terms: Sequence[str] | None = None, now: datetime | None = None
) -> ParsedQuery:
    """Read a query's mentions, tags and period.

    Args:
        query: the query.
        salient_terms: terms a caller (e.g. an LLM tool call) picked; `#` terms among them
            are the tags.
        now: the current time, for reading relative periods.
    """
    return ParsedQuery(
        text=query,
        mentions=tuple(note_mentions(query)),
        tags=tag_filters(query, salient_terms),
        time_range=find_time_expression(query, now),
    )


def note_mentions(query: str) -> list[str]:
    """Names of the notes a query mentions as `[[Note#Heading|alias]]`, without heading or alias."""
    names = (wikilink_target(match.group(1)) for match in WIKILINK_PATTERN.finditer(query))
    return list(dict.fromkeys(name for name in names if name))


def tag_filters(query: str, salient_terms: Sequence[str] | None) -> tuple[str, ...]:
    """Tags to filter on: the `#` salient terms, else the tags typed in the query.

    Lowercased, `#`-prefixed and deduplicated; the orchestration layer reads them too, to
    know a tag query (which needs lexical search and the larger limit) before any search.
    """
    typed = [term for term in salient_terms or () if term.strip().startswith("#")]
    raw = typed or extract_tags_from_query(query)
    normalized = (tag_hierarchy(tag) for tag in raw)
    return tuple(dict.fromkeys(levels[-1] for levels in normalized if levels))
