"""Processes sharing one embedded vector index: nobody but the writer touches the store.

Embedded Chroma writes its files even to read (a process's first read replays Chroma's
log into its own copy of the HNSW graph, and re-creates or saves the files), so a search
run while `vaultsearch index` writes used to damage the store for good. These tests use
real processes, real embedded Chroma and the `fake:32` model. A writer pauses in the middle
of a refresh (its model waits for a file), so what other processes do while it writes is
checked at a known moment rather than by luck: they must get one line and search
lexically, leave every file of the store as it was, and search semantically again once
the writer is done.

Each subprocess runs a role of this module (`python -m tests.test_semantic_processes`)
under a timeout.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_chroma import Chroma
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_vaultsearch.semantic import index as index_module
from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.semantic.lock import IndexLockedError
from langchain_vaultsearch.service import VaultSearch
from tests.conftest import write_vault
from tests.fake_embeddings import HeldEmbedding

ROOT = Path(__file__).resolve().parents[1]
SPEC = "fake:32"
TIMEOUT_S = 90.0
"""The longest any subprocess or signal may take (the whole module takes seconds)."""
QUERY = "notes about topic seven"


class PausingEmbedding(Embeddings):
    """The `fake:32` model, stopping inside a refresh until the test lets it go on."""

    def __init__(self, signals: Path, pause_at: int) -> None:
        """Embed as `fake:32` does; the `pause_at`-th batch (0: none) waits for `go`."""
        self.inner = DeterministicFakeEmbedding(size=32)
        self.signals = signals
        self.pause_at = pause_at
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == self.pause_at:
            (self.signals / "paused").touch()
            wait_for(self.signals / "go")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


# ---------------------------------------------------------------- subprocess roles


def run_writer(vault: Path, signals: Path, pause_at: int) -> None:
    """Refresh the index as `vaultsearch index` would, pausing at the `pause_at`-th batch.

    Writes `refreshing` once the index is open, and what the refresh added to `writer.json`.
    """
    index = VaultIndex(
        vault_path=vault,
        embeddings=PausingEmbedding(signals, pause_at),
        embedding_id=SPEC,
        batch_size=4,
    )
    (signals / "refreshing").touch()
    report = index.refresh()
    index.close()
    (signals / "writer.json").write_text(json.dumps({"added": len(report.added)}))


def run_reader(vault: Path, signals: Path) -> None:
    """Search like `vaultsearch search` and `status` during the write, and again after it.

    Starts at the test's `reader-go`, writes `during.json`, waits for the test's
    `written`, then writes `after.json`.
    """
    wait_for(signals / "reader-go")
    during: dict[str, Any] = {}
    try:
        index = VaultIndex(vault_path=vault)
    except SemanticIndexUnavailable as exc:
        during["open"] = {"error": type(exc).__name__, "message": str(exc)}
    else:  # what a search did before: refresh, search, check, close
        index.ensure_fresh()
        index.search(QUERY, 3)
        index.verify()
        index.close()
        during["open"] = {"error": None}
    service = VaultSearch(vault, watch=False)
    during["status"] = service.status()["semantic"]
    during["results"] = len(service.search(QUERY, k=5))
    service.close()
    (signals / "during.json").write_text(json.dumps(during))
    wait_for(signals / "written")
    index = VaultIndex(vault_path=vault)
    after = {
        "hits": len(index.search(QUERY, 3)),
        "verify_ok": index.verify().ok,
        "self_hits": self_hits(index),
    }
    index.close()
    (signals / "after.json").write_text(json.dumps(after))


def self_hits(index: VaultIndex, sample: int = 40) -> list[int]:
    """How many stored vectors, searched for, come back first: [hits, tried].

    A store whose HNSW graph or labels were mixed up by two processes loads, lists its
    ids and even searches, but stops finding its own vectors.
    """
    store = cast(Chroma, index.store)
    ids = sorted(store.get(include=[])["ids"])
    chosen = random.Random(0).sample(ids, min(sample, len(ids)))
    stored = store.get(ids=chosen, include=["embeddings"])
    hits = 0
    for vector_id, vector in zip(stored["ids"], stored["embeddings"], strict=True):
        [(doc, _score)] = store.similarity_search_by_vector_with_relevance_scores(
            [float(v) for v in vector], k=1
        )
        hits += doc.id == vector_id
    return [hits, len(chosen)]


def main(argv: list[str]) -> None:
    """Run one role: `writer VAULT SIGNALS PAUSE_AT` or `reader VAULT SIGNALS`."""
    role, vault, signals, *rest = argv
    if role == "writer":
        run_writer(Path(vault), Path(signals), int(rest[0]))
    else:
        run_reader(Path(vault), Path(signals))


# ---------------------------------------------------------------- helpers


def wait_for(path: Path, process: subprocess.Popen[str] | None = None) -> None:
    """Wait for a signal file; fail early when the process that should make it died."""
    deadline = time.monotonic() + TIMEOUT_S
    while not path.exists():
        if process is not None and process.poll() is not None:
            _out, err = process.communicate()
            msg = f"{process.args!r} exited {process.returncode} before {path.name}: {err}"
            raise AssertionError(msg)
        if time.monotonic() > deadline:
            msg = f"no {path} after {TIMEOUT_S} s"
            raise TimeoutError(msg)
        time.sleep(0.02)


@contextmanager
def role(*args: str | Path | int) -> Iterator[subprocess.Popen[str]]:
    """A subprocess running a role of this module; killed if the test leaves it running."""
    process = subprocess.Popen(  # noqa: S603 - this interpreter and this module
        [sys.executable, "-m", "tests.test_semantic_processes", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def finish(process: subprocess.Popen[str]) -> None:
    """Wait for a process that must exit 0 within the timeout."""
    _out, err = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, err


def notes(start: int, stop: int) -> dict[str, str]:
    return {
        f"Notes/n{i:03d}.md": f"# Note {i}\n\nA note about topic {i % 17}, item {i}.\n"
        for i in range(start, stop)
    }


def build(vault: Path) -> None:
    """An index of the vault as it is, recording the `fake:32` spec for later opens."""
    index = VaultIndex(vault_path=vault, embeddings=SPEC)
    index.refresh()
    index.close()


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file of a folder: size, modification time (ns) and content hash.

    The time counts: Chroma re-creating a file with the bytes it had is still a write.
    """
    return {
        str(path.relative_to(folder)): (
            path.stat().st_size,
            path.stat().st_mtime_ns,
            hashlib.sha256(path.read_bytes()).hexdigest(),
        )
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def one_line_busy(message: str, writer: subprocess.Popen[str]) -> None:
    assert "\n" not in message
    assert f"being written by pid {writer.pid}" in message
    assert "lexical search is unaffected" in message


# ---------------------------------------------------------------- tests


def test_readers_during_a_write_get_one_line_and_leave_the_store_as_the_writer_left_it(
    tmp_path: Path,
) -> None:
    vault = write_vault(tmp_path / "vault", notes(0, 150))
    build(vault)
    write_vault(vault, notes(150, 200))
    chroma = vault / ".vaultsearch" / "semantic" / "chroma"
    signals = tmp_path / "signals"
    signals.mkdir()
    with role("writer", vault, signals, 2) as writer, role("reader", vault, signals) as reader:
        wait_for(signals / "paused", writer)  # the writer has written a batch, and waits
        before = snapshot(chroma)
        (signals / "reader-go").touch()
        wait_for(signals / "during.json", reader)
        assert snapshot(chroma) == before, "a reader wrote to the store during the write"
        during = json.loads((signals / "during.json").read_text())
        # Opening says why in one line; the facade's status says the same, and its
        # search falls back to lexical results.
        assert during["open"]["error"] == "SemanticIndexBusy"
        one_line_busy(during["open"]["message"], writer)
        one_line_busy(during["status"]["error"], writer)
        assert during["results"] > 0
        (signals / "go").touch()
        finish(writer)
        assert json.loads((signals / "writer.json").read_text()) == {"added": 50}
        (signals / "written").touch()
        finish(reader)
    after = json.loads((signals / "after.json").read_text())
    # The same reader process opens it again and finds every stored vector.
    assert after["hits"] > 0
    assert after["verify_ok"]
    assert after["self_hits"][0] == after["self_hits"][1] > 0


def test_a_refresh_waits_for_a_process_that_has_the_store_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = write_vault(tmp_path / "vault", notes(0, 60))
    build(vault)
    held = VaultIndex(vault_path=vault)  # this process searches: Chroma is open here
    assert held.search(QUERY, 3)
    write_vault(vault, notes(60, 80))
    signals = tmp_path / "signals"
    signals.mkdir()
    chroma = vault / ".vaultsearch" / "semantic" / "chroma"
    with role("writer", vault, signals, 0) as writer:
        wait_for(signals / "refreshing", writer)
        before = snapshot(chroma)
        time.sleep(1.0)
        # It waits instead of writing under this process's open client ...
        assert writer.poll() is None
        assert snapshot(chroma) == before
        # ... and a query's own refresh here does not write either, and says why.
        with caplog.at_level(logging.INFO, logger="langchain_vaultsearch.semantic.index"):
            assert held.ensure_fresh() is None
        assert f"being written by pid {writer.pid}" in caplog.text
        held.close()  # the search ends: the refresh goes on
        finish(writer)
        assert json.loads((signals / "writer.json").read_text()) == {"added": 20}
    index = VaultIndex(vault_path=vault)
    assert index.verify().ok
    hits, tried = self_hits(index)
    assert hits == tried > 0
    index.close()


def test_a_refresh_gives_up_in_one_message_when_the_store_stays_open_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    vault = write_vault(tmp_path / "vault", notes(0, 20))
    build(vault)
    write_vault(vault, notes(20, 25))
    index = VaultIndex(vault_path=vault)
    monkeypatch.setattr(index_module, "READERS_WAIT_S", 0.3)
    # `flock` takes a second open file for another process: a server with the store open.
    clients = vault / ".vaultsearch" / "semantic" / "records-clients.lock"
    with clients.open(encoding="utf-8") as server:
        fcntl.flock(server.fileno(), fcntl.LOCK_SH)
        with pytest.raises(IndexLockedError, match="open in another process") as info:
            index.refresh()
        assert "\n" not in str(info.value)
    assert len(index.refresh().added) == 5  # once it is closed, the refresh goes through
    index.close()


def test_a_writer_killed_mid_write_frees_the_index_and_the_next_refresh_repairs_it(
    tmp_path: Path,
) -> None:
    vault = write_vault(tmp_path / "vault", notes(0, 60))
    build(vault)
    write_vault(vault, notes(60, 100))
    signals = tmp_path / "signals"
    signals.mkdir()
    with role("writer", vault, signals, 3) as writer:
        wait_for(signals / "paused", writer)
        with pytest.raises(SemanticIndexUnavailable, match=f"being written by pid {writer.pid}"):
            VaultIndex(vault_path=vault)
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(TIMEOUT_S)
    index = VaultIndex(vault_path=vault)  # the kernel dropped the dead writer's locks
    assert index.verify().pending
    report = index.refresh()
    assert report.repaired
    assert index.verify().ok
    hits, tried = self_hits(index)
    assert hits == tried > 0
    index.close()


if __name__ == "__main__":
    main(sys.argv[1:])


def test_closing_ends_a_background_catch_up_after_its_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that ends (a one-shot command) neither waits for the whole catch-up nor
    leaves it inside a batch: it ends after the batch it is in, and the next refresh
    writes the rest."""
    vault = write_vault(tmp_path / "vault", notes(0, 10))
    build(vault)
    write_vault(vault, notes(10, 40))
    model = HeldEmbedding(DeterministicFakeEmbedding(size=32))
    model.held = True
    index = VaultIndex(
        vault_path=vault, embeddings=model, embedding_id=SPEC, batch_size=4, inline_refresh_notes=0
    )
    report = index.ensure_fresh()
    assert report is not None
    assert report.background
    assert model.entered.wait(TIMEOUT_S)  # the catch-up is inside its first batch
    waited = index.wait

    def released_once_asked_to_stop(timeout: float | None = None) -> bool:
        model.released.set()  # `close` has asked the catch-up to stop: its batch goes on
        return waited(timeout)

    monkeypatch.setattr(index, "wait", released_once_asked_to_stop)
    index.close()
    reopened = VaultIndex(vault_path=vault)
    try:
        assert not reopened.verify().pending  # no note left half-written
        assert reopened.notes_unembedded == 30 - 4  # its batch of four notes, no more
        assert len(reopened.refresh().added) == 26
        assert reopened.verify().ok
    finally:
        reopened.close()


def test_a_vault_moved_or_copied_keeps_its_vectors(tmp_path: Path) -> None:
    """Its embedded store travels with it: the collection is found by the name it was
    written with, not the new path's (a renamed vault folder re-embedded every note)."""
    vault = write_vault(tmp_path / "vault", notes(0, 30))
    build(vault)
    copy = tmp_path / "copy of the vault"
    shutil.copytree(vault, copy)
    moved = vault.rename(tmp_path / "Notes")
    for folder in (copy, moved):
        index = VaultIndex(vault_path=folder)
        try:
            assert index.verify().ok  # no vector missing
            assert index.notes_unembedded == 0
            report = index.refresh()
            assert (report.added, report.updated, report.texts_embedded) == ([], [], 0)
            assert index.as_retriever(k=3).invoke(QUERY)
        finally:
            index.close()
