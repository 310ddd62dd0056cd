"""Searching a never-indexed vault: scan recall first, the index built in the background."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_vaultsearch import TieredLexicalRetriever
from langchain_vaultsearch.search import index_worker as index_worker_module
from langchain_vaultsearch.search import lexical_index as lexical_index_module
from langchain_vaultsearch.search import scan_recall as scan_recall_module
from langchain_vaultsearch.search.chunk_cache import ChunkCache
from langchain_vaultsearch.search.index_cache import index_path, load_index, save_index
from langchain_vaultsearch.search.index_worker import IndexBuildError, build_index_file
from langchain_vaultsearch.search.lexical_index import IndexPolicy
from langchain_vaultsearch.search.parallel_build import VaultSpec, build_vault_index
from langchain_vaultsearch.search.recall import RecallIndex
from langchain_vaultsearch.search.scan_recall import ScanRecall
from langchain_vaultsearch.search.vault_documents import apply_changes
from langchain_vaultsearch.text.tokenize import tokenize_mixed
from langchain_vaultsearch.vault.note_files import Listing
from langchain_vaultsearch.vault.note_info import folder_of
from langchain_vaultsearch.vault.note_reader import MAX_NOTE_BYTES, NoteReader
from langchain_vaultsearch.vault.vault import Vault
from tests.conftest import SAMPLE_VAULT, write_vault

SCAN_NOTES: dict[str, str | bytes] = {
    "Sync.md": "# Sync\n\nHow the vault syncs between devices.\n",
    "Devices/Phone.md": "Syncing the phone takes a minute.\n",
    "Code/Async.md": "Async functions and await; nothing about the other word.\n",
    "Web/Next.md": "Deploying next.js apps. JS bundles. #web/frontend\n",
    "Web/Jsonl.md": "Jsonl files hold one JSON value per line.\n",
    "中文/同步.md": "# 同步\n\n手机和电脑之间同步笔记。\n",
    "Hidden words.md": "Mentions zanzibar once.\n",
    ".obsidian/Sync settings.md": "sync sync sync\n",
}


@pytest.fixture
def scan_vault(tmp_path: Path) -> Vault:
    return Vault(write_vault(tmp_path / "vault", SCAN_NOTES), watch=False)


@pytest.fixture
def held_build(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Build in the background, held after the child wrote the index.

    Returns:
        (set once the index is written, set to hand it over).
    """
    built, release = threading.Event(), threading.Event()

    def held(vault: Vault, target: Path | None, processes: int | None) -> Path:
        written = build_index_file(vault, target, processes)
        built.set()
        release.wait(30)
        return written

    monkeypatch.setattr(lexical_index_module, "build_index_file", held)
    return built, release


BACKGROUND = IndexPolicy(background_build_notes=1)
"""Even a small test vault takes the scan-then-build path."""
BACKGROUND_SAVED = IndexPolicy(background_build_notes=1, persist_min_notes=1)
SCAN_ONLY = IndexPolicy(background_build_notes=1, build_in_background=False)
"""Searches scan and nothing builds the index."""


@pytest.fixture
def held_retriever(
    vault_dir: Path, held_build: tuple[threading.Event, threading.Event]
) -> tuple[TieredLexicalRetriever, threading.Event, threading.Event]:
    """A retriever whose first search scans while its build is held (see `held_build`)."""
    built, release = held_build
    retriever = TieredLexicalRetriever(
        index_policy=BACKGROUND, vault_path=str(vault_dir), persist_index=False
    )
    return retriever, built, release


def paths(found: list[tuple[str, float]]) -> list[str]:
    return [path for path, _score in found]


def test_scan_matches_where_a_word_starts(scan_vault: Vault) -> None:
    scan = ScanRecall(scan_vault)
    found = paths(scan.candidates(["sync"], 10))
    assert set(found) == {"Sync.md", "Devices/Phone.md"}
    assert found[0] == "Sync.md"  # a path hit counts twice
    assert paths(scan.candidates(["js"], 10)) == ["Web/Next.md"]  # short: whole words only
    assert paths(scan.candidates(["next.js"], 10)) == ["Web/Next.md"]
    assert paths(scan.candidates(["同步"], 10))[0] == "中文/同步.md"
    assert paths(scan.candidates(["#web/frontend"], 10)) == ["Web/Next.md"]
    assert scan.candidates(["zzzq"], 10) == []
    assert scan.candidates(["sync"], 0) == []
    assert ".obsidian/Sync settings.md" not in paths(scan.candidates(["settings"], 10))


@pytest.mark.parametrize("inside", [1, 40], ids=["a few hits inside words", "many"])
def test_hits_inside_words_are_passed_over_however_many(tmp_path: Path, inside: int) -> None:
    # The substring search finds `data` in `metadata`; the word-start check drops such
    # hits one by one, then (past `_REGEX_AFTER_MISSES` in a run) leaves them to the regex.
    notes = {f"In {n:02}.md": "metadata " * inside for n in range(8)}
    notes |= {"Word.md": "the data itself", "Tail.md": "metadata " * inside + "big data"}
    notes |= {"Short.md": "ab abc xab ab.", "No short.md": "abc xab_ab"}
    scan = ScanRecall(Vault(write_vault(tmp_path / "v", notes), watch=False))
    assert sorted(paths(scan.candidates(["data"], 20))) == ["Tail.md", "Word.md"]
    assert paths(scan.candidates(["ab"], 20)) == ["Short.md"]  # short: whole words only
    assert paths(scan.candidates(["metadata"], 20)) == [
        *(f"In {n:02}.md" for n in range(8)),
        "Tail.md",
    ]


# Few letters, so a term is often inside a word; separators, `_` and non-ASCII around it.
_TEXT = st.text(alphabet="aab_ .-\né中", max_size=60)


@settings(max_examples=400, deadline=None)
@given(
    texts=st.lists(_TEXT, min_size=1, max_size=12),
    token=st.sampled_from(["a", "ab", "aba", "bab", "é", "中", "a.b", "_a"]),
)
def test_a_run_is_marked_where_each_text_alone_holds_the_term(texts: list[str], token: str) -> None:
    # `mark` searches a whole run at SIMD speed and checks word starts itself; it must
    # find exactly the texts the regex, run over each text alone, finds.
    needle = scan_recall_module._Needle(token)
    (run,) = scan_recall_module._runs(scan_recall_module._laid_out(text.encode() for text in texts))
    spans = zip(run.starts, run.ends, strict=True)
    held = [needle.holds(run.buffer, start, end) for start, end in spans]
    # The regex takes over after the first hit inside a word, or after a run's sixteenth.
    for misses in (1, scan_recall_module._REGEX_AFTER_MISSES):
        with mock.patch.object(scan_recall_module, "_REGEX_AFTER_MISSES", misses):
            found = np.zeros(len(texts), dtype=np.bool_)
            needle.mark(run, found)
        assert found.tolist() == held


def test_scan_finds_each_word_of_a_term_apart(scan_vault: Vault) -> None:
    # A joined word is found as typed within a longer term, not only as the whole term
    # typed (the index holds next, js and nextjs for this note: both words match there).
    scan = ScanRecall(scan_vault)
    assert paths(scan.candidates(["bundles next.js"], 10)) == ["Web/Next.md"]
    assert paths(scan.candidates(["deploying next.js apps"], 10)) == ["Web/Next.md"]
    assert paths(scan.candidates(["how to deploy (next.js)?"], 10)) == []  # every word
    assert paths(scan.candidates(["deploying next.js?"], 10)) == ["Web/Next.md"]
    assert scan.candidates(["bundles next.js zanzibar"], 10) == []  # every word counts
    assert scan.candidates(["- -"], 10) == []  # no word to find


def _texts_searched(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """The tokens of each search of every note's text (not of the paths), as they come."""
    searched: list[set[str]] = []
    real_found = scan_recall_module._found

    def recording(runs: Any, count: int, needles: dict[str, Any]) -> Any:
        if not isinstance(runs, list):  # the paths are laid out once, as a list of runs
            searched.append(set(needles))
        return real_found(runs, count, needles)

    monkeypatch.setattr(scan_recall_module, "_found", recording)
    return searched


QUERIES = [
    ["how the vault syncs", "vault", "syncs"],
    ["deploying next.js apps", "next.js"],
    ["bundles next.js zanzibar"],
    ["#web/frontend"],
    ["同步 笔记", "同步"],
    ["手机和电脑"],
    ["json value per line", "jsonl"],
    ["the"],
    ["sync phone", "phone"],
    ["zanzibar sync", "zanzibar"],
    ["how do i sync", "sync"],
    ["how do i sync", "sync", "phone sync devices", "json value", "value"],
]


def _part_as_typed(word: str) -> scan_recall_module._Part | None:
    """A word's part with every token and its as-typed form: what `_Part.of` simplifies."""
    tokens = tokenize_mixed(word)
    if not tokens:
        return None
    typed = word.strip(scan_recall_module._OUTER_PUNCTUATION)
    return scan_recall_module._Part(tokens, typed if len(tokens) > 1 and typed else None)


@pytest.mark.parametrize("held_bytes", [None, 0, 40], ids=["held", "spilled", "some held"])
@pytest.mark.parametrize("query", QUERIES, ids=" | ".join)
def test_words_looked_for_only_where_a_search_needs_them_find_what_a_search_everywhere_finds(
    scan_vault: Vault,
    monkeypatch: pytest.MonkeyPatch,
    spill_file: bool,
    query: list[str],
    held_bytes: int | None,
) -> None:
    monkeypatch.setattr(scan_recall_module, "RUN_BYTES", 16)  # a run per note or two
    lazy = ScanRecall(scan_vault, text_budget_bytes=held_bytes).candidates(query, 10)
    # Every token of every part, its as-typed form too, looked for in every note.
    monkeypatch.setattr(
        scan_recall_module,
        "_searched_whole",
        lambda searches, cached: set().union(*(search.tokens for search in searches)),
    )
    monkeypatch.setattr(scan_recall_module._Part, "of", staticmethod(_part_as_typed))
    assert lazy == ScanRecall(scan_vault, text_budget_bytes=held_bytes).candidates(query, 10)


def test_a_question_s_other_words_are_looked_for_only_in_the_notes_holding_its_rare_one(
    scan_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched = _texts_searched(monkeypatch)
    scan = ScanRecall(scan_vault)
    found = scan.candidates(["mentions zanzibar once", "zanzibar"], 10)
    assert paths(found) == ["Hidden words.md"]
    assert searched == [{"zanzibar"}]
    assert scan.candidates(["how the vault syncs", "vault"], 10)[0][0] == "Sync.md"
    assert searched[1:] == [{"vault"}]
    # A term of one part is found everywhere; a tag is found as the tag, not its parts.
    assert paths(scan.candidates(["#web/frontend"], 10)) == ["Web/Next.md"]
    assert searched[2:] == [{"#web/frontend"}]


def test_a_term_found_before_is_not_searched_for_again_until_the_notes_change(
    scan_vault: Vault, monkeypatch: pytest.MonkeyPatch, touch: Callable[[Path, str, int], None]
) -> None:
    searched = _texts_searched(monkeypatch)
    scan = ScanRecall(scan_vault)
    assert paths(scan.candidates(["zanzibar"], 10)) == ["Hidden words.md"]
    assert paths(scan.candidates(["zanzibar"], 10)) == ["Hidden words.md"]
    # A word found before anchors a longer term: only the new word is looked for, and
    # only in the note holding the old one.
    looked_in: list[tuple[str, int]] = []
    real_holds = scan_recall_module._Needle.holds

    def recording(needle: Any, buffer: bytes | bytearray, start: int, end: int) -> bool:
        looked_in.append((needle.token.decode(), end - start))
        return bool(real_holds(needle, buffer, start, end))

    monkeypatch.setattr(scan_recall_module._Needle, "holds", recording)
    assert paths(scan.candidates(["zanzibar mentions"], 10)) == ["Hidden words.md"]
    assert searched == [{"zanzibar"}]
    assert looked_in == [("mentions", len(SCAN_NOTES["Hidden words.md"]))]
    touch(scan_vault.root / "Sync.md", "A zanzibar sync.\n", 10)
    scan.refresh()
    assert set(paths(scan.candidates(["zanzibar"], 10))) == {"Hidden words.md", "Sync.md"}
    assert searched == [{"zanzibar"}, {"zanzibar"}]


def test_the_terms_kept_found_stay_within_their_bytes(
    scan_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    scan = ScanRecall(scan_vault)
    monkeypatch.setattr(scan_recall_module, "FOUND_CACHE_BYTES", 4 * len(scan))
    for term in ["zanzibar", "sync", "phone", "json", "bundles"]:
        scan.candidates([term], 10)
        scan.candidates(["zanzibar"], 10)  # taken again, it stays
    layout = scan._laid_out_notes()
    assert list(layout.found) == [
        (True, "bundles"),
        (False, "bundles"),
        *[(True, "zanzibar"), (False, "zanzibar")],
    ]


def test_a_word_s_tokens_are_looked_for_only_where_they_can_change_what_matches() -> None:
    tag = scan_recall_module._Part.of("#web/frontend")
    assert tag == scan_recall_module._Part(["#web/frontend"], None)
    cjk = scan_recall_module._Part.of("手机和电脑")
    assert cjk is not None
    assert cjk.as_typed is None
    assert cjk.words == ["手机", "机和", "和电", "电脑"]
    joined = scan_recall_module._Part.of("next.js?")
    assert joined == scan_recall_module._Part(["next", "js", "nextjs"], "next.js")
    assert scan_recall_module._Part.of("-") is None


def test_a_scan_refresh_interrupted_while_reading_loses_no_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A watched vault: the next refresh finds nothing changed and is skipped, so what the
    # interrupted one left must already be searchable (the note is read per search).
    vault = Vault(write_vault(tmp_path / "vault", SCAN_NOTES))
    scan = ScanRecall(vault)
    note = vault.root / "Hidden words.md"
    note.write_text("Mentions quokkas now.\n", encoding="utf-8")
    later = note.stat().st_mtime_ns + 10**10
    os.utime(note, ns=(later, later))

    def interrupted(files: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(scan, "_read_all", interrupted)
        with pytest.raises(KeyboardInterrupt):
            scan.refresh()
    scan.refresh()
    assert paths(scan.candidates(["quokkas"], 10)) == ["Hidden words.md"]
    assert scan.candidates(["zanzibar"], 10) == []


@pytest.mark.parametrize("budget", [None, 0], ids=["held", "spilled"])
def test_a_note_that_could_not_be_read_is_read_on_the_next_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int | None
) -> None:
    # A watched vault lists nothing as changed, yet the note failed only this once (too
    # many open files, say): the next refresh must try it again.
    vault = Vault(write_vault(tmp_path / "vault", SCAN_NOTES))
    original = scan_recall_module._open_hinted
    failed: list[str] = []

    def failing_once(file: str, stamp: tuple[int, int, int], limit: int) -> int | None:
        if file.endswith("Hidden words.md") and not failed:
            failed.append(file)
            return None
        return original(file, stamp, limit)

    monkeypatch.setattr(scan_recall_module, "_open_hinted", failing_once)
    scan = ScanRecall(vault, text_budget_bytes=budget)
    assert failed
    assert scan.candidates(["zanzibar"], 10) == []
    scan.refresh()
    assert paths(scan.candidates(["zanzibar"], 10)) == ["Hidden words.md"]


def test_scan_sees_where_each_note_starts_and_ends(tmp_path: Path) -> None:
    # Notes share one buffer: a note's last letters must not hide the next note's first
    # word, and a word may not run on into the next note.
    # Every note ends in a letter; of two notes opening with "sync", one is not first.
    notes: dict[str, str | bytes] = {f"N{i}.md": "xa" for i in range(5)}
    notes.update({"S1.md": "sync", "S2.md": "sync", "Tail.md": "js", "Head.md": "onward"})
    scan = ScanRecall(Vault(write_vault(tmp_path / "vault", notes), watch=False))
    assert set(paths(scan.candidates(["sync"], 10))) == {"S1.md", "S2.md"}
    assert paths(scan.candidates(["xasync"], 10)) == []
    assert paths(scan.candidates(["jsonward"], 10)) == []


@pytest.fixture(params=["spill file", "no spill file"])
def spill_file(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the scan may keep the notes beyond its budget in a temporary file."""
    if request.param == "spill file":
        return True

    def refused(self: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scan_recall_module.SpillFile, "__init__", refused)
    return False


@pytest.mark.parametrize("held_bytes", [0, 40, 200])
def test_a_scan_over_its_text_budget_finds_the_same_with_or_without_its_spill_file(
    scan_vault: Vault,
    monkeypatch: pytest.MonkeyPatch,
    held_bytes: int,
    spill_file: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    queries = [["sync"], ["js"], ["next.js"], ["同步"], ["#web/frontend"], ["zanzibar", "the"]]
    unbounded = ScanRecall(scan_vault)
    monkeypatch.setattr(scan_recall_module, "RUN_BYTES", 64)  # several runs
    with caplog.at_level(logging.WARNING):
        bounded = ScanRecall(scan_vault, text_budget_bytes=held_bytes)
    assert bounded._held_bytes <= held_bytes
    assert ("temporary file" in caplog.text) is not spill_file
    for query in queries:
        assert bounded.candidates(query, 10) == unbounded.candidates(query, 10)
    if held_bytes == 0:
        assert paths(bounded.candidates(["bundles"], 10)) == ["Web/Next.md"]
        (scan_vault.root / "Web/Next.md").unlink()
        bounded.refresh()
        assert paths(bounded.candidates(["bundles"], 10)) == []


def test_notes_beyond_the_budget_are_read_once_into_the_spill_file_not_per_search(
    scan_vault: Vault,
    monkeypatch: pytest.MonkeyPatch,
    touch: Callable[[Path, str, int], None],
    spill_file: bool,
) -> None:
    opened: list[str] = []
    original = scan_recall_module._open_hinted

    def counting(file: str, stamp: tuple[int, int, int], limit: int) -> int | None:
        opened.append(Path(file).name)
        return original(file, stamp, limit)

    monkeypatch.setattr(scan_recall_module, "_open_hinted", counting)
    scan = ScanRecall(scan_vault, text_budget_bytes=0)
    for term in ["zanzibar", "zanzi", "zanzib"]:
        assert paths(scan.candidates([term], 10)) == ["Hidden words.md"]
    # Read once, when listed; without the file, by every search of a term not searched before.
    assert len(opened) == (len(scan) if spill_file else 3 * len(scan))
    touch(scan_vault.root / "Hidden words.md", "Mentions a quokka now.\n", 10)
    scan.refresh()
    assert paths(scan.candidates(["zanzibar"], 10)) == []  # its old text stays unread
    assert paths(scan.candidates(["quokka"], 10)) == ["Hidden words.md"]


def test_scan_weighs_rare_terms_above_common_ones(scan_vault: Vault) -> None:
    found = ScanRecall(scan_vault).candidates(["zanzibar", "the"], 10)
    assert found[0][0] == "Hidden words.md"
    assert found[0][1] > max(score for path, score in found[1:])


def test_scan_follows_edits_and_leaves_the_vault_records_alone(
    scan_vault: Vault, touch: Callable[[Path, str, int], None]
) -> None:
    scan = ScanRecall(scan_vault)
    root = scan_vault.root
    touch(root / "Hidden words.md", "Now about quokkas.\n", 10)
    (root / "Sync.md").unlink()
    (root / "New.md").write_text("A zanzibar trip.\n", encoding="utf-8")
    scan.refresh()
    assert paths(scan.candidates(["zanzibar"], 10)) == ["New.md"]
    assert paths(scan.candidates(["quokkas"], 10)) == ["Hidden words.md"]
    assert "Sync.md" not in paths(scan.candidates(["sync"], 10))
    info = scan.note("New.md")
    assert info is not None
    assert info.title == "New"
    assert scan.note("Sync.md") is None
    assert scan.note("../outside.md") is None
    assert scan_vault.notes == {}  # nothing was recorded: the index build will read them
    assert scan.folder_sizes()["Web"] == 2


def test_scan_skips_notes_over_the_size_limit(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", {"Big.md": "walrus " * 100, "Small.md": "walrus"})
    scan = ScanRecall(Vault(root, max_note_bytes=100, watch=False))
    assert paths(scan.candidates(["walrus"], 10)) == ["Small.md"]


def test_list_files_and_peek_read_nothing_into_the_records(tmp_path: Path) -> None:
    outside = write_vault(tmp_path / "outside", {"Secret.md": "secret"})
    root = write_vault(tmp_path / "vault", {"A.md": "# A\n#tag", "Sub/B.md": "b"})
    os.symlink(outside / "Secret.md", root / "Link.md")
    vault = Vault(root, watch=False)
    files = vault.list_files()
    assert set(files) == {"A.md", "Sub/B.md"}
    abs_path, (_mtime_ns, size, _ctime_ns) = files["A.md"]
    assert Path(abs_path) == root / "A.md"
    assert size == len("# A\n#tag")
    info = vault.reader.peek("A.md")
    assert info is not None
    assert info.parsed.tags == ("#tag",)
    assert vault.reader.peek("../outside/Secret.md") is None
    assert vault.reader.peek("Missing.md") is None
    assert vault.notes == {}
    assert vault.version == 0


def test_first_search_scans_then_the_background_index_takes_over(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(
        index_policy=BACKGROUND, vault_path=str(vault_dir), persist_index=False
    )
    scanned = retriever.invoke("OAuth deployment")
    assert not retriever.index_ready or retriever.core.index.recall.size > 0
    assert scanned
    assert scanned[0].metadata["path"].startswith("Projects/Alpha/")
    assert retriever.wait_for_index(timeout=30)
    assert retriever.index_ready
    assert retriever.core.index.recall.size == len(retriever.core.vault.notes)
    indexed = retriever.invoke("OAuth deployment")
    assert {d.metadata["path"] for d in indexed[:2]} == {d.metadata["path"] for d in scanned[:2]}
    assert any("graphConnections" in d.metadata["explanation"] for d in indexed)


def test_scanning_search_has_no_graph_boost_and_full_metadata(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(
        index_policy=SCAN_ONLY, vault_path=str(vault_dir), persist_index=False
    )
    docs = retriever.invoke("OAuth deployment")
    assert not retriever.index_ready
    assert docs
    assert all("graphConnections" not in d.metadata["explanation"] for d in docs)
    deployment = next(d for d in docs if d.metadata["path"] == "Projects/Alpha/Deployment.md")
    assert deployment.metadata["tags"] == ["#project/alpha", "#ops"]
    assert deployment.metadata["title"] == "Deployment"
    assert "We deploy #project/alpha" in deployment.page_content
    assert retriever.core.vault.notes == {}


async def test_async_search_scans_too(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(
        index_policy=BACKGROUND, vault_path=str(vault_dir), persist_index=False
    )
    docs = await retriever.ainvoke("zeppelin")
    assert [d.metadata["path"] for d in docs] == ["Crlf.md"]
    assert retriever.wait_for_index(timeout=30)


def test_edits_made_while_the_index_builds_are_found(
    vault_dir: Path,
    held_build: tuple[threading.Event, threading.Event],
    touch: Callable[[Path, str, int], None],
) -> None:
    built, release = held_build
    retriever = TieredLexicalRetriever(
        index_policy=BACKGROUND, vault_path=str(vault_dir), persist_index=False
    )
    assert retriever.invoke("zeppelin")
    assert built.wait(30)  # the child has read the vault and written its index
    touch(vault_dir / "Crlf.md", "# Windows note\n\nNow about a dirigible.\n", 10)
    (vault_dir / "Fresh.md").write_text("A note about quokkas.\n", encoding="utf-8")
    assert [d.metadata["path"] for d in retriever.invoke("quokkas")] == ["Fresh.md"]
    assert not retriever.index_ready
    release.set()
    assert retriever.wait_for_index(timeout=30)
    assert [d.metadata["path"] for d in retriever.invoke("quokkas")] == ["Fresh.md"]
    assert [d.metadata["path"] for d in retriever.invoke("dirigible")] == ["Crlf.md"]
    assert retriever.invoke("zeppelin") == []


def test_index_is_taken_over_when_another_reader_refreshed_the_shared_vault(
    vault_dir: Path,
    held_build: tuple[threading.Event, threading.Event],
    monkeypatch: pytest.MonkeyPatch,
    touch: Callable[[Path, str, int], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    built, release = held_build
    vault = Vault(vault_dir)
    retriever = TieredLexicalRetriever(index_policy=BACKGROUND, vault=vault, persist_index=False)
    assert retriever.invoke("zeppelin")
    assert built.wait(30)
    touch(vault_dir / "Crlf.md", "# Windows note\n\nNow about a dirigible.\n", 10)
    vault.refresh()  # as a FilterRetriever on the same vault does
    read_again: list[str] = []
    original_read = NoteReader.read_text

    def counting(self: NoteReader, path: str) -> str | None:
        read_again.append(path)
        return original_read(self, path)

    monkeypatch.setattr(NoteReader, "read_text", counting)
    release.set()
    with caplog.at_level(logging.WARNING):
        assert retriever.wait_for_index(timeout=30)
    assert "failed" not in caplog.text
    assert read_again == ["Crlf.md"]  # the index was current for every other note
    assert [d.metadata["path"] for d in retriever.invoke("dirigible")] == ["Crlf.md"]
    assert retriever.invoke("zeppelin") == []
    assert retriever.core.index.recall.size == len(vault.notes)


def test_unsaved_index_leaves_no_file_behind(
    vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))  # where the child writes its index
    retriever = TieredLexicalRetriever(
        index_policy=BACKGROUND, vault_path=str(vault_dir), persist_index=False
    )
    assert retriever.invoke("zeppelin")
    assert retriever.wait_for_index(timeout=30)
    assert retriever.core.index.recall.size == len(retriever.core.vault.notes) > 0
    assert list(temporary.iterdir()) == []
    assert not (vault_dir / ".vaultsearch").exists()


def test_index_process_warnings_reach_the_searching_process(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = Vault(vault_dir, watch=False)
    with caplog.at_level(logging.WARNING):
        written = build_index_file(vault, tmp := vault_dir.parent / "index.npz")
    assert written == tmp
    broken = [r for r in caplog.records if "Broken.md" in r.getMessage()]
    assert [r.name for r in broken] == ["langchain_vaultsearch.vault.vault"]
    assert broken[0].levelno == logging.WARNING


def test_bundled_app_does_not_start_itself_as_the_index_process(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(IndexBuildError, match="cannot start a Python interpreter"):
        build_index_file(Vault(vault_dir, watch=False), None)


def test_index_process_failure_is_reported_with_its_cause(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    vault = Vault(root, watch=False)
    root.rmdir()
    with pytest.raises(IndexBuildError, match="does not exist"):
        build_index_file(vault, None)


def test_background_index_is_saved_for_the_next_process(vault_dir: Path) -> None:
    first = TieredLexicalRetriever(index_policy=BACKGROUND_SAVED, vault_path=str(vault_dir))
    expected = first.invoke("OAuth deployment")
    assert first.wait_for_index(timeout=30)
    assert index_path(first.core.vault).is_file()
    second = TieredLexicalRetriever(index_policy=BACKGROUND_SAVED, vault_path=str(vault_dir))
    restored = second.invoke("OAuth deployment")
    assert second.index_ready  # restored: no scan
    assert restored[0].metadata["path"] == expected[0].metadata["path"]


def test_index_is_not_saved_when_the_vault_moved_on(vault_dir: Path) -> None:
    vault = Vault(vault_dir)
    index = RecallIndex()
    apply_changes(index, vault.refresh())
    built_at = vault.version
    (vault_dir / "Later.md").write_text("later", encoding="utf-8")
    vault.refresh()
    assert not save_index(vault, index, expected_version=built_at)
    assert not index_path(vault).exists()
    assert save_index(vault, index, expected_version=vault.version)


def test_failed_background_build_falls_back_to_indexing_in_the_foreground(
    vault_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def failing(vault: Vault, target: Path | None, processes: int | None) -> Path:
        raise IndexBuildError("simulated")

    monkeypatch.setattr(lexical_index_module, "build_index_file", failing)
    retriever = TieredLexicalRetriever(index_policy=BACKGROUND, vault_path=str(vault_dir))
    with caplog.at_level(logging.WARNING):
        assert retriever.invoke("zeppelin")
        assert retriever.wait_for_index(timeout=30)
    assert retriever.core.index.recall.size == len(retriever.core.vault.notes) > 0
    assert "Indexing" in caplog.text
    assert "failed" in caplog.text
    assert "simulated" in caplog.text
    docs = retriever.invoke("zeppelin")
    assert [d.metadata["path"] for d in docs] == ["Crlf.md"]
    assert retriever.core.index.recall.size == len(retriever.core.vault.notes)


def test_exclusion_rules_hold_while_scanning(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(
        index_policy=SCAN_ONLY,
        vault_path=str(vault_dir),
        exclusions=["Daily", "#ops"],
        persist_index=False,
    )
    found = {d.metadata["path"] for d in retriever.invoke("deployment OAuth")}
    assert "Projects/Alpha/OAuth Setup.md" in found
    assert "Daily/2024-03-05.md" not in found  # excluded folder
    assert "Projects/Alpha/Deployment.md" not in found  # excluded tag: needs the parse


def test_exclusion_rules_hold_once_the_index_process_took_over(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(
        index_policy=BACKGROUND,
        vault_path=str(vault_dir),
        exclusions=["Daily", "#ops"],
        persist_index=False,
    )
    assert retriever.invoke("deployment OAuth")
    assert retriever.wait_for_index(timeout=30)
    assert retriever.core.index.recall.size > 0
    found = {d.metadata["path"] for d in retriever.invoke("deployment OAuth")}
    assert "Projects/Alpha/OAuth Setup.md" in found
    assert "Daily/2024-03-05.md" not in found
    assert "Projects/Alpha/Deployment.md" not in found


def test_small_vaults_index_in_the_foreground(vault_dir: Path) -> None:
    retriever = TieredLexicalRetriever(vault_path=str(vault_dir), persist_index=False)
    assert retriever.invoke("zeppelin")
    assert retriever.index_ready
    assert retriever.core.index.recall.size > 0


@pytest.mark.parametrize(
    "query",
    ["oauth", "project alpha deployment", "piano scales", "学习", "#meeting", "Auth.js JWT"],
)
def test_scan_and_index_agree_on_the_best_note_of_the_sample_vault(query: str) -> None:
    scanning = TieredLexicalRetriever(
        index_policy=SCAN_ONLY, vault_path=str(SAMPLE_VAULT), persist_index=False, k=5
    )
    scanned = scanning.invoke(query)
    assert not scanning.index_ready
    indexed_retriever = TieredLexicalRetriever(vault_path=str(SAMPLE_VAULT), persist_index=False)
    indexed = indexed_retriever.invoke(query, k=5)
    assert indexed_retriever.index_ready
    assert scanned
    assert indexed
    assert scanned[0].metadata["path"] == indexed[0].metadata["path"]


def test_chunks_by_id_for_recorded_and_peeked_notes(vault_dir: Path) -> None:
    vault = Vault(vault_dir, watch=False)
    store = ChunkCache(vault)
    peeked = vault.reader.peek("C# Notes.md")
    assert peeked is not None
    chunk = store.get_chunk("C# Notes.md#0", peeked)
    assert chunk is not None
    assert "LINQ queries" in chunk.content
    assert store.get_chunk("C# Notes.md#0") is None  # not recorded until a refresh
    vault.refresh()
    assert "LINQ queries" in store.get_chunk_text("C# Notes.md#0")
    assert store.get_chunk_text("C# Notes.md#1") == ""
    assert store.get_chunk("C# Notes.md") is None


def test_a_term_is_found_within_one_note_never_across_two_or_in_a_forgotten_one(
    tmp_path: Path, touch: Callable[[Path, str, int], None]
) -> None:
    """The notes' texts lie one after another in a buffer that each search runs through
    whole: a hit must fall inside one listed note's text."""
    root = write_vault(
        tmp_path / "v",
        {"A.md": "ends with alpha", "B.md": "beta starts here", "C.md": "quokka quokka\n"},
    )
    scan = ScanRecall(Vault(root, watch=False))
    assert paths(scan.candidates(["alpha\nbeta"], 10)) == []  # as typed: across A and B
    assert paths(scan.candidates(["alphabeta"], 10)) == []
    touch(root / "C.md", "no longer about that animal\n", 10)
    scan.refresh()  # C's old text stays in the first buffer, between A and B's and the new
    assert paths(scan.candidates(["quokka"], 10)) == []
    assert paths(scan.candidates(["animal", "beta"], 10)) == ["B.md", "C.md"]


def test_records_the_background_build_wrote_are_trusted_at_the_handover(
    vault_dir: Path, count_reads: Callable[[], int]
) -> None:
    """This process's own build read the notes moments ago: its records are not read and
    parsed again to check them, as the records of a saved index another process opens are."""
    retriever = TieredLexicalRetriever(index_policy=BACKGROUND_SAVED, vault_path=str(vault_dir))
    assert retriever.invoke("zeppelin")
    assert retriever.wait_for_index(timeout=30)
    before = count_reads()
    assert retriever.invoke("OAuth deploy")
    assert count_reads() == before
    restarted = TieredLexicalRetriever(index_policy=BACKGROUND_SAVED, vault_path=str(vault_dir))
    assert restarted.invoke("OAuth deploy")
    assert count_reads() > before  # a saved index another process opens is checked note by note


def test_scan_breaks_ties_in_path_order_as_the_built_index_does(tmp_path: Path) -> None:
    names = ["m/Walrus 3.md", "Walrus 9.md", "a/Walrus 1.md", "z/Walrus 0.md", "Walrus 5.md"]
    root = write_vault(tmp_path / "vault", {})
    for name in names:  # created out of order, so the folders list them out of order too
        write_vault(root, {name: "one walrus here\n"})
    scanned = ScanRecall(Vault(root, watch=False)).candidates(["walrus"], 3)
    spec = VaultSpec(root=str(root), include_hidden=False, max_note_bytes=MAX_NOTE_BYTES)
    assert build_vault_index(spec, tmp_path / "index.npz", processes=1)
    loaded = load_index(Vault(root, watch=False), tmp_path / "index.npz")
    assert loaded is not None
    built = loaded[0].candidates(["walrus"], 3)
    assert paths(scanned) == paths(built) == sorted(names)[:3]


def test_a_note_longer_once_lowercased_is_still_found(tmp_path: Path) -> None:
    # U+023A is two bytes in UTF-8; its lowercase, U+2C65, is three.
    root = write_vault(tmp_path / "vault", {"Longer.md": "\u023a" * 50 + " walrus\n", "B.md": "b"})
    scan = ScanRecall(Vault(root, watch=False))
    assert paths(scan.candidates(["walrus"], 10)) == ["Longer.md"]
    assert paths(scan.candidates(["\u2c65" * 50], 10)) == ["Longer.md"]


def test_the_build_starts_before_the_first_search_reads_the_notes(
    held_retriever: tuple[TieredLexicalRetriever, threading.Event, threading.Event],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retriever, built, release = held_retriever
    index = retriever.core.index
    building_when_scanned: list[bool] = []

    class WatchedScan(ScanRecall):
        def refresh(self, listed: Listing | None = None) -> None:
            if not building_when_scanned:
                building_when_scanned.append(index._builder is not None)
            super().refresh(listed)

    monkeypatch.setattr(lexical_index_module, "ScanRecall", WatchedScan)
    assert retriever.invoke("OAuth deployment")
    assert building_when_scanned == [True]
    assert built.wait(30)
    release.set()
    assert retriever.wait_for_index(timeout=30)


def test_the_build_process_yields_to_the_searching_one(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", {"A.md": "alpha", "B.md": "beta"})
    request = {
        "root": str(root),
        "include_hidden": False,
        "max_note_bytes": MAX_NOTE_BYTES,
        "target": str(tmp_path / "index.npz"),
        "processes": 1,
    }
    code = (
        "import json, os, sys; from langchain_vaultsearch.search.index_worker import main; "
        "main([sys.argv[1]]); print(os.nice(0))"
    )
    done = subprocess.run(  # noqa: S603 - this interpreter, our module
        [sys.executable, "-c", code, json.dumps(request)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert (tmp_path / "index.npz").is_file()
    niceness = int(done.stdout.splitlines()[-1])
    assert niceness == min(19, os.nice(0) + index_worker_module.BUILD_NICENESS)


def test_searches_lay_the_notes_out_again_only_after_they_changed(
    scan_vault: Vault,
    touch: Callable[[Path, str, int], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scan = ScanRecall(scan_vault)
    layouts = []
    real_of = scan_recall_module._Layout.of

    def counting(notes: dict[str, object]) -> object:
        layouts.append(len(notes))
        return real_of(notes)  # type: ignore[arg-type]

    monkeypatch.setattr(scan_recall_module._Layout, "of", staticmethod(counting))
    assert paths(scan.candidates(["zanzibar"], 10)) == ["Hidden words.md"]
    scan.refresh()
    assert paths(scan.candidates(["zanzibar"], 10)) == ["Hidden words.md"]
    assert scan.folder_sizes() == Counter(folder_of(path) for path in scan_vault.list_files())
    assert len(layouts) == 1
    touch(scan_vault.root / "Fresh" / "Okapi.md", "An okapi\n", 10)
    scan.refresh()
    assert paths(scan.candidates(["okapi"], 10)) == ["Fresh/Okapi.md"]
    assert scan.folder_sizes()["Fresh"] == 1
    assert len(layouts) == 2


def test_a_note_grown_over_the_size_limit_leaves_the_searches(
    tmp_path: Path, touch: Callable[[Path, str, int], None]
) -> None:
    root = write_vault(tmp_path / "vault", {"A.md": "alpha walrus", "B.md": "beta walrus"})
    scan = ScanRecall(Vault(root, max_note_bytes=100, watch=False), text_budget_bytes=0)
    assert paths(scan.candidates(["alpha"], 10)) == ["A.md"]
    touch(root / "A.md", "alpha " * 50, 10)
    scan.refresh()
    assert len(scan) == 1
    assert paths(scan.candidates(["walrus"], 10)) == ["B.md"]
    assert paths(scan.candidates(["alpha"], 10)) == []
    assert scan.folder_sizes() == Counter({"": 1})


def test_no_room_is_held_for_notes_over_the_size_limit(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", {"Big.md": "walrus " * 100, "Small.md": "walrus"})
    scan = ScanRecall(Vault(root, max_note_bytes=100, watch=False))
    held = scan._notes["Small.md"].buffer
    assert held is not None
    assert len(held) == len("\nwalrus")


def test_a_scan_that_failed_to_start_is_made_again_while_the_build_runs(
    held_retriever: tuple[TieredLexicalRetriever, threading.Event, threading.Event],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retriever, built, release = held_retriever
    failures = [KeyboardInterrupt("interrupted while reading the notes")]

    class FailingOnce(ScanRecall):
        def refresh(self, listed: Listing | None = None) -> None:
            if failures:
                raise failures.pop()
            super().refresh(listed)

    monkeypatch.setattr(lexical_index_module, "ScanRecall", FailingOnce)
    with pytest.raises(KeyboardInterrupt):
        retriever.invoke("OAuth deployment")
    assert retriever.invoke("OAuth deployment")
    assert not retriever.index_ready  # scanned, not indexed here beside the build
    assert retriever.core.vault.notes == {}
    release.set()
    assert built.wait(30)
    assert retriever.wait_for_index(timeout=30)
