"""ChangeFeed: what changed in a shared vault since one index last looked.

Several indexes follow one `Vault` (the lexical index, the vector index, the filter's
view), but a refresh hands its change set only to its caller. Each index therefore holds
a feed: the note records it has applied and the vault version it saw. When the version
moved further than its own refresh explains, another index took the change set, and the
feed reconciles its records with the vault's instead. Either way the holder gets exactly
the notes added, changed and removed since its last pull, once.
"""

from __future__ import annotations

from collections.abc import Iterable, KeysView

from langchain_vaultsearch.vault.note_info import VaultChanges
from langchain_vaultsearch.vault.vault import Vault


class ChangeFeed:
    """One index's cursor over a vault's changes (not thread-safe: its holder locks)."""

    def __init__(self, vault: Vault, *, with_text: bool = True) -> None:
        """Follow a vault from nothing: the first pull reports every note as added.

        Args:
            vault: the vault, possibly shared with other indexes.
            with_text: hand the notes' text along with their records. An index that reads
                notes one at a time (the vector index) passes False, so that a vault's
                worth of text is never held at once.
        """
        self.vault = vault
        self.with_text = with_text
        # The revision of each note the holder's index reflects (`Vault.revisions`):
        # compared without decoding records a saved index holds.
        self._applied: dict[str, int] = {}
        self._version = -1

    @property
    def started(self) -> bool:
        """True once the holder has pulled or started from saved records."""
        return self._version >= 0

    @property
    def version(self) -> int:
        """The vault version the holder's index is current at (-1 before it starts)."""
        return self._version

    @property
    def applied(self) -> KeysView[str]:
        """Paths of the notes the holder's index reflects."""
        return self._applied.keys()

    def pull(self) -> VaultChanges:
        """Refresh the vault and return what changed since the previous pull.

        The holder is expected to apply the changes before pulling again; the feed counts
        them as applied when it returns them.
        """
        vault = self.vault
        version = vault.version
        changes = vault.refresh(keep_text=self.with_text)
        if vault.version != version + bool(changes) or version != self._version:
            # Another index refreshed the shared vault and got the change set.
            changes = self._reconcile(changes)
        self._version = vault.version
        self._advance(changes)
        return changes

    def start_from(
        self, applied: Iterable[str], *, as_of: tuple[int, dict[str, int]] | None = None
    ) -> VaultChanges:
        """Start from the notes a saved index reflects, as of the vault's version then.

        Args:
            applied: paths of the notes whose current record the index was built from.
            as_of: the vault's version and revisions `applied` is current at
                (`Vault.snapshot` taken before the holder looked at the notes; default:
                one taken now). A note another reader's refresh changed after it keeps its
                older revision here, so the next pull reads it again instead of counting
                the new one as applied.

        Returns:
            The changes between those notes and the vault's when another reader
            refreshed the vault first (counted as applied), else nothing.
        """
        version, revisions = as_of if as_of is not None else self.vault.snapshot()
        self._applied = {path: revisions[path] for path in applied if path in revisions}
        self._version = version
        changes = self._reconcile(VaultChanges(), revisions)
        self._advance(changes)
        return changes

    def _advance(self, changes: VaultChanges) -> None:
        for path in changes.removed:
            self._applied.pop(path, None)
        for info, _text in changes.updated:
            self._applied[info.path] = self.vault.revision(info.path)

    def _reconcile(
        self, changes: VaultChanges, revisions: dict[str, int] | None = None
    ) -> VaultChanges:
        """The change set between the applied notes and the vault's notes now."""
        applied = self._applied
        texts = {info.path: text for info, text in changes.updated}
        if revisions is None:
            revisions = dict(self.vault.revisions())
        updated = []
        for path, revision in revisions.items():
            if applied.get(path) == revision:
                continue
            info = self.vault.record(path)
            if info is None:
                continue
            if not self.with_text:
                updated.append((info, ""))
                continue
            text = texts[path] if path in texts else self.vault.reader.read_text(path)
            if text is not None:
                updated.append((info, text))
        removed = tuple(path for path in applied if path not in revisions)
        return VaultChanges(tuple(updated), removed)
