"""The MCP server, through a real MCP client session: stdio, and streamable HTTP on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


async def _stdio_session(vault: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(
        command=SERVER[0], args=[*SERVER[1:], "--vault", str(vault), "--mode", "lexical"]
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
    _, missing, bad_k, bad_mode = asyncio.run(
        _stdio_session(
            vault_dir,
            [
                ("read_note", {"path": "Nowhere.md"}),
                ("search", {"query": "oauth", "top_n": 500}),
                ("search", {"query": "oauth", "mode": "fuzzy"}),
            ],
        )
    )
    assert missing.isError
    assert "no note 'Nowhere.md'" in missing.content[0].text
    assert bad_k.isError
    assert "k must be between 1 and 100" in bad_k.content[0].text
    assert bad_mode.isError
    assert "mode must be one of" in bad_mode.content[0].text


@contextlib.contextmanager
def _http_server(vault: Path) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    process = subprocess.Popen(  # noqa: S603 - the package's own command
        [*SERVER, "--vault", str(vault), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    stderr = process.stderr.read().decode() if process.stderr else ""
                    pytest.fail(f"the MCP HTTP server did not start: {stderr[-2000:]}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
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
