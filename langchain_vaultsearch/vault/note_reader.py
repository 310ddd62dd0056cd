"""NoteReader: a vault's note files read, decoded and parsed, never a file outside it.

Apart from `Vault` because reading a note needs none of the records: the same reads serve
a refresh, a search made before the first index (`peek`), an index build's workers
(`read_listed`) and the chunker (`read_recorded`), and each must refuse a path that
leaves the vault and decode the bytes a Windows editor or a bad sync wrote in one way.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

from langchain_vaultsearch.vault.markdown import ParsedNote, parse_note
from langchain_vaultsearch.vault.note_info import NoteInfo, note_title
from langchain_vaultsearch.vault.note_records import Stamp, file_stamp
from langchain_vaultsearch.vault.patterns import PathPattern, is_allowed

# The name `Vault` logged under before the split (as `folder_walk`): logging settings
# and filters written for it still apply.
logger = logging.getLogger("langchain_vaultsearch.vault.vault")

MAX_NOTE_BYTES = 10 * 1024 * 1024
# A Windows drive (`C:`) as a path's first part: absolute, so refused. A colon elsewhere
# in a name (`Re: budget.md`, `Meetings: 2024/`) is an ordinary file name on POSIX.
_DRIVE = re.compile(r"[A-Za-z]:")


def text_digest(text: str) -> bytes:
    """A digest of a note's text: tells a file whose attributes changed from an edit."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def decode_note(data: bytes) -> str:
    r"""Decode note bytes so a bad byte or a Windows editor never hides a note.

    Args:
        data: raw file content.

    Returns:
        The text with invalid bytes replaced, the BOM dropped and line endings `\\n`.
        UTF-8 unless a UTF-16 byte order mark says otherwise (Windows tools write those).
    """
    encoding = "utf-16" if data.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8"
    text = data.decode(encoding, errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def relative_parts(path: str) -> tuple[str, ...] | None:
    """The parts of a vault-relative path, None when it is absolute or climbs out.

    String operations only (the parts `PurePosixPath` gives: empty and `.` parts
    dropped): adopting a saved index checks every note's path with it.
    """
    if not path or path.startswith(("/", "\\")) or "\x00" in path:
        return None
    parts = tuple(part for part in path.replace("\\", "/").split("/") if part not in ("", "."))
    if any(part == ".." for part in parts) or (parts and _DRIVE.fullmatch(parts[0])):
        return None
    return parts


class NoteReader:
    """Reads a vault's notes: refuses paths that leave it, skips notes over the size limit.

    Also decides whether a note is searchable (the vault's inclusions and exclusions), as
    that is part of the record a read makes.
    """

    def __init__(
        self,
        root: Path,
        inside_root: Callable[[str], bool],
        *,
        inclusions: tuple[PathPattern, ...],
        exclusions: tuple[PathPattern, ...],
        max_note_bytes: int,
    ) -> None:
        """Read the notes under `root`.

        Args:
            root: the vault folder, resolved.
            inside_root: whether a real path is inside the vault (`FolderWalk.inside_root`,
                which also knows the folders the walk reached through symlinks).
            inclusions: rules a note must match one of to be searchable.
            exclusions: rules that make a note unsearchable.
            max_note_bytes: notes larger than this are skipped with a warning.
        """
        self.root = root
        self.inclusions = inclusions
        self.exclusions = exclusions
        self.max_note_bytes = max_note_bytes
        self._inside_root = inside_root
        self._oversized: set[tuple[str, int]] = set()

    def peek(self, path: str) -> NoteInfo | None:
        """Parse one note from disk without adding it to the records `refresh` keeps.

        Args:
            path: vault-relative posix path.

        Returns:
            The note's record, or None when the path is unsafe, missing, unreadable or
            over the size limit.
        """
        read = self.read_note(path)
        return None if read is None else read[0]

    def read_note(self, path: str) -> tuple[NoteInfo, str, Stamp] | None:
        """`peek`, with the note's text and the stamp of the file it was read from."""
        abs_path = self.safe_path(path)
        return None if abs_path is None else self.read_listed(path, str(abs_path))

    def read_listed(self, path: str, abs_path: str) -> tuple[NoteInfo, str, Stamp] | None:
        """`read_note` for a note as `Vault.list_files` gave it, its path not resolved again.

        The listing's walk already kept out what leads outside the vault; resolving each
        path again (`safe_path`, a `realpath` per note) was a tenth of an index build.

        Args:
            path: the note's vault-relative path.
            abs_path: its file, from the same listing: never a path from elsewhere (a
                link, a query), which `read_note` checks.
        """
        try:
            stat = os.stat(abs_path)
        except OSError:
            return None
        loaded = self.load(path, abs_path, stat)
        if loaded is None:
            return None
        return loaded[0], loaded[1], file_stamp(stat)

    def same_text(self, abs_path: str, known: bytes | None) -> bool:
        """Whether a note's file still holds the text of digest `known` (False when None)."""
        if known is None:
            return False  # never read here (an adopted record): read it again
        try:
            with open(abs_path, "rb") as handle:
                text = decode_note(handle.read(self.max_note_bytes + 1))
        except OSError:
            return False
        return text_digest(text) == known

    def skipped_for_size(self, rel: str) -> bool:
        """Whether the vault walk left this note out for being over `max_note_bytes`.

        Asked for by path (a client read a path it listed itself), it is not missing: it
        is too large to read, and saying "no such note" sends the user looking elsewhere.
        """
        return any(path == rel for path, _mtime in self._oversized)

    def load(self, rel: str, abs_path: str, stat: os.stat_result) -> tuple[NoteInfo, str] | None:
        """A walked note's record and text, None when it is oversized or unreadable (logged)."""
        if stat.st_size > self.max_note_bytes:
            key = (rel, stat.st_mtime_ns)
            if key not in self._oversized:
                self._oversized.add(key)
                logger.warning(
                    "Skipping %s: %d bytes is over the %d-byte note limit",
                    rel,
                    stat.st_size,
                    self.max_note_bytes,
                )
            return None
        try:
            with open(abs_path, "rb") as handle:
                text = decode_note(handle.read(self.max_note_bytes + 1))
        except OSError as exc:
            logger.warning("Cannot read %s: %s", rel, exc)
            return None
        parsed = parse_note(text)
        if parsed.frontmatter_error:
            logger.warning(
                "Ignoring the frontmatter of %s (%s); the note stays searchable",
                rel,
                parsed.frontmatter_error,
            )
        ctime = getattr(stat, "st_birthtime", stat.st_ctime)
        # The times of the stamp, clamped as saved: `read_recorded` compares the two.
        mtime_ns, size, changed_ns = file_stamp(stat)
        info = self.note_info(
            rel, mtime_ns / 1e6, ctime * 1000.0, size, parsed, changed_ns=changed_ns
        )
        return info, text

    def note_info(
        self,
        rel: str,
        mtime_ms: float,
        ctime_ms: float,
        size: int,
        parsed: ParsedNote,
        *,
        changed_ns: int,
    ) -> NoteInfo:
        """A note's record, searchable as the vault's rules say (read or saved alike)."""
        return NoteInfo(
            path=rel,
            title=note_title(rel),
            mtime_ms=mtime_ms,
            ctime_ms=ctime_ms,
            size=size,
            parsed=parsed,
            changed_ns=changed_ns,
            searchable=self.allowed(rel, parsed),
        )

    def allowed(self, path: str, parsed: ParsedNote) -> bool:
        """Whether the vault's inclusions and exclusions leave the note searchable."""
        if not (self.inclusions or self.exclusions):
            return True
        return is_allowed(self.inclusions, self.exclusions, path, parsed.tags, parsed.frontmatter)

    def read_text(self, path: str) -> str | None:
        """Read a note by its vault-relative path, refusing anything outside the vault.

        Args:
            path: vault-relative posix path.

        Returns:
            The decoded text, or None when the path is unsafe, missing or unreadable.
        """
        read = self.read_stamped(path)
        return None if read is None else read[0]

    def read_recorded(self, info: NoteInfo) -> tuple[str, bool] | None:
        """Read a note and tell whether the file is still the one `info` was parsed from.

        Chunking needs heading offsets; when the file's mtime and size still match the
        record, `info.parsed` describes this very text and need not be parsed again.

        Args:
            info: the note's record.

        Returns:
            `(text, unchanged)`, or None when the note cannot be read.
        """
        read = self.read_stamped(info.path)
        if read is None:
            return None
        text, (mtime_ns, size, ctime_ns) = read
        # `info` may not be in the records (see `peek`): its own stamp tells.
        return text, (mtime_ns / 1e6, size, ctime_ns) == info.content_stamp

    def read_stamped(self, path: str) -> tuple[str, Stamp] | None:
        """A note's text and the `(mtime_ns, size, ctime_ns)` of the file it was read from."""
        abs_path = self.safe_path(path)
        if abs_path is None:
            return None
        try:
            with open(abs_path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                text = decode_note(handle.read(self.max_note_bytes + 1))
        except OSError:
            return None
        return text, file_stamp(stat)

    def safe_path(self, path: str) -> Path | None:
        """Map a vault-relative path to a file path only if it stays inside the vault.

        Args:
            path: a path as it appears in a chunk id or a link.

        Returns:
            The absolute path, or None for absolute paths, `..` escapes and symlinks
            that lead outside the root.
        """
        parts = relative_parts(path)
        if parts is None:
            return None
        candidate = self.root.joinpath(*parts)
        if not self._inside_root(os.path.realpath(candidate)):
            return None
        return candidate
