"""Heading-first chunking of one note, boundary-compatible with the original plugin.

Chunk ids (`"<path>#<index>"`), chunk text and chunk boundaries decide what BM25 scores,
which chunk reaches the LLM and whether a semantic index built by the original can be
reused. So this module reproduces the TypeScript `ChunkManager` and the LangChain-JS
`RecursiveCharacterTextSplitter` it calls, rather than using the Python splitter, whose
markdown separators and whitespace trimming differ.

The functions are pure: reading files, caching and the memory budget belong to the
caller, which keeps every boundary rule testable on plain strings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from langchain_vaultsearch.vault.markdown import Heading

CHUNK_SIZE = 6000

# LangChain-JS `getSeparatorsForLanguage("markdown")`, in its order. The original passes
# its own list too, but `fromLanguage` overrides it, so this list is what really decides
# the boundaries. Python langchain's markdown list differs (regexes that also cut at H1,
# and "```\n" at every fence line), so reusing it would move chunk boundaries.
MARKDOWN_SEPARATORS: tuple[str, ...] = (
    "\n## ",
    "\n### ",
    "\n#### ",
    "\n##### ",
    "\n###### ",
    "```\n\n",
    "\n\n***\n\n",
    "\n\n---\n\n",
    "\n\n___\n\n",
    "\n\n",
    "\n",
    " ",
    "",
)

# The characters JS `trimDoc` removes from merged pieces. It deliberately keeps
# '\n', '\r' and '\t', so a piece may begin or end with a line break. This is the
# LangChain-JS source the original was built from; the released npm packages (0.1.0 to
# 1.0.2) still call `trim()`, which also drops those. Cut points are the same either
# way (sizes are measured before trimming), but piece edges differ, and a piece of only
# line breaks or tabs survives here (coalescing usually absorbs it) where `trim()` drops it.
_SPLITTER_SPACES = (
    " \v\f\u200b\u200c\u200d\u200e\u200f\u2028\u2029\ufeff\u202d"
    "\xa0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u202f\u205f\u3000"
)
# JS `String.prototype.trim` and regex `\s`. Python's `str.strip()` differs (it strips
# U+001C..U+001F and U+0085 and keeps U+FEFF), and the tiny-chunk rules must match.
_JS_WHITESPACE = (
    "\t\n\v\f\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WS_CLASS = re.escape(_JS_WHITESPACE)
# A body that is only a heading line: JS `/^#{1,6}\s+\S+/` on the single non-empty line.
_HEADING_LINE = re.compile(f"#{{1,6}}[{_JS_WS_CLASS}]+[^{_JS_WS_CLASS}]")
_HEADER_TEMPLATE = "\n\nNOTE TITLE: [[{title}]]\n\nNOTE BLOCK CONTENT:\n\n"
_by_start = attrgetter("start")


@dataclass(frozen=True)
class Chunk:
    """One indexable block of a note.

    Attributes:
        id: `f"{note_path}#{chunk_index}"`, not zero-padded, as in the original;
            `note_path_from_chunk_id` recovers the path even when the name contains `#`.
        note_path: vault-relative posix path, e.g. `"folder/My Note.md"`.
        chunk_index: 0-based position of the chunk in its note.
        content: `chunk_header(title)` + the chunk body; what is indexed as the body
            field and what the LLM sees.
        heading: text of the section's heading, `""` when the note has none.
        title: the note's basename without `.md`.
    """

    id: str
    note_path: str
    chunk_index: int
    content: str
    heading: str
    title: str


def title_only_chunk(note_path: str) -> Chunk:
    """The one chunk of a note with no body (0 bytes, or frontmatter only).

    The original gives such a note no chunk, so search never returns it, though its name
    and tags say what it is about; this chunk is its header alone.
    """
    title = note_path.rsplit("/", 1)[-1].removesuffix(".md")
    return Chunk(f"{note_path}#0", note_path, 0, chunk_header(title), "", title)


def is_title_only(chunk: Chunk) -> bool:
    """Whether a chunk is a body-less note's `title_only_chunk`."""
    return chunk.chunk_index == 0 and chunk.content == chunk_header(chunk.title)


def chunk_header(title: str) -> str:
    r"""Build the header the original puts in front of every chunk.

    Every chunk, not just the first, carries it: a chunk is scored and shown to the LLM
    on its own, and the header is what tells both which note the block belongs to (the
    title's words also match in the body field). It is counted in the size limit, so it
    must stay byte-identical to the original for boundaries to match.

    Args:
        title: the note's basename without `.md`.

    Returns:
        `"\n\nNOTE TITLE: [[<title>]]\n\nNOTE BLOCK CONTENT:\n\n"`, 41 + len(title) long.
    """
    return _HEADER_TEMPLATE.format(title=title)


def split_text(
    text: str, chunk_size: int, separators: Sequence[str] = MARKDOWN_SEPARATORS
) -> list[str]:
    """Split text like LangChain-JS `RecursiveCharacterTextSplitter` (overlap 0, no kept separator).

    A port rather than the Python splitter: its markdown separators are other patterns
    (regexes that also split at H1 and at every fence line), it keeps separators by
    default and it strips all whitespace, so its boundaries would not match the original.
    Lengths are Python code points, not UTF-16 units: the two differ only for astral
    characters (emoji), and cutting between code points never splits a surrogate pair
    as JS does.

    Args:
        text: the text to split.
        chunk_size: maximum piece length; a piece exceeds it only when no separator is left
            to cut it with.
        separators: tried in order; the first one found in the text is used and the rest
            are kept for pieces that are still too long. `""` cuts between characters.

    Returns:
        The pieces in order, with spaces (not line breaks or tabs) trimmed; never empty
        strings.

    Raises:
        ValueError: if chunk_size < 1 (the JS constructor rejects overlap >= size too).
    """
    if chunk_size < 1:
        msg = f"chunk_size must be at least 1, got {chunk_size}"
        raise ValueError(msg)
    pieces: list[str] = []
    _split_into(text, chunk_size, separators, pieces)
    return pieces


def _split_into(text: str, chunk_size: int, separators: Sequence[str], out: list[str]) -> None:
    """Append the pieces of one recursion level to `out`, so no intermediate lists are joined."""
    separator = separators[-1] if separators else ""
    remaining: Sequence[str] | None = None
    for i, candidate in enumerate(separators):
        if candidate == "":
            separator = candidate
            break
        if candidate in text:
            separator = candidate
            # An empty remainder still means "recurse" in JS ([] is truthy), where it then
            # throws on an undefined separator; here the piece is cut between characters.
            # The markdown list ends with "", so chunking never reaches this case.
            remaining = separators[i + 1 :]
            break

    if separator == "" and chunk_size > 1:
        # Merging single characters with an empty joiner yields consecutive windows of
        # chunk_size characters; slicing gets the same pieces without a per-character loop
        # (CJK text without spaces or line breaks lands here).
        for begin in range(0, len(text), chunk_size):
            piece = text[begin : begin + chunk_size].strip(_SPLITTER_SPACES)
            if piece:
                out.append(piece)
        return

    splits = text.split(separator) if separator else list(text)
    good: list[str] = []
    for split in splits:
        if not split:
            continue
        if len(split) < chunk_size:
            good.append(split)
            continue
        if good:
            _merge_into(good, separator, chunk_size, out)
            good = []
        if remaining is None:
            out.append(split)
        else:
            _split_into(split, chunk_size, remaining, out)
    if good:
        _merge_into(good, separator, chunk_size, out)


def _merge_into(splits: list[str], separator: str, chunk_size: int, out: list[str]) -> None:
    """Greedily join splits with the separator up to chunk_size (JS `mergeSplits`, overlap 0).

    The size test counts one separator per piece already held, i.e. the exact length of
    the joined text after adding the next piece. With overlap 0 the JS pop loop always
    empties the current group, so a group is simply restarted.
    """
    sep_len = len(separator)
    current: list[str] = []
    total = 0
    for split in splits:
        length = len(split)
        if current and total + length + len(current) * sep_len > chunk_size:
            doc = separator.join(current).strip(_SPLITTER_SPACES)
            if doc:
                out.append(doc)
            current = []
            total = 0
        current.append(split)
        total += length
    doc = separator.join(current).strip(_SPLITTER_SPACES)
    if doc:
        out.append(doc)


def chunk_note(
    note_path: str,
    text: str,
    headings: Sequence[Heading],
    body_start: int,
    max_chars: int = CHUNK_SIZE,
) -> list[Chunk]:
    r"""Cut one note into chunks the way the original `generateChunksForNote` does.

    A note that fits is one chunk (splitting it by headings would only scatter its terms
    over tiny blocks). A larger note is split at every heading, so each chunk is labelled
    with the section it comes from; a section still too large is cut by `split_text`, and
    heading-only leftovers of that cut are merged into a neighbour.

    The original trims the whole note before applying heading offsets taken from the
    untrimmed file. Here the offsets are exact, so only what cannot shift them is removed:
    trailing whitespace of the note and leading whitespace of the body (i.e. of section 0).
    Notes without frontmatter therefore chunk exactly as in the original; after
    frontmatter, blank lines before the first text are dropped, which the original keeps,
    so the result does not depend on whether `body_start` includes the fence's newline.

    Args:
        note_path: vault-relative posix path; the title is its basename without `.md`.
        text: the full note text with `\n` line endings.
        headings: all headings of the note with offsets into `text`, none inside the
            frontmatter.
        body_start: offset just past the frontmatter, 0 without frontmatter.
        max_chars: size limit including the header. Whole-note and whole-section chunks
            and coalesced chunks respect it; pieces cut by `split_text` may exceed it by up
            to the header length, as in the original.

    Returns:
        Chunks with indices 0..n-1 in text order; `[]` when the body is blank.
    """
    end = len(text.rstrip(_JS_WHITESPACE))
    content = text[body_start:end].lstrip(_JS_WHITESPACE)
    if not content:
        return []
    content_start = end - len(content)
    title = note_path.rsplit("/", 1)[-1].removesuffix(".md")
    header = chunk_header(title)

    if len(header) + len(content) <= max_chars:
        sections = [(content, min(headings, key=_by_start).text if headings else "")]
    elif not headings:
        sections = [(content, "")]
    else:
        ordered = sorted(headings, key=_by_start)
        starts = [content_start, *(heading.start for heading in ordered[1:])]
        stops = [*starts[1:], end]
        sections = [
            (text[start:stop], heading.text)
            for start, stop, heading in zip(starts, stops, ordered, strict=True)
        ]

    chunks: list[Chunk] = []
    for section, heading in sections:
        for body in _section_bodies(section, len(header), max_chars):
            index = len(chunks)
            chunks.append(
                Chunk(
                    id=f"{note_path}#{index}",
                    note_path=note_path,
                    chunk_index=index,
                    content=header + body,
                    heading=heading,
                    title=title,
                )
            )
    return chunks


def _section_bodies(section: str, header_len: int, max_chars: int) -> list[str]:
    """Cut one section into chunk bodies (JS `processContentSection`).

    Coalescing runs only on the pieces of one cut section, as in the original: whole
    sections stay separate chunks even when a section is just its heading line.
    """
    if header_len + len(section) <= max_chars:
        return [section]
    return _coalesce(split_text(section, max_chars), max_chars - header_len)


def _coalesce(bodies: list[str], budget: int) -> list[str]:
    """Merge heading-only or blank pieces into a neighbour when the result fits the budget.

    The splitter often leaves a section's heading alone in a piece (the paragraph after it
    was too long to join). Such a chunk has no content to match, and the paragraph chunk
    loses its heading line, so the heading is pushed forward into the next piece, or,
    for a trailing one, back into the previous piece. This streaming loop is the original's
    splice loop: a merged chunk is re-checked against the following piece.

    Args:
        bodies: the pieces of one section, without the header.
        budget: max_chars minus the header length.

    Returns:
        The pieces after coalescing.
    """
    if len(bodies) <= 1:
        return bodies
    merged: list[str] = []
    current = bodies[0]
    for following in bodies[1:]:
        if _is_tiny_structural(current):
            candidate = _join_bodies(current, following)
            if len(candidate) <= budget:
                current = candidate
                continue
        merged.append(current)
        current = following
    merged.append(current)
    if len(merged) > 1 and _is_tiny_structural(merged[-1]):
        candidate = _join_bodies(merged[-2], merged[-1])
        if len(candidate) <= budget:
            merged[-2:] = [candidate]
    return merged


def _is_tiny_structural(body: str) -> bool:
    """Tell whether a piece is blank or exactly one heading line.

    A trimmed body containing a line break has at least two non-empty lines (its first
    and last characters are not whitespace), so the line count never needs to be built.
    """
    stripped = body.strip(_JS_WHITESPACE)
    if not stripped:
        return True
    return "\n" not in stripped and _HEADING_LINE.match(stripped) is not None


def _join_bodies(primary: str, secondary: str) -> str:
    """Join two pieces with one blank line, as the original's `mergeChunkContents`."""
    left = primary.rstrip(_JS_WHITESPACE)
    right = secondary.lstrip(_JS_WHITESPACE)
    return f"{left}\n\n{right}" if left and right else left + right


def note_path_from_chunk_id(chunk_id: str) -> str:
    """Recover the note path from a chunk id.

    The split is on the LAST `#` because file names may contain `#` (`C#.md#0`); the
    original's `split("#")[0]` breaks on them. A suffix that is not a number means the id
    is a plain note path (legacy ids, or a name like `C#.md`), returned unchanged.

    Args:
        chunk_id: `"<path>#<index>"` or a plain note path.

    Returns:
        The text before the last `#` when the suffix is all ASCII digits, else `chunk_id`.
    """
    hash_at = chunk_id.rfind("#")
    if hash_at < 0 or not _is_index(chunk_id[hash_at + 1 :]):
        return chunk_id
    return chunk_id[:hash_at]


def chunk_index_from_chunk_id(chunk_id: str) -> int | None:
    """Read the chunk index from a chunk id, or None for plain or malformed ids.

    Args:
        chunk_id: `"<path>#<index>"` or anything else.

    Returns:
        The integer after the last `#`, or None when there is no `#` or the suffix is not
        all ASCII digits.
    """
    hash_at = chunk_id.rfind("#")
    if hash_at < 0:
        return None
    suffix = chunk_id[hash_at + 1 :]
    return int(suffix) if _is_index(suffix) else None


def _is_index(suffix: str) -> bool:
    """ASCII digits only: `str.isdigit` alone accepts `²` or Arabic-Indic digits."""
    return suffix.isascii() and suffix.isdigit()
