"""VaultSearch and the CLI's semantic commands over embedded Chroma, with a fake model."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from langchain_vaultsearch.cli import main
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.service import VaultSearch
from tests.conftest import write_vault
from tests.fake_embeddings import WordBagEmbedding


def test_lexical_only_service_refuses_semantic_modes_with_the_fix(vault_dir: Path) -> None:
    service = VaultSearch(vault_dir, watch=False)
    assert service.semantic_index is None
    assert isinstance(service.retriever("auto"), RetrieverFactory)
    assert service.search("OAuth callback", mode="lexical", k=3)[0].metadata["source"] == "lexical"
    with pytest.raises(ValueError, match="vaultsearch index --embeddings"):
        service.retriever("merged")
    with pytest.raises(ValueError, match="mode must be one of"):
        service.retriever("fuzzy")  # type: ignore[arg-type]
    assert service.status()["semantic"] is None
    with pytest.raises(ValueError, match="the query is empty"):
        service.search(" ", tags=["project"])  # matched nothing, as if the vault were empty
    everything = service.search("the", k=100)
    for blank in ("", "#", " "):  # it used to filter nothing out, silently
        with pytest.raises(ValueError, match="not a tag"):
            service.search("the", k=100, tags=["project", blank])
    assert len(service.search("the", k=100, tags=["project"])) < len(everything)


def test_index_then_every_mode_and_status(vault_dir: Path) -> None:
    service = VaultSearch(vault_dir, embeddings="fake:32", watch=False)
    summary = service.index()
    assert summary.saved_to is not None
    assert summary.semantic is not None
    assert summary.semantic.chunks_written >= summary.notes > 5
    for mode in ("auto", "lexical", "semantic", "merged"):
        assert service.search("OAuth callback", mode=mode, k=3), mode
    status = service.status()["semantic"]
    assert status["model"] == "fake:32"
    assert (status["missing_vectors"], status["orphan_vectors"]) == (0, 0)
    assert status["unindexed_notes"] == 0
    context = service.context("what about [[Deployment]]?", mode="merged")
    assert "<filterResults>" in context.text
    service.close()
    # A new service finds the index and its model by itself.
    again = VaultSearch(vault_dir, watch=False)
    assert again.semantic_index is not None
    assert again.semantic_index.model_id == "fake:32"
    note = again.note("Projects/Alpha/Deployment.md")
    assert note is not None
    assert note.metadata["title"] == "Deployment"
    assert again.note("missing.md") is None


def test_cli_index_search_modes_and_status(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "--vault", str(vault_dir), "--mode", "semantic", "oauth"]) == 2
    assert "needs a vector index" in capsys.readouterr().err
    assert main(["index", "--vault", str(vault_dir), "--embeddings", "fake:32"]) == 0
    out = capsys.readouterr().out
    assert "Vector index (fake:32):" in out
    assert "added" in out
    notes = re.search(r"; (\d+) of (\d+) notes have vectors;", out)
    assert notes is not None
    assert notes[1] == notes[2] != "0"
    # Again: nothing to read, and every note still counts (it said "0 unchanged").
    assert main(["index", "--vault", str(vault_dir)]) == 0
    assert (
        f"0 added, 0 updated, 0 removed; {notes[1]} of {notes[2]} notes have vectors; 0 texts"
        in (capsys.readouterr().out)
    )
    for mode in ("semantic", "merged", "auto"):
        assert main(["search", "--vault", str(vault_dir), "--mode", mode, "--json", "oauth"]) == 0
        documents = json.loads(capsys.readouterr().out)["documents"]
        assert documents, mode
    assert main(["status", "--vault", str(vault_dir)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["semantic"]["interrupted_notes"] == 0
    assert main(["index", "--vault", str(vault_dir), "--embeddings", "fake:16"]) == 2
    assert "--rebuild" in capsys.readouterr().err
    assert main(["index", "--vault", str(vault_dir), "--embeddings", "fake:16", "--rebuild"]) == 0
    assert "Vector index (fake:16)" in capsys.readouterr().out


class _GatedModel(WordBagEmbedding):
    """A model that embeds its first batch of a refresh, then waits to be let go."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.paused = threading.Event()
        self.go_on = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if len(texts) > 1:  # not the one-text probe an index opens with
            self.batches += 1
            if self.batches == 2:
                self.paused.set()
                self.go_on.wait(60)
        return super().embed_documents(texts)


def test_a_background_first_index_is_searched_while_it_runs(tmp_path: Path) -> None:
    notes = {
        f"Zoo/Animal {n:03d}.md": f"# Animal {n:03d}\n\nA zebra called number {n}.\n"
        for n in range(150)
    }
    vault = write_vault(tmp_path / "vault", notes)
    model = _GatedModel()
    service = VaultSearch(vault, embeddings=model, watch=False)
    running = service.index_in_background()
    try:
        assert model.paused.wait(60)  # one batch of 64 texts written, the next one waits
        indexing = service.status()["semantic"]["indexing"]
        assert 0 < indexing["texts_done"] < indexing["texts_total"] == 150
        found = service.search("zebra", mode="merged", k=10)
        assert found
        progress = [doc.metadata["vectorIndexProgress"] for doc in found]
        assert all(p["textsDone"] < p["textsTotal"] for p in progress)
        semantic = service.search("zebra", mode="semantic", k=100)
        assert 0 < len({doc.metadata["path"] for doc in semantic}) < 150
    finally:
        model.go_on.set()
        running.join(60)
    assert service.last_index is not None
    assert service.last_index.semantic_problem is None
    assert "indexing" not in service.status()["semantic"]
    done = service.search("zebra", mode="semantic", k=100)
    assert len({doc.metadata["path"] for doc in done}) == 100
    assert all("vectorIndexProgress" not in doc.metadata for doc in done)


def test_model_skips_reads_the_query_as_each_search_gives_it_to_the_model(tmp_path: Path) -> None:
    """`fake:16` reads no Chinese (nothing in its name says so). A carried tag never
    reaches the model, but a tag no note carries does, as its word."""
    vault = write_vault(
        tmp_path / "vault",
        {"学习.md": "# 学习\n\n#学习 english notes\n", "Other.md": "# Other\n\nenglish\n"},
    )
    service = VaultSearch(vault, embeddings="fake:16", watch=False)
    assert not service.model_skips("学习 english")  # the index is not open yet
    service.index()
    assert service.model_skips("学习 english")
    assert not service.model_skips("english notes")
    assert not service.model_skips("#学习 english")  # carried: its notes come first
    assert not service.model_skips("\uff03学习 english")  # an input method's full-width #
    assert service.model_skips("#中文 english")  # no note carries it: the model reads 中文
    assert service.model_skips("#中文 english", mode="merged")
    assert service.model_skips("#学习 english", mode="semantic")  # the raw query
    assert not service.model_skips("学习 english", mode="lexical")  # no model asked


def test_a_tag_given_full_width_is_the_tag(vault_dir: Path) -> None:
    service = VaultSearch(vault_dir, watch=False)
    ascii_tag = service.search("deploy", mode="lexical", tags=["#ops"])
    assert ascii_tag
    assert service.search("deploy", mode="lexical", tags=["\uff03ops"]) == ascii_tag


def test_reading_a_note_over_the_size_limit_says_so(vault_dir: Path) -> None:
    """It was "no such note": a client that listed the path went looking elsewhere."""
    huge = vault_dir / "Huge.md"
    huge.write_text("# Huge\n\n" + "word " * (2 * 1024 * 1024 + 1), encoding="utf-8")
    service = VaultSearch(vault_dir, watch=False)
    with pytest.raises(ValueError, match="over the 10 MB note limit"):
        service.note("Huge.md")
    assert service.note("missing.md") is None
    huge.write_text("# Huge\n\nNow small.\n", encoding="utf-8")
    os.utime(huge, ns=(time.time_ns(), time.time_ns() + 10**9))  # seen as changed
    note = service.note("Huge.md")
    assert note is not None
    assert "Now small." in note.page_content
    service.close()
