"""Queries of symbols (issue 12, item 6): C# against C++, and emoji."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_vaultsearch import TieredLexicalRetriever
from tests.conftest import write_vault

NOTES = {
    "Languages/C# Notes.md": "# C# Notes\n\nLINQ queries and async streams in C#.\n",
    "Languages/C++ Notes.md": "# C++ Notes\n\nTemplates and RAII in C++.\n",
    "Languages/C Notes.md": "# C Notes\n\nPointers and malloc in C.\n",
    "Launch.md": "# Launch\n\n🚀 checklist for the release, ✅ when done.\n",
    "Garden.md": "# Garden\n\nTomatoes and compost, no rockets here.\n",
}


@pytest.fixture
def retriever(tmp_path: Path) -> TieredLexicalRetriever:
    return TieredLexicalRetriever(vault_path=str(write_vault(tmp_path / "v", NOTES)), k=5)


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("C#", "Languages/C# Notes.md"),
        ("c++", "Languages/C++ Notes.md"),
        ("C# async", "Languages/C# Notes.md"),
        ("templates in C++", "Languages/C++ Notes.md"),
    ],
)
def test_a_language_name_ranks_its_own_note_first(
    retriever: TieredLexicalRetriever, query: str, first: str
) -> None:
    docs = retriever.invoke(query)
    assert docs[0].metadata["path"] == first
    others = [d.metadata["score"] for d in docs[1:] if d.metadata["path"].startswith("Lang")]
    assert all(score < docs[0].metadata["score"] for score in others)


@pytest.mark.parametrize("query", ["🚀", "✅ done", "🚀 checklist"])
def test_an_emoji_query_finds_the_note_with_that_emoji(
    retriever: TieredLexicalRetriever, query: str
) -> None:
    assert retriever.invoke(query)[0].metadata["path"] == "Launch.md"


def test_notes_without_a_body_are_found_by_name_and_tags_below_real_matches(
    tmp_path: Path,
) -> None:
    vault = write_vault(
        tmp_path / "empty",
        {
            "Quarterly Budget.md": "",  # 0 bytes
            "Reading List.md": "---\ntags: [books, someday]\n---\n",  # frontmatter only
            "Budget Review.md": "# Budget review\n\nThe quarterly budget was approved.\n",
            "Other.md": "# Other\n\nNothing to see.\n",
        },
    )
    retriever = TieredLexicalRetriever(vault_path=str(vault), k=5)
    found = [d.metadata["path"] for d in retriever.invoke("quarterly budget")]
    assert found[:2] == ["Budget Review.md", "Quarterly Budget.md"]  # the text match first
    assert retriever.invoke("reading list")[0].metadata["path"] == "Reading List.md"
    by_tag = retriever.invoke("#someday")
    assert [d.metadata["path"] for d in by_tag] == ["Reading List.md"]
    assert by_tag[0].metadata["tags"] == ["#books", "#someday"]
