"""The notes a query asks for come first; the rest of the list still answers it.

A query asks for notes two ways a retriever can honour: by name (`[[Note]]`) and by a
`#tag` some note carries. A retriever's list puts them first (`ranked_asked_first`: a
carried tag's notes by `asked_first`, named notes by `named_first`); the chain's filter
puts them (and a period's notes) before the search's, in the search's order
(`FilterRetriever.run`'s `first`).

`#go-weekly profiling` asks for the notes tagged `#go-weekly` first. When six notes carry
the tag, a list cut to them leaves four of ten places empty, while the notes about
profiling that nobody tagged are what the original showed next: its chain runner puts
the tag filter's notes before the search results and drops only the search results of
notes the filter already returned. Judged on four vaults (`benchmarks/fusion_lovo.py`),
filling the places the tagged notes leave raised three of brain's ten carried-tag
questions (the ten: 0.887 -> 0.907; `#go-weekly profiling` 0.826 -> 0.918) and lowered
none of the 28 on the four vaults; it has no constant, so no vault left out could choose
otherwise. An explicit tag filter (the CLI's `--tag`, the MCP tool's `tags`) still keeps
only the tagged notes.

A named note comes first on every path, as the chain's filter puts it first and as the
original's semantic retriever did (issue 26). Fused, a note lexical search prefers could
pass it: `[[ITIL]] niveles de certificación` ranked the ITIL note second. The judges
graded the note above it higher there (the Spanish vault's mention kind 0.836 -> 0.806);
no other judged question moved.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

from langchain_core.documents import Document

from langchain_vaultsearch.documents import document_score, rescored
from langchain_vaultsearch.query_plan import note_mentions
from langchain_vaultsearch.vault.vault import Vault


def asked_first(
    asked: Sequence[Document], others: Sequence[Document], limit: int
) -> list[Document]:
    """The asked-for notes' documents, then the others', `limit` in all, scores descending.

    Args:
        asked: documents of the notes asked for, ranked.
        others: documents of the other notes, ranked.
        limit: how many to return.

    Returns:
        `asked` cut to `limit`, each `includeInContext` (what the query asks for is
        shown, however weakly its words match), then as many of `others` as there is
        room for, each scaled by one factor so that the best of them scores just under
        the weakest asked-for document: the order holds for anyone who sorts by score,
        and the others keep their relative scores. Their score before that stays in
        `explanation["fusion"]["fusedScore"]`. When the weakest asked-for document
        scores 0, so do the others, and only the list's order tells them apart.
    """
    kept = [_shown(doc) for doc in asked[:limit]]
    added = list(others[: max(limit - len(kept), 0)])
    if not added or not kept:
        return kept + added
    ceiling = min(document_score(doc.metadata) for doc in kept)
    best = max(document_score(doc.metadata) for doc in added)
    if best < ceiling:
        return kept + added
    factor = math.nextafter(ceiling, 0.0) / best if best > 0 else 0.0
    return kept + [_scaled(doc, factor) for doc in added]


Top = Callable[[list[Document], int, Callable[[Document], bool]], list[Document]]
"""A retriever's cut of a fused list: the best `n`, keeping only the documents `keep`
allows among any it adds (hybrid search's graph neighbours)."""


def ranked_asked_first(
    fused: list[Document],
    limit: int,
    *,
    top: Top,
    carries: Callable[[Document], bool] | None,
    named: Collection[str],
) -> list[Document]:
    """A fused list's best `limit`, the notes the query asks for first.

    A carried tag's notes come before the others (`asked_first`), and the notes the query
    names before all (`named_first`). The one order `MergedSemanticRetriever` gives and
    `benchmarks/fusion_lovo.py` replays, so the replay cannot drift from the retriever.

    Args:
        fused: the fused list, best first.
        limit: how many to return.
        top: the retriever's cut (its hybrid stages, or each note's best chunk first).
        carries: whether a document's note carries the query's carried tags (None: the
            query has none).
        named: the paths of the notes the query names (`named_notes`).
    """
    if carries is None:
        found = top(fused, limit, lambda _doc: True)
    else:

        def untagged(doc: Document) -> bool:
            return not carries(doc)

        tagged = top([doc for doc in fused if carries(doc)], limit, carries)
        others: list[Document] = []
        if len(tagged) < limit:
            others = top([doc for doc in fused if untagged(doc)], limit - len(tagged), untagged)
        found = asked_first(tagged, others, limit)
    return named_first(found, named)


def named_notes(query: str, vault: Vault) -> frozenset[str]:
    """The paths of the notes a query names as `[[Note]]`, resolved as Obsidian links.

    Read from the vault as last refreshed: the search whose list this orders has just
    refreshed it, and a second walk of the folder would cost a large vault a scan.
    """
    names = note_mentions(query)
    if not names:  # most queries: the link graph is not needed
        return frozenset()
    graph = vault.link_graph()
    return frozenset(path for name in names if (path := graph.resolve(name)) is not None)


def named_first(docs: Sequence[Document], named: Collection[str]) -> list[Document]:
    """The documents of the named notes first, the others below them (see `asked_first`).

    The list keeps its best score: everything is scaled by one factor so the first named
    document scores what the best did (hybrid search's lists have their best at 1.0).
    """
    first = [doc for doc in docs if doc.metadata.get("path") in named]
    if not first:
        return list(docs)
    rest = [doc for doc in docs if doc.metadata.get("path") not in named]
    found = asked_first(first, rest, len(docs))
    best = max(document_score(doc.metadata) for doc in docs)
    lead = document_score(found[0].metadata)
    if not 0 < lead < best:
        return found
    return [_scaled(doc, best / lead) for doc in found]


def _shown(doc: Document) -> Document:
    if doc.metadata.get("includeInContext") is not False:
        return doc
    metadata = {**doc.metadata, "includeInContext": True}
    return Document(page_content=doc.page_content, metadata=metadata, id=doc.id)


def _scaled(doc: Document, factor: float) -> Document:
    score = document_score(doc.metadata)
    explanation = doc.metadata.get("explanation")
    explanation = dict(explanation) if isinstance(explanation, dict) else {}
    fusion = explanation.get("fusion")
    fusion = dict(fusion) if isinstance(fusion, dict) else {}
    fusion.setdefault("fusedScore", score)  # scaled twice (tagged, then named): the first
    explanation["fusion"] = fusion
    return rescored(doc, score * factor, explanation=explanation)
