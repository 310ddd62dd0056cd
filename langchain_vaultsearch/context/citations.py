"""Citation hygiene: numbers in notes must not pass for the model's own citations.

The model is asked to cite with footnote markers `[^1]`, `[^2]`, ... . A note that
already carries `[^3]` footnotes or `[2, 3]` reference numbers would tempt it to copy
those, citing sources that are not the ones it was given. So those markers are removed
from note text before it enters the context, and the guidance block tells the model how
to cite.

Two quirks of the original are not kept: its footnote-definition rule ran after the
reference rule, so `[^1]: Source` left a stray `: Source` line behind (here the whole
definition goes), and its `[n]` rule ate wikilinks like `[[12]]` and code like `arr[0]`
(here wikilinks, links, indexing and code are left alone).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# A footnote definition and its indented continuation lines, with their line breaks.
_FOOTNOTE_DEFINITION = re.compile(
    r"^[ \t]{0,3}\[\^\d+\]:.*(?:\r?\n(?:[ ]{4}|\t).*)*(?:\r?\n|\Z)", re.MULTILINE
)
# `claim [^2]`: the marker and the space before it.
_FOOTNOTE_REFERENCE = re.compile(r"[ \t]*\[\^\d+\]")
# `[1]`, `[2, 3]` standing alone. Not `[[12]]` (wikilink), `arr[0]` or `f(x)[1]`
# (indexing), `![3](img.png)` or `[4](url)` (links), `[5][ref]` or `[6]: url` (reference
# links).
_NUMERIC_CITATION = re.compile(r"[ \t]*(?<![\w\[\])!])\[\d+(?:[ \t]*,[ \t]*\d+)*\](?![(\[:])")
# Fenced code blocks (an unclosed fence runs to the end) and inline code spans.
_CODE = re.compile(
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]{0,3}(?P=fence)[`~]*[ \t]*$|\Z)"
    r"|(?P<ticks>`+)(?:(?!(?P=ticks))[^\n])+?(?P=ticks)",
    re.MULTILINE | re.DOTALL,
)


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
        pieces.append(_sanitize_prose(text[start : code.start()]))
        pieces.append(code.group(0))
        start = code.end()
    pieces.append(_sanitize_prose(text[start:]))
    return "".join(pieces)


def _sanitize_prose(text: str) -> str:
    text = _FOOTNOTE_DEFINITION.sub("", text)
    text = _FOOTNOTE_REFERENCE.sub("", text)
    return _NUMERIC_CITATION.sub("", text)


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
