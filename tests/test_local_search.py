"""local_search: the orchestration of filter and main retriever (reference sections 0, 17)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import Field

from langchain_vaultsearch import (
    FilterRetriever,
    TieredLexicalRetriever,
    TimeRange,
    Vault,
    alocal_search,
    local_search,
)
from langchain_vaultsearch.filters import FilterResult
from langchain_vaultsearch.local_search import LocalSearchResult, search_retrievers
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.time_ranges import parse_time_expression
from tests.conftest import write_vault
from tests.fake_embeddings import WordBagEmbedding


class ScriptedRetriever(BaseRetriever):
    """A main retriever that returns given documents, records its queries and can be slow."""

    documents: list[Document] = Field(default_factory=list)
    delay_s: float = 0.0
    queries: list[str] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.queries.append(query)
        time.sleep(self.delay_s)
        return [
            Document(d.page_content, metadata=dict(d.metadata), id=d.id) for d in self.documents
        ]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.queries.append(query)
        await asyncio.sleep(self.delay_s)
        return [
            Document(d.page_content, metadata=dict(d.metadata), id=d.id) for d in self.documents
        ]


class SlowFilterRetriever(FilterRetriever):
    """A filter whose file work takes `delay_s` (in its worker thread when async)."""

    delay_s: float = 0.0

    def run(self, *args: Any, **kwargs: Any) -> FilterResult:
        time.sleep(self.delay_s)
        return super().run(*args, **kwargs)


class CountingLexicalRetriever(TieredLexicalRetriever):
    """The lexical retriever, recording the keyword arguments of each call."""

    calls: list[dict[str, Any]] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        self.calls.append(kwargs)
        return super()._get_relevant_documents(query, run_manager=run_manager, **kwargs)


def search_doc(path: str, score: float, **metadata: Any) -> Document:
    return Document(
        f"text of {path} at {score}",
        metadata={"path": path, "title": Path(path).stem, "score": score, **metadata},
    )


def paths(docs: Sequence[Document]) -> list[str]:
    return [doc.metadata["path"] for doc in docs]


def assert_marked(result: LocalSearchResult) -> None:
    """Every document says whether it is a filter result and how it matched."""
    for doc in result.documents:
        assert isinstance(doc.metadata["isFilterResult"], bool)
        assert isinstance(doc.metadata["matchType"], str)
        assert doc.metadata["matchType"]
    flags = [doc.metadata["isFilterResult"] for doc in result.documents]
    assert flags == sorted(flags, reverse=True), "filter documents come first"


# --------------------------------------------------------------------------- vaults

TEAM_NOTES = 120
PLAIN_NOTES = 30


@pytest.fixture(scope="module")
def big_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """150 notes that all mention "zeppelin"; the first 120 are tagged #team."""
    notes = {
        f"Team/Note {i:03d}.md": f"# Note {i}\n\nThe zeppelin log, entry {i}. #team\n"
        for i in range(TEAM_NOTES)
    }
    notes.update(
        {
            f"Plain/Other {i:03d}.md": f"# Other {i}\n\nA zeppelin sighting, number {i}.\n"
            for i in range(PLAIN_NOTES)
        }
    )
    return write_vault(tmp_path_factory.mktemp("big") / "vault", notes)


SMALL_NOTES = {
    "Projects/Alpha.md": "# Alpha\n\nAlpha is the zeppelin project. #project/alpha\n",
    "Meetings/Kickoff.md": "# Kickoff\n\nWe chose the zeppelin design. #meeting #project/alpha\n",
    "Meetings/Review.md": "# Review\n\nThe zeppelin passed review. #meeting\n",
    "Notes/Zeppelin history.md": "# Zeppelin history\n\nZeppelin airships, 1900 onwards.\n",
    "Notes/Gardening.md": "# Gardening\n\nTomatoes and basil.\n",
}


@pytest.fixture
def small_vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", dict(SMALL_NOTES))


# --------------------------------------------------------------------------- limits


def test_plain_question_gets_at_most_30_documents(big_vault: Path) -> None:
    result = local_search("zeppelin log", vault_path=str(big_vault))
    assert result.limit == 30
    assert len(result.documents) == 30
    assert result.searched
    assert result.filter_documents == []
    assert_marked(result)


def test_k_sets_the_plain_limit(big_vault: Path) -> None:
    result = local_search("zeppelin log", vault_path=str(big_vault), k=7)
    assert (result.limit, len(result.documents)) == (7, 7)


def test_tag_question_gets_up_to_100_documents(big_vault: Path) -> None:
    result = local_search("zeppelin #team", vault_path=str(big_vault))
    assert result.limit == 100
    assert len(result.documents) == 100
    # 120 notes carry the tag: the filter fills the limit and says it left some out.
    assert len(result.filter_documents) == 100
    assert result.filter_result.matched == TEAM_NOTES
    assert result.filter_result.truncated
    assert_marked(result)


def test_tag_from_salient_terms_makes_a_tag_question(big_vault: Path) -> None:
    result = local_search("zeppelin log", vault_path=str(big_vault), salient_terms=["#team"])
    assert result.limit == 100
    assert len(result.filter_documents) == 100


def test_time_question_gets_up_to_100_documents_from_the_filter_only(big_vault: Path) -> None:
    # Every note of the fixture was written today.
    main = ScriptedRetriever(documents=[search_doc("Plain/Other 000.md", 0.9)])
    result = local_search(
        "what did I write?", vault_path=str(big_vault), retriever=main, time_range="today"
    )
    assert result.limit == 100
    assert len(result.documents) == 100
    assert all(doc.metadata["matchType"] == "time-filtered" for doc in result.documents)
    assert main.queries == []
    assert not result.searched


def test_time_range_skips_the_main_retriever_and_keeps_mentions(small_vault: Path) -> None:
    main = ScriptedRetriever(documents=[search_doc("Notes/Gardening.md", 0.9)])
    result = local_search(
        "what happened with [[Alpha]] today?",
        vault_path=str(small_vault),
        retriever=main,
        time_range=parse_time_expression("today"),
    )
    assert main.queries == []
    assert result.search_documents == []
    assert result.time_range is not None
    assert result.time_range.label == "today"
    assert paths(result.documents)[0] == "Projects/Alpha.md"
    assert result.documents[0].metadata["matchType"] == "title-match"
    assert set(paths(result.documents)) == set(SMALL_NOTES)
    assert_marked(result)


def test_time_range_outside_every_note_finds_nothing_and_runs_no_search(
    small_vault: Path,
) -> None:
    main = ScriptedRetriever(documents=[search_doc("Notes/Gardening.md", 0.9)])
    result = local_search(
        "zeppelin", vault_path=str(small_vault), retriever=main, time_range="Q1 1990"
    )
    assert result.documents == []
    assert main.queries == []


def test_a_period_read_from_the_words_leads_and_the_search_still_answers(
    small_vault: Path,
) -> None:
    # The notes were written long ago: "today" and "tomorrow" name no period of notes
    # here; answered by the filter alone, the question got nothing.
    long_ago = datetime(2001, 5, 4).timestamp()
    for note in small_vault.rglob("*.md"):
        os.utime(note, (long_ago, long_ago))
    question = "move the zeppelin review I could not do today onto tomorrow"
    result = local_search(question, vault_path=str(small_vault))
    assert result.time_range is not None
    assert result.time_range.label == "today"
    assert result.searched
    assert result.filter_documents == []
    assert "Meetings/Review.md" in paths(result.documents)[:3]
    # When the period holds notes, they lead, ranked by the search.
    an_hour_ago = time.time() - 3600
    os.utime(small_vault / "Meetings/Review.md", (an_hour_ago, an_hour_ago))
    os.utime(small_vault / "Notes/Gardening.md", None)  # the newer: the filter's first
    result = local_search(question, vault_path=str(small_vault))
    assert paths(result.filter_documents) == ["Meetings/Review.md", "Notes/Gardening.md"]
    assert paths(result.documents)[:2] == ["Meetings/Review.md", "Notes/Gardening.md"]
    assert len(result.search_documents) >= 2
    assert_marked(result)


@pytest.mark.parametrize("run", ["sync", "async"])
def test_the_note_that_answers_survives_a_period_holding_more_than_the_limit(
    tmp_path: Path, run: str
) -> None:
    # A fresh clone: every note was written today, more of them than the filter keeps.
    notes = {f"Docs/Page {i:03d}.md": f"# Page {i}\n\nSettings page {i}.\n" for i in range(120)}
    vault = write_vault(tmp_path / "vault", notes)
    start_of_today = datetime.now().astimezone().replace(hour=0, minute=0, second=1)
    answer = vault / "Docs/Page 000.md"  # the oldest of today: the filter's last
    os.utime(answer, (start_of_today.timestamp(), start_of_today.timestamp()))
    main = ScriptedRetriever(documents=[search_doc("Docs/Page 000.md", 0.9)])
    question = "how do I move a task from today to tomorrow"
    kwargs: dict[str, Any] = {"vault_path": str(vault), "retriever": main}
    if run == "sync":
        result = local_search(question, **kwargs)
    else:
        result = asyncio.run(alocal_search(question, **kwargs))
    assert len(result.filter_documents) == 100
    assert paths(result.documents)[0] == "Docs/Page 000.md"


def test_time_range_label_reaches_the_context(small_vault: Path) -> None:
    result = local_search("what did I do?", vault_path=str(small_vault), time_range="today")
    assert result.build_context().text.startswith('<localSearch timeRange="today">')


# --------------------------------------------------------------------------- tag forcing


def test_beside_a_users_retriever_a_tag_question_runs_lexical_search(small_vault: Path) -> None:
    vault = Vault(small_vault)
    semantic = ScriptedRetriever(documents=[search_doc("Notes/Gardening.md", 0.9)])
    lexical = CountingLexicalRetriever(vault=vault)
    result = local_search(
        "zeppelin #meeting",
        vault=vault,
        retriever=semantic,
        lexical_retriever=lexical,
    )
    assert semantic.queries == []
    assert lexical.calls == [{"k": 100, "salient_terms": []}]
    assert "Notes/Gardening.md" not in paths(result.documents)
    assert {doc.metadata["matchType"] for doc in result.search_documents} == {"lexical"}
    assert set(paths(result.filter_documents)) == {"Meetings/Review.md", "Meetings/Kickoff.md"}


def newest_first_the_wrong_way(vault_dir: Path) -> None:
    """Make the #meeting note that does not answer "design" the most recently modified."""
    for offset, path in enumerate(["Meetings/Kickoff.md", "Meetings/Review.md"]):
        stamp = time.time() - 1000 + offset * 100
        os.utime(vault_dir / path, (stamp, stamp))


def test_a_tag_questions_notes_come_in_the_searchs_order_not_newest_first(
    small_vault: Path,
) -> None:
    newest_first_the_wrong_way(small_vault)
    filters = FilterRetriever(vault_path=str(small_vault))
    assert paths(filters.get_relevant_documents("#meeting")) == [
        "Meetings/Review.md",
        "Meetings/Kickoff.md",
    ]
    result = local_search("#meeting design", vault=filters.vault)  # lexical: no vector index
    assert paths(result.filter_documents) == ["Meetings/Kickoff.md", "Meetings/Review.md"]
    assert_marked(result)


def test_with_a_vector_index_a_tag_question_runs_merged_search(small_vault: Path) -> None:
    newest_first_the_wrong_way(small_vault)
    index = VaultIndex(
        vault_path=small_vault,
        embeddings=WordBagEmbedding(),
        vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
        records_path=small_vault.parent / "records.sqlite3",
    )
    index.refresh()
    factory = RetrieverFactory(semantic_index=index)
    lexical = CountingLexicalRetriever(vault=index.vault)
    result = local_search(
        "#meeting design", retriever=factory, lexical_retriever=lexical, vault=index.vault
    )
    assert factory.retriever_type == "merged"  # as the plan says, not forced lexical
    assert lexical.calls == []
    assert paths(result.filter_documents) == ["Meetings/Kickoff.md", "Meetings/Review.md"]
    # Untagged notes follow, in the merged order: the search filled the places left.
    assert result.search_documents
    assert not any("#meeting" in doc.metadata["tags"] for doc in result.search_documents)
    assert_marked(result)


def test_tag_question_without_a_lexical_retriever_makes_one(small_vault: Path) -> None:
    semantic = ScriptedRetriever(documents=[search_doc("Notes/Gardening.md", 0.9)])
    result = local_search("zeppelin #meeting", vault_path=str(small_vault), retriever=semantic)
    assert semantic.queries == []
    assert "Notes/Zeppelin history.md" in paths(result.search_documents)


def test_plain_question_uses_the_main_retriever(small_vault: Path) -> None:
    semantic = ScriptedRetriever(
        documents=[search_doc("Notes/Gardening.md", 0.9), search_doc("Notes/Elsewhere.md", 0.5)]
    )
    result = local_search("tomatoes", vault_path=str(small_vault), retriever=semantic)
    assert semantic.queries == ["tomatoes"]
    assert paths(result.documents) == ["Notes/Gardening.md", "Notes/Elsewhere.md"]
    # A retriever without a `source` gets the generic match type.
    assert {doc.metadata["matchType"] for doc in result.documents} == {"search"}
    assert not any(doc.metadata["isFilterResult"] for doc in result.documents)


def test_lexical_main_retriever_gets_the_limit_and_salient_terms(big_vault: Path) -> None:
    lexical = CountingLexicalRetriever(vault_path=str(big_vault))
    local_search("zeppelin log", retriever=lexical, salient_terms=["zeppelin"], k=12)
    local_search("zeppelin #team", retriever=lexical)
    assert lexical.calls == [
        {"k": 12, "salient_terms": ["zeppelin"]},
        {"k": 100, "salient_terms": []},
    ]


# --------------------------------------------------------------------------- merge and dedupe


def test_search_docs_are_cut_to_the_best_chunk_of_each_note(small_vault: Path) -> None:
    # The reference's case: same path, scores .6 and .8 -> one document, the .8 one.
    main = ScriptedRetriever(
        documents=[
            search_doc("Notes/A.md", 0.6, title="First Title", chunkId="Notes/A.md#0"),
            search_doc("Notes/B.md", 0.7),
            search_doc("Notes/A.md", 0.8, title="Alt Title", chunkId="Notes/A.md#1"),
        ]
    )
    result = local_search("tomatoes", vault_path=str(small_vault), retriever=main)
    assert paths(result.documents) == ["Notes/A.md", "Notes/B.md"]
    best = result.documents[0]
    assert (best.metadata["score"], best.metadata["title"]) == (0.8, "Alt Title")


def test_rerank_score_decides_which_chunk_stays(small_vault: Path) -> None:
    main = ScriptedRetriever(
        documents=[
            search_doc("Notes/A.md", 0.9, rerank_score=0.1, chunkId="Notes/A.md#0"),
            search_doc("Notes/A.md", 0.2, rerank_score=0.5, chunkId="Notes/A.md#1"),
        ]
    )
    result = local_search("tomatoes", vault_path=str(small_vault), retriever=main)
    assert [doc.metadata["chunkId"] for doc in result.documents] == ["Notes/A.md#1"]


def test_documents_without_a_path_are_each_kept(small_vault: Path) -> None:
    untitled = [
        Document("first", metadata={"title": "Untitled", "path": "", "score": 0.4}),
        Document("second", metadata={"title": "Untitled", "path": "", "score": 0.35}),
        Document("third", metadata={"score": 0.3}),
        Document("fourth", metadata={"score": 0.2}),
    ]
    main = ScriptedRetriever(documents=untitled)
    result = local_search("tomatoes", vault_path=str(small_vault), retriever=main)
    assert [doc.page_content for doc in result.documents] == ["first", "second", "third", "fourth"]


def test_real_multi_chunk_note_gives_one_document(tmp_path: Path) -> None:
    sections = "".join(
        f"## Part {i}\n\n" + f"zeppelin engine detail {i}. " * 200 + "\n\n" for i in range(6)
    )
    vault = write_vault(tmp_path / "vault", {"Long.md": "# Long\n\n" + sections})
    retriever = TieredLexicalRetriever(vault_path=str(vault))
    assert len({doc.id for doc in retriever.invoke("zeppelin engine")}) > 1
    result = local_search("zeppelin engine", retriever=retriever)
    assert paths(result.documents) == ["Long.md"]


def test_filter_docs_are_never_dropped_and_cover_their_notes(small_vault: Path) -> None:
    main = ScriptedRetriever(
        documents=[
            search_doc("Projects/Alpha.md", 0.95),  # covered by the mention: dropped
            *(search_doc(f"Other/{i}.md", 0.9 - i / 100) for i in range(40)),
        ]
    )
    result = local_search(
        "what about [[Alpha]] and [[Review]]?", vault_path=str(small_vault), retriever=main
    )
    assert paths(result.filter_documents) == ["Projects/Alpha.md", "Meetings/Review.md"]
    assert len(result.documents) == 30
    assert paths(result.search_documents) == [f"Other/{i}.md" for i in range(28)]
    assert_marked(result)


def test_filter_documents_keep_their_metadata_and_the_inputs_are_not_modified(
    small_vault: Path,
) -> None:
    given = search_doc("Notes/Gardening.md", 0.5)
    main = ScriptedRetriever(documents=[given])
    result = local_search("[[Alpha]] tomatoes", vault_path=str(small_vault), retriever=main)
    alpha = result.filter_documents[0]
    assert (alpha.metadata["source"], alpha.metadata["matchType"]) == ("title-match", "title-match")
    assert alpha.metadata["score"] == 1.0
    assert alpha.page_content == SMALL_NOTES["Projects/Alpha.md"]
    assert "isFilterResult" not in given.metadata


# --------------------------------------------------------------------------- async


async def test_async_gives_the_same_documents(small_vault: Path) -> None:
    vault = Vault(small_vault)
    retrievers = search_retrievers(vault=vault)
    kwargs: dict[str, Any] = {
        "filter_retriever": retrievers.filter_retriever,
        "retriever": retrievers.retriever,
    }
    for question in ("[[Alpha]] zeppelin", "zeppelin #meeting", "zeppelin design"):
        expected = local_search(question, **kwargs)
        got = await alocal_search(question, **kwargs)
        assert [(d.id, d.metadata) for d in got.documents] == [
            (d.id, d.metadata) for d in expected.documents
        ]
    timed = await alocal_search("what?", time_range="today", **kwargs)
    assert not timed.searched
    assert len(timed.documents) == len(SMALL_NOTES)


async def test_async_runs_filter_and_main_retriever_concurrently(small_vault: Path) -> None:
    delay = 0.4
    vault = Vault(small_vault)
    filters = SlowFilterRetriever(vault=vault, delay_s=delay)
    main = ScriptedRetriever(documents=[search_doc("Notes/Gardening.md", 0.5)], delay_s=delay)
    started = time.perf_counter()
    result = await alocal_search("[[Alpha]] tomatoes", filter_retriever=filters, retriever=main)
    elapsed = time.perf_counter() - started
    assert paths(result.documents) == ["Projects/Alpha.md", "Notes/Gardening.md"]
    assert elapsed < 1.6 * delay, f"{elapsed:.2f}s: filter and search ran one after the other"
    # The sync path runs them in turn, which the measurement above must tell apart.
    started = time.perf_counter()
    local_search("[[Alpha]] tomatoes", filter_retriever=filters, retriever=main)
    assert time.perf_counter() - started >= 2 * delay


# --------------------------------------------------------------------------- vault sharing


def test_default_retrievers_share_one_vault(small_vault: Path) -> None:
    made = search_retrievers(vault_path=str(small_vault))
    assert isinstance(made.retriever, RetrieverFactory)
    assert made.retriever.retriever_type == "lexical"  # no vector index given
    assert made.filter_retriever.vault is made.retriever.vault
    assert made.lexical_retriever is made.retriever.lexical_retriever
    assert made.lexical_retriever.vault is made.retriever.vault


def test_given_retrievers_lend_their_vault(small_vault: Path) -> None:
    filters = FilterRetriever(vault_path=str(small_vault))
    made = search_retrievers(filter_retriever=filters, retriever=ScriptedRetriever())
    assert made.filter_retriever is filters
    assert made.lexical_retriever.vault is filters.vault


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "needs vault, vault_path or a retriever"),
        ({"vault_path": "/definitely/not/here"}, "does not exist"),
        ({"k": 0}, "k must be between 1 and 100, got 0"),
        ({"k": 101}, "k must be between 1 and 100, got 101"),
        ({"k": True}, "k must be an integer"),
        ({"time_range": "someday"}, "Unable to parse time expression: 'someday'"),
        ({"salient_terms": "#team"}, "salient_terms must be a list of strings, got '#team'"),
        ({"salient_terms": [1]}, "salient_terms must be a list of strings"),
    ],
)
def test_bad_arguments_are_clear_errors(
    small_vault: Path, kwargs: dict[str, Any], message: str
) -> None:
    if "vault_path" not in kwargs and kwargs:
        kwargs = {"vault_path": str(small_vault), **kwargs}
    with pytest.raises(ValueError, match=message):
        local_search("zeppelin", **kwargs)


def test_vault_and_vault_path_together_are_an_error(small_vault: Path) -> None:
    with pytest.raises(ValueError, match="not both"):
        local_search("x", vault=Vault(small_vault), vault_path=str(small_vault))


def test_non_string_query_is_an_error(small_vault: Path) -> None:
    with pytest.raises(ValueError, match="query must be a string, got list"):
        local_search(["zeppelin"], vault_path=str(small_vault))  # type: ignore[arg-type]


def test_blank_query_finds_nothing(small_vault: Path) -> None:
    result = local_search("   ", vault_path=str(small_vault))
    assert result.documents == []
    assert "No relevant documents found." in result.build_context().text


# --------------------------------------------------------------------------- a big vault


@pytest.fixture(scope="module")
def vault_of_5000(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("huge") / "vault"
    notes = {
        f"Log/{i // 500:02d}/Entry {i:04d}.md": f"Entry {i}: checked the zeppelin. #log\n"
        for i in range(5000)
    }
    return write_vault(root, notes)


def test_tag_query_on_5000_notes_returns_at_most_the_limit(vault_of_5000: Path) -> None:
    result = local_search("zeppelin #log", vault_path=str(vault_of_5000))
    assert len(result.documents) == 100
    assert result.filter_result.matched == 5000
    assert len(result.filter_documents) == 100
    assert len(set(paths(result.documents))) == 100
    context = result.build_context()
    assert len([source for source in context.sources if source.id is not None]) == 30
    assert len(context.sources) == 100


def test_time_query_on_5000_notes_returns_at_most_the_limit(vault_of_5000: Path) -> None:
    window = TimeRange(datetime.now().astimezone() - timedelta(days=1), datetime.now().astimezone())
    result = local_search("what did I log?", vault_path=str(vault_of_5000), time_range=window)
    assert len(result.documents) == 100
    assert not result.searched
