"""LinkGraph: which notes link to which, and what a `[[name]]` resolves to.

Apart from `Vault` because it is a pure function of the notes' records: it reads no file,
and the graph boost and the filter use it through the vault without caring how the vault
walks or watches its folders.
"""

from __future__ import annotations

import logging
import unicodedata
from collections import Counter, defaultdict

from langchain_vaultsearch.vault.note_info import NoteInfo

logger = logging.getLogger(__name__)


class LinkGraph:
    """Names, aliases, links and backlinks of a set of notes, built in one pass.

    Built lazily by `Vault` after a change, so notes that link to each other resolve
    against the same snapshot; `resolve` is Obsidian's lookup order (exact path, file
    name, alias; an ambiguous name picks the shortest path).
    """

    def __init__(self, notes: dict[str, NoteInfo]) -> None:
        self._paths = {_fold(path): path for path in notes}
        by_name: defaultdict[str, list[str]] = defaultdict(list)
        by_alias: defaultdict[str, list[str]] = defaultdict(list)
        self.folder_sizes: Counter[str] = Counter()
        for path, info in notes.items():
            by_name[_fold(info.title)].append(path)
            for alias in info.parsed.aliases:
                by_alias[_fold(alias.strip())].append(path)
            self.folder_sizes[info.folder] += 1
        self._by_name = {name: _shortest(paths, name) for name, paths in by_name.items()}
        self._by_alias = {name: _shortest(paths, name) for name, paths in by_alias.items()}
        outlinks: dict[str, frozenset[str]] = {}
        backlinks: defaultdict[str, set[str]] = defaultdict(set)
        for path, info in notes.items():
            targets = {self.resolve(link.target) for link in info.parsed.links}
            resolved = frozenset(t for t in targets if t is not None and t != path)
            outlinks[path] = resolved
            for target in resolved:
                backlinks[target].add(path)
        self.outlinks = outlinks
        self.backlinks = {path: frozenset(sources) for path, sources in backlinks.items()}

    def resolve(self, name: str) -> str | None:
        """The note a link target names, None when none does (or it climbs out)."""
        key = _fold(name.strip().replace("\\", "/"))
        if not key or key.startswith("../") or "/../" in key:
            return None
        key = key.lstrip("/")
        if key in self._paths:
            return self._paths[key]
        if key + ".md" in self._paths:
            return self._paths[key + ".md"]
        stem = key[:-3] if key.endswith(".md") else key
        if "/" in stem:
            tail = stem.rsplit("/", 1)[1]
            candidate = self._by_name.get(tail)
            if candidate and _fold(candidate).endswith(stem + ".md"):
                return candidate
            return None
        return self._by_name.get(stem) or self._by_alias.get(stem)


def _fold(name: str) -> str:
    """A name as links compare it: case-insensitive, and NFC whatever the file system wrote.

    macOS writes file names decomposed (NFD) while keyboards type composed text (NFC):
    `[[Café]]` must find `Café.md` either way.
    """
    return (name if name.isascii() else unicodedata.normalize("NFC", name)).lower()


def _shortest(paths: list[str], name: str) -> str:
    if len(paths) > 1:
        chosen = min(paths, key=lambda p: (len(p), p))
        logger.debug("Name %r matches %d notes; using %s", name, len(paths), chosen)
        return chosen
    return paths[0]
