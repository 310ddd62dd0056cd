"""A store whose first read crashed a process is refused in one line, not read again.

The guard's rules with a plain function as the read, then the real thing: an embedded
Chroma store whose HNSW file is damaged ends the first process with a segmentation fault,
and the next search answers lexically, saying why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
from langchain_vaultsearch.semantic.first_read import READING_MARKER, guarded_first_read
from tests.conftest import write_vault


def gone_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_read_runs_with_a_marker_that_is_gone_after_it(tmp_path: Path) -> None:
    seen: list[bool] = []
    guarded_first_read(tmp_path, lambda: seen.append((tmp_path / READING_MARKER).exists()))
    assert seen == [True]
    assert not (tmp_path / READING_MARKER).exists()


def test_a_read_that_fails_in_python_leaves_no_marker(tmp_path: Path) -> None:
    def fails() -> None:
        raise RuntimeError("a Python error is caught; only a crash leaves the marker")

    with pytest.raises(RuntimeError):
        guarded_first_read(tmp_path, fails)
    guarded_first_read(tmp_path, lambda: None)


def test_the_marker_of_a_process_that_is_gone_refuses_the_store(tmp_path: Path) -> None:
    pid = gone_pid()
    (tmp_path / READING_MARKER).write_text(str(pid))
    read: list[int] = []
    with pytest.raises(SemanticIndexUnavailable) as info:
        guarded_first_read(tmp_path, lambda: read.append(1))
    message = str(info.value)
    assert f"ended process {pid} as it was first read" in message
    assert "vaultsearch index --rebuild" in message
    assert str(tmp_path / READING_MARKER) in message
    assert "\n" not in message
    assert read == []


@pytest.mark.parametrize("marker", ["alive", "ours", "not a pid"])
def test_a_marker_of_a_running_process_or_garbage_does_not(tmp_path: Path, marker: str) -> None:
    text = {"alive": str(os.getppid()), "ours": str(os.getpid()), "not a pid": "x"}[marker]
    (tmp_path / READING_MARKER).write_text(text)
    read: list[int] = []
    guarded_first_read(tmp_path, lambda: read.append(1))
    assert read == [1]


def test_a_store_it_cannot_mark_is_read_unguarded(tmp_path: Path) -> None:
    read: list[int] = []
    guarded_first_read(tmp_path / "not a folder", lambda: read.append(1))
    assert read == [1]


def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, as a user runs it (a crash ends only it)."""
    return subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
        [sys.executable, "-m", "langchain_vaultsearch.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def test_a_damaged_hnsw_file_crashes_one_search_and_the_next_answers_lexically(
    tmp_path: Path,
) -> None:
    # Chroma keeps its first 1,000 vectors out of the HNSW files: 1,500 notes reach them.
    notes = {f"note{n}.md": f"# Note {n}\n\nA walrus note, number {n}.\n" for n in range(1500)}
    vault = write_vault(tmp_path / "vault", notes)
    assert cli("index", "--vault", str(vault), "--embeddings", "fake:16").returncode == 0
    chroma = vault / ".vaultsearch" / "semantic" / "chroma"
    damaged = next(chroma.glob("*/data_level0.bin"))
    damaged.write_bytes(b"\xff" * damaged.stat().st_size)

    def search() -> subprocess.CompletedProcess[str]:
        return cli("search", "--vault", str(vault), "--k", "3", "note 7 walrus")

    first = search()
    second = search()

    assert second.returncode == 0, second.stderr
    assert "note7.md" in second.stdout
    if first.returncode < 0:  # the segmentation fault: said once, never met again
        assert "ended process" in second.stderr
        assert "vaultsearch index --rebuild" in second.stderr
    rebuilt = cli("index", "--vault", str(vault), "--embeddings", "fake:16", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    healed = search()
    assert healed.returncode == 0
    assert "semantic search is off" not in healed.stderr
