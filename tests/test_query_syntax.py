"""parse_query: mentions, tags and periods, read once for every part of the package."""

from __future__ import annotations

from datetime import datetime

from langchain_vaultsearch.query_syntax import parse_query

NOW = datetime(2024, 4, 18, 12, 0).astimezone()


def test_a_query_with_all_three() -> None:
    parsed = parse_query(
        "what did [[Sarah Chen|Sarah]] say about #Project/Alpha last week?", now=NOW
    )
    assert parsed.mentions == ("Sarah Chen",)
    assert parsed.tags == ("#project/alpha",)
    assert parsed.time_range is not None
    assert parsed.time_range.label == "last week"
    assert parsed.needs_lexical


def test_plain_question_needs_no_lexical_forcing() -> None:
    parsed = parse_query("how do I speed up slow database lookups?", now=NOW)
    assert parsed == parse_query(parsed.text, now=NOW)
    assert (parsed.mentions, parsed.tags, parsed.time_range) == ((), (), None)
    assert not parsed.needs_lexical


def test_salient_tag_terms_win_over_typed_tags() -> None:
    parsed = parse_query("#meeting notes", salient_terms=["#Ops", "deploy"], now=NOW)
    assert parsed.tags == ("#ops",)
    assert not parse_query("C# and issue#3", now=NOW).tags
