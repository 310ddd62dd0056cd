"""Semantic, merged and factory retrievers over a real vault shape with a tiny fake model."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_vaultsearch import TieredLexicalRetriever
from langchain_vaultsearch.retrievers.factory import RetrieverFactory
from langchain_vaultsearch.retrievers.merged import MergedSemanticRetriever
from langchain_vaultsearch.semantic.index import VaultIndex
from langchain_vaultsearch.semantic.retriever import VaultSemanticRetriever
from langchain_vaultsearch.semantic.store_setup import guess_multilingual
from tests.fake_embeddings import HeldEmbedding, WordBagEmbedding

OAUTH = "Projects/Alpha/OAuth Setup.md"


def build_index(vault_dir: Path, **options: Any) -> VaultIndex:
    options.setdefault("embeddings", WordBagEmbedding())
    return VaultIndex(
        vault_path=vault_dir,
        vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
        records_path=vault_dir.parent / "records.sqlite3",
        **options,
    )


@pytest.fixture
def index(vault_dir: Path) -> VaultIndex:
    built = build_index(vault_dir)
    built.refresh()
    return built


def check_invariants(docs: list[Document], k: int) -> None:
    ids = [doc.id for doc in docs]
    scores = [doc.metadata["score"] for doc in docs]
    assert len(docs) <= k
    assert len(ids) == len(set(ids))
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert scores == sorted(scores, reverse=True)


def check_asked_first(docs: list[Document], tag: str, k: int) -> None:
    """The notes carrying `tag` lead; the places they leave go to the others, below them."""
    carries = [tag in doc.metadata["tags"] for doc in docs]
    assert carries[0]
    assert carries == sorted(carries, reverse=True)
    check_invariants(docs, k)


def test_semantic_finds_a_note_by_a_word_it_does_not_contain(index: VaultIndex) -> None:
    docs = index.as_retriever(k=5).invoke("authentication")
    assert docs[0].metadata["path"] == OAUTH
    assert docs[0].metadata["source"] == "semantic"
    assert docs[0].metadata["engine"] == "vector"
    assert docs[0].id == docs[0].metadata["chunkId"] == f"{OAUTH}#0"
    check_invariants(docs, 5)
    # Lexical search has no such word: the semantic side is what finds it.
    lexical = TieredLexicalRetriever(vault=index.vault).invoke("authentication")
    assert OAUTH not in [doc.metadata["path"] for doc in lexical]


def test_semantic_documents_match_lexical_ones_for_the_same_chunk(index: VaultIndex) -> None:
    semantic = index.as_retriever(k=5).invoke("oauth callback")[0]
    lexical = TieredLexicalRetriever(vault=index.vault).invoke("oauth callback")[0]
    assert semantic.id == lexical.id
    assert semantic.page_content == lexical.page_content
    assert set(semantic.metadata) == set(lexical.metadata)
    for key in ("path", "title", "chunkId", "heading", "mtime", "ctime", "tags", "isChunk"):
        assert semantic.metadata[key] == lexical.metadata[key]


def test_mentioned_notes_come_first_with_full_score(index: VaultIndex) -> None:
    docs = index.as_retriever(k=5).invoke("[[Deployment]] authentication")
    assert docs[0].metadata["path"] == "Projects/Alpha/Deployment.md"
    assert docs[0].metadata["score"] == 1.0
    assert docs[0].metadata["explanation"] == {"mentioned": True}
    assert OAUTH in [doc.metadata["path"] for doc in docs]


def test_min_similarity_drops_weak_matches(index: VaultIndex) -> None:
    assert index.as_retriever(min_similarity_score=0.99).invoke("authentication tomatoes") == []


def test_cjk_query_skips_an_english_only_model(vault_dir: Path) -> None:
    english = build_index(vault_dir, multilingual=False)
    english.refresh()
    assert english.as_retriever().invoke("学习笔记") == []
    assert not english.covers("import a Notion 数据库")  # it would read half the question
    assert not english.covers("睡 觉")  # single characters are CJK too
    assert not english.covers("\uff1f\uff01\uff0c")  # only punctuation: nothing to read
    assert english.covers("OAuth setup")
    multilingual = build_index(vault_dir, multilingual=True)
    assert multilingual.covers("睡 觉")
    assert not multilingual.covers("?!")
    multilingual.refresh()  # a new store: the records' vectors are written to it again
    paths = [doc.metadata["path"] for doc in multilingual.as_retriever().invoke("学习笔记")]
    assert paths[0] == "学习笔记.md"


def test_a_choice_of_reading_cjk_is_kept_by_later_opens_and_a_rebuild_forgets_it(
    vault_dir: Path,
) -> None:
    """Said once (`--multilingual`), the next command must not skip Chinese queries again:
    a model whose name does not give it away (here a word-bag model) is otherwise guessed
    English-only."""
    chosen = build_index(vault_dir, multilingual=True)
    chosen.refresh()
    chosen.close()
    reopened = build_index(vault_dir)
    assert reopened.covers("学习笔记")
    reopened.clear()  # the same model, emptied: still its choice
    reopened.close()
    assert build_index(vault_dir).covers("学习笔记")

    build_index(vault_dir, multilingual=False).close()
    assert not build_index(vault_dir).covers("学习笔记")

    build_index(vault_dir, multilingual=True).close()
    assert not build_index(vault_dir, rebuild=True).covers("学习笔记")  # guessed again


@pytest.mark.parametrize(
    ("model", "reads_cjk"),
    [
        ("huggingface:BAAI/bge-small-zh-v1.5", True),
        ("huggingface:shibing624/text2vec-base-chinese", True),
        ("huggingface:moka-ai/m3e-base", True),
        ("huggingface:pkshatech/GLuCoSE-base-ja", True),
        ("huggingface:jhgan/ko-sroberta-multitask", True),
        ("huggingface:Qwen/Qwen3-Embedding-0.6B", True),
        ("huggingface:sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2", True),
        ("openai:text-embedding-3-small", True),
        ("huggingface:sentence-transformers/all-MiniLM-L6-v2", False),
        ("huggingface:zhangsan/english-notes-model", False),  # `zh` inside a name
        ("fake:16", False),
    ],
)
def test_a_model_name_says_whether_it_reads_cjk(model: str, reads_cjk: bool) -> None:
    assert guess_multilingual(model) is reads_cjk


def test_a_query_after_an_edit_sees_it(
    index: VaultIndex, vault_dir: Path, touch: Callable[[Path, str, int], None]
) -> None:
    touch(vault_dir / "Piano/Lesson 1.md", "# Lesson 1\n\nBaked a loaf of bread.\n", 10)
    docs = index.as_retriever(k=3).invoke("bread")
    assert docs[0].metadata["path"] == "Piano/Lesson 1.md"
    assert "loaf" in docs[0].page_content


def test_many_edits_are_embedded_in_the_background(vault_dir: Path) -> None:
    index = build_index(vault_dir, inline_refresh_notes=0)
    report = index.ensure_fresh()
    assert report is not None
    assert report.background
    assert index.wait(30)
    assert index.verify().ok


def held_catch_up(vault_dir: Path) -> tuple[VaultIndex, HeldEmbedding]:
    """An index whose background catch-up has begun, its model held until released."""
    model = HeldEmbedding(WordBagEmbedding())
    index = build_index(vault_dir, embeddings=model, inline_refresh_notes=0)
    model.held = True
    report = index.ensure_fresh()
    assert report is not None
    assert report.background
    return index, model


def test_notes_a_background_catch_up_has_not_written_are_counted(vault_dir: Path) -> None:
    index, model = held_catch_up(vault_dir)
    notes = sum(1 for info in index.vault.notes.values() if info.searchable)
    assert notes > 1
    assert index.notes_unembedded == notes
    assert index.as_retriever().invoke("oauth") == []  # what the count warns of
    model.released.set()
    assert index.wait(30)
    assert index.notes_unembedded == 0
    assert index.as_retriever().invoke("oauth")


async def test_async_matches_sync(index: VaultIndex) -> None:
    retriever = index.as_retriever(k=5)
    sync = retriever.invoke("authentication")
    async_docs = await retriever.ainvoke("authentication")
    assert [d.id for d in async_docs] == [d.id for d in sync]


def test_k_is_checked(index: VaultIndex) -> None:
    with pytest.raises(ValueError, match="k must be between"):
        index.as_retriever().invoke("oauth", k=0)
    with pytest.raises(ValueError, match="less than or equal to 100"):
        VaultSemanticRetriever(index=index, k=101)


@pytest.mark.parametrize("terms", ["#project/alpha", [1, 2], {"#project/alpha": 1}])
def test_salient_terms_that_are_not_a_list_of_strings_are_refused_by_every_retriever(
    index: VaultIndex, terms: object
) -> None:
    """A string was read letter by letter: "#project/alpha" searched for "p", "r", ...
    and lost its tag, and a list of numbers failed deep in the tokenizer."""
    retrievers: list[BaseRetriever] = [
        TieredLexicalRetriever(vault=index.vault),
        MergedSemanticRetriever(semantic_index=index),
        RetrieverFactory(semantic_index=index),
    ]
    for retriever in retrievers:
        with pytest.raises(ValueError, match="salient_terms must be a list of strings"):
            retriever.invoke("what did I decide?", salient_terms=terms)
    assert RetrieverFactory(semantic_index=index).invoke(
        "what did I decide?", salient_terms=("#project/alpha",)
    )


@pytest.mark.parametrize("k", [0, 101, "5"])
def test_the_factory_refuses_a_k_out_of_range_per_call_as_the_others_do(
    index: VaultIndex, k: object
) -> None:
    with pytest.raises(ValueError, match="k must be"):
        RetrieverFactory(semantic_index=index).invoke("oauth", k=k)


# ---------------------------------------------------------------- merged


def test_merged_finds_what_either_side_finds(index: VaultIndex) -> None:
    merged = MergedSemanticRetriever(semantic_index=index, k=6)
    docs = merged.invoke("authentication gardening")
    paths = [doc.metadata["path"] for doc in docs]
    assert OAUTH in paths  # semantic only
    assert "Projects/Beta/Notes.md" in paths  # lexical (and semantic)
    check_invariants(docs, 6)
    assert all("fusion" in doc.metadata["explanation"] for doc in docs)


@pytest.mark.parametrize("fusion", ["calibrated", "blend", "rrf"])
async def test_merged_invariants_for_every_fusion(index: VaultIndex, fusion: str) -> None:
    merged = MergedSemanticRetriever(semantic_index=index, k=4, fusion=fusion)  # type: ignore[arg-type]
    for query in ("oauth deployment", "piano music", "tomatoes", "学习笔记"):
        check_invariants(merged.invoke(query), 4)
        check_invariants(await merged.ainvoke(query), 4)


async def test_semantic_failure_leaves_lexical_results(
    index: VaultIndex, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def down(*_args: object) -> list[tuple[str, float]]:
        msg = "vector store is down"
        raise ConnectionError(msg)

    monkeypatch.setattr(index, "search", down)
    monkeypatch.setattr(index, "asearch", down)
    merged = MergedSemanticRetriever(semantic_index=index, k=5)
    with caplog.at_level(logging.WARNING):
        docs = merged.invoke("oauth deployment")
        async_docs = await merged.ainvoke("oauth deployment")
    assert docs
    assert all(doc.metadata["source"] == "lexical" for doc in docs)
    assert [d.id for d in async_docs] == [d.id for d in docs]
    # One line each, with the reason, and no traceback over the results that came back.
    assert caplog.text.count("Semantic search failed (vector store is down)") == 2
    assert "Traceback" not in caplog.text


def test_each_side_is_asked_for_twice_k_or_100_in_return_all_mode(index: VaultIndex) -> None:
    asked: list[tuple[str, int]] = []

    class Spy(TieredLexicalRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: Any, **kwargs: Any
        ) -> list[Document]:
            asked.append(("lexical", kwargs["k"]))
            return super()._get_relevant_documents(query, run_manager=run_manager, **kwargs)

    spy = Spy(vault=index.vault)
    MergedSemanticRetriever(semantic_index=index, k=7, lexical_retriever=spy).invoke("oauth")
    MergedSemanticRetriever(
        semantic_index=index, k=1, return_all=True, lexical_retriever=spy
    ).invoke("oauth")
    assert asked == [("lexical", 14), ("lexical", 100)]


def test_merged_refuses_another_vault(index: VaultIndex, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not the index's vault"):
        MergedSemanticRetriever(semantic_index=index, vault_path=str(tmp_path))


# ---------------------------------------------------------------- factory


class Hosted(BaseRetriever):
    """A user's own retriever."""

    def _get_relevant_documents(self, query: str, **_kwargs: Any) -> list[Document]:
        return [Document(page_content=f"hosted: {query}", metadata={"path": "hosted.md"})]


def test_factory_chooses_merged_lexical_or_self_host(index: VaultIndex, vault_dir: Path) -> None:
    factory = RetrieverFactory(semantic_index=index, k=5)
    assert str(factory.retriever_type) == "merged"
    assert factory.choose("#project/alpha deploys") == "merged"  # only tagged notes, merged
    assert factory.choose("what did I write last week") == "merged"  # no filter here: words
    docs = factory.invoke("authentication")
    assert str(factory.retriever_type) == "merged"
    assert docs[0].metadata["path"] == OAUTH
    tagged = factory.invoke("#ops deploys")
    assert str(factory.retriever_type) == "merged"
    check_asked_first(tagged, "#ops", 5)  # one note carries #ops: it leads, others follow
    assert not all("#ops" in doc.metadata["tags"] for doc in tagged)
    picked = factory.invoke("deploys", salient_terms=["#ops"])  # a tag an LLM tool call picked
    assert str(factory.retriever_type) == "merged"
    check_asked_first(picked, "#ops", 5)
    assert RetrieverFactory(vault_path=str(vault_dir)).retriever_type == "lexical"


def test_factory_uses_a_healthy_self_hosted_retriever_only(
    index: VaultIndex, caplog: pytest.LogCaptureFixture
) -> None:
    healthy = {"up": True}

    def check() -> bool:
        if healthy["up"] is None:
            msg = "health endpoint unreachable"
            raise OSError(msg)
        return healthy["up"]

    factory = RetrieverFactory(
        semantic_index=index, self_host_retriever=Hosted(), self_host_health_check=check
    )
    assert factory.invoke("oauth")[0].page_content == "hosted: oauth"
    assert str(factory.retriever_type) == "self-host"
    healthy["up"] = False
    factory.invoke("oauth")
    assert str(factory.retriever_type) == "merged"
    healthy["up"] = None  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING):
        assert factory.choose("oauth") == "merged"
    assert "health check failed" in caplog.text


def test_factory_needs_a_vault() -> None:
    with pytest.raises(ValueError, match="needs vault_path, vault or semantic_index"):
        RetrieverFactory()


def test_embeddings_object_is_any_langchain_embeddings(vault_dir: Path) -> None:
    class NotEmbeddings:
        pass

    with pytest.raises(ValueError, match="embeddings must be an Embeddings"):
        VaultIndex(
            vault_path=vault_dir,
            embeddings=NotEmbeddings(),  # type: ignore[arg-type]
            vectorstore=lambda e: InMemoryVectorStore(embedding=e),
            records_path=vault_dir.parent / "r.sqlite3",
        )
    assert isinstance(WordBagEmbedding(), Embeddings)


def _long_note_vault(root: Path) -> Path:
    """One long note about pruning in many sections, and four short ones about it."""
    sections = "\n\n".join(
        f"## Pruning part {n}\n\n" + "Pruning roses in spring, cutting stems above a bud. " * 30
        for n in range(8)
    )
    notes = {"Garden/Roses.md": f"# Roses\n\n{sections}\n"}
    for name in ("Apple trees", "Hedges", "Tomatoes", "Vines"):
        notes[f"Garden/{name}.md"] = f"# {name}\n\nPruning {name.lower()}: cut above a bud.\n"
    from tests.conftest import write_vault

    return write_vault(root, notes)


@pytest.mark.parametrize("mode", ["auto", "hybrid"])  # auto: merged, with a vector index
def test_merged_and_hybrid_lists_spread_over_notes(
    tmp_path: Path, mode: Literal["auto", "hybrid"]
) -> None:
    index = build_index(_long_note_vault(tmp_path / "vault"))
    index.refresh()

    def notes(diverse: bool) -> list[str]:
        factory = RetrieverFactory(
            semantic_index=index,
            k=5,
            mode=mode,
            diverse_notes=diverse,
        )
        docs = factory.invoke("pruning roses stems")
        check_invariants(docs, 5)
        return [doc.metadata["path"] for doc in docs]

    spread = notes(True)
    assert len(set(spread)) == 5  # every note once before any note twice
    assert spread[0] == "Garden/Roses.md"
    assert len(set(notes(False))) < 5  # by score alone, the long note's chunks crowd in


def asked_model(index: VaultIndex, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the index is asked to search from now on (sync and async)."""
    asked: list[str] = []
    real_search, real_asearch = index.search, index.asearch

    def search(query: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(query)
        return real_search(query, *args, **kwargs)

    async def asearch(query: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(query)
        return await real_asearch(query, *args, **kwargs)

    monkeypatch.setattr(index, "search", search)
    monkeypatch.setattr(index, "asearch", asearch)
    return asked


async def test_the_model_embeds_the_query_as_the_lexical_side_corrected_it(
    index: VaultIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = asked_model(index, monkeypatch)
    merged = MergedSemanticRetriever(semantic_index=index, k=5)
    docs = merged.invoke("rollbak deploymnet")  # no note holds either word
    assert asked == ["rollback deployment"]
    assert docs[0].metadata["path"] == "Projects/Alpha/Deployment.md"
    asked.clear()
    await merged.ainvoke("rollbak deploymnet")
    assert asked == ["rollbak deploymnet", "rollback deployment"]  # asked again, corrected
    asked.clear()
    merged.invoke("rollback deployment")
    merged.invoke("rush deploys")  # a short word is never "corrected"
    merged.invoke("aplha deplyoment")  # swapped letters: "alpha" is only 80% like "aplha"
    assert asked == ["rollback deployment", "rush deploys", "alpha deployment"]


async def test_a_model_that_reads_chinese_embeds_the_query_corrected_by_sound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import write_vault

    vault = write_vault(
        tmp_path / "vault",
        {
            "168轻断食.md": "# 168轻断食\n\n每天八小时内进食，空腹十六小时。\n",
            "清洁.md": "# 清洁\n\n厨房的清洁方法。\n",
        },
    )
    index = build_index(vault, multilingual=True)
    index.refresh()
    asked = asked_model(index, monkeypatch)
    merged = MergedSemanticRetriever(semantic_index=index, k=5)
    # 清 for 轻 (both qing): no note holds 清断, and the lexical side matched 轻断.
    docs = merged.invoke("清断食 空腹")
    assert docs[0].metadata["path"] == "168轻断食.md"
    assert asked == ["轻断食 空腹"]
    asked.clear()
    await merged.ainvoke("清断食 空腹")
    assert asked == ["清断食 空腹", "轻断食 空腹"]  # asked again, corrected
    asked.clear()
    merged.invoke("清洁 空腹")  # every bigram in some note: nothing to correct
    assert asked == ["清洁 空腹"]


async def test_the_model_reads_a_tag_no_note_carries_as_its_word(
    index: VaultIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = asked_model(index, monkeypatch)
    merged = MergedSemanticRetriever(semantic_index=index, k=5)
    merged.invoke("#deployment rollback")  # no note carries #deployment
    assert asked == ["deployment rollback"]
    asked.clear()
    await merged.ainvoke("#deployment rollback")
    assert asked == ["deployment rollback"]
    asked.clear()
    docs = merged.invoke("#ops deploys")  # a carried tag stays a tag: its notes lead
    check_asked_first(docs, "#ops", 5)
    # An input method's full-width # (U+FF03) is the same tag, left out of the model's text alike.
    carried = asked[:]
    asked.clear()
    assert merged.invoke("\uff03ops deploys") == docs
    assert asked == carried
    assert "ops" not in " ".join(asked)


async def test_the_model_ranks_the_tagged_notes_by_the_rest_of_the_query(
    index: VaultIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = asked_model(index, monkeypatch)
    merged = MergedSemanticRetriever(semantic_index=index, k=5)
    docs = merged.invoke("#OPS deploys")  # the notes first carry #ops: it says nothing
    check_asked_first(docs, "#ops", 5)
    await merged.ainvoke("#project/alpha #deployment rollback")  # carried, then a word
    merged.invoke("#ops")  # nothing else to rank by: the tag is all there is
    assert asked == ["deploys", "deployment rollback", "#ops"]


async def test_a_saved_index_answers_with_refresh_off(vault_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "index"
    first = VaultIndex(vault_path=vault_dir, embeddings="fake:16", persist_directory=folder)
    try:
        assert first.refresh().chunks_written > 0
    finally:
        first.close()
    for run in ("sync", "async"):  # a new process each: it has never read the notes
        reopened = VaultIndex(vault_path=vault_dir, embeddings="fake:16", persist_directory=folder)
        try:
            retriever = reopened.as_retriever(k=3, refresh=False, min_similarity_score=0.0)
            docs = (
                retriever.invoke("database indexes")
                if run == "sync"
                else await retriever.ainvoke("database indexes")
            )
            assert len(docs) == 3, run
        finally:
            reopened.close()


async def test_a_named_note_comes_first_on_every_route(index: VaultIndex, vault_dir: Path) -> None:
    query = "[[Deployment]] oauth login"  # the words are another note's
    lexical = TieredLexicalRetriever(vault=index.vault)
    assert lexical.invoke(query)[0].metadata["path"] == OAUTH  # the seed's lexical search
    for retriever in (
        MergedSemanticRetriever(semantic_index=index, k=5),
        RetrieverFactory(semantic_index=index, k=5),
        RetrieverFactory(semantic_index=index, k=5, mode="hybrid"),
        RetrieverFactory(vault=index.vault, k=5),  # no vector index: lexical search
        RetrieverFactory(vault=index.vault, k=5, mode="hybrid"),
    ):
        for docs in (retriever.invoke(query), await retriever.ainvoke(query)):
            assert docs[0].metadata["path"] == "Projects/Alpha/Deployment.md"
            check_invariants(docs, 5)
            if getattr(retriever, "mode", None) == "hybrid":
                assert docs[0].metadata["score"] == 1.0  # seed 002: the best at 1.0


def test_a_process_that_ends_after_its_query_embeds_a_few_notes_and_starts_no_thread(
    vault_dir: Path,
) -> None:
    index = build_index(vault_dir, inline_refresh_notes=2, catch_up_in_background=False)
    index.vault.refresh()
    notes = len(index.vault.searchable_paths())
    assert notes > 4
    report = index.ensure_fresh()
    assert report is not None
    assert not report.background
    assert report.stopped  # the others are left to the next query
    assert len(report.added) == 2
    assert index.notes_unembedded == notes - 2
    report = index.ensure_fresh()
    assert report is not None
    assert len(report.added) == 2
    assert index.notes_unembedded == notes - 4


def test_a_closed_index_says_so_and_close_does_not_wait_for_a_write_that_hangs(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from langchain_vaultsearch.semantic import index as index_module
    from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable

    index, model = held_catch_up(vault_dir)
    assert model.entered.wait(30)  # the catch-up is inside the model, which hangs
    monkeypatch.setattr(index_module, "CLOSE_WAIT_S", 0.2)
    with caplog.at_level(logging.WARNING):
        index.close()  # the model hangs: close does not wait for it
    assert "while a write goes on" in caplog.text
    model.released.set()
    assert index.wait(30)
    with pytest.raises(SemanticIndexUnavailable, match="closed"):
        index.search("oauth", 3)
    with pytest.raises(SemanticIndexUnavailable, match="closed"):
        index.ensure_fresh()
    index.close()  # again: nothing to do
