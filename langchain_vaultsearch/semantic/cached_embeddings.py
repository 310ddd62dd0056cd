"""CachedEmbeddings: the index's embedding model, called only for text it has not seen.

Every vector the index writes goes through this wrapper, so three costs are paid once:
a renamed, moved or re-chunked note finds its vectors in the records' cache by text hash
(no model call); paid APIs are called in batches within a requests-per-minute limit; and
rate-limit errors are retried with exponential backoff instead of failing a long run.

It is also where vectors are checked: a cached vector is served again forever, so one NaN
or one vector of the wrong size from a flaky model would break every later refresh. Each
vector must have the index's size (recorded with the first vectors) and finite numbers;
a batch with one bad vector is refused whole, before anything of it is cached. And the
model is loaded only when something is embedded, so opening an index to check it or to
read its records costs no model load.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_vaultsearch.semantic.errors import SemanticIndexUnavailable
from langchain_vaultsearch.semantic.records import IndexRecords, text_hash

logger = logging.getLogger(__name__)

MAX_RETRIES = 6
"""Attempts per batch after a rate-limit error, waiting 1, 2, 4 ... seconds between."""
PROBE_TEXT = "vaultsearch"
"""What a model embeds to show it works and how long its vectors are."""
_DIMENSION = "dimension"


def is_rate_limit_error(exc: BaseException) -> bool:
    """Whether an error from an embedding API says "slow down" (HTTP 429 and friends).

    Providers raise their own classes (`openai.RateLimitError`, ...), so the class name
    and an HTTP status of 429 are checked instead of importing every provider.
    """
    name = type(exc).__name__.lower()
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    return "ratelimit" in name or "toomanyrequests" in name or status == 429


def _vector_flaw(vector: Sequence[float], dimension: int | None) -> str | None:
    """What makes a vector unfit for an index of `dimension` numbers, or None when nothing.

    Checked as float32, the precision the cache and the stores keep: a number too large
    for it would be kept as infinity.

    Args:
        vector: a vector from a model or the cache.
        dimension: the index's vector size; None accepts any size.
    """
    try:
        with np.errstate(over="ignore"):
            values = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        return "something that is not a list of numbers"
    if values.ndim != 1 or values.size == 0:
        return "something that is not a list of numbers"
    if dimension is not None and values.size != dimension:
        return f"{values.size} numbers per vector where this index holds {dimension}"
    if not np.isfinite(values).all():
        return "NaN or infinite numbers"
    return None


def check_vectors(
    vectors: Sequence[Sequence[float]], count: int, dimension: int | None, model_id: str
) -> int:
    """The size of a batch's vectors once each is checked; a bad one refuses them all.

    Args:
        vectors: what the model returned.
        count: how many texts it was given (at least one).
        dimension: the index's vector size; None lets the first vector set it.
        model_id: the model, for the message.

    Returns:
        The vectors' size (`dimension`, or the first vector's).

    Raises:
        SemanticIndexUnavailable: a vector is missing, of another size, or not finite.
    """
    problem = f"{len(vectors)} vectors for {count} texts" if len(vectors) != count else None
    for vector in vectors if problem is None else ():
        problem = _vector_flaw(vector, dimension)
        if problem is not None:
            break
        dimension = len(vector)
    if problem is not None or dimension is None:
        msg = (
            f"the embedding model {model_id} returned {problem or 'no vectors'}, so none of "
            "its vectors were kept: check the model (or the key and quota of its API) and "
            "index again, or rebuild with another model "
            "(`vaultsearch index --embeddings SPEC --rebuild`)"
        )
        raise SemanticIndexUnavailable(msg)
    return dimension


class CachedEmbeddings(Embeddings):
    """An `Embeddings` that serves known texts from the records and paces the rest."""

    def __init__(
        self,
        embeddings: Embeddings | Callable[[], Embeddings],
        records: IndexRecords,
        model_id: str,
        *,
        batch_size: int = 256,
        requests_per_minute: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Wrap a model.

        Args:
            embeddings: the real model, or a function loading it when it is first needed.
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
        if isinstance(embeddings, Embeddings):
            model = embeddings
            self._load: Callable[[], Embeddings] = lambda: model
        else:
            self._load = embeddings
        self._model: Embeddings | None = None
        self._load_lock = threading.Lock()
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

    @property
    def embeddings(self) -> Embeddings:
        """The real model, loaded by the first call that needs it (once, whatever the threads)."""
        with self._load_lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    @property
    def dimension(self) -> int | None:
        """Numbers per vector in this index, as recorded; None until the first vectors."""
        stored = self.records.get_meta(_DIMENSION)
        return int(stored) if stored is not None and stored.isascii() and stored.isdigit() else None

    def record_dimension(self, dimension: int) -> None:
        """Remember the index's vector size (not in read-only records: they cannot change)."""
        if not self.records.read_only and dimension != self.dimension:
            self.records.set_meta(_DIMENSION, str(dimension))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors for texts: cached ones from the records, the others from the model.

        Cached vectors unfit for the index (left by an older version that did not check)
        are embedded again rather than served.
        """
        hashes = [text_hash(text) for text in texts]
        cached = self.records.cached_vectors(self.model_id, list(dict.fromkeys(hashes)))
        dimension = self.dimension
        if cached and dimension is None:  # an index from before sizes were recorded
            dimension = len(self.embed_query(PROBE_TEXT))
        found = {h: v for h, v in cached.items() if _vector_flaw(v, dimension) is None}
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
        vector = self.embeddings.embed_query(text)
        self.record_dimension(check_vectors([vector], 1, self.dimension, self.model_id))
        return vector

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of `embed_query`, using the model's own async path."""
        vector = await self.embeddings.aembed_query(text)
        self.record_dimension(check_vectors([vector], 1, self.dimension, self.model_id))
        return vector

    def _call(self, texts: list[str]) -> list[list[float]]:
        """One model call within the rate limit, retried on rate-limit errors, checked."""
        model = self.embeddings
        attempt = 0
        while True:
            self._pace()
            try:
                vectors = model.embed_documents(texts)
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
        self.record_dimension(check_vectors(vectors, len(texts), self.dimension, self.model_id))
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
