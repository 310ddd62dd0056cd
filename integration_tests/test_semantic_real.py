"""The semantic side with real parts: all-MiniLM-L6-v2, embedded Chroma, a Chroma server."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import chromadb
import pytest
from langchain_core.embeddings import Embeddings

from integration_tests.conftest import ChromaServer
from langchain_vaultsearch import (
    EmbeddingModelMismatchError,
    MergedSemanticRetriever,
    RetrieverFactory,
    VaultIndex,
)
from langchain_vaultsearch.cli import main as cli_main
from langchain_vaultsearch.semantic.store_setup import SEARCH_EF

SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "sample-vault"
POSTGRES = "Engineering/PostgreSQL Indexing.md"
PARAPHRASE = "speed up slow database lookups"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A copy of the sample vault (the index writes into `<vault>/.vaultsearch/`)."""
    return Path(shutil.copytree(SAMPLE_VAULT, tmp_path / "vault"))


def test_real_model_finds_a_paraphrase_and_merged_keeps_it(
    vault: Path, minilm_embeddings: Embeddings
) -> None:
    index = VaultIndex(vault_path=vault, embeddings=minilm_embeddings)
    report = index.refresh()
    assert report.texts_embedded >= report.chunks_written > 100
    assert index.verify().ok
    semantic = index.as_retriever(k=5).invoke(PARAPHRASE)
    assert semantic[0].metadata["path"] == POSTGRES
    assert 0.2 < semantic[0].metadata["score"] <= 1.0
    merged = MergedSemanticRetriever(semantic_index=index, k=5).invoke(PARAPHRASE)
    assert POSTGRES in [doc.metadata["path"] for doc in merged[:3]]
    factory = RetrieverFactory(semantic_index=index, k=5)
    assert factory.invoke(PARAPHRASE)
    assert factory.retriever_type == "merged"


def test_a_restart_embeds_nothing_and_another_model_is_refused(
    vault: Path, minilm_embeddings: Embeddings, minilm_spec: str
) -> None:
    first = VaultIndex(vault_path=vault, embeddings=minilm_spec)
    first.refresh()
    first.close()
    # A new process (here: a new object over the same folder) knows its model by itself.
    again = VaultIndex(vault_path=vault)
    report = again.refresh()
    assert report.texts_embedded == 0
    assert not report.added
    assert again.as_retriever(k=3).invoke(PARAPHRASE)[0].metadata["path"] == POSTGRES
    again.close()
    with pytest.raises(EmbeddingModelMismatchError, match="rebuild"):
        VaultIndex(vault_path=vault, embeddings="fake:384")


def test_chroma_server_holds_the_index_for_every_client(
    vault: Path, minilm_embeddings: Embeddings, chroma_server: ChromaServer
) -> None:
    options = {
        "vault_path": vault,
        "embeddings": minilm_embeddings,
        "chroma_host": chroma_server.host,
        "chroma_port": chroma_server.port,
    }
    writer = VaultIndex(**options)  # type: ignore[arg-type]
    report = writer.refresh()
    assert report.chunks_written > 100
    assert writer.verify().ok
    # The server's collection searches as widely as an embedded one.
    client = chromadb.HttpClient(host=chroma_server.host, port=chroma_server.port)
    hnsw = client.get_collection(writer.collection_name).configuration_json["hnsw"]
    assert hnsw["ef_search"] == SEARCH_EF
    # Another client of the same server (as another process would be) sees the vectors.
    reader = VaultIndex(**options)  # type: ignore[arg-type]
    assert reader.search(PARAPHRASE, 3)[0][0].startswith(POSTGRES)
    (vault / "Engineering/PostgreSQL Indexing.md").unlink()
    assert writer.refresh().removed == [POSTGRES]
    assert not [c for c, _ in reader.search(PARAPHRASE, 5) if c.startswith(POSTGRES)]
    assert writer.verify().ok


def test_cli_index_then_merged_search(
    vault: Path, minilm_spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["index", "--vault", str(vault), "--embeddings", minilm_spec]) == 0
    out = capsys.readouterr()
    assert "Vector index" in out.out
    assert "added" in out.out
    assert (
        cli_main(["search", "--vault", str(vault), "--mode", "merged", "--k", "3", PARAPHRASE]) == 0
    )
    assert "PostgreSQL Indexing" in capsys.readouterr().out
    assert cli_main(["status", "--vault", str(vault)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["semantic"]["missing_vectors"] == 0
    assert status["semantic"]["orphan_vectors"] == 0
    assert status["semantic"]["unindexed_notes"] == 0


_CHILD = textwrap.dedent(
    """
    import sys, time
    from langchain_vaultsearch import VaultIndex

    index = VaultIndex(vault_path=sys.argv[1], embeddings="fake:64", batch_size=8)

    def progress(p):
        print(p.notes_done, flush=True)
        time.sleep(0.05)  # room for the parent to kill us mid-way

    index.refresh(on_progress=progress)
    print("done", flush=True)
    """
)


def test_kill_9_during_indexing_then_resume(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for i in range(240):
        note = vault / f"folder{i % 7}" / f"note {i}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# Note {i}\n\n" + f"topic{i} shared words {i * 7}. " * 40, "utf-8")
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", _CHILD, str(vault)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert child.stdout is not None
    done = 0
    deadline = time.monotonic() + 120
    while done < 60 and time.monotonic() < deadline:
        line = child.stdout.readline()
        assert line, "the indexing process ended before it could be killed"
        done = int(line)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    index = VaultIndex(vault_path=vault, embeddings="fake:64")
    finished = sum(1 for r in index.records.notes() if r.text_hash and not r.pending_ids)
    assert 40 <= finished < 240
    report = index.refresh()
    # Finished notes are not written again; every other note is, once.
    assert len(report.added) + len(report.updated) == 240 - finished
    check = index.verify()
    assert check.ok, check
    recorded = [i for r in index.records.notes() for i in r.vector_ids]
    assert len(recorded) == len(set(recorded))
    # A second writer while this one holds the lock gets a clear error.
    assert index.refresh().unchanged == 0


def _zoo(root: Path, count: int) -> Path:
    """A vault of `count` short notes, one text each, all about zebras."""
    for n in range(count):
        note = root / "Zoo" / f"Animal {n:03d}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# Animal {n:03d}\n\nA striped zebra called number {n}.\n", "utf-8")
    return root


def _finished_notes(records: Path) -> int:
    """Notes whose vectors are all written, read as another process would (read-only)."""
    if not records.exists():
        return 0
    import sqlite3

    with sqlite3.connect(f"{records.as_uri()}?mode=ro", uri=True) as db:
        try:
            row = db.execute(
                "SELECT count(*) FROM notes WHERE text_hash IS NOT NULL AND pending_ids IS NULL"
            ).fetchone()
        except sqlite3.OperationalError:  # the table is not made yet
            return 0
    return int(row[0])


def _vaultsearch(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(  # noqa: S603 - the installed command, fixed arguments
        [str(Path(sys.executable).with_name("vaultsearch")), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(finished: Callable[[], int], at_least: int, process: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + 300
    while (done := finished()) < at_least:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no batch was written in 300 s"
        time.sleep(0.2)
    return done


def test_ctrl_c_during_a_first_index_then_the_next_run_resumes(
    tmp_path: Path, minilm_spec: str
) -> None:
    vault = _zoo(tmp_path / "vault", 200)
    records = vault / ".vaultsearch" / "semantic" / "records.sqlite3"
    first = _vaultsearch("index", "--vault", str(vault), "--embeddings", minilm_spec)
    _wait_for(lambda: _finished_notes(records), 1, first)
    first.send_signal(signal.SIGINT)
    _out, err = first.communicate(timeout=120)
    assert first.returncode == 130, err
    assert "Traceback" not in err
    finished = _finished_notes(records)
    assert 0 < finished < 200
    second = _vaultsearch("index", "--vault", str(vault))  # the model the index names
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    # Only what the first run had not finished is written, and embedded, again.
    written = re.search(r"(\d+) added, (\d+) updated, .*; ([\d,]+) texts embedded", out)
    assert written is not None, out
    assert int(written[1]) + int(written[2]) == 200 - finished
    assert int(written[3].replace(",", "")) <= 200 - finished
    assert _finished_notes(records) == 200
    index = VaultIndex(vault_path=vault)
    try:
        assert index.verify().ok
    finally:
        index.close()


def test_a_second_process_searches_a_chroma_server_index_while_it_is_built(
    tmp_path: Path, minilm_spec: str, chroma_server: ChromaServer
) -> None:
    notes = 3000  # about half a minute of embedding here: time to search while it runs
    vault = _zoo(tmp_path / "vault", notes)
    server = ["--chroma-host", chroma_server.host, "--chroma-port", str(chroma_server.port)]
    writer = _vaultsearch("index", "--vault", str(vault), "--embeddings", minilm_spec, *server)
    home = vault / ".vaultsearch" / "semantic"

    def finished() -> int:
        found = list(home.glob("records-chroma-*.sqlite3"))
        return _finished_notes(found[0]) if found else 0

    try:
        _wait_for(finished, 1, writer)
        from langchain_vaultsearch.service import VaultSearch

        reader = VaultSearch(vault, chroma_host=chroma_server.host, chroma_port=chroma_server.port)
        try:
            docs = reader.search("zebra", mode="semantic", k=100)
            status = reader.status()["semantic"]
            still_writing = writer.poll() is None
            assert {doc.metadata["path"] for doc in docs}, "none of the embedded notes found"
            assert still_writing, "the index finished before the reader searched"
            assert 0 < status["notes_indexed"] < notes
            # Counted a moment apart while the writer goes on: together at least all notes.
            assert status["unindexed_notes"] > 0
            assert status["notes_indexed"] + status["unindexed_notes"] >= notes
        finally:
            reader.close()
    finally:
        _out, err = writer.communicate(timeout=900)
    assert writer.returncode == 0, err


def test_a_search_after_many_new_notes_ends_cleanly_and_keeps_what_it_embedded(
    tmp_path: Path, minilm_spec: str
) -> None:
    """A one-shot search after more than 8 new notes embeds 8 and leaves the rest.

    It left them to a background catch-up, and the process exited with that thread inside
    the model: `terminate called without an active exception`, status 134, and the batch
    left half-written, so that every later search aborted the same way and the notes were
    never embedded.
    """
    vault = _zoo(tmp_path / "vault", 20)
    records = vault / ".vaultsearch" / "semantic" / "records.sqlite3"
    indexed = _vaultsearch("index", "--vault", str(vault), "--embeddings", minilm_spec)
    _out, err = indexed.communicate(timeout=600)
    assert indexed.returncode == 0, err
    _zoo(vault, 50)  # 30 notes more: 8 before each query, the rest left
    for left in (22, 14):
        search = _vaultsearch("search", "--vault", str(vault), "--k", "3", "striped zebra")
        out, err = search.communicate(timeout=600)
        assert search.returncode == 0, err
        assert "Animal" in out
        assert "terminate called" not in err
        assert f"{left} notes are not embedded yet" in err
        assert _finished_notes(records) == 50 - left
    index = VaultIndex(vault_path=vault)
    try:
        check = index.verify()
        assert (check.missing, check.orphans, check.pending) == ([], [], [])  # none half-written
        assert len(check.unindexed) == 14  # left to the next command
    finally:
        index.close()


_ONE_SEARCH = (
    "import sys\n"
    "from langchain_vaultsearch import RetrieverFactory, VaultIndex\n"
    "index = VaultIndex(vault_path=sys.argv[1], embeddings=sys.argv[2])\n"
    "factory = RetrieverFactory(semantic_index=index, k=3, semantic_timeout=float(sys.argv[3]))\n"
    "docs = factory.invoke('striped zebra')\n"
    "print(len(docs), sorted({doc.metadata['source'] for doc in docs}))\n"
)
"""A script that searches a vault once and ends, as a notebook cell or a cron job would."""


@pytest.mark.parametrize(
    ("notes", "timeout"),
    [
        # 8 new notes are embedded by the query itself, past its deadline of 1 ms.
        (8, 0.001),
        # 60 are left to a background catch-up.
        (60, 30.0),
    ],
    ids=["semantic-past-its-deadline", "background-catch-up"],
)
def test_a_script_that_searches_once_exits_cleanly_while_the_model_still_works(
    tmp_path: Path, minilm_spec: str, notes: int, timeout: float
) -> None:
    """The lexical results come back, and the process then exits, keeping what it wrote.

    The model's work went on in a daemon thread, still inside the model when the
    interpreter finalized: `terminate called without an active exception`, status 134,
    after the script had printed its results.
    """
    vault = _zoo(tmp_path / "vault", notes)
    run = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", _ONE_SEARCH, str(vault), minilm_spec, str(timeout)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert "terminate called" not in run.stderr
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "3 ['lexical']"
    index = VaultIndex(vault_path=vault)
    try:
        check = index.verify()
        assert (check.missing, check.orphans, check.pending) == ([], [], [])  # none half-written
    finally:
        index.close()
