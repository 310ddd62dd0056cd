"""TieredLexicalRetriever end to end over real files."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from langchain_vaultsearch import TieredLexicalRetriever, Vault
from langchain_vaultsearch.fusion.typos import covers
from langchain_vaultsearch.search import core as core_module
from langchain_vaultsearch.search.lexical_index import IndexPolicy
from tests.conftest import SAMPLE_VAULT, write_vault

CONTRACT_KEYS = {
    "path",
    "title",
    "chunkId",
    "score",
    "rerank_score",
    "source",
    "includeInContext",
    "mtime",
    "ctime",
    "tags",
    "engine",
    "isChunk",
    "explanation",
}


def paths(docs: list[Document]) -> list[str]:
    return [d.metadata["path"] for d in docs]


def test_documents_carry_the_metadata_contract(vault_dir: Path) -> None:
    docs = TieredLexicalRetriever(vault_path=str(vault_dir)).invoke("OAuth deploy")
    assert docs
    top = docs[0]
    assert set(top.metadata) >= CONTRACT_KEYS
    assert top.id == top.metadata["chunkId"]
    assert top.metadata["chunkId"].startswith(top.metadata["path"] + "#")
    assert top.metadata["source"] == "lexical"
    assert top.metadata["isChunk"] is True
    assert top.page_content.startswith("\n\nNOTE TITLE: [[")
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert all(0.02 <= s <= 0.98 for s in scores)
    json.dumps([d.metadata for d in docs])  # JSON-serialisable


def test_title_and_tag_hits_rank_first(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    assert paths(retriever.invoke("OAuth Next.js"))[0] == "Projects/Alpha/OAuth Setup.md"
    tagged = paths(retriever.invoke("#project/alpha"))
    assert tagged[0] == "Projects/Alpha/Deployment.md"
    assert "Projects/Beta/Notes.md" not in tagged


def test_k_in_constructor_and_per_call(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir), k=1)
    assert len(retriever.invoke("OAuth")) == 1
    assert len(retriever.invoke("OAuth", k=3)) == 3
    with pytest.raises(ValueError, match="k must be between 1 and 100"):
        retriever.invoke("OAuth", k=0)
    with pytest.raises(ValidationError):
        TieredLexicalRetriever(vault_path=str(vault_dir), k=101)


async def test_ainvoke_honours_k(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    docs = await retriever.ainvoke("OAuth", k=2)
    assert len(docs) == 2
    assert docs == retriever.invoke("OAuth", k=2)


def test_batch_returns_one_list_per_query(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    first, second = retriever.batch(["zeppelin", "xylophone"])
    assert paths(first) == ["Crlf.md"]
    assert paths(second) == ["Broken.md"]


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_blank_query_returns_nothing(vault_dir: Path, query: str) -> None:
    assert TieredLexicalRetriever(vault_path=str(vault_dir)).invoke(query) == []


@pytest.mark.parametrize("query", ["the of and", "?!... ---", "a", "how do i"])
def test_stop_words_or_punctuation_never_raise(vault_dir: Path, query: str) -> None:
    docs = TieredLexicalRetriever(vault_path=str(vault_dir)).invoke(query)
    assert isinstance(docs, list)


def test_huge_query_is_clamped(vault_dir: Path) -> None:
    query = "zeppelin " + "x" * 50_000
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    assert paths(retriever.invoke(query)) == ["Crlf.md"]
    expansion = retriever.last_query_expansion
    assert expansion is not None
    assert len(expansion.original_query) <= 1000


def test_missing_vault_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ValueError, match=str(missing)):
        TieredLexicalRetriever(vault_path=str(missing))
    with pytest.raises(ValueError, match="vault_path or vault"):
        TieredLexicalRetriever()


def test_empty_vault_returns_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert TieredLexicalRetriever(vault_path=str(tmp_path / "empty")).invoke("anything") == []


def test_hidden_folders_are_skipped(vault_dir: Path) -> None:
    found = paths(TieredLexicalRetriever(vault_path=str(vault_dir), k=50).invoke("OAuth"))
    assert found
    assert not any(p.startswith((".obsidian", ".trash")) for p in found)


def test_crlf_broken_yaml_and_hash_names_are_searchable(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    with caplog.at_level(logging.WARNING):
        assert paths(retriever.invoke("xylophone")) == ["Broken.md"]
    assert any("Broken.md" in r.getMessage() for r in caplog.records)
    assert paths(retriever.invoke("carriage returns")) == ["Crlf.md"]
    docs = retriever.invoke("LINQ async streams")
    assert docs[0].metadata["path"] == "C# Notes.md"
    assert docs[0].id == "C# Notes.md#0"
    assert "LINQ" in docs[0].page_content


def test_cjk_query_finds_cjk_note(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    assert paths(retriever.invoke("查找我的学习笔记"))[0] == "学习笔记.md"
    assert paths(retriever.invoke("分支"))[0] == "学习笔记.md"


def test_frontmatter_values_and_aliases_are_searchable(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    assert paths(retriever.invoke("Alice Example"))[0] == "Projects/Alpha/OAuth Setup.md"
    assert paths(retriever.invoke("login guide"))[0] == "Projects/Alpha/OAuth Setup.md"


def test_mentions_become_salient_terms(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    docs = retriever.invoke("what did we decide in [[Deployment#Rollback|the deploy note]]?")
    assert docs[0].metadata["path"] == "Projects/Alpha/Deployment.md"
    expansion = retriever.last_query_expansion
    assert expansion is not None
    assert expansion.source == "fallback"


def test_sees_added_changed_renamed_and_deleted_notes(
    vault_dir: Path, touch: Callable[[Path, str, int], None]
) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    assert retriever.invoke("quokka") == []
    touch(vault_dir / "New.md", "A quokka appeared.", 10)
    assert paths(retriever.invoke("quokka")) == ["New.md"]
    touch(vault_dir / "New.md", "Now it is about wombats.", 20)
    assert retriever.invoke("quokka") == []
    assert paths(retriever.invoke("wombats")) == ["New.md"]
    os.rename(vault_dir / "New.md", vault_dir / "Renamed.md")
    assert paths(retriever.invoke("wombats")) == ["Renamed.md"]
    (vault_dir / "Renamed.md").unlink()
    assert retriever.invoke("wombats") == []


def test_exclusions_and_inclusions(vault_dir: Path) -> None:
    excluded = TieredLexicalRetriever(vault_path=str(vault_dir), exclusions=["Projects/Alpha"])
    assert not any(p.startswith("Projects/Alpha/") for p in paths(excluded.invoke("OAuth")))
    included = TieredLexicalRetriever(vault_path=str(vault_dir), inclusions="#meeting")
    assert paths(included.invoke("OAuth")) == ["Daily/2024-03-05.md"]


def test_non_utf8_bytes_and_oversized_notes(tmp_path: Path) -> None:
    root = write_vault(
        tmp_path / "v",
        {"Latin1.md": b"caf\xe9 and a narwhal\n", "Big.md": "narwhal " * 200},
    )
    vault = Vault(root, max_note_bytes=1000)
    docs = TieredLexicalRetriever(vault=vault).invoke("narwhal")
    assert paths(docs) == ["Latin1.md"]
    assert "\ufffd" in docs[0].page_content


def test_symlinks_leaving_the_vault_are_skipped(tmp_path: Path) -> None:
    outside = write_vault(tmp_path / "outside", {"Secret.md": "platypus secret"})
    root = write_vault(tmp_path / "v", {"Inside.md": "platypus inside"})
    os.symlink(outside / "Secret.md", root / "Link.md")
    os.symlink(outside, root / "LinkedFolder")
    docs = TieredLexicalRetriever(vault_path=str(root)).invoke("platypus")
    assert paths(docs) == ["Inside.md"]


def test_pipeline_failure_falls_back_to_recall(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_args: object, **_kwargs: object) -> list[object]:
        raise RuntimeError("index exploded")

    monkeypatch.setattr(core_module, "rank_chunks", broken)
    with caplog.at_level(logging.ERROR):
        docs = TieredLexicalRetriever(vault_path=str(vault_dir)).invoke("zeppelin")
    assert paths(docs) == ["Crlf.md"]
    assert docs[0].metadata["engine"] == "grep"
    assert "falling back" in caplog.text


def test_lowest_result_stays_in_context_when_close(vault_dir: Path) -> None:
    docs = TieredLexicalRetriever(vault_path=str(vault_dir)).invoke("OAuth")
    assert len(docs) >= 2
    assert docs[-1].metadata["score"] == pytest.approx(0.02)
    # min-max puts the last hit at 0.02, but its raw score decides inclusion (DESIGN 6).
    raw = [d.metadata["explanation"]["baseScore"] for d in docs]
    expected = [r >= 0.1 * max(raw) for r in raw]
    assert [d.metadata["includeInContext"] for d in docs] == expected
    assert docs[-1].metadata["includeInContext"] is (raw[-1] >= 0.1 * raw[0])


def test_min_similarity_zero_keeps_everything(vault_dir: Path) -> None:
    docs = TieredLexicalRetriever(vault_path=str(vault_dir), min_similarity_score=0).invoke("OAuth")
    assert docs
    assert all(d.metadata["includeInContext"] for d in docs)


def test_explanation_names_matched_fields(vault_dir: Path) -> None:
    docs = TieredLexicalRetriever(vault_path=str(vault_dir)).invoke("#project/alpha deploy")
    explanation = docs[0].metadata["explanation"]
    fields = {m["field"] for m in explanation["lexicalMatches"]}
    assert {"tags", "body"} <= fields
    assert explanation["finalScore"] == docs[0].metadata["score"]
    assert explanation["baseScore"] > 0


def test_one_long_note_does_not_crowd_out_other_notes(tmp_path: Path) -> None:
    sections = "".join(
        f"## Part {i}\n\n" + f"OAuth detail number {i}. " * 60 + "\n\n" for i in range(40)
    )
    notes: dict[str, str | bytes] = {"Long Guide.md": "# OAuth guide\n\n" + sections}
    notes.update(
        {f"Short {i}.md": f"A short note that mentions OAuth once ({i})." for i in range(4)}
    )
    root = write_vault(tmp_path / "v", notes)
    docs = TieredLexicalRetriever(vault_path=str(root), k=5).invoke("oauth")
    assert len(docs) == 5
    assert len(set(paths(docs))) == 5
    assert paths(docs)[0] == "Long Guide.md"


def test_a_chinese_slip_by_sound_finds_the_note_and_says_which_bigram_it_matched(
    tmp_path: Path,
) -> None:
    root = write_vault(
        tmp_path / "v",
        {
            "168轻断食.md": "# 168轻断食\n\n每天八小时内进食。\n",
            "断食的历史.md": "# 断食的历史\n\n宗教里的断食。\n",
            "清单.md": "# 清单\n\n购物清单。\n",
        },
    )
    top = TieredLexicalRetriever(vault_path=str(root), k=3).invoke("清断食")[0]
    assert top.metadata["path"] == "168轻断食.md"
    matches = top.metadata["explanation"]["lexicalMatches"]
    assert {m["query"] for m in matches if m.get("fuzzy")} == {"轻断"}
    assert covers({"query": "轻断", "fuzzy": True}, "清断")  # counts toward coverage
    assert not covers({"query": "轻断", "fuzzy": True}, "开断")


def test_a_misspelt_query_finds_the_note_and_says_which_word_it_matched() -> None:
    retriever = TieredLexicalRetriever(vault_path=str(SAMPLE_VAULT), k=5)
    for query in ("postgres indxing", "indxing strategies"):
        top = retriever.invoke(query)[0]
        assert top.metadata["path"] == "Engineering/PostgreSQL Indexing.md", query
        fuzzy = [m for m in top.metadata["explanation"]["lexicalMatches"] if m.get("fuzzy")]
        assert {m["query"] for m in fuzzy} == {"indexing"}


def test_a_tag_no_note_carries_searches_its_words(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    # No note is tagged #tomatoes or #gardening; one note is about them.
    for query in ("#tomatoes", "#gardening/tomatoes"):
        paths = [doc.metadata["path"] for doc in retriever.invoke(query)]
        assert paths[:1] == ["Projects/Beta/Notes.md"], query
    # A tag notes carry is still a tag: the note that only says "piano" in its tag.
    tagged = [doc.metadata["path"] for doc in retriever.invoke("#music")]
    assert tagged == ["Piano/Lesson 1.md"]


async def test_a_tag_no_note_carries_searches_its_words_async(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir))
    found = await retriever.ainvoke("#tomatoes", salient_terms=["#tomatoes"])
    assert [doc.metadata["path"] for doc in found][:1] == ["Projects/Beta/Notes.md"]


SCANNING = IndexPolicy(background_build_notes=1, build_in_background=False)
"""A vault that scans for good: which tags notes carry is never known."""


async def test_a_tag_no_note_carries_searches_its_words_while_the_first_index_builds(
    vault_dir: Path,
) -> None:
    retriever = TieredLexicalRetriever(
        vault_path=str(vault_dir), index_policy=SCANNING, persist_index=False
    )
    found = retriever.invoke("#tomatoes")
    assert not retriever.index_ready
    assert [doc.metadata["path"] for doc in found][:1] == ["Projects/Beta/Notes.md"]
    found = await retriever.ainvoke("#tomatoes", salient_terms=["#tomatoes"])
    assert [doc.metadata["path"] for doc in found][:1] == ["Projects/Beta/Notes.md"]
    # A tag a note carries is still a tag: the note that only says "piano" in its tag.
    assert [doc.metadata["path"] for doc in retriever.invoke("#music")] == ["Piano/Lesson 1.md"]
