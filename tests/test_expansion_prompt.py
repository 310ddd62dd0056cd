"""The expansion prompt and the lenient reader of a model's answer (pure functions)."""

from __future__ import annotations

import pytest

from langchain_vaultsearch.expansion.prompt import (
    MAX_EXPANDED_TERMS,
    build_expansion_prompt,
    is_valid_term,
    parse_expansion_response,
)
from langchain_vaultsearch.expansion.terms import ExpandedQuery
from tests.fake_models import PIANO_REPLY


def parse(query: str, response: str, max_variants: int = 3) -> ExpandedQuery | None:
    return parse_expansion_response(query, response, max_variants=max_variants, min_term_length=2)


def parsed(query: str, response: str, max_variants: int = 3) -> ExpandedQuery:
    expansion = parse(query, response, max_variants)
    assert expansion is not None
    return expansion


# --------------------------------------------------------------------------- prompt


def test_prompt_asks_for_the_three_sections_and_quotes_the_query() -> None:
    prompt = build_expansion_prompt("find my piano notes", 3)
    for tag in ("<salient>", "<queries>", "<expanded>", "<term>", "<query>"):
        assert tag in prompt
    assert prompt.rstrip().endswith('Query: "find my piano notes"')
    assert "up to 3 other ways" in prompt
    assert "查找" in prompt  # search verbs of other languages are named as exclusions
    assert "#project/alpha" in prompt  # tags are copied as typed


def test_prompt_without_variants_asks_for_none() -> None:
    prompt = build_expansion_prompt("piano", 0)
    assert "up to 0" not in prompt
    assert "<queries>: leave empty." in prompt


def test_prompt_keeps_a_multiline_query_on_its_line() -> None:
    assert build_expansion_prompt("piano\nnotes", 3).rstrip().endswith('Query: "piano notes"')


# --------------------------------------------------------------------------- well-formed answers


def test_seed_001_piano_example() -> None:
    assert parse("find my piano notes", PIANO_REPLY) == ExpandedQuery(
        original_query="find my piano notes",
        queries=("find my piano notes", "piano lesson notes", "piano practice sheets"),
        salient_terms=("piano", "notes"),
        expanded_queries=("piano lesson notes", "piano practice sheets"),
        expanded_terms=("music", "sheet", "practice", "lesson"),
        source="llm",
    )


def test_seed_001_tag_example_keeps_tags_as_typed() -> None:
    query = "Need to deploy #project/alpha after fixing #mobile-app sync"
    response = (
        "<salient>\n<term>deploy</term>\n<term>sync</term>\n<term>#project/alpha</term>\n"
        "<term>#mobile-app</term>\n</salient>\n<queries>\n<query>deploy project alpha</query>\n"
        "<query>mobile app sync fix</query>\n</queries>\n<expanded>\n<term>release</term>\n"
        "<term>synchronization</term>\n</expanded>"
    )
    expansion = parsed(query, response)
    assert expansion.salient_terms == ("deploy", "sync", "#project/alpha", "#mobile-app")
    assert expansion.expanded_queries == ("deploy project alpha", "mobile app sync fix")
    assert expansion.expanded_terms == ("release", "synchronization")


def test_cjk_salient_terms() -> None:
    response = (
        "<salient><term>学习</term><term>笔记</term></salient>"
        "<queries><query>个人笔记文档</query></queries>"
    )
    expansion = parsed("查找我的学习笔记", response)
    assert expansion.salient_terms == ("学习", "笔记")
    assert expansion.expanded_queries == ("个人笔记文档",)


def test_cjk_stop_words_a_model_writes_in_traditional_characters_are_dropped() -> None:
    response = "<salient><term>查詢</term><term>學習</term><term>什麼</term></salient>"
    assert parsed("查詢學習筆記", response).salient_terms == ("學習",)


def test_seed_003_examples_drop_question_words_and_keep_normalised_names() -> None:
    query = "How do I implement authentication in my Next.js app?"
    response = (
        "<salient><term>authentication</term><term>nextjs</term><term>app</term></salient>"
        "<queries><query>Next.js authentication implementation</query>"
        "<query>NextJS auth setup</query></queries>"
    )
    expansion = parsed(query, response)
    assert expansion.salient_terms == ("authentication", "nextjs", "app")
    assert expansion.queries == (
        query,
        "Next.js authentication implementation",
        "NextJS auth setup",
    )


# --------------------------------------------------------------------------- salient terms


def test_salient_terms_not_in_the_query_only_widen_recall() -> None:
    response = "<salient><term>piano</term><term>music</term><term>notes</term></salient>"
    expansion = parsed("find my piano notes", response)
    assert expansion.salient_terms == ("piano", "notes")
    assert expansion.expanded_terms == ("music",)


def test_words_inside_a_query_tag_are_not_salient_words() -> None:
    response = "<salient><term>alpha</term><term>deploy</term></salient>"
    expansion = parsed("deploy #project/alpha", response)
    assert expansion.salient_terms == ("deploy", "#project/alpha")
    assert expansion.expanded_terms == ("alpha",)


def test_query_tags_are_always_salient_and_lowercased() -> None:
    response = "<salient><term>#Project/Alpha</term><term>status</term></salient>"
    expansion = parsed("status of #Project/Alpha and #ops", response)
    assert expansion.salient_terms == ("#project/alpha", "status", "#ops")


def test_tag_the_query_does_not_have_is_recall_only() -> None:
    response = "<salient><term>deploy</term><term>#release</term></salient>"
    expansion = parsed("deploy #project/alpha", response)
    assert expansion.salient_terms == ("deploy", "#project/alpha")
    assert expansion.expanded_terms == ("#release",)


def test_stop_words_and_search_verbs_are_dropped_even_if_the_model_keeps_them() -> None:
    response = (
        "<salient><term>find</term><term>my</term><term>piano</term><term>查找</term>"
        "<term>我的</term><term>buscar</term></salient>"
    )
    expansion = parsed("find my piano buscar 查找我的", response)
    assert expansion.salient_terms == ("piano",)
    assert expansion.expanded_terms == ()


def test_salient_term_matches_the_query_without_accents_or_case() -> None:
    response = "<salient><term>cafe</term><term>ÉLODIE</term></salient>"
    assert parsed("notes from the Café with Élodie", response).salient_terms == ("cafe", "élodie")


def test_without_valid_salient_terms_the_query_supplies_them() -> None:
    response = "<salient><term>!</term></salient><queries><query>piano lessons</query></queries>"
    expansion = parsed("find my piano notes", response)
    assert expansion.salient_terms == ("piano", "notes")
    assert expansion.expanded_queries == ("piano lessons",)
    assert expansion.source == "llm"


def test_old_terms_block_is_not_salient() -> None:
    # Reference 22.5: `<terms>` is the old format; its terms do not rank.
    response = (
        "<queries><query>piano lesson notes</query><query>piano practice sheets</query></queries>"
        "<terms><term>piano</term><term>notes</term><term>sheet</term><term>music</term></terms>"
    )
    expansion = parsed("find my piano notes", response)
    assert expansion.queries == (
        "find my piano notes",
        "piano lesson notes",
        "piano practice sheets",
    )
    assert expansion.salient_terms == ("piano", "notes")
    assert "sheet" not in expansion.salient_terms
    assert "music" not in expansion.salient_terms


# --------------------------------------------------------------------------- alternative queries


@pytest.mark.parametrize(
    ("max_variants", "expected"),
    [(2, ("test", "v1", "v2")), (3, ("test", "v1", "v2", "v3")), (0, ("test",))],
)
def test_variants_are_capped(max_variants: int, expected: tuple[str, ...]) -> None:
    response = "<queries>" + "".join(f"<query>v{i}</query>" for i in range(1, 6)) + "</queries>"
    expansion = parse("test", response + "<salient><term>test</term></salient>", max_variants)
    assert expansion is not None
    assert expansion.queries == expected
    assert expansion.expanded_queries == expected[1:]


def test_variants_are_trimmed_deduplicated_and_differ_from_the_query() -> None:
    response = (
        "<queries><query>  Piano   lesson\nnotes </query><query>piano LESSON notes</query>"
        '<query>Find my piano notes</query><query>  </query><query>"piano sheets"</query>'
        "</queries>"
    )
    expansion = parsed("find my piano notes", response)
    assert expansion.expanded_queries == ("Piano lesson notes", "piano sheets")


def test_queries_outside_a_queries_section_still_count() -> None:
    # Reference 22.5: the old format put <query> elements in no section.
    expansion = parsed("test2", "<terms></terms><query>old format variant</query>")
    assert expansion.queries == ("test2", "old format variant")
    assert expansion.salient_terms == ("test2",)


def test_queries_and_salient_reference_case() -> None:
    response = "<salient><term>test1</term></salient><queries><query>xml variant</query></queries>"
    expansion = parsed("test1", response)
    assert expansion.queries == ("test1", "xml variant")
    assert expansion.salient_terms == ("test1",)


# --------------------------------------------------------------------------- expanded terms


def test_expanded_terms_are_valid_distinct_and_capped() -> None:
    terms = ["music", "Music", "a", "!", "sheet music", "c++", "keys", "scales", "chords", "tempo"]
    response = (
        "<salient><term>piano</term></salient><expanded>"
        + "".join(f"<term>{t}</term>" for t in terms)
        + "</expanded>"
    )
    expansion = parsed("piano", response)
    assert expansion.expanded_terms == ("music", "sheet", "keys", "scales", "chords")
    assert len(expansion.expanded_terms) == MAX_EXPANDED_TERMS


def test_expanded_terms_repeating_salient_terms_are_dropped() -> None:
    response = (
        "<salient><term>piano</term></salient><expanded><term>piano</term><term>keys</term>"
        "</expanded>"
    )
    assert parsed("piano", response).expanded_terms == ("keys",)


# --------------------------------------------------------------------------- malformed answers


def test_code_fences_and_prose_around_the_xml() -> None:
    response = (
        f"Sure! Here are the terms you asked for:\n```xml\n{PIANO_REPLY}```\nHope this helps."
    )
    assert parse("find my piano notes", response) == parse("find my piano notes", PIANO_REPLY)


def test_sections_in_any_order_and_case() -> None:
    response = (
        "<EXPANDED><Term>music</Term></EXPANDED><Queries><Query>piano lessons</Query></Queries>"
        "<SALIENT><TERM>piano</TERM></SALIENT>"
    )
    expansion = parsed("piano notes", response)
    assert expansion.salient_terms == ("piano",)
    assert expansion.expanded_queries == ("piano lessons",)
    assert expansion.expanded_terms == ("music",)


def test_a_section_missing_its_closing_tag_ends_at_the_next_section() -> None:
    response = (
        "<salient><term>piano</term><term>notes</term>\n<expanded><term>music</term></expanded>"
    )
    expansion = parsed("find my piano notes", response)
    assert expansion.salient_terms == ("piano", "notes")
    assert expansion.expanded_terms == ("music",)


def test_an_unclosed_last_section_runs_to_the_end() -> None:
    expansion = parsed("find my piano notes", "<salient><term>piano</term><term>notes</term>")
    assert expansion.salient_terms == ("piano", "notes")


def test_several_terms_in_one_element_and_duplicates() -> None:
    response = "<salient><term>piano, notes</term><term>Piano</term><term>'notes'</term></salient>"
    assert parsed("find my piano notes", response).salient_terms == ("piano", "notes")


def test_only_the_first_salient_section_counts() -> None:
    response = "<salient><term>piano</term></salient><salient><term>notes</term></salient>"
    assert parsed("find my piano notes", response).salient_terms == ("piano",)


@pytest.mark.parametrize(
    "response",
    [
        pytest.param("", id="empty"),
        pytest.param("   \n", id="blank"),
        pytest.param("piano, notes, music", id="plain-text"),
        pytest.param("<queries></queries><terms></terms>", id="empty-sections"),
        pytest.param("<salient><term>!</term><term>a</term></salient>", id="only-invalid-terms"),
        pytest.param("<queries><query>find my piano notes</query></queries>", id="query-echoed"),
        pytest.param("<terms><term>piano</term></terms>", id="old-terms-only"),
    ],
)
def test_answers_without_usable_xml_give_none(response: str) -> None:
    assert parse("find my piano notes", response) is None


# --------------------------------------------------------------------------- is_valid_term


@pytest.mark.parametrize(
    "term",
    ["piano", "学习", "machine-learning", "next.js", "v1.2", "snake_case", "#project/alpha", "42"],
)
def test_valid_terms(term: str) -> None:
    assert is_valid_term(term, 2)


@pytest.mark.parametrize(
    "term",
    ["!", "a", "c++", "two words", "#123", "project/alpha", "--", "#", ".js", "a.", "#a b"],
)
def test_invalid_terms(term: str) -> None:
    assert not is_valid_term(term, 2)


def test_min_length_applies() -> None:
    assert is_valid_term("ai", 2)
    assert not is_valid_term("ai", 3)
    assert is_valid_term("x", 1)
