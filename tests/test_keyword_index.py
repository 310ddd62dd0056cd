"""The keyword index: BM25 and TF-IDF as the seed's libraries compute them, the
combination, each boost against hand-computed values, and the saved file as input."""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import random
import signal
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi
from sklearn.feature_extraction.text import TfidfVectorizer

from langchain_vaultsearch.chunk_store import JsonlChunkStore, RetrievalProfile, keyword_build
from langchain_vaultsearch.chunk_store.analysis import bm25_terms, tfidf_words
from langchain_vaultsearch.chunk_store.boosts import QueryBoosts, form_key
from langchain_vaultsearch.chunk_store.keyword_index import KeywordIndex
from langchain_vaultsearch.expansion.terms import STOP_WORDS
from langchain_vaultsearch.safe_archive import HEADER

WORDS = (
    "tax form estimated income quarterly payment safe harbor penalty refund the of and a to"
    " W-2 1040-ES wage employer credit child deduction café résumé Straße 税务 申报"
).split()


def random_texts(count: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))) for _ in range(count)]


def write_store(folder: Path, texts: list[str], metadata: list[dict] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "chunks.jsonl").open("w", encoding="utf-8") as out:
        for i, text in enumerate(texts):
            line = {"id": f"c{i}", "text": text, "metadata": (metadata or [{}] * len(texts))[i]}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return folder


@pytest.mark.parametrize("tokenizer", ["whitespace", "unicode"])
def test_bm25_is_rank_bm25s_okapi_on_the_same_terms(tmp_path: Path, tokenizer: str) -> None:
    texts = random_texts(300)
    index = KeywordIndex.build(JsonlChunkStore(write_store(tmp_path, texts)), tokenizer)  # type: ignore[arg-type]
    reference = BM25Okapi([bm25_terms(t, tokenizer) for t in texts])  # type: ignore[arg-type]
    for query in ("estimated tax payment", "the the tax", "Straße 税务申报", "nothing-here"):
        expected = reference.get_scores(bm25_terms(query, tokenizer))  # type: ignore[arg-type]
        assert index.scorer.bm25_scores(query) == pytest.approx(expected, abs=1e-9)


@pytest.mark.filterwarnings("ignore:Your stop_words may be inconsistent")
@pytest.mark.parametrize("tokenizer", ["whitespace", "unicode"])
def test_tfidf_is_scikit_learns_vectorizer_with_the_same_terms(
    tmp_path: Path, tokenizer: str
) -> None:
    texts = random_texts(300)
    index = KeywordIndex.build(JsonlChunkStore(write_store(tmp_path, texts)), tokenizer)  # type: ignore[arg-type]
    if tokenizer == "whitespace":  # the seed's analyzer, with the package's stop words
        vectorizer = TfidfVectorizer(stop_words=list(STOP_WORDS), ngram_range=(1, 2))
    else:
        vectorizer = TfidfVectorizer(
            analyzer=lambda text: _sklearn_ngrams(tfidf_words(text, "unicode"))
        )
    matrix = vectorizer.fit_transform(texts)
    assert set(index.scorer.features) == set(vectorizer.vocabulary_)
    for query in ("estimated tax payment", "safe harbor penalty", "café 税务"):
        expected = (matrix @ vectorizer.transform([query]).T).toarray().ravel()
        assert index.scorer.tfidf_scores(query) == pytest.approx(expected, abs=1e-6)


def _sklearn_ngrams(words: list[str]) -> list[str]:
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


@pytest.mark.filterwarnings("ignore:Your stop_words may be inconsistent")
def test_the_feature_cut_keeps_scikit_learns_most_frequent_features(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Distinct corpus counts (word i occurs i + 1 times in a fixed order), so the most
    # frequent features are one set whatever breaks ties.
    rng = random.Random(5)
    words = [f"w{i}" for i in range(60)]
    stream = [w for i, w in enumerate(words) for _ in range(3 * i + 1)]
    rng.shuffle(stream)
    texts = [" ".join(stream[i : i + 25]) for i in range(0, len(stream), 25)]
    monkeypatch.setattr(keyword_build, "TFIDF_FEATURES", 40)
    index = KeywordIndex.build(JsonlChunkStore(write_store(tmp_path, texts)), "whitespace")
    vectorizer = TfidfVectorizer(stop_words=list(STOP_WORDS), ngram_range=(1, 2), max_features=40)
    matrix = vectorizer.fit_transform(texts)
    counts = np.asarray(matrix.astype(bool).sum(axis=0)).ravel()
    assert len(index.scorer.features) == 40
    assert set(index.scorer.features) == set(vectorizer.vocabulary_), counts
    query = "w59 w58 w3"
    expected = (matrix @ vectorizer.transform([query]).T).toarray().ravel()
    assert index.scorer.tfidf_scores(query) == pytest.approx(expected, abs=1e-6)


def test_combined_score_and_each_boost_match_hand_computed_values(tmp_path: Path) -> None:
    texts = [
        "Form 1040-ES estimated tax for self employed people",  # exact phrase below
        "estimated tax is paid quarterly; the safe harbor rule applies",
        "payroll withholding on wages",
    ]
    metadata = [{"form_number": "1040-ES"}, {"form_number": "1040"}, {}]
    store = JsonlChunkStore(write_store(tmp_path, texts, metadata))
    index = KeywordIndex.build(store, "unicode")
    profile = RetrievalProfile(
        doc_boost_exact_match=2.0, doc_boost_form_number=3.0, doc_boost_defined_term=5.0
    )
    query = 'estimated tax 1040-ES "safe harbor"'
    bm25 = index.scorer.bm25_scores(query)
    tfidf = index.scorer.tfidf_scores(query)
    hits = {h.record.id: h for h in index.search(query, store, profile, k=10)}
    assert set(hits) == {"c0", "c1"}  # c2 shares no term: not a result at score 0
    for number, boosts in ((0, {"formNumber": 3.0}), (1, {"definedTerm": 5.0})):
        hit = hits[f"c{number}"]
        assert hit.bm25 == pytest.approx(bm25[number] / bm25.max())
        assert hit.tfidf == pytest.approx(tfidf[number])
        assert hit.combined == pytest.approx(0.6 * hit.bm25 + 0.4 * hit.tfidf)
        assert hit.boosts == boosts  # form 1040 is not 1040-ES (the seed's substring test was)
        assert hit.final == pytest.approx(hit.combined * next(iter(boosts.values())))
    exact = index.search("form 1040-es   ESTIMATED tax", store, profile, k=1)[0]
    assert exact.record.id == "c0"
    assert exact.boosts == {"exactMatch": 2.0, "formNumber": 3.0}


def test_query_boosts_read_forms_and_quoted_terms() -> None:
    boosts = QueryBoosts.of('Form W-2 and “defined term” and "Safe  Harbor" 2024')
    assert boosts.form_numbers == {"w-2", "2024"}
    assert boosts.quoted_terms == ("defined term", "safe harbor")
    assert boosts.phrase == "form w-2 and defined term and safe harbor 2024"
    profile = RetrievalProfile()
    text = "the SAFE harbor rule"
    assert boosts.text_factors(
        text, phrase_possible=True, quoted_possible=True, profile=profile
    ) == {"definedTerm": 1.5}
    # What the index rules out is not looked for in the text.
    assert (
        boosts.text_factors(text, phrase_possible=False, quoted_possible=False, profile=profile)
        == {}
    )
    assert form_key("Form W-2") == "w-2"
    assert form_key(True) is None
    assert form_key(1040) == "1040"


def test_exact_match_is_a_phrase_of_whole_terms(tmp_path: Path) -> None:
    texts = ["taxes were due", "the estimated tax was due", "estimated taxes, a tax"]
    store = JsonlChunkStore(write_store(tmp_path, texts + [f"filler {i}" for i in range(5)]))
    index = KeywordIndex.build(store, "unicode")
    hits = {
        h.record.id: h.boosts for h in index.search("estimated tax", store, RetrievalProfile(), k=5)
    }
    assert hits["c1"] == {"exactMatch": 1.5}
    assert hits["c2"] == {}  # "estimated taxes" holds the characters, not the words


def test_boosts_are_found_even_far_down_the_unboosted_order(tmp_path: Path) -> None:
    # 60 chunks score higher without boosts; the one with the form number must still win.
    texts = ["wage report wage wage" for _ in range(60)] + ["wage statement"]
    texts += ["unrelated filler text"] * 300
    metadata: list[dict[str, str]] = [{}] * 60 + [{"form_number": "W-2"}] + [{}] * 300
    store = JsonlChunkStore(write_store(tmp_path, texts, metadata))
    index = KeywordIndex.build(store, "unicode")
    plain = RetrievalProfile(doc_boost_form_number=1.0)
    unboosted = [h.record.id for h in index.search("W-2 wage", store, plain, k=61)]
    assert unboosted.index("c60") > 3
    profile = RetrievalProfile(doc_boost_form_number=5.0)
    hits = index.search("W-2 wage", store, profile, k=3)
    assert hits[0].record.id == "c60"
    assert hits[0].boosts == {"formNumber": 5.0}
    assert [h.final for h in hits] == sorted((h.final for h in hits), reverse=True)


def test_filters_apply_before_the_cut_and_the_scaling(tmp_path: Path) -> None:
    texts = ["tax tax tax tax", "tax return", "tax"] + [f"filler {i}" for i in range(7)]
    metadata = [{"doc_type": "guide"}, {"doc_type": "form"}, {"doc_type": "form"}] + [{}] * 7
    store = JsonlChunkStore(write_store(tmp_path, texts, metadata))
    index = KeywordIndex.build(store, "unicode")
    hits = index.search("tax", store, RetrievalProfile(), k=1, filters={"doc_type": "form"})
    # The seed cut to k first and filtered after, returning nothing here.
    assert [h.record.metadata["doc_type"] for h in hits] == ["form"]
    assert max(h.bm25 for h in hits) == pytest.approx(1.0)


def test_profile_values_are_checked() -> None:
    with pytest.raises(ValueError, match="doc_k"):
        RetrievalProfile(doc_k=0)
    with pytest.raises(ValueError, match="doc_boost_exact_match"):
        RetrievalProfile(doc_boost_exact_match=0.5)
    with pytest.raises(ValueError, match="both be 0"):
        RetrievalProfile(bm25_weight=0, tfidf_weight=0)
    with pytest.raises(ValueError, match="extra"):
        RetrievalProfile(doc_boost=2.0)  # type: ignore[call-arg]


def test_saved_index_loads_when_current_and_is_ignored_when_not(tmp_path: Path) -> None:
    folder = write_store(tmp_path / "store", random_texts(50))
    store = JsonlChunkStore(folder)
    built = KeywordIndex.build(store, "unicode")
    path = tmp_path / "idx" / "keyword-index.npz"
    assert built.save(path)
    loaded = KeywordIndex.load(path, store.stamps(), "unicode")
    assert loaded is not None
    assert loaded.chunks.ids == built.chunks.ids
    assert loaded.scorer.bm25_scores("estimated tax") == pytest.approx(
        built.scorer.bm25_scores("estimated tax")
    )
    assert loaded.scorer.tfidf_scores("safe harbor") == pytest.approx(
        built.scorer.tfidf_scores("safe harbor")
    )
    assert KeywordIndex.load(path, store.stamps(), "whitespace") is None  # another tokenizer
    with (folder / "chunks.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps({"id": "new", "text": "a new chunk"}) + "\n")
    assert KeywordIndex.load(path, store.stamps(), "unicode") is None  # the store changed


def _rewrite(path: Path, **members: bytes) -> None:
    with zipfile.ZipFile(path) as archive:
        contents = {name: archive.read(name) for name in archive.namelist()}
    contents.update(members)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in contents.items():
            archive.writestr(name, data)


def _saved_index(tmp_path: Path) -> tuple[JsonlChunkStore, Path]:
    """A store of 30 random chunks and its index saved beside it, for damaging."""
    store = JsonlChunkStore(write_store(tmp_path / "store", random_texts(30)))
    path = tmp_path / "keyword-index.npz"
    KeywordIndex.build(store, "unicode").save(path)
    return store, path


@pytest.mark.parametrize(
    "damage",
    ["not-a-zip", "nested-header", "bad-dtype", "doc-out-of-range", "forged-lengths"],
)
def test_a_damaged_or_forged_index_is_logged_removed_and_rebuilt(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, path = _saved_index(tmp_path)
    header = json.loads(zipfile.ZipFile(path).read(HEADER))
    if damage == "not-a-zip":
        path.write_bytes(b"garbage")
    elif damage == "nested-header":
        _rewrite(path, **{HEADER: b"[" * 100_000 + b"]" * 100_000})
    elif damage == "bad-dtype":
        _rewrite(path, **{"bm25_docs.npy": _npy(np.zeros(3, dtype=np.float64))})
    elif damage == "doc-out-of-range":
        with np.load(path) as data:
            docs = data["bm25_docs"].copy()
        docs[0] = 10_000
        _rewrite(path, **{"bm25_docs.npy": _npy(docs)})
    else:
        header["ids"] = header["ids"][:-1]
        _rewrite(path, **{HEADER: json.dumps(header).encode()})
    with caplog.at_level(logging.INFO):
        assert KeywordIndex.load(path, store.stamps(), "unicode") is None
    assert "Ignoring the keyword index" in caplog.text
    assert not path.exists()


class _HungError(Exception):
    """Raised by the alarm: not an `OSError`, which the chunk reader would swallow."""


@contextlib.contextmanager
def _hang_guard(seconds: int) -> Iterator[None]:
    """Fail the test instead of hanging it (a FIFO opened for reading blocks for good)."""

    def hung(_signum: int, _frame: object) -> None:
        raise _HungError

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("target", ["fifo", "dev-zero", "outside-file", "climbing-out"])
def test_a_saved_file_list_naming_files_outside_the_store_is_refused(
    tmp_path: Path, target: str, caplog: pytest.LogCaptureFixture
) -> None:
    folder = write_store(tmp_path / "store", random_texts(30))
    store = JsonlChunkStore(folder)
    path = folder / ".vaultsearch" / "keyword-index.npz"
    KeywordIndex.build(store, "unicode").save(path)
    # The same lines outside the store: every read of a forged location would parse.
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes((folder / "chunks.jsonl").read_bytes())
    names = {
        "fifo": str(tmp_path / "pipe"),
        "dev-zero": "/dev/zero",
        "outside-file": str(outside),
        "climbing-out": "../outside.jsonl",
    }
    os.mkfifo(tmp_path / "pipe")
    header = json.loads(zipfile.ZipFile(path).read(HEADER))
    header["files"] = [names[target]]  # the stamps still match the store
    _rewrite(path, **{HEADER: json.dumps(header).encode()})
    with _hang_guard(20), caplog.at_level(logging.WARNING):
        loaded = KeywordIndex.load(path, store.stamps(), "unicode")
        index = loaded or KeywordIndex.build(store, "unicode")
        hits = index.search("estimated tax", store, RetrievalProfile(), k=5)
    assert loaded is None
    assert "Ignoring the keyword index" in caplog.text
    assert not path.exists()
    assert hits
    assert {hit.record.location.file for hit in hits} == {"chunks.jsonl"}


@pytest.mark.parametrize("damage", ["nan-weights", "negative-lengths", "line-past-file-end"])
def test_saved_arrays_that_would_break_scoring_or_reading_are_refused(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, path = _saved_index(tmp_path)
    with np.load(path) as data:
        arrays = {name: data[name].copy() for name in ("tfidf_weights", "lengths", "lines")}
    if damage == "nan-weights":
        arrays["tfidf_weights"][:] = np.nan
    elif damage == "negative-lengths":
        arrays["lengths"][0] = -1_000_000
    else:
        arrays["lines"][3] = 1 << 40  # the first line's length: a terabyte read
    _rewrite(path, **{f"{name}.npy": _npy(value) for name, value in arrays.items()})
    with caplog.at_level(logging.WARNING):
        assert KeywordIndex.load(path, store.stamps(), "unicode") is None
    assert "Ignoring the keyword index" in caplog.text
    assert not path.exists()


def test_saved_idf_values_are_not_trusted(tmp_path: Path) -> None:
    # NaN idf values made every query find nothing; the idf follows from the postings.
    folder = write_store(tmp_path / "store", random_texts(30))
    store = JsonlChunkStore(folder)
    built = KeywordIndex.build(store, "unicode")
    path = tmp_path / "keyword-index.npz"
    built.save(path)
    idf = ("bm25_idf", "tfidf_idf")
    nan = {name: np.full(len(getattr(built.scorer, name)), np.nan) for name in idf}
    _rewrite(path, **{f"{name}.npy": _npy(values) for name, values in nan.items()})
    loaded = KeywordIndex.load(path, store.stamps(), "unicode")
    assert loaded is not None
    assert np.array_equal(loaded.scorer.bm25_idf, built.scorer.bm25_idf)
    assert np.array_equal(loaded.scorer.tfidf_idf, built.scorer.tfidf_idf)
    expected = built.search("estimated tax", store, RetrievalProfile(), k=5)
    found = loaded.search("estimated tax", store, RetrievalProfile(), k=5)
    assert found
    assert [h.record.id for h in found] == [h.record.id for h in expected]


def _npy(array: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    np.save(out, array, allow_pickle=False)
    return out.getvalue()


def test_a_store_of_stop_words_only_builds_and_scores_by_bm25(tmp_path: Path) -> None:
    texts = ["the and of", "of the", "to be or not to be"] + [f"word{i}" for i in range(5)]
    store = JsonlChunkStore(write_store(tmp_path, texts))
    index = KeywordIndex.build(store, "unicode")
    assert index.scorer.features == {f"word{i}": i for i in range(5)}
    hits = index.search("to be", store, RetrievalProfile(), k=3)
    assert [h.record.id for h in hits] == ["c2"]
    assert hits[0].tfidf == 0.0
    assert hits[0].boosts == {"exactMatch": 1.5}


def test_an_empty_store_builds_and_finds_nothing(tmp_path: Path) -> None:
    store = JsonlChunkStore(write_store(tmp_path, []))
    index = KeywordIndex.build(store, "unicode")
    assert len(index) == 0
    assert index.search("anything", store, RetrievalProfile(), k=3) == []
