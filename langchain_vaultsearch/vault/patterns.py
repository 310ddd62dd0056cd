"""Inclusion and exclusion rules, in the original's grammar.

Users already write these rules in Obsidian Copilot's settings, so the same strings work
here: a folder (`Archive/2023`), an extension (`*.excalidraw.md`), a tag (`#private`), a
note (`[[Scratchpad]]`) or a property (`[status:draft]`, `[secret:]` for "key exists").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote

PatternKind = Literal["tag", "extension", "note", "property", "folder"]

_TAG = re.compile(r"^#[^\s#]+$")
_EXTENSION = re.compile(r"^\*\.[^\s/]+$")
_NOTE = re.compile(r"^\[\[(.+)\]\]$")
_PROPERTY = re.compile(r"^\[([^\[\]:]+):([^\[\]]*)\]$")


@dataclass(frozen=True)
class PathPattern:
    """One parsed rule.

    Attributes:
        kind: what the rule matches on.
        value: the folder, extension (without `*.`), lowercase tag (with `#`), note
            basename or property key.
        property_value: for `[key:value]` rules, the value ("" means "key exists").
    """

    kind: PatternKind
    value: str
    property_value: str = ""


def parse_patterns(spec: str | Sequence[str] | None) -> tuple[PathPattern, ...]:
    """Parse rules from a comma-separated, URI-encoded string or a list of strings.

    Args:
        spec: `"Archive,#private,[[Scratch]]"`, or the same entries as a list. URI
            escapes (`%20`, `%2C`) are decoded so an entry may contain a comma; an entry
            that does not decode is kept as typed.

    Returns:
        The parsed rules, empty entries dropped.
    """
    if spec is None:
        return ()
    entries: Iterable[str] = spec.split(",") if isinstance(spec, str) else spec
    patterns: list[PathPattern] = []
    for raw in entries:
        entry = _decode(raw.strip()).strip()
        if entry:
            patterns.append(_classify(entry))
    return tuple(patterns)


def _decode(entry: str) -> str:
    try:
        return unquote(entry, errors="strict")
    except UnicodeDecodeError:
        return entry


def _classify(entry: str) -> PathPattern:
    if _TAG.match(entry):
        return PathPattern("tag", entry.lower())
    if _EXTENSION.match(entry):
        return PathPattern("extension", entry[2:].lower())
    note = _NOTE.match(entry)
    if note:
        return PathPattern("note", note.group(1).strip())
    prop = _PROPERTY.match(entry)
    if prop and prop.group(1).strip():
        return PathPattern("property", prop.group(1).strip(), prop.group(2).strip())
    return PathPattern("folder", entry.replace("\\", "/").strip("/"))


def matches(
    pattern: PathPattern,
    path: str,
    tags: Iterable[str],
    frontmatter: Mapping[str, Any],
) -> bool:
    """Tell whether a note matches one rule.

    Args:
        pattern: the rule.
        path: vault-relative posix path of the note.
        tags: the note's tags, `#`-prefixed (inline and frontmatter: a user who tags a
            note `#private` in its body expects the exclusion to apply too).
        frontmatter: the note's frontmatter mapping.

    Returns:
        True when the note matches.
    """
    if pattern.kind == "folder":
        return pattern.value in ("", path) or path.startswith(pattern.value + "/")
    if pattern.kind == "extension":
        return path.lower().endswith("." + pattern.value)
    if pattern.kind == "tag":
        wanted = pattern.value
        return any(tag.lower() == wanted or tag.lower().startswith(wanted + "/") for tag in tags)
    if pattern.kind == "note":
        stem = path.rsplit("/", 1)[-1]
        stem = stem[:-3] if stem.lower().endswith(".md") else stem
        return stem == pattern.value
    if pattern.value not in frontmatter:
        return False
    if not pattern.property_value:
        return True
    value = frontmatter[pattern.value]
    values = value if isinstance(value, list) else [value]
    wanted_value = pattern.property_value.lower()
    return any(str(item).strip().lower() == wanted_value for item in values)


def is_allowed(
    inclusions: Sequence[PathPattern],
    exclusions: Sequence[PathPattern],
    path: str,
    tags: Iterable[str],
    frontmatter: Mapping[str, Any],
) -> bool:
    """Apply the rules: exclusions win over inclusions; no inclusions means all notes.

    Args:
        inclusions: rules a note must match one of (when any are given).
        exclusions: rules a note must match none of.
        path: vault-relative posix path.
        tags: the note's tags.
        frontmatter: the note's frontmatter.

    Returns:
        True when the note may be searched.
    """
    tag_list = list(tags)
    if any(matches(rule, path, tag_list, frontmatter) for rule in exclusions):
        return False
    return not inclusions or any(matches(rule, path, tag_list, frontmatter) for rule in inclusions)
