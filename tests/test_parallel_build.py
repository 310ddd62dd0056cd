"""The first index built across processes is the index one process builds, note for note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langchain_vaultsearch.search import parallel_build
from langchain_vaultsearch.search.index_cache import load_index, save_index
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
    index, current, _pages = loaded
    terms = index.vocabulary.terms()
    postings = {
        term: sorted(p for p, _score in index.candidates([term], 100))
        for term in terms
        if " " not in term
    }
    graph = {p: sorted(vault.outlinks(p)) for p in sorted(current)}
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
