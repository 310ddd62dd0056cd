"""The notes a query asks for lead: tagged and named notes."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document

from langchain_vaultsearch.fusion.asked_first import (
    asked_first,
    named_first,
    named_notes,
)
from langchain_vaultsearch.vault.vault import Vault
from tests.conftest import write_vault


def doc(path: str, score: float) -> Document:
    return Document(
        page_content=f"text of {path}",
        metadata={"path": path, "score": score, "rerank_score": score, "explanation": {}},
        id=f"{path}#0",
    )


def scores(docs: list[Document]) -> list[float]:
    return [d.metadata["score"] for d in docs]


def test_the_others_follow_below_the_weakest_tagged_note_in_their_own_order() -> None:
    tagged = [doc("go/a.md", 0.6), doc("go/b.md", 0.2)]
    others = [doc("x.md", 0.9), doc("y.md", 0.45), doc("z.md", 0.1)]
    found = asked_first(tagged, others, 4)
    assert [d.metadata["path"] for d in found] == ["go/a.md", "go/b.md", "x.md", "y.md"]
    assert scores(found)[:2] == [0.6, 0.2]
    assert 0.2 > scores(found)[2] > scores(found)[3]
    assert scores(found)[3] / scores(found)[2] == 0.45 / 0.9  # one factor: ratios kept
    assert found[2].metadata["explanation"]["fusion"]["fusedScore"] == 0.9
    assert others[0].metadata["score"] == 0.9  # inputs unchanged


def test_enough_tagged_notes_leave_no_place() -> None:
    tagged = [doc(f"t{i}.md", 1.0 - i / 10) for i in range(5)]
    assert asked_first(tagged, [doc("x.md", 0.99)], 3) == tagged[:3]
    assert asked_first(tagged, [doc("x.md", 0.99)], 5) == tagged


def test_others_already_below_and_no_tagged_document_keep_their_scores() -> None:
    low = [doc("x.md", 0.1)]
    assert asked_first([doc("t.md", 0.5)], low, 5)[1] is low[0]
    assert asked_first([], [doc("x.md", 0.9)], 5)[0].metadata["score"] == 0.9
    zero = asked_first([doc("t.md", 0.0)], [doc("x.md", 0.7)], 5)
    assert scores(zero) == [0.0, 0.0]


ranked = st.lists(st.floats(0.0, 1.0), max_size=8).map(lambda xs: sorted(xs, reverse=True))


@given(ranked, ranked, st.integers(1, 12))
def test_scores_descend_and_every_tagged_document_leads(
    tagged_scores: list[float], other_scores: list[float], limit: int
) -> None:
    tagged = [doc(f"t{i}.md", s) for i, s in enumerate(tagged_scores)]
    others = [doc(f"o{i}.md", s) for i, s in enumerate(other_scores)]
    found = asked_first(tagged, others, limit)
    assert len(found) == min(limit, len(tagged) + len(others))
    assert scores(found) == sorted(scores(found), reverse=True)
    leading = [d.metadata["path"].startswith("t") for d in found]
    assert leading == sorted(leading, reverse=True)
    assert [d.metadata["path"] for d in found if d.metadata["path"].startswith("o")] == [
        d.metadata["path"] for d in others[: len(found) - min(limit, len(tagged))]
    ]


def test_named_notes_lead_and_the_rest_keep_their_order_below() -> None:
    docs = [doc("a.md", 0.9), doc("named.md", 0.4), doc("b.md", 0.3), doc("named.md", 0.2)]
    found = named_first(docs, {"named.md"})
    assert [d.metadata["path"] for d in found] == ["named.md", "named.md", "a.md", "b.md"]
    assert scores(found) == sorted(scores(found), reverse=True)
    assert scores(found)[0] == 0.9  # the list keeps its best score
    assert scores(found)[1] / scores(found)[0] == 0.2 / 0.4
    assert named_first(docs, {"elsewhere.md"}) == docs
    assert named_first(docs, set()) == docs


def test_named_notes_resolve_as_obsidian_links(tmp_path: Path) -> None:
    vault = Vault(write_vault(tmp_path / "v", {"Folder/Some Note.md": "x", "Other.md": "y"}))
    vault.refresh()
    assert named_notes("what is in [[some note#Part|alias]] and [[Missing]]?", vault) == {
        "Folder/Some Note.md"
    }
    assert named_notes("no names here", vault) == frozenset()


def test_what_the_query_asks_for_is_shown_however_weakly_its_words_match() -> None:
    weak = doc("named.md", 0.01)
    weak.metadata["includeInContext"] = False
    hidden = doc("b.md", 0.005)
    hidden.metadata["includeInContext"] = False
    found = named_first([doc("a.md", 0.9), weak, hidden], {"named.md"})
    assert [(d.metadata["path"], d.metadata.get("includeInContext")) for d in found] == [
        ("named.md", True),
        ("a.md", None),
        ("b.md", False),
    ]
    assert weak.metadata["includeInContext"] is False  # inputs unchanged
    tagged = asked_first([weak], [doc("x.md", 0.9)], 2)
    assert tagged[0].metadata["includeInContext"] is True
