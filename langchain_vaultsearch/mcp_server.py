"""The vault's search as MCP tools: a thin adapter over `VaultSearch`, as the CLI is.

Four read-only tools: `search` (ranked chunks), `context` (the XML a chat model answers
from, with filters and time ranges), `read_note` (a note, whole) and `status`. The work
runs in a worker thread, so the server keeps answering (pings, cancellations) while a
large vault is searched. Served on stdio by `vaultsearch mcp`, or over streamable HTTP
with `--http PORT` (loopback only, unless `--host` says otherwise).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.documents import Document

from langchain_vaultsearch.semantic.embeddings import require_extra
from langchain_vaultsearch.service import SEARCH_MODES, SearchMode, VaultSearch

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

_T = TypeVar("_T")

SNIPPET_CHARS = 1200
"""Text of each search result sent to the client (the full note is one `read_note` away)."""

INSTRUCTIONS = """Search the user's markdown notes (an Obsidian-style vault).
- search: ranked chunks of notes for a query; [[Note]] names and #tags work in queries.
- context: the notes a question names plus the best chunks, as XML with numbered sources.
- read_note: a whole note by the vault-relative path a result gave.
- status: what is indexed."""


def create_mcp_server(service: VaultSearch, *, mode: SearchMode = "auto") -> MCPServer:
    """An MCP server whose tools search `service`'s vault.

    Args:
        service: the opened vault (its indexes, filter and retrievers).
        mode: the search mode of `search` and `context` when a call names none.

    Raises:
        MissingExtraError: the `mcp` extra is not installed.
        ValueError: an unknown mode.
    """
    if mode not in SEARCH_MODES:
        msg = f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}"
        raise ValueError(msg)
    require_extra("mcp", "mcp")
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    from langchain_vaultsearch import __version__

    server: MCPServer = MCPServer(
        name="vaultsearch", version=__version__, instructions=INSTRUCTIONS
    )
    server_mode = mode
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    async def search(query: str, k: int = 10, mode: str | None = None) -> list[dict[str, Any]]:
        """Rank the vault's note chunks for a query, best first.

        Args:
            query: words, a question, [[Note]] names or #tags.
            k: how many chunks (1 to 100).
            mode: auto, lexical, semantic or merged (default: the server's).
        """
        documents = await _call(service.search, query, mode=_mode(mode, server_mode), k=k)
        return [_result(doc) for doc in documents]

    @server.tool(annotations=read_only)
    async def context(
        question: str, time_range: str | None = None, k: int = 30, mode: str | None = None
    ) -> str:
        """The context a chat model would answer a question from, as XML with sources.

        Args:
            question: the question; the [[notes]], #tags and periods it names filter.
            time_range: a period ("last week", "2024-03"), else the one the question names.
            k: search chunks at most (1 to 100).
            mode: auto, lexical, semantic or merged (default: the server's).
        """
        chosen = _mode(mode, server_mode)
        built = await _call(service.context, question, mode=chosen, time_range=time_range, k=k)
        return built.text

    @server.tool(annotations=read_only)
    async def read_note(path: str) -> str:
        """A whole note, by the vault-relative path a search result gave.

        Args:
            path: e.g. "Engineering/PostgreSQL Indexing.md".
        """
        note = await _call(service.note, path)
        if note is None:
            msg = f"no note {path!r} in the vault (paths are relative, with .md)"
            raise _tool_error(msg)
        return note.page_content

    @server.tool(annotations=read_only)
    async def status() -> dict[str, Any]:
        """What is indexed: notes, the lexical index, the vector index and its health."""
        return await _call(service.status)

    return server


async def _call(function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:  # noqa: ANN401
    """Run a blocking service call in a worker thread; a bad argument becomes a tool error.

    The SDK shows the client only the text of a `ToolError`; any other exception is
    reported as a crash with no reason, which leaves the model guessing.
    """
    try:
        return await asyncio.to_thread(function, *args, **kwargs)
    except ValueError as exc:
        raise _tool_error(str(exc)) from exc


def _tool_error(message: str) -> Exception:
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(message)


def _mode(value: str | None, default: SearchMode) -> SearchMode:
    if value is None:
        return default
    for mode in SEARCH_MODES:
        if value == mode:
            return mode
    msg = f"mode must be one of {', '.join(SEARCH_MODES)}, got {value!r}"
    raise _tool_error(msg)


def _result(doc: Document) -> dict[str, Any]:
    """One search result as the client sees it: where, how good, and the start of the text."""
    meta = doc.metadata
    text = doc.page_content
    return {
        "id": doc.id,
        "path": meta.get("path"),
        "title": meta.get("title"),
        "heading": meta.get("heading", ""),
        "score": meta.get("score"),
        "source": meta.get("source"),
        "tags": meta.get("tags", []),
        "text": text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + "…",
    }
