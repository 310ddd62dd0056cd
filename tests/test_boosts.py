"""Folder and graph boosts: the reference's §9, §22.8 and §10 tables."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langchain_vaultsearch.search.bm25 import LexicalHit
from langchain_vaultsearch.search.boosts import (
    FolderBoostConfig,
    GraphBoostConfig,
    apply_folder_boost,
    apply_graph_boost,
)
from langchain_vaultsearch.search.chunk_cache import IndexedChunk
from langchain_vaultsearch.text.chunking import Chunk
from langchain_vaultsearch.vault import link_graph as link_graph_module
from langchain_vaultsearch.vault.link_graph import LinkGraph
from langchain_vaultsearch.vault.vault import Vault


def hit(path: str, score: float, index: int = 0) -> LexicalHit:
    title = path.rsplit("/", 1)[-1].removesuffix(".md")
    chunk = Chunk(f"{path}#{index}", path, index, f"body of {title}", "", title)
    return LexicalHit(IndexedChunk(chunk, {}), score)


def scores(hits: list[LexicalHit]) -> list[float]:
    return [h.score for h in hits]


def make_vault(root: Path, notes: dict[str, str]) -> Vault:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    vault = Vault(root)
    vault.refresh()
    return vault


# ----------------------------------------------------------------------- folder boost (§9, §22.8)


def test_notes_in_separate_folders_unchanged() -> None:
    hits = [hit("a/one.md", 0.5), hit("b/two.md", 0.4), hit("c/three.md", 0.3)]
    assert apply_folder_boost(hits, {"a": 1, "b": 1, "c": 1}) == {}
    assert scores(hits) == [0.5, 0.4, 0.3]


def test_relevant_folder_boosted_other_unchanged() -> None:
    hits = [
        hit("nextjs/a.md", 0.3),
        hit("nextjs/b.md", 0.2),
        hit("nextjs/c.md", 0.15),
        hit("tutorials/t.md", 0.1),
    ]
    boosts = apply_folder_boost(hits, {"nextjs": 5, "tutorials": 5})
    assert boosts == {
        "nextjs": {
            "folder": "nextjs",
            "documentCount": 3,
            "totalDocsInFolder": 5,
            "relevanceRatio": pytest.approx(0.6),
            "boostFactor": 1.15,
        }
    }
    assert scores(hits) == pytest.approx([0.345, 0.23, 0.1725, 0.1])


def test_ratio_below_threshold_unchanged() -> None:
    hits = [hit("big/a.md", 0.5), hit("big/b.md", 0.4), hit("big/c.md", 0.3)]
    assert apply_folder_boost(hits, {"big": 10}) == {}
    assert scores(hits) == [0.5, 0.4, 0.3]


def test_four_of_five_capped_at_default_max() -> None:
    hits = [hit(f"project/n{i}.md", 0.2) for i in range(4)]
    boosts = apply_folder_boost(hits, {"project": 5})
    assert boosts["project"]["boostFactor"] == 1.15
    assert scores(hits) == pytest.approx([0.23] * 4)
    assert all(0.2 < s <= 0.23 for s in scores(hits))


def test_custom_max_boost() -> None:
    hits = [hit(f"p/n{i}.md", 0.5) for i in range(5)]
    boosts = apply_folder_boost(hits, {"p": 5}, FolderBoostConfig(max_boost=1.2))
    assert boosts["p"]["boostFactor"] == 1.2
    assert scores(hits) == pytest.approx([0.6] * 5)


def test_min_docs_three_with_two_docs_unchanged() -> None:
    hits = [hit("p/a.md", 0.5), hit("p/b.md", 0.4)]
    assert apply_folder_boost(hits, {"p": 2}, FolderBoostConfig(min_docs=3)) == {}
    assert scores(hits) == [0.5, 0.4]


def test_min_ratio_half_with_two_of_five_unchanged() -> None:
    hits = [hit("p/a.md", 0.5), hit("p/b.md", 0.4)]
    assert apply_folder_boost(hits, {"p": 5}, FolderBoostConfig(min_relevance_ratio=0.5)) == {}
    assert scores(hits) == [0.5, 0.4]


def test_two_of_five_meets_default_ratio_exactly() -> None:
    hits = [hit("p/a.md", 0.5), hit("p/b.md", 0.4)]
    boosts = apply_folder_boost(hits, {"p": 5})
    assert boosts["p"]["relevanceRatio"] == 0.4
    assert scores(hits) == pytest.approx([0.575, 0.46])


def test_uncapped_factor_formula() -> None:
    hits = [hit("p/a.md", 1.0), hit("p/b.md", 1.0)]
    boosts = apply_folder_boost(hits, {"p": 5}, FolderBoostConfig(max_boost=10.0))
    expected = 1 + math.log2(3) * math.sqrt(0.4)
    assert boosts["p"]["boostFactor"] == pytest.approx(expected)
    assert expected == pytest.approx(2.0024, abs=1e-4)
    assert scores(hits) == pytest.approx([expected, expected])


def test_vault_root_is_a_folder() -> None:
    hits = [hit("note1.md", 0.8), hit("note2.md", 0.6), hit("folder/note5.md", 0.4)]
    boosts = apply_folder_boost(hits, {"": 4, "folder": 1})
    assert list(boosts) == [""]
    assert boosts[""]["documentCount"] == 2
    assert boosts[""]["totalDocsInFolder"] == 4
    assert scores(hits) == pytest.approx([0.92, 0.69, 0.4])


def test_deep_folder_is_not_recursive() -> None:
    hits = [hit("a/b/c/d/n1.md", 0.5), hit("a/b/c/d/n2.md", 0.4), hit("a/b/n4.md", 0.3)]
    boosts = apply_folder_boost(hits, {"a/b/c/d": 3, "a/b": 1})
    assert list(boosts) == ["a/b/c/d"]
    assert scores(hits) == pytest.approx([0.575, 0.46, 0.3])


def test_unknown_folder_uses_its_result_count() -> None:
    hits = [hit("folder/note1.md", 0.5), hit("folder/note2.md", 0.4)]
    boosts = apply_folder_boost(hits, {})
    assert boosts["folder"]["totalDocsInFolder"] == 2
    assert boosts["folder"]["relevanceRatio"] == 1.0
    assert scores(hits) == pytest.approx([0.575, 0.46])


def test_every_chunk_of_a_boosted_folder_increases() -> None:
    hits = [hit(f"f/n{n}.md", 0.5 - 0.1 * n, c) for n in range(3) for c in range(2)]
    before = scores(hits)
    boosts = apply_folder_boost(hits, {"f": 3})
    assert boosts["f"]["documentCount"] == 3
    assert scores(hits) == pytest.approx([s * 1.15 for s in before])


def test_chunks_of_one_note_count_once() -> None:
    hits = [hit(f"f/n{n}.md", 0.5, c) for n in range(2) for c in range(3)]
    assert apply_folder_boost(hits, {"f": 10}) == {}
    assert scores(hits) == [0.5] * 6


def test_single_note_with_many_chunks_never_boosted() -> None:
    hits = [hit("f/only.md", 0.5, c) for c in range(4)]
    assert apply_folder_boost(hits, {"f": 1}) == {}
    assert scores(hits) == [0.5] * 4


def test_folder_boost_explanation_map() -> None:
    hits = [
        hit("nextjs/a.md", 0.3),
        hit("nextjs/b.md", 0.2),
        hit("nextjs/c.md", 0.15),
        hit("tutorials/t.md", 0.1),
    ]
    boosts = apply_folder_boost(hits, {"nextjs": 5, "tutorials": 1})
    assert len(boosts) == 1
    assert boosts["nextjs"]["documentCount"] == 3
    assert boosts["nextjs"]["totalDocsInFolder"] == 5
    assert boosts["nextjs"]["relevanceRatio"] == pytest.approx(0.6)


def test_folder_boost_keeps_list_order() -> None:
    hits = [hit("x/low.md", 0.1), hit("y/high.md", 0.9), hit("x/low2.md", 0.05)]
    apply_folder_boost(hits, {"x": 2, "y": 1})
    assert [h.id for h in hits] == ["x/low.md#0", "y/high.md#0", "x/low2.md#0"]
    assert scores(hits) == pytest.approx([0.115, 0.9, 0.0575])


def test_folder_boost_with_vault_folder_sizes(tmp_path: Path) -> None:
    vault = make_vault(
        tmp_path,
        {"p/a.md": "a", "p/b.md": "b", "p/c.md": "c", "p/sub/d.md": "d", "root.md": "r"},
    )
    sizes = vault.folder_sizes()
    assert sizes == {"p": 3, "p/sub": 1, "": 1}
    hits = [hit("p/a.md", 1.0), hit("p/b.md", 1.0)]
    boosts = apply_folder_boost(hits, sizes)
    assert boosts["p"]["totalDocsInFolder"] == 3
    assert scores(hits) == pytest.approx([1.15, 1.15])


# --------------------------------------------------------------------------- graph boost (§10)


@pytest.mark.parametrize(
    ("linkers", "score", "multiplier"),
    [
        (1, 1.0, 1.06931),
        (2, 2.0, 1.10986),
        (3, 3.0, 1.13863),
        (4, 4.0, 1.15),
    ],
)
def test_backlink_multipliers(
    tmp_path: Path, linkers: int, score: float, multiplier: float
) -> None:
    notes = {"Target.md": "the target"}
    notes.update({f"Src{i}.md": "see [[Target]]" for i in range(linkers)})
    vault = make_vault(tmp_path, notes)
    hits = [hit("Target.md", 1.0), *(hit(f"Src{i}.md", 1.0) for i in range(linkers))]
    connections = apply_graph_boost(hits, vault)
    assert list(connections) == ["Target.md"]
    assert connections["Target.md"] == {
        "backlinks": linkers,
        "coCitations": 0,
        "sharedTags": 0,
        "score": score,
        "boostMultiplier": pytest.approx(multiplier, abs=5e-6),
    }
    assert hits[0].score == pytest.approx(multiplier, abs=5e-6)
    assert scores(hits[1:]) == [1.0] * linkers


def test_shared_tag_multiplier(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"A.md": "about #piano", "B.md": "also #piano", "C.md": "#other"})
    hits = [hit("A.md", 1.0), hit("B.md", 0.5), hit("C.md", 0.2)]
    connections = apply_graph_boost(hits, vault)
    expected = {
        "backlinks": 0,
        "coCitations": 0,
        "sharedTags": 1,
        "score": pytest.approx(0.3),
        "boostMultiplier": pytest.approx(1.02624, abs=5e-6),
    }
    assert connections == {"A.md": expected, "B.md": expected}
    assert scores(hits) == pytest.approx([1.0262364, 0.5131182, 0.2])


def test_co_citation_multiplier(tmp_path: Path) -> None:
    # Hub links both X and Y but is not a candidate: X and Y are co-cited, nothing else.
    vault = make_vault(tmp_path, {"Hub.md": "[[X]] and [[Y]]", "X.md": "x", "Y.md": "y"})
    hits = [hit("X.md", 1.0), hit("Y.md", 1.0)]
    connections = apply_graph_boost(hits, vault)
    expected = {
        "backlinks": 0,
        "coCitations": 1,
        "sharedTags": 0,
        "score": 0.5,
        "boostMultiplier": pytest.approx(1.04055, abs=5e-6),
    }
    assert connections == {"X.md": expected, "Y.md": expected}


def test_backlinks_and_co_citations_combine(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"A.md": "[[B]] [[C]]", "B.md": "[[C]]", "C.md": "no links"})
    hits = [hit("A.md", 1.0), hit("B.md", 1.0), hit("C.md", 1.0)]
    connections = apply_graph_boost(hits, vault)
    assert set(connections) == {"B.md", "C.md"}
    assert connections["B.md"]["backlinks"] == 1
    assert connections["B.md"]["coCitations"] == 1
    assert connections["B.md"]["score"] == 1.5
    assert connections["C.md"]["backlinks"] == 2
    assert connections["C.md"]["coCitations"] == 1
    assert connections["C.md"]["score"] == 2.5
    assert scores(hits) == pytest.approx([1.0, 1 + 0.1 * math.log(2.5), 1 + 0.1 * math.log(3.5)])


def test_non_candidate_backlink_not_counted(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"Outside.md": "[[A]]", "A.md": "a", "B.md": "b"})
    hits = [hit("A.md", 1.0), hit("B.md", 1.0)]
    assert apply_graph_boost(hits, vault) == {}
    assert scores(hits) == [1.0, 1.0]


def test_fewer_than_two_notes_no_boost(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"A.md": "[[A]] #t", "B.md": "[[A]] #t"})
    hits = [hit("A.md", 1.0, 0), hit("A.md", 0.5, 1)]
    assert apply_graph_boost(hits, vault) == {}
    assert scores(hits) == [1.0, 0.5]


def test_every_chunk_of_a_connected_note_boosted_and_order_kept(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"A.md": "[[B]]", "B.md": "b"})
    hits = [hit("A.md", 0.9, 0), hit("B.md", 0.5, 0), hit("A.md", 0.4, 1), hit("B.md", 0.1, 1)]
    connections = apply_graph_boost(hits, vault)
    factor = 1 + 0.1 * math.log(2)
    assert list(connections) == ["B.md"]
    assert [h.id for h in hits] == ["A.md#0", "B.md#0", "A.md#1", "B.md#1"]
    assert scores(hits) == pytest.approx([0.9, 0.5 * factor, 0.4, 0.1 * factor])


def test_tags_compared_case_insensitively_including_frontmatter(tmp_path: Path) -> None:
    vault = make_vault(
        tmp_path, {"A.md": "#Piano practice", "B.md": "---\ntags: [piano]\n---\nbody"}
    )
    connections = apply_graph_boost([hit("A.md", 1.0), hit("B.md", 1.0)], vault)
    assert connections["A.md"]["sharedTags"] == 1
    assert connections["B.md"]["sharedTags"] == 1


def test_only_first_max_candidates_notes_analysed(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"A.md": "a", "B.md": "b", "C.md": "[[A]] [[B]]"})
    hits = [hit("A.md", 1.0), hit("B.md", 1.0), hit("C.md", 1.0)]
    connections = apply_graph_boost(hits, vault, GraphBoostConfig(max_candidates=2))
    # C links both but is beyond the candidates: A and B are only co-cited.
    assert connections["A.md"]["backlinks"] == 0
    assert connections["A.md"]["coCitations"] == 1
    assert "C.md" not in connections
    assert hits[2].score == 1.0


def test_unresolved_links_ignored(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"A.md": "[[Missing]]", "B.md": "b"})
    hits = [hit("A.md", 1.0), hit("B.md", 1.0)]
    assert apply_graph_boost(hits, vault) == {}


def test_custom_cap(tmp_path: Path) -> None:
    vault = make_vault(tmp_path, {"A.md": "[[B]]", "B.md": "b"})
    hits = [hit("A.md", 1.0), hit("B.md", 1.0)]
    connections = apply_graph_boost(hits, vault, GraphBoostConfig(max_boost=1.01))
    assert connections["B.md"]["boostMultiplier"] == 1.01
    assert hits[1].score == 1.01


@given(
    st.lists(st.lists(st.integers(0, 11), max_size=6), min_size=2, max_size=12),
    st.sets(st.integers(0, 11), max_size=8),
)
@settings(max_examples=200, deadline=None)
def test_co_citations_are_the_links_of_every_note_linking_to_one(
    links: list[list[int]], among: set[int]
) -> None:
    """`co_cited` gathers over the rows what the outlinks of each backlink would give."""
    paths = [f"N{i}.md" for i in range(len(links))]
    graph = LinkGraph.from_links(
        {path: number for number, path in enumerate(paths)},
        {},
        ([f"N{t}" for t in targets] for targets in links),
    )
    wanted = {f"N{i}.md" for i in among}
    for path in paths:
        expected: set[str] = set()
        for source in graph.backlinks(path):
            expected |= graph.outlinks(source) & wanted
        expected.discard(path)
        assert graph.co_cited(path, wanted) == expected


def test_a_link_target_is_resolved_once_however_many_notes_link_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resolved: list[str] = []
    real_resolve = link_graph_module._Names.resolve

    def counting(self: object, name: str) -> str | None:
        resolved.append(name)
        return real_resolve(self, name)  # type: ignore[arg-type]

    monkeypatch.setattr(link_graph_module._Names, "resolve", counting)
    paths = ["Hub.md", "A.md", "B.md", "C.md"]
    graph = LinkGraph.from_links(
        {path: number for number, path in enumerate(paths)},
        {"Hub.md": ["Centre"]},
        [[], ["Hub", "Missing"], ["Hub", "Centre"], ["Hub", "Missing", "A"]],
    )
    assert sorted(resolved) == ["A", "Centre", "Hub", "Missing"]
    assert graph.backlinks("Hub.md") == {"A.md", "B.md", "C.md"}
    assert graph.outlinks("C.md") == {"Hub.md", "A.md"}
