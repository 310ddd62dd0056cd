"""merge_filter_and_search_results (reference sections 14 and 22.10)."""

from __future__ import annotations

from pathlib import Path

from langchain_core.documents import Document

from langchain_vaultsearch import (
    FilterRetriever,
    TieredLexicalRetriever,
    Vault,
    merge_filter_and_search_results,
)
from langchain_vaultsearch.context import format_local_search_context
from langchain_vaultsearch.fusion.merge import MergedResults


def doc(path: str | None, chunk: int | None = None, text: str = "x") -> Document:
    metadata: dict[str, object] = {} if path is None else {"path": path}
    if chunk is not None:
        metadata["chunkId"] = f"{path}#{chunk}"
    return Document(page_content=text, metadata=metadata)


def paths(docs: list[Document]) -> list[str | None]:
    return [d.metadata.get("path") for d in docs]


def test_disjoint_results_are_both_kept() -> None:
    merged = merge_filter_and_search_results([doc("filter1.md")], [doc("search1.md")])
    assert paths(merged.filter_results) == ["filter1.md"]
    assert paths(merged.search_results) == ["search1.md"]


def test_search_doc_of_a_filtered_note_is_dropped() -> None:
    merged = merge_filter_and_search_results(
        [doc("shared.md")], [doc("shared.md"), doc("unique.md")]
    )
    assert paths(merged.search_results) == ["unique.md"]


def test_only_uncovered_notes_remain() -> None:
    merged = merge_filter_and_search_results(
        [doc("a.md"), doc("b.md")], [doc("a.md"), doc("b.md"), doc("c.md")]
    )
    assert len(merged.filter_results) == 2
    assert paths(merged.search_results) == ["c.md"]


def test_every_chunk_of_a_filtered_note_is_dropped() -> None:
    search = [doc("big.md", 0), doc("other.md", 0), doc("big.md", 3), doc("other.md", 1)]
    merged = merge_filter_and_search_results([doc("big.md")], search)
    assert [d.metadata["chunkId"] for d in merged.search_results] == ["other.md#0", "other.md#1"]


def test_search_doc_without_a_path_is_kept() -> None:
    merged = merge_filter_and_search_results([doc("a.md")], [doc(None), doc("")])
    assert paths(merged.search_results) == [None, ""]


def test_filter_doc_without_a_path_covers_nothing() -> None:
    merged = merge_filter_and_search_results([doc(None), doc("")], [doc(""), doc("a.md")])
    assert paths(merged.filter_results) == [None, ""]
    assert paths(merged.search_results) == ["", "a.md"]


def test_filter_docs_are_never_dropped_or_reordered() -> None:
    filters = [doc("b.md"), doc("a.md"), doc("b.md")]
    merged = merge_filter_and_search_results(filters, [doc("a.md"), doc("b.md")])
    assert merged.filter_results == filters
    assert merged.search_results == []


def test_empty_inputs_give_empty_outputs() -> None:
    assert merge_filter_and_search_results([], []) == MergedResults([], [])
    assert paths(merge_filter_and_search_results([], [doc("a.md")]).search_results) == ["a.md"]


def test_inputs_are_not_modified_and_results_unpack() -> None:
    filters, search = [doc("a.md")], [doc("a.md"), doc("b.md")]
    filter_results, search_results = merge_filter_and_search_results(filters, search)
    assert paths(search) == ["a.md", "b.md"]
    assert filter_results is not filters
    assert paths(search_results) == ["b.md"]


def test_paths_compare_exactly() -> None:
    merged = merge_filter_and_search_results([doc("Notes/A.md")], [doc("notes/a.md")])
    assert paths(merged.search_results) == ["notes/a.md"]


def test_filter_and_lexical_results_merge_end_to_end(vault_dir: Path) -> None:
    vault = Vault(vault_dir)
    query = "what did [[Deployment]] say about OAuth rollback?"
    filter_docs = FilterRetriever(vault=vault).get_relevant_documents(query)
    search_docs = TieredLexicalRetriever(vault=vault).invoke(query)
    assert "Projects/Alpha/Deployment.md" in paths(search_docs)
    merged = merge_filter_and_search_results(filter_docs, search_docs)
    assert paths(merged.filter_results) == ["Projects/Alpha/Deployment.md"]
    assert merged.search_results
    assert "Projects/Alpha/Deployment.md" not in paths(merged.search_results)
    assert len(merged.search_results) == len(search_docs) - paths(search_docs).count(
        "Projects/Alpha/Deployment.md"
    )


def test_merged_documents_render_filter_and_search_sections(vault_dir: Path) -> None:
    vault = Vault(vault_dir)
    query = "what did [[Deployment]] say about OAuth?"
    merged = merge_filter_and_search_results(
        FilterRetriever(vault=vault).get_relevant_documents(query),
        TieredLexicalRetriever(vault=vault).invoke(query),
    )
    context = format_local_search_context([*merged.filter_results, *merged.search_results])
    filters, _, rest = context.partition("</filterResults>")
    search = rest.partition("</searchResults>")[0]
    assert "<filterResults>" in filters
    assert "<path>Projects/Alpha/Deployment.md</path>" in filters
    assert "<matchType>title-match</matchType>" in filters
    assert "<searchResults>" in search
    assert "Projects/Alpha/OAuth Setup.md" in search
    assert "Projects/Alpha/Deployment.md" not in search
