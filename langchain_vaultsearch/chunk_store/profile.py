"""`RetrievalProfile`: the seed's knobs of keyword document search, typed and bounded."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RetrievalProfile(BaseModel):
    """How keyword document search scores and cuts (seed 004's `RetrievalProfile`).

    The boosts multiply a chunk's combined score, as in the seed, so 1.0 turns one off;
    their bounds and defaults are the seed's (1.0 to 5.0, default 1.5).

    Attributes:
        doc_k: how many chunks a query returns (1 to 100).
        doc_boost_exact_match: the query, as typed (case and spacing aside), is in the chunk.
        doc_boost_form_number: a form-number-like token of the query (`1040-ES`, `W-2`)
            is the chunk's `form_number`.
        doc_boost_defined_term: a "quoted term" of the query is in the chunk.
        bm25_weight: share of BM25 (scaled to [0, 1]) in the combined score.
        tfidf_weight: share of TF-IDF cosine in the combined score.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_k: int = Field(default=10, ge=1, le=100)
    doc_boost_exact_match: float = Field(default=1.5, ge=1.0, le=5.0)
    doc_boost_form_number: float = Field(default=1.5, ge=1.0, le=5.0)
    doc_boost_defined_term: float = Field(default=1.5, ge=1.0, le=5.0)
    bm25_weight: float = Field(default=0.6, ge=0.0, le=1.0)
    tfidf_weight: float = Field(default=0.4, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _some_weight(self) -> RetrievalProfile:
        if self.bm25_weight + self.tfidf_weight <= 0:
            msg = "bm25_weight and tfidf_weight cannot both be 0: nothing would score"
            raise ValueError(msg)
        return self

    @property
    def max_boost(self) -> float:
        """The most the boosts together can multiply a score by."""
        return self.doc_boost_exact_match * self.doc_boost_form_number * self.doc_boost_defined_term
