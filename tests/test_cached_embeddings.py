"""The model behind the index's cache: batches, rate-limit retries, requests per minute.

The embedding specs and the missing-extra error are tested in test_embeddings_spec.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_vaultsearch.semantic.cached_embeddings import CachedEmbeddings, is_rate_limit_error
from langchain_vaultsearch.semantic.records import IndexRecords


class RateLimitError(Exception):
    """What OpenAI's client raises on HTTP 429 (by name)."""


class Flaky(Embeddings):
    """Fails with a rate-limit error the first `failures` calls."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0
        self.inner = DeterministicFakeEmbedding(size=8)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def test_rate_limits_are_retried_with_backoff_and_cached(tmp_path: Path) -> None:
    slept: list[float] = []
    model = Flaky(2, RateLimitError("slow down"))
    cached = CachedEmbeddings(
        model, IndexRecords(tmp_path / "r.sqlite3"), "flaky", batch_size=2, sleep=slept.append
    )
    vectors = cached.embed_documents(["a", "b", "c", "a"])
    assert slept == [1.0, 2.0]
    assert len(vectors) == 4
    assert vectors[0] == pytest.approx(vectors[3], rel=1e-6)
    assert cached.texts_embedded == 3  # "a" once
    again = cached.embed_documents(["c", "b"])
    assert again[0] == pytest.approx(vectors[2], rel=1e-6)
    assert again[1] == pytest.approx(vectors[1], rel=1e-6)
    assert cached.texts_embedded == 3  # all from the cache


def test_other_errors_are_not_retried(tmp_path: Path) -> None:
    cached = CachedEmbeddings(
        Flaky(1, ValueError("bad input")), IndexRecords(tmp_path / "r.sqlite3"), "m"
    )
    with pytest.raises(ValueError, match="bad input"):
        cached.embed_documents(["a"])
    assert not is_rate_limit_error(ValueError("x"))
    error = RuntimeError("http")
    error.status_code = 429  # type: ignore[attr-defined]
    assert is_rate_limit_error(error)


def test_requests_per_minute_spaces_the_calls(tmp_path: Path) -> None:
    slept: list[float] = []
    cached = CachedEmbeddings(
        DeterministicFakeEmbedding(size=4),
        IndexRecords(tmp_path / "r.sqlite3"),
        "fake",
        batch_size=1,
        requests_per_minute=30,
        sleep=slept.append,
    )
    cached.embed_documents(["a", "b", "c"])
    assert len(slept) == 2
    assert all(1.9 < wait <= 2.0 for wait in slept)  # 60 s / 30 calls
    with pytest.raises(ValueError, match="requests_per_minute"):
        CachedEmbeddings(cached.embeddings, cached.records, "x", requests_per_minute=0)
