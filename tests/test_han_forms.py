"""Traditional and simplified Chinese find each other: folded alike, shown as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_vaultsearch import TieredLexicalRetriever
from langchain_vaultsearch.chinese_periods import english_periods
from langchain_vaultsearch.expansion.terms import extract_salient_terms
from langchain_vaultsearch.search import scan_recall as scan_recall_module
from langchain_vaultsearch.search.scan_recall import ScanRecall
from langchain_vaultsearch.text.han_forms import fold_han, spellings, table_version
from langchain_vaultsearch.vault.vault import Vault
from tests.conftest import write_vault

NOTES = {
    "学习方法.md": "# 学习方法\n\n费曼技巧：用简单的话讲给别人听。\n",
    "讀書筆記.md": "# 讀書筆記\n\n這本書講時間管理。\n",
    "购物清单.md": "# 购物清单\n\n牛奶和面包。\n",
    "旅行計劃.md": "十月去京都。\n",  # named only in its file name
}


def test_traditional_characters_fold_to_simplified_and_others_stay() -> None:
    assert fold_han("學習筆記，後來的發展") == "学习笔记，后来的发展"
    simplified = "学习笔记 English ελλάδα 日本の"
    assert fold_han(simplified) is simplified  # nothing to fold: the same string
    assert fold_han("ひらがな 한국어") == "ひらがな 한국어"
    assert table_version()[0].isdigit()


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("學習方法", "学习方法.md"),  # traditional question, simplified note
        ("读书笔记", "讀書筆記.md"),  # simplified question, traditional note
        ("時間管理", "讀書筆記.md"),  # traditional on both sides still matches
        ("购物清單", "购物清单.md"),  # a question that mixes both forms
    ],
)
def test_a_question_in_either_form_finds_notes_in_the_other(
    tmp_path: Path, query: str, found: str
) -> None:
    root = write_vault(tmp_path / "v", NOTES)
    docs = TieredLexicalRetriever(vault_path=str(root), k=3).invoke(query)
    assert [doc.metadata["path"] for doc in docs][:1] == [found]
    assert NOTES[found].strip() in docs[0].page_content  # the text is shown as written


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("學習", "学习方法.md"),
        ("读书", "讀書筆記.md"),
        ("費曼", "学习方法.md"),
        ("时间", "讀書筆記.md"),
        ("计划", "旅行計劃.md"),
    ],
    ids=["title", "traditional title", "text", "traditional text", "traditional name"],
)
def test_the_scan_before_the_first_index_folds_alike(
    tmp_path: Path, query: str, found: str
) -> None:
    scan = ScanRecall(Vault(write_vault(tmp_path / "v", NOTES), watch=False))
    assert [path for path, _score in scan.candidates([query], 5)] == [found]


def test_the_scan_checks_a_word_in_one_note_in_every_spelling() -> None:
    # Where a word is checked only in the notes another word found (`_Needle.holds`).
    text = "這本書講時間管理".encode()
    assert scan_recall_module._Needle("时间").holds(text, 0, len(text))
    assert not scan_recall_module._Needle("时光").holds(text, 0, len(text))
    assert spellings("发展") == ["发展", "發展", "髮展"]


def test_folding_is_one_step_and_the_scan_spells_what_the_index_folds() -> None:
    # OpenCC's table chains `薴` to `苧`, which it folds to `苎`.
    assert fold_han("薴苧") == "苎苎" == fold_han(fold_han("薴苧"))
    assert {fold_han(spelling) for spelling in spellings("苎麻")} == {"苎麻"}


def test_a_word_finds_a_note_tagged_with_it_in_the_other_form(tmp_path: Path) -> None:
    root = write_vault(
        tmp_path / "v",
        {
            "inline.md": "# A\n\n#學習 today\n",
            "front.md": "---\ntags: [測試]\n---\n# B\n\nnothing here\n",
            "other.md": "# C\n\nunrelated\n",
        },
    )
    retriever = TieredLexicalRetriever(vault_path=str(root), k=3)
    for query, found in [("学习", "inline.md"), ("學習", "inline.md"), ("测试", "front.md")]:
        assert [doc.metadata["path"] for doc in retriever.invoke(query)] == [found], query


def test_a_tag_is_matched_as_written_by_the_scan_too(tmp_path: Path) -> None:
    notes = {"trad.md": "#學 one\n", "simp.md": "#学 two\n"}
    scan = ScanRecall(Vault(write_vault(tmp_path / "v", notes), watch=False))
    assert [path for path, _score in scan.candidates(["#学"], 5)] == ["simp.md"]


def test_stop_words_in_traditional_characters_are_dropped_and_terms_kept_as_typed() -> None:
    # `們` of `我們` (we) and `查詢` (look up) carry no topic, as `们` and `查询` do not.
    terms = extract_salient_terms("我們查詢學習方法")
    assert terms == ["詢學", "學習", "習方", "方法"]
    assert [fold_han(term) for term in terms] == extract_salient_terms("我们查询学习方法")


def test_a_period_in_traditional_characters_is_read_and_labelled_as_typed() -> None:
    assert english_periods("上週寫了什麼") == (" last week 寫了什麼", {"last week": "上週"})
    assert english_periods("過去7天") == (" last 7 days ", {"last 7 days": "過去7天"})
