"""Embedding models by name, and the error a missing optional extra gives."""

from __future__ import annotations

import importlib
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the pip command."""


def require_extra(module: str, extra: str) -> None:
    """Import check for an optional extra: raise `MissingExtraError` naming the pip command."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        msg = f'{module} is not installed: pip install "langchain-vaultsearch[{extra}]"'
        raise MissingExtraError(msg) from exc


def load_embeddings(spec: str, **kwargs: Any) -> Embeddings:  # noqa: ANN401
    """An embedding model from `provider:model` (`huggingface:`, `openai:`, `fake:`)."""
    provider, _, model = spec.partition(":")
    if provider == "fake" and model.isdigit():
        return DeterministicFakeEmbedding(size=int(model))
    if provider == "huggingface" and model:
        require_extra("langchain_huggingface", "local")
        from langchain_huggingface import HuggingFaceEmbeddings

        return HuggingFaceEmbeddings(
            model_name=model, encode_kwargs={"normalize_embeddings": True}, **kwargs
        )
    if provider == "openai" and model:
        require_extra("langchain_openai", "openai")
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(model=model, **kwargs)
    msg = f"unknown embedding spec {spec!r}: use huggingface:MODEL, openai:MODEL or fake:SIZE"
    raise ValueError(msg)
