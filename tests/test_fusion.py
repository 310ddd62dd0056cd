"""fuse(): the seed's blend cases (reference §22.10), RRF, calibrated, and the invariants."""

from __future__ import annotations

import random

import pytest
from langchain_core.documents import Document

from langchain_vaultsearch.fusion.scores import (
    COVERAGE_FLOOR,
    FUSION_METHODS,
    MIN_COVERAGE,
    FusionMethod,
    FusionWeights,
    fuse,
    lexical_coverage,
)

TAG_MATCH = {"lexicalMatches": [{"field": "tags", "term": "project"}]}


def doc(chunk_id: str, score: float, source: str, explanation: dict | None = None) -> Document:
    return Document(
        page_content=f"text of {chunk_id} from {source}",
        metadata={
            "path": chunk_id.rsplit("#", 1)[0],
            "chunkId": chunk_id,
            "score": score,
            "rerank_score": score,
            "source": source,
            "explanation": explanation or {},
        },
        id=chunk_id,
    )


def test_blend_lexical_wins_a_collision_even_with_a_lower_score() -> None:
    fused = fuse(
        [doc("note.md#0", 0.8, "lexical", TAG_MATCH)],
        [doc("note.md#0", 0.9, "semantic")],
        limit=10,
        method="blend",
    )
    assert len(fused) == 1
    assert fused[0].metadata["source"] == "lexical"


def test_blend_boosts_tag_matches_and_keeps_both_chunks() -> None:
    fused = fuse(
        [doc("note.md#0", 0.7, "lexical", TAG_MATCH)],
        [doc("note.md#1", 0.9, "semantic")],
        limit=10,
        method="blend",
    )
    scores = {d.id: d.metadata["score"] for d in fused}
    assert scores["note.md#0"] == pytest.approx(0.77)
    assert scores["note.md#1"] == pytest.approx(0.9)
    assert [d.id for d in fused] == ["note.md#1", "note.md#0"]


def test_duplicates_within_a_side_keep_the_best() -> None:
    fused = fuse(
        [doc("a.md#0", 0.4, "lexical"), doc("a.md#0", 0.85, "lexical")], [], limit=5, method="blend"
    )
    assert [(d.id, d.metadata["score"]) for d in fused] == [("a.md#0", 0.85)]
    fused = fuse(
        [],
        [doc("b.md#0", 0.3, "semantic"), doc("b.md#0", 0.6, "semantic")],
        limit=5,
        method="blend",
    )
    assert [(d.id, d.metadata["source"], d.metadata["score"]) for d in fused] == [
        ("b.md#0", "semantic", 0.6)
    ]


def test_calibrated_puts_chunks_both_sides_found_first() -> None:
    lexical = [
        doc("a.md#0", 0.98, "lexical"),
        doc("b.md#0", 0.5, "lexical"),
        doc("c.md#0", 0.02, "lexical"),
    ]
    semantic = [
        doc("d.md#0", 0.7, "semantic"),
        doc("b.md#0", 0.6, "semantic"),
        doc("e.md#0", 0.3, "semantic"),
    ]
    fused = fuse(lexical, semantic, limit=10, method="calibrated")
    by_id = {d.id: d for d in fused}
    # b: 0.5 of the lexical range and 0.75 of the semantic range, found by both.
    assert by_id["b.md#0"].metadata["score"] == pytest.approx((0.5 + 0.75) / 2, abs=0.01)
    assert by_id["b.md#0"].metadata["source"] == "lexical"
    assert by_id["b.md#0"].metadata["explanation"]["fusion"]["semantic"] == pytest.approx(0.75)
    assert [d.id for d in fused][:3] == ["b.md#0", "a.md#0", "d.md#0"]


def test_rrf_scores_ranks_not_scales() -> None:
    lexical = [doc("a.md#0", 0.98, "lexical"), doc("b.md#0", 0.97, "lexical")]
    semantic = [doc("b.md#0", 0.31, "semantic"), doc("c.md#0", 0.30, "semantic")]
    fused = fuse(lexical, semantic, limit=10, method="rrf", weights=FusionWeights(rrf_k=60))
    assert [d.id for d in fused] == ["b.md#0", "a.md#0", "c.md#0"]
    assert fused[1].metadata["score"] == pytest.approx(0.5)


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_invariants_hold_for_random_lists(method: str) -> None:
    rng = random.Random(method)
    for _ in range(30):
        lexical = [
            doc(f"n{rng.randrange(15)}.md#{rng.randrange(3)}", rng.random(), "lexical")
            for _ in range(rng.randrange(0, 25))
        ]
        semantic = [
            doc(f"n{rng.randrange(15)}.md#{rng.randrange(3)}", rng.random(), "semantic")
            for _ in range(rng.randrange(0, 25))
        ]
        limit = rng.randrange(1, 12)
        fused = fuse(lexical, semantic, limit=limit, method=method)  # type: ignore[arg-type]
        ids = [d.id for d in fused]
        scores = [d.metadata["score"] for d in fused]
        assert len(fused) <= limit
        assert len(ids) == len(set(ids))
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)
        assert all(d.metadata["score"] == d.metadata["rerank_score"] for d in fused)
        assert len(fused) == min(limit, len({d.id for d in [*lexical, *semantic]}))


def test_inputs_are_not_modified_and_bad_options_are_refused() -> None:
    original = doc("a.md#0", 0.5, "lexical")
    fuse([original], [], limit=1)
    assert original.metadata["score"] == 0.5
    assert "fusion" not in original.metadata["explanation"]
    with pytest.raises(ValueError, match="fusion must be one of"):
        fuse([], [], limit=1, method="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit"):
        fuse([], [], limit=0)
    with pytest.raises(ValueError, match="weights"):
        FusionWeights(lexical=0, semantic=0)


def test_an_empty_side_does_not_halve_the_other() -> None:
    fused = fuse([doc("a.md#0", 0.98, "lexical"), doc("b.md#0", 0.4, "lexical")], [], limit=5)
    assert [d.metadata["score"] for d in fused] == [1.0, 0.0]


def lexical_hit(chunk_id: str, score: float, *terms: str) -> Document:
    matches = [{"field": "body", "query": term, "weight": 1.0} for term in terms]
    return doc(chunk_id, score, "lexical", {"lexicalMatches": matches})


def test_lexical_coverage_counts_the_query_terms_the_best_hits_contain() -> None:
    hits = [lexical_hit("a.md#0", 0.98, "row"), lexical_hit("b.md#0", 0.5, "same", "databases")]
    assert lexical_coverage(hits, ["row", "database", "locking", "same"]) == 0.5
    assert lexical_coverage(hits, ["#ops"]) == 1.0  # tags are not counted
    assert lexical_coverage([], ["row"]) == 0.0
    assert lexical_coverage([lexical_hit("c.md#0", 0.9, "同步", "步服")], ["同步服务"]) == 2 / 3


def test_calibrated_trusts_lexical_as_far_as_it_matched_the_query() -> None:
    lexical = [lexical_hit("weak.md#0", 0.98, "same"), lexical_hit("other.md#0", 0.02, "row")]
    semantic = [
        doc("locking.md#0", 0.62, "semantic"),
        doc("weak.md#0", 0.40, "semantic"),
        doc("x.md#0", 0.30, "semantic"),
    ]
    terms = ["stop", "writers", "changing", "same", "row", "moment"]
    plain = fuse(lexical, semantic, limit=3)
    weighted = fuse(lexical, semantic, limit=3, query_terms=terms)
    assert plain[0].id == "weak.md#0"  # min-max crowned a one-word match
    assert weighted[0].id == "locking.md#0"
    # 1 of 6 words covered is below COVERAGE_FLOOR: the lexical side only breaks ties.
    assert weighted[0].metadata["score"] == pytest.approx(1 / (1 + MIN_COVERAGE))


def test_rare_terms_weigh_more_in_the_coverage_and_unknown_ones_not_at_all() -> None:
    hits = [lexical_hit("a.md#0", 0.98, "que", "una", "web")]
    terms = ["que", "una", "ciega", "web"]
    assert lexical_coverage(hits, terms) == 0.75
    rarity = {"que": 0.1, "una": 0.1, "ciega": 3.0, "web": 1.0}
    assert lexical_coverage(hits, terms, rarity) == pytest.approx(1.2 / 4.2)
    assert lexical_coverage(hits, terms, {**rarity, "ciega": 0.0}) == 1.0  # no note holds it


def test_a_cjk_bigram_counts_once_however_rare_where_two_words_meet() -> None:
    # 设置保存在文件夹: the best hit holds the words; 置保 and 夹里-like bigrams across two
    # words are the rarest terms, yet say nothing about how well the hit matched.
    hits = [lexical_hit("a.md#0", 0.98, "设置", "保存", "文件", "件夹")]
    terms = ["设置保存", "文件夹"]
    rarity = {"设置": 0.4, "置保": 4.75, "保存": 1.3, "文件": 0.3, "件夹": 1.1}
    assert lexical_coverage(hits, terms, rarity) == 4 / 5
    assert lexical_coverage(hits, terms, {**rarity, "置保": 0.0}) == 1.0  # no note holds it
    assert lexical_coverage(hits, ["设置", "use"], {"设置": 0.4, "use": 3.0}) == 1 / 4


def test_coverage_at_the_floor_leaves_lexical_only_the_ties() -> None:
    lexical = [lexical_hit("weak.md#0", 0.98, "web"), lexical_hit("x.md#0", 0.5, "web")]
    semantic = [doc("good.md#0", 0.6, "semantic"), doc("y.md#0", 0.3, "semantic")]
    terms = ["persona", "ciega", "pueda", "web"]  # a quarter covered, below the floor
    assert COVERAGE_FLOOR >= 1 / 4
    fused = fuse(lexical, semantic, limit=4, query_terms=terms)
    assert fused[0].id == "good.md#0"
    assert fused[1].metadata["score"] == pytest.approx(MIN_COVERAGE / (1 + MIN_COVERAGE))


def test_a_lower_coverage_floor_gives_the_lexical_side_more_weight() -> None:
    # Half the words covered: under a floor of 0.5 the lexical side only breaks ties, with
    # no floor it weighs 0.5, enough for the note both sides found to come first.
    lexical = [lexical_hit("both.md#0", 0.98, "persona", "web"), lexical_hit("x.md#0", 0.02, "web")]
    semantic = [
        doc("good.md#0", 0.6, "semantic"),
        doc("both.md#0", 0.5, "semantic"),
        doc("y.md#0", 0.3, "semantic"),
    ]
    terms = ["persona", "ciega", "pueda", "web"]
    assert lexical_coverage(lexical, terms) == 0.5

    def fused(floor: float) -> list[Document]:
        weights = FusionWeights(coverage_floor=floor)
        return fuse(lexical, semantic, limit=5, weights=weights, query_terms=terms)

    high, none = fused(0.5), fused(0.0)
    assert [d.id for d in high][:2] == ["good.md#0", "both.md#0"]
    assert high[1].metadata["score"] == pytest.approx((MIN_COVERAGE + 2 / 3) / (1 + MIN_COVERAGE))
    assert [d.id for d in none][:2] == ["both.md#0", "good.md#0"]
    assert none[0].metadata["score"] == pytest.approx((0.5 + 2 / 3) / 1.5)
    # The default is the module's constant.
    assert FusionWeights().coverage_floor == COVERAGE_FLOOR
    assert [d.id for d in fuse(lexical, semantic, limit=5, query_terms=terms)] == [
        d.id for d in fused(COVERAGE_FLOOR)
    ]


@pytest.mark.parametrize("floor", [-0.1, 1.0, 1.5, float("nan")])
def test_a_coverage_floor_outside_0_to_1_is_refused(floor: float) -> None:
    with pytest.raises(ValueError, match="coverage_floor must be >= 0 and < 1"):
        FusionWeights(coverage_floor=floor)


def title_hit(chunk_id: str, score: float, term: str) -> Document:
    matches = [{"field": "title", "query": term, "weight": 5.0}]
    return doc(chunk_id, score, "lexical", {"lexicalMatches": matches})


def test_one_word_in_a_title_keeps_the_lexical_order() -> None:
    lexical = [
        title_hit("Scrum.md#0", 0.98, "scrum"),
        lexical_hit("Roles.md#0", 0.5, "scrum"),
        lexical_hit("Sprint.md#0", 0.1, "scrum"),
    ]
    semantic = [doc("Agile.md#0", 0.7, "semantic"), doc("Roles.md#0", 0.6, "semantic")]
    fused = fuse(lexical, semantic, limit=3, query_terms=["#scrum", "scrum"])
    # The semantic side has no say: `Sprint` (lexical 3rd, scaled to 0) and `Agile`
    # (semantic only) tie at 0, and the tie keeps the lexical order, not the alphabet's.
    assert [d.id for d in fused] == ["Scrum.md#0", "Roles.md#0", "Sprint.md#0"]
    # A word only a note's text holds leaves the semantic side its say: its best note
    # weighs as much as the lexical one (a title hit would leave it 0).
    body_only = [lexical_hit("Daily.md#0", 0.98, "scrum")]
    scores = {
        d.id: d.metadata["score"] for d in fuse(body_only, semantic, limit=3, query_terms=["scrum"])
    }
    assert scores["Agile.md#0"] == scores["Daily.md#0"] > 0


def test_depth_and_note_scores() -> None:
    lexical = [doc(f"l{i}.md#0", 1.0 - i / 10, "lexical") for i in range(6)]
    semantic = [doc("l3.md#2", 0.7, "semantic"), doc("s.md#0", 0.4, "semantic")]
    deep = fuse(lexical, semantic, limit=10, depth=3)
    scores = {d.id: d.metadata["explanation"]["fusion"]["lexical"] for d in deep}
    assert scores["l0.md#0"] == 1.0
    assert scores["l2.md#0"] == 0.0
    assert scores["l4.md#0"] == 0.0  # below the depth
    by_note = fuse(lexical, semantic, limit=10, note_scores=True)
    lifted = {d.id: d.metadata["explanation"]["fusion"] for d in by_note}
    assert lifted["l3.md#0"]["semantic"] == 1.0  # its note's best semantic chunk
    assert lifted["l3.md#2"]["lexical"] == pytest.approx(0.4)  # its note's lexical score


def test_notes_tied_at_zero_keep_the_order_their_side_gave_them() -> None:
    # An English-only model skipped a Chinese query: only lexical search answered, and
    # below its k-th note every score is 0. They keep lexical search's order, not the
    # alphabet's (`Calendar/2023-04-09.md` took the last place from a ranked note).
    lexical = [doc(f"{name}.md#0", 0.9 - i / 10, "lexical") for i, name in enumerate("zyxwv")]
    fused = fuse(lexical, [], limit=5, depth=2)
    assert [d.metadata["explanation"]["fusion"]["lexical"] for d in fused][1:] == [0.0] * 4
    assert [d.id for d in fused] == [d.id for d in lexical]


def test_depth_counts_notes_not_the_sections_of_one_long_note() -> None:
    # A long note's five sections lead the lexical list; the next notes still rank, in
    # the lexical order, instead of all falling to 0 below "the best 3".
    long_note = [doc(f"Long.md#{i}", 0.98 - i / 100, "lexical") for i in range(5)]
    others = [doc(f"n{i}.md#0", 0.5 - i / 10, "lexical") for i in range(4)]
    fused = fuse([*long_note, *others], [], limit=20, depth=3)
    lexical = {d.id: d.metadata["explanation"]["fusion"]["lexical"] for d in fused}
    assert lexical["n0.md#0"] > lexical["n1.md#0"] == 0.0  # n1 is the 3rd note: the 0
    assert lexical["Long.md#4"] > lexical["n0.md#0"] > 0.0
    # A chunk without a path is its own note.
    pathless = [
        Document(page_content="x", metadata={"score": 0.9 - i / 10}, id=f"c{i}") for i in range(4)
    ]
    ranked = fuse(pathless, [], limit=4, depth=2)
    assert [d.metadata["explanation"]["fusion"]["lexical"] for d in ranked][1:] == [0.0, 0.0, 0.0]


def flagged(chunk_id: str, score: float, source: str, shown: bool) -> Document:
    found = doc(chunk_id, score, source, {"baseScore": score * 10, "finalScore": score})
    found.metadata["includeInContext"] = shown
    return found


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_with_both_sides_the_fused_score_decides_what_is_shown(method: FusionMethod) -> None:
    """The lexical document kept on a collision carried lexical search's verdict alone: a
    note it found weakly and the model strongly stayed out of the context. And every
    semantic hit is flagged shown: those the fusion scored 0 were shown too."""
    lexical = [
        flagged("practice.md#0", 0.98, "lexical", True),
        flagged("lesson.md#0", 0.05, "lexical", False),
        flagged("weak.md#0", 0.02, "lexical", False),
    ]
    semantic = [
        doc("lesson.md#0", 0.9, "semantic"),
        doc("practice.md#0", 0.8, "semantic"),
        doc("far.md#0", 0.01, "semantic"),
    ]
    for d in semantic:
        d.metadata["includeInContext"] = True
    fused = fuse(lexical, semantic, limit=10, method=method, context_share=0.1)
    shown = {d.id: d.metadata["includeInContext"] for d in fused}
    # The original's blend keeps a collision's lexical score, and with it the verdict.
    assert shown["lesson.md#0"] is (method != "blend")
    best = fused[0].metadata["score"]
    for d in fused:
        assert d.metadata["includeInContext"] == (d.metadata["score"] >= 0.1 * best)
    if method == "calibrated":
        assert shown["far.md#0"] is False
    for d in fused:
        assert d.metadata["explanation"]["finalScore"] == d.metadata["score"]
    assert lexical[1].metadata["includeInContext"] is False  # inputs unchanged
    assert lexical[1].metadata["explanation"]["finalScore"] == 0.05


def test_with_one_side_empty_the_context_shows_what_the_other_would() -> None:
    """Min-max puts a side's k-th note at 0: a share of the best fused score hid results
    lexical search alone shows when the semantic side failed or skipped the query."""
    lexical = [flagged(f"n{i}.md#0", 0.98 - i / 10, "lexical", True) for i in range(5)]
    lexical.append(flagged("tail.md#0", 0.02, "lexical", False))
    fused = fuse(lexical, [], limit=10, depth=5)
    assert [d.metadata["includeInContext"] for d in fused] == [True] * 5 + [False]
    assert fused[4].metadata["score"] == 0.0  # the 5th note is at the floor, and shown
