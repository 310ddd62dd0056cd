"""LinkGraph: which notes link to which, and what a `[[name]]` resolves to.

Apart from `Vault` because it is a pure function of the notes' records: it reads no file,
and the graph boost, the filter and the retrievers use it through the vault
(`Vault.link_graph`) without caring how the vault walks or watches its folders.

The links are held as compressed sparse rows of note numbers (two int arrays), not as a
set of paths per note: at 100,000 notes the sets took hundreds of megabytes, and the rows
are what a saved index stores, so a restart opens the graph instead of resolving 900,000
links again (4 s there).
"""

from __future__ import annotations

import logging
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.vault.note_info import NoteInfo, folder_of, note_title

logger = logging.getLogger(__name__)

Rows = tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]
"""`(offsets, note numbers)`: the notes of row `i` are `numbers[offsets[i]:offsets[i + 1]]`."""


class LinkGraph:
    """Names, aliases, links and backlinks of a set of notes.

    Built lazily by `Vault` after a change, so notes that link to each other resolve
    against the same snapshot; `resolve` is Obsidian's lookup order (exact path, file
    name, alias; an ambiguous name picks the shortest path).
    """

    def __init__(
        self, numbers: Mapping[str, int], aliases: Mapping[str, Sequence[str]], outlinks: Rows
    ) -> None:
        """A graph over notes whose links are already resolved.

        Args:
            numbers: every note's number, by path, from 0 (shared, not copied: the saved
                notes of a 100,000-note vault have the same mapping).
            aliases: frontmatter aliases of the notes that have any.
            outlinks: per note number, the numbers of the notes it links to.

        Raises:
            ValueError: when the rows do not fit the notes (a damaged saved index).
        """
        paths = list(numbers)
        offsets, targets = outlinks
        if offsets.shape != (len(paths) + 1,) or offsets[0] != 0 or offsets[-1] != targets.size:
            msg = "the link rows do not match the notes"
            raise ValueError(msg)
        if np.any(np.diff(offsets) < 0) or (
            targets.size and (targets.min() < 0 or targets.max() >= len(paths))
        ):
            msg = "the link rows point at notes that do not exist"
            raise ValueError(msg)
        if any(numbers[path] != number for number, path in enumerate(paths)):
            msg = "the notes are not numbered in order"
            raise ValueError(msg)
        self._paths = paths
        self._numbers = numbers
        self._aliases = aliases
        self._out = (offsets, targets)
        sources = np.repeat(np.arange(len(paths), dtype=np.int32), np.diff(offsets))
        order = np.argsort(targets, kind="stable")
        counts = np.bincount(targets, minlength=len(paths))
        back_offsets = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(counts, out=back_offsets[1:])
        self._back = (back_offsets, sources[order])
        self._names: _Names | None = None
        self._folder_sizes: Counter[str] | None = None

    @classmethod
    def from_notes(cls, notes: Mapping[str, NoteInfo]) -> LinkGraph:
        """Resolve every note's links against the notes themselves.

        One pass over the notes: a vault opened from a saved index decodes each record as
        it is read.
        """
        numbers: dict[str, int] = {}
        aliases: dict[str, Sequence[str]] = {}
        targets: list[list[str]] = []
        for path, info in notes.items():
            numbers[path] = len(numbers)
            if info.parsed.aliases:
                aliases[path] = info.parsed.aliases
            targets.append([link.target for link in info.parsed.links])
        return cls.from_links(numbers, aliases, targets)

    @classmethod
    def from_links(
        cls,
        numbers: Mapping[str, int],
        aliases: Mapping[str, Sequence[str]],
        targets: Iterable[Sequence[str]],
    ) -> LinkGraph:
        """Resolve each note's link targets, given in note number order, against the notes.

        Args:
            numbers: every note's number, by path, from 0, in order.
            aliases: frontmatter aliases of the notes that have any.
            targets: per note, the targets of its links (`[[target|alias]]`).
        """
        paths = list(numbers)
        names = _Names(paths, aliases)
        # A target is resolved once however many notes link to it: hubs are linked from
        # hundreds of notes (help x16: 630,816 links; resolving each took 2 s of an 8 s merge).
        resolved_targets = _Resolved(names)
        offsets = np.zeros(len(paths) + 1, dtype=np.int64)
        found: list[int] = []
        for number, (path, named) in enumerate(zip(paths, targets, strict=True)):
            resolved = set(map(resolved_targets.__getitem__, named))
            found.extend(sorted(numbers[t] for t in resolved if t is not None and t != path))
            offsets[number + 1] = len(found)
        graph = cls(numbers, aliases, (offsets, np.array(found, dtype=np.int32)))
        graph._names = names
        return graph

    @property
    def outlink_rows(self) -> Rows:
        """The outlinks as rows over `paths` (what a saved index stores)."""
        return self._out

    @property
    def aliases(self) -> Mapping[str, Sequence[str]]:
        """Frontmatter aliases of the notes that have any."""
        return self._aliases

    @property
    def folder_sizes(self) -> Counter[str]:
        """Number of notes directly in each folder."""
        if self._folder_sizes is None:
            self._folder_sizes = Counter(map(folder_of, self._paths))
        return self._folder_sizes

    def backlinks(self, path: str) -> frozenset[str]:
        """Paths of the notes that link to `path`."""
        return self._row(self._back, path)

    def outlinks(self, path: str) -> frozenset[str]:
        """Paths of the notes `path` links to (resolved; unresolved links dropped)."""
        return self._row(self._out, path)

    def neighbours(
        self, path: str, limit: int, exclude: Collection[str] = ()
    ) -> list[tuple[str, int]]:
        """Up to `limit` notes one link away (either way), most links of their own first.

        Chosen in note numbers over the rows: a hub's 50,000 backlinks cost a gather and a
        partial sort, and no path or record of the notes left out is made. Graph
        expansion took the whole neighbourhood as paths and looked up each note's record
        to rank it: 14-39 s a query at a hub of 50,000 backlinks. Of equally linked
        notes, the first in note order are kept.

        Args:
            path: the note whose neighbours are wanted.
            limit: how many at most.
            exclude: notes not to return (results already shown).

        Returns:
            `(path, links)` pairs: links counts the note's outlinks and backlinks.
        """
        number = self._numbers.get(path)
        if number is None or limit < 1:
            return []
        (out_offsets, out_targets), (back_offsets, back_targets) = self._out, self._back
        linked = np.unique(
            np.concatenate(
                [
                    out_targets[out_offsets[number] : out_offsets[number + 1]],
                    back_targets[back_offsets[number] : back_offsets[number + 1]],
                ]
            )
        ).astype(np.int64)
        dropped = [n for other in exclude if (n := self._numbers.get(other)) is not None]
        linked = linked[~np.isin(linked, [number, *dropped])]
        outlinks = out_offsets[linked + 1] - out_offsets[linked]
        degrees = outlinks + back_offsets[linked + 1] - back_offsets[linked]
        if len(linked) > limit:
            # One key orders by links, most first, then by number: a partial sort keeps
            # `limit` without sorting the rest.
            keys = (int(degrees.max()) - degrees) * len(self._paths) + linked
            kept = np.argpartition(keys, limit - 1)[:limit]
            kept = kept[np.argsort(keys[kept])]
            linked, degrees = linked[kept], degrees[kept]
        return [
            (self._paths[i], degree)
            for i, degree in zip(linked.tolist(), degrees.tolist(), strict=True)
        ]

    def co_cited(self, path: str, among: Collection[str]) -> set[str]:
        """The notes of `among`, other than `path`, that a note linking to `path` links to.

        Computed in note numbers over the rows: a hub's thousands of backlinks cost one
        gather, where a set of paths per linking note cost 77 ms of a query that ranked a
        hub among 100,000 notes.
        """
        number = self._numbers.get(path)
        if number is None:
            return set()
        back_offsets, back_targets = self._back
        sources = back_targets[back_offsets[number] : back_offsets[number + 1]].astype(np.int64)
        offsets, targets = self._out
        starts = offsets[sources]
        lengths = offsets[sources + 1] - starts
        total = int(lengths.sum())
        if total == 0:
            return set()
        # Every outlink position of every source: each source's start, then consecutive.
        positions = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(total)
        wanted = [n for other in among if (n := self._numbers.get(other)) is not None]
        found = np.intersect1d(targets[positions], np.array(wanted, dtype=targets.dtype))
        return {self._paths[i] for i in found.tolist() if i != number}

    def _row(self, rows: Rows, path: str) -> frozenset[str]:
        number = self._numbers.get(path)
        if number is None:
            return frozenset()
        offsets, targets = rows
        found = targets[offsets[number] : offsets[number + 1]]
        return frozenset(self._paths[i] for i in found.tolist())

    def resolve(self, name: str) -> str | None:
        """Resolve a link target to a note path the way Obsidian does.

        Exact vault paths win (with or without `.md`), then file names compared
        case-insensitively, then frontmatter aliases. An ambiguous name picks the
        shortest path and says so in the log (docs/design.md, decision 4).

        Args:
            name: the link target, heading and alias already stripped.

        Returns:
            The note path, or None when no note has that name (or it climbs out).
        """
        if self._names is None:
            self._names = _Names(self._paths, self._aliases)
        return self._names.resolve(name)


class _Names:
    """What a link target can name: paths, file names and aliases, folded for comparison."""

    def __init__(self, paths: Sequence[str], aliases: Mapping[str, Sequence[str]]) -> None:
        self._paths = {_fold(path): path for path in paths}
        by_name: defaultdict[str, list[str]] = defaultdict(list)
        by_alias: defaultdict[str, list[str]] = defaultdict(list)
        for path in paths:
            by_name[_fold(note_title(path))].append(path)
        for path, names in aliases.items():
            for alias in names:
                by_alias[_fold(alias.strip())].append(path)
        self._by_name = {name: _shortest(paths, name) for name, paths in by_name.items()}
        self._by_alias = {name: _shortest(paths, name) for name, paths in by_alias.items()}

    def resolve(self, name: str) -> str | None:
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


class _Resolved(dict[str, str | None]):
    """Link targets resolved against one set of names, each when first met."""

    def __init__(self, names: _Names) -> None:
        super().__init__()
        self._names = names

    def __missing__(self, target: str) -> str | None:
        path = self[target] = self._names.resolve(target)
        return path


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
