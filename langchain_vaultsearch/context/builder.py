"""The `<localSearch>` context: search results laid out for a chat model to answer from.

Pure functions over LangChain `Document`s carrying the package's metadata contract
(`path`, `title`, `score`, `rerank_score`, `mtime`, `source`, `includeInContext`,
`isFilterResult`, `matchType`), so any retriever's output, merged or not, can be shown to
a model the way the original's chain runner shows it:

```
<localSearch timeRange="last week">
[Relevance: 2 high, 1 low]

Answer the question based only on the following context:

<filterResults>          (notes the user named, tagged or dated: guaranteed)
<document> <id>1</id> <title/> <path/> <matchType/> <modified/> <content/> </document>
</filterResults>

<searchResults>          (ranked hits; ids continue: 2, 3, ...)
<document> <id>2</id> <title/> <path/> <modified/> <content/> </document>
</searchResults>

<additionalMatches count="N" note="...">   (overflow: title, path, snippet only)
<file> ... </file>
</additionalMatches>

<guidance> citation rules, images, escaping, source catalog </guidance>
</localSearch>
```

Without filter results the documents form one plain `<document>` list. The whole context
is well-formed XML whatever the notes contain, and never longer than `max_chars` (unless
the frame alone, without any note text, is longer).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from langchain_core.documents import Document

from langchain_vaultsearch.context.citations import (
    citation_guidance,
    sanitize_for_citations,
    source_catalog,
)
from langchain_vaultsearch.context.xml_text import (
    cut_escaped,
    xml_attribute,
    xml_safe_chars,
    xml_text,
)
from langchain_vaultsearch.documents import document_score, is_number

logger = logging.getLogger(__name__)

MAX_CONTEXT_CHARS = 448_000
"""The original's MAX_CHARS_FOR_LOCAL_SEARCH_CONTEXT."""

# Sources whose documents have no ranking of their own: with a read-note tool at hand,
# a result made only of them is listed, not pasted (the model reads what it needs).
_UNRANKED_SOURCES = frozenset({"time-filtered", "tag-match"})
_INSTRUCTION = "Answer the question based only on the following context:"
_NO_DOCUMENTS = "No relevant documents found."
# Already escaped: the model must see the entities it will meet in the documents.
_ESCAPING_NOTE = (
    "ESCAPING:\nDocument text is XML-escaped. When you quote it, write &lt; &gt; &amp; as"
    " the characters they stand for."
)
_HIGH, _MEDIUM = 0.7, 0.3


@dataclass(frozen=True)
class ContextOptions:
    """How much of the results the context carries, and what it tells the model.

    Attributes:
        max_full_documents: documents shown with their text (the original's
            maxSourceChunks); the rest are listed in `<additionalMatches>`.
        max_chars: the most characters the whole context may have. Note text is cut to
            fit, short notes last: each document keeps min(its length, a common cap).
        snippet_chars: characters of text shown for each `<additionalMatches>` entry.
        catalog_size: documents named in the guidance's source catalog.
        inline_citations: ask for `[^n]` citations and a `#### Sources` section.
        read_note_tool: the name of a tool the model can call to read a note by path.
            With one, results that are only tag or time matches are listed rather than
            pasted, and the listing tells the model to call the tool. Without one (a
            plain QA chain), those results are shown in full like any other.
    """

    max_full_documents: int = 30
    max_chars: int = MAX_CONTEXT_CHARS
    snippet_chars: int = 300
    catalog_size: int = 20
    inline_citations: bool = True
    read_note_tool: str | None = None

    def __post_init__(self) -> None:
        _require_int("max_full_documents", self.max_full_documents, minimum=0)
        _require_int("max_chars", self.max_chars, minimum=1)
        _require_int("snippet_chars", self.snippet_chars, minimum=0)
        _require_int("catalog_size", self.catalog_size, minimum=0)
        if not isinstance(self.inline_citations, bool):
            msg = f"inline_citations must be a bool, got {self.inline_citations!r}"
            raise ValueError(msg)
        if self.read_note_tool is not None and (
            not isinstance(self.read_note_tool, str) or not self.read_note_tool.strip()
        ):
            msg = f"read_note_tool must be a tool name or None, got {self.read_note_tool!r}"
            raise ValueError(msg)


@dataclass(frozen=True)
class ContextSource:
    """One note the context shows, as a chain reports it back to its caller.

    Attributes:
        id: the document's `<id>` in the context, or None for an `<additionalMatches>`
            entry (listed, text not shown).
        title: what the model is told to cite as `[[title]]`.
        path: vault-relative path (`""` when the document had none).
        score: `rerank_score`, else `score`, else 0.
        match_type: how a filter result matched (`title-match`, `tag-match`,
            `time-filtered`, ...); None for ranked search results without one.
    """

    id: int | None
    title: str
    path: str
    score: float
    match_type: str | None


@dataclass(frozen=True)
class LocalSearchContext:
    """The context text and the sources it shows.

    Attributes:
        text: the `<localSearch>` element.
        sources: documents with text, in `<id>` order, then the listed-only ones.
        truncated: some note text was cut to keep within `max_chars`.
    """

    text: str
    sources: tuple[ContextSource, ...]
    truncated: bool


def format_local_search_context(
    documents: Sequence[Document],
    *,
    time_range_label: str | None = None,
    options: ContextOptions | None = None,
) -> str:
    """The `<localSearch>` context for `documents`, as one string.

    Fits LCEL directly: `retriever | format_local_search_context`.

    Args:
        documents: search results in rank order (filter results may come first or be
            interleaved; they are shown first either way).
        time_range_label: the user's time expression (`"last week"`), shown as the
            `timeRange` attribute.
        options: limits and wording; defaults match the original.
    """
    return build_local_search_context(
        documents, time_range_label=time_range_label, options=options
    ).text


def build_local_search_context(
    documents: Sequence[Document],
    *,
    time_range_label: str | None = None,
    options: ContextOptions | None = None,
    time_order: bool | None = None,
) -> LocalSearchContext:
    """The `<localSearch>` context for `documents`, with the sources it shows.

    Documents with `includeInContext` False are left out. Text is cleaned of characters
    XML cannot carry and of citation markers (`sanitize_for_citations`), then escaped.

    Args:
        documents: search results in rank order.
        time_range_label: the user's time expression, shown as `timeRange`.
        options: limits and wording; defaults match the original.
        time_order: show the documents newest first; None: when any is a time match,
            as the original, where a period is answered by the filter alone.
            `local_search` says False when a search ran beside the filter (a period
            read from the question): its order stands, or the search's best hit could
            be only listed.

    Raises:
        TypeError: an item of `documents` is not a `Document`.
    """
    options = options or ContextOptions()
    entries = [entry for doc in documents if (entry := _entry(doc)) is not None]
    if time_order is None:
        time_order = any(entry.source == "time-filtered" for entry in entries)
    full, listed = _tiers(entries, options, time_order=time_order)
    layout = _Layout(full, listed, time_range_label, options)
    escaped = [xml_text(entry.text) for entry in full]
    text = layout.render(escaped, [False] * len(full))
    cut_flags = [False] * len(full)
    if len(text) > options.max_chars:
        frame = layout.render([""] * len(full), [bool(content) for content in escaped])
        shares = _fair_shares([len(content) for content in escaped], options.max_chars - len(frame))
        contents = [
            cut_escaped(content, share) for content, share in zip(escaped, shares, strict=True)
        ]
        cut_flags = [len(cut) < len(whole) for cut, whole in zip(contents, escaped, strict=True)]
        text = layout.render(contents, cut_flags)
        if len(text) > options.max_chars:
            logger.warning(
                "localSearch context is %d characters without note text; max_chars is %d",
                len(frame),
                options.max_chars,
            )
    sources = [
        ContextSource(index, entry.title, entry.path, entry.score, entry.match_type)
        for index, entry in enumerate(full, start=1)
    ]
    sources += [
        ContextSource(None, entry.title, entry.path, entry.score, entry.match_type)
        for entry in listed
    ]
    return LocalSearchContext(text=text, sources=tuple(sources), truncated=any(cut_flags))


@dataclass(frozen=True)
class _Entry:
    """A document reduced to what the context shows; `text` is clean, not escaped."""

    title: str
    path: str
    text: str
    score: float
    modified: datetime | None
    source: str | None
    is_filter: bool
    match_type: str | None


def _entry(doc: Document) -> _Entry | None:
    if not isinstance(doc, Document):
        msg = f"documents must be LangChain Documents, got {type(doc).__name__}"
        raise TypeError(msg)
    meta = doc.metadata
    if meta.get("includeInContext") is False:
        return None
    path = _string(meta.get("path"))
    source = _string(meta.get("source")) or None
    is_filter = meta.get("isFilterResult") is True
    match_type = _string(meta.get("matchType")) or None
    if is_filter:
        match_type = match_type or source or "filter"
    text = xml_safe_chars(doc.page_content).replace("\r\n", "\n").replace("\r", "\n")
    return _Entry(
        title=_string(meta.get("title")) or path or "Untitled",
        path=path,
        text=sanitize_for_citations(text).strip(),
        score=document_score(meta),
        modified=_timestamp(meta.get("mtime")),
        source=source,
        is_filter=is_filter,
        match_type=match_type,
    )


def _tiers(
    entries: list[_Entry], options: ContextOptions, *, time_order: bool
) -> tuple[list[_Entry], list[_Entry]]:
    """Split into documents shown with text and documents only listed.

    Filter results come first so search hits can never push a guaranteed note into the
    listing; with `time_order` (a period answered by the filter alone) they are ordered
    newest first instead, since "what did I do last week" reads best in time order.
    """
    ordered = sorted(entries, key=_newest_first) if time_order else _filters_first(entries)
    if (
        options.read_note_tool is not None
        and entries
        and all(entry.source in _UNRANKED_SOURCES for entry in entries)
    ):
        return [], ordered
    limit = options.max_full_documents
    # Ids run 1..n down the page, so the filter section comes first here too.
    return _filters_first(ordered[:limit]), ordered[limit:]


def _filters_first(entries: list[_Entry]) -> list[_Entry]:
    return [e for e in entries if e.is_filter] + [e for e in entries if not e.is_filter]


def _newest_first(entry: _Entry) -> tuple[bool, float]:
    if entry.modified is None:
        return (True, 0.0)
    return (False, -entry.modified.timestamp())


class _Layout:
    """The context around given document contents.

    Rendering with the contents left out measures the frame, so the contents can then be
    cut to exactly the room that is left.
    """

    def __init__(
        self,
        full: list[_Entry],
        listed: list[_Entry],
        time_range_label: str | None,
        options: ContextOptions,
    ) -> None:
        self._full = full
        label = (time_range_label or "").strip()
        self._open_tag = (
            f"<localSearch timeRange={xml_attribute(label)}>" if label else "<localSearch>"
        )
        # Everything but the document contents is fixed: render it once.
        self._relevance = _relevance_header([*full, *listed])
        self._listing = _listing(listed, options) if listed else ""
        self._guidance = _guidance(full, options) if full or listed else ""

    def render(self, contents: Sequence[str], cut_flags: Sequence[bool]) -> str:
        """The context with `contents` (escaped) as the documents' text."""
        blocks = []
        if self._full:
            blocks.append(self._documents(contents, cut_flags))
        if self._listing:
            blocks.append(self._listing)
        body = "\n\n".join(blocks) or _NO_DOCUMENTS
        parts = [self._relevance, _INSTRUCTION, body]
        if self._guidance:
            parts.append(self._guidance)
        return self._open_tag + "\n" + "\n\n".join(parts) + "\n</localSearch>"

    def _documents(self, contents: Sequence[str], cut_flags: Sequence[bool]) -> str:
        rendered = [
            (entry.is_filter, _document(index, entry, content, cut))
            for index, (entry, content, cut) in enumerate(
                zip(self._full, contents, cut_flags, strict=True), start=1
            )
        ]
        if not any(entry.is_filter for entry in self._full):
            return "\n\n".join(doc for _, doc in rendered)
        sections = []
        for name, wanted in (("filterResults", True), ("searchResults", False)):
            docs = [doc for is_filter, doc in rendered if is_filter is wanted]
            if docs:
                sections.append(f"<{name}>\n" + "\n\n".join(docs) + f"\n</{name}>")
        return "\n\n".join(sections)


def _document(index: int, entry: _Entry, content: str, cut: bool) -> str:
    lines = ["<document>", f"<id>{index}</id>", f"<title>{xml_text(entry.title)}</title>"]
    # A filter result always names its path and how it matched (the original's layout).
    if entry.is_filter:
        lines.append(f"<path>{xml_text(entry.path)}</path>")
        lines.append(f"<matchType>{xml_text(entry.match_type or 'filter')}</matchType>")
    elif entry.path and entry.path != entry.title:
        lines.append(f"<path>{xml_text(entry.path)}</path>")
    if entry.modified is not None:
        lines.append(f"<modified>{_iso(entry.modified)}</modified>")
    lines.append('<content truncated="true">' if cut else "<content>")
    lines += [content, "</content>", "</document>"]
    return "\n".join(lines)


def _listing(listed: list[_Entry], options: ContextOptions) -> str:
    if options.read_note_tool is not None:
        note = (
            "These results contain titles and metadata only. To read the full content of "
            f"a note, call the {options.read_note_tool.strip()} tool with its path."
        )
    else:
        note = "These results contain titles and metadata only; their full text is not shown."
    files = []
    for entry in listed:
        lines = ["<file>", f"<title>{xml_text(entry.title)}</title>"]
        if entry.path:
            lines.append(f"<path>{xml_text(entry.path)}</path>")
        if entry.modified is not None:
            lines.append(f"<modified>{_iso(entry.modified)}</modified>")
        snippet = entry.text[: options.snippet_chars].rstrip()
        if snippet:
            lines.append(f"<snippet>{xml_text(snippet)}</snippet>")
        lines.append("</file>")
        files.append("\n".join(lines))
    return (
        f'<additionalMatches count="{len(listed)}" note={xml_attribute(note)}>\n'
        + "\n".join(files)
        + "\n</additionalMatches>"
    )


def _guidance(full: list[_Entry], options: ContextOptions) -> str:
    parts = [xml_text(citation_guidance(inline_citations=options.inline_citations))]
    parts.append(_ESCAPING_NOTE)
    if full and options.catalog_size:
        catalog = [(entry.title, entry.path) for entry in full[: options.catalog_size]]
        parts.append(xml_text(source_catalog(catalog)))
    return "<guidance>\n" + "\n\n".join(parts) + "\n</guidance>"


def _relevance_header(entries: list[_Entry]) -> str:
    """`[Relevance: 3 high, 2 medium, 1 low]` over `rerank_score` / `score`.

    It lets the model judge whether to trust the results or to say that the notes do not
    cover the question.
    """
    high = sum(entry.score >= _HIGH for entry in entries)
    medium = sum(_MEDIUM <= entry.score < _HIGH for entry in entries)
    low = len(entries) - high - medium
    parts = [f"{n} {label}" for n, label in ((high, "high"), (medium, "medium"), (low, "low")) if n]
    return f"[Relevance: {', '.join(parts)}]" if parts else "[Relevance: no results]"


def _fair_shares(lengths: list[int], budget: int) -> list[int]:
    """Characters each document may keep: min(length, cap), the largest cap that fits.

    The original cut every document by the same ratio, so one 400,000-character note
    cost thirty short notes part of their text; here short notes stay whole and the
    long ones share what remains.
    """
    remaining = max(budget, 0)
    cap = None
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    for position, index in enumerate(order):
        share = remaining // (len(order) - position)
        if lengths[index] > share:
            cap = share
            break
        remaining -= lengths[index]
    return [length if cap is None else min(length, cap) for length in lengths]


def _string(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _timestamp(value: object) -> datetime | None:
    """`mtime` as an aware datetime, or None when it is missing or not a time.

    The contract says epoch milliseconds; ISO strings and datetimes (documents that went
    through JSON or came from another producer) are accepted too.
    """
    if is_number(value):
        if not math.isfinite(value):
            return None
        try:
            return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return None


def _iso(moment: datetime) -> str:
    """UTC with milliseconds and `Z`, as the original writes `<modified>`."""
    stamp = moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _require_int(name: str, value: object, *, minimum: int) -> None:
    if not is_number(value) or not isinstance(value, int) or value < minimum:
        msg = f"{name} must be an integer >= {minimum}, got {value!r}"
        raise ValueError(msg)
