"""Note text made safe to place inside the XML context.

Notes are written by people (and pasted from anywhere), so their text can contain
anything: `</content></document>`, `]]>`, NUL bytes, lone surrogates from undecodable
files. Inside the context that text must stay text: a note must not be able to close an
element or forge a `<document>` the model would take for another source, and a parser
must accept the whole context. Escaping (not CDATA) is used because CDATA cannot hold
`]]>` without splitting it, and because escaped text is what every XML tool expects.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import escape

# Everything XML 1.0 forbids in a document: C0 controls except tab, LF and CR, lone
# surrogates, U+FFFE and U+FFFF. Python strings can hold all of them.
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_WHITESPACE_RUN = re.compile(r"\s+")


def xml_safe_chars(text: str) -> str:
    """Drop the characters XML 1.0 cannot carry at all, even escaped."""
    return _NOT_XML_CHAR.sub("", text)


def xml_text(text: str) -> str:
    """Text for an element's content: forbidden characters dropped, `& < >` escaped."""
    return escape(xml_safe_chars(text))


def xml_attribute(text: str) -> str:
    """A double-quoted attribute value, on one line.

    Parsers turn newlines and tabs in attribute values into spaces anyway; doing it here
    keeps what the model reads identical to what a parser reports.
    """
    flat = _WHITESPACE_RUN.sub(" ", xml_safe_chars(text)).strip()
    return '"' + escape(flat, {'"': "&quot;"}) + '"'


def cut_escaped(escaped: str, limit: int) -> str:
    """The longest prefix of escaped text of at most `limit` characters.

    A cut never lands inside an entity: `a &amp; b` cut after `&am` keeps `a `, because
    a dangling `&am` would make the whole context unparseable.

    Args:
        escaped: text already passed through `xml_text`.
        limit: the most characters to keep (0 keeps nothing).
    """
    if len(escaped) <= limit:
        return escaped
    cut = escaped[: max(limit, 0)]
    amp = cut.rfind("&")
    if amp != -1 and cut.find(";", amp) == -1:
        cut = cut[:amp]
    return cut
