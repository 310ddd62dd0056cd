"""`CrossEncoderReranker`: a sentence-transformers cross-encoder as a LangChain compressor.

Hybrid search takes any `BaseDocumentCompressor` as its reranker; this one scores each
(query, chunk) pair with a cross-encoder (seed 002's default model,
`cross-encoder/ms-marco-MiniLM-L-6-v2`, or a local folder) and writes `relevance_score`.
Own code, not langchain-community's: that package is being sunset (DESIGN, decision 8).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from langchain_vaultsearch.semantic.embeddings import require_extra

DEFAULT_RERANKER_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
RERANKER_MODEL_VARIABLE = "VAULTSEARCH_RERANKER_MODEL"
"""The environment variable `vaultsearch search --rerank` reads a model (or folder) from."""


class CrossEncoderReranker(BaseDocumentCompressor):
    """Re-sort documents by a cross-encoder's relevance to the query.

    Setup:
        `pip install "langchain-vaultsearch[local]"` (sentence-transformers).

    Key init args:
        model_name_or_path: a model name (downloaded once) or a local folder.
        top_n: documents kept, best first.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_name_or_path: str = DEFAULT_RERANKER_MODEL
    top_n: int = Field(default=10, ge=1)

    _model: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _load(self) -> CrossEncoderReranker:
        require_extra("sentence_transformers", "local")
        from sentence_transformers import CrossEncoder

        self._model = CrossEncoder(self.model_name_or_path)
        return self

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """The `top_n` documents the model finds most relevant, with `relevance_score`."""
        if not documents:
            return []
        scores = self._model.predict([(query, doc.page_content) for doc in documents])
        ranked = sorted(
            zip(documents, (float(s) for s in scores), strict=True), key=lambda p: -p[1]
        )
        return [
            Document(
                page_content=doc.page_content,
                metadata={**doc.metadata, "relevance_score": score},
                id=doc.id,
            )
            for doc, score in ranked[: self.top_n]
        ]
