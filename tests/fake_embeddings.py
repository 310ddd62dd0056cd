"""A fake embedding model that understands a few synonyms (unit tests only, never the package).

`DeterministicFakeEmbedding` gives every text a random vector, so nothing is ever "near";
these tests need a model that ranks by meaning in a tiny, predictable way: a bag of words
hashed into a vector, with a small synonym table standing in for what a real model learns.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading

from langchain_core.embeddings import Embeddings

SYNONYMS = {
    "authentication": "oauth",
    "login": "oauth",
    "signin": "oauth",
    "bread": "sourdough",
    "loaf": "sourdough",
    "music": "piano",
    "keyboard": "piano",
}


class WordBagEmbedding(Embeddings):
    """Unit-length bag-of-words vectors; synonyms map to the same dimension."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.texts = 0
        self.queries = 0

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.size
        for found in re.findall(r"\w+", text.lower()):
            word = SYNONYMS.get(found, found)
            slot = int(hashlib.md5(word.encode(), usedforsecurity=False).hexdigest(), 16)
            vector[slot % self.size] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self._vector(text)


class HeldEmbedding(Embeddings):
    """A model whose document embeddings wait, once held, until released.

    What a background catch-up looks like while it runs: the notes it has not written yet
    are missing from semantic results, whatever the model's speed.
    """

    def __init__(self, model: Embeddings) -> None:
        self.model = model
        self.held = False
        self.entered = threading.Event()
        """Set once a held call has begun: a test then knows the write is inside the model."""
        self.released = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.held:
            self.entered.set()
            self.released.wait(30)
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)
