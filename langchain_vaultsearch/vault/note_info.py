"""NoteInfo and VaultChanges: what the vault knows about a note, and what one refresh found.

Every index, the filter and the link graph work on these records, never on files; they
live apart from `Vault` (which walks, watches and reads) so that those readers depend on
the records only.
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_vaultsearch.vault.markdown import ParsedNote


@dataclass(frozen=True)
class NoteInfo:
    """What is known about one note without keeping its text.

    Attributes:
        path: vault-relative posix path, e.g. `Projects/Alpha.md`.
        title: the file name without `.md` (what `[[links]]` and citations use).
        mtime_ms: modification time, epoch milliseconds.
        ctime_ms: creation time where the OS records it, else inode change time.
        size: size in bytes.
        parsed: frontmatter, tags, aliases, links and headings.
        searchable: False when the user's inclusion/exclusion rules leave it out.
        changed_ns: the file's inode change time, nanoseconds: with mtime and size, what
            tells an edit that restored the mtime (see `note_records.Stamp`).
    """

    path: str
    title: str
    mtime_ms: float
    ctime_ms: float
    size: int
    parsed: ParsedNote
    searchable: bool
    changed_ns: int = 0

    @property
    def content_stamp(self) -> tuple[float, int, int]:
        """`(mtime_ms, size, changed_ns)`: what tells whether the file is the one read."""
        return self.mtime_ms, self.size, self.changed_ns

    @property
    def folder(self) -> str:
        """The note's folder, `""` for the vault root."""
        return folder_of(self.path)


@dataclass(frozen=True)
class VaultChanges:
    """What one refresh found.

    Attributes:
        updated: notes added or changed, with their text, so indexes can update without
            reading the file again.
        removed: paths of notes that are gone (deleted, renamed away, or now too large).
    """

    updated: tuple[tuple[NoteInfo, str], ...] = ()
    removed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.updated or self.removed)


def note_title(path: str) -> str:
    """A note's title: its file name without `.md` (what `[[links]]` and citations use)."""
    return path.rsplit("/", 1)[-1][:-3]


def folder_of(path: str) -> str:
    """The folder of a vault-relative path, `""` for the vault root."""
    return path.rsplit("/", 1)[0] if "/" in path else ""
