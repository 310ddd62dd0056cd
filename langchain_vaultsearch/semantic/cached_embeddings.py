"""CachedEmbeddings: the index's embedding model, called only for text it has not seen.

Every vector the index writes goes through this wrapper, so three costs are paid once:
a renamed, moved or re-chunked note finds its vectors in the records' cache by text hash
(no model call); paid APIs are called in batches within a requests-per-minute limit; and
rate-limit errors are retried with exponential backoff instead of failing a long run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from langchain_core.embeddings import Embeddings

from langchain_vaultsearch.semantic.records import IndexRecords, text_hash

logger = logging.getLogger(__name__)

MAX_RETRIES = 6
"""Attempts per batch after a rate-limit error, waiting 1, 2, 4 ... seconds between."""


def is_rate_limit_error(exc: BaseException) -> bool:
    """Whether an error from an embedding API says "slow down" (HTTP 429 and friends).

    Providers raise their own classes (`openai.RateLimitError`, ...), so the class name
    and an HTTP status of 429 are checked instead of importing every provider.
    """
    name = type(exc).__name__.lower()
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    return "ratelimit" in name or "toomanyrequests" in name or status == 429


class CachedEmbeddings(Embeddings):
    """An `Embeddings` that serves known texts from the records and paces the rest."""

    def __init__(
        self,
        embeddings: Embeddings,
        records: IndexRecords,
        model_id: str,
        *,
        batch_size: int = 256,
        requests_per_minute: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Wrap a model.

        Args:
            embeddings: the real model.
            records: where embeddings are cached.
            model_id: the model's identity; the cache never serves another model's vectors.
            batch_size: texts per call to the model.
            requests_per_minute: at most this many model calls a minute (None: no limit).
            sleep: how to wait (tests pass a fake clock).
        """
        if batch_size < 1:
            msg = f"batch_size must be at least 1, got {batch_size}"
            raise ValueError(msg)
        if requests_per_minute is not None and requests_per_minute <= 0:
            msg = f"requests_per_minute must be positive, got {requests_per_minute}"
            raise ValueError(msg)
        self.embeddings = embeddings
        self.records = records
        self.model_id = model_id
        self.batch_size = batch_size
        self.requests_per_minute = requests_per_minute
        self._sleep = sleep
        self._lock = threading.Lock()
        self._last_call = -float("inf")
        self.model_calls = 0
        """Calls made to the real model (for progress reports and tests)."""
        self.texts_embedded = 0
        """Texts the real model embedded (cache misses)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors for texts: cached ones from the records, the others from the model."""
        hashes = [text_hash(text) for text in texts]
        found = self.records.cached_vectors(self.model_id, list(dict.fromkeys(hashes)))
        missing = list({h: t for h, t in zip(hashes, texts, strict=True) if h not in found}.items())
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start : start + self.batch_size]
            vectors = self._call([text for _h, text in batch])
            made = {digest: vector for (digest, _t), vector in zip(batch, vectors, strict=True)}
            self.records.cache_vectors(self.model_id, made)
            found.update(made)
        return [found[digest] for digest in hashes]

    def embed_query(self, text: str) -> list[float]:
        """A query's vector, straight from the model (queries are not worth caching)."""
        return self.embeddings.embed_query(text)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of `embed_query`, using the model's own async path."""
        return await self.embeddings.aembed_query(text)

    def _call(self, texts: list[str]) -> list[list[float]]:
        """One model call within the rate limit, retried on rate-limit errors."""
        attempt = 0
        while True:
            self._pace()
            try:
                vectors = self.embeddings.embed_documents(texts)
                break
            except Exception as exc:
                if attempt == MAX_RETRIES or not is_rate_limit_error(exc):
                    raise
                delay = float(2**attempt)
                logger.warning("Embedding API rate limit (%s); retrying in %.0f s", exc, delay)
                self._sleep(delay)
                attempt += 1
        self.model_calls += 1
        self.texts_embedded += len(texts)
        if len(vectors) != len(texts):
            msg = f"the embedding model returned {len(vectors)} vectors for {len(texts)} texts"
            raise RuntimeError(msg)
        return vectors

    def _pace(self) -> None:
        """Wait until the next call keeps within `requests_per_minute`."""
        if self.requests_per_minute is None:
            return
        with self._lock:
            wait = self._last_call + 60.0 / self.requests_per_minute - time.monotonic()
            if wait > 0:
                self._sleep(wait)
            self._last_call = time.monotonic()
