"""FilterRetriever: notes the user asked for explicitly, which ranking must never cut.

When a query names a note (`[[OAuth Setup]]`), a tag (`#project`) or a period ("last
week"), the matching notes are not candidates to be scored against the query words: they
are what the user asked for. They are returned whole, with score 1.0 (a recency score for
time matches) and `includeInContext` true, and the orchestration layer puts them before
the ranked search results (see `merge_filter_and_search_results`).

Where this differs from the original FilterRetriever, on purpose:

- Mentions resolve like Obsidian links (docs/design.md, decision 4): `[[Note#Heading|alias]]`
  finds `Note`, names compare case-insensitively, frontmatter aliases resolve, and an
  ambiguous name picks the shortest path instead of being dropped.
- A time range also matches notes whose frontmatter `created` or `date` falls in it
  (docs/design.md, decision 5), and daily notes are time matches scored by their date's recency,
  not title matches fixed at 1.0, so a daily note from eleven months ago does not push
  yesterday's notes out of the limit.
- Recency counts days back from the end of the range (or from now, if the range ends
  later): for "March 2023" the notes of late March score highest, where counting from
  today would give every note of that month the same floor score.
- With a time range, mentioned notes are still returned, and tags narrow the time
  matches ("#meeting last week"); the original returned only the time matches.
- Tag and time matches are the most recent ones when more match than the limit allows,
  instead of the first ones in vault order; `local_search` puts the notes its search
  ranked first, in the search's order, before they are cut to the limit.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal, ParamSpec, TypeVar

from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field, model_validator

from langchain_vaultsearch.documents import note_document
from langchain_vaultsearch.limits import result_count_field, result_limit
from langchain_vaultsearch.query_plan import QueryPlan, plan_query
from langchain_vaultsearch.time_ranges import TimeRange
from langchain_vaultsearch.vault.markdown import tag_hierarchy
from langchain_vaultsearch.vault.note_info import NoteInfo
from langchain_vaultsearch.vault.tag_catalog import TagCatalog
from langchain_vaultsearch.vault.vault import Vault, VaultPathOption, open_vault

__all__ = ["FilterResult", "FilterRetriever"]

FilterSource = Literal["title-match", "tag-match", "time-filtered"]

MAX_DAILY_NOTE_DAYS = 365
"""Daily notes are looked for in at most this many days at the end of a time range."""
RECENCY_WINDOW_DAYS = 30.0
"""A time match loses 1/30 of its score per day before the range end..."""
RECENCY_FLOOR = 0.3
"""...down to this floor, reached after 21 days."""

_DAILY_NOTE_TITLE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DATE_PROPERTIES = frozenset({"created", "date", "date created", "date_created", "created_at"})
"""Properties that date a note: `date created` is what the Obsidian Linter writes (3,047 of
the 3,176 notes of a judged Chinese vault carry it, and no `created`)."""
_DATE_TEXT = re.compile(
    r"(\d{4})[-./](\d{1,2})[-./](\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}))?)?(?!\d)"
)
_SECONDS_PER_DAY = 86_400.0
_P = ParamSpec("_P")
_R = TypeVar("_R")


@dataclass(frozen=True)
class FilterResult:
    """What one filter query found, and why.

    Attributes:
        documents: whole-note documents, mentions first, at most the limit.
        mentions: every `[[mention]]` of the query, in order, with the note path it
            resolved to or None (missing, or a path that leaves the vault).
        tags: the tag filters applied, lowercased with `#`.
        time_range: the time range applied, if any.
        daily_note_window: the part of `time_range` searched for daily notes (its last
            365 days), if there was a time range.
        matched: how many notes matched before the limit was applied.
    """

    documents: list[Document]
    mentions: dict[str, str | None] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    time_range: TimeRange | None = None
    daily_note_window: TimeRange | None = None
    matched: int = 0

    @property
    def unresolved_mentions(self) -> list[str]:
        """Mentions that named no note, so the caller can tell the user."""
        return [name for name, path in self.mentions.items() if path is None]

    @property
    def truncated(self) -> bool:
        """True when matching notes were left out: by the limit, or unreadable since."""
        return self.matched > len(self.documents)


@dataclass(frozen=True)
class _Match:
    info: NoteInfo
    source: FilterSource
    score: float = 1.0
    moment: float = 0.0  # epoch seconds of the date that matched, for ordering


def _in_worker_thread(
    method: Callable[_P, _R],
) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """A method's async twin: the same call in a worker thread (filtering is file work)."""

    @functools.wraps(method)
    async def twin(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.to_thread(method, *args, **kwargs)

    twin.__doc__ = f"Async twin of `{method.__name__}` (its file work runs in a worker thread)."
    return twin


class FilterRetriever(BaseModel):
    """Whole notes a query names by `[[title]]`, `#tag` or time range; never ranked away.

    Not a LangChain `BaseRetriever`: its documents are guaranteed context that the
    orchestration layer merges in front of a retriever's ranked results, and it takes a
    time range, which a retriever's `invoke(query)` cannot.

    Key init args:
        vault_path: the vault folder (or pass a shared `vault`).
        limit: most documents per query (1..100, default 30); the orchestration layer uses
            100 for tag and time queries.

    Usage:
        .. code-block:: python

            from langchain_vaultsearch import FilterRetriever
            from langchain_vaultsearch.time_ranges import parse_time_expression

            filters = FilterRetriever(vault_path="~/notes")
            docs = filters.get_relevant_documents("what did [[Alpha]] decide? #project")
            result = filters.find("what did I do?", parse_time_expression("last week"))
            result.documents, result.unresolved_mentions, result.truncated

    Documents: `Document.id` = note path; `page_content` = the note as stored; metadata
    `path`, `title`, `score`, `rerank_score`, `source` (`title-match`, `tag-match`,
    `time-filtered`), `engine` (`filter`), `includeInContext` (True), `mtime`, `ctime`
    (epoch ms), `tags`, `isChunk` (False), `isFilterResult` (True), `matchType` (= source).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    vault_path: VaultPathOption = None
    """Vault folder; `~` is expanded. Ignored when `vault` is given."""
    vault: Vault | None = Field(default=None, exclude=True, repr=False)
    """A `Vault` shared with other retrievers, so the vault is scanned once."""
    limit: int = result_count_field()
    """Most documents per query; also `find(..., limit=...)`."""
    inclusions: list[str] | str | None = None
    """Rules a tag or time match must satisfy (mentions are exempt); own vault only."""
    exclusions: list[str] | str | None = None
    """Rules that keep notes out of tag and time matches (mentions are exempt)."""
    mentions_override_rules: bool = True
    """A `[[mention]]` returns the note even when the rules leave it out (naming a note
    asks for it). `VaultSearch`, behind the CLI and the MCP server, passes False: there the
    rules are a privacy boundary a model's question must not cross."""

    @model_validator(mode="after")
    def _open_vault(self) -> FilterRetriever:
        self.vault = open_vault(
            self.vault,
            self.vault_path,
            owner="FilterRetriever",
            inclusions=self.inclusions,
            exclusions=self.exclusions,
        )
        return self

    def get_relevant_documents(
        self,
        query: str,
        time_range: TimeRange | str | None = None,
        *,
        salient_terms: Sequence[str] | None = None,
        limit: int | None = None,
        now: datetime | None = None,
    ) -> list[Document]:
        """The notes a query names, whole; see `find` for the arguments."""
        return self.find(
            query, time_range, salient_terms=salient_terms, limit=limit, now=now
        ).documents

    def find(
        self,
        query: str,
        time_range: TimeRange | str | None = None,
        *,
        salient_terms: Sequence[str] | None = None,
        limit: int | None = None,
        now: datetime | None = None,
    ) -> FilterResult:
        """Find the notes a query names, and report what it named.

        Without a time range: `[[mentions]]` (title matches), then notes carrying one of
        the query's tags or a descendant (`#project` finds `#project/alpha`, not the
        reverse), most recently modified first. With a time range: mentions, then the
        notes of the range (daily notes of its last 365 days, notes modified or with a
        `created`/`date` property in it), most recent first, restricted to the query's
        tags when it has any. Mentions ignore the vault's inclusion and exclusion rules,
        since naming a note asks for it; tag and time matches respect them.

        Args:
            query: the user's query; `[[mentions]]` and, without `salient_terms` tags,
                `#tags` are read from it.
            time_range: a `TimeRange`, or a time expression for `parse_time_expression`.
            salient_terms: the query's salient terms (e.g. from an LLM tool call); those
                starting with `#` replace the tags read from the query.
            limit: most documents (1..100); defaults to the `limit` option.
            now: the current time for recency and for parsing a time expression; naive
                means local time. Defaults to the current time.

        Returns:
            The documents and what was matched.

        Raises:
            ValueError: for a limit out of range, or a time expression that cannot be
                parsed (the message names it).
        """
        max_docs = self.limit if limit is None else result_limit(limit, "limit")
        plan = plan_query(
            query,
            k=max_docs,
            time_range=time_range,
            read_period=False,
            salient_terms=salient_terms,
            now=now,
        )
        return self.run(plan, limit=max_docs, now=now)

    aget_relevant_documents = _in_worker_thread(get_relevant_documents)
    afind = _in_worker_thread(find)

    def run(
        self,
        plan: QueryPlan,
        *,
        limit: int | None = None,
        now: datetime | None = None,
        first: Sequence[str] = (),
    ) -> FilterResult:
        """The notes a query's plan names: its mentions, then its tag or period matches.

        `local_search` plans a question once and hands the plan here, so the filter and
        the search read the same mentions, tags and period. At most `plan.limit` notes.

        Args:
            plan: the query's plan.
            limit: most documents, instead of `plan.limit`.
            now: the current time, for recency scores.
            first: note paths, best first, whose tag and period matches lead in this
                order (the rest follow in the filter's own); `local_search` passes the
                notes its search ranked. They are ordered before the cut to the limit:
                when "today" covers a freshly cloned vault, the 100 most recent notes
                are any 100, and the ones that answer must not be cut.
        """
        max_docs = plan.limit if limit is None else limit
        current = _aware(now)
        window = plan.time_range
        vault = self._vault
        vault.refresh()
        notes = list(vault.notes.values())
        mentions = {name: vault.link_graph().resolve(name) for name in plan.mentions}
        tags = plan.tags
        wanted = frozenset(tags)

        matches = [
            _Match(info, "title-match")
            for path in dict.fromkeys(p for p in mentions.values() if p is not None)
            if (info := vault.get(path)) is not None
            and (self.mentions_override_rules or info.searchable)
        ]
        daily_window = None
        others: list[_Match] = []
        if window is not None or wanted:
            # Naming a note overrides the vault's rules; tags and dates do not.
            eligible = [info for info in notes if info.searchable and note_has_tag(info, wanted)]
            if window is not None:
                daily_window = window.last_days(MAX_DAILY_NOTE_DAYS)
                others = _time_matches(eligible, window, daily_window, current)
            else:
                others = _tag_matches(eligible)
            if first:
                rank = {path: place for place, path in enumerate(dict.fromkeys(first))}
                others.sort(key=lambda match: rank.get(match.info.path, len(rank)))
        covered = {match.info.path for match in matches}
        matches.extend(
            match
            for match in others
            if match.info.path not in covered
            and _still_matches(vault.get(match.info.path), wanted, window, daily_window)
        )

        documents: list[Document] = []
        for match in matches:
            if len(documents) == max_docs:
                break
            document = self._document(match)
            if document is not None:
                documents.append(document)
        return FilterResult(
            documents=documents,
            mentions=mentions,
            tags=tags,
            time_range=window,
            daily_note_window=daily_window,
            matched=len(matches),
        )

    @property
    def tag_catalog(self) -> TagCatalog:
        """The tags the filter's vault carries, for the query plan."""
        return self._vault.tag_catalog

    @property
    def _vault(self) -> Vault:
        if self.vault is None:  # the validator always sets it
            msg = "FilterRetriever has no vault"
            raise RuntimeError(msg)
        return self.vault

    def _document(self, match: _Match) -> Document | None:
        info = self._vault.get(match.info.path) or match.info  # the checked record
        text = self._vault.reader.read_text(info.path)
        if text is None:  # deleted or unreadable since the refresh
            return None
        return note_document(info, text, score=match.score, source=match.source, engine="filter")


def recency_score(moment: datetime, reference: datetime) -> float:
    """Score a time match by how many days it lies before the reference time.

    Args:
        moment: when the note matched (its mtime, property date or daily-note day).
        reference: the range end, or now if the range ends later.

    Returns:
        `clamp(1 - days / 30, 0.3, 1.0)`: 1.0 at the reference (or after it), 0.3 from
        21 days before it.
    """
    days = (reference - moment).total_seconds() / _SECONDS_PER_DAY
    return min(1.0, max(RECENCY_FLOOR, 1.0 - days / RECENCY_WINDOW_DAYS))


def _aware(now: datetime | None) -> datetime:
    return datetime.now().astimezone() if now is None else now.astimezone()


def note_has_tag(info: NoteInfo, tags: frozenset[str]) -> bool:
    """True without tag filters, or when a note tag equals a filter or descends from it."""
    if not tags:
        return True
    return any(not tags.isdisjoint(tag_hierarchy(tag)) for tag in info.parsed.tags)


def note_matches(info: NoteInfo | None, tags: frozenset[str], window: TimeRange | None) -> bool:
    """Whether a searchable note carries one of `tags` (or a descendant) and a date in `window`.

    The one test the filter and `VaultSearch.search`'s `tags` and `time_range` options
    apply, so a note that one keeps the other keeps too.
    """
    daily = None if window is None else window.last_days(MAX_DAILY_NOTE_DAYS)
    return _still_matches(info, tags, window, daily)


def _still_matches(
    info: NoteInfo | None,
    tags: frozenset[str],
    window: TimeRange | None,
    daily_window: TimeRange | None,
) -> bool:
    """Whether a note matched on its record still matches once the record is checked.

    `Vault.get` checks a record adopted from a saved index against its note; a record
    altered in that file must not make a note match a tag or a period it does not have.
    """
    if info is None or not info.searchable or not note_has_tag(info, tags):
        return False
    return (
        window is None
        or daily_window is None
        or note_moment(info, window, daily_window) is not None
    )


def _tag_matches(notes: Iterable[NoteInfo]) -> list[_Match]:
    """Tagged notes, most recently modified first."""
    found = [_Match(info, "tag-match", moment=info.mtime_ms / 1000.0) for info in notes]
    found.sort(key=lambda match: (-match.moment, match.info.path))
    return found


def _time_matches(
    notes: Iterable[NoteInfo], window: TimeRange, daily_window: TimeRange, now: datetime
) -> list[_Match]:
    """Notes of a time range, most recent first.

    Each note counts once, at the latest of its dates that falls in the range: a daily
    note's day (within `daily_window`), its mtime, its `created` and `date` properties.
    """
    reference = min(now, window.end)
    found = []
    for info in notes:
        latest = note_moment(info, window, daily_window)
        if latest is not None:
            score = recency_score(latest, reference)
            found.append(_Match(info, "time-filtered", score, latest.timestamp()))
    found.sort(key=lambda match: (-match.score, -match.moment, match.info.path))
    return found


def note_moment(info: NoteInfo, window: TimeRange, daily_window: TimeRange) -> datetime | None:
    """The latest of a note's dates in a time range, None when it has none there.

    A daily note's day (within `daily_window`), its mtime, its `created` and `date`
    properties: each counts (decision 5).
    """
    moments = []
    day = _daily_note_day(info)
    if day is not None and daily_window.overlaps_day(day):
        moments.append(_latest_instant(day, window))
    if window.contains_ms(info.mtime_ms):
        moments.append(datetime.fromtimestamp(info.mtime_ms / 1000.0).astimezone())
    for value in _property_dates(info.parsed.frontmatter):
        if isinstance(value, datetime):
            if window.contains(value):
                moments.append(value)
        elif window.overlaps_day(value):
            moments.append(_latest_instant(value, window))
    return max(moments) if moments else None


def latest_note_date(info: NoteInfo) -> datetime:
    """A note's latest date: its mtime, its `created`/`date` properties, a daily note's day.

    What recency means for a note everywhere it is used (decision 5): a daily note edited
    long after its day still counts from its last change, a note back-dated in its
    frontmatter from its property.
    """
    moments = [datetime.fromtimestamp(info.mtime_ms / 1000.0).astimezone()]
    day = _daily_note_day(info)
    days = [day] if day is not None else []
    for value in _property_dates(info.parsed.frontmatter):
        if isinstance(value, datetime):
            moments.append(value.astimezone())
        else:
            days.append(value)
    moments.extend(TimeRange.from_dates(d, d).end for d in days)
    return max(moments)


def _daily_note_day(info: NoteInfo) -> date | None:
    match = _DAILY_NOTE_TITLE.fullmatch(info.title)
    if match is None:
        return None
    try:
        return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:  # 2024-02-30
        return None


def _latest_instant(day: date, window: TimeRange) -> datetime:
    """A whole day's match counts at its last instant inside the range."""
    return min(TimeRange.from_dates(day, day).end, window.end)


def _property_dates(frontmatter: dict[str, Any]) -> list[date | datetime]:
    """The date properties (`created`, `date`, `date created`, ...) as days or instants.

    YAML already turns `2024-01-08` into a date and `2024-01-08 10:30` into a datetime;
    quoted or templated values are read from text (`2024-01-08T10:30`, `2024.01.08`).
    Naive times are local. Unreadable values are ignored: they are the user's text.
    """
    values: list[date | datetime] = []
    for key, value in frontmatter.items():
        if key.lower() not in _DATE_PROPERTIES:
            continue
        for item in value if isinstance(value, list) else [value]:
            parsed = _date_value(item)
            if parsed is not None:
                values.append(parsed)
    return values


def _date_value(value: object) -> date | datetime | None:
    try:
        if isinstance(value, datetime):
            return value.astimezone()
        if isinstance(value, date):
            return value
        if isinstance(value, str):
            return _date_text(value.strip())
    except (ValueError, OverflowError, OSError):  # year 1 or 9999 has no local time
        return None
    return None


def _date_text(text: str) -> date | datetime | None:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is not None:
        return parsed.astimezone() if len(text) > len("2024-01-08") else parsed.date()
    match = _DATE_TEXT.match(text)
    if match is None:
        return None
    year, month, day = (int(group) for group in match.groups()[:3])
    if match.group(4) is None:
        return date(year, month, day)
    hour, minute, second = (int(group or 0) for group in match.groups()[3:])
    return datetime(year, month, day, hour, minute, second).astimezone()
