"""Expansion in the search: recall from the extras, ranking from the salient terms only."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_vaultsearch import QueryExpander, TieredLexicalRetriever, Vault
from langchain_vaultsearch.expansion import ExpandedQuery
from langchain_vaultsearch.search.core import SearchCore, SearchOptions
from tests.conftest import write_vault
from tests.fake_models import PIANO_REPLY, ScriptedChatModel

QUERY = "find my piano notes"
NOTES = {
    "Piano/Lesson 1.md": "# Lesson 1\n\nPiano scales; notes on posture and the piano bench.\n",
    "Piano/Practice.md": "# Practice\n\nPiano practice every day, with a lesson plan.\n",
    "Garden.md": "# Garden\n\nNotes about watering, and music for the tomatoes.\n",
    # Reachable only through the expansion: neither "piano" nor "notes" occurs in it.
    "Music/Sheet Music.md": "# Sheet music\n\nScores bought in Vienna for the keyboard.\n",
    "Cooking.md": "# Pasta\n\nBoil water, add salt.\n",
}
SHEET_MUSIC = "Music/Sheet Music.md"


@pytest.fixture
def vault_path(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", dict(NOTES))


def piano_expander() -> QueryExpander:
    return QueryExpander(ScriptedChatModel(responses=[PIANO_REPLY]))


def ids(docs: list[Document]) -> list[str]:
    return [str(d.id) for d in docs]


def test_expanded_terms_widen_recall_and_leave_the_salient_ranking_alone(
    vault_path: Path,
) -> None:
    plain = TieredLexicalRetriever(vault_path=str(vault_path))
    expanded = TieredLexicalRetriever(vault_path=str(vault_path), query_expander=piano_expander())
    without = plain.invoke(QUERY)
    with_expansion = expanded.invoke(QUERY)

    # Both searches rank with the same salient terms.
    assert plain.last_query_expansion is not None
    assert expanded.last_query_expansion is not None
    assert plain.last_query_expansion.salient_terms == ("piano", "notes")
    assert expanded.last_query_expansion.salient_terms == ("piano", "notes")
    assert expanded.last_query_expansion.source == "llm"

    # Recall: the sheet-music note is found only through the expansion.
    assert SHEET_MUSIC not in {d.metadata["path"] for d in without}
    extra = [d for d in with_expansion if d.metadata["explanation"].get("expansionOnly")]
    assert [d.metadata["path"] for d in extra] == [SHEET_MUSIC]

    # Ranking: the notes the salient terms find keep their order and raw scores, above it.
    salient_hits = [d for d in with_expansion if d not in extra]
    assert ids(salient_hits) == ids(without)
    assert [d.metadata["explanation"]["baseScore"] for d in salient_hits] == [
        d.metadata["explanation"]["baseScore"] for d in without
    ]
    assert with_expansion[: len(salient_hits)] == salient_hits
    assert all(not d.metadata["explanation"].get("expansionOnly") for d in without)


def test_expanded_terms_do_not_score_notes_the_salient_terms_found(vault_path: Path) -> None:
    # Garden.md matches "notes" (salient) and "music" (expanded): only "notes" counts.
    docs = TieredLexicalRetriever(
        vault_path=str(vault_path), query_expander=piano_expander()
    ).invoke(QUERY)
    garden = next(d for d in docs if d.metadata["path"] == "Garden.md")
    matched = {m["query"] for m in garden.metadata["explanation"]["lexicalMatches"]}
    assert matched == {"notes"}


def test_expansion_only_notes_are_ranked_by_the_expansion_s_terms(vault_path: Path) -> None:
    docs = TieredLexicalRetriever(
        vault_path=str(vault_path), query_expander=piano_expander()
    ).invoke(QUERY)
    sheet = next(d for d in docs if d.metadata["path"] == SHEET_MUSIC)
    matched = {m["query"] for m in sheet.metadata["explanation"]["lexicalMatches"]}
    assert matched >= {"music", "sheet"}
    salient_scores = [
        d.metadata["explanation"]["baseScore"]
        for d in docs
        if not d.metadata["explanation"].get("expansionOnly")
    ]
    assert sheet.metadata["explanation"]["baseScore"] <= 0.5 * min(salient_scores)


def test_expansion_alone_finds_notes_when_the_salient_terms_find_none(tmp_path: Path) -> None:
    vault = write_vault(
        tmp_path / "v", {"Scores.md": "# Scores\n\nSheet music for the keyboard.\n"}
    )
    docs = TieredLexicalRetriever(vault_path=str(vault), query_expander=piano_expander()).invoke(
        QUERY
    )
    assert [d.metadata["path"] for d in docs] == ["Scores.md"]
    assert docs[0].metadata["explanation"]["expansionOnly"] is True


def test_expansion_only_gets_the_candidate_slots_the_query_leaves(tmp_path: Path) -> None:
    notes = {f"Piano/Note {i:02}.md": f"# Note {i}\n\nPiano notes, part {i}.\n" for i in range(10)}
    notes[SHEET_MUSIC] = NOTES[SHEET_MUSIC]
    vault = write_vault(tmp_path / "v", dict(notes))
    full = TieredLexicalRetriever(
        vault_path=str(vault), query_expander=piano_expander(), candidate_limit=10
    ).invoke(QUERY)
    assert SHEET_MUSIC not in {d.metadata["path"] for d in full}
    roomy = TieredLexicalRetriever(
        vault_path=str(vault), query_expander=piano_expander(), candidate_limit=11
    ).invoke(QUERY)
    assert SHEET_MUSIC in {d.metadata["path"] for d in roomy}


def test_pre_expanded_query_widens_recall_the_same_way(vault_path: Path) -> None:
    expansion = ExpandedQuery(
        original_query=QUERY,
        queries=(QUERY,),
        salient_terms=("piano", "notes"),
        expanded_terms=("keyboard",),
        source="llm",
    )
    core = SearchCore(Vault(str(vault_path)))
    result = core.retrieve(QUERY, SearchOptions(pre_expanded_query=expansion))
    assert result.expansion.source == "pre-expanded"
    paths = [r.id.rsplit("#", 1)[0] for r in result.results]
    assert paths[-1] == SHEET_MUSIC


def test_an_expander_that_raises_falls_back_to_the_query_s_terms(
    vault_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def expand(self, query: str) -> ExpandedQuery:
            raise RuntimeError(query)

    core = SearchCore(Vault(str(vault_path)), query_expander=Broken())
    with caplog.at_level(logging.ERROR):
        result = core.retrieve(QUERY)
    assert result.expansion.source == "fallback"
    assert result.results
    assert {r.engine for r in result.results} == {"fulltext"}
    assert "Query expansion failed" in caplog.text


async def test_ainvoke_awaits_aexpand(vault_path: Path) -> None:
    model = ScriptedChatModel(responses=[PIANO_REPLY])
    retriever = TieredLexicalRetriever(
        vault_path=str(vault_path), query_expander=QueryExpander(model, cache_size=0)
    )
    docs = await retriever.ainvoke(QUERY)
    assert (model.async_calls, model.sync_calls) == (1, 0)
    assert retriever.last_query_expansion is not None
    assert retriever.last_query_expansion.source == "llm"
    assert ids(docs) == ids(retriever.invoke(QUERY))
    assert model.sync_calls == 1


async def test_aretrieve_runs_a_sync_only_expander_too(vault_path: Path) -> None:
    class SyncOnly:
        def __init__(self) -> None:
            self.calls = 0

        def expand(self, query: str) -> ExpandedQuery:
            self.calls += 1
            return ExpandedQuery(query, (query,), ("piano",), expanded_terms=("sheet",))

    expander = SyncOnly()
    result = await SearchCore(Vault(str(vault_path)), query_expander=expander).aretrieve(QUERY)
    assert expander.calls == 1
    assert SHEET_MUSIC in {r.id.rsplit("#", 1)[0] for r in result.results}


async def test_aretrieve_of_a_blank_query() -> None:
    result = await SearchCore(Vault(str(Path(__file__).parent))).aretrieve("   ")
    assert result.results == []
    assert result.expansion.source == "empty"


def test_batch_shares_one_expander_safely(vault_path: Path) -> None:
    model = ScriptedChatModel(responses=[PIANO_REPLY])
    retriever = TieredLexicalRetriever(
        vault_path=str(vault_path), query_expander=QueryExpander(model)
    )
    results = retriever.batch([QUERY] * 4 + ["piano practice"] * 4)
    assert all(SHEET_MUSIC in {d.metadata["path"] for d in docs} for docs in results[:4])
    assert ids(results[0]) == ids(results[3])
