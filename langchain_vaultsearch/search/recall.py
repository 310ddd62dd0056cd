"""Recall: which notes are worth ranking at all.

The original greps note text for each recall term and keeps the first 200 hits in vault
order, so a common term fills the slots before relevant notes are reached. DESIGN
decision 2 asks for the whole vault to be considered and candidates ranked by how many
distinct recall terms they match, path hits first. A literal substring scan of a 33 MB
vault costs 20-55 ms per term in Python (measured; see the README), so the scan is done
once: `RecallIndex` keeps postings of every note's index terms, updated from the vault's
change sets, and a query combines them with numpy in a few milliseconds.
"""

from __future__ import annotations

import math
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from langchain_vaultsearch.text.tokenize import contains_cjk, tokenize_mixed
from langchain_vaultsearch.vault.vault import NoteInfo, VaultChanges

PREFIX_WEIGHT = 0.375
MAX_PREFIX_EXPANSIONS = 64
_PREFIX_KEY = 3

BoolMask = npt.NDArray[np.bool_]


class Vocabulary:
    """Every index term seen in the vault, grouped by its first characters.

    Prefix matching (`deploy` finds `deployment`) needs the terms that start with a query
    term; grouping by the first three characters keeps that lookup to a small bucket.
    """

    def __init__(self) -> None:
        self._buckets: defaultdict[str, set[str]] = defaultdict(set)

    def add(self, term: str) -> None:
        """Remember a term."""
        self._buckets[_bucket_key(term)].add(term)

    def expand(self, term: str) -> list[tuple[str, float]]:
        """The term itself and the terms it is a prefix of, with their weights.

        Two-character Latin prefixes such as `js` or `ai` are not expanded: they begin
        hundreds of unrelated words. A single CJK character is, since it is otherwise
        unreachable in a bigram index.

        Args:
            term: a query term, lowercase.

        Returns:
            `(term, 1.0)` first, then up to 64 longer terms, closest in length first,
            weighted `0.375 * len(t) / (len(t) + 0.3 * (len(t) - len(term)))` as in
            MiniSearch, the original's engine.
        """
        expanded = [(term, 1.0)]
        cjk_char = len(term) == 1 and contains_cjk(term)
        if len(term) < _PREFIX_KEY and not cjk_char:
            return expanded
        bucket = self._buckets.get(_bucket_key(term), set())
        longer = sorted(
            (t for t in bucket if len(t) > len(term) and t.startswith(term)),
            key=lambda t: (len(t), t),
        )[:MAX_PREFIX_EXPANSIONS]
        for other in longer:
            extra = len(other) - len(term)
            expanded.append((other, PREFIX_WEIGHT * len(other) / (len(other) + 0.3 * extra)))
        return expanded


def _bucket_key(term: str) -> str:
    if contains_cjk(term[:1]):
        return term[:1]
    return term[:_PREFIX_KEY]


def note_meta_text(info: NoteInfo) -> str:
    """Title, folders, aliases, tags and frontmatter title: where a hit means "about"."""
    parts = [info.path[:-3].replace("/", " "), *info.parsed.aliases, *info.parsed.tags]
    title = info.parsed.frontmatter.get("title")
    if isinstance(title, str):
        parts.append(title)
    return " ".join(parts)


class RecallIndex:
    """Postings of every note's terms, kept current from `VaultChanges`.

    A changed note gets a new id and its old id is retired, so updates never rewrite
    postings; the index is rebuilt from scratch once retired ids outnumber live ones.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.vocabulary = Vocabulary()
        self._body: dict[str, array[int]] = {}
        self._meta: dict[str, array[int]] = {}
        self._paths: list[str] = []
        self._ids: dict[str, int] = {}
        self._live = np.zeros(0, dtype=np.bool_)
        self._searchable = np.zeros(0, dtype=np.bool_)

    @property
    def size(self) -> int:
        """Number of live notes."""
        return len(self._ids)

    @property
    def needs_rebuild(self) -> bool:
        """True once retired ids outnumber live ones (memory held by edits)."""
        return len(self._paths) > 1000 and len(self._paths) > 2 * len(self._ids)

    def apply(self, changes: VaultChanges) -> None:
        """Index added and changed notes and retire removed ones."""
        for path in changes.removed:
            self._retire(path)
        if not changes.updated:
            return
        self._grow(len(self._paths) + len(changes.updated))
        for info, text in changes.updated:
            self._retire(info.path)
            note_id = len(self._paths)
            self._paths.append(info.path)
            self._ids[info.path] = note_id
            self._live[note_id] = True
            self._searchable[note_id] = info.searchable
            self._post(self._body, tokenize_mixed(text), note_id)
            self._post(self._meta, tokenize_mixed(note_meta_text(info)), note_id)

    def rebuild(self, notes: Iterable[tuple[NoteInfo, str]]) -> None:
        """Drop everything and index the given notes."""
        self._reset()
        self.apply(VaultChanges(updated=tuple(notes)))

    def _retire(self, path: str) -> None:
        old = self._ids.pop(path, None)
        if old is not None:
            self._live[old] = False

    def _grow(self, needed: int) -> None:
        if needed <= len(self._live):
            return
        capacity = max(needed, 2 * len(self._live), 1024)
        for name in ("_live", "_searchable"):
            grown = np.zeros(capacity, dtype=np.bool_)
            old = getattr(self, name)
            grown[: len(old)] = old
            setattr(self, name, grown)

    def _post(self, postings: dict[str, array[int]], terms: list[str], note_id: int) -> None:
        for term in terms:
            ids = postings.get(term)
            if ids is None:
                ids = postings[term] = array("i")
                self.vocabulary.add(term)
            ids.append(note_id)

    def candidates(self, recall_terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """Rank searchable notes by the recall terms they contain.

        Each term counts with an IDF weight, so a rare term outweighs a common one, and
        counts twice when it is in the note's title, path, aliases or tags. A one-word
        term also matches the words it is a prefix of; a phrase matches notes that
        contain all of its words.

        Args:
            recall_terms: the query, its variants and its salient terms.
            limit: how many candidates to return.

        Returns:
            `(path, recall score)` pairs, best first.
        """
        count = len(self._paths)
        if count == 0 or limit <= 0:
            return []
        eligible = self._live[:count] & self._searchable[:count]
        total = int(eligible.sum())
        scores = np.zeros(count, dtype=np.float64)
        for term in dict.fromkeys(t.strip().lower() for t in recall_terms if t.strip()):
            tokens = tokenize_mixed(term)
            if not tokens:
                continue
            body = self._term_mask(self._body, tokens, count)
            meta = self._term_mask(self._meta, tokens, count)
            either = (body | meta) & eligible
            found = int(either.sum())
            if found == 0:
                continue
            idf = math.log(1.0 + (total - found + 0.5) / (found + 0.5))
            scores += idf * either + idf * (meta & eligible)
        order = np.argsort(-scores, kind="stable")
        ranked: list[tuple[str, float]] = []
        for note_id in order[:limit]:
            score = float(scores[note_id])
            if score <= 0.0:
                break
            ranked.append((self._paths[note_id], score))
        return ranked

    def _term_mask(
        self, postings: dict[str, array[int]], tokens: list[str], count: int
    ) -> BoolMask:
        if len(tokens) == 1:
            mask = np.zeros(count, dtype=np.bool_)
            for term, _weight in self.vocabulary.expand(tokens[0]):
                ids = postings.get(term)
                if ids is not None:
                    mask[np.frombuffer(ids, dtype=np.int32)] = True
            return mask
        mask = np.ones(count, dtype=np.bool_)
        for token in tokens:
            ids = postings.get(token)
            if ids is None:
                return np.zeros(count, dtype=np.bool_)
            hit = np.zeros(count, dtype=np.bool_)
            hit[np.frombuffer(ids, dtype=np.int32)] = True
            mask &= hit
        return mask
