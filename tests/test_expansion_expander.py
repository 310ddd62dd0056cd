"""QueryExpander with fake chat models: answers, failures, deadlines, cache."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from types import SimpleNamespace

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage

from langchain_vaultsearch import QueryExpander
from langchain_vaultsearch.expansion import expander as expander_module
from langchain_vaultsearch.expansion.terms import (
    EMPTY_EXPANSION,
    AsyncQueryExpanderLike,
    QueryExpanderLike,
    fallback_expansion,
)
from tests.fake_models import PIANO_REPLY, ScriptedChatModel, StubbornChatModel

PIANO_QUERY = "find my piano notes"
# Room for thread start-up and a loaded two-core machine; the slow fakes sleep far longer.
DEADLINE_MARGIN_S = 0.5


def scripted(
    *responses: str, sleep: float | None = None, error: Exception | None = None
) -> ScriptedChatModel:
    return ScriptedChatModel(responses=list(responses), sleep=sleep, error=error)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


# --------------------------------------------------------------------------- answers


def test_piano_example_of_seed_001() -> None:
    expanded = QueryExpander(scripted(PIANO_REPLY)).expand(PIANO_QUERY)
    assert expanded.source == "llm"
    assert expanded.salient_terms == ("piano", "notes")
    assert expanded.queries == (PIANO_QUERY, "piano lesson notes", "piano practice sheets")
    assert expanded.expanded_terms == ("music", "sheet", "practice", "lesson")
    assert expanded.recall_terms() == [
        PIANO_QUERY,
        "piano lesson notes",
        "piano practice sheets",
        "music",
        "sheet",
        "practice",
        "lesson",
        "piano",
        "notes",
    ]


def test_cjk_query() -> None:
    reply = (
        "<salient><term>查找</term><term>学习</term><term>笔记</term></salient>"
        "<queries><query>个人笔记文档</query></queries>"
    )
    expanded = QueryExpander(scripted(reply)).expand("查找我的学习笔记")
    assert expanded.source == "llm"
    assert expanded.salient_terms == ("学习", "笔记")
    assert expanded.queries == ("查找我的学习笔记", "个人笔记文档")


def test_tags_are_kept_as_typed() -> None:
    reply = (
        "<salient><term>#project/alpha</term><term>bugfix</term></salient>"
        "<expanded><term>fix</term><term>issue</term><term>patch</term></expanded>"
    )
    expanded = QueryExpander(scripted(reply)).expand("#project/alpha bugfix")
    assert expanded.salient_terms == ("#project/alpha", "bugfix")
    assert expanded.expanded_terms == ("fix", "issue", "patch")


def test_reference_case_empty_sections_fall_back_keeping_tags_whole() -> None:
    query = "status update for #ProjectAlpha #2024/Plan"
    expanded = QueryExpander(scripted("<queries></queries><terms></terms>")).expand(query)
    assert expanded.source == "fallback"
    assert {"#projectalpha", "#2024/plan"} <= set(expanded.salient_terms)
    assert "projectalpha" not in expanded.salient_terms
    assert "2024/plan" not in expanded.salient_terms


def test_query_is_trimmed_before_it_reaches_the_model() -> None:
    expanded = QueryExpander(scripted(PIANO_REPLY)).expand(f"  {PIANO_QUERY}\n")
    assert expanded.original_query == PIANO_QUERY
    assert expanded.queries[0] == PIANO_QUERY


def test_text_from_content_blocks_is_read() -> None:
    message = AIMessage(content=[{"type": "text", "text": PIANO_REPLY}])
    model = FakeMessagesListChatModel(responses=[message])
    assert QueryExpander(model).expand(PIANO_QUERY).source == "llm"


def test_max_variants_caps_the_model_s_variants() -> None:
    reply = "<queries>" + "".join(f"<query>variant{i}</query>" for i in range(1, 6)) + "</queries>"
    expanded = QueryExpander(scripted(reply), max_variants=2).expand("test")
    assert expanded.queries == ("test", "variant1", "variant2")


def test_min_term_length_applies_to_model_and_fallback_terms() -> None:
    reply = "<salient><term>ai</term><term>ethics</term></salient>"
    assert QueryExpander(scripted(reply), min_term_length=3).expand("ai ethics").salient_terms == (
        "ethics",
    )
    assert QueryExpander(None, min_term_length=3).expand("ai ethics").salient_terms == ("ethics",)


# --------------------------------------------------------------------------- fallback paths


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("", id="empty"),
        pytest.param("Sorry, I can't help with that.", id="plain-text"),
        pytest.param("<salient><term>!</term><term>a</term></salient>", id="invalid-terms"),
    ],
)
def test_unusable_answers_fall_back(reply: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=expander_module.__name__):
        expanded = QueryExpander(scripted(reply)).expand("typescript interfaces")
    assert expanded == fallback_expansion("typescript interfaces")
    assert expanded.source == "fallback"
    assert expanded.queries == ("typescript interfaces",)
    assert "without the expected XML" in caplog.text


def test_empty_message_content_falls_back() -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage(content=[])])
    assert QueryExpander(model).expand(PIANO_QUERY).source == "fallback"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("#project project kickoff brief", {"#project", "project", "kickoff", "brief"}),
        ("#project updates about project deadlines", {"#project", "updates", "deadlines"}),
        ("test error handling #Tagged", {"test", "error", "handling", "#tagged"}),
    ],
)
def test_model_error_falls_back(
    query: str, expected: set[str], caplog: pytest.LogCaptureFixture
) -> None:
    model = scripted(PIANO_REPLY, error=RuntimeError("rate limited"))
    with caplog.at_level(logging.WARNING, logger=expander_module.__name__):
        expanded = QueryExpander(model).expand(query)
    assert expanded.source == "fallback"
    assert expanded.queries == (query,)
    assert expected <= set(expanded.salient_terms)
    assert "RuntimeError: rate limited" in caplog.text


def test_without_a_model_the_fallback_is_used() -> None:
    expanded = QueryExpander(None).expand("machine-learning deep-learning")
    assert expanded.source == "fallback"
    assert expanded.salient_terms == (
        "machine-learning",
        "machine",
        "learning",
        "deep-learning",
        "deep",
    )


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_blank_query_is_empty_without_a_model_call(query: str) -> None:
    model = scripted(PIANO_REPLY)
    assert QueryExpander(model).expand(query) is EMPTY_EXPANSION
    assert model.sync_calls == 0


# --------------------------------------------------------------------------- deadline


def test_sync_timeout_returns_within_the_deadline() -> None:
    model = scripted(PIANO_REPLY, sleep=3.0)
    expander = QueryExpander(model, timeout_s=0.2)
    started = time.perf_counter()
    expanded = expander.expand("search typescript interfaces")
    elapsed = time.perf_counter() - started
    assert 0.2 <= elapsed < 0.2 + DEADLINE_MARGIN_S
    assert expanded.source == "fallback"
    assert expanded.queries == ("search typescript interfaces",)
    assert {"typescript", "interfaces"} <= set(expanded.salient_terms)
    assert model.sync_calls == 1


def test_a_model_answering_in_time_is_used() -> None:
    expanded = QueryExpander(scripted(PIANO_REPLY, sleep=0.05), timeout_s=2.0).expand(PIANO_QUERY)
    assert expanded.source == "llm"


async def test_async_timeout_returns_within_the_deadline() -> None:
    model = scripted(PIANO_REPLY, sleep=3.0)
    expander = QueryExpander(model, timeout_s=0.2)
    started = time.perf_counter()
    expanded = await expander.aexpand("search typescript interfaces")
    elapsed = time.perf_counter() - started
    assert 0.2 <= elapsed < 0.2 + DEADLINE_MARGIN_S
    assert expanded.source == "fallback"
    assert model.async_calls == 1


async def test_async_timeout_holds_even_if_the_model_ignores_cancellation() -> None:
    model = StubbornChatModel(responses=[PIANO_REPLY], sleep=1.0)
    expander = QueryExpander(model, timeout_s=0.2)
    started = time.perf_counter()
    expanded = await expander.aexpand(PIANO_QUERY)
    assert time.perf_counter() - started < 0.2 + DEADLINE_MARGIN_S
    assert expanded.source == "fallback"


async def test_aexpand_awaits_the_model_without_the_sync_path() -> None:
    model = scripted(PIANO_REPLY)
    expanded = await QueryExpander(model).aexpand(PIANO_QUERY)
    assert expanded == QueryExpander(scripted(PIANO_REPLY)).expand(PIANO_QUERY)
    assert (model.async_calls, model.sync_calls) == (1, 0)


async def test_aexpand_error_and_blank_query() -> None:
    model = scripted(PIANO_REPLY, error=ValueError("boom"))
    expander = QueryExpander(model)
    assert (await expander.aexpand(PIANO_QUERY)).source == "fallback"
    assert await expander.aexpand("  ") is EMPTY_EXPANSION
    assert (await QueryExpander(None).aexpand(PIANO_QUERY)).source == "fallback"


async def test_cancelling_aexpand_cancels_the_model_call() -> None:
    model = scripted(PIANO_REPLY, sleep=3.0)
    task = asyncio.ensure_future(QueryExpander(model, timeout_s=5.0).aexpand(PIANO_QUERY))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    model_calls = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert model_calls
    # The model sleeps 3 s: its call ending within 1 s means it was cancelled.
    _done, still_running = await asyncio.wait(model_calls, timeout=1.0)
    assert not still_running


# --------------------------------------------------------------------------- cache


def test_success_is_cached_by_query() -> None:
    model = scripted(PIANO_REPLY)
    expander = QueryExpander(model)
    first = expander.expand(PIANO_QUERY)
    assert expander.expand(f" {PIANO_QUERY} ") is first
    assert model.sync_calls == 1


async def test_sync_and_async_share_the_cache() -> None:
    model = scripted(PIANO_REPLY)
    expander = QueryExpander(model)
    first = expander.expand(PIANO_QUERY)
    assert await expander.aexpand(PIANO_QUERY) is first
    assert (model.sync_calls, model.async_calls) == (1, 0)


def test_least_recently_used_query_is_evicted() -> None:
    model = scripted(PIANO_REPLY)
    expander = QueryExpander(model, cache_size=2)
    expander.expand("query1")
    expander.expand("query2")
    expander.expand("query1")  # query1 is now the most recent: query2 goes next
    expander.expand("query3")
    assert model.sync_calls == 3
    expander.expand("query1")
    assert model.sync_calls == 3
    expander.expand("query2")
    assert model.sync_calls == 4


def test_cache_size_zero_always_asks_the_model() -> None:
    model = scripted(PIANO_REPLY)
    expander = QueryExpander(model, cache_size=0)
    expander.expand(PIANO_QUERY)
    expander.expand(PIANO_QUERY)
    assert model.sync_calls == 2


def test_failure_is_cached_only_until_its_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(expander_module, "time", SimpleNamespace(monotonic=clock.monotonic))
    model = scripted("", PIANO_REPLY)  # fails once, then answers
    expander = QueryExpander(model, failure_ttl_s=30.0)
    assert expander.expand(PIANO_QUERY).source == "fallback"
    clock.now += 29.0
    assert expander.expand(PIANO_QUERY).source == "fallback"
    assert model.sync_calls == 1
    clock.now += 1.0
    assert expander.expand(PIANO_QUERY).source == "llm"
    clock.now += 3600.0
    assert expander.expand(PIANO_QUERY).source == "llm"  # successes do not expire
    assert model.sync_calls == 2


def test_failure_ttl_zero_never_reuses_a_failure() -> None:
    model = scripted("", PIANO_REPLY)
    expander = QueryExpander(model, failure_ttl_s=0)
    assert expander.expand(PIANO_QUERY).source == "fallback"
    assert expander.expand(PIANO_QUERY).source == "llm"


def test_clear_cache() -> None:
    model = scripted(PIANO_REPLY)
    expander = QueryExpander(model)
    expander.expand(PIANO_QUERY)
    expander.clear_cache()
    expander.expand(PIANO_QUERY)
    assert model.sync_calls == 2


def test_cache_is_safe_under_concurrent_use() -> None:
    model = scripted(PIANO_REPLY)
    expander = QueryExpander(model, cache_size=8)
    errors: list[BaseException] = []
    results: list[str] = []

    def worker(offset: int) -> None:
        try:
            for i in range(40):
                results.append(expander.expand(f"piano notes {(i + offset) % 16}").source)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert set(results) == {"llm"}
    assert len(expander._cache) == 8


# --------------------------------------------------------------------------- construction


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_variants": -1}, "max_variants must be between 0 and 10"),
        ({"max_variants": 11}, "max_variants must be between 0 and 10"),
        ({"timeout_s": 0}, "timeout_s must be a positive"),
        ({"timeout_s": float("nan")}, "timeout_s must be a positive"),
        ({"timeout_s": float("inf")}, "timeout_s must be a positive"),
        ({"cache_size": -1}, "cache_size must be 0 or more"),
        ({"min_term_length": 0}, "min_term_length must be at least 1"),
        ({"failure_ttl_s": -1.0}, "failure_ttl_s must be 0 or more"),
    ],
)
def test_bad_options_raise(options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QueryExpander(None, **options)  # type: ignore[arg-type]


def test_defaults_follow_the_seed() -> None:
    expander = QueryExpander(None)
    assert (expander.max_variants, expander.timeout_s, expander.cache_size) == (3, 4.0, 100)
    assert expander.min_term_length == 2
    assert "max_variants=3" in repr(expander)


def test_it_satisfies_both_expander_protocols() -> None:
    expander = QueryExpander(None)
    assert isinstance(expander, QueryExpanderLike)
    assert isinstance(expander, AsyncQueryExpanderLike)
