"""The MCP server, through a real MCP client session: stdio, and streamable HTTP on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from langchain_vaultsearch import MissingExtraError
from langchain_vaultsearch.mcp_server import create_mcp_server
from langchain_vaultsearch.service import VaultSearch

OAUTH = "Projects/Alpha/OAuth Setup.md"
# The installed command, as an MCP client configuration names it.
SERVER = [str(Path(sys.executable).with_name("vaultsearch")), "mcp"]


async def _stdio_session(
    vault: Path, calls: list[tuple[str, dict[str, Any]]], exclude: str | None = None
) -> list[Any]:
    excluding = ["--exclude", exclude] if exclude else []
    params = StdioServerParameters(
        command=SERVER[0],
        args=[*SERVER[1:], "--vault", str(vault), "--mode", "lexical", *excluding],
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        results: list[Any] = [sorted(tool.name for tool in tools.tools)]
        for name, arguments in calls:
            results.append(await session.call_tool(name, arguments))
        return results


def test_a_stdio_session_lists_and_calls_every_tool(vault_dir: Path) -> None:
    results = asyncio.run(
        _stdio_session(
            vault_dir,
            [
                ("search", {"query": "OAuth login in Next.js", "top_n": 3}),
                ("local_search", {"question": "How do I set up OAuth in [[Deployment]]?"}),
                ("read_note", {"path": OAUTH}),
                ("status", {}),
                ("list_tags", {}),
                ("search", {"query": "deploy", "tags": ["project"]}),
                ("search", {"query": "OAuth", "time_range": "2020-01"}),
            ],
        )
    )
    names, found, context, note, status, tags, tagged, dated = results
    assert names == ["list_tags", "local_search", "read_note", "search", "status"]
    assert not found.isError
    results = found.structuredContent["result"]
    assert len(results) == 3
    assert results[0]["path"] == OAUTH
    assert results[0]["source"] == "lexical"
    assert 0 < results[0]["score"] <= 1
    assert "<localSearch" in context.content[0].text
    assert "Deployment" in context.content[0].text
    assert "OAuth" in note.content[0].text
    assert status.structuredContent["notes"] > 5
    assert status.structuredContent["semantic"] is None
    assert tags.structuredContent["#project/alpha"] >= 1
    assert tagged.structuredContent["result"]
    assert all(
        any(tag.startswith("#project") for tag in doc["tags"])
        for doc in tagged.structuredContent["result"]
    )
    assert dated.structuredContent["result"] == []  # no note of the vault dates from 2020


def test_bad_arguments_come_back_as_tool_errors_with_their_reason(vault_dir: Path) -> None:
    (vault_dir / "Private").mkdir()
    (vault_dir / "Private" / "diary.md").write_text("# Diary\n\nOAuth secrets.\n")
    _, missing, bad_k, bad_mode, unknown, excluded, blank = asyncio.run(
        _stdio_session(
            vault_dir,
            [
                ("read_note", {"path": "Nowhere.md"}),
                ("search", {"query": "oauth", "top_n": 500}),
                ("search", {"query": "oauth", "mode": "fuzzy"}),
                # `k` is the Python name; the tool's is top_n: a silent default would mislead.
                ("local_search", {"question": "oauth", "k": 3}),
                ("read_note", {"path": "Private/diary.md"}),
                # An empty query matched nothing, as if the vault held nothing.
                ("search", {"query": "  ", "tags": ["project"]}),
            ],
            exclude="Private/",
        )
    )
    assert unknown.isError
    assert "k" in unknown.content[0].text
    assert "Extra inputs are not permitted" in unknown.content[0].text
    # A note the server's exclusions leave out of search cannot be read either.
    assert excluded.isError
    assert "no note 'Private/diary.md'" in excluded.content[0].text
    assert missing.isError
    assert "no note 'Nowhere.md'" in missing.content[0].text
    assert bad_k.isError
    assert "k must be between 1 and 100" in bad_k.content[0].text
    assert bad_mode.isError
    assert "mode must be one of" in bad_mode.content[0].text
    assert blank.isError
    assert "the query is empty" in blank.content[0].text


@contextlib.contextmanager
def _http_server(vault: Path, host: str = "127.0.0.1", token: str | None = None) -> Iterator[str]:
    """`vaultsearch mcp --http` on a free port of `host`, until the block ends; its URL."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        port = int(probe.getsockname()[1])
    env = {key: value for key, value in os.environ.items() if key != "VAULTSEARCH_MCP_TOKEN"}
    if token is not None:
        env["VAULTSEARCH_MCP_TOKEN"] = token
    process = subprocess.Popen(  # noqa: S603 - the package's own command
        [*SERVER, "--vault", str(vault), "--http", str(port), "--host", host],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection((host, port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    stderr = process.stderr.read().decode() if process.stderr else ""
                    pytest.fail(f"the MCP HTTP server did not start: {stderr[-2000:]}")
                time.sleep(0.1)
        yield f"http://{host}:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_a_streamable_http_session_on_loopback(vault_dir: Path) -> None:
    async def search(url: str) -> Any:
        async with (
            streamable_http_client(url) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return await session.call_tool("search", {"query": "OAuth Next.js", "top_n": 2})

    with _http_server(vault_dir) as url:
        result = asyncio.run(search(url))
    assert not result.isError
    assert result.structuredContent["result"][0]["path"] == OAUTH


def test_without_the_extra_the_error_names_the_pip_command(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = VaultSearch(vault_dir, watch=False)
    monkeypatch.setitem(sys.modules, "mcp", None)  # import fails
    with pytest.raises(MissingExtraError, match=r'pip install "langchain-vaultsearch\[mcp\]"'):
        create_mcp_server(service)
    with pytest.raises(ValueError, match="mode must be one of"):
        create_mcp_server(service, mode="fuzzy")  # type: ignore[arg-type]


def test_off_loopback_the_server_refuses_to_start_without_a_token(vault_dir: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "VAULTSEARCH_MCP_TOKEN"}
    for host in ("0.0.0.0", "127.0.0.2"):  # noqa: S104 - the refusal is what is tested
        done = subprocess.run(  # noqa: S603 - the package's own command
            [*SERVER, "--vault", str(vault_dir), "--http", "8765", "--host", host],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 2, host
        assert "VAULTSEARCH_MCP_TOKEN" in done.stderr
        assert "Traceback" not in done.stderr
    with_token = subprocess.run(  # noqa: S603 - the package's own command
        [*SERVER, "--vault", str(vault_dir), "--http", "8765", "--host", "0.0.0.0"],  # noqa: S104
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "VAULTSEARCH_MCP_TOKEN": "secret"},
        check=False,
    )
    assert with_token.returncode == 2
    assert "--allow-host" in with_token.stderr


def test_off_loopback_a_request_needs_the_token_and_a_known_host(vault_dir: Path) -> None:
    token = "s3cret-token"  # noqa: S105 - a test token
    host = "127.0.0.2"  # off the loopback names the SDK trusts, reachable only here
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    async def session(url: str) -> Any:
        client = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with (
            client,
            streamable_http_client(url, http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as opened,
        ):
            await opened.initialize()
            return await opened.call_tool("read_note", {"path": OAUTH})

    with _http_server(vault_dir, host, token) as url:
        anonymous = httpx.post(url, json=body, headers=headers, timeout=10)
        assert anonymous.status_code == 401
        wrong = httpx.post(
            url, json=body, headers={**headers, "Authorization": "Bearer guess"}, timeout=10
        )
        assert wrong.status_code == 401
        foreign = httpx.post(
            url,
            json=body,
            headers={**headers, "Authorization": f"Bearer {token}", "Host": "evil.example"},
            timeout=10,
        )
        assert foreign.status_code == 421
        origin = httpx.post(
            url,
            json=body,
            headers={
                **headers,
                "Authorization": f"Bearer {token}",
                "Origin": "http://evil.example",
            },
            timeout=10,
        )
        assert origin.status_code == 403
        note = asyncio.run(session(url))
    assert not note.isError
    assert "OAuth" in note.content[0].text


def test_a_tool_call_past_its_deadline_is_a_tool_error_not_a_hang(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.shared.memory import create_connected_server_and_client_session

    from langchain_vaultsearch import mcp_server

    service = VaultSearch(vault_dir, watch=False)

    def slow(*_args: Any, **_kwargs: Any) -> dict[str, int]:
        time.sleep(1.0)
        return {}

    monkeypatch.setattr(service, "tags", slow)
    monkeypatch.setattr(mcp_server, "TOOL_DEADLINE_S", 0.2)

    async def call() -> tuple[Any, float]:
        server = create_mcp_server(service)
        async with create_connected_server_and_client_session(server) as session:
            started = time.monotonic()
            result = await session.call_tool("list_tags", {})
            return result, time.monotonic() - started

    result, waited = asyncio.run(call())
    assert waited < 0.9  # the client hears back at the deadline, not when the call ends
    assert result.isError
    assert "did not answer within" in result.content[0].text


def test_naming_an_excluded_note_does_not_reach_it_through_any_tool(vault_dir: Path) -> None:
    (vault_dir / "Private").mkdir()
    (vault_dir / "Private" / "diary.md").write_text("# Diary\n\nThe secret zebra plan.\n")
    service = VaultSearch(vault_dir, exclusions=["Private/"], watch=False)
    for question in ("what is in [[diary]]?", "what is in [[Private/diary]]?"):
        result = service.local_search(question)
        assert all("zebra" not in doc.page_content for doc in result.documents), question
    assert service.note("Private/diary.md") is None


class _Outcomes:
    """What each tool call's worker thread ended with, as `run_cancellable` saw it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from langchain_vaultsearch import mcp_server

        self.ended: list[str] = []
        self.done = threading.Event()
        real = mcp_server.run_cancellable

        def recording(*args: Any, **kwargs: Any) -> Any:
            try:
                result = real(*args, **kwargs)
            except Exception as exc:
                self.ended.append(type(exc).__name__)
                raise
            else:
                self.ended.append("finished")
                return result
            finally:
                self.done.set()

        monkeypatch.setattr(mcp_server, "run_cancellable", recording)


def _slow_filter(monkeypatch: pytest.MonkeyPatch, seconds: float) -> list[str]:
    """Make the filter stage take `seconds`; returns the queries the main search then ran."""
    from langchain_vaultsearch.filters import FilterRetriever
    from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever

    real_run = FilterRetriever.run
    searched: list[str] = []

    def slow_run(self: FilterRetriever, *args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return real_run(self, *args, **kwargs)

    real_get = TieredLexicalRetriever._get_relevant_documents

    def spying_get(self: TieredLexicalRetriever, query: str, **kwargs: Any) -> Any:
        searched.append(query)
        return real_get(self, query, **kwargs)

    monkeypatch.setattr(FilterRetriever, "run", slow_run)
    monkeypatch.setattr(TieredLexicalRetriever, "_get_relevant_documents", spying_get)
    return searched


def test_a_search_past_its_deadline_stops_at_its_next_stage(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.shared.memory import create_connected_server_and_client_session

    from langchain_vaultsearch import mcp_server

    service = VaultSearch(vault_dir, watch=False)
    service.search("warm the lexical index up")  # so the slow stage is the only slow one
    outcomes = _Outcomes(monkeypatch)
    searched = _slow_filter(monkeypatch, 0.8)
    monkeypatch.setattr(mcp_server, "TOOL_DEADLINE_S", 0.2)

    async def call() -> Any:
        server = create_mcp_server(service, mode="lexical")
        async with create_connected_server_and_client_session(server) as session:
            return await session.call_tool("local_search", {"question": "oauth tokens"})

    result = asyncio.run(call())
    assert result.isError
    assert "did not answer within" in result.content[0].text
    assert outcomes.done.wait(5)
    assert outcomes.ended == ["SearchCancelled"]
    assert searched == []  # the search after the slow filter never ran


def test_a_search_whose_client_went_stops_at_its_next_stage(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.shared.memory import create_connected_server_and_client_session

    service = VaultSearch(vault_dir, watch=False)
    service.search("warm the lexical index up")
    outcomes = _Outcomes(monkeypatch)
    searched = _slow_filter(monkeypatch, 0.8)

    async def call_then_leave() -> None:
        server = create_mcp_server(service, mode="lexical")
        async with create_connected_server_and_client_session(server) as session:
            calling = asyncio.ensure_future(
                session.call_tool("local_search", {"question": "oauth tokens"})
            )
            await asyncio.sleep(0.3)
            calling.cancel()  # the client gives up and closes its session
            with contextlib.suppress(asyncio.CancelledError):
                await calling

    asyncio.run(call_then_leave())
    assert outcomes.done.wait(5)
    assert outcomes.ended == ["SearchCancelled"]
    assert searched == []


def test_lookups_answer_while_every_search_thread_is_busy(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.shared.memory import create_connected_server_and_client_session

    from langchain_vaultsearch import mcp_server

    service = VaultSearch(vault_dir, watch=False)
    service.status()
    _slow_filter(monkeypatch, 3.0)

    async def status_among_searches() -> tuple[Any, float]:
        server = create_mcp_server(service, mode="lexical")
        async with create_connected_server_and_client_session(server) as session:
            searches = [
                asyncio.ensure_future(session.call_tool("local_search", {"question": f"q {n}"}))
                for n in range(mcp_server.SEARCH_THREADS + 4)
            ]
            await asyncio.sleep(0.3)
            started = time.monotonic()
            status = await session.call_tool("status", {})
            waited = time.monotonic() - started
            await asyncio.gather(*searches)
            return status, waited

    status, waited = asyncio.run(status_among_searches())
    assert not status.isError
    assert waited < 2.0  # not behind the searches, each of which holds a thread for 3 s
