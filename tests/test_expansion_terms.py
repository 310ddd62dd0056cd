"""Query terms without an LLM: the reference's §7 fallback table, ported where we agree.

Unlike the original fallback, ours drops stop words and search verbs, and keeps CJK words
as bigrams without particles or pronouns.
"""

from __future__ import annotations

import dataclasses

import pytest

from langchain_vaultsearch.expansion.terms import (
    EMPTY_EXPANSION,
    AsyncQueryExpanderLike,
    ExpandedQuery,
    QueryExpanderLike,
    extract_salient_terms,
    fallback_expansion,
    strip_tags,
)
from langchain_vaultsearch.query_plan import note_mentions

# --------------------------------------------------------------------------- extract_salient_terms


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param(
            "#project project kickoff brief",
            ["project", "kickoff", "brief", "#project"],
            id="standalone-tag-body-kept",
        ),
        pytest.param(
            "test error handling #Tagged",
            ["test", "error", "handling", "#tagged"],
            id="tag-lowercased-last",
        ),
        pytest.param(
            "machine-learning deep-learning",
            ["machine-learning", "machine", "learning", "deep-learning", "deep"],
            id="hyphen-parts",
        ),
        pytest.param("a b cd", ["cd"], id="short-terms-dropped"),
    ],
)
def test_reference_fallback_table_where_we_agree(query: str, expected: list[str]) -> None:
    assert extract_salient_terms(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("find my piano notes", ["piano", "notes"], id="verb-and-pronoun-dropped"),
        pytest.param(
            "status update for #ProjectAlpha #2024/Plan",
            ["status", "update", "#projectalpha", "#2024/plan"],
            id="tag-words-not-plain-terms",
        ),
        pytest.param(
            "#project updates about project deadlines",
            ["updates", "project", "deadlines", "#project"],
            id="about-is-a-stop-word",
        ),
        pytest.param(
            "查找我的学习笔记", ["学习", "习笔", "笔记"], id="cjk-bigrams-without-particles"
        ),
    ],
)
def test_reference_fallback_table_where_we_deliberately_differ(
    query: str, expected: list[str]
) -> None:
    assert extract_salient_terms(query) == expected


def test_cjk_query_excludes_search_verb_and_particles() -> None:
    terms = extract_salient_terms("查找我的学习笔记")
    assert "学习" in terms
    assert "笔记" in terms
    assert "查找" not in terms
    assert not [t for t in terms if "我" in t or "的" in t]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param(
            "日本語のテキストを検索", ["日本", "本語", "テキ", "キス", "スト"], id="japanese"
        ),
        pytest.param("piano 学习笔记", ["piano", "学习", "习笔", "笔记"], id="mixed-scripts"),
        pytest.param("find 学习", ["学习"], id="verb-then-cjk"),
        pytest.param("学习 查找", ["学习"], id="cjk-stop-word"),
        pytest.param("学", ["学"], id="single-cjk-char-kept"),
        pytest.param("我", [], id="single-particle-dropped"),
        pytest.param("我的", [], id="particle-bigram-dropped"),
    ],
)
def test_cjk_terms(query: str, expected: list[str]) -> None:
    assert extract_salient_terms(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("Find the NOTES about Café", ["notes", "café"], id="lowercased-accents-kept"),
        pytest.param("I'm looking for Rust", ["looking", "rust"], id="contraction-stop-word"),
        pytest.param("how to deploy", ["deploy"], id="question-words"),
        pytest.param("der Hund und die Katze", ["hund", "katze"], id="german-stop-words"),
        pytest.param("мои заметки о пианино", ["мои", "заметки", "пианино"], id="cyrillic"),
        pytest.param("what is next.js", ["next.js"], id="dotted-compound-whole"),
        # The original dropped both (single letters); C# and C++ are what the user asks about.
        pytest.param("how do I use C# and c++", ["c#", "c++", "use"], id="language-names-kept"),
        pytest.param("a b c use", ["use"], id="single-letters-dropped"),
        pytest.param("issue #42 fix", ["issue", "42", "fix"], id="issue-number-is-a-word"),
        pytest.param("_private_ notes", ["private", "notes"], id="edge-underscores-trimmed"),
        pytest.param("notes notes Notes", ["notes"], id="deduplicated"),
        pytest.param("the-end", ["the-end", "end"], id="stop-word-part-dropped"),
        pytest.param("end-", ["end"], id="trailing-hyphen"),
        pytest.param("mix of #tag and #TAG", ["mix", "#tag"], id="tags-deduplicated"),
        pytest.param("find #", [], id="bare-hash"),
        pytest.param("   ", [], id="blank"),
        pytest.param(
            "¿Qué es la normalización de bases de datos?",
            ["es", "normalización", "bases", "datos"],  # `es`: ES modules
            id="spanish-question-words",
        ),
        pytest.param(
            "Quale modello di classificazione usare per le immagini?",
            ["modello", "di", "classificazione", "usare", "immagini"],
            id="italian-question-words",
        ),
        pytest.param(
            "Pourquoi la sauvegarde échoue-t-elle?",
            ["sauvegarde", "échoue-t-elle", "échoue"],
            id="french",
        ),
        # Function words of one language that are words of English notes stay terms.
        pytest.param(
            "DI container CI vi AI OS em DoS NAS comment man",
            ["di", "container", "ci", "vi", "ai", "os", "em", "dos", "nas", "comment", "man"],
            id="english-words-kept",
        ),
        pytest.param(
            "dal recipe tai chi dove SI hay fever aux par DEI NA es uno ces non ho come",
            [
                *("dal", "recipe", "tai", "chi", "dove", "si", "hay", "fever", "aux", "par"),
                *("dei", "na", "es", "uno", "ces", "non", "ho", "come"),
            ],
            id="more-english-words-kept",
        ),
    ],
)
def test_salient_terms(query: str, expected: list[str]) -> None:
    assert extract_salient_terms(query) == expected


def test_mentions_contribute_their_words_heading_and_alias() -> None:
    assert extract_salient_terms("[[Piano Lessons#Scales|scales]] practice") == [
        "piano",
        "lessons",
        "scales",
        "practice",
    ]


def test_cjk_tag_removed_from_words() -> None:
    assert extract_salient_terms("跟进 #项目/测试 笔记") == ["跟进", "笔记", "#项目/测试"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("#pro and #project", ["#pro", "#project"], id="prefix-tag-first"),
        pytest.param(
            "#project #project/alpha", ["#project", "#project/alpha"], id="parent-tag-first"
        ),
    ],
)
def test_shorter_tag_does_not_eat_a_longer_one(query: str, expected: list[str]) -> None:
    assert extract_salient_terms(query) == expected


def test_longer_tag_first_leaves_no_fragment() -> None:
    assert extract_salient_terms("#project and #pro") == ["#project", "#pro"]


@pytest.mark.parametrize(
    ("min_length", "expected"),
    [
        (1, ["x", "ai", "ethics", "学", "笔记"]),
        (2, ["ai", "ethics", "学", "笔记"]),
        (3, ["ethics", "学", "笔记"]),
    ],
)
def test_min_length_applies_to_words_not_cjk(min_length: int, expected: list[str]) -> None:
    assert extract_salient_terms("x ai ethics 学 笔记", min_length) == expected
    assert fallback_expansion("x ai ethics 学 笔记", min_length).salient_terms == tuple(expected)


def test_strip_tags_blanks_only_the_given_whole_tags() -> None:
    text = "deploy #project/alpha and #pro, not #project/beta"
    assert strip_tags(text, ["#project/alpha", "#pro"]).split() == [
        "deploy",
        "and",
        ",",
        "not",
        "#project/beta",
    ]


# --------------------------------------------------------------------------- fallback_expansion


def test_fallback_expansion_trims_and_uses_query_for_recall() -> None:
    expanded = fallback_expansion("  Find my Piano notes  ")
    assert expanded == ExpandedQuery(
        original_query="Find my Piano notes",
        queries=("Find my Piano notes",),
        salient_terms=("piano", "notes"),
        expanded_queries=(),
        expanded_terms=(),
        source="fallback",
    )


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_fallback_expansion_of_blank_query_is_empty(query: str) -> None:
    expanded = fallback_expansion(query)
    assert expanded is EMPTY_EXPANSION
    assert expanded.source == "empty"
    assert expanded.original_query == ""
    assert expanded.queries == ()
    assert expanded.salient_terms == ()
    assert expanded.recall_terms() == []


def test_fallback_expansion_keeps_queries_even_without_salient_terms() -> None:
    expanded = fallback_expansion("我的")
    assert expanded.queries == ("我的",)
    assert expanded.salient_terms == ()
    assert expanded.source == "fallback"


# --------------------------------------------------------------------------- ExpandedQuery


def test_recall_terms_order_lowercase_dedupe_and_blank_dropped() -> None:
    expanded = ExpandedQuery(
        original_query="Q",
        queries=("Q", "Alt One", " "),
        salient_terms=("piano", "q", "  Keys "),
        expanded_queries=("Alt One",),
        expanded_terms=("Keys", " ", "PIANO"),
        source="llm",
    )
    assert expanded.recall_terms() == ["q", "alt one", "keys", "piano"]


def test_to_dict_uses_seed_contract_keys() -> None:
    expanded = ExpandedQuery(
        original_query="piano",
        queries=("piano", "keyboard lessons"),
        salient_terms=("piano",),
        expanded_queries=("keyboard lessons",),
        expanded_terms=("Scales",),
        source="llm",
    )
    assert expanded.to_dict() == {
        "originalQuery": "piano",
        "queries": ["piano", "keyboard lessons"],
        "salientTerms": ["piano"],
        "expandedQueries": ["keyboard lessons"],
        "expandedTerms": ["Scales"],
        "recallTerms": ["piano", "keyboard lessons", "scales"],
        "source": "llm",
    }


def test_to_dict_of_fallback() -> None:
    assert fallback_expansion("find my piano notes").to_dict() == {
        "originalQuery": "find my piano notes",
        "queries": ["find my piano notes"],
        "salientTerms": ["piano", "notes"],
        "expandedQueries": [],
        "expandedTerms": [],
        "recallTerms": ["find my piano notes", "piano", "notes"],
        "source": "fallback",
    }


def test_expanded_query_is_frozen() -> None:
    expanded = fallback_expansion("piano")
    with pytest.raises(dataclasses.FrozenInstanceError):
        expanded.source = "llm"  # type: ignore[misc]


def test_query_expander_protocol_is_runtime_checkable() -> None:
    class Expander:
        def expand(self, query: str) -> ExpandedQuery:
            return fallback_expansion(query)

    class NotAnExpander:
        pass

    class AsyncExpander(Expander):
        async def aexpand(self, query: str) -> ExpandedQuery:
            return fallback_expansion(query)

    assert isinstance(Expander(), QueryExpanderLike)
    assert not isinstance(NotAnExpander(), QueryExpanderLike)
    assert not isinstance(Expander(), AsyncQueryExpanderLike)
    assert isinstance(AsyncExpander(), AsyncQueryExpanderLike)


# --------------------------------------------------------------------------- note_mentions


def test_note_mentions_strip_heading_and_alias_and_dedupe() -> None:
    query = (
        "see [[Piano Lessons#Scales|scales]] and [[Other]] and ![[Embed|x]] "
        "and [[Other]] [[#Heading]] [[ ]]"
    )
    assert note_mentions(query) == ["Piano Lessons", "Other", "Embed"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("no mentions here", []),
        ("[[Folder/Note]]", ["Folder/Note"]),
        ("[[ spaced name ]]", ["spaced name"]),
        ("[[a|b]] [[A]]", ["a", "A"]),
        ("[[unclosed", []),
    ],
)
def test_note_mentions(query: str, expected: list[str]) -> None:
    assert note_mentions(query) == expected
