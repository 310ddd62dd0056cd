"""One question, one answer: every front plans it once and runs the same pipeline.

The same questions (a mention, a tag, a period, a tag with a period, a plain one) go
through the CLI (`vaultsearch context --json`, a real subprocess), the MCP `local_search`
tool (a real stdio client session), `local_search`, the QA chain's context step and
`VaultSearch`; each must give the same period, the same documents and the same context.
Before the query plan, only the QA chain read a period from the question, so the MCP
tool answered "last week" with notes of any date.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from langchain_vaultsearch import VaultSearch, create_vault_context_chain, local_search

VAULTSEARCH = str(Path(sys.executable).with_name("vaultsearch"))
QUESTIONS = [
    "How do I set up OAuth in [[Deployment]]?",
    "what is planned in #project/alpha",
    "what did I change last week?",
    "#project notes from last week",
    "OAuth callback URL",
]
DAY_S = 86_400
LAST_WEEK = {"Projects/Alpha/Deployment.md", "Piano/Lesson 1.md"}


@pytest.fixture
def dated_vault(vault_dir: Path) -> Path:
    """The shared vault, two notes changed a week ago and the rest two months ago."""
    now = time.time()
    for path in vault_dir.rglob("*.md"):
        rel = path.relative_to(vault_dir).as_posix()
        moment = now - (7 if rel in LAST_WEEK else 60) * DAY_S
        os.utime(path, (moment, moment))
    return vault_dir


async def _mcp_contexts(vault: Path) -> list[str]:
    params = StdioServerParameters(command=VAULTSEARCH, args=["mcp", "--vault", str(vault)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        texts = []
        for question in QUESTIONS:
            result = await session.call_tool("local_search", {"question": question})
            assert not result.isError, result
            content = result.content[0]
            assert isinstance(content, TextContent)
            texts.append(content.text)
        return texts


def _cli(vault: Path, question: str) -> dict[str, Any]:
    done = subprocess.run(  # noqa: S603 - the installed command, fixed arguments
        [VAULTSEARCH, "context", "--vault", str(vault), "--json", question],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def test_every_front_gives_the_same_period_documents_and_context(dated_vault: Path) -> None:
    service = VaultSearch(dated_vault, watch=False)
    chain = create_vault_context_chain(vault_path=str(dated_vault))
    mcp = asyncio.run(_mcp_contexts(dated_vault))
    for question, mcp_context in zip(QUESTIONS, mcp, strict=True):
        facade = service.local_search(question)
        function = local_search(question, vault_path=str(dated_vault))
        step = chain.invoke({"question": question})
        cli = _cli(dated_vault, question)
        paths = [doc.metadata["path"] for doc in facade.documents]
        assert paths, question
        assert [doc.metadata["path"] for doc in function.documents] == paths, question
        assert [doc.metadata["path"] for doc in step["documents"]] == paths, question
        assert [doc["metadata"]["path"] for doc in cli["documents"]] == paths, question
        label = None if facade.time_range is None else facade.time_range.label
        assert cli["timeRange"] == label, question
        context = facade.build_context().text
        for other in (function.build_context().text, step["context"], cli["context"], mcp_context):
            assert other == context, question


def test_a_period_in_the_question_puts_its_notes_first(dated_vault: Path) -> None:
    service = VaultSearch(dated_vault, watch=False)
    result = service.local_search("what did I change last week?")
    assert result.time_range is not None
    assert result.time_range.label == "last week"
    # Read from the words, a period is a guess: its notes lead and the search still runs.
    assert result.searched
    assert {doc.metadata["path"] for doc in result.filter_documents} == LAST_WEEK
    leading = result.documents[: len(LAST_WEEK)]
    assert {doc.metadata["path"] for doc in leading} == LAST_WEEK
    tagged = service.local_search("#project notes from last week")
    assert [doc.metadata["path"] for doc in tagged.filter_documents] == [
        "Projects/Alpha/Deployment.md"
    ]
    assert tagged.documents[0].metadata["path"] == "Projects/Alpha/Deployment.md"
    # A period given outright replaces the one the question names, and filters alone.
    given = service.local_search("what did I change last week?", time_range="2020-01")
    assert not given.searched
    assert given.documents == []
