"""The vault's search as MCP tools: a thin adapter over `VaultSearch`, as the CLI is.

Five read-only tools: `search` (ranked chunks, optionally of tagged notes or a period),
`local_search` (the XML context a chat model answers from), `read_note` (a note, whole),
`list_tags` and `status`. Built on the official `mcp` SDK's `FastMCP` (1.x, the line
`langchain-mcp-adapters` speaks). The work runs in a worker thread, so the server keeps
answering (pings, cancellations) while a large vault is searched. Served on stdio by
`vaultsearch mcp`, or over streamable HTTP with `--http PORT` (loopback unless `--host`).

Off loopback, anyone who reaches the port could read every note, so the server refuses to
start there without a bearer token (`VAULTSEARCH_MCP_TOKEN`), and checks each request's
Host and Origin headers against the names it is reached by (DNS rebinding): a web page a
user visits cannot make the browser talk to it. On the loopback names the SDK's own
Host/Origin check applies, and a token, when given, is required there too.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

from langchain_core.documents import Document

from langchain_vaultsearch.cancellation import run_cancellable
from langchain_vaultsearch.limits import DEFAULT_K, DEFAULT_SHOWN_K
from langchain_vaultsearch.query_plan import SEARCH_MODES, SearchMode
from langchain_vaultsearch.semantic.embeddings import require_extra
from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
from langchain_vaultsearch.service import VaultSearch

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.fastmcp import FastMCP
    from mcp.server.fastmcp.tools import Tool
    from mcp.server.fastmcp.utilities.func_metadata import ArgModelBase
    from mcp.server.transport_security import TransportSecuritySettings

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])

SNIPPET_CHARS = 1200
"""Text of each search result sent to the client (the whole note is one `read_note` away)."""
NOTE_CHARS = 100_000
"""The most of one note `read_note` returns (a model's context is finite)."""
TOOL_DEADLINE_S = 60.0
"""The longest a tool call may take (a large vault's first scan included) before it errs."""
SEARCH_THREADS = 4
"""Searches that run at once; lookups (`status`, `read_note`, `list_tags`) have their own
two threads, so they answer even while every search thread is busy."""
TOKEN_VARIABLE = "VAULTSEARCH_MCP_TOKEN"  # noqa: S105 - the variable's name, not a secret
"""Where `vaultsearch mcp` reads the bearer token HTTP clients must send."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The addresses only this machine reaches, where the SDK checks Host and Origin itself."""
_ALL_INTERFACES = ("0.0.0.0", "", "::")  # noqa: S104 - named to be refused without a host list

INSTRUCTIONS = """Search the user's markdown notes (an Obsidian-style vault).
- search: ranked chunks of notes; [[Note]] names and #tags work in queries; tags and
  time_range ("last week", "2024-03") keep only chunks of matching notes.
- local_search: the notes a question names plus the best chunks, as XML with sources.
- read_note: a whole note by the vault-relative path a result gave.
- list_tags: the vault's tags and how many notes carry each.
- status: what is indexed."""


def create_mcp_server(
    service: VaultSearch,
    *,
    mode: SearchMode = "auto",
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
) -> FastMCP:
    """An MCP server whose tools search `service`'s vault.

    Args:
        service: the opened vault (its indexes, filter and retrievers).
        mode: the search mode of `search` and `local_search` when a call names none.
        host: the address streamable HTTP listens on.
        port: its port.
        token: the bearer token HTTP clients must send (`Authorization: Bearer ...`);
            required off loopback.
        allowed_hosts: off loopback, the names clients reach the server by (its Host
            header); defaults to `host` itself, and must be given for `0.0.0.0`.

    Raises:
        MissingExtraError: the `mcp` extra is not installed.
        ValueError: an unknown mode, or an address off loopback without a token or
            without the names to check Host against.
    """
    if mode not in SEARCH_MODES:
        msg = f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}"
        raise ValueError(msg)
    require_extra("mcp", "mcp")
    from mcp.server.fastmcp import FastMCP
    from mcp.server.fastmcp.tools import Tool
    from mcp.types import ToolAnnotations

    security = _transport_security(host, token, allowed_hosts)
    auth: dict[str, Any] = {}
    if token:
        auth = {"auth": _auth_settings(host, port), "token_verifier": _StaticToken(token)}
    server_mode = mode
    functions: list[Callable[..., Any]] = []
    searching = partial(
        _call, ThreadPoolExecutor(SEARCH_THREADS, thread_name_prefix="vaultsearch-search")
    )
    looking_up = partial(_call, ThreadPoolExecutor(2, thread_name_prefix="vaultsearch-lookup"))

    def tool(function: _F) -> _F:
        functions.append(function)
        return function

    @tool
    async def search(
        query: str,
        top_n: int = DEFAULT_SHOWN_K,
        mode: str | None = None,
        tags: list[str] | None = None,
        time_range: str | None = None,
    ) -> list[dict[str, Any]]:
        """Rank the vault's note chunks for a query, best first.

        Args:
            query: words, a question, [[Note]] names or #tags.
            top_n: how many chunks (1 to 100).
            mode: auto, lexical, semantic, merged or hybrid (default: the server's).
            tags: only notes with one of these tags or a descendant ("project" keeps
                "#project/alpha").
            time_range: only notes with a date in this period ("last week", "2024-03").
        """
        documents = await searching(
            service.search,
            query,
            mode=_mode(mode, server_mode),
            k=top_n,
            tags=tags,
            time_range=time_range,
        )
        return [_result(doc) for doc in documents]

    @tool
    async def local_search(
        question: str,
        time_range: str | None = None,
        top_n: int = DEFAULT_K,
        mode: str | None = None,
    ) -> str:
        """The context a chat model would answer a question from, as XML with sources.

        Args:
            question: the question; the notes of the [[notes]], #tags and periods it
                names come first, then the best chunks of the others.
            time_range: answer only from the notes of this period ("last week",
                "2024-03"); leave it out unless the question asks about a period.
            top_n: documents the search adds at most (1 to 100); the notes the question
                names come first and are not cut by it (a tag's or period's: 100 at most).
            mode: auto, lexical, semantic, merged or hybrid (default: the server's).
        """
        chosen = _mode(mode, server_mode)
        built = await searching(
            service.context, question, mode=chosen, time_range=time_range, k=top_n
        )
        return built.text

    @tool
    async def read_note(path: str) -> str:
        """A whole note (up to 100,000 characters), by the path a search result gave.

        Args:
            path: vault-relative, e.g. "Engineering/PostgreSQL Indexing.md".
        """
        note = await looking_up(service.note, path)
        if note is None:
            msg = f"no note {path!r} in the vault (paths are vault-relative, with .md)"
            raise _tool_error(msg)
        text = note.page_content
        if len(text) > NOTE_CHARS:
            return text[:NOTE_CHARS] + f"\n\n[… cut at {NOTE_CHARS:,} of {len(text):,} characters]"
        return text

    @tool
    async def list_tags() -> dict[str, int]:
        """Every tag in the vault with how many notes carry it, most used first."""
        return await looking_up(service.tags)

    @tool
    async def status() -> dict[str, Any]:
        """What is indexed: notes, the lexical index, the vector index and its health."""
        return await looking_up(service.status)

    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    return FastMCP(
        name="vaultsearch",
        instructions=INSTRUCTIONS,
        host=host,
        port=port,
        transport_security=security,
        tools=[_strict(Tool.from_function(fn, annotations=read_only)) for fn in functions],
        **auth,
    )


def _strict(tool: Tool) -> Tool:
    """A tool whose unknown arguments are an error, not dropped.

    The SDK ignores arguments a tool does not take, so a client's `k=3` would search for
    the default 10 and say nothing; forbidding extras makes it a tool error naming the
    argument, and the tool's schema says `additionalProperties: false`.
    """
    loose = tool.fn_metadata.arg_model
    config = {**loose.model_config, "extra": "forbid"}
    strict = cast("type[ArgModelBase]", type(loose.__name__, (loose,), {"model_config": config}))
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def _transport_security(
    host: str, token: str | None, allowed_hosts: Sequence[str]
) -> TransportSecuritySettings | None:
    """Off loopback: a token is required, and Host and Origin are checked against a list.

    Raises:
        ValueError: no token, or `0.0.0.0` without the names clients reach it by.
    """
    if host in LOOPBACK_HOSTS and not allowed_hosts:
        return None  # the SDK checks Host and Origin against the loopback names itself
    if host not in LOOPBACK_HOSTS and not token:
        msg = (
            f"serving MCP on {host or 'every interface'!r} (not 127.0.0.1, localhost or ::1) lets"
            f" anyone who reaches the port read every note: set {TOKEN_VARIABLE} to a secret"
            " that clients send as 'Authorization: Bearer <token>', or serve on 127.0.0.1"
        )
        raise ValueError(msg)
    names = list(allowed_hosts) or ([] if host in _ALL_INTERFACES else [host])
    if not names:
        msg = (
            f"serving MCP on {host or 'every interface'!r} needs the names clients reach it"
            " by, to check each request's Host header against (--allow-host NAME, repeat"
            " for more)"
        )
        raise ValueError(msg)
    from mcp.server.transport_security import TransportSecuritySettings

    shown = [f"[{name}]" if ":" in name and not name.startswith("[") else name for name in names]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for name in shown for form in (name, f"{name}:*")],
        allowed_origins=[
            form
            for name in shown
            for scheme in ("http", "https")
            for form in (f"{scheme}://{name}", f"{scheme}://{name}:*")
        ],
    )


def _auth_settings(host: str, port: int) -> AuthSettings:
    """The SDK's resource-server settings for a static bearer token (no OAuth server)."""
    from mcp.server.auth.settings import AuthSettings

    name = "127.0.0.1" if host in _ALL_INTERFACES else host
    where = f"http://{f'[{name}]' if ':' in name else name}:{port}"
    return AuthSettings(
        issuer_url=where,  # type: ignore[arg-type]
        resource_server_url=f"{where}/mcp",  # type: ignore[arg-type]
        validate_token_resource=False,
    )


class _StaticToken:
    """Accepts exactly one bearer token, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token=token, client_id="vaultsearch", scopes=[])
        return None


async def _call(
    pool: Executor,
    function: Callable[..., _T],
    *args: Any,  # noqa: ANN401
    **kwargs: Any,  # noqa: ANN401
) -> _T:
    """Run a blocking service call in a worker thread, within `TOOL_DEADLINE_S`.

    A bad argument or a semantic side that cannot run becomes a tool error: a
    `ToolError`'s text is what the client reads, and any other exception would reach it
    as a bare failure (or a traceback), which leaves the model guessing. A call past its
    deadline answers the client with an error instead of holding it, and a call whose
    client went (a cancellation, a closed session) is not waited for; either way the
    search is flagged, so its thread stops at the pipeline's next stage instead of
    holding a worker (a thread cannot be killed).
    """
    flag = threading.Event()
    work = partial(run_cancellable, flag, function, *args, **kwargs)
    try:
        running = asyncio.get_running_loop().run_in_executor(pool, work)
        return await asyncio.wait_for(running, timeout=TOOL_DEADLINE_S)
    except (ValueError, SemanticIndexUnavailable) as exc:
        raise _tool_error(str(exc)) from exc
    except asyncio.TimeoutError as exc:  # not yet the builtin TimeoutError on Python 3.10
        flag.set()
        msg = f"the vault did not answer within {TOOL_DEADLINE_S:.0f} s; try a narrower query"
        raise _tool_error(msg) from exc
    except asyncio.CancelledError:
        flag.set()
        raise


def _tool_error(message: str) -> Exception:
    from mcp.server.fastmcp.exceptions import ToolError

    return ToolError(message)


def _mode(value: str | None, default: SearchMode) -> SearchMode:
    """The mode a call names (checked by `VaultSearch`, whose error the client reads)."""
    return default if value is None else cast(SearchMode, value)


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
