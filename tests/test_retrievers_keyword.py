"""KeywordDocumentRetriever: the metadata contract, filters, k, persistence, and the chains
and retrievers it plugs into (EnsembleRetriever, the factory, local_search, the QA chain)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from langchain_classic.retrievers import EnsembleRetriever

from langchain_vaultsearch import (
    KeywordDocumentRetriever,
    RetrieverFactory,
    TieredLexicalRetriever,
    create_vault_qa_chain,
    local_search,
)
from langchain_vaultsearch.chunk_store import RetrievalProfile, export_vault_chunks
from langchain_vaultsearch.safe_archive import HEADER
from tests.conftest import SAMPLE_VAULT
from tests.fake_models import ScriptedChatModel

FORMS = [
    {
        "id": "1040es-1",
        "text": "Form 1040-ES is used to figure and pay estimated tax for individuals.",
        "metadata": {"form_number": "1040-ES", "doc_type": "form", "title": "Form 1040-ES"},
    },
    {
        "id": "1040-1",
        "text": "Form 1040 is the individual income tax return; estimated tax paid is credited.",
        "metadata": {"form_number": "1040", "doc_type": "form", "source": "irs/f1040.pdf"},
    },
    {
        "id": "pub505-1",
        "text": 'Publication 505 explains the "safe harbor" rule for estimated tax payments.',
        "metadata": {"doc_type": "guide", "tags": ["#tax"], "path": "irs/p505.pdf"},
    },
    {
        "id": "w2-1",
        "text": "Form W-2 reports wages paid and taxes withheld by an employer.",
        "metadata": {"form_number": "W-2", "doc_type": "form"},
    },
]


@pytest.fixture
def chunk_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "chunks"
    folder.mkdir()
    lines = [json.dumps(line) for line in FORMS]
    (folder / "irs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_documents_follow_the_metadata_contract(chunk_dir: Path) -> None:
    retriever = KeywordDocumentRetriever(chunk_dir=str(chunk_dir), k=3)
    docs = retriever.invoke("Form 1040-ES estimated tax")
    assert docs[0].id == "1040es-1"
    meta = docs[0].metadata
    assert meta["source"] == "keyword"
    assert meta["engine"] == "keyword"
    assert meta["chunkId"] == "1040es-1"
    assert meta["title"] == "Form 1040-ES"
    assert meta["path"] == "irs.jsonl"  # no path or source in the store: its file
    assert meta["form_number"] == "1040-ES"  # the store's own metadata is kept
    assert meta["score"] == meta["rerank_score"] == 1.0
    assert meta["explanation"]["boosts"] == {"formNumber": 1.5}
    assert set(meta["explanation"]) == {
        "bm25",
        "tfidf",
        "baseScore",
        "boosts",
        "boostedScore",
        "bestScore",
        "finalScore",
    }
    # --explain's finalScore is the score the document carries, as for every retriever.
    assert all(d.metadata["explanation"]["finalScore"] == d.metadata["score"] for d in docs)
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s <= 1 for s in scores)
    by_id = {d.id: d.metadata for d in docs}
    assert by_id["1040-1"]["path"] == "irs/f1040.pdf"  # the store's source is the path
    json.dumps([d.metadata for d in docs])  # JSON-serialisable, as the contract says


def test_k_comes_from_the_call_then_the_retriever_then_the_profile(chunk_dir: Path) -> None:
    profile = RetrievalProfile(doc_k=2)
    assert (
        len(KeywordDocumentRetriever(chunk_dir=str(chunk_dir), profile=profile).invoke("tax")) == 2
    )
    retriever = KeywordDocumentRetriever(chunk_dir=str(chunk_dir), profile=profile, k=3)
    assert len(retriever.invoke("tax")) == 3
    assert len(retriever.invoke("tax", k=1)) == 1
    for bad in ("5", 5.5, True, 0, 101):
        with pytest.raises(ValueError, match="k"):
            retriever.invoke("tax", k=bad)
    with pytest.raises(ValueError, match="k"):
        KeywordDocumentRetriever(chunk_dir=str(chunk_dir), k="5")  # type: ignore[arg-type]


def test_constructor_and_query_filters_combine(chunk_dir: Path) -> None:
    retriever = KeywordDocumentRetriever(chunk_dir=str(chunk_dir), filters={"doc_type": "form"})
    assert {d.id for d in retriever.invoke("estimated tax")} == {"1040es-1", "1040-1"}
    guides = retriever.invoke("estimated tax", filters={"doc_type": "guide"})  # per call wins
    assert [d.id for d in guides] == ["pub505-1"]
    assert retriever.invoke("estimated tax", filters={"form_number": ["W-2", "1040"]})[0].id == (
        "1040-1"
    )
    with pytest.raises(ValueError, match="filter"):
        KeywordDocumentRetriever(chunk_dir=str(chunk_dir), filters={"doc_type": {"x": 1}})


def test_quoted_terms_are_boosted_and_nothing_matching_returns_nothing(chunk_dir: Path) -> None:
    retriever = KeywordDocumentRetriever(chunk_dir=str(chunk_dir))
    docs = retriever.invoke('"safe harbor" estimated tax')
    assert docs[0].id == "pub505-1"
    assert docs[0].metadata["explanation"]["boosts"] == {"definedTerm": 1.5}
    assert retriever.invoke("zebra giraffe") == []
    assert retriever.invoke("   ") == []


def test_a_missing_folder_and_a_bad_tokenizer_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        KeywordDocumentRetriever(chunk_dir=str(tmp_path / "missing"))
    (tmp_path / "c").mkdir()
    with pytest.raises(ValueError, match="tokenizer"):
        KeywordDocumentRetriever(chunk_dir=str(tmp_path / "c"), tokenizer="spaces")  # type: ignore[arg-type]


def test_the_index_is_saved_reused_and_rebuilt_only_when_a_file_changes(
    chunk_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = KeywordDocumentRetriever(chunk_dir=str(chunk_dir))
    first.invoke("tax")
    saved = first.index_path
    assert saved is not None
    assert saved.is_file()
    stamp = saved.stat().st_mtime_ns
    second = KeywordDocumentRetriever(chunk_dir=str(chunk_dir))
    assert second.invoke("wages")[0].id == "w2-1"
    assert saved.stat().st_mtime_ns == stamp  # loaded, not rebuilt
    with (chunk_dir / "irs.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps({"id": "1099-1", "text": "Form 1099 reports other income."}) + "\n")
        out.write("{broken\n")
    with caplog.at_level(logging.WARNING):
        docs = second.invoke("1099 income")
    assert docs[0].id == "1099-1"  # the running retriever sees the new line
    assert [(p.line, p.reason[:14]) for p in second.problems] == [(6, "not valid JSON")]
    assert "irs.jsonl:6" in caplog.text
    assert saved.stat().st_mtime_ns != stamp


def test_a_saved_index_naming_a_file_outside_the_store_is_rebuilt(
    chunk_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The index lists the files it read lines from; a forged list pointed the query at a
    # file outside the store, whose name is no stamp: `StopIteration` escaped the query.
    first = KeywordDocumentRetriever(chunk_dir=str(chunk_dir))
    expected = [doc.id for doc in first.invoke("estimated tax")]
    saved = first.index_path
    assert saved is not None
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes((chunk_dir / "irs.jsonl").read_bytes())
    with zipfile.ZipFile(saved) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = json.loads(members[HEADER])
    header["files"] = [str(outside)]
    members[HEADER] = json.dumps(header).encode()
    with zipfile.ZipFile(saved, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with caplog.at_level(logging.WARNING):
        docs = KeywordDocumentRetriever(chunk_dir=str(chunk_dir)).invoke("estimated tax")
    assert [doc.id for doc in docs] == expected
    assert "Ignoring the keyword index" in caplog.text


def test_persist_false_writes_nothing(chunk_dir: Path) -> None:
    retriever = KeywordDocumentRetriever(chunk_dir=str(chunk_dir), persist=False)
    assert retriever.invoke("tax")
    assert retriever.index_path is None
    assert not (chunk_dir / ".vaultsearch").exists()


def test_a_read_only_store_still_searches(chunk_dir: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root writes anywhere: point the index at a file instead
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("x", encoding="utf-8")
        retriever = KeywordDocumentRetriever(
            chunk_dir=str(chunk_dir), persist_directory=str(blocker)
        )
    else:
        chunk_dir.chmod(0o555)
        retriever = KeywordDocumentRetriever(chunk_dir=str(chunk_dir))
    try:
        assert retriever.invoke("wages")[0].id == "w2-1"
    finally:
        chunk_dir.chmod(0o755)


def test_ainvoke_and_batch_give_the_sync_results(chunk_dir: Path) -> None:
    retriever = KeywordDocumentRetriever(chunk_dir=str(chunk_dir))
    sync = [d.id for d in retriever.invoke("estimated tax")]
    assert [d.id for d in asyncio.run(retriever.ainvoke("estimated tax"))] == sync
    batched = retriever.batch(["estimated tax", "wages"])
    assert [d.id for d in batched[0]] == sync


def test_inside_langchains_ensemble_retriever(chunk_dir: Path) -> None:
    forms = KeywordDocumentRetriever(chunk_dir=str(chunk_dir), filters={"doc_type": "form"})
    guides = KeywordDocumentRetriever(chunk_dir=str(chunk_dir), filters={"doc_type": "guide"})
    ensemble = EnsembleRetriever(retrievers=[forms, guides], weights=[0.5, 0.5], id_key="chunkId")
    ids = [d.id for d in ensemble.invoke("estimated tax")]
    assert set(ids) == {"1040es-1", "1040-1", "pub505-1"}


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    return export_vault_chunks(SAMPLE_VAULT, tmp_path / "export").path.parent


def test_an_exported_vault_finds_what_the_vault_search_finds(exported: Path) -> None:
    keyword = KeywordDocumentRetriever(chunk_dir=str(exported), k=5)
    lexical = TieredLexicalRetriever(vault_path=str(SAMPLE_VAULT), k=5)
    query = "PostgreSQL index"
    keyword_notes = {d.metadata["path"] for d in keyword.invoke(query)}
    assert "Engineering/PostgreSQL Indexing.md" in keyword_notes
    assert lexical.invoke(query)[0].metadata["path"] in keyword_notes
    doc = next(
        d for d in keyword.invoke(query) if d.metadata["path"].startswith("Engineering/Post")
    )
    assert doc.id == doc.metadata["chunkId"]
    assert str(doc.id).startswith("Engineering/PostgreSQL Indexing.md#")
    assert doc.metadata["title"] == "PostgreSQL Indexing"


def test_as_the_factorys_self_hosted_retriever_and_in_local_search(exported: Path) -> None:
    keyword = KeywordDocumentRetriever(chunk_dir=str(exported), k=5)
    factory = RetrieverFactory(vault_path=str(SAMPLE_VAULT), self_host_retriever=keyword)
    docs = factory.invoke("PostgreSQL index")
    assert factory.retriever_type == "self-host"
    assert docs[0].metadata["source"] == "keyword"
    found = local_search("PostgreSQL index", vault_path=str(SAMPLE_VAULT), retriever=keyword)
    assert found.searched
    assert any(d.metadata["source"] == "keyword" for d in found.documents)


def test_in_the_qa_chain(exported: Path) -> None:
    llm = ScriptedChatModel(responses=["Use a B-tree index [1]."])
    keyword = KeywordDocumentRetriever(chunk_dir=str(exported))
    chain = create_vault_qa_chain(llm=llm, vault_path=str(SAMPLE_VAULT), retriever=keyword)
    result = chain.invoke("How do I speed up PostgreSQL with an index?")
    assert result["answer"] == "Use a B-tree index [1]."
    assert "PostgreSQL Indexing" in result["context"]
    assert result["sources"][0]["path"].endswith(".md")


@pytest.mark.parametrize("backend", ["inotify", "watchfiles"])
def test_an_unchanged_store_is_not_statted_per_query_and_an_edit_is_seen(
    chunk_dir: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    # A store of 10,000 files stat-ed every file before each query; the folder watcher
    # says whether anything changed, and reports any edit completed before the query.
    if backend == "inotify" and not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    monkeypatch.setenv("VAULTSEARCH_WATCHER", backend)
    (chunk_dir / "more").mkdir()
    (chunk_dir / "more" / "extra.jsonl").write_text(
        json.dumps({"id": "x-1", "text": "Zeppelin tax credits."}) + "\n", encoding="utf-8"
    )
    retriever = KeywordDocumentRetriever(chunk_dir=str(chunk_dir))
    assert retriever.invoke("zeppelin")[0].id == "x-1"
    statted: list[str] = []
    real_stat = Path.stat

    def counting(self: Path, **kwargs: Any) -> Any:
        if self.suffix == ".jsonl":
            statted.append(self.name)
        return real_stat(self, **kwargs)

    monkeypatch.setattr(Path, "stat", counting)
    for _ in range(3):
        assert retriever.invoke("wages")[0].id == "w2-1"
    assert statted == []
    (chunk_dir / "more" / "extra.jsonl").write_text(
        json.dumps({"id": "x-2", "text": "Airship wages and zeppelin withholding."}) + "\n",
        encoding="utf-8",
    )
    assert retriever.invoke("airship")[0].id == "x-2"  # the edit just made is seen
    assert "extra.jsonl" in statted
    (chunk_dir / "new.jsonl").write_text(
        json.dumps({"id": "n-1", "text": "Dirigible schedule."}) + "\n", encoding="utf-8"
    )
    assert retriever.invoke("dirigible")[0].id == "n-1"  # and a new file
