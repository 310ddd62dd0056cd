"""Folder and graph boosts: coherent clusters of hits rise together.

Both multiply scores after lexical ranking and neither reorders the list; the final sort
happens after normalisation.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_vaultsearch.search.bm25 import LexicalHit
from langchain_vaultsearch.vault.note_info import folder_of


@dataclass(frozen=True)
class FolderBoostConfig:
    """Folder boost settings (the original's defaults).

    Attributes:
        min_docs: hits from at least this many notes of one folder.
        min_relevance_ratio: and at least this share of the folder's notes.
        max_boost: cap on the multiplier.
    """

    min_docs: int = 2
    min_relevance_ratio: float = 0.4
    max_boost: float = 1.15


@dataclass(frozen=True)
class GraphBoostConfig:
    """Graph boost settings (the values SearchCore uses in the original).

    Attributes:
        max_candidates: how many top notes are analysed.
        strength: multiplier slope, `1 + strength * ln(1 + connection score)`.
        max_boost: cap on the multiplier.
        backlink_weight: per candidate linking to the note.
        co_citation_weight: per candidate cited by a common source.
        shared_tag_weight: per candidate sharing a tag.
    """

    max_candidates: int = 20
    strength: float = 0.1
    max_boost: float = 1.15
    backlink_weight: float = 1.0
    co_citation_weight: float = 0.5
    shared_tag_weight: float = 0.3


def apply_folder_boost(
    hits: Sequence[LexicalHit],
    folder_sizes: Mapping[str, int],
    config: FolderBoostConfig = FolderBoostConfig(),
) -> dict[str, dict[str, float | str | int]]:
    """Boost hits whose folder holds a relevant share of the results.

    Args:
        hits: scored chunks; their scores are multiplied in place.
        folder_sizes: notes directly in each folder (not recursive).
        config: thresholds and cap.

    Returns:
        Per boosted folder, the `folderBoost` explanation
        (`folder, documentCount, totalDocsInFolder, relevanceRatio, boostFactor`).
    """
    notes_per_folder: dict[str, set[str]] = {}
    for hit in hits:
        notes_per_folder.setdefault(folder_of(hit.note_path), set()).add(hit.note_path)
    boosts: dict[str, dict[str, float | str | int]] = {}
    for folder, notes in notes_per_folder.items():
        count = len(notes)
        total = max(folder_sizes.get(folder, count), count)
        ratio = count / total
        if count < config.min_docs or ratio < config.min_relevance_ratio:
            continue
        factor = min(1.0 + math.log2(count + 1) * math.sqrt(ratio), config.max_boost)
        boosts[folder] = {
            "folder": folder,
            "documentCount": count,
            "totalDocsInFolder": total,
            "relevanceRatio": ratio,
            "boostFactor": factor,
        }
    for hit in hits:
        boost = boosts.get(folder_of(hit.note_path))
        if boost is not None:
            hit.score *= float(boost["boostFactor"])
    return boosts


class NoteGraph(Protocol):
    """What the graph boost reads of a source of notes: links between them, their tags.

    `Vault` is one; any other document source with links can be boosted the same way.
    """

    def backlinks(self, path: str) -> frozenset[str]:
        """Notes linking to `path`."""

    def co_cited(self, path: str, among: Collection[str]) -> set[str]:
        """The notes of `among`, other than `path`, that a note linking to `path` links to."""

    def tags(self, path: str) -> Sequence[str]:
        """The note's tags."""


def apply_graph_boost(
    hits: Sequence[LexicalHit],
    graph: NoteGraph,
    config: GraphBoostConfig = GraphBoostConfig(),
) -> dict[str, dict[str, float | int]]:
    """Boost notes linked to other top notes.

    Args:
        hits: scored chunks in rank order; scores are multiplied in place.
        graph: links and tags of the notes.
        config: weights and cap.

    Returns:
        Per boosted note, the `graphConnections` explanation
        (`backlinks, coCitations, sharedTags, score, boostMultiplier`).
    """
    candidates = list(dict.fromkeys(hit.note_path for hit in hits))[: config.max_candidates]
    if len(candidates) < 2:
        return {}
    candidate_set = set(candidates)
    tags = {path: frozenset(tag.lower() for tag in graph.tags(path)) for path in candidates}
    connections: dict[str, dict[str, float | int]] = {}
    for path in candidates:
        sources = graph.backlinks(path)
        backlinks = len(sources & candidate_set)
        cited_together = graph.co_cited(path, candidate_set)
        shared = sum(1 for other in candidates if other != path and tags[path] & tags[other])
        score = (
            config.backlink_weight * backlinks
            + config.co_citation_weight * len(cited_together)
            + config.shared_tag_weight * shared
        )
        if score <= 0:
            continue
        multiplier = min(1.0 + config.strength * math.log1p(score), config.max_boost)
        connections[path] = {
            "backlinks": backlinks,
            "coCitations": len(cited_together),
            "sharedTags": shared,
            "score": score,
            "boostMultiplier": multiplier,
        }
    for hit in hits:
        connection = connections.get(hit.note_path)
        if connection is not None:
            hit.score *= float(connection["boostMultiplier"])
    return connections
