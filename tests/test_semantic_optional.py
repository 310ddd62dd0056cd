"""The semantic side may fail, but lexical search, `status` and the demo never depend on it.

Real subprocesses of the installed `vaultsearch` command, as a user meets them: a first
`index --embeddings` whose model cannot load, and a vector index folder left behind by an
older failed run. Before `VaultSearch` opened the vector index only when a search needed
it, each of these made every later command on the vault exit 2, `--mode lexical` and
`status` included.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
from langchain_vaultsearch.semantic.records import IndexRecords
from langchain_vaultsearch.service import VaultSearch

VAULTSEARCH = str(Path(sys.executable).with_name("vaultsearch"))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - the installed command, fixed arguments
        [VAULTSEARCH, *args], capture_output=True, text=True, timeout=180, check=False
    )


def _works_lexically(vault: Path) -> dict[str, object]:
    """Lexical search, the demo's command and `status` all answer; returns the status."""
    lexical = _run("search", "--vault", str(vault), "--mode", "lexical", "--json", "OAuth")
    assert lexical.returncode == 0, lexical.stderr
    assert json.loads(lexical.stdout)["documents"]
    demo = _run("search", "--vault", str(vault), "--k", "10", "how do I set up OAuth?")
    assert demo.returncode == 0, demo.stderr
    assert "OAuth Setup.md" in demo.stdout
    status = _run("status", "--vault", str(vault))
    assert status.returncode == 0, status.stderr
    assert "Traceback" not in status.stderr
    report: dict[str, object] = json.loads(status.stdout)
    return report


def test_a_model_that_cannot_load_breaks_nothing_else(vault_dir: Path) -> None:
    missing = vault_dir.parent / "no-such-model"
    failed = _run("index", "--vault", str(vault_dir), "--embeddings", f"huggingface:{missing}")
    assert failed.returncode == 2
    assert "Traceback" not in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1, failed.stderr
    status = _works_lexically(vault_dir)
    assert status["notes"] == 9
    # Merged search says why it cannot run, in one line, instead of a traceback.
    merged = _run("search", "--vault", str(vault_dir), "--mode", "merged", "OAuth")
    assert merged.returncode == 2
    assert "Traceback" not in merged.stderr


def test_a_vector_index_left_without_a_model_is_reported_not_fatal(vault_dir: Path) -> None:
    # What a failed first index of an earlier version left: records that name no model.
    home = vault_dir / ".vaultsearch" / "semantic"
    home.mkdir(parents=True)
    IndexRecords(home / "records.sqlite3").close()
    status = _works_lexically(vault_dir)
    semantic = status["semantic"]
    assert isinstance(semantic, dict)
    assert "embedding" in str(semantic["error"]).lower()
    # The default search says, in one line, why its results are lexical only.
    searched = _run("search", "--vault", str(vault_dir), "OAuth")
    assert searched.returncode == 0
    assert searched.stderr.startswith("vaultsearch: semantic search is off, these are lexical")
    assert len(searched.stderr.strip().splitlines()) == 1


def test_the_facade_keeps_lexical_search_when_the_vector_index_fails(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    service = VaultSearch(vault_dir, embeddings="fake:0", watch=False)
    docs = service.search("OAuth callback", k=3)
    assert docs
    assert docs[0].metadata["source"] == "lexical"
    assert service.semantic_index is None
    assert service.semantic_problem
    assert "Semantic search is off" in caplog.text
    assert service.status()["semantic"] == {"error": service.semantic_problem}
    with pytest.raises(ValueError, match="merged search is off"):
        service.search("OAuth", mode="merged")


def test_lexical_mode_never_opens_the_vector_index(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    VaultSearch(vault_dir, embeddings="fake:16", watch=False).index()
    opened: list[object] = []
    from langchain_vaultsearch import service as service_module

    real = service_module.VaultIndex

    def counting(*args: object, **kwargs: object) -> object:
        opened.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(service_module, "VaultIndex", counting)
    service = VaultSearch(vault_dir, watch=False)
    assert service.search("OAuth callback", mode="lexical", k=3)
    assert service.local_search("what about #project/alpha?", mode="lexical").documents
    given = service.local_search("what did I write?", time_range="last week")
    assert given.filter_result is not None
    assert opened == []
    assert service.search("OAuth callback", k=3)  # auto: merged, so now it opens
    assert len(opened) == 1


def test_a_question_about_a_tag_no_note_carries_is_searched_not_filtered(vault_dir: Path) -> None:
    service = VaultSearch(vault_dir, embeddings="fake:16", watch=False)
    about = service.local_search("how do #nested tags work in OAuth notes?")
    assert about.searched
    assert about.filter_result.tags == ()
    assert about.limit == 30
    assert service.factory.choose("how do #nested tags work?") == "merged"
    service.index()  # the vectors of every note written, so the semantic side answers
    tagged = service.local_search("what is planned in #project/alpha")
    assert tagged.filter_result.tags == ("#project/alpha",)
    assert tagged.limit == 100
    # With a vector index, merged search ranks a carried tag's question on every front
    # (the CLI's `context` and the MCP tool come through here).
    assert tagged.search_documents
    assert all("fusion" in doc.metadata["explanation"] for doc in tagged.search_documents)
    assert service.factory.choose("#project/alpha plans") == "merged"  # filtered, then ranked
    # A tag added to a note is a filter from the next question on.
    (vault_dir / "Piano" / "Lesson 1.md").write_text("# Lesson 1\n\nScales. #nested\n")
    assert service.local_search("how do #nested tags work?").filter_result.tags == ("#nested",)
    assert service.tags()["#nested"] == 1


def test_a_failed_vector_index_is_tried_again_and_then_searched(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_vaultsearch import service as service_module

    VaultSearch(vault_dir, embeddings="fake:16", watch=False).index()
    real = service_module.VaultIndex
    attempts: list[int] = []

    def flaky(*args: object, **kwargs: object) -> object:
        attempts.append(1)
        if len(attempts) == 1:  # e.g. another process was writing it
            raise SemanticIndexUnavailable("the index is busy")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(service_module, "VaultIndex", flaky)
    service = VaultSearch(vault_dir, watch=False)
    assert service.factory.choose("OAuth callback") == "lexical"
    assert service.semantic_problem == "the index is busy"
    assert service.factory.choose("OAuth callback") == "lexical"  # within the cooldown
    assert attempts == [1]
    monkeypatch.setattr(service_module, "SEMANTIC_RETRY_S", 0.0)
    assert service.factory.choose("OAuth callback") == "merged"
    assert service.semantic_problem is None
    assert len(attempts) == 2


def test_records_damaged_mid_file_are_one_line_and_lexical_search_goes_on(vault_dir: Path) -> None:
    assert _run("index", "--vault", str(vault_dir), "--embeddings", "fake:16").returncode == 0
    records = vault_dir / ".vaultsearch" / "semantic" / "records.sqlite3"
    with records.open("r+b") as damaged:  # what a disk error or a half-synced page leaves
        damaged.seek(records.stat().st_size // 2)
        damaged.write(bytes(range(256)) * 64)
    searched = _run("search", "--vault", str(vault_dir), "--json", "OAuth")
    assert searched.returncode == 0
    assert json.loads(searched.stdout)["documents"]
    assert "Traceback" not in searched.stderr
    indexed = _run("index", "--vault", str(vault_dir))
    assert "Indexed" in indexed.stdout  # the lexical index is saved all the same
    assert indexed.returncode == 2
    assert "Traceback" not in indexed.stderr
    assert len(indexed.stderr.strip().splitlines()) == 1
    assert "damaged" in indexed.stderr
    assert "delete" in indexed.stderr
    # A rebuild replaces the damaged file; without the model it says which to give.
    unnamed = _run("index", "--vault", str(vault_dir), "--rebuild")
    assert unnamed.returncode == 2
    assert "Traceback" not in unnamed.stderr
    assert "--embeddings SPEC --rebuild" in unnamed.stderr
    assert "'fake:16'" in unnamed.stderr
    rebuilt = _run("index", "--vault", str(vault_dir), "--embeddings", "fake:16", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    semantic = _run("search", "--vault", str(vault_dir), "--mode", "semantic", "--json", "OAuth")
    assert semantic.returncode == 0, semantic.stderr
    assert json.loads(semantic.stdout)["documents"]
    assert IndexRecords(records).damage() is None


def test_a_zero_byte_records_file_is_no_index(vault_dir: Path) -> None:
    records = vault_dir / ".vaultsearch" / "semantic" / "records.sqlite3"
    records.parent.mkdir(parents=True)
    records.touch()  # what `touch` or an interrupted copy leaves
    assert _works_lexically(vault_dir)["semantic"] is None
    assert records.stat().st_size == 0  # looking did not turn it into a records database
    indexed = _run("index", "--vault", str(vault_dir), "--embeddings", "fake:16")
    assert indexed.returncode == 0, indexed.stderr
    semantic = _run("search", "--vault", str(vault_dir), "--mode", "semantic", "--json", "OAuth")
    assert semantic.returncode == 0, semantic.stderr
    assert json.loads(semantic.stdout)["documents"]


@pytest.mark.parametrize("damage", ["lock-is-a-folder", "junk-vector-ids", "null-vector-ids"])
def test_forged_or_odd_index_files_are_one_line(vault_dir: Path, damage: str) -> None:
    VaultSearch(vault_dir, embeddings="fake:16", watch=False).index()
    home = vault_dir / ".vaultsearch" / "semantic"
    if damage == "lock-is-a-folder":
        (home / "records.lock").unlink(missing_ok=True)
        (home / "records.lock").mkdir()
    else:
        value = "{not json" if damage == "junk-vector-ids" else "null"
        with sqlite3.connect(home / "records.sqlite3") as db:
            db.execute("UPDATE notes SET vector_ids = ?", (value,))
    service = VaultSearch(vault_dir, watch=False)
    assert service.search("OAuth callback", k=3)  # lexical results, whatever the index
    # A changed note makes the refresh write: it meets the damage, and says so in a line.
    (vault_dir / "Projects" / "Beta" / "Notes.md").write_text("# Beta\n\nNow about zebras.\n")
    summary = service.index()
    assert summary.saved_to is not None
    assert summary.semantic_problem is not None
    assert "\n" not in summary.semantic_problem
