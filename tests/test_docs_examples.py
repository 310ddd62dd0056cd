"""Every ```python block of README.md and docs/*.md runs (issue 25).

A code block that no test runs drifts from the API without anyone noticing: the top-level
API was trimmed, and examples kept importing names it no longer had. So each block is a test
case (id `page:line` of its opening fence), run with `exec` the way a reader would run it:

- a page's blocks run in order, in one namespace, because later blocks continue earlier ones
  (`retriever` made in the first block of docs/python-api.md is used in the second);
- `~/notes`, the vault the docs talk about, is a copy of examples/sample-vault (HOME points at
  a temporary folder holding it), and the current directory holds a copy of
  examples/sample-vault, so README.md's `vault_path="examples/sample-vault"` works too;
- a page's data blocks are the files its code reads: docs/chunk-store.md's ```json lines are
  the store at `data/chunks` that its Python block searches;
- names the docs leave to the reader ("`llm`: any chat model", "`embeddings`: any LangChain
  `Embeddings`") are bound to offline fakes before a page runs (`_READER_NAMES`);
- a block that needs a service this machine may not have (an OpenAI key, a model no
  registry package ships) runs when the service is there and otherwise skips, saying
  which (`_SERVICES`). Everything else must run: text that is not meant to run is fenced
  as ```text or ```bash, not ```python.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import io
import os
import re
import shutil
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from pytest_socket import disable_socket, enable_socket

from langchain_vaultsearch import Vault, VaultIndex
from langchain_vaultsearch.fusion.rerankers import DEFAULT_RERANKER_MODEL
from tests.conftest import SAMPLE_VAULT

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
NOT_RUN = frozenset({"design.md"})
"""Pages whose code is not an example to run: design.md quotes the original system."""

PYTHON_FENCES = frozenset({"python", "py", "python3"})
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")

CHAT_ANSWERS = {
    # docs/python-api.md's model expands queries: it answers in QueryExpander's XML, as the
    # page's output comment shows (`source='llm'`), not with the fallback a prose answer gets.
    "python-api.md": (
        "<salient><term>piano</term><term>notes</term></salient>"
        "<queries><query>piano lesson notes</query><query>piano practice sheets</query>"
        "</queries><expanded><term>music</term><term>sheet</term><term>practice</term>"
        "<term>lesson</term></expanded>"
    ),
}
DEFAULT_CHAT_ANSWER = (
    "Revert the release, then redeploy the last good build [^1].\n\n"
    "#### Sources\n[^1]: [[Deployment]]"
)


def _reader_names(page: str) -> dict[str, Any]:
    """What the docs leave to the reader, bound to offline stand-ins.

    `llm` is "any chat model" (README.md, python-api.md, qa-chain.md); `embeddings` is "any
    LangChain `Embeddings`" (semantic.md, hybrid.md). A fake keeps these pages network-free
    and fast (a 64-dimension hash embedding indexes the sample vault in well under a second);
    the real models are the integration tests' business.
    """
    answer = CHAT_ANSWERS.get(page, DEFAULT_CHAT_ANSWER)
    return {
        "llm": FakeListChatModel(responses=[answer]),
        "embeddings": DeterministicFakeEmbedding(size=64),
    }


# ------------------------------------------------------------------------------ blocks


@dataclass(frozen=True)
class CodeBlock:
    """One fenced code block: its page, the line of its opening fence, language and text."""

    page: Path
    line: int
    language: str
    source: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO).as_posix()}:{self.line}"


def code_blocks(page: Path) -> list[CodeBlock]:
    """The fenced code blocks of a markdown page, in order (CommonMark's fence rules).

    A fence is three or more backticks or tildes, indented at most three spaces; it closes
    with a fence of the same character at least as long and nothing after it. The block's
    lines lose up to the opening fence's indentation, as CommonMark says.
    """
    blocks: list[CodeBlock] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            index += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        language = (opening["info"].split() or [""])[0].lower()
        body: list[str] = []
        end = index + 1
        while end < len(lines):
            closing = _FENCE.match(lines[end])
            if (
                closing is not None
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
                and not closing["info"].strip()
            ):
                break
            text = lines[end]
            strip = len(text) - len(text.lstrip(" "))
            body.append(text[min(strip, indent) :])
            end += 1
        blocks.append(CodeBlock(page, index + 1, language, "\n".join(body) + "\n"))
        index = end + 1
    return blocks


def documented_pages() -> list[Path]:
    """README.md and every docs page whose examples are meant to run."""
    pages = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
    return [page for page in pages if page.name not in NOT_RUN]


def python_blocks() -> list[CodeBlock]:
    return [
        block
        for page in documented_pages()
        for block in code_blocks(page)
        if block.language in PYTHON_FENCES
    ]


def test_the_fence_reader_finds_blocks_as_commonmark_does(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro\n\n```python\nx = 1\n```\n\n"
        "- a list item\n\n  ```Python title\n  y = 2\n    z = 3\n  ```\n\n"
        "````text\n```python\nnot a block\n```\n````\n\n"
        "~~~\nplain\n~~~\n\n``not`a`fence``\n",
        encoding="utf-8",
    )
    found = [(b.line, b.language, b.source) for b in code_blocks(page)]
    assert found == [
        (3, "python", "x = 1\n"),
        (9, "python", "y = 2\n  z = 3\n"),
        (14, "text", "```python\nnot a block\n```\n"),
        (20, "", "plain\n"),
    ]


def test_the_docs_have_python_blocks_on_the_pages_that_teach_the_api() -> None:
    """A guard on the collector: if it found nothing, every page would pass vacuously."""
    pages = {block.page.name for block in python_blocks()}
    assert {"README.md", "python-api.md", "semantic.md", "qa-chain.md"} <= pages


# ---------------------------------------------------------------------------- services


def _code_only(source: str) -> str:
    """The block without its comments: a comment naming `ChatOpenAI` is not a call to it."""
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, column = token.start
            lines[row - 1] = lines[row - 1][:column]
    return "\n".join(lines)


def _openai_key() -> str | None:
    if os.environ.get("OPENAI_API_KEY"):
        return None
    return "needs OPENAI_API_KEY (an OpenAI model is called)"


def _cross_encoder(code: str) -> str | None:
    """A cross-encoder runs when its folder exists or the Hugging Face cache holds it.

    No package on a registry ships cross-encoder weights (integration_tests/
    test_reranker_real.py says the same), and the tests never download: a block naming a
    hub model runs only where an earlier download left it in the cache.
    """
    from huggingface_hub import try_to_load_from_cache

    named = re.search(r"model_name_or_path\s*=\s*[\"']([^\"']+)[\"']", code)
    model = named[1] if named else DEFAULT_RERANKER_MODEL
    if Path(model).expanduser().is_dir():
        return None
    hub_name = re.fullmatch(r"[\w.-]+/[\w.-]+", model) is not None
    if hub_name and isinstance(try_to_load_from_cache(model, "config.json"), str):
        return None
    return (
        f"needs the cross-encoder {model} from the Hugging Face hub, which is not in the "
        "local cache (no registry package ships cross-encoder weights)"
    )


@dataclass(frozen=True)
class Service:
    """Something a block may need that a test machine may lack, and how to tell."""

    pattern: re.Pattern[str]
    missing: Callable[[str], str | None]  # the block's code -> why it cannot run, or None


_SERVICES = (
    Service(
        re.compile(r"\bChatOpenAI\(|\bOpenAIEmbeddings\(|[\"']openai:"), lambda _: _openai_key()
    ),
    Service(re.compile(r"\bCrossEncoderReranker\("), _cross_encoder),
    Service(
        re.compile(r"\bchroma_(?:host|port|client)\s*="),
        lambda _: "needs a running Chroma server (chroma run)",
    ),
)


def missing_service(block: CodeBlock) -> str | None:
    """Why this block cannot run on this machine, or None when it can."""
    code = _code_only(block.source)
    for service in _SERVICES:
        if service.pattern.search(code):
            reason = service.missing(code)
            if reason is not None:
                return reason
    return None


def test_blocks_that_only_mention_a_service_in_a_comment_still_run() -> None:
    page = REPO / "README.md"
    commented = CodeBlock(page, 1, "python", "expander = QueryExpander(llm)  # or ChatOpenAI()\n")
    called = CodeBlock(page, 1, "python", 'llm = ChatOpenAI(model="gpt-4.1-mini")\n')
    assert missing_service(commented) is None
    assert (missing_service(called) is None) == bool(os.environ.get("OPENAI_API_KEY"))


# ------------------------------------------------------------------------------- pages


def _write_chunk_store(page: Path, cwd: Path) -> None:
    """docs/chunk-store.md searches `data/chunks`: the store its ```json block shows."""
    store = cwd / "data" / "chunks"
    store.mkdir(parents=True)
    lines = [b.source for b in code_blocks(page) if b.language in {"json", "jsonl"}]
    (store / "forms.jsonl").write_text("".join(lines), encoding="utf-8")


_PAGE_DATA: dict[str, Callable[[Path, Path], None]] = {"chunk-store.md": _write_chunk_store}
"""Per page, what its blocks read besides `~/notes`, written into the page's directory."""


@dataclass
class PageRun:
    """One page's blocks run so far: their shared namespace, home and working directory."""

    page: Path
    home: Path
    cwd: Path
    namespace: dict[str, Any]
    ran: set[int] = field(default_factory=set)


def _open_page(page: Path, root: Path) -> PageRun:
    home, cwd = root / "home", root / "cwd"
    shutil.copytree(SAMPLE_VAULT, home / "notes")
    shutil.copytree(SAMPLE_VAULT, cwd / "examples" / "sample-vault")
    if page.name in _PAGE_DATA:
        _PAGE_DATA[page.name](page, cwd)
    namespace: dict[str, Any] = {"__name__": "__main__", **_reader_names(page.name)}
    return PageRun(page, home, cwd, namespace)


def _close(namespace: dict[str, Any]) -> None:
    """Stop what the blocks left running: vault watchers, vector indexes, Chroma clients."""
    seen: set[int] = set()
    for value in list(namespace.values()):
        for holder in (value, *(getattr(value, a, None) for a in ("vault", "semantic_index"))):
            if isinstance(holder, Vault | VaultIndex) and id(holder) not in seen:
                seen.add(id(holder))
                holder.close()


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Path, PageRun]]:
    runs: dict[Path, PageRun] = {}
    yield runs
    for run in runs.values():
        _close(run.namespace)


def run_block(block: CodeBlock, namespace: dict[str, Any]) -> None:
    """Run one block as a notebook cell would: top-level `await` is allowed."""
    code = compile(
        block.source, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    if code.co_flags & inspect.CO_COROUTINE:
        asyncio.run(eval(code, namespace))  # noqa: S307 (the repository's own docs)
    else:
        exec(code, namespace)  # noqa: S102 (the repository's own docs)


BLOCKS = python_blocks()


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_the_docs_python_block_runs(
    block: CodeBlock,
    page_runs: dict[Path, PageRun],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reason = missing_service(block)
    if reason is not None:
        pytest.skip(reason)
    run = page_runs.get(block.page)
    if run is None:
        root = tmp_path_factory.mktemp(block.page.stem)
        run = page_runs[block.page] = _open_page(block.page, root)
    monkeypatch.setenv("HOME", str(run.home))  # os.path.expanduser reads it: ~/notes
    monkeypatch.chdir(run.cwd)
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(variable, "1")  # a model comes from a folder or the cache
    # Earlier blocks of the page first (they did run unless this case was picked alone).
    for earlier in python_blocks_of(block.page):
        if earlier.line >= block.line:
            break
        if earlier.line not in run.ran and missing_service(earlier) is None:
            run.ran.add(earlier.line)
            _run_offline(earlier, run.namespace)
    run.ran.add(block.line)
    _run_offline(block, run.namespace)


def _run_offline(block: CodeBlock, namespace: dict[str, Any]) -> None:
    """Run a block with sockets off, unless it needs a service (and then has one).

    A block that quietly reached the network would pass here and fail for a reader offline
    (or in CI); with sockets off it fails here, naming the connection it tried.
    """
    needs_network = any(service.pattern.search(_code_only(block.source)) for service in _SERVICES)
    environment = dict(os.environ)
    if not needs_network:
        disable_socket(allow_unix_socket=True)
    try:
        run_block(block, namespace)
    finally:
        enable_socket()
        # A block may set a variable for its reader (HF_HUB_OFFLINE=1); not for other tests.
        os.environ.clear()
        os.environ.update(environment)


def python_blocks_of(page: Path) -> list[CodeBlock]:
    return [block for block in BLOCKS if block.page == page]
