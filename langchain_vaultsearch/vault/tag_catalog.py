"""The tags a vault's notes carry, counted once per version of its records."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from langchain_vaultsearch.vault.markdown import tag_hierarchy

if TYPE_CHECKING:
    from langchain_vaultsearch.vault.vault import Vault


class TagCatalog:
    """The tags a vault's searchable notes carry, counted once per vault version.

    A `#tag` no note carries filters nothing: such a question asks about the word (how
    tags work, say), so the query plan reads it as a word, not a filter. Asking whether
    a tag exists must not cost a pass over the notes per query, so the pass is made once
    for each version of the vault's records (`Vault.version`) and kept.
    """

    def __init__(self, vault: Vault) -> None:
        self._vault = vault
        self._lock = threading.Lock()
        self._version = -1
        self._counts: dict[str, int] = {}
        self._known: frozenset[str] = frozenset()

    def counts(self) -> dict[str, int]:
        """Each tag with how many searchable notes carry it, most used first."""
        self._update()
        return dict(self._counts)

    def carried(self, tag: str) -> bool:
        """Whether a note carries the tag or a descendant of it (`#a` for `#a/b`)."""
        self._update()
        levels = tag_hierarchy(tag)
        return bool(levels) and levels[-1] in self._known

    def _update(self) -> None:
        vault = self._vault
        vault.refresh()
        with self._lock:
            if self._version == vault.version:
                return
            counts: dict[str, int] = {}
            for info in vault.notes.values():
                if info.searchable:
                    for tag in dict.fromkeys(info.parsed.tags):
                        counts[tag] = counts.get(tag, 0) + 1
            self._counts = dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
            self._known = frozenset(level for tag in counts for level in tag_hierarchy(tag))
            self._version = vault.version
