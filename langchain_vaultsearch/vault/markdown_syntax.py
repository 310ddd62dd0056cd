r"""Markdown syntax every module reads the same way: tags and `[[wikilinks]]`.

Lexical search, the tag filter, note parsing, query parsing and time parsing all need to
know what a tag and a wikilink are. When each had its own pattern they disagreed (`\#escaped`
and `path/#x` were tags to the tokenizer but not to the note parser, so a tag query matched
notes the tag filter said were untagged); one definition here keeps them in step.
"""

from __future__ import annotations

import re
import unicodedata


# `\w` does not match combining marks (category M*): without them "हिन्दी" would split
# after each consonant and Arabic words with vowel marks would fall apart.
def _mark_ranges() -> str:
    """Combining marks as regex ranges: compact, so matching stays fast."""
    ranges: list[str] = []
    start = previous = -2
    for code in range(0x0300, 0xFE30):
        if not unicodedata.category(chr(code)).startswith("M"):
            continue
        if code != previous + 1:
            if start >= 0:
                ranges.append(f"{chr(start)}-{chr(previous)}")
            start = code
        previous = code
    ranges.append(f"{chr(start)}-{chr(previous)}")
    return "".join(ranges)


COMBINING_MARKS = _mark_ranges()

WORD_CHARS = rf"\w{COMBINING_MARKS}"
"""Regex class body of word characters: `\\w` plus combining marks (`हिन्दी`, NFD `café`)."""

TAG_PATTERN: re.Pattern[str] = re.compile(
    rf"#(?<![{WORD_CHARS}#&/\\]#)(?![\d/\-]*(?![{WORD_CHARS}/\-]))[{WORD_CHARS}/\-]+"
)
r"""An Obsidian tag: `#` plus letters, digits, `_`, `-` or `/`, not glued to a word.

The look-behind keeps `C#`, `issue#123`, `page#anchor`, `&#39;`, `\#escaped`, `path/#x` and
the second `#` of `##x` from counting; the look-ahead rejects names made only of digits,
`/` and `-` (`#123` is an issue number, `#1990s` is a tag). The look-behind sits after the
`#` so that the regex engine can jump from one `#` to the next instead of trying every
position. A trailing `/` is part of the match; callers strip it.
"""

WIKILINK_PATTERN: re.Pattern[str] = re.compile(r"!?\[\[([^\[\]]+)\]\]")
"""`[[Note#Heading|alias]]` or its `![[embed]]`; group 1 is the text between the brackets."""


def wikilink_target(inner: str) -> str:
    """The note a wikilink names: its text without `#heading`, `^block` or `|alias`."""
    return inner.split("|", 1)[0].split("#", 1)[0].strip()
