"""FilterRetriever over real files: mentions, tags, time ranges, limits."""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from langchain_vaultsearch import FilterRetriever, TieredLexicalRetriever, TimeRange, Vault
from langchain_vaultsearch.filters import recency_score
from langchain_vaultsearch.query_plan import plan_query
from langchain_vaultsearch.time_ranges import parse_time_expression
from tests.conftest import NOTES, write_vault

NOW = datetime(2024, 1, 15, 12, 0)  # Monday, local time
LONG_AGO = datetime(2001, 6, 1, 12, 0)  # before every range the tests use

FILTER_KEYS = {
    "path",
    "title",
    "score",
    "rerank_score",
    "source",
    "engine",
    "includeInContext",
    "mtime",
    "ctime",
    "tags",
    "isChunk",
    "isFilterResult",
    "matchType",
}


def paths(docs: list[Document]) -> list[str]:
    return [d.metadata["path"] for d in docs]


def set_mtime(path: Path, moment: datetime) -> None:
    stamp = moment.timestamp()
    os.utime(path, (stamp, stamp))


def dated_vault(root: Path, notes: dict[str, str], mtimes: dict[str, datetime]) -> Path:
    """Write notes, all modified LONG_AGO unless `mtimes` says otherwise."""
    write_vault(root, dict(notes))
    for rel in notes:
        set_mtime(root / rel, mtimes.get(rel, LONG_AGO))
    return root


def last_week() -> TimeRange:
    parsed = parse_time_expression("last week", NOW)
    assert parsed is not None
    return parsed


# --------------------------------------------------------------------------- mentions


def test_mention_returns_the_whole_note(vault_dir: Path) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    docs = retriever.get_relevant_documents("tell me about [[Deployment]]")
    assert len(docs) == 1
    doc = docs[0]
    assert doc.id == "Projects/Alpha/Deployment.md"
    assert doc.page_content == NOTES["Projects/Alpha/Deployment.md"]
    assert set(doc.metadata) == FILTER_KEYS
    assert doc.metadata["path"] == "Projects/Alpha/Deployment.md"
    assert doc.metadata["title"] == "Deployment"
    assert doc.metadata["score"] == doc.metadata["rerank_score"] == 1.0
    assert doc.metadata["source"] == "title-match"
    assert doc.metadata["engine"] == "filter"
    assert doc.metadata["includeInContext"] is True
    assert doc.metadata["isChunk"] is False
    assert doc.metadata["isFilterResult"] is True
    assert doc.metadata["matchType"] == "title-match"
    assert doc.metadata["tags"] == ["#project/alpha", "#ops"]
    info = retriever.vault.get("Projects/Alpha/Deployment.md") if retriever.vault else None
    assert info is not None
    assert doc.metadata["mtime"] == info.mtime_ms


@pytest.mark.parametrize(
    "mention",
    [
        "[[Deployment#Rollback|the deploy note]]",
        "[[deployment]]",
        "[[DEPLOYMENT#Rollback]]",
        "[[Projects/Alpha/Deployment]]",
        "[[Projects/Alpha/Deployment.md]]",
        "![[Deployment]]",
    ],
)
def test_mention_forms_resolve(vault_dir: Path, mention: str) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    result = retriever.find(f"what did we decide in {mention}?")
    assert paths(result.documents) == ["Projects/Alpha/Deployment.md"]
    assert list(result.mentions.values()) == ["Projects/Alpha/Deployment.md"]


def test_frontmatter_alias_resolves(vault_dir: Path) -> None:
    docs = FilterRetriever(vault_path=str(vault_dir)).get_relevant_documents("[[login guide]]")
    assert paths(docs) == ["Projects/Alpha/OAuth Setup.md"]


def test_ambiguous_name_picks_the_shortest_path(tmp_path: Path) -> None:
    write_vault(tmp_path, {"Work/Deep/Notes.md": "deep", "Work/Notes.md": "shallow", "x.md": ""})
    docs = FilterRetriever(vault_path=str(tmp_path)).get_relevant_documents("[[notes]]")
    assert paths(docs) == ["Work/Notes.md"]


def test_several_mentions_keep_order_and_dedupe(vault_dir: Path) -> None:
    result = FilterRetriever(vault_path=str(vault_dir)).find(
        "compare [[OAuth Setup]], [[Deployment]] and [[oauth setup|again]]"
    )
    assert paths(result.documents) == [
        "Projects/Alpha/OAuth Setup.md",
        "Projects/Alpha/Deployment.md",
    ]


@pytest.mark.parametrize(
    "mention",
    [
        "[[../../etc/passwd]]",
        "[[../etc/passwd]]",
        "[[..\\etc\\passwd]]",
        "[[/etc/passwd]]",
        "[[Projects/../../etc/passwd]]",
        "[[Old OAuth]]",  # in .trash/, not part of the vault
        "[[Nowhere]]",
    ],
)
def test_mentions_outside_the_vault_resolve_to_nothing(tmp_path: Path, mention: str) -> None:
    vault = write_vault(tmp_path / "vault", dict(NOTES))
    write_vault(tmp_path, {"etc/passwd.md": "root:x:0:0", "etc/passwd": "root:x:0:0"})
    result = FilterRetriever(vault_path=str(vault)).find(f"show {mention}")
    assert result.documents == []
    assert result.unresolved_mentions == list(result.mentions)
    assert len(result.mentions) == 1


def test_mentions_override_exclusions_and_inclusions(vault_dir: Path) -> None:
    excluded = FilterRetriever(vault_path=str(vault_dir), exclusions=["Projects/Alpha"])
    assert paths(excluded.get_relevant_documents("[[Deployment]]")) == [
        "Projects/Alpha/Deployment.md"
    ]
    assert excluded.get_relevant_documents("#project") == []
    included = FilterRetriever(vault_path=str(vault_dir), inclusions=["Piano"])
    assert paths(included.get_relevant_documents("[[Deployment]] #ops")) == [
        "Projects/Alpha/Deployment.md"
    ]


def test_query_without_filters_returns_nothing(vault_dir: Path) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    result = retriever.find("deployment rollback", salient_terms=["keyword1"])
    assert result.documents == []
    assert result.mentions == {}
    assert result.tags == ()
    assert retriever.get_relevant_documents("") == []


# --------------------------------------------------------------------------- tags


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("#project", ["Projects/Alpha/Deployment.md"]),  # frontmatter #project/alpha
        ("#Project/Alpha", ["Projects/Alpha/Deployment.md"]),
        ("#music", ["Piano/Lesson 1.md"]),  # inline #music/piano
        ("#music/piano", ["Piano/Lesson 1.md"]),
        ("#meeting", ["Daily/2024-03-05.md"]),
        ("#ops", ["Projects/Alpha/Deployment.md"]),
        ("#proj", []),  # a prefix of a name is not a parent tag
        ("#project/alpha/deep", []),  # a child does not match its parent
    ],
)
def test_tag_matches_exact_or_hierarchical(vault_dir: Path, tag: str, expected: list[str]) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    docs = retriever.get_relevant_documents(f"notes about {tag}")
    assert paths(docs) == expected
    assert all(d.metadata["source"] == "tag-match" and d.metadata["score"] == 1.0 for d in docs)


def test_parent_tag_does_not_match_child_query(tmp_path: Path) -> None:
    write_vault(tmp_path, {"parent.md": "#project only", "child.md": "#project/beta"})
    retriever = FilterRetriever(vault_path=str(tmp_path))
    assert paths(retriever.get_relevant_documents("#project/beta")) == ["child.md"]
    assert sorted(paths(retriever.get_relevant_documents("#project"))) == [
        "child.md",
        "parent.md",
    ]


def test_salient_tags_replace_query_tags(vault_dir: Path) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    result = retriever.find("#ops things", salient_terms=["piano", "#Music"])
    assert result.tags == ("#music",)
    assert paths(result.documents) == ["Piano/Lesson 1.md"]


def test_tag_metadata_lists_inline_and_frontmatter_tags(tmp_path: Path) -> None:
    write_vault(tmp_path, {"n.md": "---\ntags: [alpha, beta/x]\n---\nBody #gamma\n"})
    docs = FilterRetriever(vault_path=str(tmp_path)).get_relevant_documents("#beta")
    assert docs[0].metadata["tags"] == ["#gamma", "#alpha", "#beta/x"]


def test_linked_and_tagged_note_comes_once_as_title_match(vault_dir: Path) -> None:
    docs = FilterRetriever(vault_path=str(vault_dir)).get_relevant_documents(
        "[[Deployment]] and #project"
    )
    assert paths(docs) == ["Projects/Alpha/Deployment.md"]
    assert docs[0].metadata["source"] == "title-match"


def test_mentions_come_before_tag_matches(vault_dir: Path) -> None:
    docs = FilterRetriever(vault_path=str(vault_dir)).get_relevant_documents(
        "#music and [[OAuth Setup]]"
    )
    assert paths(docs) == ["Projects/Alpha/OAuth Setup.md", "Piano/Lesson 1.md"]
    assert [d.metadata["source"] for d in docs] == ["title-match", "tag-match"]


def test_tag_limit_keeps_the_most_recent(tmp_path: Path) -> None:
    notes = {f"d{i:02d}.md": f"entry {i} #daily" for i in range(10)}
    mtimes = {f"d{i:02d}.md": LONG_AGO + timedelta(days=i) for i in range(10)}
    dated_vault(tmp_path, notes, mtimes)
    retriever = FilterRetriever(vault_path=str(tmp_path), limit=3)
    result = retriever.find("#daily")
    assert paths(result.documents) == ["d09.md", "d08.md", "d07.md"]
    assert result.matched == 10
    assert result.truncated


def test_the_searched_notes_lead_and_survive_the_limit(tmp_path: Path) -> None:
    # local_search hands the filter its search's notes: those lead, in the search's
    # order, before the cut to the limit; a named note stays first.
    notes = {f"d{i:02d}.md": f"entry {i} #daily" for i in range(10)}
    notes["Named.md"] = "the named one #daily"
    mtimes = {f"d{i:02d}.md": LONG_AGO + timedelta(days=i) for i in range(10)}
    mtimes["Named.md"] = LONG_AGO
    dated_vault(tmp_path, notes, mtimes)
    retriever = FilterRetriever(vault_path=str(tmp_path))
    plan = plan_query("[[Named]] #daily", k=4)
    found = retriever.run(plan, limit=4, first=["x.md", "d01.md", "d05.md", "d01.md"])
    assert paths(found.documents) == ["Named.md", "d01.md", "d05.md", "d09.md"]
    assert paths(retriever.run(plan, limit=4).documents) == [
        "Named.md",
        "d09.md",
        "d08.md",
        "d07.md",
    ]
    june = parse_time_expression("2001-06")
    timed = plan_query("entry", k=3, time_range=june, filtering=True)
    in_january = retriever.run(timed, limit=3, first=["d02.md"])
    assert paths(in_january.documents)[0] == "d02.md"


def test_per_call_limit_up_to_100(tmp_path: Path) -> None:
    write_vault(tmp_path, {f"d{i:02d}.md": f"entry {i} #daily" for i in range(40)})
    retriever = FilterRetriever(vault_path=str(tmp_path), limit=3)
    result = retriever.find("#daily", limit=100)
    assert len(result.documents) == 40
    assert not result.truncated


def test_tag_query_on_5000_notes_returns_at_most_the_limit(tmp_path: Path) -> None:
    notes = {f"n{i // 500}/note{i:04d}.md": f"note {i} #project/p{i % 7}" for i in range(5000)}
    write_vault(tmp_path, notes)
    retriever = FilterRetriever(vault_path=str(tmp_path))
    default = retriever.find("#project")
    assert len(default.documents) == 30
    assert default.matched == 5000
    assert default.truncated
    wide = retriever.find("#project", limit=100)
    assert len(wide.documents) == 100
    assert len(set(paths(wide.documents))) == 100
    assert all(d.metadata["source"] == "tag-match" for d in wide.documents)


def test_mentions_and_tags_together_respect_the_limit(tmp_path: Path) -> None:
    notes = {f"t{i}.md": f"#topic {i}" for i in range(5)}
    notes["Named.md"] = "named"
    write_vault(tmp_path, notes)
    docs = FilterRetriever(vault_path=str(tmp_path), limit=2).get_relevant_documents(
        "[[Named]] #topic"
    )
    assert len(docs) == 2
    assert docs[0].metadata["path"] == "Named.md"


# --------------------------------------------------------------------------- time ranges


def test_recently_modified_note_is_in_the_last_7_days(tmp_path: Path) -> None:
    write_vault(tmp_path, {"fresh.md": "just written", "old.md": "old"})
    set_mtime(tmp_path / "old.md", LONG_AGO)
    set_mtime(tmp_path / "fresh.md", datetime.now() - timedelta(seconds=1))
    docs = FilterRetriever(vault_path=str(tmp_path)).get_relevant_documents(
        "what changed?", "last 7 days"
    )
    assert paths(docs) == ["fresh.md"]
    meta = docs[0].metadata
    assert meta["source"] == "time-filtered"
    assert meta["includeInContext"] is True
    assert meta["score"] == meta["rerank_score"] == pytest.approx(1.0, abs=1e-3)


def test_daily_notes_of_the_range_most_recent_first(tmp_path: Path) -> None:
    days = [date(2024, 1, 7) + timedelta(days=i) for i in range(9)]  # 7th..15th
    notes = {f"Daily/{d.isoformat()}.md": f"log {d}" for d in days}
    notes["Journal/2024-01-10.md"] = "a second note named for the 10th"
    notes["2024-01-99.md"] = "not a date"
    dated_vault(tmp_path, notes, {})
    result = FilterRetriever(vault_path=str(tmp_path)).find("what did I do?", last_week(), now=NOW)
    expected_days = [f"2024-01-{n:02d}" for n in range(14, 7, -1)]
    assert [d.metadata["title"] for d in result.documents] == [
        day for day in expected_days for _ in range(2 if day == "2024-01-10" else 1)
    ]
    scores = {d.metadata["path"]: d.metadata["score"] for d in result.documents}
    # recency counts back from the end of the range (Sunday 23:59:59.999999)
    assert scores["Daily/2024-01-14.md"] == pytest.approx(1.0)
    assert scores["Daily/2024-01-13.md"] == pytest.approx(1 - 1 / 30)
    assert scores["Daily/2024-01-08.md"] == pytest.approx(1 - 6 / 30)
    assert {d.metadata["source"] for d in result.documents} == {"time-filtered"}


def test_modified_time_in_range_scores_by_recency(tmp_path: Path) -> None:
    notes = {"edited.md": "edited last week", "untouched.md": "old", "later.md": "today"}
    mtimes = {"edited.md": datetime(2024, 1, 12, 6, 0), "later.md": datetime(2024, 1, 15, 9)}
    dated_vault(tmp_path, notes, mtimes)
    docs = FilterRetriever(vault_path=str(tmp_path)).get_relevant_documents(
        "?", last_week(), now=NOW
    )
    assert paths(docs) == ["edited.md"]
    end = datetime(2024, 1, 14, 23, 59, 59, 999999)
    days = (end - datetime(2024, 1, 12, 6, 0)).total_seconds() / 86400
    assert docs[0].metadata["score"] == pytest.approx(1 - days / 30)


def test_frontmatter_created_and_date_count(tmp_path: Path) -> None:
    notes = {
        "created.md": "---\ncreated: 2024-01-10\n---\nbody",
        "date-text.md": '---\ndate: "2024-01-09T10:00"\n---\nbody',
        "date-dots.md": "---\nDate: 2024.01.11\n---\nbody",
        "date-time.md": "---\ncreated: 2024-01-13 08:15:00\n---\nbody",
        "outside.md": "---\ncreated: 2023-05-01\n---\nbody",
        "template.md": "---\ncreated: '{{date}}'\ndate: yesterday\n---\nbody",
        "impossible.md": "---\ncreated: '2024-02-30'\n---\nbody",
        "list.md": "---\ndate: [2022-01-01, 2024-01-08]\n---\nbody",
        "other-key.md": "---\nupdated: 2024-01-10\n---\nbody",
        # The Obsidian Linter's key, carried by most notes of a real vault.
        "linter.md": "---\ndate created: 2024-01-12\ndate modified: 2023-01-01\n---\nbody",
    }
    dated_vault(tmp_path, notes, {})
    docs = FilterRetriever(vault_path=str(tmp_path)).get_relevant_documents(
        "?", last_week(), now=NOW
    )
    assert paths(docs) == [
        "date-time.md",
        "linter.md",
        "date-dots.md",
        "created.md",
        "date-text.md",
        "list.md",
    ]


def test_dates_at_the_ends_of_the_calendar_do_not_break_a_query(tmp_path: Path) -> None:
    notes = {
        "0001-01-01.md": "first day",
        "9999-12-31.md": "last day",
        "early.md": "---\ncreated: 0001-01-01\ndate: 0001-01-01 00:00:00\n---\n",
        "late.md": "---\ncreated: 9999-12-31\ndate: '9999-12-31T23:59:59'\n---\n",
        "Daily/2024-01-10.md": "log",
    }
    dated_vault(tmp_path, notes, {})
    docs = FilterRetriever(vault_path=str(tmp_path)).get_relevant_documents(
        "?", last_week(), now=NOW
    )
    assert paths(docs) == ["Daily/2024-01-10.md"]


def test_old_notes_in_a_long_range_get_the_floor_score(tmp_path: Path) -> None:
    dated_vault(tmp_path, {"a.md": "a"}, {"a.md": datetime(2023, 8, 1, 12)})
    docs = FilterRetriever(vault_path=str(tmp_path)).get_relevant_documents(
        "?", "last 6 months", now=NOW
    )
    assert paths(docs) == ["a.md"]
    assert docs[0].metadata["score"] == pytest.approx(0.3)


def test_ten_year_range_caps_daily_notes_to_its_last_365_days(tmp_path: Path) -> None:
    months = [date(year, month, 1) for year in range(2014, 2024) for month in range(1, 13)]
    dated_vault(tmp_path, {f"Daily/{d.isoformat()}.md": "log" for d in months}, {})
    span = TimeRange.from_dates(date(2014, 1, 1), date(2023, 12, 31))
    result = FilterRetriever(vault_path=str(tmp_path)).find("?", span, now=NOW, limit=100)
    assert [d.metadata["title"] for d in result.documents] == [
        f"2023-{month:02d}-01" for month in range(12, 0, -1)
    ]
    assert result.time_range == span
    assert result.daily_note_window is not None
    assert result.daily_note_window.start == span.end - timedelta(days=365)
    assert result.matched == 12


def test_time_matches_respect_exclusions_and_the_limit(tmp_path: Path) -> None:
    notes = {f"Daily/2024-01-{n:02d}.md": "log" for n in range(8, 15)}
    notes["Archive/2024-01-09.md"] = "archived copy"
    dated_vault(tmp_path, notes, {})
    retriever = FilterRetriever(vault_path=str(tmp_path), exclusions=["Archive"], limit=3)
    result = retriever.find("?", last_week(), now=NOW)
    assert paths(result.documents) == [f"Daily/2024-01-{n:02d}.md" for n in (14, 13, 12)]
    assert result.matched == 7
    assert result.truncated


def test_tags_narrow_time_matches_and_mentions_stay(tmp_path: Path) -> None:
    notes = {
        "Daily/2024-01-09.md": "standup #meeting",
        "Daily/2024-01-10.md": "gardening",
        "Daily/2024-01-11.md": "retro #meeting/retro",
        "Projects/Plan.md": "the long-term plan",
    }
    dated_vault(tmp_path, notes, {})
    result = FilterRetriever(vault_path=str(tmp_path)).find(
        "#meeting notes and [[Plan]]", last_week(), now=NOW
    )
    assert paths(result.documents) == [
        "Projects/Plan.md",
        "Daily/2024-01-11.md",
        "Daily/2024-01-09.md",
    ]
    assert [d.metadata["source"] for d in result.documents] == [
        "title-match",
        "time-filtered",
        "time-filtered",
    ]


def test_unparseable_time_expression_is_a_clear_error(vault_dir: Path) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    with pytest.raises(ValueError, match="Unable to parse time expression: 'sometime soonish'"):
        retriever.find("?", "sometime soonish")


def test_time_expression_text_is_parsed_with_now(tmp_path: Path) -> None:
    dated_vault(tmp_path, {"Daily/2024-01-14.md": "log", "Daily/2024-01-15.md": "log"}, {})
    result = FilterRetriever(vault_path=str(tmp_path)).find("?", "yesterday", now=NOW)
    assert paths(result.documents) == ["Daily/2024-01-14.md"]
    assert result.time_range is not None
    assert result.time_range.label == "yesterday"


@pytest.mark.parametrize(
    ("days", "score"),
    [(-2, 1.0), (0, 1.0), (1, 0.9667), (7, 0.7667), (15, 0.5), (21, 0.3), (400, 0.3)],
)
def test_recency_score_table(days: float, score: float) -> None:
    reference = datetime(2024, 1, 15, 12).astimezone()
    assert recency_score(reference - timedelta(days=days), reference) == pytest.approx(
        score, abs=1e-4
    )


# --------------------------------------------------------------------------- options, async


@pytest.mark.parametrize("limit", [0, -1, 101])
def test_bad_limits_are_rejected(vault_dir: Path, limit: int) -> None:
    with pytest.raises(ValidationError):
        FilterRetriever(vault_path=str(vault_dir), limit=limit)
    retriever = FilterRetriever(vault_path=str(vault_dir))
    with pytest.raises(ValueError, match="limit must be between 1 and 100"):
        retriever.find("#ops", limit=limit)


def test_a_string_of_salient_terms_is_refused_not_read_letter_by_letter(vault_dir: Path) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    with pytest.raises(ValueError, match="salient_terms must be a list of strings"):
        retriever.find("what did I decide?", salient_terms="#project")


def test_vault_is_required_and_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs vault_path or vault"):
        FilterRetriever()
    with pytest.raises(ValueError, match="does not exist"):
        FilterRetriever(vault_path=str(tmp_path / "missing"))


async def test_async_twins_match_sync(vault_dir: Path) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    query = "[[Deployment]] #music"
    sync_docs = retriever.get_relevant_documents(query)
    async_docs = await retriever.aget_relevant_documents(query)
    assert (
        paths(async_docs)
        == paths(sync_docs)
        == ["Projects/Alpha/Deployment.md", "Piano/Lesson 1.md"]
    )
    result = await retriever.afind(query)
    assert paths(result.documents) == paths(sync_docs)


def test_sees_notes_added_after_the_first_query(vault_dir: Path) -> None:
    retriever = FilterRetriever(vault_path=str(vault_dir))
    assert retriever.get_relevant_documents("#wombat") == []
    write_vault(vault_dir, {"New.md": "a #wombat appeared"})
    assert paths(retriever.get_relevant_documents("#wombat")) == ["New.md"]


def test_shared_vault_keeps_the_lexical_index_fresh(vault_dir: Path) -> None:
    vault = Vault(vault_dir)
    filters = FilterRetriever(vault=vault)
    lexical = TieredLexicalRetriever(vault=vault)
    assert paths(filters.get_relevant_documents("#music")) == ["Piano/Lesson 1.md"]
    assert paths(lexical.invoke("arpeggios")) == ["Piano/Lesson 1.md"]
    write_vault(vault_dir, {"New.md": "quokka sightings #animals"})
    assert paths(filters.get_relevant_documents("#animals")) == ["New.md"]  # refreshes first
    assert paths(lexical.invoke("quokka")) == ["New.md"]


def test_rules_with_a_shared_vault_are_an_error_not_ignored(vault_dir: Path) -> None:
    vault = Vault(vault_dir)
    with pytest.raises(ValueError, match="apply to a vault opened from vault_path"):
        FilterRetriever(vault=vault, inclusions=["Projects/"])
    with pytest.raises(ValueError, match="apply to a vault opened from vault_path"):
        TieredLexicalRetriever(vault=vault, exclusions=["Piano/"])


def test_another_folder_with_a_shared_vault_is_an_error_not_ignored(
    vault_dir: Path, tmp_path: Path
) -> None:
    vault = Vault(vault_dir)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(ValueError, match="is not the shared vault's folder"):
        TieredLexicalRetriever(vault_path=str(other), vault=vault)
    with pytest.raises(ValueError, match="is not the shared vault's folder"):
        FilterRetriever(vault_path=str(other), vault=vault)
    same = TieredLexicalRetriever(vault_path=str(vault_dir), vault=vault)  # the same folder
    assert same.vault is vault
