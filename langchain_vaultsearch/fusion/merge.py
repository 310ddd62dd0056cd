"""Merge guaranteed filter documents with ranked search documents.

A note the user named (`[[mention]]`, `#tag`, time range) is already in the context whole,
so chunks of it from the ranked search would only repeat it and take the place of other
notes. The dedup goes one way only: filter documents are never dropped, as in the
original.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from langchain_core.documents import Document


class MergedResults(NamedTuple):
    """Filter and search documents after the merge.

    Attributes:
        filter_results: the filter documents, unchanged and in their order.
        search_results: the search documents whose note no filter document covers, in
            their order.
    """

    filter_results: list[Document]
    search_results: list[Document]


def merge_filter_and_search_results(
    filter_docs: Sequence[Document], search_docs: Sequence[Document]
) -> MergedResults:
    """Drop the search documents of notes that a filter document already covers.

    Notes are compared by `metadata["path"]`. A search document without a path cannot be
    matched to a note and is kept; filter documents without a path cover nothing.

    Args:
        filter_docs: documents from `FilterRetriever` (never dropped).
        search_docs: documents from a ranked retriever, e.g. `TieredLexicalRetriever`.

    Returns:
        `(filter_results, search_results)` as new lists; the inputs are not modified.
    """
    covered = {doc.metadata.get("path") for doc in filter_docs} - {None, ""}
    kept = [doc for doc in search_docs if doc.metadata.get("path") not in covered]
    return MergedResults(list(filter_docs), kept)
