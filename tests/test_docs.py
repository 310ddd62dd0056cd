"""The documentation: a short README, links that resolve, and an MCP page true to the server."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import Tool

from langchain_vaultsearch.mcp_server import create_mcp_server
from langchain_vaultsearch.service import VaultSearch
from tests.conftest import SAMPLE_VAULT

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
MCP_PAGE = DOCS / "mcp.md"
README_MAX_LINES = 400
"""A newcomer's page: the rest lives in docs/ (CI's hook checks the same limit)."""

_TITLE = r"""(?:\s+(?:"[^"]*"|'[^']*'))?"""
_INLINE_LINK = re.compile(rf"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?{_TITLE}\s*\)")
_REFERENCE_LINK = re.compile(rf"^\s{{0,3}}\[[^\]]+\]:\s*<?(\S+?)>?{_TITLE}\s*$", re.M)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CELL_SEPARATOR = re.compile(r"(?<!\\)\|")


def _markdown_pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _prose(markdown: str) -> str:
    """The text outside fenced code blocks and code spans, where links are links."""
    kept: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is None:
            fence = next((m for m in ("```", "~~~") if stripped.startswith(m)), None)
            if fence is None:
                kept.append(line)
        elif stripped.startswith(fence) and not stripped.lstrip(fence[0]):
            fence = None
    return _CODE_SPAN.sub("", "\n".join(kept))


def _relative_links(markdown: str) -> list[str]:
    """Link targets that name a file of the repository (no scheme, not a bare `#anchor`)."""
    prose = _prose(markdown)
    targets = [*_INLINE_LINK.findall(prose), *_REFERENCE_LINK.findall(prose)]
    return [t for t in targets if not _SCHEME.match(t) and not t.startswith("#")]


def test_the_link_reader_skips_code_and_external_links() -> None:
    markdown = (
        "See [the CLI](cli.md#search) and ![a figure](img/f.png 'title').\n"
        "Not links: `[3](url)`, ``a `[x](y.md)` span``, [web](https://example.com), [top](#top).\n"
        "```python\nitems[0](call.md)\n```\n"
        "[ref]: ../benchmarks/README.md\n"
    )
    assert _relative_links(markdown) == ["cli.md#search", "img/f.png", "../benchmarks/README.md"]


@pytest.mark.parametrize("page", _markdown_pages(), ids=lambda page: page.name)
def test_every_relative_link_names_a_file_of_the_repository(page: Path) -> None:
    broken = []
    for target in _relative_links(page.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0].split("?", 1)[0]
        resolved = (page.parent / path).resolve()
        if not resolved.exists() or not resolved.is_relative_to(REPO):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)} links to missing files: {broken}"


def test_the_readme_is_short_and_names_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    assert "make demo" in text
    assert "make test" in text


def test_the_readme_links_every_docs_page() -> None:
    linked = {
        (README.parent / target.split("#", 1)[0]).resolve()
        for target in _relative_links(README.read_text(encoding="utf-8"))
    }
    missing = [page.name for page in sorted(DOCS.glob("*.md")) if page.resolve() not in linked]
    assert not missing, f"README.md does not link {missing}"


@dataclass(frozen=True)
class DocumentedArgument:
    name: str
    default: str | None  # the text after `=`, None when the table gives no default


def _table_rows(markdown: str, header: list[str]) -> list[list[str]]:
    """The body rows of the first table whose header is `header`, as stripped cells."""
    lines = markdown.splitlines()
    for start, line in enumerate(lines):
        if _cells(line) == header:
            rows = []
            for row in lines[start + 2 :]:
                if not row.lstrip().startswith("|"):
                    break
                rows.append(_cells(row))
            return rows
    pytest.fail(f"no table with header {header}")


def _cells(line: str) -> list[str]:
    stripped = line.strip()
    if not stripped.startswith("|"):
        return []
    return [cell.strip() for cell in _CELL_SEPARATOR.split(stripped.strip("|"))]


def _documented_tools() -> dict[str, list[DocumentedArgument]]:
    """docs/mcp.md's tools table: each tool's arguments, as `name` or `name=default`."""
    tools: dict[str, list[DocumentedArgument]] = {}
    for cells in _table_rows(
        MCP_PAGE.read_text(encoding="utf-8"), ["tool", "arguments", "returns"]
    ):
        assert len(cells) == 3, f"a row of three cells, not {cells}"
        names = re.findall(r"`([^`]+)`", cells[0])
        assert len(names) == 1, f"one tool name per row, not {cells[0]!r}"
        arguments = []
        for spec in re.findall(r"`([^`]+)`", cells[1]):
            name, _, default = spec.partition("=")
            arguments.append(DocumentedArgument(name.strip(), default.strip() or None))
        assert arguments or cells[1] == "none", f"{names[0]}: arguments in backticks, or none"
        assert names[0] not in tools, f"{names[0]} twice in the table"
        tools[names[0]] = arguments
    return tools


def _served_tools(vault: Path) -> list[Tool]:
    """The tools a real MCP client session lists, over the SDK's in-memory transport."""
    service = VaultSearch(vault, watch=False)

    async def listed() -> list[Tool]:
        server = create_mcp_server(service)
        async with create_connected_server_and_client_session(server) as session:
            return (await session.list_tools()).tools

    try:
        return asyncio.run(listed())
    finally:
        service.close()


def test_the_mcp_page_lists_every_tool_and_argument_the_server_serves(tmp_path: Path) -> None:
    vault = Path(shutil.copytree(SAMPLE_VAULT, tmp_path / "sample-vault"))
    served = {tool.name: tool.inputSchema for tool in _served_tools(vault)}
    documented = _documented_tools()

    assert set(documented) == set(served), "docs/mcp.md's tools are not the server's"
    for name, schema in served.items():
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        arguments = {argument.name: argument for argument in documented[name]}
        assert set(arguments) == set(properties), f"{name}: documented arguments differ"
        for argument in arguments.values():
            if argument.name in required:
                assert argument.default is None, f"{name}: {argument.name} has no default"
            elif argument.default is None:
                assert properties[argument.name].get("default") is None, (
                    f"{name}: {argument.name}'s default is missing from docs/mcp.md"
                )
            else:
                assert json.loads(argument.default) == properties[argument.name].get("default"), (
                    f"{name}: {argument.name}'s default differs"
                )
