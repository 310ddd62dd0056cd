"""A stuck semantic side costs its results, never the answer, a worker or the process's exit.

A model or Chroma server that never answers is played by a search that blocks on an
event; each test releases it, so no thread outlives the test.
"""

from __future__ import annotations

import contextvars
import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from langchain_vaultsearch import service as service_module
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.semantic import deadline
from langchain_vaultsearch.semantic.deadline import MAX_STRAGGLERS, acall_within, call_within
from langchain_vaultsearch.semantic.errors import SemanticIndexTimeout, SemanticIndexUnavailable
from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.service import VaultSearch
from tests.test_retrievers_semantic import build_index

TIMEOUT = 0.3
"""The deadline the tests give; a stuck call blocks for up to `HELD` unless released."""
HELD = 30.0


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event stuck calls wait on; set at the end, and the stragglers waited out."""
    event = threading.Event()
    yield event
    event.set()
    give_up = time.monotonic() + 10
    while deadline._stragglers and time.monotonic() < give_up:
        time.sleep(0.01)
    assert deadline._stragglers == 0


def stuck(release: threading.Event) -> Callable[..., list[tuple[str, float]]]:
    def search(*_args: object) -> list[tuple[str, float]]:
        release.wait(HELD)
        return []

    return search


@pytest.fixture
def index(vault_dir: Path) -> VaultIndex:
    built = build_index(vault_dir)
    built.refresh()
    return built


async def test_a_stuck_semantic_side_leaves_the_lexical_answer_after_the_deadline(
    index: VaultIndex,
    release: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    merged = MergedSemanticRetriever(semantic_index=index, k=5)
    expected = [doc.metadata["path"] for doc in merged.invoke("oauth deployment")]
    monkeypatch.setattr(index, "search", stuck(release))
    factory = RetrieverFactory(semantic_index=index, k=5, semantic_timeout=TIMEOUT)
    stuck_merged = MergedSemanticRetriever(semantic_index=index, k=5, semantic_timeout=TIMEOUT)
    with caplog.at_level(logging.WARNING):
        start = time.monotonic()
        answers = [
            stuck_merged.invoke("oauth deployment"),
            await stuck_merged.ainvoke("oauth deployment"),
            factory.invoke("oauth deployment"),
            await factory.ainvoke("oauth deployment"),
        ]
        took = time.monotonic() - start
    assert took < 4 * TIMEOUT + 3  # each waited out its deadline, not the stuck call
    for docs in answers:
        assert docs
        assert all(doc.metadata["source"] == "lexical" for doc in docs)
        assert expected[0] in [doc.metadata["path"] for doc in docs]
    assert caplog.text.count(f"did not answer within {TIMEOUT:g} s") == 4
    assert "Traceback" not in caplog.text


def test_without_a_deadline_the_side_is_waited_for(index: VaultIndex) -> None:
    merged = MergedSemanticRetriever(semantic_index=index, k=5, semantic_timeout=None)
    docs = merged.invoke("songs for piano practice")
    assert any(doc.metadata["source"] == "semantic" for doc in docs)


@pytest.mark.parametrize("bad", [0, -1.0])
def test_a_deadline_must_be_positive(index: VaultIndex, bad: float) -> None:
    with pytest.raises(ValueError, match="semantic_timeout"):
        MergedSemanticRetriever(semantic_index=index, semantic_timeout=bad)
    with pytest.raises(ValueError, match="semantic_timeout"):
        RetrieverFactory(semantic_index=index, semantic_timeout=bad)


async def test_calls_stuck_past_their_deadline_refuse_new_ones_at_once(
    release: threading.Event,
) -> None:
    def held() -> str:
        release.wait(HELD)
        return "late"

    for _ in range(MAX_STRAGGLERS - 1):
        with pytest.raises(SemanticIndexTimeout, match=f"within {TIMEOUT:g} s"):
            call_within(TIMEOUT, held)
    with pytest.raises(SemanticIndexTimeout, match=f"within {TIMEOUT:g} s"):
        await acall_within(TIMEOUT, held)
    start = time.monotonic()
    with pytest.raises(SemanticIndexTimeout, match=f"still stuck on {MAX_STRAGGLERS} earlier"):
        call_within(HELD, lambda: "never started")
    with pytest.raises(SemanticIndexUnavailable, match="still stuck"):
        await acall_within(HELD, lambda: "never started")
    assert time.monotonic() - start < 1.0
    release.set()
    give_up = time.monotonic() + 10
    while deadline._stragglers and time.monotonic() < give_up:
        time.sleep(0.01)
    assert call_within(TIMEOUT, lambda: "answered") == "answered"


def test_the_call_runs_in_the_callers_context_and_its_errors_reach_the_caller() -> None:
    asked: contextvars.ContextVar[str] = contextvars.ContextVar("asked", default="unset")
    asked.set("the caller's")
    assert call_within(TIMEOUT, asked.get) == "the caller's"

    def fails() -> None:
        msg = "model exploded"
        raise ConnectionError(msg)

    with pytest.raises(ConnectionError, match="model exploded"):
        call_within(TIMEOUT, fails)


def test_a_stuck_call_does_not_hold_the_process_at_exit() -> None:
    script = (
        "import time\n"
        "from langchain_vaultsearch import cancellation\n"
        "from langchain_vaultsearch.semantic.deadline import call_within\n"
        "cancellation.EXIT_WAIT_S = 0.5\n"
        "try:\n"
        "    call_within(0.2, lambda: time.sleep(120))\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    start = time.monotonic()
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "SemanticIndexTimeout"
    assert "Exiting while 1 call(s) past their deadline still run" in done.stderr
    assert time.monotonic() - start < 30


def test_a_call_past_its_deadline_is_let_finish_before_the_process_exits(tmp_path: Path) -> None:
    """Killed at exit inside a model's native code, such a call aborted the process (134)."""
    finished = tmp_path / "finished"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from langchain_vaultsearch.semantic.deadline import call_within\n"
        "def work():\n"
        "    time.sleep(1.0)\n"
        "    Path(sys.argv[1]).write_text('yes')\n"
        "try:\n"
        "    call_within(0.05, work)\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", script, str(finished)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "SemanticIndexTimeout"
    assert finished.read_text() == "yes"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that accepts connections and never answers: a stuck Chroma server."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:  # the stuck open fails now, and its thread ends
        connection.close()
    server.close()


def test_a_chroma_server_that_never_answers_leaves_lexical_search(
    vault_dir: Path,
    silent_server: int,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(service_module, "SEMANTIC_TIMEOUT_S", TIMEOUT)
    opens: list[object] = []

    def counted(*args: object, **kwargs: object) -> VaultIndex:
        opens.append(args)
        return VaultIndex(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(service_module, "VaultIndex", counted)
    service = VaultSearch(
        vault_dir,
        embeddings="fake:16",
        chroma_host="127.0.0.1",
        chroma_port=silent_server,
        watch=False,
    )
    try:
        start = time.monotonic()
        found = service.search("oauth deployment")
        assert time.monotonic() - start < TIMEOUT + 5
        assert found
        assert all(doc.metadata["source"] == "lexical" for doc in found)
        problem = service.status()["semantic"]["error"]
        assert f"did not open within {TIMEOUT:g} s" in problem
        # The open still running is neither waited for again nor started twice.
        start = time.monotonic()
        assert service.search("oauth", mode="lexical")
        assert service.search("oauth deployment")
        with pytest.raises(ValueError, match="did not open within"):
            service.search("oauth", mode="semantic")
        assert time.monotonic() - start < 2.0
        assert len(opens) == 1
        assert caplog.text.count("did not open within") == 1  # said once, not per search
    finally:
        service.close()
