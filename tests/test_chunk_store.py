"""The JSONL chunk store: valid lines read, bad lines reported with file and line, filters."""

from __future__ import annotations

import json
import logging
import tracemalloc
from pathlib import Path

import pytest

from langchain_vaultsearch.chunk_store import JsonlChunkStore, export_vault_chunks, jsonl_store
from langchain_vaultsearch.chunk_store.jsonl_store import check_filters, matches_filters
from tests.conftest import SAMPLE_VAULT


def write_lines(path: Path, lines: list[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")


def test_valid_lines_become_records_with_their_location(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "a.jsonl",
        [
            {"id": "a1", "text": "first chunk", "metadata": {"form_number": "W-2"}},
            "",  # blank lines are not chunks, and not problems
            {"id": "a2", "text": "second chunk"},
        ],
    )
    write_lines(tmp_path / "sub" / "b.jsonl", [{"id": 7, "text": "numeric id"}])
    store = JsonlChunkStore(tmp_path)
    records = list(store.records())
    assert [r.id for r in records] == ["a1", "a2", "7"]
    assert records[0].metadata == {"form_number": "W-2"}
    assert records[1].metadata == {}
    assert (records[1].location.file, records[1].location.line) == ("a.jsonl", 3)
    assert records[2].location.file == "sub/b.jsonl"
    again = store.read(records[1].location)
    assert again is not None
    assert (again.id, again.text) == ("a2", "second chunk")
    assert store.problems == []


def test_bad_lines_are_skipped_and_reported_with_file_and_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_lines(
        tmp_path / "chunks.jsonl",
        [
            {"id": "ok", "text": "kept"},
            "{not json",
            "[1, 2]",
            {"id": "no-text"},
            {"id": "blank", "text": "   "},
            {"text": "no id"},
            {"id": "ok", "text": "a duplicate"},
            {"id": "meta", "text": "x", "metadata": ["not", "an", "object"]},
            {"id": "ok2", "text": "also kept", "metadata": None},
        ],
    )
    store = JsonlChunkStore(tmp_path)
    with caplog.at_level(logging.WARNING):
        records = list(store.records())
    assert [r.id for r in records] == ["ok", "ok2"]
    reasons = {(p.line, p.reason.split(" (")[0]) for p in store.problems}
    assert reasons == {
        (2, "not valid JSON"),
        (3, "not a JSON object"),
        (4, "no text"),
        (5, "no text"),
        (6, "no id"),
        (7, "duplicate id 'ok'"),
        (8, "metadata is not a JSON object"),
    }
    assert "chunks.jsonl:7: duplicate id 'ok'" in caplog.text
    assert all(p.file == "chunks.jsonl" for p in store.problems)


def test_an_oversized_line_is_skipped_at_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The limit was checked once the whole line was read: a 3 GB file without a newline
    # took 3.3 GB and a MemoryError. A 1 MB limit and 8 MB lines show the same thing.
    limit = 1024 * 1024
    monkeypatch.setattr(jsonl_store, "MAX_LINE_BYTES", limit)
    first = json.dumps({"id": "a", "text": "before"}).encode() + b"\n"
    runaway = b'{"id": "big", "text": "' + b"x" * (8 * limit) + b'"}\n'
    after = json.dumps({"id": "b", "text": "after"}).encode() + b"\r\n"
    unterminated = b"y" * (8 * limit)  # the last line, with no newline at all
    (tmp_path / "chunks.jsonl").write_bytes(first + runaway + after + unterminated)
    store = JsonlChunkStore(tmp_path)
    tracemalloc.start()
    try:
        with caplog.at_level(logging.WARNING):
            records = list(store.records())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * limit, peak
    assert [r.id for r in records] == ["a", "b"]
    assert records[1].location.line == 3
    again = store.read(records[1].location)
    assert again is not None
    assert again.text == "after"
    assert [(p.line, p.reason) for p in store.problems] == [
        (2, f"longer than {limit:,} bytes"),
        (4, f"longer than {limit:,} bytes"),
    ]
    assert "chunks.jsonl:2: longer than" in caplog.text


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        JsonlChunkStore(tmp_path / "nowhere")
    (tmp_path / "file.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        JsonlChunkStore(tmp_path / "file.jsonl")


def test_hidden_folders_and_other_files_are_not_read(tmp_path: Path) -> None:
    write_lines(tmp_path / ".vaultsearch" / "x.jsonl", [{"id": "hidden", "text": "no"}])
    write_lines(tmp_path / "notes.txt", [{"id": "txt", "text": "no"}])
    write_lines(tmp_path / "c.jsonl", [{"id": "c", "text": "yes"}])
    assert [r.id for r in JsonlChunkStore(tmp_path).records()] == ["c"]


def test_filters_match_values_lists_and_list_metadata() -> None:
    meta = {"doc_type": "form", "year": 2024, "tags": ["#tax", "#irs"], "final": True}
    assert matches_filters(meta, None)
    assert matches_filters(meta, {"doc_type": "form"})
    assert matches_filters(meta, {"doc_type": ["guide", "form"]})
    assert matches_filters(meta, {"tags": "#irs", "year": 2024})
    assert not matches_filters(meta, {"doc_type": "guide"})
    assert not matches_filters(meta, {"missing": "x"})  # the seed let these through
    assert not matches_filters({"count": 1}, {"count": True})  # 1 == True, but not here
    assert matches_filters(meta, {"final": True})


def test_get_chunks_applies_filters(tmp_path: Path) -> None:
    write_lines(
        tmp_path / "a.jsonl",
        [
            {"id": "f", "text": "a form", "metadata": {"doc_type": "form"}},
            {"id": "g", "text": "a guide", "metadata": {"doc_type": "guide"}},
            {"id": "n", "text": "no type"},
        ],
    )
    store = JsonlChunkStore(tmp_path)
    assert [r.id for r in store.get_chunks()] == ["f", "g", "n"]
    assert [r.id for r in store.get_chunks(filters={"doc_type": "form"})] == ["f"]


@pytest.mark.parametrize("bad", [["doc_type"], {1: "x"}, {"a": {"nested": 1}}])
def test_malformed_filters_are_value_errors(bad: object) -> None:
    with pytest.raises(ValueError, match="filter"):
        check_filters(bad)  # type: ignore[arg-type]


def test_export_writes_the_vaults_chunks_with_their_ids_and_metadata(tmp_path: Path) -> None:
    report = export_vault_chunks(SAMPLE_VAULT, tmp_path / "out")
    assert report.path == tmp_path / "out" / "vault-chunks.jsonl"
    assert report.notes > 10
    assert (report.path.stat().st_mode & 0o777) == 0o644
    store = JsonlChunkStore(tmp_path / "out")
    records = list(store.records())
    assert len(records) == report.chunks
    assert store.problems == []
    first = next(r for r in records if r.id == "Engineering/PostgreSQL Indexing.md#0")
    assert first.metadata["path"] == "Engineering/PostgreSQL Indexing.md"
    assert first.metadata["title"] == "PostgreSQL Indexing"
    assert first.metadata["chunk_index"] == 0
    assert first.text.startswith("\n\nNOTE TITLE: [[PostgreSQL Indexing]]")
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_a_link_to_a_file_outside_the_folder_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "secret.jsonl"
    outside.write_text(json.dumps({"id": "s-1", "text": "walrus passwords"}) + "\n")
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "own.jsonl").write_text(json.dumps({"id": "o-1", "text": "own chunk"}) + "\n")
    (folder / "inside-link.jsonl").symlink_to(folder / "own.jsonl")
    (folder / "link.jsonl").symlink_to(outside)
    store = JsonlChunkStore(folder)
    with caplog.at_level(logging.WARNING):
        names = [path.name for path in store.files()]
        store.files()
    assert names == ["inside-link.jsonl", "own.jsonl"]
    assert caplog.text.count("links outside the chunk folder") == 1
