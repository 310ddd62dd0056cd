"""The concept vocabulary (seed 002 §6.4.1): the vault's own terms, embedded.

At query time the terms nearest the query's vector extend the semantic query, so a
question in everyday words also carries the vault's words for the same thing. Built from
the chunks' body terms (stop words and short or numeric terms left out, terms of at least
two notes, the 30,000 most widespread), embedded through the index's cache (a term is
embedded once, ever), and saved beside the index as arrays (`concepts.npz`: terms as
UTF-8 lines, float32 vectors), keyed by the model and a digest of the indexed note texts:
a refresh that changed notes makes the next query rebuild it, reusing every cached term.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from langchain_vaultsearch.expansion.terms import STOP_WORDS
from langchain_vaultsearch.safe_archive import (
    HEADER,
    UNREADABLE,
    check_sizes,
    discard,
    refused_folder,
    save_if_possible,
    typed_array,
)
from langchain_vaultsearch.text.tokenize import contains_cjk

MAX_CONCEPTS = 30_000
MIN_NOTES = 2
MIN_LENGTH = 3


@dataclass(frozen=True)
class ConceptVocabulary:
    """Terms and their unit vectors.

    Attributes:
        terms: the vault's concept terms.
        vectors: one unit-length float32 row per term.
        key: what it was built from (model and indexed note texts).
    """

    terms: list[str]
    vectors: npt.NDArray[np.float32]
    key: str

    @classmethod
    def build(
        cls, note_terms: Iterable[frozenset[str]], embeddings: Embeddings, key: str
    ) -> ConceptVocabulary:
        """Count each term once per note, keep the widespread ones, embed them.

        Args:
            note_terms: each note's body terms.
            embeddings: the index's (caching) embeddings.
            key: what the vocabulary is built from, for `load`.
        """
        spread: Counter[str] = Counter()
        for terms in note_terms:
            spread.update(t for t in terms if is_concept(t))
        kept = sorted(t for t, notes in spread.most_common(MAX_CONCEPTS) if notes >= MIN_NOTES)
        if not kept:
            return cls([], np.zeros((0, 0), dtype=np.float32), key)
        vectors = np.asarray(embeddings.embed_documents(kept), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms > 0, norms, 1.0)
        return cls(kept, vectors, key)

    def nearest(self, vector: list[float], n: int, exclude: Iterable[str] = ()) -> list[str]:
        """The `n` terms most similar to a query vector, not among `exclude`."""
        if not self.terms or n <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        similarity = self.vectors @ (query / (np.linalg.norm(query) or 1.0))
        skip = set(exclude)
        found = []
        for position in np.argsort(-similarity)[: n + len(skip)].tolist():
            term = self.terms[position]
            if term not in skip:
                found.append(term)
            if len(found) == n:
                break
        return found

    def save(self, path: Path) -> None:
        """Write the vocabulary atomically (logged, not raised, when it cannot be)."""
        if refused_folder(path.parent) is not None:
            return
        terms = "".join(f"{t}\n" for t in self.terms).encode()
        dimensions = int(self.vectors.shape[1]) if self.terms else 0
        arrays: dict[str, npt.NDArray[Any]] = {
            "terms": np.frombuffer(terms, dtype=np.uint8),
            "vectors": self.vectors.reshape(-1),
        }
        header = {"key": self.key, "dimensions": dimensions}
        save_if_possible(path, header, arrays, "concept vocabulary")

    @classmethod
    def load(cls, path: Path, key: str) -> ConceptVocabulary | None:
        """The saved vocabulary when it was built from `key`; a damaged file is dropped."""
        if not path.is_file():
            return None
        try:
            check_sizes(path)
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(data[HEADER])
                if not isinstance(header, dict) or header.get("key") != key:
                    return None
                terms = typed_array(data, "terms", np.uint8).tobytes().decode().splitlines()
                flat = typed_array(data, "vectors", np.float32)
                dimensions = int(header["dimensions"])
                if len(flat) != len(terms) * dimensions:
                    msg = "vectors do not match the terms"
                    raise ValueError(msg)
                vectors = flat.reshape(len(terms), dimensions) if terms else flat.reshape(0, 0)
        except UNREADABLE as exc:
            discard(path, "the concept vocabulary", exc)
            return None
        return cls(terms, vectors, key)


def is_concept(term: str) -> bool:
    """A term worth offering: a word of 3+ letters, not a stop word, not a CJK bigram.

    CJK bigrams are fragments, not words, and queries in CJK skip the semantic side of
    models that cannot read them anyway.
    """
    return (
        len(term) >= MIN_LENGTH
        and term.isalpha()
        and term not in STOP_WORDS
        and not contains_cjk(term)
    )


def vocabulary_key(model_id: str, note_hashes: Iterable[tuple[str, str | None]]) -> str:
    """What a vocabulary is built from: the model and every indexed note's text hash."""
    digest = hashlib.sha256(model_id.encode())
    for path, text_hash in sorted(note_hashes, key=lambda item: item[0]):
        digest.update(f"{path}\0{text_hash}\n".encode())
    return digest.hexdigest()[:24]
