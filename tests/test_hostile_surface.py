"""The whole public surface over a vault of hostile and odd notes (issue 12's corpus).

`tests/hostile/` holds the frontmatter bombs; the other odd notes (empty, frontmatter only,
emoji, a colon in the name, UTF-16 with a byte order mark, a decomposed name) are written
here. Every entry point must answer, in bounded time, and find what is findable.
"""

from __future__ import annotations

import codecs
import json
import time
import unicodedata
from pathlib import Path

import pytest

from langchain_vaultsearch import (
    FilterRetriever,
    KeywordDocumentRetriever,
    TieredLexicalRetriever,
    local_search,
    merge_filter_and_search_results,
)
from langchain_vaultsearch.chunk_store import export_vault_chunks
from langchain_vaultsearch.cli import main
from langchain_vaultsearch.context import build_local_search_context

HOSTILE = Path(__file__).parent / "hostile"
SECONDS = 30.0
"""Far above what any entry point takes here (well under a second): a hang fails, not CI."""


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-vault")
    for source in HOSTILE.glob("*.md"):
        (root / source.name).write_bytes(source.read_bytes())
    odd = {
        "Empty Quarterly.md": b"",
        "Reading List.md": b"---\ntags: [books, someday]\n---\n",
        "Launch.md": "# Launch\n\n\U0001f680 liftoff checklist\n".encode(),
        "Re: budget.md": b"# Re: budget\n\ncolonfileword here\n",
        "Utf16.md": codecs.BOM_UTF16_LE + "# Utf16\n\nwidechars note\n".encode("utf-16-le"),
        unicodedata.normalize("NFD", "Café Notes.md"): b"# Cafe\n\nespresso grind\n",
        "Plain.md": b"# Plain\n\n[[Re: budget]] and [[Launch]] #someday\n",
    }
    for name, data in odd.items():
        (root / name).write_bytes(data)
    return root


EXPECTED = {
    "quasar": "billion-laughs.md",  # the frontmatter bombs stay searchable by their body
    "pulsar": "deep-nesting.md",
    "nebula": "mapping-aliases.md",
    "colonfileword": "Re: budget.md",
    "widechars": "Utf16.md",
    "\U0001f680": "Launch.md",
    "espresso": unicodedata.normalize("NFC", "Café Notes.md"),
    "empty quarterly": "Empty Quarterly.md",
    "reading list": "Reading List.md",
}


def _bounded(started: float) -> None:
    assert time.perf_counter() - started < SECONDS


def _nfc(path: str) -> str:
    return unicodedata.normalize("NFC", path)


@pytest.mark.parametrize(("query", "path"), EXPECTED.items())
def test_the_lexical_retriever_finds_each_odd_note(vault: Path, query: str, path: str) -> None:
    started = time.perf_counter()
    docs = TieredLexicalRetriever(vault_path=str(vault), k=5).invoke(query)
    _bounded(started)
    assert _nfc(docs[0].metadata["path"]) == path


def test_the_filter_merge_context_and_local_search_answer(vault: Path) -> None:
    started = time.perf_counter()
    filtered = FilterRetriever(vault_path=str(vault)).get_relevant_documents(
        "[[Re: budget]] #someday"
    )
    assert {"Re: budget.md", "Reading List.md", "Plain.md"} <= {
        d.metadata["path"] for d in filtered
    }
    searched = TieredLexicalRetriever(vault_path=str(vault)).invoke("liftoff checklist")
    merged = merge_filter_and_search_results(filtered, searched)
    context = build_local_search_context([*merged.filter_results, *merged.search_results])
    assert "<localSearch" in context.text
    found = local_search("what is in [[Launch]]?", vault_path=str(vault))
    assert any(d.metadata["path"] == "Launch.md" for d in found.documents)
    _bounded(started)


def test_the_command_line_answers(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.perf_counter()
    assert main(["search", "--vault", str(vault), "--json", "colonfileword"]) == 0
    documents = json.loads(capsys.readouterr().out)["documents"]
    assert documents[0]["metadata"]["path"] == "Re: budget.md"
    assert main(["context", "--vault", str(vault), "widechars"]) == 0
    assert "Utf16.md" in capsys.readouterr().out
    _bounded(started)


def test_the_keyword_retriever_over_the_export_answers(vault: Path, tmp_path: Path) -> None:
    started = time.perf_counter()
    store = export_vault_chunks(vault, tmp_path / "store").path.parent
    keyword = KeywordDocumentRetriever(chunk_dir=str(store), k=3)
    assert keyword.invoke("colonfileword")[0].metadata["path"] == "Re: budget.md"
    assert keyword.invoke("\U0001f680 liftoff")[0].metadata["path"] == "Launch.md"
    _bounded(started)


def test_the_semantic_and_merged_retrievers_answer(vault: Path, tmp_path: Path) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_vaultsearch import MergedSemanticRetriever, RetrieverFactory, VaultIndex
    from tests.fake_embeddings import WordBagEmbedding

    started = time.perf_counter()
    index = VaultIndex(
        vault_path=vault,
        embeddings=WordBagEmbedding(),
        vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
        records_path=tmp_path / "records.sqlite3",
    )
    index.refresh()
    assert index.verify().ok
    merged = MergedSemanticRetriever(semantic_index=index, k=5)
    assert merged.invoke("colonfileword")[0].metadata["path"] == "Re: budget.md"
    hybrid = RetrieverFactory(semantic_index=index, mode="hybrid", k=5)
    assert hybrid.invoke("widechars")[0].metadata["path"] == "Utf16.md"
    assert index.as_retriever(k=5).invoke("quasar")  # the bomb note, by its body
    index.close()
    _bounded(started)
