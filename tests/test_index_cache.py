"""The saved recall index: restarts read only what changed, and a bad file never hurts."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from langchain_vaultsearch.search import core as core_module
from langchain_vaultsearch.search.core import SearchCore
from langchain_vaultsearch.search.index_cache import index_path, load_index
from langchain_vaultsearch.vault import vault as vault_module
from langchain_vaultsearch.vault.markdown import Heading, Link, ParsedNote, parse_note
from langchain_vaultsearch.vault.note_records import (
    NotPortableError,
    note_record,
    parse_record,
)
from langchain_vaultsearch.vault.vault import Vault
from tests.conftest import write_vault

QUERIES = ["walrus", "topic7", "学习", "kraken migration", "#project/alpha"]


def notes(count: int) -> dict[str, str | bytes]:
    written: dict[str, str | bytes] = {
        f"Folder{i % 4}/Note {i:03d}.md": (
            f"---\ncreated: 2024-01-{i % 28 + 1:02d}\ntags: [topic{i % 9}]\n---\n"
            f"# Note {i}\n\nwalrus number{i} topic{i % 9} [[Note {(i + 1) % count:03d}]]\n"
        )
        for i in range(count)
    }
    written["学习笔记.md"] = "# 学习笔记\n\n我的学习笔记。 #project/alpha\n"
    written["Kraken.md"] = "The kraken migration plan.\n"
    return written


@pytest.fixture
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Save even small test vaults, after any number of newly read notes."""
    monkeypatch.setattr(core_module, "PERSIST_MIN_NOTES", 10)
    monkeypatch.setattr(core_module, "SAVE_AFTER_NOTES", 1)


@pytest.fixture
def count_reads(monkeypatch: pytest.MonkeyPatch) -> Callable[[], int]:
    """Count notes the vault reads and parses from disk."""
    reads = [0]
    original = vault_module.parse_note

    def counting(text: str) -> ParsedNote:
        reads[0] += 1
        return original(text)

    monkeypatch.setattr(vault_module, "parse_note", counting)
    return lambda: reads[0]


def results(core: SearchCore) -> list[list[tuple[str, float]]]:
    return [[(r.id, round(r.score, 9)) for r in core.retrieve(q).results] for q in QUERIES]


def test_restart_reads_no_unchanged_note_and_ranks_the_same(
    tmp_path: Path, small_thresholds: None, count_reads: Callable[[], int]
) -> None:
    root = write_vault(tmp_path / "vault", notes(40))
    first = SearchCore(Vault(root))
    expected = results(first)
    assert index_path(first.vault).is_file()
    reads_before = count_reads()
    second = SearchCore(Vault(root))
    assert results(second) == expected
    assert count_reads() == reads_before
    assert second.vault.backlinks("Folder1/Note 001.md") == {"Folder0/Note 000.md"}
    created = second.vault.notes["Folder0/Note 000.md"].parsed.frontmatter["created"]
    assert created == dt.date(2024, 1, 1)


def test_restart_sees_edits_additions_and_deletions(
    tmp_path: Path,
    small_thresholds: None,
    count_reads: Callable[[], int],
    touch: Callable[[Path, str, int], None],
) -> None:
    root = write_vault(tmp_path / "vault", notes(30))
    SearchCore(Vault(root)).retrieve("walrus")
    touch(root / "Kraken.md", "Now about the narwhal instead.\n", 10)
    (root / "Folder1/Note 001.md").unlink()
    write_vault(root, {"New/Okapi.md": "An okapi appears.\n"})
    reads_before = count_reads()
    core = SearchCore(Vault(root))
    assert [r.id for r in core.retrieve("narwhal").results] == ["Kraken.md#0"]
    assert core.retrieve("migration").results == []
    assert [r.id for r in core.retrieve("okapi").results] == ["New/Okapi.md#0"]
    assert all("Note 001" not in r.id for r in core.retrieve("number1").results)
    assert count_reads() - reads_before == 2  # the edited note and the new one


def test_damaged_or_foreign_index_is_ignored_with_a_warning(
    tmp_path: Path, small_thresholds: None, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    expected = results(SearchCore(Vault(root), persist_index=False))
    path = index_path(Vault(root))
    path.parent.mkdir()
    path.write_bytes(b"PK\x03\x04 this is not a zip file")
    with caplog.at_level(logging.WARNING):
        assert results(SearchCore(Vault(root))) == expected
    assert "Ignoring the saved search index" in caplog.text
    # The search saved a good index over the damaged one.
    assert load_index(Vault(root)) is not None


def test_index_holding_pickled_objects_is_refused(
    tmp_path: Path, small_thresholds: None, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root)).retrieve("walrus")
    path = index_path(Vault(root))
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["terms"] = np.array([object()], dtype=object)
    with path.open("wb") as out:
        np.savez(out, **arrays)
    with caplog.at_level(logging.WARNING):
        assert load_index(Vault(root)) is None
    assert "Ignoring the saved search index" in caplog.text


def test_inconsistent_arrays_are_refused(tmp_path: Path, small_thresholds: None) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root)).retrieve("walrus")
    path = index_path(Vault(root))
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["body_notes"] = arrays["body_notes"] + 10_000
    with path.open("wb") as out:
        np.savez(out, **arrays)
    vault = Vault(root)
    assert load_index(vault) is None
    assert vault.notes == {}  # nothing adopted from a refused file


def test_index_from_another_code_version_is_ignored(
    tmp_path: Path, small_thresholds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root)).retrieve("walrus")
    monkeypatch.setattr("langchain_vaultsearch.search.index_cache.format_key", lambda: "other")
    assert load_index(Vault(root)) is None


def test_unwritable_cache_folder_is_not_an_error(tmp_path: Path, small_thresholds: None) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    (root / ".vaultsearch").write_text("a file where the folder would go")
    core = SearchCore(Vault(root))
    assert core.retrieve("walrus").results


def test_small_vaults_and_opted_out_cores_save_nothing(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root)).retrieve("walrus")  # below PERSIST_MIN_NOTES
    assert not (root / ".vaultsearch").exists()


def test_opted_out_core_saves_nothing(tmp_path: Path, small_thresholds: None) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), persist_index=False).retrieve("walrus")
    assert not (root / ".vaultsearch").exists()


def test_note_with_frontmatter_json_cannot_carry_is_read_again(
    tmp_path: Path, small_thresholds: None, count_reads: Callable[[], int]
) -> None:
    written = notes(20)
    written["Binary.md"] = "---\nblob: !!binary aGVsbG8=\n---\nThe quokka note.\n"
    root = write_vault(tmp_path / "vault", written)
    SearchCore(Vault(root)).retrieve("walrus")
    reads_before = count_reads()
    core = SearchCore(Vault(root))
    assert [r.id for r in core.retrieve("quokka").results] == ["Binary.md#0"]
    assert count_reads() - reads_before == 1
    assert core.vault.notes["Binary.md"].parsed.frontmatter["blob"] == b"hello"


def test_cores_sharing_a_vault_all_see_changes(
    tmp_path: Path, touch: Callable[[Path, str, int], None]
) -> None:
    root = write_vault(tmp_path / "vault", {"a.md": "walrus", "b.md": "narwhal"})
    vault = Vault(root)
    first, second = SearchCore(vault), SearchCore(vault)
    assert [r.id for r in first.retrieve("walrus").results] == ["a.md#0"]
    # `first` refreshed the vault; `second` must still index every note.
    assert [r.id for r in second.retrieve("narwhal").results] == ["b.md#0"]
    touch(root / "a.md", "okapi", 10)
    write_vault(root, {"c.md": "quokka"})
    assert [r.id for r in first.retrieve("okapi").results] == ["a.md#0"]
    assert [r.id for r in second.retrieve("okapi").results] == ["a.md#0"]
    assert [r.id for r in second.retrieve("quokka").results] == ["c.md#0"]
    assert second.retrieve("walrus").results == []


def test_note_record_round_trip() -> None:
    text = (
        "---\ncreated: 2024-03-05\nupdated: 2024-03-05 10:30:00\n"
        "tags: [a/b]\naliases: [Alt]\nnested: {k: [1, 2.5, null, true]}\n---\n"
        "# Head\n\nSee [[Other#Part|label]] and ![[Pic.png]] #inline\n"
    )
    parsed = parse_note(text)
    record = note_record("x/Note.md", (123, 456), 1.5, 2.5, parsed)
    assert parse_record(record) == ("x/Note.md", (123, 456), 1.5, 2.5, parsed)
    assert parsed.links[0] == Link("Other", "Part", "label", False)
    assert parsed.headings[0] == Heading(1, "Head", parsed.body_start)


@pytest.mark.parametrize(
    "frontmatter",
    [{"blob": b"x"}, {"set": {1, 2}}, {1: "int key"}, {"d": {dt.date(2024, 1, 1): 1}}],
)
def test_frontmatter_json_cannot_carry_is_refused(frontmatter: dict[object, object]) -> None:
    parsed = ParsedNote(frontmatter=frontmatter)  # type: ignore[arg-type]
    with pytest.raises(NotPortableError):
        note_record("n.md", (1, 1), 0.0, 0.0, parsed)


@pytest.mark.parametrize(
    "damage", [{"stamp": [1]}, {"links": [["only-target"]]}, {"frontmatter": [1]}, {"path": None}]
)
def test_malformed_record_is_a_value_error(damage: dict[str, object]) -> None:
    record = note_record("n.md", (1, 1), 0.0, 0.0, parse_note("# T\n[[L]]\n"))
    record.update(damage)
    if damage.get("path", "") is None:
        record.pop("path")
    with pytest.raises(ValueError, match="malformed note record"):
        parse_record(record)
