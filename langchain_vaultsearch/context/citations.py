"""Citation hygiene: numbers in notes must not pass for the model's own citations.

The model is asked to cite with footnote markers `[^1]`, `[^2]`, ... . A note that
already carries `[^3]` footnotes or `[2, 3]` reference numbers would tempt it to copy
those, citing sources that are not the ones it was given. So those markers are removed
from note text before it enters the context, and the guidance block tells the model how
to cite.

Two quirks of the original are not kept: its footnote-definition rule ran after the
reference rule, so `[^1]: Source` left a stray `: Source` line behind (here the whole
definition goes), and its `[n]` rule ate wikilinks like `[[12]]`, code like `arr[0]` or
`x = [1, 2]` and years like `[2024]` (here wikilinks, links, indexing, values and code are
left alone).
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from langchain_vaultsearch.text.tokenize import contains_cjk

# A footnote definition and its indented continuation lines, with their line breaks.
_FOOTNOTE_DEFINITION = re.compile(
    r"^[ \t]{0,3}\[\^\d+\]:.*(?:\r?\n(?:[ ]{4}|\t).*)*(?:\r?\n|\Z)", re.MULTILINE
)
# `claim [^2]`: the marker and the spaces before it (a match starts at a run's first
# space: tried at each space of a long run, the search was quadratic).
_FOOTNOTE_REFERENCE = re.compile(r"(?<![ \t])[ \t]*\[\^\d+\]")
# `[1]`, `[2, 3]`, `[1][2]`, `[2],[3]`, `[1]\u2013[3]` (en dash): up to three digits each
# (`[2024]` is a year), the spaces before them included. No assertion ends it, so a long
# chain is not tried again shorter and shorter; `_cites` reads what stands around it.
_MARKER = r"\[\d{1,3}(?:[ \t]*,[ \t]*\d{1,3})*\]"
_NUMERIC_CITATION = re.compile(
    rf"(?<![ \t])[ \t]*{_MARKER}(?:[ \t]*[,\uff0c\u3001\u2013-]?[ \t]*{_MARKER})*"
)
# A reference list's `[1] Smith, J.`, `- [2] Doe` or `[3]谢伯让.大脑简史`: the marker opens
# a line of text (kept: its indent and bullet). A line that is only `[1, 2]` is data.
_LISTED_REFERENCE = re.compile(
    r"^(?P<lead>[ \t]*(?:[-*+][ \t]+)?)\[(?P<number>\d{1,3})\][ \t]*(?=[^\s:(\[\]])",
    re.MULTILINE,
)
# Right after a marker, what makes it something else: `[3](url)` and `[5][ref]` (links),
# `[6]: url` (a reference link), `[[1], [2]]` and `{"a": [1]}` (data), `[4]int` (a type).
_NOT_AFTER_A_CITATION = frozenset("([:]}") | frozenset(string.ascii_letters + string.digits + "_")
# Right before a marker: what a citation follows (`claim.[2]`, `"quote"[3]`, `<sup>[4]`,
# `首都。[1]`). A CJK character too when punctuation or a space follows (`力量[1]。`), not
# a word (`第[1]章`). A Latin word or a `)` right before it is indexing (`arr[0]`,
# `f(x)[1]`).
_CITED_TOUCHING = frozenset(".;!?\"'\u2019\u201d*_>。，、；：！？）」』】》〉")
# Before a marker and a space: what a citation follows (`shows [1]`, `(Smith) [2]`,
# `[1] [2]`); after `=`, `(`, `,` or `:` it is a value (`x = [1, 2]`, `print([1])`,
# `{"a": [1]}`).
_CITED_SPACED = _CITED_TOUCHING | frozenset(")]")
# Fenced code blocks (an unclosed fence runs to the end), inline code spans and math
# (`$x \in [0, 1]$`, `$$...$$`; as in Obsidian, inline math opens on a non-space and closes
# after one, not before a digit, so `$5 [1] and $10` is prices).
_CODE = re.compile(
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]{0,3}(?P=fence)[`~]*[ \t]*$|\Z)"
    r"|(?P<ticks>`+)(?:(?!(?P=ticks))[^\n])+?(?P=ticks)"
    r"|\$\$.+?\$\$|\$(?=[^\s$])[^$\n]*?(?<=\S)\$(?!\d)",
    re.MULTILINE | re.DOTALL,
)
_NUMBER = re.compile(r"\d+")


def sanitize_for_citations(text: str | None) -> str:
    """Remove footnotes and bracketed reference numbers from note text, outside code.

    Args:
        text: note or chunk text; `None` gives `""`.

    Returns:
        The text without footnote definitions (whole lines), footnote references and
        free-standing `[n]` / `[n, m]` reference numbers. Code is returned as written.
    """
    if not text:
        return ""
    pieces = []
    start = 0
    for code in _CODE.finditer(text):
        pieces.append(_sanitize_prose(text[start : code.start()], _line_starts(text, start)))
        pieces.append(code.group(0))
        start = code.end()
    pieces.append(_sanitize_prose(text[start:], _line_starts(text, start)))
    return "".join(pieces)


def _line_starts(text: str, at: int) -> bool:
    return at == 0 or text[at - 1] == "\n"


def _sanitize_prose(text: str, at_line_start: bool) -> str:
    """Note text between code spans; `at_line_start`: whether it begins a line."""
    text = _FOOTNOTE_DEFINITION.sub("", text)

    def unlisted(match: re.Match[str]) -> str:
        mid_line = match.start() == 0 and not at_line_start  # after inline code
        if mid_line or int(match.group("number")) == 0:
            return match.group(0)
        return match.group("lead")

    text = _LISTED_REFERENCE.sub(unlisted, _FOOTNOTE_REFERENCE.sub("", text))

    def drop(match: re.Match[str]) -> str:
        return "" if _cites(text, match) else match.group(0)

    return _NUMERIC_CITATION.sub(drop, text)


def _cites(text: str, match: re.Match[str]) -> bool:
    """Whether bracketed numbers are reference markers, from what stands around them.

    Markers count from 1: `[0, 1]` is a range.
    """
    if any(int(number) == 0 for number in _NUMBER.findall(match.group(0))):
        return False
    after = text[match.end()] if match.end() < len(text) else "\n"
    if after in _NOT_AFTER_A_CITATION:
        return False
    before = text[match.start() - 1] if match.start() > 0 else "\n"
    if match.group(0)[0] == "[":
        return before in _CITED_TOUCHING or (contains_cjk(before) and not after.isalnum())
    return before.isalnum() or before in _CITED_SPACED


_CITATION_RULES = "\n".join(
    (
        "CITATION RULES:",
        "1. Cite with footnote markers: the first source you cite is [^1], the next new one"
        " [^2], and so on, with no gaps.",
        "2. Cite only facts, figures and quotes taken from the documents, and sparingly: one"
        " to three markers per paragraph.",
        "3. Do not cite general knowledge, your own reasoning, transitions or conclusions.",
        '4. Put the marker right after the claim it supports: "the app deploys to Vercel'
        ' [^1]", not after the sentence.',
        "5. Bracketed numbers inside the documents are not citations; never reuse them.",
        "6. Two documents from the same note may be cited with separate markers.",
        '7. End with a "#### Sources" section: one line per marker, "[^n]: [[Title]]", in'
        " marker order.",
    )
)

_IMAGES = (
    "IMAGES:\nIf a document holds an image that belongs in the answer (![alt](file.png) or"
    " ![[file.png]]), include it using exactly the markdown it has in the document."
)


def citation_guidance(*, inline_citations: bool = True) -> str:
    """How to cite and how to carry images over, as plain text.

    Args:
        inline_citations: include the citation rules; without them the model answers
            without footnote markers.
    """
    return f"{_CITATION_RULES}\n\n{_IMAGES}" if inline_citations else _IMAGES


def source_catalog(sources: Sequence[tuple[str, str]]) -> str:
    """`- [[Title]] (path)` lines: how the model should name each source it cites.

    Args:
        sources: (title, path) pairs; an empty path leaves the parentheses out.
    """
    lines = [f"- [[{title}]] ({path})" if path else f"- [[{title}]]" for title, path in sources]
    return "Source catalog (for reference only):\n" + "\n".join(lines)
