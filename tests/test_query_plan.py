"""plan_query: mentions, tags, periods and the route, read once for every part of the package."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from langchain_vaultsearch.query_plan import Available, plan_query, without_carried_tags
from langchain_vaultsearch.time_ranges import parse_time_expression

NOW = datetime(2024, 4, 18, 12, 0).astimezone()
MERGED = Available(semantic=True)


def test_a_query_with_all_three() -> None:
    plan = plan_query("what did [[Sarah Chen|Sarah]] say about #Project/Alpha last week?", now=NOW)
    assert plan.mentions == ("Sarah Chen",)
    assert plan.tags == ("#project/alpha",)
    assert plan.time_range is not None
    assert plan.time_range.label == "last week"
    assert plan.route == "lexical"
    assert plan.limit == 100


def test_plain_question_goes_merged_when_there_is_a_vector_index() -> None:
    plan = plan_query("how do I speed up slow database lookups?", available=MERGED, now=NOW)
    assert (plan.mentions, plan.tags, plan.time_range) == ((), (), None)
    assert (plan.route, plan.limit) == ("merged", 30)
    assert plan_query(plan.query, now=NOW).route == "lexical"
    hybrid = Available(semantic=True, hybrid=True)
    assert plan_query(plan.query, available=hybrid, now=NOW).route == "hybrid"


def test_salient_tag_terms_win_over_typed_tags() -> None:
    plan = plan_query("#meeting notes", salient_terms=["#Ops", "deploy"], now=NOW)
    assert plan.tags == ("#ops",)
    assert plan.salient_terms == ("#Ops", "deploy")
    assert not plan_query("C# and issue#3", now=NOW).tags


def test_a_given_period_is_answered_by_the_filter_alone_when_the_caller_filters() -> None:
    question = "what did I decide?"
    given = plan_query(question, time_range="last week", filtering=True, now=NOW)
    assert given.route == "filter-only"
    assert not given.searches
    # A caller that does not filter has nothing to answer a period with: words as any.
    assert plan_query(question, time_range="last week", available=MERGED, now=NOW).route == (
        "merged"
    )


def test_a_period_read_from_the_words_routes_nothing() -> None:
    # Words are a guess at a period: this question names no period of notes.
    question = "push a task I could not get to today onto tomorrow"
    for filtering in (True, False):
        plan = plan_query(question, available=MERGED, filtering=filtering, now=NOW)
        assert plan.time_range is not None
        assert plan.time_range.label == "today"
        assert (plan.route, plan.decided_by_query, plan.limit) == ("merged", False, 100)
        assert plan.searches
    assert plan_query(question, filtering=True, now=NOW).route == "lexical"
    assert plan_query(question, read_period=False, now=NOW).time_range is None


def test_a_given_period_replaces_the_one_the_query_names() -> None:
    march = parse_time_expression("2024-03", NOW)
    plan = plan_query("notes from last week", time_range="2024-03", now=NOW)
    assert plan.time_range == march
    with pytest.raises(ValueError, match="Unable to parse"):
        plan_query("anything", time_range="the day after never")


def test_an_asked_mode_wins_over_tags_but_not_over_the_filter() -> None:
    assert plan_query("#ops", mode="semantic", available=MERGED).route == "semantic"
    assert plan_query("#ops", available=MERGED).route == "merged"  # filtered, merged-ranked
    given = plan_query("what happened", mode="merged", time_range="last week", filtering=True)
    assert given.route == "filter-only"
    assert plan_query("what happened last week", mode="semantic", filtering=True).route == (
        "semantic"
    )


def test_self_host_is_asked_only_when_the_plan_would_search() -> None:
    calls: list[int] = []

    def healthy() -> bool:
        calls.append(1)
        return True

    available = Available(semantic=True, self_host=healthy)
    assert plan_query("#ops", available=available).route == "merged"  # it cannot filter tags
    given = plan_query(
        "what changed", available=available, time_range="last week", filtering=True, now=NOW
    )
    assert given.route == "filter-only"
    assert calls == []
    assert plan_query("what is auth", available=available).route == "self-host"
    assert calls == [1]


def test_the_query_is_cut_before_anything_reads_it() -> None:
    # A period beyond the first 1,000 characters is not read, and a huge query stays cheap.
    plan = plan_query("word " * 300 + "last week", now=NOW)
    assert plan.time_range is None
    assert len(plan.query) <= 1000
    start = time.perf_counter()
    plan_query("word " * 200_000 + "[[Far Note]] last week", now=NOW)
    assert time.perf_counter() - start < 5.0


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="query must be a string"):
        plan_query(42)
    with pytest.raises(ValueError, match="k must be between 1 and 100"):
        plan_query("x", k=0)
    with pytest.raises(ValueError, match="mode must be one of"):
        plan_query("x", mode="fuzzy")  # type: ignore[arg-type]
    assert plan_query(None).query == ""


def test_a_tag_no_note_carries_is_a_word_not_a_filter() -> None:
    carried = {"#project", "#project/alpha"}
    available = Available(semantic=True, tag_carried=carried.__contains__)
    plan = plan_query("how do #nested tags work?", available=available, now=NOW)
    assert plan.tags == ()
    assert (plan.route, plan.limit, plan.decided_by_query) == ("merged", 30, False)
    tagged = plan_query("deploy notes #project/alpha", available=available, now=NOW)
    assert tagged.tags == ("#project/alpha",)
    # A carried tag filters: its notes ranked by the merged score, all of them asked for.
    assert (tagged.route, tagged.limit, tagged.decided_by_query) == ("merged", 100, False)
    lexical_only = plan_query("deploy notes #project/alpha", now=NOW)
    assert (lexical_only.route, lexical_only.decided_by_query) == ("lexical", False)


@pytest.mark.parametrize(
    ("text", "tags", "embedded"),
    [
        ("#Multithreading attesa attiva", ("#multithreading",), "attesa attiva"),
        ("deploys #project/alpha  now", ("#project/alpha",), "deploys now"),
        ("#project/alpha/ deploys", ("#project/alpha",), "deploys"),  # a trailing slash
        ("#ops #draft deploys", ("#ops",), "#draft deploys"),  # only the tags that filter
        ("#project deploys", ("#project/alpha",), "#project deploys"),  # a parent is another tag
        ("C# deploys #ops", ("#ops",), "C# deploys"),  # `C#` is no tag
        ("#ops", ("#ops",), "#ops"),  # nothing else to rank by
        ("#ops deploys", (), "#ops deploys"),
    ],
)
def test_the_model_reads_the_query_without_the_tags_that_filter(
    text: str, tags: tuple[str, ...], embedded: str
) -> None:
    assert without_carried_tags(text, tags) == embedded


def test_every_reader_of_mentions_and_tags_reads_the_first_1000_characters(
    vault_dir: Path,
) -> None:
    from langchain_vaultsearch import TieredLexicalRetriever
    from langchain_vaultsearch.fusion.asked_first import named_notes
    from langchain_vaultsearch.limits import MAX_QUERY_CHARS
    from langchain_vaultsearch.query_plan import note_mentions, tag_filters
    from langchain_vaultsearch.vault.vault import Vault

    padding = "zzqq " * (MAX_QUERY_CHARS // 5 + 20)
    late = f"{padding}[[OAuth Setup]] #oauth"
    early = "[[OAuth Setup]] #oauth"
    plan = plan_query(late)
    assert not plan.mentions
    assert not plan.tags
    assert note_mentions(late) == []
    assert tag_filters(late, None) == ()
    vault = Vault(vault_dir, watch=False)
    assert named_notes(late, vault) == frozenset()
    lexical = TieredLexicalRetriever(vault=vault, k=5)
    assert all("OAuth Setup" not in doc.metadata["path"] for doc in lexical.invoke(late))
    # The same words within the first 1,000 characters are read everywhere.
    assert note_mentions(early) == ["OAuth Setup"]
    assert tag_filters(early, None) == ("#oauth",)
    assert lexical.invoke(early)[0].metadata["path"] == "Projects/Alpha/OAuth Setup.md"


def test_an_input_methods_full_width_mention_and_tag_are_read_as_typed_in_ascii(
    vault_dir: Path,
) -> None:
    from langchain_vaultsearch import TieredLexicalRetriever
    from langchain_vaultsearch.fusion.asked_first import named_notes
    from langchain_vaultsearch.vault.vault import Vault

    full_width = "【【OAuth Setup】】 ＃oauth"
    plan = plan_query(full_width)
    assert plan.mentions == ("OAuth Setup",)
    assert plan.tags == ("#oauth",)
    vault = Vault(vault_dir, watch=False)
    lexical = TieredLexicalRetriever(vault=vault, k=5)
    assert lexical.invoke(full_width)[0].metadata["path"] == "Projects/Alpha/OAuth Setup.md"
    assert named_notes(full_width, vault) == frozenset({"Projects/Alpha/OAuth Setup.md"})
    # One 【 is a bracket, not a link.
    assert plan_query("【OAuth Setup】").mentions == ()
