"""Recall (`Vocabulary`, `SortedTerms`, `RecallIndex`) on real tmp vaults."""

from __future__ import annotations

import gc
import math
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from langchain_vaultsearch.search.recall import (
    BULK_NOTES,
    COMPACT_DELTA_NOTES,
    FUZZY_WEIGHT,
    MAX_PREFIX_EXPANSIONS,
    PREFIX_WEIGHT,
    RecallIndex,
    SortedTerms,
    Vocabulary,
)
from langchain_vaultsearch.search.vault_documents import apply_changes
from langchain_vaultsearch.vault.note_info import VaultChanges
from langchain_vaultsearch.vault.vault import Vault
from tests.search_helpers import open_vault, prefix_weight, rewrite, vocabulary, write


def idf(total: int, found: int) -> float:
    return math.log(1.0 + (total - found + 0.5) / (found + 0.5))


def paths(ranked: list[tuple[str, float]]) -> list[str]:
    return [path for path, _score in ranked]


# --------------------------------------------------------------------------- Vocabulary


def test_vocabulary_expands_prefix_closest_length_first() -> None:
    vocab = vocabulary("deploy", "deployment", "deployed", "depth", "redeploy")
    assert vocab.expand("deploy") == [
        ("deploy", 1.0),
        ("deployed", pytest.approx(prefix_weight("deploy", "deployed"))),
        ("deployment", pytest.approx(prefix_weight("deploy", "deployment"))),
    ]
    assert prefix_weight("deploy", "deployment") == pytest.approx(0.3348214)


def test_vocabulary_term_not_indexed_still_comes_first() -> None:
    assert vocabulary("deployment").expand("deploy") == [
        ("deploy", 1.0),
        ("deployment", pytest.approx(0.3348214)),
    ]


def test_a_term_in_no_note_is_matched_to_words_a_typo_away() -> None:
    vocab = vocabulary("indexing", "indexes", "index", "postgresql", "replication", "ink")
    # 7 letters: one edit ("indxing" -> "indexing" inserts an e).
    assert vocab.expand("indxing") == [("indxing", 1.0), ("indexing", FUZZY_WEIGHT)]
    # Two neighbouring letters swapped, the commonest slip, are one edit, not two.
    assert vocabulary("machine").expand("machien") == [("machien", 1.0), ("machine", FUZZY_WEIGHT)]
    # 8+ letters: two edits.
    assert ("replication", FUZZY_WEIGHT) in vocab.expand("replcaton")
    # Within 1 edit only below 8 letters: "indxs" is 2 away from "index" ("indexes" 2).
    assert vocab.expand("indxs") == [("indxs", 1.0)]
    # A real word or a prefix is never "corrected"; short terms, longer CJK terms neither.
    assert [t for t, _ in vocab.expand("index")] == ["index", "indexes", "indexing"]
    assert vocab.expand("inx") == [("inx", 1.0)]
    assert vocabulary("学习笔记").expand("学习笔计") == [("学习笔计", 1.0)]
    assert prefix_weight("a", "a" * 200) > FUZZY_WEIGHT  # below any prefix match


def test_a_chinese_bigram_in_no_note_is_matched_to_bigrams_that_sound_alike() -> None:
    vocab = vocabulary("轻断", "青断", "断食", "入睡", "开口")
    # 清 for 轻 or 青 (all qing): a pinyin input method's slip, in either character.
    assert vocab.expand("清断") == [("清断", 1.0), ("轻断", FUZZY_WEIGHT), ("青断", FUZZY_WEIGHT)]
    assert vocab.expand("如睡") == [("如睡", 1.0), ("入睡", FUZZY_WEIGHT)]
    # A bigram some note holds is never corrected, and one that sounds like none is left.
    assert vocab.expand("断食") == [("断食", 1.0)]
    assert vocab.expand("却口") == [("却口", 1.0)]  # que is not kai
    assert vocabulary("かな").expand("かに") == [("かに", 1.0)]


def test_only_a_bigram_of_two_chinese_characters_has_slips_by_sound() -> None:
    vocab = vocabulary("雪の", "の面", "轻断")
    assert vocab.expand("学の") == [("学の", 1.0)]  # kana has no Mandarin reading
    assert vocab.expand("の勉") == [("の勉", 1.0)]
    assert vocab.expand("清断", by_sound=False) == [("清断", 1.0)]  # a Japanese query
    # A bigram is a whole term: one some note holds is not expanded to longer terms.
    assert vocabulary("习惯", "习惯养成").expand("习惯") == [("习惯", 1.0)]


def test_slips_by_sound_the_most_notes_hold_come_first(tmp_path: Path) -> None:
    """`记意` sounds like ten bigrams of a vault (`记一`, `记以`, ...): the eight kept are
    the ones the most notes hold, so `记忆`, in every note about memory, is among them."""
    chance = {f"chance{i}.md": f"日记{c}天" for i, c in enumerate("一以亦依已衣医移异益")}
    memory = {f"memory{i}.md": f"记忆训练第{i}课" for i in range(3)}
    write(tmp_path, {**chance, **memory})
    _vault, index = open_vault(tmp_path)
    slips = [term for term, weight in index.vocabulary.expand("记意") if weight == FUZZY_WEIGHT]
    assert len(slips) == 8
    assert slips[0] == "记忆"
    assert index.vocabulary.expand("记意") == index.vocabulary.expand("记意")  # remembered
    # The count ranking reads is what the postings hold, delta included.
    for term in ("记忆", "记一", "训练"):
        term_id = index.vocabulary.id_of(term)
        assert term_id is not None
        held = len(index._body.lookup(term_id)) + len(index._meta.lookup(term_id))
        assert index._notes_holding(term_id) == held


def test_vocabulary_two_letter_latin_not_expanded() -> None:
    assert vocabulary("js", "json", "jsx").expand("js") == [("js", 1.0)]


def test_vocabulary_three_letters_expand() -> None:
    assert [t for t, _ in vocabulary("json", "jsx", "jso").expand("jso")] == ["jso", "json"]


def test_vocabulary_single_cjk_char_expands_to_bigrams() -> None:
    vocab = vocabulary("学习", "学生", "习笔")
    assert [t for t, _ in vocab.expand("学")] == ["学", "学习", "学生"]
    assert all(w == pytest.approx(PREFIX_WEIGHT * 2 / 2.3) for _, w in vocab.expand("学")[1:])


def test_vocabulary_caps_expansions_alphabetical_within_length() -> None:
    terms = [f"abc{i:03d}" for i in range(100)] + ["abcd"]
    expanded = vocabulary(*terms).expand("abc")
    assert len(expanded) == 1 + MAX_PREFIX_EXPANSIONS
    assert [t for t, _ in expanded[:4]] == ["abc", "abcd", "abc000", "abc001"]
    assert expanded[-1][0] == "abc062"


def test_vocabulary_prefix_weights_below_one() -> None:
    expanded = vocabulary("learn", "learning", "learned").expand("learn")
    assert expanded[0] == ("learn", 1.0)
    assert all(0 < weight < 1 for _, weight in expanded[1:])


# --------------------------------------------------------------------------- SortedTerms


def sorted_terms(*terms: str) -> SortedTerms:
    return SortedTerms.from_sorted(sorted(terms))


def test_sorted_terms_rank_is_the_id_and_misses_are_none_at_both_ends() -> None:
    terms = sorted_terms("zulu", "alpha", "beta")
    assert len(terms) == 3
    assert terms.decode_all() == ["alpha", "beta", "zulu"]
    assert [terms.rank(t) for t in ("alpha", "beta", "zulu")] == [0, 1, 2]
    assert [terms.term(rank) for rank in range(3)] == ["alpha", "beta", "zulu"]
    for absent in ("", "a", "aaa", "alph", "alphaa", "bet", "c", "zul", "zulua", "zz"):
        assert terms.rank(absent) is None, absent


def test_sorted_terms_prefixed_gives_own_rank_and_the_run_after_it() -> None:
    terms = sorted_terms("alpha", "beta", "zulu", "zulus", "zuluss")
    assert terms.prefixed("zul") == (None, range(2, 5))
    assert terms.prefixed("zulu") == (2, range(3, 5))
    assert terms.prefixed("zuluss") == (4, range(5, 5))
    assert terms.prefixed("zz") == (None, range(5, 5))
    assert terms.prefixed("a") == (None, range(1))
    assert terms.prefixed("alpha") == (0, range(1, 1))
    assert terms.prefixed("b") == (None, range(1, 2))


def test_sorted_terms_order_and_find_unicode_cjk_and_astral_terms() -> None:
    words = ["zebra", "café", "cafe", "caféine", "学习", "学生", "习笔", "𠀀𠀁", "ελλάδα", "Ωμέγα"]
    terms = sorted_terms(*words)
    assert terms.decode_all() == sorted(words)  # UTF-8 byte order is code point order
    assert [terms.rank(w) for w in sorted(words)] == list(range(len(words)))
    assert terms.rank("caf") is None
    assert terms.rank("学") is None
    own, run = terms.prefixed("学")
    assert own is None
    assert [terms.term(rank) for rank in run] == ["学习", "学生"]
    assert [terms.term(rank) for rank in terms.prefixed("𠀀")[1]] == ["𠀀𠀁"]


def test_sorted_terms_find_every_term_and_gap_across_sample_blocks() -> None:
    # Lookups first bisect a sample of every 64th term, then one block of the buffer.
    words = sorted({f"w{i:04d}" for i in range(0, 2000, 2)} | {"é" * 3, "学习", "𠀀𠀁"})
    terms = SortedTerms.from_sorted(words)
    assert [terms.rank(w) for w in words] == list(range(len(words)))
    for i in range(1, 2001, 2):  # every gap between neighbours
        assert terms.rank(f"w{i:04d}") is None
    for absent in ("a", "w", "w0", "w00000", "w1998x", "x", "é", "学", "𠀀", "𠀀𠀁𠀂"):
        assert terms.rank(absent) is None, absent
    own, run = terms.prefixed("w01")  # 50 terms starting in one block, ending in the next
    assert own is None
    assert [terms.term(rank) for rank in run] == [f"w01{i:02d}" for i in range(0, 100, 2)]
    assert terms.prefixed("w1998") == (words.index("w1998"), range(1000, 1000))


def test_empty_sorted_terms() -> None:
    terms = SortedTerms()
    assert len(terms) == 0
    assert terms.decode_all() == []
    assert terms.rank("abc") is None
    assert terms.prefixed("abc") == (None, range(0))
    assert Vocabulary(terms).expand("abc") == [("abc", 1.0)]


def test_sorted_terms_select_keeps_marked_ranks() -> None:
    terms = sorted_terms("alpha", "beta", "café", "学习")
    kept = terms.select(np.array([True, False, True, False]))
    assert kept.decode_all() == ["alpha", "café"]
    assert kept.rank("café") == 1
    assert kept.rank("beta") is None


@pytest.mark.parametrize("prefix", ["caf", "abc", "café", "学", "zz"])
def test_sorted_and_recent_vocabularies_expand_alike(prefix: str) -> None:
    # More than MAX_PREFIX_EXPANSIONS terms per prefix, so the sorted side picks the
    # shortest itself; "caféé" is 5 characters but 7 UTF-8 bytes.
    words = [f"caf{i:03d}" for i in range(80)] + ["café", "caféé", "cafés", "cafébar"]
    words += [f"abc{i:03d}" for i in range(100)] + ["abcd", "学习", "学生", "学"]
    compact = Vocabulary(sorted_terms(*words))
    recent = vocabulary(*words)
    assert compact.expand(prefix) == recent.expand(prefix)
    if prefix == "caf":
        expanded = [t for t, _w in compact.expand(prefix)]
        assert expanded[:6] == ["caf", "café", "cafés", "caféé", "caf000", "caf001"]
        assert len(expanded) == 1 + MAX_PREFIX_EXPANSIONS


def test_vocabulary_expands_across_sorted_and_recent_terms() -> None:
    vocab = Vocabulary(sorted_terms("deploy", "deployment", "depth", "zebra"))
    assert vocab.add("deployment") == 1  # known: keeps its rank, not a recent term
    assert not vocab.has_recent
    assert vocab.add("deployed") == 4
    assert vocab.add("aardvark") == 5  # sorts before every sorted term
    assert vocab.add("deployed") == 4
    assert vocab.has_recent
    assert len(vocab) == 6
    assert vocab.terms() == ["deploy", "deployment", "depth", "zebra", "deployed", "aardvark"]
    assert vocab.expand_ids("deploy") == [
        ("deploy", 1.0, 0),
        ("deployed", pytest.approx(prefix_weight("deploy", "deployed")), 4),
        ("deployment", pytest.approx(prefix_weight("deploy", "deployment")), 1),
    ]
    assert vocab.expand_ids("aard") == [
        ("aard", 1.0, None),
        ("aardvark", pytest.approx(prefix_weight("aard", "aardvark")), 5),
    ]
    assert [vocab.id_of(t) for t in ("zebra", "aardvark", "deplo", "zebras")] == [3, 5, None, None]


def test_vocabulary_cap_counts_sorted_and_recent_terms_together() -> None:
    vocab = Vocabulary(sorted_terms(*(f"abc{i:03d}" for i in range(70))))
    vocab.add("abcz")
    vocab.add("abc0000")
    expanded = [t for t, _w in vocab.expand("abc")]
    assert len(expanded) == 1 + MAX_PREFIX_EXPANSIONS
    assert expanded[:4] == ["abc", "abcz", "abc000", "abc001"]
    assert "abc0000" not in expanded  # 7 characters: every 6-character term comes first


def test_expanding_while_another_thread_adds_terms_never_raises() -> None:
    """Searches rank outside the index's lock while a sync adds an edit's new terms."""
    vocab = Vocabulary()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    thresholds = gc.get_threshold()
    gc.set_threshold(5)  # and collect garbage as often

    class Finalized:  # garbage whose collection runs Python code, as a suite's has
        def __init__(self) -> None:
            self.cycle = self

        def __del__(self) -> None:
            time.sleep(0)

    def add_terms() -> None:
        for i in range(3000):
            vocab.add(f"deploy{i}")
            vocab.add(f"dxploy{i}")
            Finalized()

    adder = threading.Thread(target=add_terms)
    errors: list[RuntimeError] = []
    calls = 0
    try:
        adder.start()
        while adder.is_alive():
            calls += 1
            try:
                vocab.expand("deploy")
                vocab.fuzzy("dexloyment")
            except RuntimeError as exc:  # "dictionary changed size during iteration"
                errors.append(exc)
    finally:
        adder.join()
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
    assert calls > 0
    assert errors == []
    assert [t for t, _w in vocab.expand("deploy")][:3] == ["deploy", "deploy0", "deploy1"]


# --------------------------------------------------------------------------- RecallIndex


@pytest.fixture
def vault_root(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(
        root,
        {
            "common.md": "meeting meeting meeting meeting agenda meeting",
            "rare.md": "zebra quokka notes",
            "one.md": "zebra only",
            "Projects/Deploy Guide.md": "steps to ship",
            "ops.md": "the deployment pipeline",
            "data.md": "json payload",
            "web.md": "js framework",
            "cn.md": "学习笔记",
            "Private/secret.md": "zebra quokka secret",
            "phrase.md": "machine and learning apart",
            "phrase2.md": "machine only",
            **{f"filler{i}.md": "meeting agenda" for i in range(5)},
        },
    )
    return root


def test_size_counts_all_notes_including_excluded(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root, exclusions=["Private"])
    assert index.size == 16


def test_distinct_rare_terms_outrank_a_common_term_repeated(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root, exclusions=["Private"])
    ranked = index.candidates(["meeting", "zebra", "quokka"], 10)
    total = 15  # searchable notes
    assert paths(ranked)[:2] == ["rare.md", "one.md"]
    assert ranked[0][1] == pytest.approx(idf(total, 2) + idf(total, 1))
    assert ranked[1][1] == pytest.approx(idf(total, 2))
    meeting = dict(ranked)
    assert meeting["common.md"] == pytest.approx(idf(total, 6))
    assert set(paths(ranked)[2:]) == {"common.md", *(f"filler{i}.md" for i in range(5))}
    assert meeting["common.md"] < ranked[1][1]


def test_title_and_path_hits_count_twice(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root, exclusions=["Private"])
    ranked = index.candidates(["deploy"], 10)
    assert paths(ranked) == ["Projects/Deploy Guide.md", "ops.md"]
    assert ranked[0][1] == pytest.approx(2 * idf(15, 2))
    assert ranked[1][1] == pytest.approx(idf(15, 2))


def test_folder_name_is_a_meta_hit(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root, exclusions=["Private"])
    ranked = index.candidates(["projects"], 10)
    assert paths(ranked) == ["Projects/Deploy Guide.md"]
    assert ranked[0][1] == pytest.approx(2 * idf(15, 1))


def test_query_terms_are_case_insensitive(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert index.candidates(["DEPLOY"], 10) == index.candidates(["deploy"], 10)


def test_prefix_matching_finds_longer_words(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert "ops.md" in paths(index.candidates(["deploy"], 10))
    assert paths(index.candidates(["pipe"], 10)) == ["ops.md"]


def test_two_letter_term_does_not_prefix_expand(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert paths(index.candidates(["js"], 10)) == ["web.md"]
    assert paths(index.candidates(["jso"], 10)) == ["data.md"]


def test_single_cjk_char_expands_to_bigrams(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert paths(index.candidates(["学"], 10)) == ["cn.md"]
    assert paths(index.candidates(["笔记"], 10)) == ["cn.md"]
    assert index.candidates(["记"], 10) == []


def test_phrase_needs_all_words(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert paths(index.candidates(["machine learning"], 10)) == ["phrase.md"]
    assert set(paths(index.candidates(["machine"], 10))) == {"phrase.md", "phrase2.md"}
    assert index.candidates(["machine zebra"], 10) == []


def test_phrase_words_are_not_prefix_expanded(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert index.candidates(["the deploy"], 10) == []
    assert paths(index.candidates(["the deployment"], 10)) == ["ops.md"]


def test_excluded_notes_never_returned(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root, exclusions=["Private"])
    assert index.candidates(["secret"], 10) == []
    assert "Private/secret.md" not in paths(index.candidates(["zebra", "quokka"], 10))


def test_without_exclusions_private_note_found(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert paths(index.candidates(["secret"], 10)) == ["Private/secret.md"]


def test_absent_terms_blank_terms_and_zero_limit(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert index.candidates(["nonexistent"], 10) == []
    assert index.candidates(["", "   ", "!!"], 10) == []
    assert index.candidates(["zebra"], 0) == []
    assert RecallIndex().candidates(["zebra"], 10) == []


def test_limit_truncates_best_first(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    ranked = index.candidates(["meeting", "zebra", "quokka"], 2)
    assert set(paths(ranked)) == {"rare.md", "Private/secret.md"}


def test_repeated_recall_terms_count_once(vault_root: Path) -> None:
    _vault, index = open_vault(vault_root)
    assert index.candidates(["zebra", "Zebra ", "zebra"], 10) == index.candidates(["zebra"], 10)


def test_note_edit_replaces_terms(tmp_path: Path) -> None:
    write(tmp_path, {"note.md": "alpha bravo", "other.md": "charlie"})
    vault, index = open_vault(tmp_path)
    note = tmp_path / "note.md"
    stamp = note.stat().st_mtime_ns + 5_000_000_000
    rewrite(note, "delta echo foxtrot", stamp)
    changes = vault.refresh()
    assert [info.path for info, _text in changes.updated] == ["note.md"]
    apply_changes(index, changes)
    assert index.candidates(["alpha"], 10) == []
    assert index.candidates(["bravo"], 10) == []
    assert paths(index.candidates(["echo"], 10)) == ["note.md"]
    assert paths(index.candidates(["charlie"], 10)) == ["other.md"]
    assert index.size == 2


def test_note_edit_that_adds_exclusion_tag_hides_note(tmp_path: Path) -> None:
    write(tmp_path, {"note.md": "alpha", "other.md": "alpha"})
    vault, index = open_vault(tmp_path, exclusions=["#private"])
    assert len(index.candidates(["alpha"], 10)) == 2
    note = tmp_path / "note.md"
    rewrite(note, "alpha #private", note.stat().st_mtime_ns + 5_000_000_000)
    apply_changes(index, vault.refresh())
    assert paths(index.candidates(["alpha"], 10)) == ["other.md"]


def test_deletion_removes_note(tmp_path: Path) -> None:
    write(tmp_path, {"gone.md": "walrus", "kept.md": "walrus narwhal"})
    vault, index = open_vault(tmp_path)
    (tmp_path / "gone.md").unlink()
    changes = vault.refresh()
    assert changes.removed == ("gone.md",)
    apply_changes(index, changes)
    assert paths(index.candidates(["walrus"], 10)) == ["kept.md"]
    assert index.size == 1


def test_added_note_found_after_refresh(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "walrus"})
    vault, index = open_vault(tmp_path)
    write(tmp_path, {"b.md": "narwhal"})
    apply_changes(index, vault.refresh())
    assert paths(index.candidates(["narwhal"], 10)) == ["b.md"]
    assert index.size == 2


def test_empty_changes_change_nothing(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "walrus"})
    vault, index = open_vault(tmp_path)
    before = index.candidates(["walrus"], 10)
    changes = vault.refresh()
    assert not changes
    apply_changes(index, changes)
    assert index.candidates(["walrus"], 10) == before


def test_common_word_does_not_crowd_out_relevant_note(tmp_path: Path) -> None:
    # DESIGN decision 2: the original kept the first 200 content hits in vault order.
    notes = {f"a{i:03d}.md": f"meeting notes number {i}" for i in range(250)}
    notes["zzz-relevant.md"] = "meeting about the rareterm migration"
    write(tmp_path, notes)
    _vault, index = open_vault(tmp_path)
    ranked = index.candidates(["meeting rareterm", "meeting", "rareterm"], 10)
    assert len(ranked) == 10
    assert ranked[0][0] == "zzz-relevant.md"
    total = 251
    assert ranked[0][1] == pytest.approx(idf(total, 1) + idf(total, 251) + idf(total, 1))
    assert ranked[1][1] == pytest.approx(idf(total, 251))


def note_changes(vault: Vault, texts: dict[str, str]) -> VaultChanges:
    """Change sets for notes of `vault` with the given (possibly new) texts."""
    updated = []
    for path, text in texts.items():
        info = vault.get(path)
        assert info is not None
        updated.append((info, text))
    return VaultChanges(updated=tuple(updated))


@pytest.mark.parametrize("count", [BULK_NOTES - 1, BULK_NOTES])
def test_one_at_a_time_and_bulk_indexing_agree(tmp_path: Path, count: int) -> None:
    # Below BULK_NOTES notes go to the delta, from it on to the sorted arrays.
    notes = {f"n{i:03d}.md": f"walrus number{i} deploy{i % 3}ment" for i in range(count)}
    write(tmp_path, notes)
    _vault, index = open_vault(tmp_path)
    expected = {i: f"n{i:03d}.md" for i in range(count)}
    assert paths(index.candidates(["number7"], 10)) == [expected[7]]
    assert len(index.candidates(["walrus"], 500)) == count
    assert len(index.candidates(["deploy0"], 500)) == len(range(0, count, 3))
    assert index.size == count


def test_compaction_keeps_results_and_drops_retired_notes(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "walrus", "b.md": "narwhal kraken", "c.md": "walrus kraken"})
    vault, index = open_vault(tmp_path)
    apply_changes(index, note_changes(vault, {"b.md": "only the kraken now"}))
    apply_changes(index, VaultChanges(removed=("c.md",)))
    before = {t: index.candidates([t], 10) for t in ("walrus", "narwhal", "kraken", "only")}
    index.compact()
    after = {t: index.candidates([t], 10) for t in ("walrus", "narwhal", "kraken", "only")}
    assert after == before
    assert paths(after["kraken"]) == ["b.md"]
    assert after["narwhal"] == []
    assert index.size == 2
    # Terms only retired notes held leave the vocabulary, so prefixes no longer reach them.
    assert [t for t, _w in index.vocabulary.expand("narw")] == ["narw"]


def test_many_single_edits_compact_automatically(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "walrus", "b.md": "narwhal"})
    vault, index = open_vault(tmp_path)
    for i in range(COMPACT_DELTA_NOTES + 5):
        apply_changes(index, note_changes(vault, {"a.md": f"walrus edit{i}"}))
    assert index.size == 2
    assert paths(index.candidates([f"edit{COMPACT_DELTA_NOTES + 4}"], 10)) == ["a.md"]
    assert index.candidates(["edit3"], 10) == []
    assert paths(index.candidates(["narwhal"], 10)) == ["b.md"]
    snapshot = index.snapshot()
    assert sorted(snapshot.paths) == ["a.md", "b.md"]
    assert "edit3" not in snapshot.terms


def test_snapshot_round_trip_ranks_the_same(vault_root: Path) -> None:
    vault, index = open_vault(vault_root, exclusions=["Private"])
    queries = [["zebra"], ["deploy"], ["学"], ["meeting agenda"], ["machine learning"]]
    expected = [index.candidates(q, 10) for q in queries]
    snapshot = index.snapshot()
    searchable = [vault.notes[path].searchable for path in snapshot.paths]
    restored = RecallIndex.from_snapshot(snapshot, searchable)
    assert [restored.candidates(q, 10) for q in queries] == expected
    assert restored.size == index.size
    # The restored index keeps taking edits.
    apply_changes(restored, note_changes(vault, {"one.md": "okapi"}))
    assert paths(restored.candidates(["okapi"], 10)) == ["one.md"]
    assert paths(restored.candidates(["zebra"], 10)) == ["rare.md"]


def test_edit_after_a_load_adds_terms_beyond_both_ends_of_the_sorted_terms(
    vault_root: Path,
) -> None:
    vault, index = open_vault(vault_root, exclusions=["Private"])
    snapshot = index.snapshot()
    assert snapshot.terms == sorted(set(snapshot.terms))
    first, last = snapshot.terms[0], snapshot.terms[-1]
    searchable = [vault.notes[path].searchable for path in snapshot.paths]
    restored = RecallIndex.from_snapshot(snapshot, searchable)
    low, high = "0" + first, "𠀀𠀁"  # brand-new terms sorting before and after all
    assert low < first
    assert high > last
    apply_changes(restored, note_changes(vault, {"one.md": f"zebra {low} {high} 学期"}))
    assert restored.vocabulary.has_recent
    for query in (low, high, "𠀀", f"zebra {low}", "学"):
        assert "one.md" in paths(restored.candidates([query], 10)), query
    assert paths(restored.candidates(["学期"], 10)) == ["one.md"]
    assert paths(restored.candidates([f"{low} machine"], 10)) == []
    expected = {q: restored.candidates([q], 10) for q in (low, high, "zebra", "学", "deploy")}
    # Saving compacts: the new terms join the sorted ones and everything ranks the same.
    again = restored.snapshot()
    assert not restored.vocabulary.has_recent
    assert {low, high, "学期"} <= set(again.terms)
    assert again.terms == sorted(set(again.terms))
    reloaded = RecallIndex.from_snapshot(again, [True] * len(again.paths))
    for query, ranked in expected.items():
        assert restored.candidates([query], 10) == ranked
        assert set(paths(reloaded.candidates([query], 10))) >= set(paths(ranked))


def test_compaction_folds_recent_terms_into_the_sorted_ones(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "walrus", "b.md": "narwhal", "c.md": "kraken"})
    vault, index = open_vault(tmp_path)
    for i in range(30):
        apply_changes(
            index, note_changes(vault, {"a.md": f"walrus fresh{i:02d}", "c.md": f"kraken{i}"})
        )
    apply_changes(index, VaultChanges(removed=("b.md",)))
    queries = ["walrus", "fresh", "fresh29", "fresh03", "narwhal", "kraken", "kraken29"]
    before = {q: index.candidates([q], 10) for q in queries}
    assert index.vocabulary.has_recent
    index.compact()
    assert not index.vocabulary.has_recent
    assert {q: index.candidates([q], 10) for q in queries} == before
    assert paths(before["fresh"]) == ["a.md"]
    assert before["fresh03"] == []
    assert before["narwhal"] == []
    assert paths(before["kraken"]) == ["c.md"]  # as a prefix of "kraken29"
    # Only terms a live note holds remain, all sorted.
    assert index.vocabulary.terms() == ["a", "c", "fresh29", "kraken29", "walrus"]
    assert [t for t, _w in index.vocabulary.expand("fresh")] == ["fresh", "fresh29"]


def test_bulk_update_merges_its_terms_with_recent_ones(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "walrus", "b.md": "narwhal"})
    vault, index = open_vault(tmp_path)
    apply_changes(index, note_changes(vault, {"a.md": "walrus zygote"}))  # "zygote" is recent
    bulk = {f"bulk{i:03d}.md": f"zygote narwhal item{i}" for i in range(BULK_NOTES)}
    write(tmp_path, bulk)
    changes = vault.refresh()
    assert len(changes.updated) == BULK_NOTES
    apply_changes(index, changes)
    assert not index.vocabulary.has_recent
    assert len(index.candidates(["zygote"], 500)) == BULK_NOTES + 1
    assert len(index.candidates(["zyg"], 500)) == BULK_NOTES + 1
    assert len(index.candidates(["narwhal"], 500)) == BULK_NOTES + 1
    assert paths(index.candidates(["item7"], 10)) == ["bulk007.md"]
    assert paths(index.candidates(["walrus zygote"], 10)) == ["a.md"]
    assert index.size == BULK_NOTES + 2


def test_inverse_document_frequencies_weigh_terms_as_recall_does(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.md": "the deployment of kafka",
            "b.md": "the deploy runbook",
            "c.md": "the garden",
        },
    )
    _vault, index = open_vault(tmp_path)
    weights = index.inverse_document_frequencies(["the", "deploy", "kafka", "zzyzx"])
    assert weights["the"] == pytest.approx(idf(3, 3))
    assert weights["deploy"] == pytest.approx(idf(3, 2))  # "deployment" counts, as in recall
    assert weights["kafka"] == pytest.approx(idf(3, 1))
    assert weights["zzyzx"] == 0.0  # no note holds it, nor anything close
