"""Notes as the lexical engine's documents: the one place the engine meets the vault's records.

`RecallIndex` indexes `RecallDocument`s and knows nothing of notes; a vault's notes become
documents here (their text, and what they are about: path, aliases, tags, frontmatter
title), so another source of documents plugs into the same engine with an adapter of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

from langchain_vaultsearch.search.recall import RecallDocument, RecallIndex
from langchain_vaultsearch.vault.note_info import NoteInfo, VaultChanges
from langchain_vaultsearch.vault.vault import Vault


def note_document(info: NoteInfo, text: str) -> RecallDocument:
    """A note as recall indexes it."""
    return RecallDocument(info.path, text, note_about_text(info), info.searchable)


def note_about_text(info: NoteInfo) -> str:
    """Title, folders, aliases, tags and frontmatter title: where a hit means "about"."""
    parts = [info.path[:-3].replace("/", " "), *info.parsed.aliases, *info.parsed.tags]
    title = info.parsed.frontmatter.get("title")
    if isinstance(title, str):
        parts.append(title)
    return " ".join(parts)


def apply_changes(index: RecallIndex, changes: VaultChanges) -> None:
    """Bring a recall index in line with one refresh's change set."""
    index.apply([note_document(info, text) for info, text in changes.updated], changes.removed)


def vault_documents(vault: Vault) -> Iterator[RecallDocument]:
    """Every recorded note as a document, its text read one note at a time."""
    for info in list(vault.notes.values()):
        text = vault.reader.read_text(info.path)
        if text is not None:
            yield note_document(info, text)
