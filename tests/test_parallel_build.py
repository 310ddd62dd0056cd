"""The first index built across processes is the index one process builds, note for note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langchain_vaultsearch import TieredLexicalRetriever
from langchain_vaultsearch.safe_archive import kept_folder
from langchain_vaultsearch.search import index_worker, parallel_build
from langchain_vaultsearch.search.index_cache import (
    BUILD_SHARDS_FOLDER,
    index_path,
    load_index,
    remove_kept_shards,
    remove_stale_temporaries,
    save_index,
)
from langchain_vaultsearch.search.parallel_build import VaultSpec, build_vault_index
from langchain_vaultsearch.search.recall import RecallIndex
from langchain_vaultsearch.search.vault_documents import vault_documents
from langchain_vaultsearch.vault.vault import Vault
from tests.conftest import write_vault

NOTES: dict[str, str | bytes] = {
    **{
        f"Area{i % 3}/Note {i:02d}.md": (
            f"---\ntags: [topic{i % 4}]\n---\n# Note {i}\n\n"
            f"walrus number{i} [[Note {(i + 1) % 13:02d}]] [[Nick {(i + 5) % 13}]]\n"
        )
        for i in range(13)
    },
    "Nicknamed.md": "---\naliases: [Nick 3]\n---\nThe aliased one, 学习笔记 #project/alpha.\n",
    "Binary.md": "---\nblob: !!binary aGVsbG8=\n---\nThe quokka note.\n",
    "Empty.md": "",
    "Big.md": "x" * 5000,
}


def contents(path: Path, root: Path) -> dict[str, Any]:
    """What an index file holds, independent of how its notes are numbered."""
    vault = Vault(root, max_note_bytes=4096, watch=False)
    loaded = load_index(vault, path)
    assert loaded is not None
    index, current = loaded.recall, loaded.current
    terms = index.vocabulary.terms()
    postings = {
        term: sorted(p for p, _score in index.candidates([term], 100))
        for term in terms
        if " " not in term
    }
    graph = {p: sorted(vault.link_graph().outlinks(p)) for p in sorted(current)}
    records = {p: vault.record(p) for p in sorted(current)}
    return {"postings": postings, "graph": graph, "records": records, "current": sorted(current)}


@pytest.mark.parametrize("processes", [1, 2])
def test_a_build_across_shards_and_processes_matches_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    root = write_vault(tmp_path / "vault", NOTES)
    monkeypatch.setattr(parallel_build, "SHARD_NOTES", 4)  # five shards of four notes
    reference = Vault(root, max_note_bytes=4096, watch=False)
    reference.refresh(keep_text=False)
    index = RecallIndex.from_documents(vault_documents(reference), len(reference.notes))
    assert save_index(reference, index, target=tmp_path / "one.npz")

    spec = VaultSpec(str(root.resolve()), include_hidden=False, max_note_bytes=4096)
    assert build_vault_index(spec, tmp_path / "sharded.npz", processes)

    one = contents(tmp_path / "one.npz", root)
    sharded = contents(tmp_path / "sharded.npz", root)
    assert sharded == one
    assert "Big.md" not in sharded["current"]  # over the size limit, as a refresh skips it
    assert "Binary.md" not in sharded["current"]  # no JSON record: read again, not adopted
    assert sharded["graph"]["Area2/Note 11.md"] == ["Area0/Note 12.md", "Nicknamed.md"]
    assert sharded["postings"]["学习"] == ["Nicknamed.md"]


def test_an_empty_vault_builds_an_empty_index(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    spec = VaultSpec(str(root), include_hidden=False, max_note_bytes=4096)
    assert build_vault_index(spec, tmp_path / "empty.npz", processes=2)
    loaded = load_index(Vault(root, watch=False), tmp_path / "empty.npz")
    assert loaded is not None
    assert loaded[1] == []


_INDEX_SHARD = parallel_build.index_shard
_MERGE = parallel_build._merge


class _StoppedError(Exception):
    """What stops a build midway here, as a kill or a quit would."""


def _index_shards(monkeypatch: pytest.MonkeyPatch, stop_after: int | None = None) -> list[str]:
    """The shards indexed from now on; with `stop_after`, the build stops after that many."""
    indexed: list[str] = []
    real = _INDEX_SHARD

    def recording(spec: VaultSpec, paths: Any, out: str, runs: int) -> str:
        if stop_after is not None and len(indexed) == stop_after:
            raise _StoppedError
        indexed.append(Path(out).name)
        return real(spec, paths, out, runs)

    monkeypatch.setattr(parallel_build, "index_shard", recording)
    return indexed


def _stopped_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: VaultSpec, after: int
) -> Path:
    """The folder of a build stopped after indexing `after` shards, as a kill would stop it."""
    kept = tmp_path / "kept"
    _index_shards(monkeypatch, stop_after=after)
    with pytest.raises(_StoppedError):
        build_vault_index(spec, tmp_path / "stopped.npz", 1, resume_in=kept)
    return kept


@pytest.fixture
def sharded_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> VaultSpec:
    """The vault of NOTES in six shards: with `SHARD_NOTES` 4, every path may end one of 3."""
    root = write_vault(tmp_path / "vault", NOTES)
    monkeypatch.setattr(parallel_build, "SHARD_NOTES", 4)
    return VaultSpec(str(root.resolve()), include_hidden=False, max_note_bytes=4096)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_build_stopped_midway_is_taken_up_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sharded_vault: VaultSpec, processes: int
) -> None:
    kept = _stopped_build(tmp_path, monkeypatch, sharded_vault, after=3)
    assert len(list(kept.glob("shard-*.npz"))) == 3
    # A note of the first shard changes meanwhile: that shard is indexed again.
    edited = Path(sharded_vault.root) / "Area0/Note 00.md"
    edited.write_text("# Note 0\n\nnow about a narwhal\n", encoding="utf-8")
    # Worker processes import the module's own function: counted in this process only.
    indexed = _index_shards(monkeypatch)
    if processes > 1:
        monkeypatch.setattr(parallel_build, "index_shard", _INDEX_SHARD)
    assert build_vault_index(sharded_vault, tmp_path / "resumed.npz", processes, resume_in=kept)
    if processes == 1:
        assert len(indexed) == 4  # the three never written and the changed one, of six
    assert not kept.exists()  # the index written, its shards go
    assert build_vault_index(sharded_vault, tmp_path / "fresh.npz", 1)
    root = Path(sharded_vault.root)
    resumed = contents(tmp_path / "resumed.npz", root)
    assert resumed == contents(tmp_path / "fresh.npz", root)
    assert resumed["postings"]["narwhal"] == ["Area0/Note 00.md"]


def test_a_kept_shard_that_cannot_be_read_is_indexed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sharded_vault: VaultSpec
) -> None:
    kept = _stopped_build(tmp_path, monkeypatch, sharded_vault, after=2)
    damaged = sorted(kept.glob("shard-*.npz"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])  # cut short, as a power cut may leave it
    (kept / "tmpabc.tmp").write_bytes(b"half a shard")
    indexed = _index_shards(monkeypatch)
    assert build_vault_index(sharded_vault, tmp_path / "resumed.npz", 1, resume_in=kept)
    assert len(indexed) == 5  # the four never written and the damaged one, of six
    assert build_vault_index(sharded_vault, tmp_path / "fresh.npz", 1)
    root = Path(sharded_vault.root)
    assert contents(tmp_path / "resumed.npz", root) == contents(tmp_path / "fresh.npz", root)


def test_a_build_leaves_the_kept_shards_of_another_build_at_work_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sharded_vault: VaultSpec
) -> None:
    kept = tmp_path / "kept"
    indexed = _index_shards(monkeypatch)
    with kept_folder(kept) as held:  # another build holds it
        assert held == kept
        (kept / "shard-x.npz").write_bytes(b"its shard")
        (kept / "tmpx.tmp").write_bytes(b"its shard, half written")
        assert build_vault_index(sharded_vault, tmp_path / "other.npz", 1, resume_in=kept)
        assert len(indexed) == 6
        assert sorted(entry.name for entry in kept.iterdir()) == ["lock", "shard-x.npz", "tmpx.tmp"]
    root = Path(sharded_vault.root)
    assert contents(tmp_path / "other.npz", root)["current"]


def test_kept_shards_wait_for_the_next_build_until_an_index_is_loaded(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", NOTES)
    vault = Vault(root, watch=False)
    kept = index_path(vault).parent / BUILD_SHARDS_FOLDER
    with kept_folder(kept) as folder:  # a build at work: nothing removes its shards
        assert folder == kept
        (kept / "shard-0.npz").write_bytes(b"a shard")
        remove_kept_shards(vault)
        assert (kept / "shard-0.npz").exists()
    vault.refresh(keep_text=False)
    index = RecallIndex.from_documents(vault_documents(vault), len(vault.notes))
    assert save_index(vault, index)
    remove_stale_temporaries(vault)  # an index saved is not yet an index loaded
    assert (kept / "shard-0.npz").exists()
    retriever = TieredLexicalRetriever(vault_path=str(root))
    retriever.invoke("walrus")  # the saved index loaded: no build comes
    assert not kept.exists()


def test_a_build_that_fails_with_shards_taken_up_leaves_none_for_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sharded_vault: VaultSpec
) -> None:
    kept = _stopped_build(tmp_path, monkeypatch, sharded_vault, after=2)

    def failing(*_args: object) -> bool:
        raise ValueError("a shard of another layout")

    monkeypatch.setattr(parallel_build, "_merge", failing)
    _index_shards(monkeypatch)
    with pytest.raises(ValueError, match="another layout"):
        build_vault_index(sharded_vault, tmp_path / "failed.npz", 1, resume_in=kept)
    assert not kept.exists()


def test_the_index_process_keeps_its_shards_beside_the_saved_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path | None] = []

    def recording(
        spec: VaultSpec, target: Path, processes: Any, setup: Any, resume_in: Path | None = None
    ) -> bool:
        calls.append(resume_in)
        return True

    monkeypatch.setattr(index_worker, "build_vault_index", recording)
    request = {"root": str(tmp_path), "include_hidden": False, "max_note_bytes": 4096}
    target = tmp_path / ".vaultsearch" / "lexical-index.npz"
    assert index_worker._build({**request, "target": str(target)}) == target
    assert calls == [target.parent / BUILD_SHARDS_FOLDER]
    written = index_worker._build({**request, "target": None})
    written.unlink()
    assert calls[1:] == [None]  # a temporary index: nothing to take up later


def test_a_note_added_while_a_large_build_was_stopped_costs_only_its_own_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_vault(
        tmp_path / "vault", {f"Note {i:03d}.md": f"walrus number{i}\n" for i in range(0, 800, 2)}
    )
    monkeypatch.setattr(parallel_build, "SHARD_NOTES", 40)  # cut by path: 30 to 60 notes each
    spec = VaultSpec(str(root.resolve()), include_hidden=False, max_note_bytes=4096)
    kept = tmp_path / "kept"

    def stopped(*_args: object) -> bool:
        raise _StoppedError  # every shard written, none merged

    monkeypatch.setattr(parallel_build, "_merge", stopped)
    written = _index_shards(monkeypatch)
    with pytest.raises(_StoppedError):
        build_vault_index(spec, tmp_path / "stopped.npz", 1, resume_in=kept)
    assert len(written) == 11
    (root / "Note 401.md").write_text("a narwhal, added meanwhile\n", encoding="utf-8")
    monkeypatch.setattr(parallel_build, "_merge", _MERGE)
    indexed = _index_shards(monkeypatch)
    assert build_vault_index(spec, tmp_path / "resumed.npz", 1, resume_in=kept)
    assert len(indexed) == 1  # the shard the note joined; the bounds of the others stay
    assert contents(tmp_path / "resumed.npz", root)["postings"]["narwhal"] == ["Note 401.md"]
