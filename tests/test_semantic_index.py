"""VaultIndex: incremental, honest, crash-safe vector indexing (fake model, in-memory store)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_vaultsearch.semantic import vector_writer
from langchain_vaultsearch.semantic.index import (
    EmbeddingModelMismatchError,
    IndexLockedError,
    IndexProgress,
    RefreshReport,
    VaultIndex,
)
from langchain_vaultsearch.semantic.lock import lock_file
from langchain_vaultsearch.semantic.records import IndexRecords
from langchain_vaultsearch.vault.vault import Vault

DIMS = 32


class CountingEmbedding(DeterministicFakeEmbedding):
    """A deterministic fake that counts the texts it was asked to embed."""

    calls: int = 0
    texts: int = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return super().embed_documents(texts)


@pytest.fixture
def model() -> CountingEmbedding:
    return CountingEmbedding(size=DIMS)


def make_index(
    vault_dir: Path,
    model: CountingEmbedding,
    store: InMemoryVectorStore | None = None,
    **kw: object,
) -> VaultIndex:
    """An index over an in-memory store that embeds through the index's cache."""
    kept = store if store is not None else InMemoryVectorStore(embedding=model)

    def with_cache(embedding: Embeddings) -> InMemoryVectorStore:
        kept.embedding = embedding
        return kept

    return VaultIndex(
        vault_path=vault_dir,
        embeddings=model,
        vectorstore=with_cache,
        records_path=vault_dir.parent / "records.sqlite3",
        **kw,  # type: ignore[arg-type]
    )


def test_first_refresh_embeds_every_searchable_note_and_verifies_clean(
    vault_dir: Path, model: CountingEmbedding
) -> None:
    index = make_index(vault_dir, model)
    seen: list[IndexProgress] = []
    report = index.refresh(on_progress=seen.append)
    notes = {p for p, info in index.vault.notes.items() if info.searchable}
    assert set(report.added) == notes
    assert report.chunks_written >= len(notes)
    assert report.texts_embedded == model.texts > 0
    assert seen
    assert seen[-1].notes_done == seen[-1].notes_total == len(notes)
    # Progress counts texts of a total known from the first report, which comes before
    # any text is embedded, and ends at that total.
    assert seen[0].texts_done == seen[0].texts_embedded == 0
    assert seen[0].texts_total == seen[-1].texts_total == seen[-1].texts_done == model.texts
    assert [p.texts_done for p in seen] == sorted(p.texts_done for p in seen)
    check = index.verify()
    assert check.ok, check
    assert check.orphans == []


def test_arefresh_indexes_while_the_event_loop_keeps_running(
    vault_dir: Path, model: CountingEmbedding
) -> None:
    index = make_index(vault_dir, model)

    async def refresh_and_tick() -> tuple[RefreshReport, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        report = await index.arefresh()
        ticker.cancel()
        return report, ticks

    report, ticks = asyncio.run(refresh_and_tick())
    assert ticks > 0  # the loop ran other work while the refresh was under way
    assert report.added
    assert report.texts_embedded == model.texts > 0
    assert index.verify().ok


def indexed_by_an_ended_process(vault_dir: Path, model: CountingEmbedding) -> InMemoryVectorStore:
    """The vault indexed by a process that has ended: the store it leaves the next one."""
    store = InMemoryVectorStore(embedding=model)
    index = make_index(vault_dir, model, store)
    index.refresh()
    index.close()
    return store


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes run an hour after the vault's files last changed: every stamp is kept."""
    monkeypatch.setattr(vector_writer, "wall_clock", lambda: time.time() + 3600)


@pytest.mark.usefixtures("settled")
def test_touch_rename_and_restart_embed_nothing(
    vault_dir: Path, model: CountingEmbedding, touch: Callable[[Path, str, int], None]
) -> None:
    store = InMemoryVectorStore(embedding=model)
    index = make_index(vault_dir, model, store)
    index.refresh()
    texts = model.texts
    note = vault_dir / "Piano/Lesson 1.md"
    touch(note, note.read_text(encoding="utf-8"), 20)  # same content, new mtime
    report = index.refresh()
    assert report.unchanged == 1
    assert not report.added
    assert not report.updated
    # A rename embeds nothing new: the records' cache has every window's vector.
    os.rename(note, vault_dir / "Piano/First Lesson.md")
    report = index.refresh()
    assert report.removed == ["Piano/Lesson 1.md"]
    assert report.added == ["Piano/First Lesson.md"]
    assert report.texts_embedded == 0
    assert model.texts == texts
    assert index.verify().ok
    # A new process over the same records and store embeds nothing either, and reads no
    # note again: each one's stamp says its vectors were made from the file as it is.
    index.close()
    restarted = make_index(vault_dir, model, store)
    report = restarted.refresh()
    assert (report.added, report.updated, report.removed, report.unchanged) == ([], [], [], 0)
    assert model.texts == texts
    assert restarted.verify().ok


@pytest.mark.usefixtures("settled")
def test_a_new_process_reads_again_only_the_notes_changed_since_their_vectors(
    vault_dir: Path, model: CountingEmbedding, touch: Callable[[Path, str, int], None]
) -> None:
    store = indexed_by_an_ended_process(vault_dir, model)
    touch(vault_dir / "C# Notes.md", "# C# Notes\n\nPattern matching with records.\n", 20)
    lesson = vault_dir / "Piano/Lesson 1.md"
    touch(lesson, lesson.read_text(encoding="utf-8"), 20)  # a new stamp, the same text
    restarted = make_index(vault_dir, model, store)
    report = restarted.refresh()
    assert report.updated == ["C# Notes.md"]
    assert report.unchanged == 1  # the touched lesson, read and found as its vectors knew it
    restarted.close()
    again = make_index(vault_dir, model, store)
    assert again.refresh().unchanged == 0  # both are stamped now


@pytest.mark.usefixtures("settled")
def test_records_without_stamps_read_every_note_once_then_none(
    vault_dir: Path, model: CountingEmbedding
) -> None:
    store = indexed_by_an_ended_process(vault_dir, model)
    path = vault_dir.parent / "records.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as db:  # an earlier version's: no stamps
        db.execute("DROP TABLE stamps")
        db.commit()
    first = make_index(vault_dir, model, store)
    report = first.refresh()
    assert report.unchanged == sum(1 for info in first.vault.notes.values() if info.searchable)
    first.close()
    second = make_index(vault_dir, model, store)
    assert second.refresh().unchanged == 0
    assert second.verify().ok


def test_edit_re_embeds_that_note_only_and_delete_removes_its_vectors(
    vault_dir: Path, model: CountingEmbedding, touch: Callable[[Path, str, int], None]
) -> None:
    store = InMemoryVectorStore(embedding=model)
    index = make_index(vault_dir, model, store)
    index.refresh()
    texts = model.texts
    touch(vault_dir / "C# Notes.md", "# C# Notes\n\nPattern matching with records.\n", 20)
    report = index.refresh()
    assert report.updated == ["C# Notes.md"]
    assert model.texts == texts + report.texts_embedded
    assert report.texts_embedded == 1
    (vault_dir / "Projects/Beta/Notes.md").unlink()
    report = index.refresh()
    assert report.removed == ["Projects/Beta/Notes.md"]
    assert not [i for i in store.store if i.startswith("Projects/Beta/Notes.md#")]
    assert index.verify().ok


def test_files_changed_just_before_a_write_are_read_again_by_the_next_process(
    vault_dir: Path, model: CountingEmbedding
) -> None:
    # A coarse clock (FAT, HFS+) could give a second write within the same tick the same
    # stamp: a file changed less than SETTLE_S before the write is not stamped.
    store = indexed_by_an_ended_process(vault_dir, model)  # of notes written a moment ago
    restarted = make_index(vault_dir, model, store)
    report = restarted.refresh()
    assert report.unchanged == sum(1 for info in restarted.vault.notes.values() if info.searchable)


@pytest.mark.usefixtures("settled")
def test_a_stamp_beside_another_text_hash_is_not_trusted(
    vault_dir: Path, model: CountingEmbedding
) -> None:
    store = indexed_by_an_ended_process(vault_dir, model)
    # What an earlier version, which keeps no stamps, leaves after writing a note's vectors
    # with other settings: another text hash beside the stamp of this version's write.
    with contextlib.closing(sqlite3.connect(vault_dir.parent / "records.sqlite3")) as db:
        db.execute("UPDATE notes SET text_hash = 'written-elsewhere' WHERE path = 'C# Notes.md'")
        db.commit()
    restarted = make_index(vault_dir, model, store)
    report = restarted.refresh()
    assert report.updated == ["C# Notes.md"]
    assert restarted.verify().ok


@pytest.mark.usefixtures("settled")
def test_an_edit_another_reader_refreshes_while_a_new_process_starts_is_read(
    vault_dir: Path,
    model: CountingEmbedding,
    touch: Callable[[Path, str, int], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = indexed_by_an_ended_process(vault_dir, model)
    note = vault_dir / "C# Notes.md"
    current_notes = vector_writer.VectorWriter._current_notes

    def then_edited(writer: vector_writer.VectorWriter) -> list[str]:
        found = current_notes(writer)
        assert "C# Notes.md" in found
        # Another reader of the shared vault (a lexical search) refreshes it meanwhile.
        touch(note, "# C# Notes\n\nPattern matching with records.\n", 20)
        writer.vault.refresh()
        return found

    monkeypatch.setattr(vector_writer.VectorWriter, "_current_notes", then_edited)
    restarted = make_index(vault_dir, model, store)
    first = restarted.refresh()
    monkeypatch.setattr(vector_writer.VectorWriter, "_current_notes", current_notes)
    second = restarted.refresh()
    assert [*first.updated, *second.updated] == ["C# Notes.md"]
    assert restarted.verify().ok


def test_notes_the_rules_leave_out_are_not_counted_as_unembedded(
    vault_dir: Path, model: CountingEmbedding
) -> None:
    index = VaultIndex(
        vault=Vault(vault_dir, exclusions=["Piano/"]),
        embeddings=model,
        vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
        records_path=vault_dir.parent / "records.sqlite3",
    )
    index.refresh()
    assert "Piano/Lesson 1.md" in index.vault.notes
    assert "Piano/Lesson 1.md" not in index.vault.searchable_paths()
    assert index.notes_unembedded == 0
    (vault_dir / "Okapi.md").write_text("# Okapi\n\nAn okapi appears.\n", encoding="utf-8")
    index.vault.refresh()
    assert index.notes_unembedded == 1


def test_another_model_is_refused_until_rebuilt(vault_dir: Path, model: CountingEmbedding) -> None:
    store = InMemoryVectorStore(embedding=model)
    make_index(vault_dir, model, store).refresh()
    other = CountingEmbedding(size=DIMS + 1)
    with pytest.raises(EmbeddingModelMismatchError, match="rebuild=True"):
        make_index(vault_dir, other, store)
    rebuilt = make_index(vault_dir, other, store, rebuild=True)
    report = rebuilt.refresh()
    assert report.added
    assert rebuilt.verify().ok
    assert other.texts > 0


def test_an_interrupted_write_is_repaired_without_duplicates(
    vault_dir: Path, model: CountingEmbedding, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = InMemoryVectorStore(embedding=model)
    index = make_index(vault_dir, model, store, batch_size=1)
    calls = {"n": 0}
    real_add = store.add_documents

    def dying_add(*args: object, **kwargs: object) -> list[str]:
        calls["n"] += 1
        if calls["n"] == 3:
            real_add(*args, **kwargs)  # type: ignore[arg-type]
            raise KeyboardInterrupt  # killed after the store write, before the records
        return real_add(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "add_documents", dying_add)
    with pytest.raises(KeyboardInterrupt):
        index.refresh()
    check = index.verify()
    assert check.pending  # the records know which write was cut short
    assert not check.ok
    monkeypatch.setattr(store, "add_documents", real_add)
    finished = sum(1 for r in index.records.notes() if r.text_hash and not r.pending_ids)
    texts = model.texts
    report = index.refresh()
    assert report.repaired
    assert index.verify().ok
    # Finished notes were not embedded again: only the interrupted one and the rest were,
    # and the interrupted one's vectors came from the cache.
    assert finished == 2
    assert len(report.added) + len(report.updated) == len(index.vault.notes) - finished
    assert model.texts - texts == report.texts_embedded


def test_a_second_writer_gets_a_clear_error(vault_dir: Path, model: CountingEmbedding) -> None:
    index = make_index(vault_dir, model)
    with index._writer(), pytest.raises(IndexLockedError, match="being written by pid"):
        lock_file(index._lock_path)


def test_records_file_of_another_kind_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite3"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ValueError, match="not a vaultsearch records file"):
        IndexRecords(path)


def test_long_chunks_are_embedded_in_windows(tmp_path: Path, model: CountingEmbedding) -> None:
    vault_dir = tmp_path / "vault"
    vault_dir.mkdir()
    words = " ".join(f"word{i}" for i in range(600))  # ~4,900 characters, one chunk
    (vault_dir / "Long.md").write_text(f"# Long\n\n{words}\n", encoding="utf-8")
    index = make_index(vault_dir, model)
    report = index.refresh()
    assert report.chunks_written == 1
    assert report.texts_embedded >= 5
    ids = next(r.vector_ids for r in index.records.notes())
    assert ids[0] == "Long.md#0~0"
    assert len(ids) == report.texts_embedded


def test_options_are_checked(vault_dir: Path, model: CountingEmbedding) -> None:
    with pytest.raises(ValueError, match="window_chars"):
        make_index(vault_dir, model, window_chars=50)
    with pytest.raises(ValueError, match="needs vault_path or vault"):
        VaultIndex(embeddings=model, vectorstore=InMemoryVectorStore(embedding=model))
    vault = Vault(vault_dir)
    with pytest.raises(ValueError, match="needs embeddings"):
        VaultIndex(vault=vault, vectorstore=InMemoryVectorStore(embedding=model))


def test_the_concept_vocabulary_is_built_saved_reused_and_rebuilt_after_edits(
    vault_dir: Path, model: CountingEmbedding, touch: Callable[[Path, str, int], None]
) -> None:
    index = make_index(vault_dir, model)
    index.refresh()
    vocabulary = index.concepts()
    # Terms of two or more notes, no stop words, no CJK fragments, nothing short.
    assert "oauth" in vocabulary.terms
    assert "deployment" in vocabulary.terms
    assert all(len(t) >= 3 and t.isalpha() for t in vocabulary.terms)
    assert "the" not in vocabulary.terms
    assert vocabulary.vectors.shape == (len(vocabulary.terms), DIMS)
    embedded = model.texts
    again = make_index(vault_dir, model)  # a new process: loaded from the saved arrays
    assert again.concepts().terms == vocabulary.terms
    assert model.texts == embedded
    note = vault_dir / "Projects/Beta/Notes.md"
    touch(note, "# Beta\n\nTomatoes, gardening and a zeppelin deployment.\n", 30)
    again.refresh()
    rebuilt = again.concepts()
    assert rebuilt.key != vocabulary.key
    assert "zeppelin" not in vocabulary.terms  # in one note only: not a concept
    nearest = rebuilt.nearest(model.embed_query("oauth"), 2, exclude=["oauth"])
    assert len(nearest) == 2
    assert "oauth" not in nearest


def test_a_damaged_concept_file_is_dropped_and_rebuilt(
    vault_dir: Path, model: CountingEmbedding, caplog: pytest.LogCaptureFixture
) -> None:
    index = make_index(vault_dir, model)
    index.refresh()
    terms = index.concepts().terms
    path = next(vault_dir.parent.glob("*-concepts.npz"))
    path.write_bytes(b"not an archive")
    with caplog.at_level(logging.WARNING):
        assert make_index(vault_dir, model).concepts().terms == terms
    assert "Ignoring the concept vocabulary" in caplog.text


def test_concept_terms_extend_the_semantic_query(vault_dir: Path, model: CountingEmbedding) -> None:
    index = make_index(vault_dir, model)
    index.refresh()
    seen: list[str] = []
    original = index.search

    def recording(query: str, k: int) -> list[tuple[str, float]]:
        seen.append(query)
        return original(query, k)

    index.search = recording  # type: ignore[method-assign]
    index.as_retriever(concept_terms=2).invoke("oauth login")
    index.as_retriever().invoke("oauth login")
    assert seen[0].startswith("oauth login ")
    assert len(seen[0].split()) == 4
    assert seen[1] == "oauth login"
