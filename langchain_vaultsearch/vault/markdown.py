"""Markdown facts of one note: frontmatter, tags, links, headings, aliases.

Pure functions on text, so every rule about Obsidian syntax is testable without a
filesystem and shared by the vault, the chunker and the filters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from urllib.parse import unquote

import yaml

from langchain_vaultsearch.vault.markdown_syntax import TAG_PATTERN


@dataclass(frozen=True)
class Heading:
    """An ATX heading (`#`..`######`) outside fenced code.

    Attributes:
        level: 1..6.
        text: heading text, trimmed, closing `#`s removed.
        start: offset of the first character of the heading line in the note text.
    """

    level: int
    text: str
    start: int


@dataclass(frozen=True)
class Link:
    """An outgoing `[[wikilink]]` or `![[embed]]`.

    Attributes:
        target: the linked note name or path, with heading, block ref and alias stripped.
        heading: the `#Heading` part, if any.
        alias: the `|alias` part, if any.
        embed: True for `![[...]]`.
    """

    target: str
    heading: str | None = None
    alias: str | None = None
    embed: bool = False


@dataclass(frozen=True)
class ParsedNote:
    """Everything the search needs to know about a note's text.

    Attributes:
        frontmatter: the YAML mapping, `{}` when absent, broken or not a mapping.
        frontmatter_error: why the frontmatter was ignored, or None.
        body_start: offset just past the closing frontmatter fence (0 without frontmatter).
        tags: inline tags (outside code) then frontmatter tags, `#`-prefixed, deduplicated
            case-insensitively, first spelling kept.
        aliases: frontmatter `aliases` / `alias` values.
        links: outgoing wikilinks and embeds, in order.
        headings: headings in order.
        property_values: frontmatter values flattened to strings for indexing.
    """

    frontmatter: dict[str, Any] = field(default_factory=dict)
    frontmatter_error: str | None = None
    body_start: int = 0
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    headings: tuple[Heading, ...] = ()
    property_values: tuple[str, ...] = ()


_BOM = "\ufeff"
_FRONTMATTER_OPEN = re.compile(f"{_BOM}?---\r?\n")
_FRONTMATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)\r?(?:\n|\Z)", re.MULTILINE)
_YAML_CONTENT = re.compile(r"^[ \t]*[^\s#]", re.MULTILINE)
_FENCE_LINE = re.compile(r"^[ \t>]*(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
# A code span opens with a whole run of backticks (the look-behind after the first one keeps
# the engine's fast literal scan) and closes with a run of the same length, within a paragraph.
_INLINE_CODE = re.compile(r"(`(?<!``)`*)(?!`)(?:[^\n]|\n(?![ \t]*\n))+?(?<!`)\1(?!`)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+([^\n]*)$", re.MULTILINE)
_CLOSING_HASHES = re.compile(r"(?:^|(?<![ \t])[ \t]+)#+$")
# `[[wiki]]`, `[text](url)` and their `!` embeds. Starting with a character set lets the
# engine skip to the next `!` or `[`; each part stops at the next bracket, so a line full of
# unmatched `[` or `(` is scanned in linear time, not quadratic.
_LINK = re.compile(
    r"[!\[](?:(?<=!)\[|(?<=\[))"
    r"(?:\[(?P<wiki>[^\[\]\n]+)\]\]|(?P<md_text>[^\[\]\n]*)\]\((?P<url>[^()\n]*)\))"
)
# The part of a bare URL that can hold a `#`; the scheme before it never does.
_URL_TAIL = re.compile(r"://[^\s<>]*")
_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_FAST_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MAX_FLOW_BRACKETS_FOR_LIBYAML = 1000
_TAG_SEPARATORS = re.compile(r"[,\s]+")

MAX_FRONTMATTER_VALUES = 10_000
"""Values (aliases expanded) a note's frontmatter may hold; real notes hold tens."""
MAX_FRONTMATTER_DEPTH = 32
"""Nesting a note's frontmatter may have."""
MAX_FRONTMATTER_CHARS = 200_000
"""Characters of string values a note's frontmatter may hold."""

_TAG_KEYS = frozenset({"tags", "tag"})
_ALIAS_KEYS = frozenset({"aliases", "alias"})
_MAX_LIST_VALUES = 10


def parse_frontmatter(text: str) -> tuple[dict[str, Any], int, str | None]:
    """Read the YAML frontmatter without ever raising.

    A vault always contains some hand-edited or templated notes (`date: {{date}}`), and one
    bad header must cost that note its properties, not abort indexing of the whole vault.
    The reason is returned so the caller can report it. Non-string keys (`2024: x`) become
    strings so that lookups by name work on every mapping.

    Args:
        text: the note text; a leading BOM and CRLF line endings are accepted.

    Returns:
        `(mapping, body_start, error)`. Without a complete `---` block: `({}, 0, None)`.
        With a block that is broken or not a mapping: `({}, body_start, reason)`; an empty
        (or comment-only) block is not an error.
    """
    span = _frontmatter_span(text)
    if span is None:
        return {}, 0, None
    yaml_start, yaml_end, body_start = span
    block = text[yaml_start:yaml_end]
    try:
        data = _load_yaml(block)
    except yaml.MarkedYAMLError as exc:
        where = f" at line {exc.problem_mark.line + 2}" if exc.problem_mark else ""
        reason = exc.problem or exc.context or type(exc).__name__
        return {}, body_start, f"invalid YAML{where}: {reason}"
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        # ValueError: PyYAML builds `2024-13-45` into a date and the constructor rejects it.
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, body_start, f"invalid YAML: {first_line}"
    bounds = _bounds_error(data)
    if bounds is not None:
        return {}, body_start, bounds
    if isinstance(data, dict):
        return {str(key): value for key, value in data.items()}, body_start, None
    if data is None and _YAML_CONTENT.search(block) is None:
        return {}, body_start, None
    kind = "null" if data is None else type(data).__name__
    return {}, body_start, f"frontmatter is {kind}, not a mapping"


def _bounds_error(data: object) -> str | None:
    """Why parsed frontmatter is too big to keep, or None when it is within bounds.

    YAML aliases let 400 bytes stand for a billion values ("billion laughs": each level
    repeats the one before nine times); PyYAML builds them as shared objects, cheaply,
    but everything that later walks them (property values, saved records, JSON) does
    the billion. Deep nesting breaks recursive walkers the same way. So the values are
    counted as a walker would see them, aliases expanded, iteratively and stopping at
    the first bound crossed: the cost is at most `MAX_FRONTMATTER_VALUES` steps.
    """
    budget = MAX_FRONTMATTER_VALUES
    chars = 0
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        budget -= 1
        if budget < 0:
            return (
                f"frontmatter too large: over {MAX_FRONTMATTER_VALUES:,} values once aliases expand"
            )
        if depth > MAX_FRONTMATTER_DEPTH:
            return f"frontmatter nested deeper than {MAX_FRONTMATTER_DEPTH} levels"
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, (list, tuple, set)):
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, (str, bytes)):
            chars += len(value)
            if chars > MAX_FRONTMATTER_CHARS:
                return f"frontmatter too large: over {MAX_FRONTMATTER_CHARS:,} characters of values"
    return None


def extract_headings(text: str) -> list[Heading]:
    """List the ATX headings that Obsidian renders, for chunking and heading links.

    Code samples often hold lines like `# comment`, so fenced code and the frontmatter are
    not scanned.

    Args:
        text: the note text.

    Returns:
        Headings in order; `start` is the offset of the heading line in `text`.
    """
    fence_masked, _ = _masks(text, _body_start(text))
    return _headings(fence_masked)


def extract_inline_tags(text: str) -> list[str]:
    """Find the tags Obsidian would show in the note body.

    Markdown reuses `#` for headings, code, URLs, issue numbers and heading links, so a
    plain regex over the text would invent tags; everything that is not prose is blanked
    out first.

    Args:
        text: the note text.

    Returns:
        `#`-prefixed tags in order of first appearance, deduplicated case-insensitively with
        the first spelling kept.
    """
    _, code_masked = _masks(text, _body_start(text))
    return _dedupe(_tags(_tag_text(code_masked, _link_matches(code_masked))))


def frontmatter_tags(frontmatter: dict[str, Any]) -> list[str]:
    """Read the `tags` property in every spelling people actually use.

    Obsidian accepts a YAML list, a comma- or space-separated string, names with or without
    `#`, and the singular key; a tag filter must see all of them.

    Args:
        frontmatter: the mapping from `parse_frontmatter`.

    Returns:
        `#`-prefixed tags, deduplicated case-insensitively with the first spelling kept.
    """
    names: list[str] = []
    for value in _values_of(frontmatter, _TAG_KEYS):
        if isinstance(value, list):
            names.extend(str(item) for item in value if _is_text_or_number(item))
        elif _is_text_or_number(value):
            names.extend(_TAG_SEPARATORS.split(str(value)))
    cleaned = (name.strip().lstrip("#").strip() for name in names)
    return _dedupe(f"#{name}" for name in cleaned if name)


def frontmatter_aliases(frontmatter: dict[str, Any]) -> list[str]:
    """Read the alternative names of a note so that searches and links by alias find it.

    Numbers are kept as text because YAML turns an alias such as `1984` into an int.

    Args:
        frontmatter: the mapping from `parse_frontmatter`.

    Returns:
        Aliases in order, trimmed, deduplicated case-insensitively.
    """
    aliases: list[str] = []
    for value in _values_of(frontmatter, _ALIAS_KEYS):
        if isinstance(value, list):
            aliases.extend(str(item) for item in value if _is_text_or_number(item))
        elif isinstance(value, str):
            aliases.extend(value.split(","))
    return _dedupe(alias for alias in (alias.strip() for alias in aliases) if alias)


def property_values(frontmatter: dict[str, Any]) -> list[str]:
    """Flatten property values to words so that a search for `draft` or `2024-05-01` hits.

    Only values that read as words are kept; nested structures are mostly machine data, and
    long lists are cut at ten items so one generated property cannot drown the note's text.

    Args:
        frontmatter: the mapping from `parse_frontmatter`.

    Returns:
        Values as strings in frontmatter order, tags and aliases excluded.
    """
    values: list[str] = []
    for key, value in frontmatter.items():
        if key.lower() in _TAG_KEYS or key.lower() in _ALIAS_KEYS:
            continue
        items = value[:_MAX_LIST_VALUES] if isinstance(value, list) else [value]
        values.extend(text for text in map(_scalar_text, items) if text is not None)
    return values


def extract_links(text: str) -> list[Link]:
    """Collect the outgoing links of a note, for backlinks and link-based ranking.

    Both Obsidian wikilinks and standard markdown links to `.md` files count, since vaults
    edited outside Obsidian use the latter. Links to a heading of the same note
    (`[[#Heading]]`) and links to web pages are not links to another note.

    Args:
        text: the note text.

    Returns:
        Links in order of appearance, duplicates kept.
    """
    _, code_masked = _masks(text, _body_start(text))
    return _links(text, _link_matches(code_masked))


def normalize_tag(tag: str) -> str:
    """Give a tag the one spelling used as a filter and index key.

    Obsidian treats tags case-insensitively and users type them with or without `#`.

    Args:
        tag: a tag such as `#Project/Alpha`, `Project/Alpha` or `##x`.

    Returns:
        The tag lowercased with exactly one leading `#`, or `""` when nothing is left.
    """
    name = tag.strip().lstrip("#").strip().lower()
    return f"#{name}" if name else ""


def tag_hierarchy(tag: str) -> list[str]:
    """Expand a nested tag to its ancestors, because filtering on `#a` must match `#a/b`.

    Args:
        tag: a tag in any spelling `normalize_tag` accepts.

    Returns:
        The normalized prefixes from the root down, e.g. `['#a', '#a/b', '#a/b/c']`.
    """
    segments = [segment for segment in normalize_tag(tag)[1:].split("/") if segment]
    return ["#" + "/".join(segments[:depth]) for depth in range(1, len(segments) + 1)]


def extract_tags_from_query(query: str) -> list[str]:
    """Find the tags a user typed in a query so they can become filters.

    The same rules as in notes apply (so `C#` or `issue #42` yield no filter that could
    never match), and the result is lowercased to compare with normalized note tags.

    Args:
        query: the user's search text.

    Returns:
        Lowercased `#`-prefixed tags in order of first appearance, without duplicates.
    """
    return _dedupe(tag.lower() for tag in _tags(query))


def parse_note(text: str) -> ParsedNote:
    r"""Parse a note once, sharing the code masking between tags, links and headings.

    Indexing runs this on every note of the vault, so the frontmatter is parsed and the
    code regions are blanked only once per note.

    Args:
        text: the note text with `\n` line endings only; callers convert it with
            `text.replace('\r\n', '\n').replace('\r', '\n')` so that offsets such as
            `Heading.start` and `body_start` index the text that is stored and chunked.

    Returns:
        The parsed note; inline tags come before frontmatter tags.
    """
    frontmatter, body_start, error = parse_frontmatter(text)
    fence_masked, code_masked = _masks(text, body_start)
    link_matches = _link_matches(code_masked)
    inline_tags = _tags(_tag_text(code_masked, link_matches))
    return ParsedNote(
        frontmatter=frontmatter,
        frontmatter_error=error,
        body_start=body_start,
        tags=tuple(_dedupe([*inline_tags, *frontmatter_tags(frontmatter)])),
        aliases=tuple(frontmatter_aliases(frontmatter)),
        links=tuple(_links(text, link_matches)),
        headings=tuple(_headings(fence_masked)),
        property_values=tuple(property_values(frontmatter)),
    )


def _frontmatter_span(text: str) -> tuple[int, int, int] | None:
    """Locate the frontmatter as `(yaml_start, yaml_end, body_start)`, without parsing it."""
    opening = _FRONTMATTER_OPEN.match(text)
    if opening is None:
        return None
    closing = _FRONTMATTER_CLOSE.search(text, opening.end())
    if closing is None:
        return None
    return opening.end(), closing.start(), closing.end()


def _load_yaml(block: str) -> object:
    """Parse with libyaml when PyYAML has it, ten times faster than the pure-Python parser.

    Both share the safe constructor; only on an error is the block parsed again in pure
    Python, so the error text is the same with or without libyaml. libyaml composes nested
    nodes recursively in C and crashes the process (no exception) beyond about 10,000 levels
    of `[` or `{`, so blocks with many of them go straight to the pure-Python parser, which
    raises RecursionError instead.
    """
    if block.count("[") + block.count("{") > _MAX_FLOW_BRACKETS_FOR_LIBYAML:
        return yaml.safe_load(block)
    try:
        return yaml.load(block, Loader=_FAST_SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return yaml.safe_load(block)


def _body_start(text: str) -> int:
    span = _frontmatter_span(text)
    return 0 if span is None else span[2]


def _masks(text: str, body_start: int) -> tuple[str, str]:
    """Blank out non-prose regions, keeping every offset and newline.

    Returns:
        `(fence_masked, code_masked)`: the text with the frontmatter and fenced code blanked
        (headings need inline code intact), then additionally with inline code blanked.
    """
    # A BOM is blanked too, or a heading on the first line would not start its line.
    prefix_end = max(body_start, len(_BOM) if text.startswith(_BOM) else 0)
    fence_masked = _blank(text, [(0, prefix_end), *_fence_ranges(text, prefix_end)])
    inline_code = [match.span() for match in _INLINE_CODE.finditer(fence_masked, body_start)]
    return fence_masked, _blank(fence_masked, inline_code)


def _fence_ranges(text: str, start: int) -> list[tuple[int, int]]:
    """Spans of fenced code blocks; an unclosed fence runs to the end, as in CommonMark.

    Fences may be indented or quoted (`> ````) because code blocks in list items and
    callouts are common in vaults.
    """
    ranges: list[tuple[int, int]] = []
    if "```" not in text and "~~~" not in text:
        # Most notes have no fence, and the pattern is tried at every line start.
        return ranges
    opening: re.Match[str] | None = None
    for line in _FENCE_LINE.finditer(text, start):
        fence, rest = line.group(1), line.group(2)
        if opening is None:
            if not (fence[0] == "`" and "`" in rest):
                opening = line
        elif (
            fence[0] == opening.group(1)[0]
            and len(fence) >= len(opening.group(1))
            and not rest.strip()
        ):
            ranges.append((opening.start(), line.end()))
            opening = None
    if opening is not None:
        ranges.append((opening.start(), len(text)))
    return ranges


def _blank(text: str, ranges: Iterable[tuple[int, int]]) -> str:
    """Replace the sorted, non-overlapping `ranges` of `text` with spaces, keeping newlines."""
    pieces: list[str] = []
    last = 0
    for start, end in ranges:
        pieces.append(text[last:start])
        lines = text[start:end].split("\n")
        pieces.append("\n".join(" " * len(line) for line in lines))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _headings(fence_masked: str) -> list[Heading]:
    headings: list[Heading] = []
    for match in _HEADING.finditer(fence_masked):
        title = _CLOSING_HASHES.sub("", match.group(2).strip()).strip()
        if title:
            headings.append(Heading(level=len(match.group(1)), text=title, start=match.start()))
    return headings


def _link_matches(code_masked: str) -> list[re.Match[str]]:
    return list(_LINK.finditer(code_masked))


def _links(text: str, matches: Iterable[re.Match[str]]) -> list[Link]:
    links: list[Link] = []
    for match in matches:
        # Groups are read from `text`: the masked copy has inline code blanked out.
        embed = match.group().startswith("!")
        if match.group("wiki") is not None:
            link = _wikilink(text[match.start("wiki") : match.end("wiki")], embed)
        else:
            link = _markdown_link(
                text[match.start("md_text") : match.end("md_text")],
                text[match.start("url") : match.end("url")],
                embed,
            )
        if link is not None:
            links.append(link)
    return links


def _wikilink(inner: str, embed: bool) -> Link | None:
    # Inside tables the alias bar is escaped: [[Note\|alias]].
    target_part, _, alias = inner.replace("\\|", "|").partition("|")
    target, _, heading = target_part.partition("#")
    if not target.strip():
        return None
    return Link(target.strip(), heading.strip() or None, alias.strip() or None, embed)


def _markdown_link(label: str, url: str, embed: bool) -> Link | None:
    url = url.strip()
    if url.startswith("<"):
        url = url[1:].partition(">")[0]
    elif url:
        url = url.split()[0]  # drops an optional "title"
    if _URL_SCHEME.match(url):
        return None
    path, _, fragment = url.partition("#")
    target = unquote(path).strip()
    if not target.lower().endswith(".md"):
        return None
    return Link(target, unquote(fragment).strip() or None, label.strip() or None, embed)


def _tag_text(code_masked: str, link_matches: Iterable[re.Match[str]]) -> str:
    """Blank link targets and URLs, whose `#` marks headings or anchors, not tags."""
    spans = (
        match.span("url") if match.group("url") is not None else match.span()
        for match in link_matches
    )
    without_links = _blank(code_masked, spans)
    return _blank(without_links, (match.span() for match in _URL_TAIL.finditer(without_links)))


def _tags(text: str) -> Iterator[str]:
    for match in TAG_PATTERN.finditer(text):
        yield match.group().rstrip("/")


def _dedupe(items: Iterable[str]) -> list[str]:
    """Keep the first spelling of each case-insensitively distinct item."""
    seen: set[str] = set()
    unique: list[str] = []
    for item in items:
        key = item.lower()
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def _values_of(frontmatter: dict[str, Any], keys: frozenset[str]) -> list[Any]:
    return [value for key, value in frontmatter.items() if key.lower() in keys]


def _is_text_or_number(value: object) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _scalar_text(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, date):
        return value.isoformat()
    return None
