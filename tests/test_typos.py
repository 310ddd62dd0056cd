"""`fusion.typos`: the query the model embeds, spelt as the lexical side corrected it."""

from __future__ import annotations

from langchain_core.documents import Document

from langchain_vaultsearch.fusion.typos import corrected_query


def matched(*terms: str) -> Document:
    """A lexical result whose matches are the given words, fuzzy ones marked `~`."""
    matches = [
        {"field": "body", "query": term.rstrip("~"), "weight": 1.0, "fuzzy": term.endswith("~")}
        for term in terms
    ]
    return Document(page_content="", metadata={"explanation": {"lexicalMatches": matches}})


def test_the_correction_the_better_result_matched_wins() -> None:
    # 致 (zhi) for 至 or 之: 娱乐至死 is the first result, 爱乐之城 the second.
    first, second = matched("娱乐", "乐至~", "死"), matched("娱乐", "乐之~")
    assert corrected_query("娱乐致死", [first, second]) == "娱乐至死"
    assert corrected_query("娱乐致死", [second, first]) == "娱乐之死"


def test_a_bigram_matched_exactly_or_not_a_slip_stays_as_typed() -> None:
    assert corrected_query("清断食", [matched("轻断~", "断食")]) == "轻断食"
    assert corrected_query("断食", [matched("断食", "轻断~")]) == "断食"
    assert corrected_query("开断食", [matched("轻断~")]) == "开断食"  # kai is not qing
    assert corrected_query("rollbak plan", [matched("rollback~", "plan")]) == "rollback plan"


def test_a_slip_typed_in_traditional_characters_is_corrected_as_the_index_folds_it() -> None:
    # The index holds `轻断` and `断食`; `清斷` is `清断` folded, one character from `轻断`.
    assert corrected_query("清斷食", [matched("轻断~", "断食")]) == "轻断食"
