"""The saved recall index: restarts read only what changed, and a bad file never hurts."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import gc
import itertools
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from pydantic import ValidationError

from langchain_vaultsearch import FilterRetriever, TieredLexicalRetriever
from langchain_vaultsearch.safe_archive import (
    HEADER,
    MappedArchive,
    open_mapped,
    write_atomically,
    write_npz,
)
from langchain_vaultsearch.search import lexical_index as lexical_index_module
from langchain_vaultsearch.search import memory_budget as memory_budget_module
from langchain_vaultsearch.search.core import SearchCore
from langchain_vaultsearch.search.index_cache import index_path, load_index
from langchain_vaultsearch.search.lexical_index import IndexPolicy
from langchain_vaultsearch.search.memory_budget import MemoryBudget
from langchain_vaultsearch.vault import saved_notes as saved_notes_module
from langchain_vaultsearch.vault.markdown import Heading, Link, ParsedNote, parse_note
from langchain_vaultsearch.vault.note_records import (
    NotPortableError,
    note_record,
    parse_record,
)
from langchain_vaultsearch.vault.vault import Vault
from tests.conftest import write_vault
from tests.search_helpers import count_decodes

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


SMALL = IndexPolicy(persist_min_notes=10, save_after_notes=1)
"""Save even small test vaults, after any number of newly read notes."""


def saved_arrays(path: Path) -> dict[str, npt.NDArray[Any]]:
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files if name != HEADER}


def replace_header(path: Path, header: bytes) -> None:
    """Replace a saved index's header member, keeping the others byte for byte."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members[HEADER] = header
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def rewrite_index(path: Path, **arrays: npt.NDArray[Any]) -> None:
    """Replace arrays of a saved index, keeping its other members byte for byte."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            stem = name.removesuffix(".npy")
            if stem in arrays:
                with archive.open(name, "w") as member:
                    np.lib.format.write_array(member, arrays[stem], allow_pickle=True)
            else:
                archive.writestr(name, data)


def forge_records(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit every saved note record of an index, keeping the rest of it byte for byte."""
    arrays = saved_arrays(path)
    offsets = arrays["note_record_offsets"]
    blob = arrays["note_records"].tobytes()
    records = []
    for start, end in itertools.pairwise(offsets.tolist()):
        record = json.loads(blob[start:end])
        change(record)
        records.append(json.dumps(record).encode())
    new_offsets = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in records], out=new_offsets[1:])
    rewrite_index(
        path,
        note_records=np.frombuffer(b"".join(records), dtype=np.uint8),
        note_record_offsets=new_offsets,
    )


def results(core: SearchCore) -> list[list[tuple[str, float]]]:
    return [[(r.id, round(r.score, 9)) for r in core.retrieve(q).results] for q in QUERIES]


def test_restart_reads_no_unchanged_note_and_ranks_the_same(
    tmp_path: Path, count_reads: Callable[[], int]
) -> None:
    root = write_vault(tmp_path / "vault", notes(40))
    first = SearchCore(Vault(root), policy=SMALL)
    expected = results(first)
    assert index_path(first.vault).is_file()
    reads_before = count_reads()
    second = SearchCore(Vault(root), policy=SMALL)
    # A query parses only the notes it looks at (its candidates), to check their saved
    # records against the note (the file is input): the vault is not read again.
    assert [r.id for r in second.retrieve("kraken migration").results] == ["Kraken.md#0"]
    assert count_reads() - reads_before == 1
    assert results(second) == expected
    assert second.vault.backlinks("Folder1/Note 001.md") == {"Folder0/Note 000.md"}
    created = second.vault.notes["Folder0/Note 000.md"].parsed.frontmatter["created"]
    assert created == dt.date(2024, 1, 1)


def test_restart_sees_edits_additions_and_deletions(
    tmp_path: Path,
    count_reads: Callable[[], int],
    touch: Callable[[Path, str, int], None],
) -> None:
    root = write_vault(tmp_path / "vault", notes(30))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    touch(root / "Kraken.md", "Now about the narwhal instead.\n", 10)
    (root / "Folder1/Note 001.md").unlink()
    write_vault(root, {"New/Okapi.md": "An okapi appears.\n"})
    reads_before = count_reads()
    core = SearchCore(Vault(root), policy=SMALL)
    assert [r.id for r in core.retrieve("narwhal").results] == ["Kraken.md#0"]
    assert core.retrieve("migration").results == []
    assert [r.id for r in core.retrieve("okapi").results] == ["New/Okapi.md#0"]
    assert all("Note 001" not in r.id for r in core.retrieve("number1").results)
    # The edited and the new note are read by the refresh; the others only when a query
    # looks at them (their saved record is checked then), never the whole vault.
    assert 2 <= count_reads() - reads_before < len(core.vault.notes)


def test_damaged_or_foreign_index_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    expected = results(SearchCore(Vault(root), policy=replace(SMALL, persist=False)))
    path = index_path(Vault(root))
    path.parent.mkdir()
    path.write_bytes(b"PK\x03\x04 this is not a zip file")
    with caplog.at_level(logging.WARNING):
        assert results(SearchCore(Vault(root), policy=SMALL)) == expected
    assert "Ignoring the saved search index" in caplog.text
    # The search saved a good index over the damaged one.
    assert load_index(Vault(root)) is not None


def test_index_holding_pickled_objects_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    path = index_path(Vault(root))
    rewrite_index(path, terms=np.array([object()], dtype=object))
    with caplog.at_level(logging.WARNING):
        assert load_index(Vault(root)) is None
    assert "Ignoring the saved search index" in caplog.text


def test_inconsistent_arrays_are_refused(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    path = index_path(Vault(root))
    rewrite_index(path, body_notes=saved_arrays(path)["body_notes"] + 10_000)
    vault = Vault(root)
    assert load_index(vault) is None
    assert vault.notes == {}  # nothing adopted from a refused file


def test_saved_index_holds_sorted_terms_and_postings_rows(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    path = index_path(Vault(root))
    with zipfile.ZipFile(path) as archive:
        header = json.loads(archive.read(HEADER))
    arrays = saved_arrays(path)
    assert sorted(arrays) == [
        "body_notes",
        "body_offsets",
        "link_offsets",
        "link_targets",
        "meta_notes",
        "meta_offsets",
        "note_record_offsets",
        "note_records",
        "note_stamps",
        "note_times",
        "terms",
    ]
    terms = arrays["terms"].tobytes().decode("utf-8").split("\n")
    assert terms[-1] == ""  # every term ends with a newline
    terms = terms[:-1]
    assert terms == sorted(set(terms))
    assert {"walrus", "学习", "#project/alpha", "kraken"} <= set(terms)
    for field in ("body", "meta"):
        offsets, note_ids = arrays[f"{field}_offsets"], arrays[f"{field}_notes"]
        assert offsets.shape == (len(terms) + 1,)
        assert offsets[0] == 0
        assert offsets[-1] == len(note_ids)
        assert np.all(np.diff(offsets) >= 0)
    # The notes holding "walrus" in their text: every note but the two extra ones.
    walrus = terms.index("walrus")
    offsets = arrays["body_offsets"]
    holders = arrays["body_notes"][offsets[walrus] : offsets[walrus + 1]]
    assert sorted(header["paths"][i] for i in holders) == sorted(
        path for path in notes(20) if path.startswith("Folder")
    )


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param({"body_offsets": lambda a: a[::-1].copy()}, id="offsets-descending"),
        pytest.param({"meta_offsets": lambda a: a[:-1].copy()}, id="offsets-too-short"),
        pytest.param({"body_offsets": lambda a: a.astype(np.float64) + 0.5}, id="offsets-floats"),
        pytest.param({"body_notes": lambda a: a[:-1].copy()}, id="fewer-notes-than-offsets"),
        pytest.param({"body_notes": lambda a: a - 1_000}, id="negative-note-ids"),
        pytest.param({"terms": lambda a: np.append(a, np.uint8(10))}, id="terms-empty-last"),
        pytest.param({"terms": lambda a: a[:-1].copy()}, id="terms-no-final-newline"),
        pytest.param({"terms": lambda a: np.where(a == 10, a, 0xFF)}, id="terms-not-utf8"),
        pytest.param(
            {"terms": lambda a: np.concatenate([[np.uint8(0xC3)], a])}, id="terms-cut-utf8"
        ),
        pytest.param(
            {"terms": lambda a: np.concatenate([[np.uint8(10)], a])}, id="terms-empty-term"
        ),
        pytest.param({"terms": lambda a: a.astype(np.int32)}, id="terms-not-bytes"),
    ],
)
def test_damaged_arrays_are_refused_before_anything_is_adopted(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    damage: dict[str, Callable[[npt.NDArray[Any]], npt.NDArray[Any]]],
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    expected = results(SearchCore(Vault(root), policy=SMALL))
    path = index_path(Vault(root))
    arrays = saved_arrays(path)
    rewrite_index(path, **{name: change(arrays[name]) for name, change in damage.items()})
    vault = Vault(root)
    with caplog.at_level(logging.WARNING):
        assert load_index(vault) is None
    assert "Ignoring the saved search index" in caplog.text
    assert vault.notes == {}
    assert results(SearchCore(Vault(root), policy=SMALL)) == expected


def test_header_that_is_not_a_json_object_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    path = index_path(Vault(root))
    replace_header(path, b'["a list, not an object"]')
    with caplog.at_level(logging.WARNING):
        assert load_index(Vault(root)) is None
    assert "Ignoring the saved search index" in caplog.text


def test_index_in_the_earlier_layout_is_ignored_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Before the mapped layout every note record was in the header, under "notes".
    root = write_vault(tmp_path / "vault", notes(20))
    path = index_path(Vault(root))
    path.parent.mkdir()
    with path.open("wb") as out:
        write_npz(
            out, {"format": "older", "paths": [], "notes": []}, {"terms": np.zeros(0, np.uint8)}
        )
    with caplog.at_level(logging.INFO):
        assert load_index(Vault(root)) is None
    assert "saved by another version" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_index_from_another_code_version_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    monkeypatch.setattr("langchain_vaultsearch.search.index_cache.format_key", lambda: "other")
    assert load_index(Vault(root)) is None


def test_unwritable_cache_folder_is_not_an_error(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    (root / ".vaultsearch").write_text("a file where the folder would go")
    core = SearchCore(Vault(root), policy=SMALL)
    assert core.retrieve("walrus").results


def test_small_vaults_and_opted_out_cores_save_nothing(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root)).retrieve("walrus")  # below PERSIST_MIN_NOTES
    assert not (root / ".vaultsearch").exists()


def test_opted_out_core_saves_nothing(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), policy=replace(SMALL, persist=False)).retrieve("walrus")
    assert not (root / ".vaultsearch").exists()


def test_note_with_frontmatter_json_cannot_carry_is_read_again(
    tmp_path: Path, count_reads: Callable[[], int]
) -> None:
    written = notes(20)
    written["Binary.md"] = "---\nblob: !!binary aGVsbG8=\n---\nThe quokka note.\n"
    root = write_vault(tmp_path / "vault", written)
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    reads_before = count_reads()
    core = SearchCore(Vault(root), policy=SMALL)
    assert [r.id for r in core.retrieve("quokka").results] == ["Binary.md#0"]
    assert core.vault._records._saved is not None
    assert core.vault._records._saved.row("Binary.md") is None  # read again, not adopted
    assert count_reads() - reads_before < len(core.vault.notes)
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
    record = note_record("x/Note.md", (123, 456, 789), 1.5, 2.5, parsed)
    assert parse_record(record) == ("x/Note.md", (123, 456, 789), 1.5, 2.5, parsed)
    assert parsed.links[0] == Link("Other", "Part", "label", False)
    assert parsed.headings[0] == Heading(1, "Head", parsed.body_start)


@pytest.mark.parametrize(
    "frontmatter",
    [{"blob": b"x"}, {"set": {1, 2}}, {1: "int key"}, {"d": {dt.date(2024, 1, 1): 1}}],
)
def test_frontmatter_json_cannot_carry_is_refused(frontmatter: dict[object, object]) -> None:
    parsed = ParsedNote(frontmatter=frontmatter)  # type: ignore[arg-type]
    with pytest.raises(NotPortableError):
        note_record("n.md", (1, 1, 1), 0.0, 0.0, parsed)


@pytest.mark.parametrize(
    "damage",
    [
        {"stamp": [1]},
        {"stamp": [1, 2]},
        {"links": [["only-target"]]},
        {"frontmatter": [1]},
        {"path": None},
    ],
)
def test_malformed_record_is_a_value_error(damage: dict[str, object]) -> None:
    record = note_record("n.md", (1, 1, 1), 0.0, 0.0, parse_note("# T\n[[L]]\n"))
    record.update(damage)
    if damage.get("path", "") is None:
        record.pop("path")
    with pytest.raises(ValueError, match="malformed note record"):
        parse_record(record)


def test_index_policy_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        IndexPolicy(save_after_notes=-1)


def test_temporary_files_of_killed_writers_are_removed_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(tmp_path / "vault", notes(5))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    cache = root / ".vaultsearch"
    cache.mkdir()
    hour_ago = time.time() - 3600
    # Nobody holds these: their writers were killed, a second or an hour ago.
    abandoned = [
        cache / "tmpab12cd.tmp",
        temporary / "vaultsearch-x1y2.npz",
        cache / "tmpjustnow.tmp",
    ]
    writing = [cache / "tmpwriting.tmp", temporary / "vaultsearch-writing.npz"]
    other = temporary / "someone-else.npz"
    for path in [*abandoned, *writing, other]:
        path.write_bytes(b"half-written")
    for path in [*abandoned[:2], other]:
        os.utime(path, (hour_ago, hour_ago))
    with contextlib.ExitStack() as held:
        for path in writing:  # as a live writer holds its file
            handle = held.enter_context(path.open("rb"))
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        SearchCore(Vault(root), policy=IndexPolicy(persist=False)).retrieve("walrus")
    assert not any(path.exists() for path in abandoned)
    assert all(path.exists() for path in writing)  # a write is in progress
    assert other.exists()  # not ours


def test_a_writer_killed_mid_save_leaves_nothing_the_next_start_keeps(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    expected = results(SearchCore(Vault(root), policy=replace(SMALL, persist=False)))
    code = (
        "import os, sys\n"
        "from langchain_vaultsearch.safe_archive import write_npz\n"
        "import langchain_vaultsearch.safe_archive as archive\n"
        "def dying(out, header, arrays):\n"
        "    out.write(b'PK half an index')\n"
        "    out.flush()\n"
        "    os.kill(os.getpid(), 9)\n"
        "archive.write_npz = dying\n"
        "from langchain_vaultsearch.search.core import SearchCore\n"
        "from langchain_vaultsearch.search.lexical_index import IndexPolicy\n"
        "from langchain_vaultsearch.vault.vault import Vault\n"
        "policy = IndexPolicy(persist_min_notes=10, save_after_notes=1)\n"
        "SearchCore(Vault(sys.argv[1]), policy=policy).retrieve('walrus')\n"
    )
    killed = subprocess.run([sys.executable, "-c", code, str(root)], check=False)  # noqa: S603
    assert killed.returncode == -9
    assert [p.suffix for p in (root / ".vaultsearch").iterdir()] == [".tmp"]
    assert results(SearchCore(Vault(root), policy=SMALL)) == expected
    assert [p.name for p in (root / ".vaultsearch").iterdir()] == ["lexical-index.npz"]


def test_a_hostile_header_is_removed_and_rebuilt_not_trusted_for_good(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    expected = results(SearchCore(Vault(root), policy=SMALL))
    path = index_path(Vault(root))
    replace_header(path, b"[" * 100_000 + b"]" * 100_000)  # nested past any recursion limit
    with caplog.at_level(logging.WARNING):
        assert results(SearchCore(Vault(root), policy=SMALL)) == expected
    assert "Ignoring the saved search index" in caplog.text
    assert "(removed; it is rebuilt)" in caplog.text
    with zipfile.ZipFile(path) as archive:  # saved again by that search
        assert json.loads(archive.read(HEADER))["paths"]


def test_a_deflate_bomb_is_refused_before_it_inflates(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    path = index_path(Vault(root))
    path.parent.mkdir()
    zeros = b"\0" * (1 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(HEADER, b"{}")
        with archive.open("terms.npy", "w", force_zip64=True) as member:
            for _ in range(300):  # 300 MB of zeros, ~300 KB on disk
                member.write(zeros)
    assert path.stat().st_size < 2_000_000
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        assert load_index(Vault(root)) is None
    assert time.monotonic() - started < 2.0
    assert "is compressed" in caplog.text  # the index never is: nothing is inflated
    assert not path.exists()


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_an_index_folder_that_is_a_file_or_a_link_is_refused_aloud(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = root / ".vaultsearch"
    if kind == "file":
        folder.write_text("not a folder", encoding="utf-8")
    else:
        folder.symlink_to(elsewhere, target_is_directory=True)
    with caplog.at_level(logging.WARNING):
        found = SearchCore(Vault(root), policy=SMALL).retrieve("walrus").results
    assert found
    assert found[0].engine == "fulltext"
    assert f"it is {'not a folder' if kind == 'file' else 'a symbolic link'}" in caplog.text
    assert list(elsewhere.iterdir()) == []  # nothing written through the link


def test_forged_heading_offsets_in_saved_records_are_not_trusted(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    expected = results(SearchCore(Vault(root), policy=SMALL))
    path = index_path(Vault(root))

    def forge(record: dict[str, Any]) -> None:
        record["headings"] = [[1, "Forged", 10**9]]
        record["body_start"] = 10**9

    forge_records(path, forge)
    assert results(SearchCore(Vault(root), policy=SMALL)) == expected


def test_forged_tags_in_saved_records_never_reach_results_or_filters(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    path = index_path(Vault(root))

    def forge(record: dict[str, Any]) -> None:
        if record["path"] == "Kraken.md":
            record["tags"] = ["#forged"]

    forge_records(path, forge)
    vault = Vault(root)
    with caplog.at_level(logging.WARNING):
        retriever = TieredLexicalRetriever(vault=vault, index_policy=SMALL)
        docs = retriever.invoke("kraken migration")
        tagged = FilterRetriever(vault=vault).get_relevant_documents("#forged")
    assert docs[0].metadata["path"] == "Kraken.md"
    assert docs[0].metadata["tags"] == []
    assert tagged == []
    assert "The saved record of Kraken.md does not match the note" in caplog.text


def test_memory_budget_shares_and_bad_values() -> None:
    budget = MemoryBudget.from_mb(512)
    assert budget.total_bytes == 512 * 1024 * 1024
    assert budget.scan_text_bytes == 64 * 1024 * 1024
    assert budget.chunk_cache_bytes == 192 * 1024 * 1024
    assert budget.decoded_records_bytes == 16 * 1024 * 1024
    assert budget.mapped_bytes == 32 * 1024 * 1024
    with pytest.raises(ValueError, match="at least 64"):
        MemoryBudget.from_mb(63)
    with pytest.raises(TypeError, match="an integer"):
        MemoryBudget.from_mb("512")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="memory_budget_mb"):
        TieredLexicalRetriever(vault_path=".", memory_budget_mb=10)


def test_pages_of_the_saved_index_are_let_go_past_their_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    expected = results(SearchCore(Vault(root), policy=SMALL))
    released: list[MappedArchive] = []
    monkeypatch.setattr(MappedArchive, "release_pages", lambda self: released.append(self))  # noqa: PLW0108
    no_room = replace(MemoryBudget.from_mb(), mapped_bytes=0)  # any growth is over
    with monkeypatch.context() as growing:
        # The process's real file pages can shrink between two reads (another thread
        # unmaps, the kernel reclaims), which made this count flaky: they grow a page a read.
        pages = itertools.count(1000)
        growing.setattr(memory_budget_module, "_shared_bytes", lambda: next(pages) * 4096)
        core = SearchCore(Vault(root), policy=SMALL, memory_budget=no_room)
        assert results(core) == expected
    assert len(released) > len(QUERIES)  # when opened, then after each query's recall
    roomy = SearchCore(Vault(root), policy=SMALL)
    released.clear()
    roomy.index.sync()
    # When opened: after the postings of each field are checked, and once all is checked.
    assert len(released) == 3
    assert results(roomy) == expected
    assert len(released) == 3  # not after queries: their pages stay within the share


@pytest.mark.parametrize(("limit", "kept"), [(1, 0), (64 * 1024 * 1024, 22)])
def test_decoded_records_stay_within_their_share(tmp_path: Path, limit: int, kept: int) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    vault = Vault(root)
    loaded = load_index(vault, decoded_cache_bytes=limit)
    assert loaded is not None
    records = [vault.record(path) for path in loaded.current]
    assert all(record is not None for record in records)  # decoded, whatever is kept
    assert vault._records._saved is not None
    assert len(vault._records._saved._decoded) == kept


def test_candidates_with_cached_chunks_are_not_decoded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(tmp_path / "vault", notes(40))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    monkeypatch.setattr(saved_notes_module, "_DECODED_PER_BYTE", 1 << 40)  # none kept decoded
    decoded = count_decodes(monkeypatch)
    core = SearchCore(Vault(root), policy=SMALL)
    first = results(core)
    decoded_first = len(decoded)
    assert decoded_first >= 40  # every candidate of "walrus", decoded to be chunked
    assert results(core) == first
    # Only what the boosts read of the best notes; the candidates' chunks come cached.
    assert len(decoded) - decoded_first < 40


def test_records_are_read_from_the_file_the_archive_opened_not_mapped_in(tmp_path: Path) -> None:
    # A record read through the mapping maps the large folio around it (132 MB for 200
    # records of help x16's index): `bytes_reader` reads the file instead, the file as it
    # was opened, and its descriptor goes with the archive.
    path = tmp_path / "index.npz"
    blob = bytes(range(256)) * 64
    write_atomically(path, {"kind": "test"}, {"blob": np.frombuffer(blob, dtype=np.uint8)})
    archive = open_mapped(path)
    read = archive.bytes_reader("blob")
    assert read is not None  # this system has pread
    assert [read(at, size) for at, size in [(0, 3), (255, 2), (len(blob) - 4, 4)]] == [
        blob[0:3],
        blob[255:257],
        blob[-4:],
    ]
    assert read(10, 100) == archive.arrays["blob"][10:110].tobytes()
    write_atomically(path, {"kind": "test"}, {"blob": np.zeros(len(blob), dtype=np.uint8)})
    assert read(1, 5) == blob[1:6]  # the file as opened, as the mapping sees it
    with pytest.raises(ValueError, match="cut short"):
        read(len(blob) - 2, 4096)  # past the file's end: no short record goes on
    assert archive._file is not None
    file = archive._file.number
    del archive
    gc.collect()
    assert read(2, 3) == blob[2:5]  # the reader holds the file open
    del read
    gc.collect()
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(file)


def test_a_note_dated_after_2262_is_saved_and_adopted_clamped(
    tmp_path: Path, count_reads: Callable[[], int]
) -> None:
    # Saved stamps are int64 nanoseconds, which end in April 2262; file systems hold
    # later times, and one such note made every save of the index fail (OverflowError).
    root = write_vault(tmp_path / "vault", notes(12))
    year_2300 = 10_413_792_000
    os.utime(root / "Kraken.md", (year_2300, year_2300))
    first = SearchCore(Vault(root), policy=SMALL)
    assert [r.id for r in first.retrieve("kraken migration").results] == ["Kraken.md#0"]
    assert index_path(first.vault).is_file()
    second = SearchCore(Vault(root), policy=SMALL)
    assert [r.id for r in second.retrieve("kraken migration").results] == ["Kraken.md#0"]
    info = second.vault.get("Kraken.md")
    assert info is not None
    assert info.mtime_ms == (2**63 - 1) / 1e6  # the latest time the stamp holds
    reads = count_reads()
    second.vault.refresh()
    assert count_reads() == reads  # its clamped stamp still matches: not read again


def test_a_saved_file_this_user_cannot_read_is_left_for_its_owner(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from langchain_vaultsearch.safe_archive import discard

    unreadable, damaged = tmp_path / "theirs.npz", tmp_path / "damaged.npz"
    unreadable.write_bytes(b"an index another user saved")
    damaged.write_bytes(b"garbage")
    with caplog.at_level(logging.WARNING):
        discard(unreadable, "the saved search index", PermissionError(13, "Permission denied"))
        discard(damaged, "the saved search index", ValueError("not an archive"))
    assert unreadable.read_bytes() == b"an index another user saved"
    assert not damaged.exists()
    assert "left as it is; give this user read access" in caplog.text
    assert "(removed; it is rebuilt)" in caplog.text


def test_an_index_folder_this_user_cannot_look_into_leaves_search_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = write_vault(tmp_path / "vault", notes(20))
    expected = results(SearchCore(Vault(root), policy=SMALL))
    saved = index_path(Vault(root))
    assert saved.is_file()
    real_is_file = Path.is_file

    def denied(self: Path) -> bool:  # what stat says in a folder without read permission
        if self == saved:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    monkeypatch.setattr(Path, "is_file", denied)
    with caplog.at_level(logging.WARNING):
        assert results(SearchCore(Vault(root), policy=SMALL)) == expected
    assert "Not reading a saved search index" in caplog.text
    assert "Permission denied" in caplog.text
    assert saved.stat().st_size > 0  # left for its owner


def test_an_edit_another_reader_refreshes_while_the_saved_index_loads_is_searched(
    tmp_path: Path, touch: Callable[[Path, str, int], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(tmp_path / "vault", notes(30))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    touch(root / "Kraken.md", "Now about the narwhal instead.\n", 10)
    load = lexical_index_module.load_index

    def then_refreshed(vault: Vault, *args: Any, **kwargs: Any) -> Any:
        loaded = load(vault, *args, **kwargs)
        vault.refresh()  # another reader of the shared vault (the vector index's feed)
        return loaded

    monkeypatch.setattr(lexical_index_module, "load_index", then_refreshed)
    core = SearchCore(Vault(root), policy=SMALL)
    assert [r.id for r in core.retrieve("narwhal").results] == ["Kraken.md#0"]
    assert core.retrieve("migration").results == []


def test_an_edit_refreshed_while_a_read_vault_compares_the_saved_index_is_searched(
    tmp_path: Path, touch: Callable[[Path, str, int], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(tmp_path / "vault", notes(30))
    SearchCore(Vault(root), policy=SMALL).retrieve("walrus")
    vault = Vault(root)
    vault.refresh()  # another reader first: the saved rows are compared, not adopted
    compare = Vault.unchanged_notes

    def then_edited(self: Vault, saved: Any) -> list[str]:
        current = compare(self, saved)
        assert "Kraken.md" in current
        touch(root / "Kraken.md", "Now about the narwhal instead.\n", 10)
        self.refresh()  # that reader again, between the comparison and the feed's start
        return current

    monkeypatch.setattr(Vault, "unchanged_notes", then_edited)
    core = SearchCore(vault, policy=SMALL)
    assert [r.id for r in core.retrieve("narwhal").results] == ["Kraken.md#0"]
