"""How widely embedded Chroma searches: every index, new or built before, at `SEARCH_EF`."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import chromadb
import pytest
from chromadb.api.client import Client
from chromadb.api.models.Collection import Collection

from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.semantic.store_setup import SEARCH_EF

QUERY = "database indexes"


@contextmanager
def collection(folder: Path, name: str) -> Iterator[Collection]:
    """The index's collection, through a client of its own (as another process opens it)."""
    client = cast("Client", chromadb.PersistentClient(path=str(folder / "chroma")))
    try:
        yield client.get_collection(name)
    finally:
        client.close()


def ef_search(folder: Path, name: str) -> int:
    """The collection's search breadth."""
    with collection(folder, name) as opened:
        return int(opened.configuration_json["hnsw"]["ef_search"])


def set_ef_search(folder: Path, name: str, ef: int) -> None:
    """What an index built before `SEARCH_EF` looks like: Chroma's own breadth."""
    with collection(folder, name) as opened:
        opened.modify(configuration={"hnsw": {"ef_search": ef}})


def built(vault_dir: Path, folder: Path) -> tuple[str, list[tuple[str, float]]]:
    """An index over the vault, refreshed: its collection's name and a search's hits."""
    index = VaultIndex(vault_path=vault_dir, embeddings="fake:16", persist_directory=folder)
    try:
        assert index.refresh().chunks_written > 0
        return index.collection_name, index.search(QUERY, 5)
    finally:
        index.close()


def test_a_new_index_searches_beyond_chromas_default_breadth(
    vault_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "index"
    name, hits = built(vault_dir, folder)
    assert hits
    assert SEARCH_EF > 100  # Chroma's default, sized for a handful of results
    assert ef_search(folder, name) == SEARCH_EF


def test_an_index_built_with_chromas_default_breadth_is_widened_when_opened(
    vault_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "index"
    name, hits = built(vault_dir, folder)
    set_ef_search(folder, name, 100)
    assert ef_search(folder, name) == 100
    index = VaultIndex(vault_path=vault_dir, persist_directory=folder)
    try:
        assert index.search(QUERY, 5) == hits  # same vectors, same answer
    finally:
        index.close()
    assert ef_search(folder, name) == SEARCH_EF


def test_a_collection_that_refuses_the_change_is_still_searched(
    vault_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    folder = tmp_path / "index"
    name, hits = built(vault_dir, folder)
    set_ef_search(folder, name, 100)

    def refuse(self: Collection, **kwargs: object) -> None:
        raise PermissionError("collection configuration is read-only here")

    monkeypatch.setattr(Collection, "modify", refuse)
    with caplog.at_level(logging.WARNING, logger="langchain_vaultsearch"):
        index = VaultIndex(vault_path=vault_dir, persist_directory=folder)
    try:
        assert index.search(QUERY, 5) == hits
    finally:
        index.close()
    assert f"the vector collection {name} keeps its own search breadth" in caplog.text
    assert "read-only here" in caplog.text
    monkeypatch.undo()
    assert ef_search(folder, name) == 100
