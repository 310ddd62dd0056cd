"""Hybrid search: graph neighbours (bounded at hubs), recency tiers, the reranker and its
failures, top_k, and seed 002's invariants as properties over generated vaults."""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_vaultsearch import (
    MergedSemanticRetriever,
    RetrieverFactory,
    TieredLexicalRetriever,
    VaultIndex,
)
from langchain_vaultsearch.fusion.hybrid import (
    GraphExpansion,
    HybridStages,
    RecencyTiers,
    top_k_for,
)
from langchain_vaultsearch.vault.link_graph import LinkGraph
from langchain_vaultsearch.vault.markdown import parse_note
from langchain_vaultsearch.vault.note_info import NoteInfo, note_title
from langchain_vaultsearch.vault.saved_notes import SavedNotes, encode_row, pack
from langchain_vaultsearch.vault.vault import Vault
from tests.conftest import write_vault
from tests.fake_embeddings import WordBagEmbedding
from tests.search_helpers import count_decodes


def test_top_k_is_max_10_and_twice_top_n() -> None:
    assert [top_k_for(n) for n in (1, 4, 5, 6, 30, 50)] == [10, 10, 10, 12, 60, 100]


def test_recency_tiers_pick_the_first_age_that_fits() -> None:
    now = datetime(2026, 11, 24, 12, 0).astimezone()
    tiers = RecencyTiers()
    assert tiers.factor(now - timedelta(days=3), now) == 1.2
    assert tiers.factor(now - timedelta(days=20), now) == 1.1
    assert tiers.factor(now - timedelta(days=90), now) == 1.0
    with pytest.raises(ValueError, match="days > 0"):
        RecencyTiers(tiers=((0, 1.5),))


def test_a_recent_note_outranks_an_equal_old_one(tmp_path: Path) -> None:
    vault = write_vault(
        tmp_path / "v",
        {
            "Old.md": "# Old\n\ncompost turning schedule\n",
            "New.md": "# New\n\ncompost turning schedule\n",
        },
    )
    old = time.time() - 90 * 86400
    os.utime(vault / "Old.md", (old, old))
    plain = RetrieverFactory(vault_path=str(vault), mode="hybrid", recency=False, graph=False)
    hybrid = RetrieverFactory(vault_path=str(vault), mode="hybrid", graph=False)
    query = "compost turning schedule"
    assert plain.invoke(query)[0].metadata["score"] == plain.invoke(query)[1].metadata["score"]
    ranked = hybrid.invoke(query)
    assert ranked[0].metadata["path"] == "New.md"
    assert ranked[0].metadata["explanation"]["recency"] == 1.2
    assert "recency" not in ranked[1].metadata["explanation"]


def test_a_note_dated_in_the_future_earns_no_recency_tier(tmp_path: Path) -> None:
    now = datetime(2026, 11, 24, 12, 0).astimezone()
    tiers = RecencyTiers()
    assert tiers.factor(datetime(2300, 1, 1).astimezone(), now) == 1.0
    # Today's daily note is dated the end of today: still recent.
    assert tiers.factor(now + timedelta(hours=11), now) == 1.2
    vault = write_vault(
        tmp_path / "v",
        {
            "Future.md": "# Future\n\ncompost turning schedule\n",
            "New.md": "# New\n\ncompost turning schedule\n",
        },
    )
    year_2300 = 10_413_792_000
    os.utime(vault / "Future.md", (year_2300, year_2300))
    ranked = RetrieverFactory(vault_path=str(vault), mode="hybrid", graph=False).invoke(
        "compost turning schedule"
    )
    assert [d.metadata["path"] for d in ranked] == ["New.md", "Future.md"]
    assert ranked[0].metadata["explanation"]["recency"] == 1.2
    assert "recency" not in ranked[1].metadata["explanation"]


def test_graph_neighbours_join_below_and_a_hub_adds_only_a_few(tmp_path: Path) -> None:
    notes = {"Hub.md": "# Hub\n\nthe zeppelin hangar\n"}
    notes.update(
        {f"Spoke {i}.md": f"# Spoke {i}\n\nfiller words {i} [[Hub]]\n" for i in range(2000)}
    )
    vault = write_vault(tmp_path / "v", notes)
    hybrid = RetrieverFactory(vault_path=str(vault), mode="hybrid", recency=False)
    # A vault this size is indexed in the background; the link graph comes with the index.
    assert hybrid.lexical_retriever.wait_for_index(timeout=120)
    docs = hybrid.invoke("zeppelin hangar", k=30)
    assert docs[0].metadata["path"] == "Hub.md"
    neighbours = [d for d in docs if d.metadata["source"] == "graph"]
    assert 1 <= len(neighbours) <= GraphExpansion().per_seed  # not 2,000
    assert all(d.metadata["explanation"]["graphNeighbour"]["via"] == ["Hub.md"] for d in neighbours)
    assert all(d.metadata["score"] < docs[0].metadata["score"] for d in neighbours)
    off = RetrieverFactory(vault_path=str(vault), mode="hybrid", recency=False, graph=False)
    assert [d.metadata["path"] for d in off.invoke("zeppelin hangar", k=30)] == ["Hub.md"]


def _hub_vault(root: Path, spokes: int) -> Vault:
    """A vault whose notes were adopted from a saved index, as after a restart: a hub
    linked from `spokes` notes, an index note linking to all of them, and three spokes
    linking to each other too (the most connected). Only the hub and those three are
    files: the other notes are saved rows alone, so the test writes four small files, not
    50,000."""
    on_disk = {"Hub.md": "# Hub\n\nthe zeppelin hangar\n"}
    on_disk.update(
        {f"Spoke {i}.md": f"# Spoke {i}\n\n[[Hub]] [[Spoke {(i + 1) % 3}]]\n" for i in range(3)}
    )
    write_vault(root, on_disk)
    vault = Vault(root, watch=False)
    infos, rows = {}, []
    for path in on_disk:
        read = vault.reader.read_note(path)
        assert read is not None
        infos[path] = read[0]
        rows.append(encode_row(read[0], read[2]))
    spoke = parse_note("[[Hub]]\n")  # parsed once for the thousands of alike spokes
    saved_only = {f"Spoke {i}.md": spoke for i in range(3, spokes)}
    saved_only["Index.md"] = parse_note(" ".join(f"[[Spoke {i}]]" for i in range(spokes)))
    at = 1_700_000_000_000_000_000
    for path, parsed in saved_only.items():
        infos[path] = NoteInfo(path, note_title(path), at / 1e6, at / 1e6, 8, parsed, True)
        rows.append(encode_row(infos[path], (at, 8, at)))
    arrays = pack(rows, len(rows))
    saved = SavedNotes(
        list(infos),
        arrays["note_stamps"],
        arrays["note_times"],
        arrays["note_records"],
        arrays["note_record_offsets"],
    )
    assert vault.adopt(saved, LinkGraph.from_notes(infos)) == len(infos)
    return vault


def test_graph_neighbours_of_a_hub_of_50000_backlinks_cost_a_bounded_number_of_lookups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ranking a hub's whole neighbourhood decoded every neighbour's saved record: about
    # 100,000 a query, 14-39 s. Only the most linked few may be looked up now.
    vault = _hub_vault(tmp_path / "v", 50_000)
    assert len(vault.backlinks("Hub.md")) == 50_000
    assert len(vault.link_graph().outlinks("Index.md")) == 50_000
    decoded = count_decodes(monkeypatch)
    looked_up: list[str] = []
    get = vault.get

    def counting_get(path: str) -> NoteInfo | None:
        looked_up.append(path)
        return get(path)

    monkeypatch.setattr(vault, "get", counting_get)
    stages = HybridStages(graph=GraphExpansion(), recency=None)
    docs = stages.apply(_docs(["Hub.md", "Index.md"]), "zeppelin", vault, top_n=10)
    neighbours = [d for d in docs if d.metadata.get("source") == "graph"]
    assert sorted(d.metadata["path"] for d in neighbours) == [f"Spoke {i}.md" for i in range(3)]
    assert all(
        d.metadata["explanation"]["graphNeighbour"]["via"] == ["Hub.md", "Index.md"]
        for d in neighbours
    )
    bound = GraphExpansion().seeds * GraphExpansion().per_seed
    assert len(looked_up) <= bound
    assert len(decoded) <= bound


class ReverseScorer(BaseDocumentCompressor):
    """Deterministic: ranks documents by their path, reversed, with a relevance_score."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        ranked = sorted(documents, key=lambda d: d.metadata["path"], reverse=True)
        return [
            Document(
                d.page_content, metadata={**d.metadata, "relevance_score": 1.0 / (i + 1)}, id=d.id
            )
            for i, d in enumerate(ranked)
        ]


class Broken(BaseDocumentCompressor):
    delay: float = 0.0

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        if self.delay:
            time.sleep(self.delay)
            return list(documents)[::-1]
        msg = "reranker down"
        raise RuntimeError(msg)


def _docs(paths: list[str]) -> list[Document]:
    return [
        Document(p, metadata={"path": p, "score": 0.9 - i / 10, "chunkId": f"{p}#0"}, id=f"{p}#0")
        for i, p in enumerate(paths)
    ]


def test_what_the_reranker_read_is_shown_to_the_model(vault_dir: Path) -> None:
    """A search side's verdict hid the results the reranker moved up."""
    vault = TieredLexicalRetriever(vault_path=str(vault_dir)).vault
    assert vault is not None
    fused = _docs(["a.md", "b.md", "c.md", "d.md"])
    for doc in fused[1:]:
        doc.metadata["includeInContext"] = False
    stages = HybridStages(graph=None, recency=None, reranker=ReverseScorer(), rerank_top_n=3)
    out = stages.apply(fused, "q", vault, top_n=4)
    shown = {d.metadata["path"]: d.metadata.get("includeInContext") for d in out}
    assert shown == {"c.md": True, "a.md": True, "b.md": True, "d.md": False}
    assert fused[2].metadata["includeInContext"] is False  # inputs unchanged


def test_the_reranker_reorders_the_top_and_failures_keep_the_fused_order(
    vault_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vault = TieredLexicalRetriever(vault_path=str(vault_dir)).vault
    assert vault is not None
    fused = _docs(["a.md", "b.md", "c.md", "d.md"])
    stages = HybridStages(graph=None, recency=None, reranker=ReverseScorer(), rerank_top_n=3)
    out = stages.apply(fused, "q", vault, top_n=4)
    # Blended by position: c (0.75 x 0.78 fused + 0.25 x 1.0 reranker) rises above a
    # (0.75 x 1.0 + 0), which stays above b (0.75 x 0.89 + 0.25 x 0.25); d is not reranked.
    assert [d.metadata["path"] for d in out] == ["c.md", "a.md", "b.md", "d.md"]
    assert out[0].metadata["score"] == 1.0
    assert out[0].metadata["relevance_score"] == 1.0
    assert out[1].metadata["relevance_score"] == 0.0
    assert [d.metadata["score"] for d in out] == sorted(
        (d.metadata["score"] for d in out), reverse=True
    )
    with caplog.at_level(logging.WARNING):
        failed = HybridStages(graph=None, recency=None, reranker=Broken()).apply(
            fused, "q", vault, top_n=4
        )
        slow = HybridStages(
            graph=None, recency=None, reranker=Broken(delay=1.0), rerank_timeout_s=0.1
        )
        timed_out = slow.apply(fused, "q", vault, top_n=4)
    assert [d.metadata["path"] for d in failed] == ["a.md", "b.md", "c.md", "d.md"]
    assert [d.metadata["path"] for d in timed_out] == ["a.md", "b.md", "c.md", "d.md"]
    assert "reranker failed" in caplog.text
    assert "took over 0.1 s" in caplog.text


def test_a_reranker_needs_the_hybrid_mode(vault_dir: Path) -> None:
    with pytest.raises(ValueError, match='mode="hybrid"'):
        RetrieverFactory(vault_path=str(vault_dir), reranker=ReverseScorer())


WORDS = ["oauth", "deploy", "garden", "piano", "compost", "rollback", "zeppelin", "tomato"]


@st.composite
def vaults(draw: st.DrawFn) -> dict[str, str]:
    count = draw(st.integers(min_value=1, max_value=12))
    notes = {}
    for i in range(count):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12))
        links = draw(st.lists(st.integers(0, count - 1), max_size=3))
        body = " ".join(words) + "".join(f" [[Note {j}]]" for j in links)
        tag = " #ops" if draw(st.booleans()) else ""
        notes[f"Note {i}.md"] = f"# Note {i}\n\n{body}{tag}\n"
    return notes


def _assert_invariants(docs: list[Document], top_n: int, best_is_one: bool) -> None:
    assert len(docs) <= top_n
    scores = [d.metadata["score"] for d in docs]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    ids = [d.id for d in docs]
    assert len(ids) == len(set(ids))
    if best_is_one and docs:
        assert scores[0] == 1.0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    notes=vaults(),
    query=st.lists(st.sampled_from([*WORDS, "#ops"]), min_size=1, max_size=3),
    top_n=st.integers(1, 15),
)
def test_seed_002_invariants_hold_in_every_mode(
    notes: dict[str, str], query: list[str], top_n: int
) -> None:
    """Seed 002's invariants, and a carried `#ops` in the query puts its notes first."""
    with tempfile.TemporaryDirectory() as folder:
        root = write_vault(Path(folder) / "v", notes)
        index = VaultIndex(
            vault_path=root,
            embeddings=WordBagEmbedding(),
            vectorstore=lambda embedding: InMemoryVectorStore(embedding=embedding),
            records_path=Path(folder) / "records.sqlite3",
        )
        index.refresh()
        text = " ".join(query)
        lexical = TieredLexicalRetriever(vault=index.vault)
        modes = {
            "lexical": (lexical, False),
            "semantic": (index.as_retriever(), False),
            "merged": (RetrieverFactory(semantic_index=index, lexical_side=lexical), False),
            "hybrid": (
                RetrieverFactory(semantic_index=index, mode="hybrid", lexical_side=lexical),
                True,
            ),
            "hybrid-lexical": (RetrieverFactory(vault=index.vault, mode="hybrid"), True),
        }
        carried = "#ops" in query and any("#ops" in body for body in notes.values())
        for name, (retriever, best_is_one) in modes.items():
            docs = retriever.invoke(text, k=top_n)
            _assert_invariants(docs, top_n, best_is_one)
            if carried and name in ("merged", "hybrid"):
                leading = ["#ops" in d.metadata["tags"] for d in docs]
                assert leading == sorted(leading, reverse=True)
        # At most top_k = max(10, 2 x top_n) asked of each strategy.
        merged = MergedSemanticRetriever(semantic_index=index, lexical_retriever=lexical)
        assert merged._limits(top_n) == (top_n, min(top_k_for(top_n), 100))
        index.close()


class _StubCrossEncoder:
    """Stands in for sentence-transformers' CrossEncoder: longer texts score higher."""

    def __init__(self, name: str) -> None:
        self.name = name

    def predict(self, pairs: list[tuple[str, str]]) -> list[float]:
        return [float(len(text)) for _, text in pairs]


def test_the_cross_encoder_reranker_sorts_by_the_models_scores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys
    import types

    from langchain_vaultsearch import MissingExtraError
    from langchain_vaultsearch.fusion.rerankers import CrossEncoderReranker

    module = types.ModuleType("sentence_transformers")
    module.CrossEncoder = _StubCrossEncoder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    reranker = CrossEncoderReranker(model_name_or_path="/models/ce", top_n=2)
    docs = [Document("aa", id="2"), Document("a", id="1"), Document("aaa", id="3")]
    out = reranker.compress_documents(docs, "q")
    assert [d.id for d in out] == ["3", "2"]
    assert [d.metadata["relevance_score"] for d in out] == [3.0, 2.0]
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r"langchain-vaultsearch\[local\]"):
        CrossEncoderReranker()


def test_the_reranker_never_moves_a_named_note_or_an_exact_title_from_the_top(
    vault_dir: Path,
) -> None:
    vault = TieredLexicalRetriever(vault_path=str(vault_dir)).vault
    assert vault is not None
    stages = HybridStages(graph=None, recency=None, reranker=ReverseScorer(), rerank_top_n=3)
    named = _docs(["a.md", "b.md", "c.md"])
    named[0].metadata["explanation"] = {"mentioned": True}
    out = stages.apply(named, "[[a]] plans", vault, top_n=3)
    assert out[0].metadata["path"] == "a.md"
    titled = _docs(["a.md", "b.md", "c.md"])
    titled[0].metadata["explanation"] = {
        "lexicalMatches": [
            {"field": "title", "query": "rollback"},
            {"field": "title", "query": "plans"},
        ]
    }
    assert stages.apply(titled, "rollback plans", vault, top_n=3)[0].metadata["path"] == "a.md"
    # Without either, the reranker's favourite rises (ReverseScorer loves c most).
    plain = stages.apply(_docs(["a.md", "b.md", "c.md"]), "rollback plans", vault, top_n=3)
    assert plain[0].metadata["path"] == "c.md"
