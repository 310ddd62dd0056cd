"""Note records as JSON, so a saved index can stand in for reading every note again.

A restarted process that finds a saved index adopts these records instead of reading
and parsing 6,000 notes (see `search/index_cache.py`). JSON, not pickle: the file lives
in the vault folder, which users sync and share, and loading it must never run code.
Frontmatter round-trips exactly or not at all: dates become tagged strings, and a note
whose frontmatter holds anything else JSON cannot carry (binary, sets, non-string keys)
gets no record, so it is simply read again.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from langchain_vaultsearch.vault.markdown import Heading, Link, ParsedNote

Stamp = tuple[int, int, int]
"""`(mtime_ns, size, ctime_ns)` of a note file: any change to any of them means re-read.

The inode change time is there for edits that keep size and mtime (an editor or a sync
tool restoring the mtime after writing): the kernel sets it on every write, and no
user-level call can set it back."""

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_DATE = "\x00date"
_DATETIME = "\x00datetime"


class NotPortableError(ValueError):
    """The note's frontmatter holds a value JSON cannot carry exactly."""


def file_stamp(stat: os.stat_result) -> Stamp:
    """A file's stamp, its times clamped to what int64 nanoseconds hold (1677 to 2262).

    Saved indexes keep stamps in int64 arrays (`saved_notes.pack`) while file systems
    hold later times (`touch -d 2300-01-01`): one such note made every save of a large
    vault's index fail with `OverflowError`. Two clamped times compare equal, but any
    write moves the inode change time to now, so an edit is still seen.
    """
    mtime_ns, ctime_ns = (
        min(max(t, _INT64_MIN), _INT64_MAX) for t in (stat.st_mtime_ns, stat.st_ctime_ns)
    )
    return mtime_ns, stat.st_size, ctime_ns


def note_record(
    path: str, stamp: Stamp, mtime_ms: float, ctime_ms: float, parsed: ParsedNote
) -> dict[str, Any]:
    """A JSON-ready record of one note.

    Args:
        path: vault-relative path.
        stamp: `(mtime_ns, size, ctime_ns)` of the file the record was made from.
        mtime_ms: modification time, epoch milliseconds.
        ctime_ms: creation time, epoch milliseconds.
        parsed: what the note's text parsed to.

    Returns:
        Plain dicts, lists, strings and numbers.

    Raises:
        NotPortableError: when the frontmatter cannot round-trip through JSON.
    """
    return {
        "path": path,
        "stamp": list(stamp),
        "mtime_ms": mtime_ms,
        "ctime_ms": ctime_ms,
        "frontmatter": _encode(parsed.frontmatter),
        "frontmatter_error": parsed.frontmatter_error,
        "body_start": parsed.body_start,
        "tags": list(parsed.tags),
        "aliases": list(parsed.aliases),
        "links": [[link.target, link.heading, link.alias, link.embed] for link in parsed.links],
        "headings": [[h.level, h.text, h.start] for h in parsed.headings],
        "property_values": list(parsed.property_values),
    }


def parse_record(record: dict[str, Any]) -> tuple[str, Stamp, float, float, ParsedNote]:
    """Read a record back.

    Args:
        record: what `note_record` produced, loaded from JSON.

    Returns:
        `(path, stamp, mtime_ms, ctime_ms, parsed)`.

    Raises:
        ValueError: when the record is malformed (a damaged or foreign file).
    """
    try:
        mtime_ns, size, ctime_ns = record["stamp"]
        frontmatter = _decode(record["frontmatter"])
        if not isinstance(frontmatter, dict):
            msg = "frontmatter is not a mapping"
            raise TypeError(msg)
        parsed = ParsedNote(
            frontmatter=frontmatter,
            frontmatter_error=record["frontmatter_error"],
            body_start=int(record["body_start"]),
            tags=tuple(map(str, record["tags"])),
            aliases=tuple(map(str, record["aliases"])),
            links=tuple(
                Link(str(target), heading, alias, bool(embed))
                for target, heading, alias, embed in record["links"]
            ),
            headings=tuple(
                Heading(int(level), str(text), int(start))
                for level, text, start in record["headings"]
            ),
            property_values=tuple(map(str, record["property_values"])),
        )
        return (
            str(record["path"]),
            (int(mtime_ns), int(size), int(ctime_ns)),
            float(record["mtime_ms"]),
            float(record["ctime_ms"]),
            parsed,
        )
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"malformed note record: {exc!r}"
        raise ValueError(msg) from exc


def _encode(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dt.datetime):
        return {_DATETIME: value.isoformat()}
    if isinstance(value, dt.date):
        return {_DATE: value.isoformat()}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _encode(item) for key, item in value.items()}
    msg = f"{type(value).__name__} does not round-trip through JSON"
    raise NotPortableError(msg)


def _decode(value: object) -> object:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if isinstance(value, dict):
        if len(value) == 1 and _DATETIME in value:
            return dt.datetime.fromisoformat(value[_DATETIME])
        if len(value) == 1 and _DATE in value:
            return dt.date.fromisoformat(value[_DATE])
        return {key: _decode(item) for key, item in value.items()}
    return value
